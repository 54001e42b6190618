// Every batch and record of every kafka-oracle partition directory decodes to exactly what Kafka's own
// code printed in the sibling `<dir>.dump.txt` (segment, batch and record lines; the index, snapshot
// and txn-index sections are checked by the index tests).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "segment_reader/batch.h"
#include "segment_reader/file.h"
#include "tests/support/oracle_dump.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

std::string OracleRoot() { return std::string(KLF_FIXTURES_DIR) + "/kafka-oracle"; }

std::optional<std::string> Opt(const std::optional<Bytes>& b) {
  if (!b) return std::nullopt;
  return std::string(AsStringView(*b));
}

TEST(OracleBatchesTest, DumpParserReadsEverySection) {
  auto dirs = oracle::FindOraclePartitionDirs(OracleRoot());
  ASSERT_GE(dirs.size(), 30u);
  size_t batches = 0, records = 0, snapshots = 0, txn = 0, indexes = 0, files = 0;
  for (const auto& [dir, dump_path] : dirs) {
    oracle::OracleDump dump;
    std::string error;
    ASSERT_TRUE(oracle::ParseOracleDump(dump_path, &dump, &error)) << error;
    EXPECT_EQ(dump.partition_dir, fs::path(dir).filename().string());
    for (const auto& s : dump.segments) {
      batches += s.batches.size();
      for (const auto& b : s.batches) records += b.records.size();
    }
    snapshots += dump.producer_snapshots.size();
    txn += dump.txn_indexes.size();
    indexes += dump.offset_indexes.size() + dump.time_indexes.size();
    files += dump.files.size();
    for (const auto& t : dump.txn_indexes) EXPECT_EQ(t.entries, int64_t(t.aborted.size())) << dump_path;
  }
  EXPECT_GT(batches, 500u);
  EXPECT_GT(records, 1000u);
  EXPECT_GT(snapshots, 0u);
  EXPECT_GT(txn, 0u);
  EXPECT_GT(indexes, 0u);
  EXPECT_GT(files, 0u);
}

// Record `r` of the batch `d` decoded, with its headers, is the record Kafka printed.
void ExpectRecord(const RecordDecoder& d, const Record& r, const oracle::DumpRecord& er) {
  EXPECT_EQ(r.offset, er.offset);
  EXPECT_EQ(r.timestamp, er.timestamp);
  EXPECT_EQ(Opt(r.key), er.key);
  EXPECT_EQ(Opt(r.value), er.value);
  if (er.sequence) {
    EXPECT_EQ(r.sequence, *er.sequence);
  }
  if (er.control_type) {
    ASSERT_TRUE(d.header().is_control);
    ControlRecord c;
    std::string error;
    ASSERT_TRUE(ParseControlRecord(r, &c, &error)) << error;
    EXPECT_EQ(ControlTypeName(c.type), *er.control_type);
    if (er.coordinator_epoch) {
      EXPECT_EQ(c.coordinator_epoch, *er.coordinator_epoch);
    }
  }
  const RecordHeaders lazy = d.headers(r);
  const std::vector<RecordHeader> hs(lazy.begin(), lazy.end());
  if (er.has_headers) {
    ASSERT_EQ(hs.size(), er.headers.size());
    for (size_t j = 0; j < hs.size(); ++j) {
      EXPECT_EQ(std::string(AsStringView(hs[j].key)), er.headers[j].first);
      EXPECT_EQ(Opt(hs[j].value), er.headers[j].second);
    }
  } else {
    EXPECT_TRUE(hs.empty());
  }
}

void CheckPartition(const std::string& dir, const std::string& dump_path) {
  oracle::OracleDump dump;
  std::string error;
  ASSERT_TRUE(oracle::ParseOracleDump(dump_path, &dump, &error)) << error;
  // The dump lists every .log of the directory.
  size_t logs = 0;
  for (const auto& f : fs::directory_iterator(dir)) logs += f.path().extension() == ".log";
  EXPECT_EQ(dump.segments.size(), logs);
  RecordDecoder decoder, keys_decoder, copied;
  for (const oracle::DumpSegment& seg : dump.segments) {
    std::string path = dir + "/" + seg.file;
    SCOPED_TRACE(path);
    auto file = MappedFile::Open(path, &error);
    ASSERT_TRUE(file) << error;
    EXPECT_EQ(file->size(), seg.size);
    CollectingSink sink;
    LogReader reader(path, file->data(), &sink);
    BatchView view;
    size_t i = 0;
    while (reader.Next(&view)) {
      ASSERT_LT(i, seg.batches.size()) << "more batches than Kafka saw";
      const oracle::DumpBatch& eb = seg.batches[i];
      SCOPED_TRACE("batch at " + std::to_string(eb.position));
      ASSERT_TRUE(decoder.Decode(view, path, &sink));
      const BatchHeader& h = decoder.header();
      EXPECT_EQ(h.position, eb.position);
      EXPECT_EQ(h.size_in_bytes, eb.size);
      EXPECT_EQ(h.base_offset, eb.base_offset);
      EXPECT_EQ(h.last_offset, eb.last_offset);
      if (eb.count) {
        EXPECT_EQ(h.record_count, *eb.count);
      } else {
        EXPECT_LT(h.magic, 2);  // Kafka's countOrNull is null for legacy entries
      }
      EXPECT_EQ(h.magic, eb.magic);
      EXPECT_EQ(CompressionName(h.compression), eb.compression);
      EXPECT_EQ(TimestampTypeName(h.timestamp_type), eb.timestamp_type);
      EXPECT_EQ(h.max_timestamp, eb.max_timestamp);
      EXPECT_EQ(h.producer_id, eb.producer_id);
      EXPECT_EQ(h.producer_epoch, eb.producer_epoch);
      EXPECT_EQ(h.base_sequence, eb.base_sequence);
      EXPECT_EQ(h.last_sequence(), eb.last_sequence);
      EXPECT_EQ(h.is_transactional, eb.is_transactional);
      EXPECT_EQ(h.is_control, eb.is_control);
      EXPECT_EQ(h.partition_leader_epoch, eb.partition_leader_epoch);
      EXPECT_EQ(h.delete_horizon_ms, eb.delete_horizon_ms);
      EXPECT_EQ(h.crc, eb.crc);
      EXPECT_EQ(h.crc_valid, eb.is_valid);
      const auto& recs = decoder.records();
      ASSERT_EQ(recs.size(), eb.records.size());
      for (size_t k = 0; k < recs.size(); ++k) {
        SCOPED_TRACE("record " + std::to_string(k));
        ExpectRecord(decoder, recs[k], eb.records[k]);
      }
      // CopyRecords: every other record (the even ones, then the odd ones) copied out of the decoder
      // into another, each still as Kafka printed it.
      if (h.magic >= 2) {
        for (uint32_t first : {0u, 1u}) {
          std::vector<uint32_t> which;
          for (uint32_t k = first; k < recs.size(); k += 2) which.push_back(k);
          copied.CopyRecords(decoder, which);
          EXPECT_EQ(copied.header().base_offset, h.base_offset);
          EXPECT_EQ(copied.header().crc, h.crc);
          ASSERT_EQ(copied.records().size(), which.size());
          for (size_t c = 0; c < which.size(); ++c) {
            SCOPED_TRACE("copied record " + std::to_string(which[c]));
            ExpectRecord(copied, copied.records()[c], eb.records[which[c]]);
          }
        }
      }
      // DecodeKeys: the same offsets, timestamps, sequences and keys; no values, no headers.
      ASSERT_TRUE(keys_decoder.DecodeKeys(view, path, &sink));
      ASSERT_EQ(keys_decoder.records().size(), recs.size());
      for (size_t k = 0; k < recs.size(); ++k) {
        const Record& kr = keys_decoder.records()[k];
        SCOPED_TRACE("keys-only record " + std::to_string(k));
        EXPECT_EQ(kr.offset, recs[k].offset);
        EXPECT_EQ(kr.timestamp, recs[k].timestamp);
        EXPECT_EQ(kr.sequence, recs[k].sequence);
        EXPECT_EQ(Opt(kr.key), Opt(recs[k].key));
        if (h.magic >= 2) {
          EXPECT_FALSE(kr.value.has_value());
          EXPECT_TRUE(keys_decoder.headers(kr).empty());
        }
      }
      ++i;
    }
    EXPECT_EQ(i, seg.batches.size());
    EXPECT_EQ(reader.end(), LogEnd::kEndOfData);
    for (const auto& p : sink.problems) ADD_FAILURE() << p.check << " @" << p.position << ": " << p.message;
  }
}

TEST(OracleBatchesTest, EveryBatchAndRecordMatchesKafka) {
  auto dirs = oracle::FindOraclePartitionDirs(OracleRoot());
  ASSERT_FALSE(dirs.empty());
  for (const auto& [dir, dump] : dirs) {
    SCOPED_TRACE(dir);
    CheckPartition(dir, dump);
  }
}

TEST(OracleBatchesTest, DecodeKeysDoesNotParseValuesOrHeaders) {
  // The first record's value length rewritten to -1 (null): its value bytes are then left over in the
  // record, which Decode rejects; DecodeKeys, which skips everything after the key, still reads it.
  std::string path = OracleRoot() + "/a-keyed/keyed-none-0/00000000000000000000.log";
  std::string error;
  auto file = MappedFile::Open(path, &error);
  ASSERT_TRUE(file) << error;
  std::string bytes(reinterpret_cast<const char*>(file->data().data()), file->size());
  RecordDecoder decoder;
  {
    CollectingSink sink;
    LogReader reader(path, AsBytes(bytes), &sink);
    BatchView view;
    ASSERT_TRUE(reader.Next(&view));
    ASSERT_TRUE(decoder.Decode(view, path, &sink));
    ASSERT_EQ(view.header.magic, 2);
    const Record& r = decoder.records().at(0);
    ASSERT_TRUE(r.key && r.value && !r.value->empty());
    size_t value_length_at = size_t(r.key->data() + r.key->size() - AsBytes(bytes).data());
    ASSERT_NE(bytes[value_length_at], '\x01');
    bytes[value_length_at] = '\x01';  // zigzag varint -1
  }
  CollectingSink read_sink;  // the reader reports the batch's CRC, which no longer matches
  LogReader reader(path, AsBytes(bytes), &read_sink);
  BatchView view;
  ASSERT_TRUE(reader.Next(&view));
  CollectingSink sink;
  EXPECT_FALSE(decoder.Decode(view, path, &sink));
  ASSERT_EQ(sink.problems.size(), 1u);
  EXPECT_EQ(sink.problems[0].check, "record-parse");
  RecordDecoder keys;
  CollectingSink keys_sink;
  ASSERT_TRUE(keys.DecodeKeys(view, path, &keys_sink));
  EXPECT_TRUE(keys_sink.problems.empty());
  EXPECT_EQ(keys.records().size(), size_t(view.header.record_count));
}

}  // namespace
}  // namespace klf
