// Batch builders against bytes klf did not write: the verified hex examples of the spec (§3.4, §4.6,
// §10) and every batch of Kafka's oracle fixtures, re-encoded from its decoded records.
#include "segment_writer/batch_builder.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "segment_reader/file.h"
#include "partition/producer_state.h"
#include "tests/segment_writer/test_util.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

using writer_test::FromHexDump;
using writer_test::Hex;

RecordInput Rec(int64_t offset, int64_t ts, std::optional<std::string_view> key,
                std::optional<std::string_view> value) {
  RecordInput r;
  r.offset = offset;
  r.timestamp = ts;
  if (key) r.key = AsBytes(*key);
  if (value) r.value = AsBytes(*value);
  return r;
}

TEST(BatchBuilder, SpecExampleA_TwoRecordsMagic2) {
  const std::string expected = FromHexDump(R"(
0000: 00 00 00 00 00 00 00 00 00 00 00 55 ff ff ff ff
0010: 02 e5 8c f1 ff 00 00 00 00 00 01 00 00 00 00 00
0020: 04 54 c3 00 00 00 00 00 04 54 c3 ff ff ff ff ff
0030: ff ff ff ff ff ff ff ff ff 00 00 00 02 20 00 00
0040: 00 08 6b 65 79 31 0c 76 61 6c 75 65 31 00 24 00
0050: e1 bf 22 02 08 6b 65 79 32 0c 76 61 6c 75 65 32
0060: 00
)");
  ASSERT_EQ(expected.size(), 97u);
  RecordInput records[] = {Rec(0, 283843, "key1", "value1"), Rec(1, 1234, "key2", "value2")};
  std::string out, error;
  BuiltBatch built;
  ASSERT_TRUE(AppendV2Batch(V2BatchOptions{}, records, &out, &built, &error)) << error;
  EXPECT_EQ(Hex(out), Hex(expected));
  EXPECT_EQ(built.max_timestamp, 283843);
  EXPECT_EQ(built.last_offset, 1);
  EXPECT_EQ(built.size_in_bytes, 97u);
}

TEST(BatchBuilder, SpecExampleB_CommitMarker) {
  const std::string expected = FromHexDump(R"(
0000: 00 00 00 00 00 00 00 0a 00 00 00 42 00 00 00 07
0010: 02 7a 94 e4 69 00 30 00 00 00 00 00 00 01 8b cf
0020: e5 68 00 00 00 01 8b cf e5 68 00 00 00 00 00 00
0030: 01 80 13 00 63 ff ff ff ff 00 00 00 01 20 00 00
0040: 00 08 00 00 00 01 0c 00 00 00 00 00 64 00
)");
  ASSERT_EQ(expected.size(), 78u);
  EndTxnMarkerOptions o;
  o.offset = 10;
  o.partition_leader_epoch = 7;
  o.producer_id = 98323;
  o.producer_epoch = 99;
  o.timestamp = 1700000000000;
  o.type = ControlType::kCommit;
  o.coordinator_epoch = 100;
  std::string out, error;
  ASSERT_TRUE(AppendEndTxnMarker(o, &out, nullptr, &error)) << error;
  EXPECT_EQ(Hex(out), Hex(expected));
}

TEST(BatchBuilder, SpecExampleC_EmptyRetainedBatch) {
  const std::string expected = FromHexDump(R"(
0000: 00 00 00 00 00 00 00 03 00 00 00 31 00 00 01 25
0010: 02 55 58 11 48 00 00 00 00 00 01 ff ff ff ff ff
0020: ff ff ff 00 00 00 00 00 00 00 0c 00 00 00 00 00
0030: 00 00 17 00 05 00 00 00 0a 00 00 00 00
)");
  ASSERT_EQ(expected.size(), 61u);
  // MemoryRecordsTest.testFilterToEmptyBatchRetention: the original batch's header fields.
  BatchHeader original;
  original.magic = 2;
  original.base_offset = 3;
  original.last_offset = 4;
  original.producer_id = 23;
  original.producer_epoch = 5;
  original.base_sequence = 10;
  original.partition_leader_epoch = 293;
  original.max_timestamp = 12;
  original.base_timestamp = 11;               // not kept
  original.compression = Compression::kGzip;  // not kept: an empty batch is uncompressed
  std::string out, error;
  BuiltBatch built;
  ASSERT_TRUE(AppendEmptyBatch(original, &out, &built, &error)) << error;
  EXPECT_EQ(Hex(out), Hex(expected));
  EXPECT_EQ(built.max_offset, 4);
  EXPECT_EQ(built.max_timestamp, 12);
}

TEST(BatchBuilder, SpecExampleD_DeleteHorizonTombstone) {
  const std::string expected = FromHexDump(R"(
0000: 00 00 00 00 00 00 00 14 00 00 00 3c ff ff ff ff
0010: 02 b0 6c a6 c8 00 40 00 00 00 00 00 00 01 8b d5
0020: 0b c4 00 00 00 01 8b cf e5 68 00 ff ff ff ff ff
0030: ff ff ff ff ff ff ff ff ff 00 00 00 01 14 00 ff
0040: ef b2 52 00 02 6b 01 00
)");
  V2BatchOptions o;
  o.base_offset = 20;
  o.delete_horizon_ms = 1700086400000;
  RecordInput r = Rec(20, 1700000000000, "k", std::nullopt);
  std::string out, error;
  ASSERT_TRUE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &out, nullptr, &error)) << error;
  EXPECT_EQ(Hex(out), Hex(expected));
}

TEST(BatchBuilder, SpecLegacyExamplesV0AndV1) {
  const std::string v0 = FromHexDump(R"(
0000: 00 00 00 00 00 00 00 00 00 00 00 18 75 f0 f4 1d
0010: 00 00 00 00 00 04 6b 65 79 31 00 00 00 06 76 61
0020: 6c 75 65 31 00 00 00 00 00 00 00 01 00 00 00 18
0030: 75 1b c3 a6 00 00 00 00 00 04 6b 65 79 32 00 00
0040: 00 06 76 61 6c 75 65 32
)");
  RecordInput records[] = {Rec(0, 283843, "key1", "value1"), Rec(1, 1234, "key2", "value2")};
  LegacyOptions o;
  o.magic = 0;
  std::string out, error;
  ASSERT_TRUE(AppendLegacyMessages(o, records, &out, nullptr, &error)) << error;
  EXPECT_EQ(Hex(out), Hex(v0));

  const std::string v1 = FromHexDump(R"(
0000: 00 00 00 00 00 00 00 00 00 00 00 20 06 85 b3 64
0010: 01 00 00 00 00 00 00 04 54 c3 00 00 00 04 6b 65
0020: 79 31 00 00 00 06 76 61 6c 75 65 31
)");
  o.magic = 1;
  out.clear();
  ASSERT_TRUE(AppendLegacyMessages(o, std::span<const RecordInput>(records, 1), &out, nullptr, &error)) << error;
  EXPECT_EQ(Hex(out), Hex(v1));
}

TEST(BatchBuilder, RejectsBadInput) {
  std::string out, error;
  RecordInput r = Rec(5, 1, "k", "v");
  V2BatchOptions o;
  o.base_offset = 6;  // record below base
  EXPECT_FALSE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &out, nullptr, &error));
  o.base_offset = 0;
  EXPECT_FALSE(AppendV2Batch(o, {}, &out, nullptr, &error));
  RecordInput far = Rec(int64_t(1) << 31, 1, "k", "v");
  EXPECT_FALSE(AppendV2Batch(o, std::span<const RecordInput>(&far, 1), &out, nullptr, &error));
  LegacyOptions lo;
  lo.compression = Compression::kZstd;
  EXPECT_FALSE(AppendLegacyWrapper(lo, std::span<const RecordInput>(&r, 1), &out, nullptr, &error));
  BatchHeader legacy;
  legacy.magic = 1;
  EXPECT_FALSE(AppendEmptyBatch(legacy, &out, nullptr, &error));
  EXPECT_EQ(error, "Empty batches are only supported for magic v2 and above");
  EXPECT_TRUE(out.empty());
}

TEST(BatchBuilder, RelativeOffsetAtTheInt32Limit) {
  // lastOffsetDelta = 2^31-1 is the largest a batch can have.
  V2BatchOptions o;
  o.base_offset = 100;
  RecordInput r = Rec(int64_t(100) + 0x7fffffff, 1, "k", "v");
  std::string out, error;
  ASSERT_TRUE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &out, nullptr, &error)) << error;
  EXPECT_EQ(LoadI32(reinterpret_cast<const uint8_t*>(out.data()) + 23), 0x7fffffff);
  NullSink sink;
  LogReader reader("mem", AsBytes(out), &sink);
  BatchView b;
  ASSERT_TRUE(reader.Next(&b));
  EXPECT_TRUE(b.header.crc_valid);
  EXPECT_EQ(b.header.last_offset, int64_t(100) + 0x7fffffff);
}

TEST(BatchBuilder, SpecSnapshotExampleFromProducerState) {
  // §10: pid 1, epoch 0, lastSeq 2, lastOffset 2, offsetDelta 2, ts 1700000000000, no txn.
  const std::string expected = FromHexDump(R"(
0000: 00 01 0f 22 b8 ca 00 00 00 01 00 00 00 00 00 00
0010: 00 01 00 00 00 00 00 02 00 00 00 00 00 00 00 02
0020: 00 00 00 02 00 00 01 8b cf e5 68 00 ff ff ff ff
0030: ff ff ff ff ff ff ff ff
)");
  V2BatchOptions o;
  o.producer_id = 1;
  o.producer_epoch = 0;
  o.base_sequence = 0;
  RecordInput records[] = {Rec(0, 1700000000000, "a", "1"), Rec(1, 1700000000000, "b", "2"),
                           Rec(2, 1700000000000, "c", "3")};
  std::string out, error;
  ASSERT_TRUE(AppendV2Batch(o, records, &out, nullptr, &error)) << error;
  NullSink sink;
  LogReader reader("mem", AsBytes(out), &sink);
  BatchView b;
  ASSERT_TRUE(reader.Next(&b));
  ProducerStateManager state;
  state.Apply(b, "mem", &sink);
  EXPECT_EQ(Hex(state.EncodeSnapshot()), Hex(expected));
  EXPECT_EQ(Hex(ProducerStateManager().EncodeSnapshot()), "000148674bc700000000");
}

// ---------------------------------------------------------------------------------------------
// Every batch Kafka wrote in the oracle fixtures, re-encoded from its own decoded records.

struct Stats {
  int exact = 0;       // byte-identical re-encodings
  int compressed = 0;  // recompressed batches compared by content
  int legacy_wrappers = 0;
};

void ExpectSameRecords(const RecordDecoder& a, const RecordDecoder& b, const std::string& where) {
  ASSERT_EQ(a.records().size(), b.records().size()) << where;
  for (size_t i = 0; i < a.records().size(); ++i) {
    const Record& x = a.records()[i];
    const Record& y = b.records()[i];
    EXPECT_EQ(x.offset, y.offset) << where;
    EXPECT_EQ(x.timestamp, y.timestamp) << where;
    EXPECT_EQ(x.key.has_value(), y.key.has_value()) << where;
    if (x.key && y.key) {
      EXPECT_EQ(AsStringView(*x.key), AsStringView(*y.key)) << where;
    }
    EXPECT_EQ(x.value.has_value(), y.value.has_value()) << where;
    if (x.value && y.value) {
      EXPECT_EQ(AsStringView(*x.value), AsStringView(*y.value)) << where;
    }
    const RecordHeaders lx = a.headers(x), ly = b.headers(y);
    const std::vector<RecordHeader> hx(lx.begin(), lx.end()), hy(ly.begin(), ly.end());
    ASSERT_EQ(hx.size(), hy.size()) << where;
    for (size_t j = 0; j < hx.size(); ++j) {
      EXPECT_EQ(AsStringView(hx[j].key), AsStringView(hy[j].key)) << where;
      EXPECT_EQ(hx[j].value.has_value(), hy[j].value.has_value()) << where;
    }
  }
}

void ReencodeFile(const std::string& path, Stats* stats) {
  std::string error;
  auto file = MappedFile::Open(path, &error);
  ASSERT_TRUE(file) << error;
  CollectingSink sink;
  LogReader reader(path, file->data(), &sink);
  BatchView batch;
  RecordDecoder original, rebuilt;
  while (reader.Next(&batch)) {
    const BatchHeader& h = batch.header;
    std::string where = path + " @" + std::to_string(h.position);
    ASSERT_TRUE(h.crc_valid) << where;
    std::string out;
    if (h.magic == 2 && h.record_count == 0) {
      ASSERT_TRUE(AppendEmptyBatch(h, &out, nullptr, &error)) << where << error;
      EXPECT_EQ(Hex(out), Hex(AsStringView(batch.bytes))) << where;
      ++stats->exact;
      continue;
    }
    ASSERT_TRUE(original.Decode(batch, path, &sink)) << where;
    std::vector<RecordInput> inputs;
    for (const Record& r : original.records()) inputs.push_back(RecordInputFrom(r, original.headers(r)));
    if (h.magic == 2) {
      V2BatchOptions o;
      o.base_offset = h.base_offset;
      o.last_offset = h.last_offset;
      o.partition_leader_epoch = h.partition_leader_epoch;
      o.compression = h.compression;
      o.timestamp_type = h.timestamp_type;
      o.log_append_time = h.max_timestamp;
      o.producer_id = h.producer_id;
      o.producer_epoch = h.producer_epoch;
      o.base_sequence = h.base_sequence;
      o.is_transactional = h.is_transactional;
      o.is_control = h.is_control;
      o.delete_horizon_ms = h.delete_horizon_ms;
      ASSERT_TRUE(AppendV2Batch(o, inputs, &out, nullptr, &error)) << where << error;
      // The cleaner's rebuild path gives the same bytes for a batch that keeps all its records.
      std::string via_filter;
      ASSERT_TRUE(AppendRetainedBatch(batch, inputs, h.delete_horizon_ms, &via_filter, nullptr, &error)) << error;
      EXPECT_EQ(Hex(via_filter), Hex(out)) << where;
    } else if (h.compression == Compression::kNone) {
      LegacyOptions o;
      o.magic = h.magic;
      o.timestamp_type = h.timestamp_type;
      o.log_append_time = h.max_timestamp;
      ASSERT_TRUE(AppendLegacyMessages(o, inputs, &out, nullptr, &error)) << where << error;
    } else {
      LegacyOptions o;
      o.magic = h.magic;
      o.compression = h.compression;
      o.timestamp_type = h.timestamp_type;
      o.log_append_time = h.max_timestamp;
      ASSERT_TRUE(AppendLegacyWrapper(o, inputs, &out, nullptr, &error)) << where << error;
      // The inner message sets (uncompressed) must be byte-identical: compare the decompressed values.
      auto value_of = [](Bytes entry, int magic) {
        size_t key_len_pos = 12 + (magic == 0 ? 6 : 14);
        uint32_t key_len = LoadBE32(entry.data() + key_len_pos);
        size_t value_pos = key_len_pos + 4 + (key_len == 0xffffffff ? 0 : key_len);
        return entry.subspan(value_pos + 4);
      };
      std::string inner_a, inner_b, why;
      ASSERT_TRUE(Decompress(h.compression, value_of(batch.bytes, h.magic), h.magic, 1 << 24, &inner_a, &why)) << why;
      ASSERT_TRUE(Decompress(h.compression, value_of(AsBytes(out), h.magic), h.magic, 1 << 24, &inner_b, &why)) << why;
      EXPECT_EQ(Hex(inner_b), Hex(inner_a)) << where;
      ++stats->legacy_wrappers;
    }
    if (h.compression == Compression::kNone) {
      EXPECT_EQ(Hex(out), Hex(AsStringView(batch.bytes))) << where;
      ++stats->exact;
      continue;
    }
    // Recompressed: header fields and records must agree (compressed bytes may differ, spec §7).
    ++stats->compressed;
    NullSink quiet;
    LogReader again("rebuilt", AsBytes(out), &quiet);
    BatchView b2;
    ASSERT_TRUE(again.Next(&b2)) << where;
    EXPECT_TRUE(b2.header.crc_valid) << where;
    EXPECT_EQ(b2.header.base_offset, h.base_offset) << where;
    EXPECT_EQ(b2.header.last_offset, h.last_offset) << where;
    EXPECT_EQ(b2.header.attributes, h.attributes) << where;
    EXPECT_EQ(b2.header.max_timestamp, h.max_timestamp) << where;
    EXPECT_EQ(b2.header.base_timestamp, h.base_timestamp) << where;
    EXPECT_EQ(b2.header.producer_id, h.producer_id) << where;
    EXPECT_EQ(b2.header.base_sequence, h.base_sequence) << where;
    EXPECT_EQ(b2.header.partition_leader_epoch, h.partition_leader_epoch) << where;
    ASSERT_TRUE(rebuilt.Decode(b2, "rebuilt", &sink)) << where;
    ExpectSameRecords(original, rebuilt, where);
  }
  EXPECT_EQ(sink.ErrorCount(), 0u) << path;
}

TEST(BatchBuilder, ReencodesEveryOracleBatch) {
  Stats stats;
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(writer_test::Oracle())) {
    if (!test::IsSegmentFileName(e.path().filename().string())) continue;
    ++files;
    ReencodeFile(e.path().string(), &stats);
  }
  EXPECT_GT(files, 30);
  EXPECT_GT(stats.exact, 100);
  EXPECT_GT(stats.compressed, 20);
  EXPECT_GT(stats.legacy_wrappers, 3);
}

TEST(BatchBuilder, ReencodesKafkaPythonBatches) {
  Stats stats;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(writer_test::Fixtures() + "/kafka-python")) {
    if (e.path().extension() != ".log") continue;
    ++files;
    ReencodeFile(e.path().string(), &stats);
  }
  EXPECT_GT(files, 0);
}

TEST(BatchBuilder, EncodeThenFinishAppendsWhatAppendV2BatchAppends) {
  // The cleaner encodes a rebuilt batch on its own thread and may compress it on another
  // (EncodeRetainedV2Batch, FinishV2Batch): the bytes and the report must be AppendRetainedBatch's.
  std::string original;
  std::vector<RecordInput> records;
  std::vector<std::string> keys;
  for (int i = 0; i < 40; i++) keys.push_back("key-" + std::to_string(i % 7));
  for (int i = 0; i < 40; i++) records.push_back(Rec(100 + i, 1000 + i, keys[size_t(i)], "value"));
  for (Compression codec :
       {Compression::kNone, Compression::kGzip, Compression::kSnappy, Compression::kLz4, Compression::kZstd}) {
    V2BatchOptions o;
    o.base_offset = 100;
    o.compression = codec;
    o.producer_id = 9;
    o.producer_epoch = 1;
    o.base_sequence = 0;
    std::string error;
    original.clear();
    ASSERT_TRUE(AppendV2Batch(o, records, &original, nullptr, &error)) << error;
    BatchView view;
    ASSERT_EQ(NextEntry(AsBytes(original), 0, 0, &view, &error), EntryStatus::kOk) << error;
    std::vector<RecordInput> kept = {records[3], records[20], records[39]};
    kept[1].value.reset();  // a tombstone: the horizon is stamped
    std::string appended;
    BuiltBatch built;
    ASSERT_TRUE(AppendRetainedBatch(view, kept, 5000, &appended, &built, &error)) << error;
    EncodedV2Batch encoded;
    ASSERT_TRUE(EncodeRetainedV2Batch(view, kept, 5000, &encoded, &error)) << error;
    std::string finished = "prefix";
    size_t size = FinishV2Batch(encoded, &finished);
    EXPECT_EQ(finished, "prefix" + appended) << CompressionName(codec);
    EXPECT_EQ(size, built.size_in_bytes);
    EXPECT_LE(size, V2BatchBound(encoded));
    EXPECT_EQ(encoded.built.max_offset, built.max_offset);
    EXPECT_EQ(encoded.built.max_timestamp, built.max_timestamp);
    EXPECT_EQ(encoded.built.last_offset, built.last_offset);
    EXPECT_EQ(encoded.built.shallow_offset_of_max_timestamp, built.shallow_offset_of_max_timestamp);
  }
}

}  // namespace
}  // namespace klf
