// LoadedLog and ConsumeLog against Kafka's own answers: the partition directories of the fixtures were
// written by Kafka's storage code, and their truth files hold what Kafka computed for them (log start
// and end, high watermark, last stable and first unstable offsets, open and aborted transactions,
// producer state, and the records a read_committed / read_uncommitted consumer receives).
//   * kafka4/tv2-txn/truth/<state>.json: Kafka's LogLoader reload of each state (transaction version 2);
//   * kafka-oracle/replicas/*/truth.json and random-replicas/*/truth.json: each broker's state at the
//     end of a three-broker timeline run on Kafka's code.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "partition/consumer_view.h"
#include "partition/coordination.h"
#include "partition/loaded_log.h"
#include "tests/support/fault_injection_env.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json ReadJson(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

std::optional<int64_t> OptionalOffset(const json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<int64_t>();
}

struct Consumed {
  std::vector<int64_t> offsets;
  std::map<std::string, std::string> key_values;  // the compacted view a read_committed consumer ends with
};

Consumed Consume(const LoadedLog& log, Isolation isolation) {
  Consumed c;
  std::string error;
  CollectingSink sink;
  auto visit = [&](const BatchHeader&, const Record& r, Delivery d) {
    if (d != Delivery::kDelivered) return;
    c.offsets.push_back(r.offset);
    if (!r.key) return;
    std::string key(AsStringView(*r.key));
    if (r.value)
      c.key_values[key] = std::string(AsStringView(*r.value));
    else
      c.key_values.erase(key);
  };
  EXPECT_TRUE(ConsumeLog(log, isolation, visit, &sink, &error)) << error;
  return c;
}

std::vector<int64_t> TruthOffsets(const json& records) {
  std::vector<int64_t> v;
  for (const json& r : records) v.push_back(r["offset"].get<int64_t>());
  return v;
}

std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> AbortedOf(const std::vector<AbortedTxn>& a) {
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> v;
  for (const AbortedTxn& t : a) v.emplace_back(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset);
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> AbortedOf(const json& a) {
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> v;
  for (const json& t : a)
    v.emplace_back(t["producerId"].get<int64_t>(), t["firstOffset"].get<int64_t>(), t["lastOffset"].get<int64_t>(),
                   t["lastStableOffset"].get<int64_t>());
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::pair<int64_t, int64_t>> OpenOf(const LoadedLog& log) {
  std::vector<std::pair<int64_t, int64_t>> v;
  for (const auto& [first, t] : log.producer_state.ongoing_txns()) v.emplace_back(t.producer_id, first);
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::pair<int64_t, int64_t>> OpenOf(const json& a) {
  std::vector<std::pair<int64_t, int64_t>> v;
  for (const json& t : a) v.emplace_back(t["producerId"].get<int64_t>(), t["firstOffset"].get<int64_t>());
  std::sort(v.begin(), v.end());
  return v;
}

TEST(LoadedLogTest, Tv2TxnEveryStateAsKafkasLogLoaderReloadsIt) {
  const fs::path root = fs::path(KLF_FIXTURES_DIR) / "kafka4" / "tv2-txn";
  const json scenario = ReadJson(root / "scenario.json");
  std::map<std::string, int64_t> clock;  // the reload's clock: the cleaner round's time
  for (const json& r : scenario["cleanerRounds"])
    clock[r["state"].get<std::string>()] = r["cleanerTimeMs"].get<int64_t>();
  int states = 0;
  for (const char* state : {"written", "cleaned-pass1", "cleaned-pass2", "cleaned-pass3"}) {
    SCOPED_TRACE(state);
    const json truth = ReadJson(root / "truth" / (std::string(state) + ".json"));
    LoadOptions options;
    // `written` was reloaded right after the writes (no producer idle for producer.id.expiration.ms).
    if (clock.count(state)) options.now_ms = clock[state];
    LoadedLog log;
    CollectingSink sink;
    std::string error;
    ASSERT_TRUE(LoadedLog::Open((root / state / "tv2-txn-0").string(), options, &log, &sink, &error)) << error;
    ++states;
    EXPECT_EQ(log.log_start_offset, truth["logStartOffset"].get<int64_t>());
    EXPECT_EQ(log.log_end_offset, truth["logEndOffset"].get<int64_t>());
    EXPECT_EQ(log.high_watermark, truth["highWatermark"].get<int64_t>());
    EXPECT_EQ(log.last_stable_offset, truth["lastStableOffset"].get<int64_t>());
    EXPECT_EQ(log.first_unstable_offset, OptionalOffset(truth["firstUnstableOffset"]));
    EXPECT_EQ(OpenOf(log), OpenOf(truth["openTransactions"]));
    EXPECT_EQ(AbortedOf(log.aborted_txns), AbortedOf(truth["abortedTransactionsFromTxnIndex"]));
    // ProducerStateManager.activeProducers: id, epoch, coordinator epoch, last data offset, open txn.
    std::vector<std::tuple<int64_t, int, int, int64_t, std::optional<int64_t>>> ours, kafkas;
    for (const auto& [pid, e] : log.producer_state.producers())
      ours.emplace_back(pid, e.producer_epoch, e.coordinator_epoch, e.last_data_offset(), e.current_txn_first_offset);
    for (const json& e : truth["producerStateEntries"])
      kafkas.emplace_back(e["producerId"].get<int64_t>(), e["producerEpoch"].get<int>(),
                          e["coordinatorEpoch"].get<int>(), e["lastDataOffset"].get<int64_t>(),
                          OptionalOffset(e["currentTxnFirstOffset"]));
    std::sort(kafkas.begin(), kafkas.end());
    EXPECT_EQ(ours, kafkas);
    EXPECT_EQ(Consume(log, Isolation::kReadCommitted).offsets, TruthOffsets(truth["fetchTxnCommitted"]["records"]));
    EXPECT_EQ(Consume(log, Isolation::kReadUncommitted).offsets, TruthOffsets(truth["fetchHighWatermark"]["records"]));
    // FetchLog from a fetch offset: Kafka's list from that offset on, whatever aborted transaction it
    // starts inside.
    for (int64_t from : {int64_t(0), int64_t(8), int64_t(17), int64_t(23), int64_t(36), int64_t(60)}) {
      for (Isolation isolation : {Isolation::kReadCommitted, Isolation::kReadUncommitted}) {
        std::vector<int64_t> want;
        for (int64_t o : TruthOffsets(
                 truth[isolation == Isolation::kReadCommitted ? "fetchTxnCommitted" : "fetchHighWatermark"]["records"]))
          if (o >= from) want.push_back(o);
        std::vector<int64_t> got;
        FetchOptions fo;
        fo.fetch_offset = from;
        FetchEnd end;
        auto visit = [&](size_t, const BatchHeader&, const Record& r, const RecordDecoder&, Delivery d) {
          if (d == Delivery::kDelivered) got.push_back(r.offset);
        };
        ASSERT_TRUE(FetchLog(log, isolation, fo, visit, &sink, &end, &error)) << error;
        EXPECT_EQ(got, want) << state << " from " << from;
        EXPECT_FALSE(end.damage.has_value());
      }
    }
  }
  EXPECT_EQ(states, 4);
}

// One broker's partition directory (<broker>/foo-0) against that broker's entry of truth.json.
void ExpectBrokerAsKafka(const fs::path& set, const std::string& broker, const json& truth, int* compared) {
  SCOPED_TRACE(set.filename().string() + "/" + broker);
  const fs::path dir = set / broker / truth["topicPartition"].get<std::string>();
  if (!fs::exists(dir)) return;
  const json& b = truth["brokers"][broker];
  LoadedLog log;
  CollectingSink sink;
  std::string error;
  ASSERT_TRUE(LoadedLog::Open(dir.string(), LoadOptions{}, &log, &sink, &error)) << error;
  ++*compared;
  EXPECT_EQ(log.log_start_offset, b["logStartOffset"].get<int64_t>());
  EXPECT_EQ(log.log_end_offset, b["logEndOffset"].get<int64_t>());
  EXPECT_EQ(log.high_watermark, b["highWatermark"].get<int64_t>());
  EXPECT_EQ(log.last_stable_offset, b["lastStableOffset"].get<int64_t>());
  EXPECT_EQ(log.first_unstable_offset, OptionalOffset(b["firstUnstableOffset"]));
  EXPECT_EQ(log.cleaner_checkpoint, OptionalOffset(b["cleanerCheckpoint"]));
  std::vector<int64_t> bases;
  for (const SegmentInfo& s : log.segments) bases.push_back(s.base_offset);
  EXPECT_EQ(bases, b["segments"].get<std::vector<int64_t>>());
  EXPECT_EQ(OpenOf(log), OpenOf(b["openTransactions"]));
  EXPECT_EQ(AbortedOf(log.aborted_txns), AbortedOf(b["abortedTransactions"]));
  const Consumed committed = Consume(log, Isolation::kReadCommitted);
  EXPECT_EQ(committed.offsets, TruthOffsets(b["readCommitted"]));
  EXPECT_EQ(Consume(log, Isolation::kReadUncommitted).offsets, TruthOffsets(b["readUncommitted"]));
  std::map<std::string, std::string> final_values;
  for (const auto& [k, v] : b["finalKeyValues"].items())
    if (!v.is_null()) final_values[k] = v.get<std::string>();
  EXPECT_EQ(committed.key_values, final_values);
}

TEST(LoadedLogTest, EveryBrokerOfKafkasReplicaTimelinesAsKafkaLeftIt) {
  int sets = 0, compared = 0;
  for (const char* group : {"replicas", "random-replicas"}) {
    for (const auto& e : fs::directory_iterator(fs::path(KLF_FIXTURES_DIR) / "kafka-oracle" / group)) {
      if (!fs::exists(e.path() / "truth.json")) continue;
      const json truth = ReadJson(e.path() / "truth.json");
      ++sets;
      for (const auto& [broker, _] : truth["brokers"].items()) ExpectBrokerAsKafka(e.path(), broker, truth, &compared);
    }
  }
  EXPECT_GE(sets, 6);
  EXPECT_GE(compared, 18);
}

// The broker's identity comes from the log dir's meta.properties, read once per log dir and kept while
// the file is unchanged (segment_reader/layout.h ReadLogDirMetaProperties): a rewritten file is read
// again, and one that exists but cannot be read fails the load (its content is unknown, not absent),
// whether the kernel or an Env says so.
TEST(LoadedLogTest, BrokerIdentityFromTheLogDirsMetaProperties) {
  test::TempDir log_dir("meta");
  const std::string partition = log_dir.path() + "/foo-0";
  test::CopyWritable(std::string(KLF_FIXTURES_DIR) + "/kafka-oracle/replicas/aborted-to-committed/broker1/foo-0",
                     partition);
  const std::string meta = log_dir.path() + "/meta.properties";
  auto open = [&](LoadedLog* log, std::string* error, bool* unreadable, Env* env = nullptr) {
    LoadOptions options;
    options.env = env;
    CollectingSink sink;
    return LoadedLog::Open(partition, options, log, &sink, error, unreadable);
  };
  LoadedLog log;
  std::string error;
  bool unreadable = false;
  ASSERT_TRUE(open(&log, &error, &unreadable)) << error;
  EXPECT_FALSE(log.node_id.has_value());  // no meta.properties: no identity, and no failure

  test::WriteAll(meta, "version=1\ncluster.id=cluster-a\nnode.id=7\n");
  ASSERT_TRUE(open(&log, &error, &unreadable)) << error;
  EXPECT_EQ(log.node_id, 7);
  EXPECT_EQ(log.cluster_id, "cluster-a");
  ASSERT_TRUE(open(&log, &error, &unreadable)) << error;  // kept: the same answer
  EXPECT_EQ(log.node_id, 7);

  test::WriteAll(meta, "version=1\ncluster.id=cluster-b\nnode.id=12\n");  // rewritten: read again
  ASSERT_TRUE(open(&log, &error, &unreadable)) << error;
  EXPECT_EQ(log.node_id, 12);
  EXPECT_EQ(log.cluster_id, "cluster-b");

  FaultInjectionEnv faults(Env::Default());  // an Env's faults are its own: nothing kept answers for it
  faults.FailOpen("meta.properties");
  EXPECT_FALSE(open(&log, &error, &unreadable, &faults));
  EXPECT_NE(error.find("meta.properties"), std::string::npos) << error;
  EXPECT_TRUE(unreadable);

  fs::remove(meta);
  fs::create_directory(meta);  // there, and not a file that can be read
  unreadable = false;
  EXPECT_FALSE(open(&log, &error, &unreadable));
  EXPECT_NE(error.find(meta), std::string::npos) << error;
  EXPECT_TRUE(unreadable);
}

TEST(CoordinationOffsetsTest, CheckpointOutsideTheLogIsResetToTheLogStartAsKafkaDoes) {
  // No checkpoint: the log start offset (Kafka's firstDirtyOffset); no open transaction: the log end.
  CoordinationOffsets c = CoordinationOffsetsOf(10, 100, std::nullopt, std::nullopt);
  EXPECT_EQ(c.mcco, 10);
  EXPECT_EQ(c.mxfo, 100);
  // Inside [log start, log end]: the checkpoint; an open transaction bounds MXFO.
  c = CoordinationOffsetsOf(10, 100, 60, 42);
  EXPECT_EQ(c.mcco, 60);
  EXPECT_EQ(c.mxfo, 42);
  // Below the log start or past the log end: reset to the log start (cleanableOffsets).
  EXPECT_EQ(CoordinationOffsetsOf(10, 100, 5, std::nullopt).mcco, 10);
  EXPECT_EQ(CoordinationOffsetsOf(10, 100, 500, std::nullopt).mcco, 10);
  // A first unstable offset is never reported past the log end.
  EXPECT_EQ(CoordinationOffsetsOf(0, 100, std::nullopt, 150).mxfo, 100);
}

}  // namespace
}  // namespace klf
