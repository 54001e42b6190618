// Segment offset overflow during cleaning (kafka-log-cleaner.md §6.2 step 4e, §11): a legacy (magic
// 0/1) segment may hold offsets more than 2^31-1 past its base offset (written before brokers refused
// that). When a cleaned chunk's largest offset does not fit the cleaned segment's 32-bit relative
// range, the cleaner splits the offending source segment into segments that each fit, and aborts the
// round (the cleaner checkpoint stays at firstDirtyOffset). The next round cleans the split log.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compactor/cleaner.h"
#include "segment_reader/batch.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/problem.h"
#include "segment_writer/batch_builder.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {
namespace fs = std::filesystem;

using test::ReadAll;
using test::WriteAll;
std::string Name(int64_t offset, const char* suffix) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%020lld", static_cast<long long>(offset));
  return std::string(buf) + suffix;
}

// v1 uncompressed messages, one entry per (offset, key, value).
std::string Messages(const std::vector<std::tuple<int64_t, std::string, std::string>>& records) {
  std::string out;
  for (const auto& [offset, key, value] : records) {
    RecordInput r;
    r.offset = offset;
    r.timestamp = 1000 + (offset & 0xff);
    r.key = AsBytes(key);
    r.value = AsBytes(value);
    LegacyOptions o;
    o.magic = 1;
    BuiltBatch built;
    std::string error;
    EXPECT_TRUE(AppendLegacyMessages(o, std::span<const RecordInput>(&r, 1), &out, &built, &error)) << error;
  }
  return out;
}

struct Entry {
  int64_t offset;
  std::string key;
};
std::vector<Entry> Entries(const fs::path& log) {
  std::string data = ReadAll(log);
  CollectingSink sink;
  LogReader reader(log.string(), AsBytes(data), &sink);
  RecordDecoder decoder;
  std::vector<Entry> out;
  BatchView b;
  while (reader.Next(&b)) {
    EXPECT_TRUE(decoder.Decode(b, log.string(), &sink));
    for (const Record& r : decoder.records()) out.push_back({r.offset, std::string(AsStringView(*r.key))});
  }
  EXPECT_TRUE(sink.problems.empty());
  return out;
}

class OverflowSplitTest : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("klf-overflow-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "in" / "t-0");
  }
  void TearDown() override { fs::remove_all(root_); }
  // `passes` rounds of Kafka's cleaner (cleanup.policy=compact) over root_/in/t-0 into root_/OUT.
  CompactReport Compact(const std::string& out, int passes = 1) {
    CompactOptions o;
    o.now = 1700000000000;
    o.passes = passes;
    std::string error;
    EXPECT_TRUE(o.config.Set("cleanup.policy", "compact", &error)) << error;
    CompactReport report;
    CollectingSink sink;
    EXPECT_TRUE(CompactPartition((root_ / "in" / "t-0").string(), (root_ / out).string(), o, &report, &sink, &error))
        << error;
    return report;
  }
  fs::path root_;
};

constexpr int64_t kBig = int64_t(INT32_MAX) + 11;  // does not fit a segment based at 0

TEST_F(OverflowSplitTest, SplitsTheOverflowedSegmentAndAbortsTheRound) {
  fs::path in = root_ / "in" / "t-0";
  // Segment 0 holds offsets 0, 1 and then kBig, kBig+1: more than 2^31-1 past its base.
  std::string seg0 = Messages({{0, "k1", "a"}, {1, "k2", "b"}, {kBig, "k1", "c"}, {kBig + 1, "k3", "d"}});
  WriteAll(in / Name(0, ".log"), seg0);
  // The active segment.
  WriteAll(in / Name(kBig + 9, ".log"), Messages({{kBig + 9, "k4", "e"}}));

  CompactReport report = Compact("out1");
  ASSERT_EQ(report.passes.size(), 1u);
  const PassReport& p = report.passes[0];
  // The cleaned chunk's largest retained offset (kBig+1) overflows the cleaned segment based at 0:
  // segment 0 is split and the round aborted.
  ASSERT_EQ(p.split_segment, std::optional<int64_t>(0));
  EXPECT_FALSE(p.cleaned);
  EXPECT_EQ(p.checkpoint_written, std::optional<int64_t>(0));  // doneCleaning(firstDirtyOffset)

  fs::path out = root_ / "out1" / "t-0";
  // Split segments start at the first batch that no longer fits: each holds batches whose last
  // offset is within 2^31-1 of its base, copied byte for byte.
  std::string a = ReadAll(out / Name(0, ".log")), b = ReadAll(out / Name(kBig, ".log"));
  EXPECT_EQ(a + b, seg0);
  EXPECT_EQ(a, Messages({{0, "k1", "a"}, {1, "k2", "b"}}));
  EXPECT_TRUE(fs::exists(out / Name(kBig + 9, ".log")));
  std::vector<std::string> logs;
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().extension() == ".log") logs.push_back(e.path().filename().string());
  EXPECT_EQ(logs.size(), 3u);
  // Each split segment was appended as one small chunk: no offset-index entry, one final time entry
  // (the largest timestamp with its batch's last offset).
  EXPECT_EQ(fs::file_size(out / Name(0, ".index")), 0u);
  EXPECT_EQ(fs::file_size(out / Name(kBig, ".timeindex")), 12u);
  EXPECT_EQ(ReadAll(root_ / "out1" / "cleaner-offset-checkpoint"), "0\n1\nt 0 0\n");
  // Inputs untouched.
  EXPECT_EQ(ReadAll(in / Name(0, ".log")), seg0);

  // The next round cleans the split log: the groups cannot merge (the second segment's offsets do
  // not fit the first's base), so each is cleaned on its own.
  CompactReport report2 = Compact("out2", 2);
  ASSERT_EQ(report2.passes.size(), 2u);
  EXPECT_TRUE(report2.passes[1].cleaned);
  EXPECT_FALSE(report2.passes[1].split_segment.has_value());
  fs::path out2 = root_ / "out2" / "t-0";
  std::vector<Entry> first = Entries(out2 / Name(0, ".log")), second = Entries(out2 / Name(kBig, ".log"));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].offset, 1);  // k1@0 superseded by k1@kBig
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].offset, kBig);
  EXPECT_EQ(second[1].offset, kBig + 1);
}

// The split is of the source segment being cleaned, never of its group, and groups cleaned earlier in
// the aborted round stay cleaned (their swap happened before the overflow).
TEST_F(OverflowSplitTest, EarlierGroupsStayCleaned) {
  fs::path in = root_ / "in" / "t-0";
  // Segment 0 cannot be grouped with segment 5 (segment 5's offsets reach past 2^31-1 of base 0), so
  // it is cleaned alone first; then segment 5, whose own offsets overflow, is split.
  WriteAll(in / Name(0, ".log"), Messages({{0, "k1", "a"}, {1, "k1", "a2"}}));
  std::string seg5 = Messages({{5, "k2", "b"}, {kBig, "k3", "c"}});
  WriteAll(in / Name(5, ".log"), seg5);
  WriteAll(in / Name(kBig + 1, ".log"), Messages({{kBig + 1, "k4", "d"}}));
  CompactReport report = Compact("out");
  ASSERT_EQ(report.passes.size(), 1u);
  const PassReport& p = report.passes[0];
  EXPECT_EQ(p.split_segment, std::optional<int64_t>(5));
  EXPECT_EQ(p.checkpoint_written, std::optional<int64_t>(0));
  fs::path out = root_ / "out" / "t-0";
  std::vector<Entry> first = Entries(out / Name(0, ".log"));
  ASSERT_EQ(first.size(), 1u);  // cleaned: k1@0 superseded by k1@1
  EXPECT_EQ(first[0].offset, 1);
  EXPECT_EQ(ReadAll(out / Name(5, ".log")) + ReadAll(out / Name(kBig, ".log")), seg5);
  EXPECT_EQ(Entries(out / Name(kBig, ".log")).size(), 1u);
}

// Not an overflow case, but the same reading code: a batch larger than the 1 MiB windows the load
// walks headers with, and than the cleaner's read buffer (which grows as Kafka's does, §6.4).
std::string V2(int64_t offset, const std::string& key, const std::string& value) {
  RecordInput r;
  r.offset = offset;
  r.timestamp = 2000 + offset;
  r.key = AsBytes(key);
  r.value = AsBytes(value);
  V2BatchOptions o;
  o.base_offset = offset;
  std::string out, error;
  BuiltBatch built;
  EXPECT_TRUE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &out, &built, &error)) << error;
  return out;
}

TEST_F(OverflowSplitTest, BatchLargerThanTheReadWindows) {
  fs::path in = root_ / "in" / "t-0";
  std::string big = V2(0, "k1", std::string(1536 * 1024, 'x'));
  std::string kept = V2(1, "k1", "small") + V2(2, "k2", "other");
  WriteAll(in / Name(0, ".log"), big + kept);
  WriteAll(in / Name(3, ".log"), V2(3, "k3", "active"));
  CompactOptions o;
  o.now = 1700000000000;
  std::string error;
  ASSERT_TRUE(o.config.Set("cleanup.policy", "compact", &error)) << error;
  ASSERT_TRUE(o.config.Set("max.message.bytes", "2000000", &error)) << error;
  CompactReport report;
  CollectingSink sink;
  ASSERT_TRUE(CompactPartition(in.string(), (root_ / "out").string(), o, &report, &sink, &error)) << error;
  ASSERT_TRUE(report.passes[0].cleaned);
  EXPECT_EQ(report.passes[0].log_end_offset, 4);
  EXPECT_EQ(report.passes[0].end_offset, 3);
  // The superseded big batch is gone; the others are copied unchanged.
  EXPECT_EQ(ReadAll(root_ / "out" / "t-0" / Name(0, ".log")), kept);
}

}  // namespace
}  // namespace klf
