// Everything the builders write, through the partition writer, decoded by an independent decoder:
// kafka-python (Debian python3-kafka), which must see valid CRCs and exactly the records we encoded.
#include <cstdio>
#include <deque>
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "segment_writer/batch_builder.h"
#include "segment_writer/segment_writer.h"
#include "tests/segment_writer/test_util.h"

namespace klf {
namespace {

using writer_test::TempDir;

struct Expected {
  int64_t offset;
  std::optional<int64_t> timestamp;  // nullopt: kafka-python reports None (magic 0)
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

struct Expectation {
  int magic;
  std::vector<Expected> records;
};

std::string RunPython(const std::string& log) {
  std::string cmd =
      "/usr/bin/python3 " + std::string(KLF_SOURCE_DIR) + "/tests/segment_writer/kafka_python_decode.py '" + log + "'";
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << cmd;
  return out;
}

std::string B64(const std::optional<std::string>& s) { return s ? Base64Encode(AsBytes(*s)) : ""; }

class Builder {
 public:
  // Owns the strings the RecordInputs view.
  RecordInput Make(const Expected& e) {
    RecordInput r;
    r.offset = e.offset;
    r.timestamp = e.timestamp.value_or(kNoTimestamp);
    if (e.key) r.key = AsBytes(Keep(*e.key));
    if (e.value) r.value = AsBytes(Keep(*e.value));
    if (!e.headers.empty()) {
      auto& hs = header_store_.emplace_back();
      for (const auto& [k, v] : e.headers) {
        RecordHeader h;
        h.key = AsBytes(Keep(k));
        if (v) h.value = AsBytes(Keep(*v));
        hs.push_back(h);
      }
      r.headers = hs;
    }
    return r;
  }

 private:
  const std::string& Keep(const std::string& s) { return strings_.emplace_back(s); }
  std::deque<std::string> strings_;
  std::deque<std::vector<RecordHeader>> header_store_;
};

TEST(KafkaPythonRoundTrip, EveryKindOfEntryDecodesToTheSameRecords) {
  Builder builder;
  std::vector<std::string> entries;
  std::vector<Expectation> expected;
  std::string error;
  int64_t offset = 0;
  const int64_t t0 = 1700000000000;

  // Legacy first (a real log upgraded from old message formats), then v2.
  for (int8_t magic : {0, 1}) {
    for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kSnappy, Compression::kLz4}) {
      std::vector<Expected> recs;
      for (int i = 0; i < 3; ++i, ++offset) {
        recs.push_back({offset,
                        magic == 0 ? std::nullopt : std::optional<int64_t>(t0 + offset),
                        "key-" + std::to_string(offset),
                        i == 1 ? std::nullopt : std::optional<std::string>("value-" + std::to_string(offset)),
                        {}});
      }
      std::vector<RecordInput> in;
      for (const auto& e : recs) in.push_back(builder.Make(e));
      LegacyOptions o;
      o.magic = magic;
      o.compression = c;
      std::string out;
      if (c == Compression::kNone) {
        ASSERT_TRUE(AppendLegacyMessages(o, in, &out, nullptr, &error)) << error;
        for (const auto& e : recs) expected.push_back({magic, {e}});
      } else {
        ASSERT_TRUE(AppendLegacyWrapper(o, in, &out, nullptr, &error)) << error;
        expected.push_back({magic, recs});
      }
      entries.push_back(out);
    }
  }
  // v1 LogAppendTime wrapper: every inner record reports the append time.
  {
    std::vector<Expected> recs = {{offset, t0 + 999, "lat", "a", {}}, {offset + 1, t0 + 999, "lat", "b", {}}};
    std::vector<RecordInput> in = {builder.Make({offset, t0, "lat", "a", {}}),
                                   builder.Make({offset + 1, t0 + 1, "lat", "b", {}})};
    LegacyOptions o;
    o.magic = 1;
    o.compression = Compression::kGzip;
    o.timestamp_type = TimestampType::kLogAppendTime;
    o.log_append_time = t0 + 999;
    std::string out;
    ASSERT_TRUE(AppendLegacyWrapper(o, in, &out, nullptr, &error)) << error;
    entries.push_back(out);
    expected.push_back({1, recs});
    offset += 2;
  }
  // v2 in every codec, with headers, null keys and tombstones; idempotent and transactional.
  int64_t pid = 4000;
  for (Compression c :
       {Compression::kNone, Compression::kGzip, Compression::kSnappy, Compression::kLz4, Compression::kZstd}) {
    for (int kind = 0; kind < 3; ++kind) {  // plain, idempotent, transactional
      std::vector<Expected> recs;
      for (int i = 0; i < 4; ++i) {
        Expected e{offset + i, t0 + 10 * i - 5, "k" + std::to_string(i), "v" + std::to_string(offset + i), {}};
        if (i == 1) e.key.reset();
        if (i == 2) e.value.reset();
        if (i == 3) e.headers = {{"trace", "t-" + std::to_string(i)}, {"empty", std::nullopt}};
        recs.push_back(e);
      }
      std::vector<RecordInput> in;
      for (const auto& e : recs) in.push_back(builder.Make(e));
      V2BatchOptions o;
      o.base_offset = offset;
      o.partition_leader_epoch = 3;
      o.compression = c;
      if (kind > 0) {
        o.producer_id = pid;
        o.producer_epoch = 1;
        o.base_sequence = 0;
      }
      o.is_transactional = kind == 2;
      std::string out;
      ASSERT_TRUE(AppendV2Batch(o, in, &out, nullptr, &error)) << error;
      entries.push_back(out);
      expected.push_back({2, recs});
      offset += 4;
      if (kind == 2) {
        EndTxnMarkerOptions m;
        m.offset = offset;
        m.partition_leader_epoch = 3;
        m.producer_id = pid;
        m.producer_epoch = 1;
        m.timestamp = t0 + 100;
        m.type = c == Compression::kZstd ? ControlType::kAbort : ControlType::kCommit;
        m.coordinator_epoch = 7;
        std::string marker;
        ASSERT_TRUE(AppendEndTxnMarker(m, &marker, nullptr, &error)) << error;
        entries.push_back(marker);
        std::string key("\0\0\0", 3);
        key.push_back(m.type == ControlType::kAbort ? 0 : 1);
        std::string value("\0\0\0\0\0\7", 6);
        expected.push_back({2, {{offset, t0 + 100, key, value, {}}}});
        ++offset;
      }
      ++pid;
    }
  }
  // LogAppendTime v2 batch: kafka-python reports maxTimestamp for every record.
  {
    std::vector<Expected> recs = {{offset, t0, "a", "1", {}}, {offset + 1, t0 + 5, "b", "2", {}}};
    std::vector<RecordInput> in;
    for (const auto& e : recs) in.push_back(builder.Make(e));
    V2BatchOptions o;
    o.base_offset = offset;
    o.timestamp_type = TimestampType::kLogAppendTime;
    o.log_append_time = t0 + 777;
    std::string out;
    ASSERT_TRUE(AppendV2Batch(o, in, &out, nullptr, &error)) << error;
    entries.push_back(out);
    for (auto& e : recs) e.timestamp = t0 + 777;
    expected.push_back({2, recs});
    offset += 2;
  }
  // Cleaner outputs: an empty retained batch, a delete-horizon tombstone, a rebuilt subset.
  {
    BatchHeader original;
    original.base_offset = offset;
    original.last_offset = offset + 2;
    original.max_timestamp = t0 + 3;
    original.producer_id = 77;
    original.producer_epoch = 0;
    original.base_sequence = 0;
    std::string out;
    ASSERT_TRUE(AppendEmptyBatch(original, &out, nullptr, &error)) << error;
    entries.push_back(out);
    expected.push_back({2, {}});
    offset += 3;

    Expected tomb{offset, t0, "gone", std::nullopt, {}};
    RecordInput r = builder.Make(tomb);
    V2BatchOptions o;
    o.base_offset = offset;
    o.delete_horizon_ms = t0 + 86400000;
    out.clear();
    ASSERT_TRUE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &out, nullptr, &error)) << error;
    entries.push_back(out);
    expected.push_back({2, {tomb}});
    ++offset;

    // A compressed batch of 5 records, rebuilt keeping records 1 and 3 (last offset forced).
    std::vector<Expected> all;
    for (int i = 0; i < 5; ++i) all.push_back({offset + i, t0 + i, "r" + std::to_string(i), "x", {}});
    std::vector<RecordInput> in;
    for (const auto& e : all) in.push_back(builder.Make(e));
    V2BatchOptions full;
    full.base_offset = offset;
    full.compression = Compression::kLz4;
    std::string original_batch;
    ASSERT_TRUE(AppendV2Batch(full, in, &original_batch, nullptr, &error)) << error;
    NullSink quiet;
    LogReader reader("mem", AsBytes(original_batch), &quiet);
    BatchView view;
    ASSERT_TRUE(reader.Next(&view));
    RecordInput kept[] = {in[1], in[3]};
    out.clear();
    BuiltBatch built;
    ASSERT_TRUE(AppendRetainedBatch(view, kept, std::nullopt, &out, &built, &error)) << error;
    EXPECT_EQ(built.last_offset, offset + 4);
    EXPECT_EQ(built.max_offset, offset + 3);
    entries.push_back(out);
    expected.push_back({2, {all[1], all[3]}});
    offset += 5;
  }

  TempDir tmp;
  PartitionWriterOptions po;
  po.config.index_interval_bytes = 64;
  auto writer = PartitionWriter::Create(Env::Default(), tmp.path(), po, &error);
  ASSERT_TRUE(writer) << error;
  for (const std::string& e : entries) {
    ASSERT_TRUE(writer->AppendEntries(AsBytes(e), AppendGranularity::kPerBatch, &error)) << error;
  }
  ASSERT_TRUE(writer->Close(&error)) << error;
  EXPECT_EQ(writer->log_end_offset(), offset);
  if (getenv("KLF_KEEP_LOG"))
    std::filesystem::copy_file(tmp.path() + "/00000000000000000000.log", getenv("KLF_KEEP_LOG"));

  auto decoded = nlohmann::json::parse(RunPython(tmp.path() + "/00000000000000000000.log"));
  EXPECT_EQ(decoded["validBytes"], decoded["size"]);
  const auto& batches = decoded["batches"];
  ASSERT_EQ(batches.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("batch " + std::to_string(i));
    const auto& b = batches[i];
    EXPECT_TRUE(b["crcValid"].get<bool>());
    EXPECT_EQ(b["magic"], expected[i].magic);
    ASSERT_EQ(b["records"].size(), expected[i].records.size());
    for (size_t j = 0; j < expected[i].records.size(); ++j) {
      const Expected& e = expected[i].records[j];
      const auto& r = b["records"][j];
      EXPECT_EQ(r["offset"].get<int64_t>(), e.offset);
      if (e.timestamp) {
        EXPECT_EQ(r["timestamp"].get<int64_t>(), *e.timestamp);
      } else {
        EXPECT_TRUE(r["timestamp"].is_null());
      }
      EXPECT_EQ(r["key"].is_null(), !e.key);
      if (e.key) {
        EXPECT_EQ(r["key"].get<std::string>(), B64(e.key));
      }
      EXPECT_EQ(r["value"].is_null(), !e.value);
      if (e.value) {
        EXPECT_EQ(r["value"].get<std::string>(), B64(e.value));
      }
      ASSERT_EQ(r["headers"].size(), e.headers.size());
      for (size_t k = 0; k < e.headers.size(); ++k) {
        EXPECT_EQ(r["headers"][k][0].get<std::string>(), e.headers[k].first);
        EXPECT_EQ(r["headers"][k][1].is_null(), !e.headers[k].second);
      }
    }
  }
}

}  // namespace
}  // namespace klf
