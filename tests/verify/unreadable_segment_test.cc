// verify on LoadedLog's pass: a segment that cannot be opened, or cannot be read to its end, is a
// "file-read" error of that segment (the partition is unreadable: exit 3), every other segment is still
// verified, and the offsets missing across what could not be read are not called compaction. On a
// Kafka-made partition of 13 segments, with the faults injected through the Env.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "partition/loaded_log.h"
#include "tests/support/fault_injection_env.h"
#include "verify/verify.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

const std::string kPartition =
    std::string(KLF_FIXTURES_DIR) + "/kafka-oracle/cleaner-passes/group-by-segment-bytes/before/prices-0";

struct Verified {
  VerifyStats stats;
  std::vector<Problem> problems;
};

Verified VerifyWith(Env* env) {
  Verified r;
  VerifyOptions options;
  options.read.env = env;
  options.read.stream_chunk_bytes = 1;  // each read no further than the batch it is for
  CollectingSink sink;
  r.stats = VerifyPath(kPartition, options, &sink);
  r.problems = std::move(sink.problems);
  return r;
}

// The batch positions of each segment, as the load's pass gives them.
std::vector<std::vector<uint64_t>> BatchPositions(LoadedLog* log) {
  std::string error;
  CollectingSink sink;
  EXPECT_TRUE(LoadedLog::Open(kPartition, LoadOptions(), log, &sink, &error)) << error;
  std::vector<std::vector<uint64_t>> positions(log->segments.size());
  EXPECT_TRUE(log->ForEachBatch(
      [&](size_t i, const BatchView& b) {
        positions[i].push_back(b.header.position);
        return true;
      },
      &sink, &error))
      << error;
  return positions;
}

TEST(VerifyUnreadableSegment, ItIsAFileReadErrorAndTheOtherSegmentsAreStillVerified) {
  LoadedLog log;
  const std::vector<std::vector<uint64_t>> positions = BatchPositions(&log);
  ASSERT_EQ(positions.size(), 13u);
  const std::string unopened = log.segments[3].log_path;
  const std::string torn = log.segments[7].log_path;
  ASSERT_GE(positions[7].size(), 2u);
  const uint64_t at = positions[7].back();  // the read fails at the segment's last batch

  const Verified whole = VerifyWith(nullptr);
  ASSERT_FALSE(whole.stats.unreadable);
  FaultInjectionEnv faults(Env::Default());
  faults.FailOpen(fs::path(unopened).filename().string());
  faults.FailRead(fs::path(torn).filename().string(), at);
  const Verified faulted = VerifyWith(&faults);

  EXPECT_TRUE(faulted.stats.unreadable);
  size_t unopened_errors = 0, torn_errors = 0;
  for (const Problem& p : faulted.problems) {
    if (p.check != std::string("file-read")) continue;
    EXPECT_EQ(p.severity, Severity::kError);
    if (p.file == unopened) {
      ++unopened_errors;
      EXPECT_EQ(p.position, 0u);
    } else if (p.file == torn) {
      ++torn_errors;
      EXPECT_EQ(p.position, at);
      EXPECT_EQ(p.message.find(torn), std::string::npos) << "the file is named twice: " << p.message;
    } else {
      ADD_FAILURE() << "file-read of " << p.file;
    }
  }
  EXPECT_EQ(unopened_errors, 1u);
  EXPECT_EQ(torn_errors, 1u);
  // Every batch but segment 3's and the torn one of segment 7 was verified. The listing finds segment
  // 3's .log unreadable, so the segment is not walked: its .index and .timeindex, checked against the
  // .log, are not counted either.
  EXPECT_EQ(faulted.stats.batches, whole.stats.batches - positions[3].size() - 1);
  ASSERT_TRUE(log.segments[3].offset_index_path && log.segments[3].time_index_path);
  EXPECT_EQ(faulted.stats.files_checked, whole.stats.files_checked - 3);
  // No offset gap is classified across what could not be read: offsets 18..19 are in segment 3, and
  // 41..44 after segment 7's torn batch (the fixture has no gap of its own).
  EXPECT_EQ(whole.stats.gaps_never_cleaned, 0u);
  EXPECT_EQ(faulted.stats.gaps_never_cleaned, 0u);
  for (const Problem& p : faulted.problems)
    EXPECT_NE(p.check, std::string("offset-gap")) << p.file << ": " << p.message;
  // The problems of the segments before the first fault are the same.
  auto before_fault = [&](const Verified& r) {
    std::vector<std::string> v;
    for (const Problem& p : r.problems)
      if (p.file < unopened.substr(0, unopened.size() - 4)) v.push_back(p.file + " " + p.check + " " + p.message);
    return v;
  };
  EXPECT_EQ(before_fault(faulted), before_fault(whole));
}

}  // namespace
}  // namespace klf
