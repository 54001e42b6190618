// The compactor (LoadPartitionLog: its own directory scan, offset-index shortcut, producer state fed
// from the segments it holds) and diff (LoadReplica: every record streamed once) load a partition
// independently. On every partition directory of the fixtures written by Kafka or a real broker they
// must agree on what a broker would compute after a restart: log start and end offsets, high
// watermark, last stable offset and the cleaner checkpoint.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "compactor/partition_log.h"
#include "diff/replica_state.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> PartitionDirs(const fs::path& root) {
  std::vector<std::string> dirs;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file() && test::IsSegmentFileName(e.path().filename().string())) dirs.push_back(e.path().parent_path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  return dirs;
}

// Returns whether the directory was compared (both loaded it, no damage).
bool ExpectSameOffsets(const std::string& dir) {
  SCOPED_TRACE(dir);
  ReplicaState state;
  std::string error;
  if (!LoadReplica(dir, ReplicaOptions{}, &state, &error)) {
    ADD_FAILURE() << error;
    return false;
  }
  if (!state.damaged.empty()) return false;  // the compactor refuses damage where it would read it
  ReplicaOptions options;
  options.now_ms = state.max_timestamp;  // the same clock for both
  EXPECT_TRUE(LoadReplica(dir, options, &state, &error)) << error;
  PartitionLog log;
  CollectingSink sink;
  CleanerConfig config;
  if (!LoadPartitionLog(dir, config, *options.now_ms, std::nullopt, &log, &sink, &error)) {
    ADD_FAILURE() << "diff loads it, the compactor does not: " << error;
    return false;
  }
  EXPECT_EQ(log.summary.log_start_offset, state.log_start_offset);
  EXPECT_EQ(log.summary.log_end_offset, state.log_end_offset);
  EXPECT_EQ(log.high_watermark, state.high_watermark);
  EXPECT_EQ(log.summary.last_stable_offset, state.last_stable_offset);
  EXPECT_EQ(log.summary.cleaner_checkpoint, state.cleaner_checkpoint);
  return true;
}

TEST(LoadAgreementTest, CompactorAndDiffSeeTheSameBrokerOffsets) {
  int compared = 0;
  for (const char* root : {"kafka-oracle", "real"})
    for (const std::string& dir : PartitionDirs(fs::path(KLF_FIXTURES_DIR) / root)) compared += ExpectSameOffsets(dir);
  EXPECT_GE(compared, 1300);
}

}  // namespace
}  // namespace klf
