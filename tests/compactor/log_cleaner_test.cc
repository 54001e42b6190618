// Kafka's LogCleanerTest scenarios (cleaner-tests.md §1) that make sense offline, replayed through the
// whole pipeline (CompactPartition): a partition directory is written batch by batch as Kafka's test
// log would hold it, cleaned, and observed with Kafka's test observers (keysInLog, offsetsInLog,
// lastOffsetsPerBatchInLog, lastSequencesInLog, aborted transactions).
//
// Differences from Kafka's harness, chosen so outcomes are the same: producers never expire
// (producer.id.expiration.ms = Long.MAX: Kafka's test log never runs the expiration check); the
// offset map is the real SkimpyOffsetMap sized like FakeOffsetMap(capacity) (capacity × 24 bytes,
// load factor 0.75); the cleaned range is chosen through the cleaner-offset-checkpoint.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "compactor/cleaner.h"
#include "segment_reader/layout.h"
#include "segment_reader/batch.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/index_files.h"
#include "segment_writer/batch_builder.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {
namespace fs = std::filesystem;

using test::ReadAll;
using test::WriteAll;

constexpr int64_t kNow = 1700000000000;  // MockTime's "now" in these scenarios

// A partition directory written the way Kafka's test log appends (as leader): offsets assigned in
// order, transactional batches opening transactions, markers closing them and indexing aborts.
class TestLog {
 public:
  explicit TestLog(fs::path log_dir, std::string name = "t-0") : log_dir_(std::move(log_dir)), name_(std::move(name)) {
    fs::create_directories(dir());
    segments_[0];
  }
  fs::path dir() const { return log_dir_ / name_; }
  int64_t end() const { return next_; }

  // record(k, v [, pid, epoch, seq]): one uncompressed batch, timestamp -1 (cleaner-tests.md §0).
  void Record(int k, std::optional<int> v, int64_t pid = -1, int16_t epoch = -1, int32_t seq = -1, bool txn = false,
              int64_t ts = -1) {
    Batch({{k, v}}, pid, epoch, seq, txn, ts);
  }
  // appendTransactionalAsLeader(pid, epoch)(keys): key bytes = value bytes, timestamp now,
  // sequences continuing per producer.
  void Txn(int64_t pid, int16_t epoch, std::vector<int> keys) {
    std::vector<std::pair<int, std::optional<int>>> kv;
    for (int k : keys) kv.push_back({k, k});
    Batch(kv, pid, epoch, next_seq_[pid], true, kNow);
    next_seq_[pid] += int32_t(keys.size());
  }
  void Idempotent(int64_t pid, int16_t epoch, std::vector<int> keys) {
    std::vector<std::pair<int, std::optional<int>>> kv;
    for (int k : keys) kv.push_back({k, k});
    Batch(kv, pid, epoch, next_seq_[pid], false, kNow);
    next_seq_[pid] += int32_t(keys.size());
  }
  void Marker(int64_t pid, int16_t epoch, ControlType type) {
    EndTxnMarkerOptions o;
    o.offset = next_;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.timestamp = kNow;
    o.type = type;
    std::string error;
    BuiltBatch built;
    ASSERT_TRUE(AppendEndTxnMarker(o, &segments_.rbegin()->second.log, &built, &error)) << error;
    auto it = open_.find(pid);
    if (it != open_.end()) {
      if (type == ControlType::kAbort) {
        // lastStableOffset: first offset of the earliest other open transaction, else marker + 1.
        int64_t lso = next_ + 1;
        for (const auto& [p, first] : open_)
          if (p != pid) lso = std::min(lso, first);
        segments_.rbegin()->second.txns.push_back(AbortedTxn{0, pid, it->second, next_, lso});
      }
      open_.erase(it);
    }
    next_++;
  }
  void Roll() { segments_[next_]; }
  // unkeyedRecord(v): null key (a policy change let it in).
  void Unkeyed(int v) {
    std::string value = std::to_string(v);
    RecordInput r;
    r.offset = next_;
    r.value = AsBytes(value);
    V2BatchOptions o;
    o.base_offset = next_;
    std::string error;
    BuiltBatch built;
    ASSERT_TRUE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &segments_.rbegin()->second.log, &built, &error))
        << error;
    next_++;
  }
  // Writes the files. `checkpoint`: the cleaner-offset-checkpoint entry (first dirty offset).
  void Write(std::optional<int64_t> checkpoint = std::nullopt) {
    for (const auto& [base, s] : segments_) {
      char name[32];
      std::snprintf(name, sizeof(name), "%020lld", static_cast<long long>(base));
      WriteAll(dir() / (std::string(name) + ".log"), s.log);
      if (!s.txns.empty()) {
        std::string t;
        for (const auto& e : s.txns) EncodeAbortedTxn(e, &t);
        WriteAll(dir() / (std::string(name) + ".txnindex"), t);
      }
    }
    if (checkpoint) SetCheckpoint(log_dir_, *checkpoint);
  }
  static void SetCheckpoint(const fs::path& log_dir, int64_t value) {
    WriteAll(log_dir / "cleaner-offset-checkpoint",
             EncodeOffsetCheckpoint({OffsetCheckpointEntry{TopicPartition{"t", 0}, value}}));
  }

 private:
  struct Segment {
    std::string log;
    std::vector<AbortedTxn> txns;
  };
  void Batch(const std::vector<std::pair<int, std::optional<int>>>& kv, int64_t pid, int16_t epoch, int32_t seq,
             bool txn, int64_t ts) {
    std::vector<std::string> keys, values;
    for (auto& [k, v] : kv) {
      keys.push_back(std::to_string(k));
      values.push_back(v ? std::to_string(*v) : "");
    }
    std::vector<RecordInput> records;
    for (size_t i = 0; i < kv.size(); i++) {
      RecordInput r;
      r.offset = next_ + int64_t(i);
      r.timestamp = ts;
      r.key = AsBytes(keys[i]);
      if (kv[i].second) r.value = AsBytes(values[i]);
      records.push_back(r);
    }
    V2BatchOptions o;
    o.base_offset = next_;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.base_sequence = seq;
    o.is_transactional = txn;
    o.partition_leader_epoch = 0;
    std::string error;
    BuiltBatch built;
    ASSERT_TRUE(AppendV2Batch(o, records, &segments_.rbegin()->second.log, &built, &error)) << error;
    if (txn && !open_.count(pid)) open_[pid] = next_;
    next_ += int64_t(kv.size());
  }

  fs::path log_dir_;
  std::string name_;
  std::map<int64_t, Segment> segments_;
  std::map<int64_t, int32_t> next_seq_;
  std::map<int64_t, int64_t> open_;  // pid -> first offset of its open transaction
  int64_t next_ = 0;
};

// Kafka's observers over a partition directory.
struct Observed {
  std::vector<int> keys;                         // keysInLog: non-control records with key and value
  std::vector<int64_t> offsets;                  // offsetsInLog: records with key and value (incl. control)
  std::vector<int64_t> last_offsets;             // lastOffsetsPerBatchInLog
  std::map<int64_t, int32_t> last_sequences;     // lastSequencesInLog
  std::vector<AbortedTxn> aborted;               // every .txnindex entry
  std::vector<std::optional<int64_t>> horizons;  // deleteHorizonMs per batch
  int segments = 0;
};

Observed Observe(const fs::path& dir) {
  Observed o;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  NullSink sink;
  for (const auto& f : files) {
    std::string ext = f.extension().string();
    if (ext == ".txnindex") {
      std::string d = ReadAll(f);
      for (auto& e : ParseTxnIndex(f.string(), AsBytes(d), &sink).entries) o.aborted.push_back(e);
    }
    if (ext != ".log") continue;
    o.segments++;
    std::string data = ReadAll(f);
    LogReader reader(f.string(), AsBytes(data), &sink);
    RecordDecoder dec;
    BatchView b;
    while (reader.Next(&b)) {
      o.last_offsets.push_back(b.header.last_offset);
      o.horizons.push_back(b.header.delete_horizon_ms);
      if (!b.header.is_control && b.header.has_producer_id())
        o.last_sequences[b.header.producer_id] = b.header.last_sequence();
      if (b.header.record_count == 0) continue;
      EXPECT_TRUE(dec.Decode(b, f.string(), &sink));
      for (const auto& r : dec.records()) {
        if (!r.key || !r.value) continue;
        o.offsets.push_back(r.offset);
        if (!b.header.is_control) o.keys.push_back(std::stoi(std::string(AsStringView(*r.key))));
      }
    }
  }
  return o;
}

class LogCleanerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "klf-logcleaner-XXXXXX").string();
    root_ = mkdtemp(tmpl.data());
    log_ = std::make_unique<TestLog>(root_ / "in");
    std::string e;
    config_.Set("cleanup.policy", "compact", &e);
    config_.Set("segment.bytes", "1024", &e);
    config_.Set("segment.index.bytes", "1024", &e);
    config_.Set("producer.id.expiration.ms", "9223372036854775807", &e);
    config_.Set("log.cleaner.io.buffer.load.factor", "0.75", &e);
    config_.Set("min.cleanable.dirty.ratio", "0", &e);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  // FakeOffsetMap(capacity): capacity slots, fill limit (int)(capacity × 0.75).
  void MapCapacity(int slots) {
    std::string e;
    config_.Set("log.cleaner.dedupe.buffer.size", std::to_string(slots * 24), &e);
  }
  void Set(const std::string& k, const std::string& v) {
    std::string e;
    ASSERT_TRUE(config_.Set(k, v, &e)) << e;
  }
  // One cleaning round at `now` starting at the checkpoint (if given) on the current directory;
  // the result becomes the current directory. Returns the round's report.
  PassReport Clean(int64_t now, std::optional<int64_t> first_dirty = std::nullopt) {
    if (first_dirty) TestLog::SetCheckpoint(current_.parent_path(), *first_dirty);
    fs::path out = root_ / ("round" + std::to_string(++rounds_));
    CompactOptions o;
    o.config = config_;
    o.now = now;
    CompactReport report;
    CollectingSink sink;
    std::string error;
    EXPECT_TRUE(CompactPartition(current_.string(), out.string(), o, &report, &sink, &error)) << error;
    current_ = out / "t-0";
    return report.passes.empty() ? PassReport{} : report.passes[0];
  }
  void Written(std::optional<int64_t> checkpoint = std::nullopt) {
    log_->Write(checkpoint);
    current_ = log_->dir();
  }
  Observed Now() { return Observe(current_); }
  // New dirty data for the next round, as a broker would have it: the active segment rolls and a
  // new one holds one record (key `k`, value `k`). Without new data a broker never cleans again.
  void AddActive(int k) {
    Observed o = Now();
    int64_t next = o.last_offsets.back() + 1;
    std::string key = std::to_string(k);
    RecordInput r;
    r.offset = next;
    r.key = AsBytes(key);
    r.value = AsBytes(key);
    V2BatchOptions opt;
    opt.base_offset = next;
    std::string log, error;
    BuiltBatch built;
    ASSERT_TRUE(AppendV2Batch(opt, std::span<const RecordInput>(&r, 1), &log, &built, &error)) << error;
    char name[32];
    std::snprintf(name, sizeof(name), "%020lld.log", static_cast<long long>(next));
    WriteAll(current_ / name, log);
  }

  fs::path root_, current_;
  std::unique_ptr<TestLog> log_;
  CleanerConfig config_;
  int rounds_ = 0;
};

using Keys = std::vector<int>;
using Offsets = std::vector<int64_t>;
const int64_t kLarge = INT64_MAX - 86400000 - 1;  // largeTimestamp

// #8 testBasicTransactionAwareCleaning.
TEST_F(LogCleanerTest, BasicTransactionAwareCleaning) {
  Set("segment.bytes", "2048");
  log_->Txn(1, 0, {1, 2});
  log_->Txn(2, 0, {2, 3});
  log_->Txn(1, 0, {3, 4});
  log_->Marker(1, 0, ControlType::kAbort);
  log_->Marker(2, 0, ControlType::kCommit);
  log_->Txn(1, 0, {2});
  log_->Marker(1, 0, ControlType::kCommit);
  log_->Roll();
  log_->Record(99, 99);  // the active segment (Kafka's roll leaves an empty one; ours holds one record)
  Written();
  auto aborted_before = Now().aborted;
  Clean(kNow, 0);
  Observed o = Now();
  EXPECT_EQ(o.keys, (Keys{3, 2, 99}));
  EXPECT_EQ(o.offsets, (Offsets{3, 6, 7, 8, 9, 10}));
  EXPECT_EQ(o.aborted, aborted_before);
}

// #10 testCommitMarkerRemoval: a COMMIT is removed only after its data is gone and its horizon passed.
TEST_F(LogCleanerTest, CommitMarkerRemoval) {
  Set("segment.bytes", "256");
  log_->Txn(1, 0, {1});
  log_->Txn(1, 0, {2, 3});
  log_->Marker(1, 0, ControlType::kCommit);
  log_->Txn(1, 0, {2});
  log_->Marker(1, 0, ControlType::kCommit);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  Clean(kLarge, 0);
  EXPECT_EQ(Now().keys, (Keys{1, 3, 2, 99}));
  EXPECT_EQ(Now().offsets, (Offsets{0, 2, 3, 4, 5, 6}));
  // The marker at 3 is kept while its transaction's batch 1-2 is still read (record 2 removed,
  // record 3 kept); it becomes removable only after its data is gone.
}

// #13 testCleanEmptyControlBatch: a marker without data is stamped, then emptied but kept for the
// producer's epoch. (Kafka's third round keeps the empty control batch because its live producer state
// still knows the producer; a broker reloading the log from disk — what an offline run models — does
// not, so that round is not replayed here.)
TEST_F(LogCleanerTest, CleanEmptyControlBatch) {
  Set("segment.bytes", "256");
  log_->Marker(1, 0, ControlType::kCommit);
  log_->Record(2, 2);
  log_->Record(3, 3);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  PassReport p = Clean(kLarge, 0);
  EXPECT_EQ(Now().horizons.front(), INT64_MAX - 1);  // largeTimestamp + delete.retention.ms
  AddActive(100);
  Clean(kLarge + 86400001, p.end_offset);  // runTwoPassClean's second round
  Observed o = Now();
  EXPECT_EQ(o.keys, (Keys{2, 3, 99, 100}));
  EXPECT_EQ(o.offsets, (Offsets{1, 2, 3, 4}));
  EXPECT_EQ(o.last_offsets, (Offsets{0, 1, 2, 3, 4}));
  EXPECT_EQ(o.horizons.front(), std::nullopt);  // empty batches carry no horizon
}

// #15 testAbortedTransactionSpanningSegments.
TEST_F(LogCleanerTest, AbortedTransactionSpanningSegments) {
  Set("segment.bytes", "128");
  log_->Txn(1, 0, {1});
  log_->Roll();
  log_->Marker(1, 0, ControlType::kAbort);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  Clean(kLarge, 0);
  Observed o = Now();
  EXPECT_EQ(o.offsets, (Offsets{1, 2}));
  EXPECT_EQ(o.last_offsets, (Offsets{0, 1, 2}));  // aborted batch emptied but kept as p1's last
  Clean(INT64_MAX, 0);
  EXPECT_EQ(Now().last_offsets, (Offsets{0, 1, 2}));
}

// #16 testAbortMarkerRemoval.
TEST_F(LogCleanerTest, AbortMarkerRemoval) {
  Set("segment.bytes", "256");
  log_->Txn(1, 0, {1});
  log_->Txn(1, 0, {2, 3});
  log_->Marker(1, 0, ControlType::kAbort);
  log_->Txn(1, 0, {3});
  log_->Marker(1, 0, ControlType::kCommit);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  PassReport p = Clean(kLarge, 0);
  EXPECT_EQ(Now().keys, (Keys{3, 99}));
  EXPECT_EQ(Now().offsets, (Offsets{3, 4, 5, 6}));
  EXPECT_EQ(Now().aborted.size(), 1u);  // the aborted data was read this round: entry kept
  // runTwoPassClean(dirty): the marker's data is gone → stamped (and its .txnindex entry dropped),
  // then removed once its horizon passed.
  AddActive(100);
  p = Clean(kLarge, p.end_offset);
  EXPECT_EQ(Now().offsets, (Offsets{3, 4, 5, 6, 7}));
  EXPECT_TRUE(Now().aborted.empty());
  AddActive(101);
  Clean(kLarge + 86400001, p.end_offset);
  EXPECT_EQ(Now().keys, (Keys{3, 99, 100, 101}));
  EXPECT_EQ(Now().offsets, (Offsets{4, 5, 6, 7, 8}));
}

// #18 testAbortMarkerRetentionWithEmptyBatch.
TEST_F(LogCleanerTest, AbortMarkerRetentionWithEmptyBatch) {
  Set("segment.bytes", "256");
  log_->Txn(1, 0, {2, 3});
  log_->Marker(1, 0, ControlType::kAbort);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  ASSERT_EQ(Now().aborted.size(), 1u);
  Clean(kLarge, 0);
  Observed o = Now();
  EXPECT_EQ(o.keys, (Keys{99}));
  EXPECT_EQ(o.offsets, (Offsets{2, 3}));
  EXPECT_EQ(o.last_offsets, (Offsets{1, 2, 3}));
  EXPECT_EQ(o.aborted.size(), 1u);  // the emptied batch was read, so the entry stays
  AddActive(100);
  Clean(kLarge, 3);
  AddActive(101);
  Clean(kLarge + 86400001, 4);
  EXPECT_EQ(Now().last_offsets, (Offsets{1, 2, 3, 4, 5}));
  EXPECT_EQ(Now().aborted.size(), 1u);
}

// #24 testLogCleanerStats: capacity 4 (limit 3); k0,k1,k0,k1,k0; clean from 2.
TEST_F(LogCleanerTest, LogCleanerStats) {
  MapCapacity(4);
  for (int k : {0, 1, 0, 1, 0}) log_->Record(k, k);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  PassReport p = Clean(kNow, 2);
  EXPECT_EQ(p.end_offset, 5);
  EXPECT_EQ(p.stats.messages_read, 5);
  EXPECT_EQ(p.stats.messages_written, 2);
  EXPECT_EQ(p.stats.invalid_messages_read, 0);
  EXPECT_EQ(p.stats.bytes_written, int64_t(fs::file_size(current_ / "00000000000000000000.log")));
}

// #25 testLogCleanerRetainsProducerLastSequence.
TEST_F(LogCleanerTest, RetainsProducerLastSequence) {
  MapCapacity(10);
  log_->Record(0, 0);
  log_->Record(0, 1, 1, 0, 0);
  log_->Record(0, 2, 2, 0, 0);
  log_->Record(0, 3, 3, 0, 0);
  log_->Record(1, 1, 2, 0, 1);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  Clean(kNow, 0);
  Observed o = Now();
  EXPECT_EQ(o.last_offsets, (Offsets{1, 3, 4, 5}));
  EXPECT_EQ(o.last_sequences, (std::map<int64_t, int32_t>{{1, 0}, {2, 1}, {3, 0}}));
  EXPECT_EQ(o.keys, (Keys{0, 1, 99}));
  EXPECT_EQ(o.offsets, (Offsets{3, 4, 5}));
}

// #26 testLogCleanerRetainsLastSequenceEvenIfTransactionAborted.
TEST_F(LogCleanerTest, RetainsLastSequenceEvenIfTransactionAborted) {
  MapCapacity(10);
  log_->Txn(1, 0, {1});
  log_->Txn(1, 0, {2, 3});
  log_->Marker(1, 0, ControlType::kAbort);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  Clean(kNow, 0);
  Observed o = Now();
  EXPECT_EQ(o.last_offsets, (Offsets{2, 3, 4}));
  EXPECT_EQ(o.last_sequences, (std::map<int64_t, int32_t>{{1, 2}}));
  EXPECT_EQ(o.keys, (Keys{99}));
  EXPECT_EQ(o.offsets, (Offsets{3, 4}));
}

// #28 testPartialSegmentClean: capacity 2 (limit 1) — every round maps exactly one key.
TEST_F(LogCleanerTest, PartialSegmentClean) {
  MapCapacity(2);
  for (int k : {0, 1, 0, 1, 0}) log_->Record(k, k);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  PassReport p = Clean(kNow, 2);
  EXPECT_EQ(p.end_offset, 3);
  EXPECT_EQ(Now().keys, (Keys{1, 0, 1, 0, 99}));
  EXPECT_EQ(Now().offsets, (Offsets{1, 2, 3, 4, 5}));
  p = Clean(kNow, 3);
  EXPECT_EQ(Now().keys, (Keys{0, 1, 0, 99}));
  EXPECT_EQ(Now().offsets, (Offsets{2, 3, 4, 5}));
  p = Clean(kNow, 4);
  EXPECT_EQ(Now().keys, (Keys{1, 0, 99}));
  EXPECT_EQ(Now().offsets, (Offsets{3, 4, 5}));
}

// #32 testCleaningWithUnkeyedMessages + #34 testCleanSegmentsRetainingLastEmptyBatch: unkeyed records
// are dropped (counted invalid), except that the round's last batch stays as an empty batch.
TEST_F(LogCleanerTest, UnkeyedRecordsAndLastEmptyBatchOfRound) {
  log_->Record(0, 0);
  log_->Unkeyed(1);
  log_->Record(1, 1);
  log_->Unkeyed(2);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  PassReport p = Clean(kNow, 0);
  EXPECT_EQ(p.end_offset, 4);
  EXPECT_EQ(p.stats.invalid_messages_read, 2);
  Observed o = Now();
  EXPECT_EQ(o.offsets, (Offsets{0, 2, 4}));
  EXPECT_EQ(o.last_offsets, (Offsets{0, 2, 3, 4}));  // batch 3: empty, nextOffset == upper bound 4
}

// #46 testCleanTombstone: removal depends on the batch's delete horizon, not the record timestamp.
TEST_F(LogCleanerTest, CleanTombstone) {
  log_->Record(0, 0, -1, -1, -1, false, kNow + 86400000 + 10000);
  log_->Roll();
  log_->Record(0, std::nullopt, -1, -1, -1, false, kNow - 86400000 - 10000);
  log_->Roll();
  log_->Record(1, 1);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  Clean(kNow, 0);
  Observed o = Now();
  EXPECT_EQ(o.keys, (Keys{1, 99}));
  // The tombstone (offset 1) survives and was stamped with now + delete.retention.ms.
  ASSERT_GE(o.horizons.size(), 1u);
  EXPECT_EQ(o.last_offsets.front(), 1);
  EXPECT_EQ(o.horizons.front(), kNow + 86400000);
  Clean(kNow, 0);
  EXPECT_EQ(Now().last_offsets.front(), 1);  // still before its horizon
  Clean(kNow + 86400000, 0);
  EXPECT_EQ(Now().last_offsets.front(), 2);  // removed at the horizon
}

// Multi-pass via --passes with an advancing clock (spec §12): a map too small for the dirty range
// leaves work for pass 2, which runs after the horizon stamped in pass 1 and removes the tombstone.
TEST_F(LogCleanerTest, PassesWithIntervalRemoveTombstones) {
  MapCapacity(3);  // fill limit 2
  log_->Record(0, 0);
  log_->Record(0, std::nullopt);
  log_->Record(1, 1);
  log_->Record(2, 2);
  log_->Roll();
  log_->Record(99, 99);
  Written();
  fs::path out = root_ / "passes";
  CompactOptions o;
  o.config = config_;
  o.now = kNow;
  o.passes = 2;
  o.pass_interval_ms = 86400000;
  CompactReport report;
  CollectingSink sink;
  std::string error;
  ASSERT_TRUE(CompactPartition(current_.string(), out.string(), o, &report, &sink, &error)) << error;
  ASSERT_EQ(report.passes.size(), 2u);
  EXPECT_TRUE(report.passes[0].map_filled);
  EXPECT_EQ(report.passes[0].end_offset, 3);
  EXPECT_EQ(report.passes[0].stats.tombstones_removed, 0);
  EXPECT_EQ(report.passes[1].now, kNow + 86400000);
  EXPECT_EQ(report.passes[1].decision.offsets.first_dirty_offset, 3);
  EXPECT_EQ(report.passes[1].stats.tombstones_removed, 1);
  Observed ob = Observe(out / "t-0");
  EXPECT_EQ(ob.keys, (Keys{1, 2, 99}));
  EXPECT_EQ(ob.last_offsets, (Offsets{2, 3, 4}));
}

// LogCleanerManagerTest #2/#5 over a log directory: setupIncreasinglyFilthyLogs — log i has 20 + 5i
// single-record batches rolled every 5; with checkpoints at 20 the dirtiest (30 batches) is chosen;
// a log without cleanable bytes is never chosen.
TEST_F(LogCleanerTest, GrabFilthiestOfLogDir) {
  fs::path dir = root_ / "logdir";
  std::vector<OffsetCheckpointEntry> checkpoints;
  for (int i = 0; i < 3; i++) {
    std::string name = "t-" + std::to_string(i);
    TestLog log(dir, name);
    for (int b = 0; b < 20 + 5 * i; b++) {
      if (b > 0 && b % 5 == 0) log.Roll();
      log.Record(b, b, -1, -1, -1, false, kNow);
    }
    log.Roll();
    log.Write();
    checkpoints.push_back(OffsetCheckpointEntry{TopicPartition{"t", i}, 20});
  }
  WriteAll(dir / "cleaner-offset-checkpoint", EncodeOffsetCheckpoint(checkpoints));
  CompactOptions o;
  o.config = config_;
  o.config.min_cleanable_ratio = 0.05;
  o.now = kNow;
  o.only_if_eligible = true;
  LogDirChoice choice;
  CollectingSink sink;
  std::string error;
  ASSERT_EQ(ClassifyPath(dir.string()).kind, PathKind::kLogDir);
  ASSERT_EQ(ClassifyPath((dir / "t-0").string()).kind, PathKind::kPartitionDir);
  ASSERT_TRUE(ChooseFilthiestLog(dir.string(), o, &choice, &sink, &error)) << error;
  ASSERT_EQ(choice.candidates.size(), 3u);
  ASSERT_TRUE(choice.chosen.has_value());
  EXPECT_EQ(fs::path(choice.candidates[*choice.chosen].partition_dir).filename(), "t-2");
  EXPECT_EQ(choice.candidates[0].decision.range.cleanable_bytes, 0);  // 20 batches, checkpoint 20
  EXPECT_FALSE(choice.candidates[0].decision.selected);
  EXPECT_GT(choice.candidates[2].decision.range.cleanable_ratio, choice.candidates[1].decision.range.cleanable_ratio);
}

// The input directory is never written: contents and mtimes are unchanged after a round.
TEST_F(LogCleanerTest, InputUntouched) {
  for (int k : {0, 1, 0, 1}) log_->Record(k, k);
  log_->Roll();
  log_->Record(2, 2);
  Written(0);
  std::map<std::string, std::pair<std::string, fs::file_time_type>> before;
  for (const auto& e : fs::recursive_directory_iterator(root_ / "in"))
    if (e.is_regular_file()) before[e.path().string()] = {ReadAll(e.path()), fs::last_write_time(e.path())};
  Clean(kNow);
  for (const auto& e : fs::recursive_directory_iterator(root_ / "in")) {
    if (!e.is_regular_file()) continue;
    auto it = before.find(e.path().string());
    ASSERT_NE(it, before.end()) << e.path();
    EXPECT_EQ(ReadAll(e.path()), it->second.first) << e.path();
    EXPECT_EQ(fs::last_write_time(e.path()), it->second.second) << e.path();
  }
}

// Corruption where the cleaner reads is reported with file and position and fails the round
// (#21/#22: Kafka throws CorruptRecordException and marks the partition uncleanable).
TEST_F(LogCleanerTest, CorruptMagicFailsTheRound) {
  for (int k : {0, 1, 0}) log_->Record(k, k);
  log_->Roll();
  log_->Record(2, 2);
  Written(0);
  fs::path seg = current_ / "00000000000000000000.log";
  std::string d = ReadAll(seg);
  d[16] = char(0x7f);  // magic of the first batch
  WriteAll(seg, d);
  CompactOptions o;
  o.config = config_;
  o.now = kNow;
  CompactReport report;
  CollectingSink sink;
  std::string error;
  EXPECT_FALSE(CompactPartition(current_.string(), (root_ / "corrupt").string(), o, &report, &sink, &error));
  EXPECT_NE(error.find("00000000000000000000.log"), std::string::npos) << error;
  EXPECT_NE(error.find("position 0"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(root_ / "corrupt"));
}

}  // namespace
}  // namespace klf
