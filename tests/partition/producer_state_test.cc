// Producer state (partition/producer_state.h): Kafka's ProducerStateManager/ProducerAppendInfo
// rules, and loading real partition directories compared with Kafka's own answer (truth.json of the
// replica fixtures, and the oracle's producer snapshots).
#include "partition/producer_state.h"

#include <filesystem>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "partition/loaded_log.h"
#include "segment_writer/batch_builder.h"
#include "tests/support/fault_injection_env.h"
#include "tests/segment_writer/test_util.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using writer_test::Hex;
using writer_test::Oracle;
using writer_test::ReadFile;
using writer_test::TempDir;

struct Log {
  std::string bytes;
  void Data(int64_t offset, int64_t pid, int16_t epoch, int32_t seq, bool txn, int64_t ts, int count = 1) {
    std::vector<RecordInput> records(count);
    for (int i = 0; i < count; ++i) {
      records[i].offset = offset + i;
      records[i].timestamp = ts + i;
      records[i].value = AsBytes(std::string_view("v"));
    }
    V2BatchOptions o;
    o.base_offset = offset;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.base_sequence = seq;
    o.is_transactional = txn;
    std::string error;
    EXPECT_TRUE(AppendV2Batch(o, records, &bytes, nullptr, &error)) << error;
  }
  void Marker(int64_t offset, int64_t pid, int16_t epoch, ControlType type, int64_t ts, int32_t coordinator = 0) {
    EndTxnMarkerOptions m;
    m.offset = offset;
    m.producer_id = pid;
    m.producer_epoch = epoch;
    m.type = type;
    m.timestamp = ts;
    m.coordinator_epoch = coordinator;
    std::string error;
    EXPECT_TRUE(AppendEndTxnMarker(m, &bytes, nullptr, &error)) << error;
  }
  void EmptyControl(int64_t offset, int64_t pid, int16_t epoch) {
    BatchHeader h;
    h.base_offset = offset;
    h.last_offset = offset;
    h.producer_id = pid;
    h.producer_epoch = epoch;
    h.is_transactional = true;
    h.is_control = true;
    h.max_timestamp = 5;
    std::string error;
    EXPECT_TRUE(AppendEmptyBatch(h, &bytes, nullptr, &error)) << error;
  }
  // Applies every batch, returning the updates.
  std::vector<BatchUpdate> ApplyTo(ProducerStateManager* state, ProblemSink* sink) const {
    std::vector<BatchUpdate> updates;
    LogReader reader("mem", AsBytes(bytes), sink);
    BatchView b;
    while (reader.Next(&b)) updates.push_back(state->Apply(b, "mem", sink));
    return updates;
  }
};

TEST(ProducerState, LastStableOffsetOfAnAbortIsTheEarliestOtherOpenTxn) {
  Log log;
  log.Data(0, 1, 0, 0, true, 100);
  log.Data(1, 2, 0, 0, true, 101);
  log.Data(2, 1, 0, 1, true, 102);
  log.Marker(3, 1, 0, ControlType::kAbort, 103, 4);   // pid 2 still open from 1 ⇒ LSO 1
  log.Marker(4, 2, 0, ControlType::kCommit, 104, 4);  // nobody open ⇒ LSO 5 (not indexed: commit)
  ProducerStateManager state;
  CollectingSink sink;
  auto updates = log.ApplyTo(&state, &sink);
  ASSERT_EQ(updates.size(), 5u);
  ASSERT_TRUE(updates[3].completed);
  EXPECT_EQ(*updates[3].completed, (CompletedTxn{1, 0, 3, true}));
  EXPECT_EQ(updates[3].last_stable_offset, 1);
  ASSERT_TRUE(updates[3].aborted_txn);
  EXPECT_EQ(*updates[3].aborted_txn, (AbortedTxn{0, 1, 0, 3, 1}));
  ASSERT_TRUE(updates[4].completed);
  EXPECT_EQ(updates[4].last_stable_offset, 5);
  EXPECT_FALSE(updates[4].aborted_txn);
  EXPECT_TRUE(state.ongoing_txns().empty());
  EXPECT_EQ(state.map_end_offset(), 5);
  const ProducerStateEntry* p1 = state.Find(1);
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->coordinator_epoch, 4);
  EXPECT_EQ(p1->last_timestamp, 103);  // the marker's record timestamp
  EXPECT_EQ(p1->last_data_offset(), 2);
  EXPECT_EQ(p1->last_seq(), 1);
  EXPECT_FALSE(p1->current_txn_first_offset);
  EXPECT_TRUE(sink.problems.empty());
}

TEST(ProducerState, EmptyControlBatchDoesNotCloseTheTransaction) {
  // A cleaned marker (0 records) must not complete anything (ProducerAppendInfo.append).
  Log log;
  log.Data(0, 1, 0, 0, true, 100);
  log.EmptyControl(1, 1, 0);
  log.EmptyControl(2, 9, 0);  // unknown producer: registered with an empty entry
  ProducerStateManager state;
  CollectingSink sink;
  auto updates = log.ApplyTo(&state, &sink);
  EXPECT_FALSE(updates[1].completed);
  ASSERT_EQ(state.ongoing_txns().size(), 1u);
  EXPECT_EQ(state.FirstUndecidedOffset(), 0);
  EXPECT_EQ(state.LastStableOffset(3), 0);
  const ProducerStateEntry* p9 = state.Find(9);
  ASSERT_NE(p9, nullptr);
  EXPECT_EQ(p9->producer_epoch, -1);
  EXPECT_EQ(p9->last_timestamp, -1);
  EXPECT_TRUE(p9->empty());
}

TEST(ProducerState, MarkerWithoutDataCompletesNothing) {
  Log log;
  log.Marker(0, 1, 0, ControlType::kAbort, 100, 2);
  ProducerStateManager state;
  NullSink sink;
  auto updates = log.ApplyTo(&state, &sink);
  EXPECT_FALSE(updates[0].completed);
  EXPECT_EQ(state.Find(1)->coordinator_epoch, 2);
  EXPECT_EQ(state.Find(1)->last_timestamp, 100);
}

TEST(ProducerState, EpochBumpClearsBatchMetadataAndOnlyFiveBatchesAreKept) {
  Log log;
  for (int i = 0; i < 7; ++i) log.Data(i, 1, 0, i, false, 100 + i);
  ProducerStateManager state;
  NullSink sink;
  log.ApplyTo(&state, &sink);
  EXPECT_EQ(state.Find(1)->batch_metadata.size(), 5u);
  EXPECT_EQ(state.Find(1)->first_seq(), 2);
  Log bump;
  bump.Data(7, 1, 1, 0, false, 200);
  bump.ApplyTo(&state, &sink);
  EXPECT_EQ(state.Find(1)->batch_metadata.size(), 1u);
  EXPECT_EQ(state.Find(1)->producer_epoch, 1);
}

TEST(ProducerState, NonTransactionalWriteInsideATransactionIsReportedNotApplied) {
  Log log;
  log.Data(0, 1, 0, 0, true, 100);
  log.Data(1, 1, 0, 1, false, 101);
  ProducerStateManager state;
  CollectingSink sink;
  log.ApplyTo(&state, &sink);
  ASSERT_EQ(sink.problems.size(), 1u);
  EXPECT_EQ(sink.problems[0].check, "txn-state");
  EXPECT_EQ(sink.problems[0].position, 69u);
  EXPECT_EQ(state.Find(1)->last_data_offset(), 0);
}

TEST(ProducerState, ExpirationNeverRemovesAnOpenTransaction) {
  Log log;
  log.Data(0, 1, 0, 0, true, 1000);   // open transaction
  log.Data(1, 2, 0, 0, false, 1000);  // idle idempotent producer
  log.Data(2, 3, 0, 0, false, 5000);
  ProducerStateOptions o;
  o.producer_id_expiration_ms = 4000;
  ProducerStateManager state(o);
  NullSink sink;
  log.ApplyTo(&state, &sink);
  state.RemoveExpiredProducers(4999);  // 4999 - 1000 < 4000: nobody
  EXPECT_EQ(state.producers().size(), 3u);
  state.RemoveExpiredProducers(5000);  // >= expiration: pid 2 goes, pid 1 stays (open txn)
  EXPECT_EQ(state.producers().size(), 2u);
  EXPECT_NE(state.Find(1), nullptr);
  EXPECT_EQ(state.Find(2), nullptr);
  EXPECT_NE(state.Find(3), nullptr);
}

TEST(ProducerState, SnapshotOrderKeepsTheGrownHashMapCapacity) {
  // 13 producers grow Java's HashMap to 32 buckets; it never shrinks when 11 of them expire. Then
  // pid 1 (bucket 1) iterates before pid 17 (bucket 17), although 17 was inserted first; a fresh
  // 16-bucket map would put both in bucket 1 in insertion order (17, 1).
  Log log;
  int64_t offset = 0;
  log.Data(offset++, 17, 0, 0, false, 9000);
  for (int64_t pid = 2; pid <= 12; ++pid) log.Data(offset++, pid, 0, 0, false, 1000);
  log.Data(offset++, 1, 0, 0, false, 9000);
  ProducerStateOptions o;
  o.producer_id_expiration_ms = 5000;
  ProducerStateManager state(o);
  NullSink sink;
  log.ApplyTo(&state, &sink);
  state.RemoveExpiredProducers(9000);
  auto entries = state.SnapshotEntries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].producer_id, 1);
  EXPECT_EQ(entries[1].producer_id, 17);
}

TEST(ProducerState, SnapshotLoadDropsExpiredProducers) {
  ProducerSnapshot snap;
  snap.offset = 10;
  ProducerSnapshotEntry a;
  a.producer_id = 1;
  a.timestamp = 1000;
  a.current_txn_first_offset = 4;
  ProducerSnapshotEntry b;
  b.producer_id = 2;
  b.timestamp = 1000;
  snap.entries = {a, b};
  ProducerStateOptions o;
  o.producer_id_expiration_ms = 100;
  ProducerStateManager state(o);
  state.LoadSnapshot(snap, 2000);
  EXPECT_EQ(state.producers().size(), 1u);
  EXPECT_EQ(state.FirstUndecidedOffset(), 4);
  EXPECT_EQ(state.map_end_offset(), 10);
}

// The oracle's b-txn/txn-0: Kafka's snapshot at 17 (log end) must be what replaying the log gives,
// from no snapshot and from the earlier snapshots.
TEST(ProducerState, ReplayReproducesKafkasSnapshots) {
  std::string in = Oracle() + "/b-txn/txn-0";
  std::string expected = ReadFile(in + "/00000000000000000017.snapshot");
  for (const std::vector<std::string>& keep : std::vector<std::vector<std::string>>{
           {"00000000000000000007.snapshot", "00000000000000000015.snapshot", "00000000000000000017.snapshot"},
           {"00000000000000000007.snapshot", "00000000000000000015.snapshot"},
           {"00000000000000000007.snapshot"},
           {}}) {
    SCOPED_TRACE(keep.size());
    TempDir tmp;
    std::string dir = tmp.path() + "/txn-0";
    fs::create_directory(dir);
    for (const auto& e : fs::directory_iterator(in)) {
      std::string name = e.path().filename().string();
      if (name.ends_with(".snapshot") && std::find(keep.begin(), keep.end(), name) == keep.end()) continue;
      fs::copy_file(e.path(), dir + "/" + name);
    }
    ProducerStateManager state;
    ProducerStateLoadResult result;
    CollectingSink sink;
    ASSERT_TRUE(LoadProducerState(dir, 1700000017000, &state, &result, &sink));
    EXPECT_EQ(result.log_end_offset, 17);
    EXPECT_EQ(state.map_end_offset(), 17);
    EXPECT_EQ(Hex(state.EncodeSnapshot()), Hex(expected));
    if (keep.empty()) {
      EXPECT_FALSE(result.snapshot_offset);
      // Replaying from the start sees the ABORT of producer 5001 with LSO 11 (as .txnindex says).
      ASSERT_EQ(result.replayed_completions.size(), 2u);
      ASSERT_TRUE(result.replayed_completions[1].aborted_txn);
      EXPECT_EQ(*result.replayed_completions[1].aborted_txn, (AbortedTxn{0, 5001, 3, 10, 11}));
    }
    EXPECT_TRUE(sink.problems.empty()) << sink.problems.front().check << ": " << sink.problems.front().message;
  }
}

// A segment the replay needs that fails to read midway fails the load, naming the file once: the
// load's error is "<file>: <why>" (the replay's problem names the file, its message is the why).
TEST(ProducerState, AReadErrorInTheReplayFailsTheLoadNamingTheFileOnce) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/txn-0";
  fs::create_directory(dir);
  for (const auto& e : fs::directory_iterator(Oracle() + "/b-txn/txn-0"))
    if (e.path().extension() != ".snapshot") fs::copy_file(e.path(), dir + "/" + e.path().filename().string());
  FaultInjectionEnv faults(Env::Default());
  faults.FailRead("00000000000000000007.log", 10);
  LoadOptions options;
  options.env = &faults;
  LoadedLog log;
  std::string error;
  CollectingSink sink;
  bool unreadable = false;
  EXPECT_FALSE(LoadedLog::Open(dir, options, &log, &sink, &error, &unreadable));
  EXPECT_TRUE(unreadable);
  const std::string file = dir + "/00000000000000000007.log";
  EXPECT_EQ(error.rfind(file + ": ", 0), 0u) << error;
  EXPECT_EQ(error.find(file, file.size()), std::string::npos) << error;
}

// Kafka's own answer after reloading each broker's log (truth.json): producers, open transactions, LSO.
TEST(ProducerState, LoadMatchesKafkasReloadedStateOfEveryReplica) {
  for (const char* scenario : {"aborted-to-committed", "lost-tombstone-healthy-control"}) {
    std::string base = Oracle() + "/replicas/" + scenario;
    auto truth = nlohmann::json::parse(ReadFile(base + "/truth.json"));
    int64_t now = truth["timeline"].back()["clockMs"];
    int64_t expiration = truth["config"]["broker"]["producer.id.expiration.ms"];
    for (auto& [broker, expected] : truth["brokers"].items()) {
      for (int latest_snapshots_removed : {0, 1, 2, 99}) {
        SCOPED_TRACE(std::string(scenario) + " " + broker + " without " + std::to_string(latest_snapshots_removed) +
                     " newest snapshots");
        // A copy without the newest snapshots makes the load replay the log after an older one (or
        // from the start: Kafka's cleaned logs give the same producers).
        TempDir tmp;
        std::string dir = tmp.path() + "/foo-0";
        fs::copy(base + "/" + broker + "/foo-0", dir);
        std::vector<std::string> snapshots;
        for (const auto& e : fs::directory_iterator(dir)) {
          if (e.path().extension() == ".snapshot") snapshots.push_back(e.path().string());
        }
        std::sort(snapshots.rbegin(), snapshots.rend());
        for (int i = 0; i < latest_snapshots_removed && i < int(snapshots.size()); ++i) fs::remove(snapshots[i]);
        // Every snapshot Kafka left is at or below the log end offset, so the newest one left is used.
        std::optional<int64_t> newest;
        if (latest_snapshots_removed < int(snapshots.size()))
          newest = std::stoll(fs::path(snapshots[latest_snapshots_removed]).stem().string());
        ProducerStateOptions o;
        o.producer_id_expiration_ms = expiration;
        ProducerStateManager state(o);
        ProducerStateLoadResult result;
        CollectingSink sink;
        ASSERT_TRUE(LoadProducerState(dir, now, &state, &result, &sink));
        // Kafka's load drops producers that expired by now (snapshot load; the periodic check otherwise).
        state.RemoveExpiredProducers(now);
        EXPECT_EQ(result.snapshot_offset, newest);
        EXPECT_TRUE(sink.problems.empty()) << sink.problems.front().check << ": " << sink.problems.front().message;
        EXPECT_EQ(result.log_end_offset, expected["logEndOffset"].get<int64_t>());
        EXPECT_EQ(state.LastStableOffset(expected["highWatermark"]), expected["lastStableOffset"].get<int64_t>());
        EXPECT_EQ(state.ongoing_txns().size(), expected["openTransactions"].size());
        ASSERT_EQ(state.producers().size(), expected["producerState"].size());
        for (const auto& p : expected["producerState"]) {
          const ProducerStateEntry* e = state.Find(p["producerId"]);
          ASSERT_NE(e, nullptr) << p.dump();
          EXPECT_EQ(e->producer_epoch, p["epoch"].get<int>()) << p.dump();
          EXPECT_EQ(e->last_seq(), p["lastSeq"].get<int>()) << p.dump();
          EXPECT_EQ(e->last_data_offset(), p["lastDataOffset"].get<int64_t>()) << p.dump();
          EXPECT_EQ(e->last_timestamp, p["lastTimestamp"].get<int64_t>()) << p.dump();
          EXPECT_EQ(e->coordinator_epoch, p["coordinatorEpoch"].get<int>()) << p.dump();
          EXPECT_EQ(e->current_txn_first_offset.has_value(), !p["currentTxnFirstOffset"].is_null()) << p.dump();
        }
      }
    }
  }
}

}  // namespace
}  // namespace klf
