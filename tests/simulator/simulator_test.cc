// The incident simulator: the four divergences of scenarios.md §4 under Kafka's rules, none under
// coordinated compaction, timer boundaries, Kafka-format output, and the replica view checked against
// Kafka's own answer (truth.json of the oracle replica sets, written by Kafka's storage code).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <nlohmann/json.hpp>

#include "segment_reader/batch.h"
#include "simulator/replica_view.h"
#include "simulator/simulator.h"
#include "tests/support/test_files.h"
#include "txn/coordinator.h"
#include "verify/verify.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using test::TempDir;

std::string ReadText(const std::string& path) { return test::ReadAll(path); }

SimulationResult Simulate(const Timeline& t, CoordinationMode mode, const std::string& out) {
  SimulationOptions o;
  o.mode = mode;
  o.out_dir = out;
  SimulationResult r;
  std::string error;
  EXPECT_TRUE(RunSimulation(t, o, &r, &error)) << error;
  return r;
}

SimulationResult RunFixture(const std::string& name, CoordinationMode mode, const TempDir& tmp) {
  Timeline t;
  std::string error;
  EXPECT_TRUE(ParseTimeline(ReadText(std::string(KLF_SOURCE_DIR) + "/fixtures/" + name + ".json"), &t, &error))
      << error;
  return Simulate(t, mode, tmp.path() + "/" + name + "-" + CoordinationModeName(mode));
}

const ReplicaView& View(const SimulationResult& r, int broker) { return r.brokers.at(broker - 1).view; }

std::optional<std::string> Value(const ReplicaView& v, const std::string& key) {
  auto it = v.key_values.find(key);
  if (it == v.key_values.end()) return std::nullopt;
  return it->second;
}

bool Serves(const ReplicaView& v, const std::string& key, const std::string& value) {
  return std::any_of(v.read_committed.begin(), v.read_committed.end(),
                     [&](const ServedRecord& s) { return s.key == key && s.value == value; });
}

bool Holds(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The first offset the transactional producer P wrote (T1's first offset), from the run's own steps.
int64_t FirstOffsetOf(const SimulationResult& r, const std::string& producer) {
  for (const SimStep& s : r.steps) {
    const auto* p = std::get_if<facts::Produced>(&s.detail);
    if (s.op == "produce" && p != nullptr && p->producer == producer) return p->first_offset;
  }
  ADD_FAILURE() << "no produce by " << producer;
  return -1;
}

// The facts of the run's clean steps.
std::vector<facts::Cleaned> Cleans(const SimulationResult& r) {
  std::vector<facts::Cleaned> out;
  for (const SimStep& s : r.steps)
    if (s.op == "clean") out.push_back(std::get<facts::Cleaned>(s.detail));
  return out;
}

// The facts of the run's commit / abort steps that wrote a marker (`ops`: "commit", "abort" or both).
std::vector<facts::TxnEnded> Ends(const SimulationResult& r, std::initializer_list<std::string_view> ops) {
  std::vector<facts::TxnEnded> out;
  for (const SimStep& s : r.steps)
    if (std::find(ops.begin(), ops.end(), s.op) != ops.end()) out.push_back(std::get<facts::TxnEnded>(s.detail));
  return out;
}

// Every broker directory decodes and verifies without errors or warnings (klf verify).
void ExpectVerifies(const SimulationResult& r) {
  for (const BrokerSummary& b : r.brokers) {
    CollectingSink sink;
    VerifyStats st = VerifyPath(r.out_dir + "/broker" + std::to_string(b.broker), VerifyOptions{}, &sink);
    EXPECT_FALSE(st.unreadable);
    EXPECT_EQ(st.errors, 0u) << b.view.path << (sink.problems.empty() ? "" : ": " + sink.problems[0].message);
    EXPECT_EQ(st.warnings, 0u) << b.view.path << (sink.problems.empty() ? "" : ": " + sink.problems[0].message);
    EXPECT_GT(st.batches, 0u);
  }
}

TEST(SimulatorTest, LostTombstoneResurrectsTheKeyUncoordinated) {
  TempDir tmp;
  SimulationResult r = RunFixture("lost-tombstone", CoordinationMode::kUncoordinated, tmp);
  ASSERT_EQ(r.brokers.size(), 3u);
  EXPECT_EQ(Value(View(r, 2), "K"), "V");
  EXPECT_TRUE(Serves(View(r, 2), "K", "V"));
  EXPECT_EQ(Value(View(r, 1), "K"), std::nullopt);
  EXPECT_EQ(Value(View(r, 3), "K"), std::nullopt);
  EXPECT_FALSE(Serves(View(r, 1), "K", "V"));
  EXPECT_TRUE(r.divergence.diverged());
  ASSERT_EQ(r.divergence.key_values.size(), 1u);
  EXPECT_EQ(r.divergence.key_values.begin()->first, "K");
  for (int b = 1; b <= 3; b++) EXPECT_EQ(View(r, b).log.last_stable_offset, View(r, b).log.log_end_offset);
  ExpectVerifies(r);
}

TEST(SimulatorTest, AbortedToCommittedServesThePoisonUncoordinated) {
  TempDir tmp;
  SimulationResult r = RunFixture("aborted-to-committed", CoordinationMode::kUncoordinated, tmp);
  EXPECT_TRUE(Serves(View(r, 2), "poison", "SHOULD_NOT_SEE_THIS"));
  EXPECT_TRUE(Serves(View(r, 2), "good", "data"));
  for (int b : {1, 3}) {
    EXPECT_FALSE(Serves(View(r, b), "poison", "SHOULD_NOT_SEE_THIS")) << b;
    EXPECT_TRUE(Serves(View(r, b), "good", "data")) << b;
    EXPECT_EQ(Value(View(r, b), "poison"), std::nullopt);
  }
  EXPECT_EQ(Value(View(r, 2), "poison"), "SHOULD_NOT_SEE_THIS");
  EXPECT_TRUE(r.divergence.key_values.count("poison"));
  // Broker 2 still holds the poison and no ABORT follows it: no aborted transaction covers it.
  for (const AbortedTxn& t : View(r, 2).log.aborted_txns) EXPECT_GT(t.first_offset, FirstOffsetOf(r, "P"));
  ExpectVerifies(r);
}

TEST(SimulatorTest, CommittedToAbortedHidesCommittedDataUncoordinated) {
  TempDir tmp;
  SimulationResult r = RunFixture("committed-to-aborted", CoordinationMode::kUncoordinated, tmp);
  int64_t t1 = FirstOffsetOf(r, "P");
  // Broker 2 (its cleaner did not run meanwhile) and broker 3 both hold T1's record: broker 2 serves
  // it as committed, broker 3 hides it as aborted (T2's ABORT closed the transaction from T1's start).
  EXPECT_TRUE(Serves(View(r, 2), "order-1", "committed"));
  EXPECT_FALSE(Serves(View(r, 3), "order-1", "committed"));
  EXPECT_TRUE(Holds(View(r, 3).hidden_offsets, t1));
  EXPECT_FALSE(Holds(View(r, 2).hidden_offsets, t1));
  bool aborted_from_t1 = false;
  for (const AbortedTxn& t : View(r, 3).log.aborted_txns)
    aborted_from_t1 |= t.first_offset == t1 && t.producer_id == 2000;
  EXPECT_TRUE(aborted_from_t1);
  for (const AbortedTxn& t : View(r, 2).log.aborted_txns) EXPECT_NE(t.first_offset, t1);
  ASSERT_EQ(r.divergence.visibility.size(), 1u);
  EXPECT_EQ(r.divergence.visibility[0].offset, t1);
  EXPECT_EQ(r.divergence.visibility[0].served_by, std::vector<int>{2});
  EXPECT_EQ(r.divergence.visibility[0].hidden_by, std::vector<int>{3});
  // scenarios.md §6: order-1 was overwritten, so the latest values agree; only visibility diverges.
  EXPECT_TRUE(r.divergence.key_values.empty());
  EXPECT_EQ(Value(View(r, 3), "order-1"), "shipped");
  ExpectVerifies(r);
}

TEST(SimulatorTest, HangingTransactionPinsTheLsoUncoordinated) {
  TempDir tmp;
  SimulationResult r = RunFixture("hanging-transaction", CoordinationMode::kUncoordinated, tmp);
  int64_t t1 = FirstOffsetOf(r, "P");
  const ReplicaView& b3 = View(r, 3);
  EXPECT_EQ(b3.log.last_stable_offset, t1);
  const auto& open = b3.log.producer_state.ongoing_txns();
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open.begin()->second.producer_id, 2000);
  EXPECT_EQ(open.begin()->first, t1);
  EXPECT_EQ(b3.log.log_end_offset, View(r, 1).log.log_end_offset);
  for (const ServedRecord& s : b3.read_committed) EXPECT_LT(s.offset, t1);
  for (int b : {1, 2}) {
    EXPECT_TRUE(View(r, b).log.producer_state.ongoing_txns().empty());
    EXPECT_EQ(View(r, b).log.last_stable_offset, View(r, b).log.log_end_offset);
    EXPECT_EQ(Value(View(r, b), "order-1"), "shipped");
  }
  EXPECT_EQ(Value(b3, "order-1"), std::nullopt);  // frozen before T1
  EXPECT_EQ(r.divergence.last_stable_offsets.at(3), t1);
  ExpectVerifies(r);
}

TEST(SimulatorTest, HealthyControlDoesNotDiverge) {
  TempDir tmp;
  for (CoordinationMode m : {CoordinationMode::kUncoordinated, CoordinationMode::kCoordinated}) {
    SimulationResult r = RunFixture("healthy-control", m, tmp);
    EXPECT_FALSE(r.divergence.diverged()) << CoordinationModeName(m);
    for (int b = 1; b <= 3; b++) EXPECT_EQ(Value(View(r, b), "K"), std::nullopt) << b;
    // The tombstone really was removed on the leader (the run is not trivially safe).
    int64_t removed = 0;
    for (const facts::Cleaned& c : Cleans(r)) removed += c.tombstones_removed;
    EXPECT_GE(removed, 1);
    ExpectVerifies(r);
  }
}

TEST(SimulatorTest, CoordinatedModePreventsEveryDivergence) {
  TempDir tmp;
  for (const char* name : {"lost-tombstone", "aborted-to-committed", "committed-to-aborted", "hanging-transaction"}) {
    SimulationResult r = RunFixture(name, CoordinationMode::kCoordinated, tmp);
    EXPECT_FALSE(r.divergence.diverged()) << name;
    for (int b = 1; b <= 3; b++) {
      EXPECT_TRUE(View(r, b).log.producer_state.ongoing_txns().empty()) << name << " broker " << b;
      EXPECT_EQ(View(r, b).log.last_stable_offset, View(r, b).log.log_end_offset) << name;
      EXPECT_FALSE(Serves(View(r, b), "poison", "SHOULD_NOT_SEE_THIS")) << name;
      EXPECT_EQ(Value(View(r, b), "K"),
                std::string(name) == "lost-tombstone" ? std::nullopt : std::optional<std::string>("V"))
          << name;
    }
    ExpectVerifies(r);
  }
}

// While the lagging broker is away, the healthy brokers' cleaners hold back exactly the removal that
// would have diverged it; once it is back and has compacted, removal proceeds.
TEST(SimulatorTest, LaggingReplicaHoldsBackRemovalUntilItReturns) {
  TempDir tmp;
  struct Case {
    const char* name;
    bool tombstones;  // else markers
    int lagging;
  };
  for (const Case& c : {Case{"lost-tombstone", true, 2}, Case{"aborted-to-committed", false, 2},
                        Case{"hanging-transaction", false, 3}}) {
    auto held = [&](const facts::Cleaned& f) {
      return c.tombstones ? f.coordinated->tombstones_held : f.coordinated->markers_held;
    };
    auto removed = [&](const facts::Cleaned& f) { return c.tombstones ? f.tombstones_removed : f.markers_removed; };
    SimulationResult coordinated = RunFixture(c.name, CoordinationMode::kCoordinated, tmp);
    SimulationResult kafka = RunFixture(c.name, CoordinationMode::kUncoordinated, tmp);
    size_t up_step = 0;
    for (const SimStep& s : coordinated.steps)
      if (s.op == "up") up_step = size_t(s.step);
    ASSERT_GT(up_step, 0u);
    int64_t held_while_away = 0, removed_while_away = 0, removed_after = 0, kafka_removed_while_away = 0;
    for (const SimStep& s : coordinated.steps) {
      if (s.op != "clean") continue;
      const auto& f = std::get<facts::Cleaned>(s.detail);
      ASSERT_TRUE(f.coordinated);
      if (size_t(s.step) < up_step) {
        held_while_away += held(f);
        removed_while_away += removed(f);
        // MTRO/MXRO stay at or below what the lagging replica last reported.
        EXPECT_LE(f.coordinated->mtro, View(kafka, c.lagging).log.log_end_offset);
      } else {
        removed_after += removed(f);
      }
    }
    for (const SimStep& s : kafka.steps)
      if (s.op == "clean" && size_t(s.step) < up_step)
        kafka_removed_while_away += removed(std::get<facts::Cleaned>(s.detail));
    EXPECT_GE(kafka_removed_while_away, 1) << c.name << ": Kafka removes it while the replica is away";
    EXPECT_GE(held_while_away, 1) << c.name;
    EXPECT_EQ(removed_while_away, 0) << c.name;
    EXPECT_GE(removed_after, 1) << c.name << ": removal resumes once every replica has caught up and compacted";
  }
}

// An event built in code, typed as ParseTimeline types it.
TimelineEvent Event(const json& e) {
  TimelineEvent out;
  std::string error;
  EXPECT_TRUE(ParseTimelineEvent(e, &out, &error)) << error;
  return out;
}

// Timer boundary (scenarios.md §5, §6): the tombstone is stamped in the same millisecond the outage
// starts (record_step_ms 0), a pass runs exactly at its horizon; the follower returns one ms before or
// after that, i.e. after an outage of delete.retention.ms -/+ 1.
Timeline BoundaryTimeline(int64_t outage_ms) {
  const int64_t retention = 600000;
  Timeline t;
  t.name = "boundary";
  t.record_step_ms = 0;
  t.config = {{"cleanup.policy", "compact"},
              {"segment.bytes", "1024"},
              {"index.interval.bytes", "128"},
              {"min.cleanable.dirty.ratio", "0.01"},
              {"delete.retention.ms", std::to_string(retention)},
              {"producer.id.expiration.ms", "1800000"}};
  ProducerSpec q;
  q.name = "Q1";
  q.producer_id = 1000;
  q.epoch = 0;
  t.producers["Q1"] = q;
  const json fill_json =
      json{{"op", "traffic"}, {"producer", "Q1"}, {"key_prefix", "user-"}, {"key_count", 12}, {"until_roll", true}};
  const TimelineEvent fill = Event(fill_json);
  int64_t t0 = t.start_ms + 60000;
  for (const json& e :
       {json{{"op", "produce"}, {"producer", "Q1"}, {"records", json::array({json::array({"K", "V"})})}}, fill_json,
        json{{"op", "clean"}}, json{{"op", "advance"}, {"to_ms", t0}}, json{{"op", "down"}, {"broker", 2}},
        json{{"op", "produce"}, {"producer", "Q1"}, {"records", json::array({json::array({"K", nullptr})})}}, fill_json,
        json{{"op", "clean"}, {"brokers", json::array({1, 3})}}})  // stamps horizon t0 + retention
    t.events.push_back(Event(e));
  TimelineEvent up = Event({{"op", "up"}, {"broker", 2}});
  if (outage_ms < retention) {
    t.events.push_back(Event(json{{"op", "advance"}, {"to_ms", t0 + outage_ms}}));
    t.events.push_back(up);
  }
  t.events.push_back(Event(json{{"op", "advance"}, {"to_ms", t0 + retention}}));
  t.events.push_back(fill);
  t.events.push_back(
      Event(json{{"op", "clean"}, {"brokers", json::array({1, 3})}}));  // at the horizon: removes the tombstone
  if (outage_ms >= retention) {
    t.events.push_back(Event(json{{"op", "advance"}, {"to_ms", t0 + outage_ms}}));
    t.events.push_back(up);
  }
  t.events.push_back(fill);
  t.events.push_back(Event(json{{"op", "clean"}}));
  return t;
}

TEST(SimulatorTest, OutageJustShorterThanDeleteRetentionIsSafe) {
  TempDir tmp;
  SimulationResult r = Simulate(BoundaryTimeline(600000 - 1), CoordinationMode::kUncoordinated, tmp.path() + "/short");
  EXPECT_FALSE(r.divergence.diverged());
  for (int b = 1; b <= 3; b++) EXPECT_EQ(Value(View(r, b), "K"), std::nullopt);
  int64_t removed = 0;
  for (const facts::Cleaned& c : Cleans(r)) removed += c.tombstones_removed;
  EXPECT_GE(removed, 2);  // the horizon pass did remove it on brokers 1 and 3
}

TEST(SimulatorTest, OutageJustLongerThanDeleteRetentionDiverges) {
  TempDir tmp;
  SimulationResult r = Simulate(BoundaryTimeline(600000 + 1), CoordinationMode::kUncoordinated, tmp.path() + "/long");
  EXPECT_TRUE(r.divergence.diverged());
  EXPECT_EQ(Value(View(r, 2), "K"), "V");
  EXPECT_EQ(Value(View(r, 1), "K"), std::nullopt);
  SimulationResult c = Simulate(BoundaryTimeline(600000 + 1), CoordinationMode::kCoordinated, tmp.path() + "/long-c");
  EXPECT_FALSE(c.divergence.diverged());
}

// The replica view against Kafka's own answer: truth.json lists, per broker, the LSO, the records a
// read_committed fetch returns and the final key -> value map, computed by Kafka's code.
TEST(ReplicaViewTest, MatchesKafkaTruthForOracleReplicaSets) {
  for (const char* set : {"aborted-to-committed", "lost-tombstone-healthy-control"}) {
    std::string base = std::string(KLF_FIXTURES_DIR) + "/kafka-oracle/replicas/" + set;
    json truth = json::parse(ReadText(base + "/truth.json"));
    for (const auto& [name, b] : truth["brokers"].items()) {
      ReplicaView v;
      CollectingSink sink;
      std::string error;
      ASSERT_TRUE(LoadReplicaView(base + "/" + name + "/foo-0", 1700001140000, 1800000, &v, &sink, &error)) << error;
      EXPECT_EQ(v.log.log_end_offset, b["logEndOffset"].get<int64_t>()) << set << " " << name;
      EXPECT_EQ(v.log.high_watermark, b["highWatermark"].get<int64_t>()) << set << " " << name;
      EXPECT_EQ(v.log.last_stable_offset, b["lastStableOffset"].get<int64_t>()) << set << " " << name;
      ASSERT_EQ(v.read_committed.size(), b["readCommitted"].size()) << set << " " << name;
      for (size_t i = 0; i < v.read_committed.size(); i++) {
        const json& want = b["readCommitted"][i];
        EXPECT_EQ(v.read_committed[i].offset, want["offset"].get<int64_t>());
        EXPECT_EQ(v.read_committed[i].key,
                  want["key"].is_null() ? std::nullopt : std::optional(want["key"].get<std::string>()));
        EXPECT_EQ(v.read_committed[i].value,
                  want["value"].is_null() ? std::nullopt : std::optional(want["value"].get<std::string>()));
      }
      std::map<std::string, std::string> kv;
      for (const auto& [k, val] : b["finalKeyValues"].items()) kv[k] = val.get<std::string>();
      EXPECT_EQ(v.key_values, kv) << set << " " << name;
      EXPECT_EQ(v.log.cleaner_checkpoint, b["cleanerCheckpoint"].get<int64_t>());
      EXPECT_EQ(v.coordination.mcco, std::min(b["cleanerCheckpoint"].get<int64_t>(), v.log.log_end_offset));
      EXPECT_EQ(v.coordination.mxfo, v.log.log_end_offset);  // no open transaction at the end of either set
    }
  }
}

TEST(TimelineTest, RejectsBadTimelines) {
  Timeline t;
  std::string error;
  EXPECT_FALSE(ParseTimeline("[]", &t, &error));
  EXPECT_FALSE(ParseTimeline(R"({"events": [{"op": "explode"}]})", &t, &error));
  EXPECT_NE(error.find("event 0"), std::string::npos) << error;
  // A field of the wrong type is found when the timeline is parsed: the event's index, op, line and
  // column, and the field.
  EXPECT_FALSE(ParseTimeline("{\"events\": [{\"op\": \"note\"},\n  {\"op\": \"clean\", \"force\": 3}]}", &t, &error));
  EXPECT_NE(error.find("event 1 (clean, line 2, column 3): \"force\""), std::string::npos) << error;
  EXPECT_FALSE(ParseTimeline(R"({"events": [{"op": "produce", "records": [["k", 1]]}]})", &t, &error));
  EXPECT_NE(error.find("event 0 (produce, line 1, column 13): \"records\""), std::string::npos) << error;
  EXPECT_FALSE(ParseTimeline(R"({"brokers": 3, "leader": 4, "events": []})", &t, &error));
  EXPECT_FALSE(ParseTimeline(R"({"producers": {"P": {"transactional": true}}, "events": []})", &t, &error));
  ASSERT_TRUE(ParseTimeline(R"({"events": [{"op": "produce", "producer": "P", "records": [["k", "v"]]}],
                                "producers": {"P": {"producer_id": 7, "transactional": true}}})",
                            &t, &error))
      << error;
  // A transactional producer must begin first: the run fails naming the event, and --out is not created.
  TempDir tmp;
  SimulationOptions o;
  o.out_dir = tmp.path() + "/out";
  SimulationResult r;
  EXPECT_FALSE(RunSimulation(t, o, &r, &error));
  EXPECT_NE(error.find("timeline event 0"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(o.out_dir));
}

// ---------------------------------------------------------------------------------------------
// Transaction versions and the coordinator's log

// Producer P (TV2) starts at epoch 32765: its first commit bumps to 32766, the abort after it is the
// last its producer id can take (marker at 32767, NextProducerId allocated), and the next transaction
// runs as the new id at epoch 0. Q is TV1 and R TV0 (epochs constant). Broker 3 goes down before the
// last transaction and stays down.
const char* kEpochTimeline = R"({
  "name": "epochs", "brokers": 3, "leader": 1,
  "producers": {
    "P": {"producer_id": 2000, "epoch": 32765, "transactional": true, "transactional_id": "p-tx", "transaction_version": 2},
    "Q": {"producer_id": 3000, "epoch": 5, "transactional": true, "transactional_id": "q-tx", "transaction_version": 1},
    "R": {"producer_id": 4000, "epoch": 2, "transactional": true, "transactional_id": "r-tx", "transaction_version": 0}
  },
  "events": [
    {"op": "begin", "producer": "P"}, {"op": "produce", "producer": "P", "records": [["a", "1"]]},
    {"op": "commit", "producer": "P"},
    {"op": "begin", "producer": "Q"}, {"op": "produce", "producer": "Q", "records": [["q", "1"]]},
    {"op": "commit", "producer": "Q"},
    {"op": "begin", "producer": "P"}, {"op": "produce", "producer": "P", "records": [["b", "1"]]},
    {"op": "abort", "producer": "P"},
    {"op": "begin", "producer": "R"}, {"op": "produce", "producer": "R", "records": [["r", "1"]]},
    {"op": "abort", "producer": "R"},
    {"op": "begin", "producer": "Q"}, {"op": "produce", "producer": "Q", "records": [["q", "2"]]},
    {"op": "abort", "producer": "Q"},
    {"op": "down", "broker": 3},
    {"op": "begin", "producer": "P"}, {"op": "produce", "producer": "P", "records": [["c", "1"]]},
    {"op": "commit", "producer": "P"}
  ]})";

struct BatchFacts {
  int64_t producer_id;
  int16_t epoch;
  int32_t base_sequence;
  bool control;
  bool operator==(const BatchFacts&) const = default;
};

std::vector<BatchFacts> BatchesOf(const std::string& partition_dir) {
  std::vector<BatchFacts> out;
  std::vector<std::string> logs;
  for (const auto& e : fs::directory_iterator(partition_dir))
    if (e.path().extension() == ".log") logs.push_back(e.path().string());
  std::sort(logs.begin(), logs.end());
  for (const std::string& path : logs) {
    const std::string data = ReadText(path);
    CollectingSink sink;
    LogReader reader(path, AsBytes(data), &sink);
    BatchView b;
    while (reader.Next(&b))
      out.push_back({b.header.producer_id, b.header.producer_epoch, b.header.base_sequence, b.header.is_control});
    EXPECT_EQ(sink.ErrorCount(), 0u) << path;
  }
  return out;
}

TEST(SimulatorTest, TransactionVersionTwoBumpsTheEpochAtEveryEndAndRollsTheProducerIdOver) {
  Timeline t;
  std::string error;
  ASSERT_TRUE(ParseTimeline(kEpochTimeline, &t, &error)) << error;
  TempDir tmp;
  SimulationResult r = Simulate(t, CoordinationMode::kUncoordinated, tmp.path() + "/out");
  // The data partition on a follower (every batch went through the follower's ProducerStateManager;
  // the verify below finds no warning, so each marker at e+1 was accepted there).
  const std::vector<BatchFacts> expected = {
      {2000, 32765, 0, false}, {2000, 32766, -1, true},  // T1: data at 32765, COMMIT at 32766
      {3000, 5, 0, false},     {3000, 5, -1, true},      // TV1: the marker keeps the data epoch
      {2000, 32766, 0, false}, {2000, 32767, -1, true},  // the next transaction from sequence 0; ABORT at 32767
      {4000, 2, 0, false},     {4000, 2, -1, true},      // TV0
      {3000, 5, 1, false},     {3000, 5, -1, true},      // TV1: sequences continue across transactions
      {4001, 0, 0, false},     {4001, 1, -1, true},      // rollover: a new id (above every id in use), epoch 0
  };
  EXPECT_EQ(BatchesOf(r.out_dir + "/broker2/foo-0"), expected);
  ExpectVerifies(r);
  // The run's own record of the decisions.
  std::vector<facts::TxnEnded> ends = Ends(r, {"commit", "abort"});
  ASSERT_EQ(ends.size(), 6u);
  EXPECT_EQ(ends[2].next_producer_id, 4001);
  EXPECT_EQ(ends[2].marker_epoch, 32767);
  EXPECT_EQ(ends[5].producer_id, 4001);
}

TEST(SimulatorTest, WritesTheCoordinatorsLogReplicatedLikeAnyPartition) {
  Timeline t;
  std::string error;
  ASSERT_TRUE(ParseTimeline(kEpochTimeline, &t, &error)) << error;
  TempDir tmp;
  SimulationResult r = Simulate(t, CoordinationMode::kUncoordinated, tmp.path() + "/out");
  // klf's own decoder (txn/coordinator.h over segment_reader/internal_topics.h) reads every record.
  auto load = [&](int broker) {
    CoordinatorLog log;
    CollectingSink sink;
    std::string err;
    EXPECT_TRUE(LoadCoordinatorLog({r.out_dir + "/broker" + std::to_string(broker) + "/__transaction_state-0"}, &log,
                                   &sink, &err))
        << err;
    EXPECT_EQ(sink.problems.size(), 0u) << (sink.problems.empty() ? "" : sink.problems[0].message);
    return log;
  };
  const CoordinatorLog log = load(1);
  ASSERT_EQ(log.ids.size(), 3u);
  const std::vector<CoordinatorRecord>& p = log.ids.at("p-tx").records;
  std::vector<std::string> states;
  std::vector<int64_t> ids;
  std::vector<int> epochs;
  for (const CoordinatorRecord& c : p) {
    states.push_back(c.state);
    ids.push_back(c.producer_id);
    epochs.push_back(c.producer_epoch);
    EXPECT_EQ(c.value_version, 1);
    EXPECT_EQ(c.client_transaction_version, 2);
  }
  EXPECT_EQ(states,
            (std::vector<std::string>{"Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing", "PrepareAbort",
                                      "CompleteAbort", "Ongoing", "PrepareCommit", "CompleteCommit"}));
  EXPECT_EQ(ids, (std::vector<int64_t>{2000, 2000, 2000, 2000, 2000, 2000, 4001, 4001, 4001, 4001}));
  EXPECT_EQ(epochs, (std::vector<int>{32765, 32765, 32766, 32766, 32766, 32767, 0, 0, 1, 1}));
  EXPECT_EQ(p[5].next_producer_id, 4001);      // PrepareAbort names the id the coordinator allocated
  EXPECT_EQ(p[6].previous_producer_id, 2000);  // CompleteAbort: the id before the rollover
  EXPECT_EQ(p[1].partitions, (std::vector<std::string>{"foo-0"}));
  EXPECT_TRUE(p[3].partitions.empty());
  for (const CoordinatorRecord& c : log.ids.at("q-tx").records) {
    EXPECT_EQ(c.value_version, 1);  // TV1: version 1 with ClientTransactionVersion 1, as Kafka writes it
    EXPECT_EQ(c.client_transaction_version, 1);
    EXPECT_EQ(c.producer_epoch, 5);
  }
  for (const CoordinatorRecord& c : log.ids.at("r-tx").records) {
    EXPECT_EQ(c.value_version, 0);
    EXPECT_EQ(c.producer_epoch, 2);
  }
  // Broker 3 went down before P's last transaction: its copy stops there, a prefix of the leader's.
  const CoordinatorLog three = load(3);
  EXPECT_EQ(three.ids.at("p-tx").records.size(), 7u);
  EXPECT_EQ(three.ids.at("p-tx").records.back().state, "CompleteAbort");
  // Both partitions in the log dir's checkpoint files.
  EXPECT_EQ(ReadText(r.out_dir + "/broker1/recovery-point-offset-checkpoint"),
            "0\n2\n__transaction_state 0 21\nfoo 0 12\n");
}

// The coordinator aborts on a time-out: a fence bump first, then (TV2 only) the usual bump; the fenced
// client initializes again (Empty, one more bump) and continues from sequence 0.
TEST(SimulatorTest, TimedOutTransactionsAreAbortedAboveAFencedEpoch) {
  Timeline t;
  std::string error;
  ASSERT_TRUE(ParseTimeline(R"({
    "brokers": 2,
    "producers": {
      "P": {"producer_id": 10, "transactional": true, "transactional_id": "p", "transaction_version": 2},
      "Q": {"producer_id": 20, "epoch": 5, "transactional": true, "transactional_id": "q", "transaction_version": 1}
    },
    "events": [
      {"op": "begin", "producer": "P"}, {"op": "produce", "producer": "P", "records": [["a", "1"]]},
      {"op": "begin", "producer": "Q"}, {"op": "produce", "producer": "Q", "records": [["b", "1"]]},
      {"op": "advance", "ms": 60000},
      {"op": "abort", "producer": "P", "timeout": true}, {"op": "abort", "producer": "Q", "timeout": true},
      {"op": "begin", "producer": "P"}, {"op": "produce", "producer": "P", "records": [["a", "2"]]},
      {"op": "commit", "producer": "P"},
      {"op": "begin", "producer": "Q"}, {"op": "produce", "producer": "Q", "records": [["b", "2"]]},
      {"op": "commit", "producer": "Q"}
    ]})",
                            &t, &error))
      << error;
  TempDir tmp;
  SimulationResult r = Simulate(t, CoordinationMode::kUncoordinated, tmp.path() + "/out");
  const std::vector<BatchFacts> expected = {
      {10, 0, 0, false}, {20, 5, 0, false},  // the two transactions' data
      {10, 2, -1, true},                     // TV2: fence to 1, bump to 2
      {20, 6, -1, true},                     // TV1: fence to 6, no bump
      {10, 3, 0, false}, {10, 4, -1, true},  // P re-initialized at 3
      {20, 7, 0, false}, {20, 7, -1, true},  // Q re-initialized at 7
  };
  EXPECT_EQ(BatchesOf(r.out_dir + "/broker2/foo-0"), expected);
  ExpectVerifies(r);
  CoordinatorLog log;
  CollectingSink sink;
  ASSERT_TRUE(LoadCoordinatorLog({r.out_dir + "/broker2/__transaction_state-0"}, &log, &sink, &error)) << error;
  std::vector<std::pair<std::string, int>> p;
  for (const CoordinatorRecord& c : log.ids.at("p").records) p.emplace_back(c.state, c.producer_epoch);
  EXPECT_EQ(p, (std::vector<std::pair<std::string, int>>{{"Empty", 0},
                                                         {"Ongoing", 0},
                                                         {"PrepareAbort", 2},
                                                         {"CompleteAbort", 2},
                                                         {"Empty", 3},
                                                         {"Ongoing", 3},
                                                         {"PrepareCommit", 4},
                                                         {"CompleteCommit", 4}}));
  std::vector<facts::TxnEnded> ends = Ends(r, {"abort"});
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_TRUE(ends[0].timeout);
  EXPECT_EQ(ends[0].next_epoch, 3);
  EXPECT_EQ(ends[1].next_epoch, 7);
}

TEST(SimulatorTest, NoTransactionVersionNoCoordinatorLog) {
  TempDir tmp;
  SimulationResult r = RunFixture("hanging-transaction", CoordinationMode::kUncoordinated, tmp);
  for (int b = 1; b <= 3; b++)
    EXPECT_FALSE(fs::exists(r.out_dir + "/broker" + std::to_string(b) + "/__transaction_state-0"));
  EXPECT_EQ(ReadText(r.out_dir + "/broker1/log-start-offset-checkpoint"), "0\n1\nfoo 0 0\n");
}

TEST(TimelineTest, TransactionVersionIsZeroOneOrTwoOnATransactionalProducer) {
  Timeline t;
  std::string error;
  EXPECT_FALSE(ParseTimeline(
      R"({"producers": {"P": {"producer_id": 1, "transactional": true, "transaction_version": 3}}, "events": []})", &t,
      &error));
  EXPECT_NE(error.find("transaction_version"), std::string::npos) << error;
  EXPECT_FALSE(ParseTimeline(
      R"({"producers": {"P": {"producer_id": 1, "idempotent": true, "transaction_version": 2}}, "events": []})", &t,
      &error));
  EXPECT_FALSE(ParseTimeline(R"({"producers": {"P": {"producer_id": 1, "epoch": 32767, "transactional": true,
                                 "transaction_version": 2}}, "events": []})",
                             &t, &error));
  EXPECT_NE(error.find("32766"), std::string::npos) << error;
  ASSERT_TRUE(ParseTimeline(
      R"({"producers": {"P": {"producer_id": 1, "transactional": true, "transaction_version": 2}}, "events": []})", &t,
      &error))
      << error;
  EXPECT_EQ(t.producers.at("P").transaction_version, 2);
  EXPECT_TRUE(t.WritesCoordinatorLog());
}

}  // namespace
}  // namespace klf
