// The simulator's ReplicaView and diff's ReplicaState read a replica independently (the view decodes
// whole records into a read_committed list; diff keeps 64-byte digests and derives the consumers'
// views from the `.txnindex` as the fetch path does). On every partition directory of the fixtures
// that a broker or Kafka's storage code wrote, the two must agree on the broker's offsets, its open
// transactions and exactly which records a read_committed consumer receives.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "diff/replica_state.h"
#include "simulator/replica_view.h"
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

void ExpectSameView(const std::string& dir, int* compared, int* with_txns) {
  SCOPED_TRACE(dir);
  const int64_t expiration = 86400000;
  ReplicaState state;
  std::string error;
  ASSERT_TRUE(LoadReplica(dir, ReplicaOptions{}, &state, &error)) << error;
  if (!state.damaged.empty()) return;  // diff leaves damaged ranges out; the view refuses them
  // The same clock for both: diff's default (the newest record timestamp).
  int64_t now = state.max_timestamp;
  ReplicaOptions options;
  options.now_ms = now;
  options.producer_id_expiration_ms = expiration;
  ASSERT_TRUE(LoadReplica(dir, options, &state, &error)) << error;
  ReplicaView view;
  CollectingSink sink;
  if (!LoadReplicaView(dir, now, expiration, &view, &sink, &error)) {
    ADD_FAILURE() << "diff loads it, the view does not: " << error;
    return;
  }
  (*compared)++;
  EXPECT_EQ(view.log_start_offset, state.log_start_offset);
  EXPECT_EQ(view.log_end_offset, state.log_end_offset);
  EXPECT_EQ(view.high_watermark, state.high_watermark);
  EXPECT_EQ(view.last_stable_offset, state.last_stable_offset);
  EXPECT_EQ(view.cleaner_checkpoint, state.cleaner_checkpoint);
  std::vector<std::pair<int64_t, int64_t>> open_view, open_state;
  for (const OpenTxnInfo& t : view.open_txns) open_view.emplace_back(t.producer_id, t.first_offset);
  for (const OpenTxn& t : state.open_txns) open_state.emplace_back(t.producer_id, t.first_offset);
  std::sort(open_view.begin(), open_view.end());
  std::sort(open_state.begin(), open_state.end());
  EXPECT_EQ(open_view, open_state);

  std::vector<int64_t> served_view, served_state;
  for (const ServedRecord& r : view.read_committed) served_view.push_back(r.offset);
  for (const RecordDigest& r : state.records)
    if (r.read_committed) served_state.push_back(r.offset);
  EXPECT_EQ(served_view.size(), served_state.size());
  EXPECT_TRUE(served_view == served_state) << "first difference at index "
      << (std::mismatch(served_view.begin(), served_view.end(), served_state.begin(), served_state.end()).first -
          served_view.begin());
  if (!state.txns.empty()) (*with_txns)++;
}

TEST(ReplicaViewTest, AgreesWithDiffsReplicaStateOnKafkasDirectories) {
  int compared = 0, with_txns = 0;
  for (const std::string& dir : PartitionDirs(fs::path(KLF_FIXTURES_DIR) / "kafka-oracle"))
    ExpectSameView(dir, &compared, &with_txns);
  EXPECT_GE(compared, 30);
  EXPECT_GE(with_txns, 5);
}

TEST(ReplicaViewTest, AgreesWithDiffsReplicaStateOnRealBrokersData) {
  int compared = 0, with_txns = 0;
  for (const std::string& dir : PartitionDirs(fs::path(KLF_FIXTURES_DIR) / "real"))
    ExpectSameView(dir, &compared, &with_txns);
  EXPECT_GE(compared, 1000);
}

}  // namespace
}  // namespace klf
