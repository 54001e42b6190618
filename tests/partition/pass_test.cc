// LoadedLog's pass (ForEachBatch with a SegmentVisitor) on a Kafka-made partition of 13 segments: the
// `before` step skips and stops, `unreadable` takes the files the pass cannot read (klf verify
// reports them and goes on; every other command fails), and LoadedLog::Listed gives the segments Open
// gives without reading a file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "partition/loaded_log.h"
#include "segment_reader/layout.h"
#include "tests/support/fault_injection_env.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using Step = LoadedLog::Step;

const std::string kPartition =
    std::string(KLF_FIXTURES_DIR) + "/kafka-oracle/cleaner-passes/group-by-segment-bytes/before/prices-0";

LoadedLog Open(Env* env = nullptr) {
  LoadOptions options;
  options.env = env;
  LoadedLog log;
  std::string error;
  CollectingSink sink;
  EXPECT_TRUE(LoadedLog::Open(kPartition, options, &log, &sink, &error)) << error;
  return log;
}

// (segment, batch position) of every batch a pass gives, and the segments it began and ended.
struct Seen {
  std::vector<std::pair<size_t, uint64_t>> batches;
  std::vector<size_t> begun, ended;
  std::vector<std::pair<size_t, std::string>> unreadable;
};

LoadedLog::SegmentVisitor Recorder(Seen* seen) {
  LoadedLog::SegmentVisitor v;
  v.begin = [seen](size_t i, LogReader&) { seen->begun.push_back(i); };
  v.batch = [seen](size_t i, const BatchView& b) {
    seen->batches.emplace_back(i, b.header.position);
    return Step::kNext;
  };
  v.end = [seen](size_t i, const LogReader&) { seen->ended.push_back(i); };
  return v;
}

std::vector<size_t> Range(size_t from, size_t to) {
  std::vector<size_t> v;
  for (size_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

std::vector<std::pair<size_t, uint64_t>> BatchesOf(const Seen& all, const std::vector<size_t>& segments) {
  std::vector<std::pair<size_t, uint64_t>> v;
  for (const auto& b : all.batches)
    if (std::find(segments.begin(), segments.end(), b.first) != segments.end()) v.push_back(b);
  return v;
}

TEST(LoadedLogPassTest, BeforeSkipsASegmentOrStopsThePass) {
  const LoadedLog log = Open();
  const size_t n = log.segments.size();
  ASSERT_EQ(n, 13u);
  Seen all;
  std::string error;
  CollectingSink sink;
  ASSERT_TRUE(log.ForEachBatch(Recorder(&all), &sink, &error)) << error;
  ASSERT_EQ(all.begun, Range(0, n));

  Seen odd;
  LoadedLog::SegmentVisitor v = Recorder(&odd);
  std::vector<size_t> asked;
  v.before = [&](size_t i) {
    asked.push_back(i);
    return i % 2 == 0 ? Step::kNextSegment : Step::kNext;
  };
  ASSERT_TRUE(log.ForEachBatch(v, &sink, &error)) << error;
  EXPECT_EQ(asked, Range(0, n));
  std::vector<size_t> odds;
  for (size_t i = 1; i < n; i += 2) odds.push_back(i);
  EXPECT_EQ(odd.begun, odds);
  EXPECT_EQ(odd.ended, odds);
  EXPECT_EQ(odd.batches, BatchesOf(all, odds));

  Seen first5;
  v = Recorder(&first5);
  asked.clear();
  v.before = [&](size_t i) {
    asked.push_back(i);
    return i == 5 ? Step::kStop : Step::kNext;
  };
  ASSERT_TRUE(log.ForEachBatch(v, &sink, &error)) << error;
  EXPECT_EQ(asked, Range(0, 6));  // not asked again after the stop
  EXPECT_EQ(first5.begun, Range(0, 5));
  EXPECT_EQ(first5.batches, BatchesOf(all, Range(0, 5)));
}

// A rider reads every segment even where the pass's `before` skips one or stops.
TEST(LoadedLogPassTest, ARiderReadsTheSegmentsThePassSkips) {
  const LoadedLog log = Open();
  Seen all, pass, rode;
  std::string error;
  CollectingSink sink;
  ASSERT_TRUE(log.ForEachBatch(Recorder(&all), &sink, &error)) << error;
  LoadedLog::SegmentVisitor v = Recorder(&pass);
  v.before = [](size_t i) { return i == 2 ? Step::kNextSegment : i == 7 ? Step::kStop : Step::kNext; };
  LoadedLog::Rider rider;
  rider.visit = Recorder(&rode);
  ASSERT_TRUE(log.ForEachBatch(v, &sink, &error, ReadOptions(), &rider)) << error;
  EXPECT_TRUE(rider.complete);
  EXPECT_EQ(rode.batches, all.batches);
  EXPECT_EQ(pass.begun, (std::vector<size_t>{0, 1, 3, 4, 5, 6}));
  EXPECT_EQ(pass.batches, BatchesOf(all, pass.begun));
}

TEST(LoadedLogPassTest, UnreadableTakesASegmentThatCannotBeOpenedAndThePassGoesOn) {
  FaultInjectionEnv faults(Env::Default());
  const LoadedLog log = Open(&faults);
  const std::string bad = log.segments[3].log_path;
  faults.FailOpen(fs::path(bad).filename().string());
  Seen all;
  {
    const LoadedLog plain = Open();
    std::string error;
    CollectingSink sink;
    ASSERT_TRUE(plain.ForEachBatch(Recorder(&all), &sink, &error)) << error;
  }

  // Without `unreadable`: the pass fails there, naming the file; the batches before it were visited.
  Seen failed;
  std::string error;
  CollectingSink sink;
  EXPECT_FALSE(log.ForEachBatch(Recorder(&failed), &sink, &error));
  EXPECT_NE(error.find(bad), std::string::npos) << error;
  EXPECT_EQ(failed.batches, BatchesOf(all, Range(0, 3)));

  // With it: the visitor is told, and every other segment is read.
  Seen judged;
  LoadedLog::SegmentVisitor v = Recorder(&judged);
  v.unreadable = [&](size_t i, const std::string& why) { judged.unreadable.emplace_back(i, why); };
  error.clear();
  ASSERT_TRUE(log.ForEachBatch(v, &sink, &error)) << error;
  ASSERT_EQ(judged.unreadable.size(), 1u);
  EXPECT_EQ(judged.unreadable[0].first, 3u);
  EXPECT_NE(judged.unreadable[0].second.find(bad), std::string::npos) << judged.unreadable[0].second;
  std::vector<size_t> others = Range(0, 13);
  others.erase(others.begin() + 3);
  EXPECT_EQ(judged.begun, others);
  EXPECT_EQ(judged.ended, others);
  EXPECT_EQ(judged.batches, BatchesOf(all, others));

  // A rider cannot have seen that segment: it is incomplete, and the pass still goes on.
  Seen rode;
  LoadedLog::Rider rider;
  rider.visit = Recorder(&rode);
  judged = Seen();
  ASSERT_TRUE(log.ForEachBatch(v, &sink, &error, ReadOptions(), &rider)) << error;
  EXPECT_FALSE(rider.complete);
  EXPECT_EQ(rode.batches, BatchesOf(all, Range(0, 3)));
  EXPECT_EQ(judged.batches, BatchesOf(all, others));
}

TEST(LoadedLogPassTest, UnreadableEndsASegmentWithAReadErrorAndThePassGoesOn) {
  Seen all;
  {
    const LoadedLog plain = Open();
    std::string error;
    CollectingSink sink;
    ASSERT_TRUE(plain.ForEachBatch(Recorder(&all), &sink, &error)) << error;
  }
  // The read fails at the last batch of the segment with the most batches (not the last segment).
  size_t bad_segment = 0;
  for (size_t i = 1; i + 1 < 13; ++i)
    if (BatchesOf(all, {i}).size() > BatchesOf(all, {bad_segment}).size()) bad_segment = i;
  const std::vector<std::pair<size_t, uint64_t>> bad_batches = BatchesOf(all, {bad_segment});
  ASSERT_GE(bad_batches.size(), 2u);
  const uint64_t at = bad_batches.back().second;
  FaultInjectionEnv faults(Env::Default());
  const LoadedLog log = Open(&faults);
  const std::string bad = log.segments[bad_segment].log_path;
  faults.FailRead(fs::path(bad).filename().string(), at);
  ReadOptions small_reads;  // each read no further than the batch it is for
  small_reads.stream_chunk_bytes = 1;

  Seen failed;
  std::string error;
  CollectingSink sink;
  EXPECT_FALSE(log.ForEachBatch(Recorder(&failed), &sink, &error, small_reads));
  EXPECT_NE(error.find(bad), std::string::npos) << error;
  EXPECT_EQ(failed.begun, Range(0, bad_segment + 1));
  EXPECT_EQ(failed.ended, Range(0, bad_segment));  // not the failed segment: the pass ended there

  Seen judged;
  LoadedLog::SegmentVisitor v = Recorder(&judged);
  v.unreadable = [&](size_t i, const std::string& why) { judged.unreadable.emplace_back(i, why); };
  CollectingSink reported;
  error.clear();
  ASSERT_TRUE(log.ForEachBatch(v, &reported, &error, small_reads)) << error;
  EXPECT_TRUE(judged.unreadable.empty());  // it was opened: the reader reported the read error
  EXPECT_EQ(judged.begun, Range(0, 13));
  EXPECT_EQ(judged.ended, Range(0, 13));
  bool file_read = false;
  for (const Problem& p : reported.problems) file_read |= p.file == bad && p.check == std::string("file-read");
  EXPECT_TRUE(file_read);
  // The failed segment's batches before the failed byte, and every other segment whole.
  std::vector<std::pair<size_t, uint64_t>> before_fault(bad_batches.begin(), bad_batches.end() - 1);
  EXPECT_EQ(BatchesOf(judged, {bad_segment}), before_fault);
  EXPECT_EQ(BatchesOf(judged, Range(bad_segment + 1, 13)), BatchesOf(all, Range(bad_segment + 1, 13)));
  EXPECT_EQ(BatchesOf(judged, Range(0, bad_segment)), BatchesOf(all, Range(0, bad_segment)));
}

TEST(LoadedLogPassTest, ListedGivesOpensSegmentsAndReadsNoFile) {
  const LoadedLog opened = Open();
  PartitionDir listing;
  CollectingSink sink;
  ASSERT_TRUE(ScanPartitionDir(kPartition, &listing, &sink));
  FaultInjectionEnv faults(Env::Default());
  const LoadedLog listed = LoadedLog::Listed(std::move(listing), &faults);
  EXPECT_EQ(faults.files_opened(), 0u);
  EXPECT_EQ(listed.env, &faults);
  EXPECT_EQ(listed.dir, kPartition);
  EXPECT_EQ(listed.tp, opened.tp);
  EXPECT_EQ(listed.topic_id, opened.topic_id);
  EXPECT_EQ(listed.snapshot_files, opened.snapshot_files);
  ASSERT_EQ(listed.segments.size(), opened.segments.size());
  for (size_t i = 0; i < listed.segments.size(); ++i) {
    EXPECT_EQ(listed.segments[i].base_offset, opened.segments[i].base_offset);
    EXPECT_EQ(listed.segments[i].log_path, opened.segments[i].log_path);
    EXPECT_EQ(listed.segments[i].offset_index_path, opened.segments[i].offset_index_path);
    EXPECT_EQ(listed.segments[i].time_index_path, opened.segments[i].time_index_path);
  }
  // Its pass reads through the Env it was given.
  Seen seen;
  std::string error;
  ASSERT_TRUE(listed.ForEachBatch(Recorder(&seen), &sink, &error)) << error;
  EXPECT_EQ(faults.files_opened(), listed.segments.size());
}

}  // namespace
}  // namespace klf
