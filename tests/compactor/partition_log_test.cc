// LoadPartitionLog finds each segment's next offset as LogSegment.readNextOffset does, from the offset
// index's last entry, and falls back to walking every batch header when that entry cannot be trusted.
// Whatever the index says, the summary must be the one a walk over every batch gives.
#include "compactor/partition_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "segment_reader/bytes.h"
#include "segment_writer/batch_builder.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using test::CopyWritable;
using test::ReadAll;
using test::TempDir;
using test::WriteAll;

const fs::path kOracle = fs::path(KLF_FIXTURES_DIR) / "kafka-oracle";

// Every Kafka-written partition directory of the oracle fixtures that holds segments.
std::vector<fs::path> OraclePartitions() {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::recursive_directory_iterator(kOracle)) {
    if (!e.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(e.path()))
      if (f.path().extension() == ".log") {
        dirs.push_back(e.path());
        break;
      }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

struct Loaded {
  bool ok = false;
  std::string error;
  PartitionLog log;
  CollectingSink sink;
};

void Load(const fs::path& dir, Loaded* out) {
  CleanerConfig config;
  out->ok =
      LoadPartitionLog(dir.string(), config, /*now=*/1700000000000, std::nullopt, &out->log, &out->sink, &out->error);
}

// The fields the walk decides.
void ExpectSameWalk(const Loaded& got, const Loaded& want, const std::string& what) {
  ASSERT_EQ(got.ok, want.ok) << what << ": " << got.error << " / " << want.error;
  ASSERT_EQ(got.log.summary.segments.size(), want.log.summary.segments.size()) << what;
  for (size_t i = 0; i < want.log.summary.segments.size(); i++) {
    const SegmentSummary& g = got.log.summary.segments[i];
    const SegmentSummary& w = want.log.summary.segments[i];
    EXPECT_EQ(g.next_offset, w.next_offset) << what << ", segment " << w.base_offset;
    EXPECT_EQ(g.first_batch_timestamp, w.first_batch_timestamp) << what << ", segment " << w.base_offset;
  }
  EXPECT_EQ(got.log.summary.log_end_offset, want.log.summary.log_end_offset) << what;
}

// One offset-index entry: relative offset and position, both big-endian int32.
std::string IndexEntry(int64_t relative_offset, int64_t position) {
  std::string e(8, '\0');
  StoreBE32(reinterpret_cast<uint8_t*>(e.data()), uint32_t(relative_offset));
  StoreBE32(reinterpret_cast<uint8_t*>(e.data()) + 4, uint32_t(position));
  return e;
}

TEST(PartitionLogLoadTest, IndexShortcutMatchesTheWholeWalkOnEveryOracleDirectory) {
  std::vector<fs::path> dirs = OraclePartitions();
  ASSERT_GE(dirs.size(), 10u);
  int doctored = 0;
  for (const fs::path& src : dirs) {
    SCOPED_TRACE(src.string());
    TempDir tmp;
    fs::path base = fs::path(tmp.path()) / "log";
    fs::path with_index = base / src.filename();
    fs::create_directories(base);
    CopyWritable(src.string(), with_index.string());
    Loaded indexed;
    Load(with_index, &indexed);

    // The reference: the same directory without offset indexes (every batch header walked).
    fs::path bare_base = fs::path(tmp.path()) / "bare";
    fs::path bare = bare_base / src.filename();
    fs::create_directories(bare_base);
    CopyWritable(src.string(), bare.string());
    for (const auto& f : fs::directory_iterator(bare))
      if (f.path().extension() == ".index") fs::remove(f.path());
    Loaded walked;
    Load(bare, &walked);
    ExpectSameWalk(indexed, walked, "Kafka's own indexes");
    if (!walked.ok) continue;

    // Indexes whose last entry misleads: inside a batch, at the first batch with an offset it does not
    // hold, at the last byte, past the end.
    for (const SegmentSummary& s : walked.log.summary.segments) {
      if (s.size < 2) continue;
      std::string index_path = (bare / (fmt::format("{:020d}", s.base_offset) + ".index")).string();
      const std::vector<std::pair<std::string, std::string>> lies = {
          {"inside the first batch", IndexEntry(0, 1)},
          {"a batch that does not hold the offset",
           IndexEntry(0, 0) + IndexEntry(s.next_offset - s.base_offset + 5, 0)},
          {"the last byte", IndexEntry(0, s.size - 1)},
          {"past the end", IndexEntry(0, s.size + 100)},
          {"inside the file, just before the end", IndexEntry(0, s.size / 2)},
      };
      for (const auto& [what, bytes] : lies) {
        WriteAll(index_path, bytes);
        Loaded lied;
        Load(bare, &lied);
        ExpectSameWalk(lied, walked, what + std::string(" (segment ") + std::to_string(s.base_offset) + ")");
        doctored++;
      }
      fs::remove(index_path);
    }
  }
  EXPECT_GT(doctored, 50);
}

// The compactor feeds ProducerStateManager from the segments it already holds (no CRC check, from the
// log start offset); on Kafka-written directories that must give the state LoadProducerState (the
// reader verify and diff use) gives, expired producers included, at two clocks.
TEST(PartitionLogLoadTest, ProducerStateMatchesLoadProducerStateOnEveryOracleDirectory) {
  int with_producers = 0;
  for (const fs::path& dir : OraclePartitions()) {
    for (int64_t now : {int64_t(1700000000000), int64_t(1800000000000)}) {
      SCOPED_TRACE(dir.string() + " at " + std::to_string(now));
      Loaded compactor;
      CleanerConfig config;
      compactor.ok =
          LoadPartitionLog(dir.string(), config, now, std::nullopt, &compactor.log, &compactor.sink, &compactor.error);
      if (!compactor.ok) continue;  // not a cleanable log (IndexShortcut... covers loading itself)
      ProducerStateManager reader(ProducerStateOptions{config.producer_id_expiration_ms});
      ProducerStateLoadResult result;
      CollectingSink sink;
      ASSERT_TRUE(LoadProducerState(dir.string(), now, &reader, &result, &sink));
      EXPECT_TRUE(sink.problems.empty()) << sink.problems.front().check << ": " << sink.problems.front().message;
      std::vector<int64_t> before;
      for (const auto& [pid, entry] : reader.producers()) before.push_back(pid);
      reader.RemoveExpiredProducers(now);
      std::vector<int64_t> expired;
      for (int64_t pid : before)
        if (!reader.Find(pid)) expired.push_back(pid);
      EXPECT_EQ(compactor.log.loaded.producer_state.SnapshotEntries(), reader.SnapshotEntries());
      EXPECT_EQ(compactor.log.expired_producers, expired);
      EXPECT_EQ(compactor.log.summary.last_stable_offset, reader.LastStableOffset(compactor.log.high_watermark));
      if (!before.empty()) with_producers++;
    }
  }
  EXPECT_GT(with_producers, 10);
}

// The producers the cleaner treats as active are those of a broker that reloads the log (§7.3,
// ProducerAppendInfo): a producer whose only batch is an empty control batch (its transaction cleaned
// away) is registered with an empty entry (epoch -1, no timestamp), so it has no last data offset and
// expires at the first check unless expiration is off; an open transaction pins the LSO and never
// expires.
class ProducerStateLoadTest : public ::testing::Test {
 protected:
  static constexpr int64_t kT = 1700000000000;

  void SetUp() override {
    dir_ = fs::path(tmp_.path()) / "t-0";
    fs::create_directories(dir_);
    std::string log, error;
    BuiltBatch built;
    auto data = [&](int64_t offset, int64_t pid, int16_t epoch, bool transactional) {
      std::string key = "k" + std::to_string(offset);
      RecordInput r;
      r.offset = offset;
      r.timestamp = kT;
      r.key = AsBytes(key);
      r.value = AsBytes(key);
      V2BatchOptions o;
      o.base_offset = offset;
      o.producer_id = pid;
      o.producer_epoch = epoch;
      o.base_sequence = 0;
      o.is_transactional = transactional;
      ASSERT_TRUE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &log, &built, &error)) << error;
    };
    data(0, 7, 0, true);
    EndTxnMarkerOptions commit;
    commit.offset = 1;
    commit.producer_id = 7;
    commit.timestamp = kT;
    ASSERT_TRUE(AppendEndTxnMarker(commit, &log, &built, &error)) << error;
    BatchHeader cleaned;  // what the cleaner leaves of producer 9's marker
    cleaned.magic = 2;
    cleaned.base_offset = cleaned.last_offset = 2;
    cleaned.producer_id = 9;
    cleaned.producer_epoch = 3;
    cleaned.is_transactional = cleaned.is_control = true;
    cleaned.max_timestamp = kT;
    ASSERT_TRUE(AppendEmptyBatch(cleaned, &log, &built, &error)) << error;
    data(3, 11, 1, false);
    data(4, 13, 0, true);  // never committed
    WriteAll((dir_ / "00000000000000000000.log").string(), log);
  }

  PartitionLog Load(const std::string& expiration_ms) {
    CleanerConfig config;
    std::string e;
    EXPECT_TRUE(config.Set("producer.id.expiration.ms", expiration_ms, &e)) << e;
    PartitionLog log;
    CollectingSink sink;
    EXPECT_TRUE(LoadPartitionLog(dir_.string(), config, kT + 1000, std::nullopt, &log, &sink, &e)) << e;
    EXPECT_TRUE(sink.problems.empty()) << sink.problems.front().message;
    return log;
  }

  TempDir tmp_;
  fs::path dir_;
};

TEST_F(ProducerStateLoadTest, EmptyControlBatchRegistersAnEmptyProducerThatExpires) {
  PartitionLog log = Load("86400000");
  LastRecords last = log.LastRecordsOfActiveProducers();
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last.at(7).last_data_offset, 0);
  EXPECT_EQ(last.at(7).producer_epoch, 0);
  EXPECT_EQ(last.at(11).last_data_offset, 3);
  EXPECT_EQ(last.at(11).producer_epoch, 1);
  EXPECT_EQ(last.at(13).last_data_offset, 4);
  EXPECT_EQ(log.expired_producers, std::vector<int64_t>{9});
  EXPECT_EQ(log.summary.last_stable_offset, 4);
}

TEST_F(ProducerStateLoadTest, WithoutExpirationTheEmptyProducerStaysWithNoLastDataOffset) {
  PartitionLog log = Load("9223372036854775807");
  LastRecords last = log.LastRecordsOfActiveProducers();
  ASSERT_EQ(last.size(), 4u);
  EXPECT_EQ(last.at(9).last_data_offset, std::nullopt);
  EXPECT_EQ(last.at(9).producer_epoch, -1);  // the empty batch's epoch is not applied
  EXPECT_TRUE(log.expired_producers.empty());
}

TEST_F(ProducerStateLoadTest, OnlyTheOpenTransactionSurvivesALongIdle) {
  PartitionLog log = Load("500");
  LastRecords last = log.LastRecordsOfActiveProducers();
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last.count(13), 1u);
  EXPECT_EQ(log.expired_producers, (std::vector<int64_t>{7, 9, 11}));
  EXPECT_EQ(log.summary.last_stable_offset, 4);
}

}  // namespace
}  // namespace klf
