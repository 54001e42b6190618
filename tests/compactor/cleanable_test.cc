// Choosing rules (kafka-log-cleaner.md §2, §6.1), ported from LogCleanerManagerTest / LogCleanerTest
// scenarios of cleaner-tests.md over segment summaries.
#include "compactor/cleanable.h"
#include "compactor/grouping.h"

#include <gtest/gtest.h>

namespace klf {
namespace {

// `bases` are the segment base offsets; the last is the active segment; every segment has `size` bytes.
LogSummary MakeLog(std::vector<int64_t> bases, int64_t leo, int64_t size = 100) {
  LogSummary log;
  for (size_t i = 0; i < bases.size(); i++) {
    SegmentSummary s;
    s.base_offset = bases[i];
    s.size = size;
    s.next_offset = i + 1 < bases.size() ? bases[i + 1] : leo;
    s.first_batch_timestamp = 1000;
    s.max_timestamp_so_far = 1000;
    log.segments.push_back(s);
  }
  log.log_end_offset = leo;
  log.last_stable_offset = leo;
  return log;
}

CleanerConfig Compact() {
  CleanerConfig c;
  std::string e;
  EXPECT_TRUE(c.Set("cleanup.policy", "compact", &e));
  return c;
}

TEST(CleanableTest, SegmentsInRange) {
  LogSummary log = MakeLog({0, 10, 20, 30}, 35);
  auto r = SegmentsInRange(log, 15, 30);
  EXPECT_EQ(r.first, 1u);
  EXPECT_EQ(r.last, 3u);
  EXPECT_TRUE(SegmentsInRange(log, 5, 5).empty());
  r = SegmentsInRange(log, -1, 20);  // everything below 20
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, 2u);
  EXPECT_TRUE(NonActiveSegmentsFrom(log, 31).empty());
}

// LogCleanerManagerTest #26 testCleanableOffsetsNeedsCheckpointReset and #6/#7.
TEST(CleanableTest, CheckpointReset) {
  LogSummary log = MakeLog({0, 10, 20}, 20);
  log.segments[0].base_offset = 0;
  log.log_start_offset = 10;
  log.cleaner_checkpoint = 15;
  CleanerConfig c = Compact();
  auto o = ComputeCleanableOffsets(log, c, 0);
  EXPECT_FALSE(o.force_update_checkpoint);
  EXPECT_EQ(o.first_dirty_offset, 15);
  log.log_start_offset = 20;
  o = ComputeCleanableOffsets(log, c, 0);
  EXPECT_TRUE(o.force_update_checkpoint);
  EXPECT_EQ(o.first_dirty_offset, 20);
  log.log_start_offset = 10;
  log.cleaner_checkpoint = 25;  // > LEO 20
  o = ComputeCleanableOffsets(log, c, 0);
  EXPECT_TRUE(o.force_update_checkpoint);
  EXPECT_EQ(o.first_dirty_offset, 10);
}

// #22 testCleanableOffsetsForNone: HW 50 inside the log → firstUncleanableDirtyOffset 50 (raw),
// rounded to its segment by LogToClean; #23 active segment bound.
TEST(CleanableTest, LsoAndActiveBound) {
  LogSummary log = MakeLog({0, 20, 40, 60, 80}, 90);
  log.last_stable_offset = 50;
  CleanerConfig c = Compact();
  auto o = ComputeCleanableOffsets(log, c, 0);
  EXPECT_EQ(o.first_dirty_offset, 0);
  EXPECT_EQ(o.first_uncleanable_dirty_offset, 50);
  auto ltc = ComputeLogToClean(log, 0, 50);
  EXPECT_EQ(ltc.first_uncleanable_offset, 40);
  log.last_stable_offset = 90;
  o = ComputeCleanableOffsets(log, c, 0);
  EXPECT_EQ(o.first_uncleanable_dirty_offset, 80);
}

// #24 testCleanableOffsetsForTime: the first segment with largestTimestamp > now - lag bounds the range;
// an empty time index falls back to mtime.
TEST(CleanableTest, MinCompactionLag) {
  LogSummary log = MakeLog({0, 10, 20, 30}, 35);
  CleanerConfig c = Compact();
  c.min_compaction_lag_ms = 3600000;
  int64_t t0 = 1400000000000, t1 = t0 + 3600001;
  for (auto& s : log.segments) s.max_timestamp_so_far = t0;
  log.segments[2].max_timestamp_so_far = t1;
  auto o = ComputeCleanableOffsets(log, c, t1);
  EXPECT_EQ(o.first_uncleanable_dirty_offset, 20);
  log.segments[1].max_timestamp_so_far = -1;
  log.segments[1].last_modified_ms = t1;
  o = ComputeCleanableOffsets(log, c, t1);
  EXPECT_EQ(o.first_uncleanable_dirty_offset, 10);
}

// now - min.compaction.lag.ms wraps as Java's long arithmetic does: at now = Long.MIN_VALUE it is
// Long.MAX_VALUE, so no segment is too recent; max.compaction.lag.ms at its default (Long.MAX_VALUE)
// and now = -1 gives Long.MIN_VALUE, so nothing is overdue.
TEST(CleanableTest, ClockArithmeticWrapsAsJava) {
  LogSummary log = MakeLog({0, 10, 20, 30}, 35);
  CleanerConfig c = Compact();
  c.min_compaction_lag_ms = 1;
  auto o = ComputeCleanableOffsets(log, c, INT64_MIN);
  EXPECT_EQ(o.first_uncleanable_dirty_offset, 30);
  c = Compact();
  EXPECT_EQ(c.max_compaction_lag_ms, INT64_MAX);
  EXPECT_EQ(MaxCompactionDelay(log, 0, c, -1), 0);
  c.max_compaction_lag_ms = 1;
  EXPECT_EQ(MaxCompactionDelay(log, 0, c, INT64_MIN), INT64_MAX - 1000);  // (MIN - 1) - 1000, wrapped
}

// #8/#9: nothing but the active segment → nothing cleanable.
TEST(CleanableTest, OnlyActiveSegment) {
  LogSummary log = MakeLog({0}, 9);
  log.log_start_offset = 2;
  log.cleaner_checkpoint = 0;
  auto d = DecideCleaning(log, Compact(), 0);
  EXPECT_FALSE(d.selected);
  EXPECT_EQ(d.range.cleanable_bytes, 0);
  EXPECT_EQ(d.range.first_uncleanable_offset, 0);
}

// LogCleanerTest #30/#31 testLogToClean(WithUncleanableSection).
TEST(CleanableTest, LogToCleanSizes) {
  LogSummary log = MakeLog({0, 1, 2, 3, 4, 5}, 6);
  for (size_t i = 0; i < log.segments.size(); i++) log.segments[i].size = 70 + int64_t(i);
  auto ltc = ComputeLogToClean(log, 2, 4);
  EXPECT_EQ(ltc.clean_bytes, 70 + 71);
  EXPECT_EQ(ltc.cleanable_bytes, 72 + 73);
  EXPECT_EQ(ltc.total_bytes, 70 + 71 + 72 + 73);
  EXPECT_NEAR(ltc.cleanable_ratio, double(72 + 73) / (70 + 71 + 72 + 73), 1e-6);
  ltc = ComputeLogToClean(log, 5, 5);
  int64_t all_but_active = 70 + 71 + 72 + 73 + 74;
  EXPECT_EQ(ltc.total_bytes, all_but_active);
}

// Ratio must be strictly greater; max.compaction.lag forces selection.
TEST(CleanableTest, RatioStrictAndForcedByMaxLag) {
  LogSummary log = MakeLog({0, 10, 20}, 25);
  log.cleaner_checkpoint = 10;  // clean 100, cleanable 100 → ratio 0.5
  CleanerConfig c = Compact();
  auto d = DecideCleaning(log, c, 5000);
  EXPECT_DOUBLE_EQ(d.range.cleanable_ratio, 0.5);
  EXPECT_FALSE(d.selected);
  c.max_compaction_lag_ms = 1000;
  d = DecideCleaning(log, c, 5000);  // first batch ts 1000 < 5000 - 1000
  EXPECT_TRUE(d.need_compaction_now);
  EXPECT_EQ(d.max_compaction_delay_ms, 3000);
  EXPECT_TRUE(d.selected);
  c = Compact();
  c.min_cleanable_ratio = 0.49;
  EXPECT_TRUE(DecideCleaning(log, c, 5000).selected);
}

// LogCleanerManagerTest #2-#5: the dirtiest eligible log wins.
TEST(CleanableTest, GrabFilthiest) {
  std::vector<CleaningDecision> ds(3);
  ds[0].selected = true;
  ds[0].range.cleanable_ratio = 0.2;
  ds[1].selected = true;
  ds[1].range.cleanable_ratio = 0.4;
  ds[2].selected = false;
  ds[2].range.cleanable_ratio = 0.9;
  EXPECT_EQ(GrabFilthiest(ds), 1u);
  ds[1].selected = false;
  EXPECT_EQ(GrabFilthiest(ds), 0u);
  ds[0].selected = false;
  EXPECT_FALSE(GrabFilthiest(ds).has_value());
}

// LogCleanerTest #35 testSegmentGrouping.
TEST(GroupingTest, SegmentGrouping) {
  std::vector<SegmentSummary> segs;
  for (int i = 0; i < 10; i++) {
    SegmentSummary s;
    s.base_offset = i * 5;
    s.size = 290;
    s.offset_index_bytes = 8 * 4;
    s.time_index_bytes = 12;  // same timestamp everywhere: one time entry
    segs.push_back(s);
  }
  auto g = GroupSegmentsBySize(segs, INT32_MAX, INT32_MAX, 50);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].size(), 10u);
  EXPECT_EQ(GroupSegmentsBySize(segs, 1, INT32_MAX, 50).size(), 10u);
  EXPECT_EQ(GroupSegmentsBySize(segs, INT32_MAX, 1, 50).size(), 10u);
  int64_t first3 = segs[0].size + segs[1].size + segs[2].size;
  g = GroupSegmentsBySize(segs, first3 + 1, INT32_MAX, 50);
  for (size_t i = 0; i + 1 < g.size(); i++) EXPECT_EQ(g[i].size(), 3u);
  g = GroupSegmentsBySize(segs, INT32_MAX, 3 * 32 + 1, 50);
  for (size_t i = 0; i + 1 < g.size(); i++) EXPECT_EQ(g[i].size(), 3u);
}

// #36 testSegmentGroupingWithSparseOffsetsAndEmptySegments: no merging across > 2^31-1 offsets,
// except empty segments.
TEST(GroupingTest, SparseOffsets) {
  std::vector<SegmentSummary> segs(3);
  int64_t two31 = int64_t(1) << 31;
  for (int i = 0; i < 3; i++) {
    segs[i].base_offset = i * two31;
    segs[i].size = 100;
  }
  EXPECT_EQ(GroupSegmentsBySize(segs, INT32_MAX, INT32_MAX, 3 * two31).size(), 3u);
  segs[1].size = 0;
  segs[0].size = 0;
  EXPECT_EQ(GroupSegmentsBySize(segs, INT32_MAX, INT32_MAX, 3 * two31).size(), 2u);
}

TEST(GroupingTest, TwoThreadMapSplitsAtTheBoundaryNearestTheMiddle) {
  // Eight equal segments, each a few bytes short of the others (as a real log's are): 4 and 4. The
  // first boundary at or past the middle would be after the fifth.
  std::vector<uint64_t> eight{33553471, 33552013, 33549044, 33554057, 33554367, 33552238, 33553571, 33553490};
  EXPECT_EQ(SplitNearMiddle(eight), 4u);
  EXPECT_EQ(SplitNearMiddle({10, 10}), 1u);
  EXPECT_EQ(SplitNearMiddle({10, 10, 10}), 1u);  // a tie: the earlier boundary
  EXPECT_EQ(SplitNearMiddle({1, 1, 100}), 2u);
  EXPECT_EQ(SplitNearMiddle({100, 1, 1}), 1u);
  EXPECT_EQ(SplitNearMiddle({0, 0}), 1u);
  EXPECT_EQ(SplitNearMiddle({5, 3, 3, 5}), 2u);
}

}  // namespace
}  // namespace klf
