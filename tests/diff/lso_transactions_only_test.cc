// `klf lso` loads replicas with ReplicaOptions::transactions_only (no per-record state, issue 15): on
// every partition directory of the fixtures it must see what the full load sees of offsets and
// transactions, and explain the LSO the same way. The full load's memory budget turns a replica too
// large for it into an error naming the segment, never an allocation failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "diff/replica_state.h"
#include "diff/lso.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> PartitionDirs(const fs::path& root) {
  std::vector<std::string> dirs;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file() && e.path().extension() == ".log") dirs.push_back(e.path().parent_path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  return dirs;
}

void ExpectSameTransactions(const std::string& dir) {
  SCOPED_TRACE(dir);
  ReplicaState full, light;
  std::string error;
  ReplicaOptions options;
  ASSERT_TRUE(LoadReplica(dir, options, &full, &error)) << error;
  options.transactions_only = true;
  ASSERT_TRUE(LoadReplica(dir, options, &light, &error)) << error;
  EXPECT_TRUE(light.records.empty());
  EXPECT_TRUE(light.batches.empty());
  EXPECT_EQ(light.log_start_offset, full.log_start_offset);
  EXPECT_EQ(light.log_end_offset, full.log_end_offset);
  EXPECT_EQ(light.high_watermark, full.high_watermark);
  EXPECT_EQ(light.last_stable_offset, full.last_stable_offset);
  EXPECT_EQ(light.max_timestamp, full.max_timestamp);
  ASSERT_EQ(light.open_txns.size(), full.open_txns.size());
  for (size_t i = 0; i < full.open_txns.size(); ++i) {
    EXPECT_EQ(light.open_txns[i].producer_id, full.open_txns[i].producer_id);
    EXPECT_EQ(light.open_txns[i].first_offset, full.open_txns[i].first_offset);
  }
  ASSERT_EQ(light.markers.size(), full.markers.size());
  for (size_t i = 0; i < full.markers.size(); ++i) {
    EXPECT_EQ(light.markers[i].offset, full.markers[i].offset);
    EXPECT_EQ(light.markers[i].type, full.markers[i].type);
  }
  ASSERT_EQ(light.txns.size(), full.txns.size());
  for (size_t i = 0; i < full.txns.size(); ++i) {
    EXPECT_EQ(light.txns[i].first_offset, full.txns[i].first_offset);
    EXPECT_EQ(light.txns[i].marker_offset, full.txns[i].marker_offset);
    EXPECT_EQ(light.txns[i].fate, full.txns[i].fate);
  }
  LsoReport a = ExplainLso(full, {}, LsoOptions()), b = ExplainLso(light, {}, LsoOptions());
  EXPECT_EQ(b.explanation, a.explanation);
  EXPECT_EQ(b.resolution, a.resolution);
  EXPECT_EQ(b.abort_command, a.abort_command);
}

TEST(TransactionsOnlyTest, LsoSeesWhatTheFullLoadSees) {
  for (const char* root : {"kafka-oracle", "real"})
    for (const std::string& dir : PartitionDirs(fs::path(KLF_FIXTURES_DIR) / root)) ExpectSameTransactions(dir);
}

TEST(TransactionsOnlyTest, MemoryBudgetIsAReportedError) {
  std::string dir;
  for (const std::string& d : PartitionDirs(fs::path(KLF_FIXTURES_DIR) / "kafka-oracle")) {
    ReplicaState r;
    std::string error;
    if (LoadReplica(d, ReplicaOptions{}, &r, &error) && r.records.size() > 20) {
      dir = d;
      break;
    }
  }
  ASSERT_FALSE(dir.empty());
  ReplicaOptions options;
  options.max_state_bytes = 1024;  // less than 20 records take
  ReplicaState r;
  std::string error;
  EXPECT_FALSE(LoadReplica(dir, options, &r, &error));
  EXPECT_NE(error.find(".log: position "), std::string::npos) << error;
  EXPECT_NE(error.find("memory budget"), std::string::npos) << error;
  EXPECT_NE(error.find("--memory-budget"), std::string::npos) << error;
}

}  // namespace
}  // namespace klf
