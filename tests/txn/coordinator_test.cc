// txn/coordinator.h against Kafka's own bytes and answers: kafka4/txn-state holds a __transaction_state
// partition written with TransactionLog's serializers, and truth/records.json every record as Kafka's
// JSON converters print it; kafka4/tv2-txn is a data partition of the same (fixture) cluster whose
// transaction of producer 4000 at epoch 7 is open.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/test_files.h"
#include "txn/coordinator.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kTxnState = fs::path(KLF_FIXTURES_DIR) / "kafka4" / "txn-state";

CoordinatorLog Load() {
  CoordinatorLog log;
  CollectingSink sink;
  std::string error;
  EXPECT_TRUE(LoadCoordinatorLog({(kTxnState / "written" / "__transaction_state-0").string()}, &log, &sink, &error))
      << error;
  EXPECT_EQ(sink.ErrorCount(), 0u);
  return log;
}

TEST(CoordinatorLogTest, EveryRecordAsKafkasJsonConverterPrintsIt) {
  const CoordinatorLog log = Load();
  std::ifstream in(kTxnState / "truth" / "records.json");
  const json truth = json::parse(in);
  std::map<int64_t, const CoordinatorRecord*> by_offset;
  std::map<int64_t, std::string> id_of;
  for (const auto& [id, h] : log.ids)
    for (const CoordinatorRecord& r : h.records) {
      by_offset[r.offset] = &r;
      id_of[r.offset] = id;
    }
  ASSERT_EQ(by_offset.size(), truth.size());
  for (const json& t : truth) {
    const int64_t offset = t["offset"].get<int64_t>();
    SCOPED_TRACE("offset " + std::to_string(offset));
    ASSERT_TRUE(by_offset.count(offset));
    const CoordinatorRecord& r = *by_offset[offset];
    EXPECT_EQ(id_of[offset], t["key"]["transactionalId"].get<std::string>());
    EXPECT_EQ(r.timestamp, t["timestamp"].get<int64_t>());
    if (t["value"].is_null()) {
      EXPECT_TRUE(r.tombstone);
      continue;
    }
    const json& v = t["value"];
    EXPECT_FALSE(r.tombstone);
    EXPECT_EQ(r.state, t["state"].get<std::string>());
    EXPECT_EQ(r.producer_id, v["producerId"].get<int64_t>());
    EXPECT_EQ(r.producer_epoch, v["producerEpoch"].get<int>());
    EXPECT_EQ(r.timeout_ms, v["transactionTimeoutMs"].get<int>());
    EXPECT_EQ(r.last_update_ms, v["transactionLastUpdateTimestampMs"].get<int64_t>());
    std::vector<std::string> parts;
    if (v["transactionPartitions"].is_array())
      for (const json& tp : v["transactionPartitions"])
        for (const json& p : tp["partitionIds"])
          parts.push_back(tp["topic"].get<std::string>() + "-" + std::to_string(p.get<int>()));
    EXPECT_EQ(r.partitions, parts);
    if (v.contains("nextProducerId")) {
      EXPECT_EQ(r.next_producer_id, v["nextProducerId"].get<int64_t>());
    }
  }
}

TEST(CoordinatorViewTest, TransactionVersion2DecisionsAreCertain) {
  const CoordinatorLog log = Load();
  // app-tv2: data at epoch 0 on payments-0, PrepareCommit at epoch 1.
  CoordinatorView v = ViewOfTransaction(log, 1000, 0, "payments-0", ClusterMatch::kProven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kCommitted);
  EXPECT_TRUE(v.certain);
  EXPECT_EQ(v.transactional_id, "app-tv2");
  // The next transaction: data at epoch 1 on tv2-txn-0, PrepareAbort at epoch 2.
  v = ViewOfTransaction(log, 1000, 1, "tv2-txn-0", ClusterMatch::kProven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kAborted);
  EXPECT_TRUE(v.certain);
  // Data at epoch 1 on payments-0: the epoch-1 transaction did not list it (the PrepareCommit at epoch 1
  // closed the epoch-0 transaction).
  v = ViewOfTransaction(log, 1000, 1, "payments-0", ClusterMatch::kProven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kUndetermined);
  EXPECT_FALSE(v.certain);
  // A fence (7 -> 8) then the bump (8 -> 9) before a time-out abort: still that transaction's.
  v = ViewOfTransaction(log, 4000, 7, "tv2-txn-0", ClusterMatch::kProven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kAborted);
  EXPECT_TRUE(v.certain);
  ASSERT_EQ(v.evidence.size(), 3u);
  EXPECT_EQ(v.evidence[1].state, "PrepareAbort");
  EXPECT_EQ(v.evidence[2].state, "CompleteAbort");
  // Epoch exhaustion: Ongoing at 32766, PrepareCommit at 32767, CompleteCommit under the next id.
  v = ViewOfTransaction(log, 2000, 32766, "tv2-txn-0", ClusterMatch::kProven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kCommitted);
  EXPECT_TRUE(v.certain);
}

TEST(CoordinatorViewTest, TransactionVersion0DecisionsAreOnlySuspected) {
  const CoordinatorLog log = Load();
  // app-tv0 keeps epoch 5 for every transaction: the decision cannot be tied to one transaction.
  CoordinatorView v = ViewOfTransaction(log, 3000, 5, "orders-0", ClusterMatch::kProven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kCommitted);
  EXPECT_FALSE(v.certain);
  v = ViewOfTransaction(log, 3000, 5, "payments-0", ClusterMatch::kProven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kAborted);
  EXPECT_FALSE(v.certain);
}

// Copies of one partition from two brokers, each lacking segments the other holds (one's cleaner or
// retention went further), are read together: every record once, as the whole partition holds them.
TEST(CoordinatorLogTest, CopiesFromSeveralBrokersAreReadTogetherEachOffsetOnce) {
  const CoordinatorLog whole = Load();
  test::TempDir tmp("coordinator-copies");
  const std::string from = (kTxnState / "written" / "__transaction_state-0").string();
  const std::string b1 = tmp.path() + "/broker1/__transaction_state-0",
                    b2 = tmp.path() + "/broker2/__transaction_state-0";
  fs::create_directories(tmp.path() + "/broker1");
  fs::create_directories(tmp.path() + "/broker2");
  test::CopyWritable(from, b1);
  test::CopyWritable(from, b2);
  for (const auto& e : fs::directory_iterator(b2)) {
    if (e.path().filename().string().rfind("00000000000000000030.", 0) == 0) fs::remove(e.path());
  }
  for (const auto& e : fs::directory_iterator(b1)) {
    if (e.path().filename().string().rfind("00000000000000000000.", 0) == 0) fs::remove(e.path());
  }
  EXPECT_EQ(FindTransactionStateDirs({tmp.path() + "/broker1", b2}), (std::vector<std::string>{b1, b2}));
  CoordinatorLog log;
  CollectingSink sink;
  std::string error;
  ASSERT_TRUE(LoadCoordinatorLog({b1, b2}, &log, &sink, &error)) << error;
  EXPECT_EQ(sink.ErrorCount(), 0u);
  ASSERT_EQ(log.ids.size(), whole.ids.size());
  for (const auto& [id, h] : whole.ids) {
    ASSERT_EQ(log.ids.count(id), 1u) << id;
    const auto& got = log.ids.at(id).records;
    ASSERT_EQ(got.size(), h.records.size()) << id;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].offset, h.records[i].offset) << id;
  }
}

// Under version 0/1 the coordinator also bumps the epoch when it aborts a timed-out transaction, and the
// data at the old epoch may belong to an earlier transaction of that epoch whose records were compacted
// away (a CompleteCommit is all that is left of it): the rise alone proves nothing.
TEST(CoordinatorViewTest, AnEpochBumpWithoutTransactionVersion2IsOnlySuspected) {
  CoordinatorLog log;
  TransactionalIdHistory& h = log.ids["app-timeout"];
  h.id = "app-timeout";
  auto rec = [&](int64_t offset, int16_t epoch, const char* state, std::vector<std::string> parts) {
    CoordinatorRecord r;
    r.offset = offset;
    r.producer_id = 7000;
    r.producer_epoch = epoch;
    r.state = state;
    r.partitions = std::move(parts);
    h.records.push_back(r);
  };
  rec(10, 3, "CompleteCommit", {});
  rec(11, 3, "Ongoing", {"orders-0"});
  rec(12, 4, "PrepareAbort", {"orders-0"});
  rec(13, 4, "CompleteAbort", {});
  CoordinatorView v = ViewOfTransaction(log, 7000, 3, "orders-0", ClusterMatch::kProven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kAborted);
  EXPECT_FALSE(v.certain);
  // The same records under transaction version 2 are that transaction's alone.
  for (CoordinatorRecord& r : h.records) r.client_transaction_version = 2;
  v = ViewOfTransaction(log, 7000, 3, "orders-0", ClusterMatch::kProven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kAborted);
  EXPECT_TRUE(v.certain);
}

TEST(CoordinatorViewTest, NoRecordAndNoDecisionAreSaidSo) {
  const CoordinatorLog log = Load();
  EXPECT_EQ(ViewOfTransaction(log, 9999, 0, "orders-0", ClusterMatch::kProven).verdict, CoordinatorVerdict::kNoRecord);
  CoordinatorView v = ViewOfTransaction(log, 3000, 5, "elsewhere-0", ClusterMatch::kProven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kUndetermined);
  EXPECT_FALSE(v.why.empty());
  EXPECT_EQ(v.evidence.size(), 1u);  // the id's latest record
}

TEST(FindHangingTest, TheOpenTransactionOfTv2TxnIsTheOneTheCoordinatorAborted) {
  const CoordinatorLog log = Load();
  CollectingSink sink;
  std::vector<std::string> unreadable;
  const fs::path data = fs::path(KLF_FIXTURES_DIR) / "kafka4" / "tv2-txn" / "written" / "tv2-txn-0";
  std::vector<HangingTransaction> hanging =
      FindHangingTransactions({data.string()}, log, LoadOptions{}, &sink, &unreadable);
  ASSERT_EQ(hanging.size(), 1u);
  // Every cleaner pass's copy beside it, loaded on several threads: results in the order given, the
  // unloadable one reported in its place.
  const fs::path txn = data.parent_path().parent_path();
  const std::vector<std::string> dirs = {(txn / "written" / "tv2-txn-0").string(), (txn / "nothing-here").string(),
                                         (txn / "cleaned-pass1" / "tv2-txn-0").string(),
                                         (txn / "cleaned-pass3" / "tv2-txn-0").string()};
  CollectingSink one_sink, many_sink;
  std::vector<std::string> one_unreadable, many_unreadable;
  std::vector<HangingTransaction> one =
      FindHangingTransactions(dirs, log, LoadOptions{}, &one_sink, &one_unreadable, 1);
  std::vector<HangingTransaction> many =
      FindHangingTransactions(dirs, log, LoadOptions{}, &many_sink, &many_unreadable, 3);
  ASSERT_EQ(many.size(), one.size());
  ASSERT_GE(many.size(), 1u);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(many[i].partition_dir, one[i].partition_dir);
    EXPECT_EQ(many[i].first_offset, one[i].first_offset);
    EXPECT_EQ(many[i].coordinator.verdict, one[i].coordinator.verdict);
  }
  EXPECT_EQ(many[0].partition_dir, dirs[0]);
  EXPECT_EQ(many_unreadable, (std::vector<std::string>{dirs[1]}));
  EXPECT_EQ(many_unreadable, one_unreadable);
  ASSERT_EQ(many_sink.problems.size(), one_sink.problems.size());
  EXPECT_TRUE(unreadable.empty());
  const HangingTransaction& h = hanging[0];
  // Kafka's LogLoader (tv2-txn/truth/written.json): producer 4000 epoch 7 open from 46, LSO 46, HW 53.
  EXPECT_EQ(h.producer_id, 4000);
  EXPECT_EQ(h.producer_epoch, 7);
  EXPECT_EQ(h.first_offset, 46);
  EXPECT_EQ(h.last_stable_offset, 46);
  EXPECT_EQ(h.high_watermark, 53);
  EXPECT_TRUE(h.pins_lso);
  EXPECT_EQ(h.coordinator.verdict, CoordinatorVerdict::kAborted);
  EXPECT_EQ(h.coordinator.transactional_id, "app-fenced");
}

// Producer ids repeat across clusters: the coordinator's word is certain only for copies the files show
// to be of its cluster.
TEST(ClusterMatchTest, OneClusterOnlyWhereTheFilesShowIt) {
  CoordinatorLog log;
  log.partition_dirs = {"/capture/broker1/__transaction_state-0"};
  EXPECT_EQ(MatchCluster(log, {{"/capture/broker1/orders-0", std::nullopt}}), ClusterMatch::kProven);  // one log dir
  EXPECT_EQ(MatchCluster(log, {{"/capture/broker2/orders-0", std::nullopt}}), ClusterMatch::kUnproven);
  EXPECT_EQ(MatchCluster(log, {{"/capture/broker2/orders-0", std::nullopt}, {"/capture/broker1/orders-0/", {}}}),
            ClusterMatch::kProven);
  log.cluster_ids = {"cluster-a"};
  EXPECT_EQ(MatchCluster(log, {{"/elsewhere/orders-0", std::string("cluster-a")}}), ClusterMatch::kProven);
  EXPECT_EQ(MatchCluster(log, {{"/elsewhere/orders-0", std::string("cluster-b")}}), ClusterMatch::kForeign);
  EXPECT_EQ(MatchCluster(log, {{"/elsewhere/orders-0", std::nullopt}}), ClusterMatch::kUnproven);
  log.same_cluster_vouched = true;  // --same-cluster
  EXPECT_EQ(MatchCluster(log, {{"/elsewhere/orders-0", std::nullopt}}), ClusterMatch::kProven);
  EXPECT_EQ(MatchCluster(log, {{"/elsewhere/orders-0", std::string("cluster-b")}}), ClusterMatch::kForeign);
}

TEST(ClusterMatchTest, AnUnprovenClusterMakesADecisionSuspectedAndAForeignOneSaysNothing) {
  const CoordinatorLog log = Load();
  CoordinatorView v = ViewOfTransaction(log, 1000, 0, "payments-0", ClusterMatch::kUnproven);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kCommitted);
  EXPECT_FALSE(v.certain);
  EXPECT_NE(v.why.find("--same-cluster"), std::string::npos) << v.why;
  v = ViewOfTransaction(log, 1000, 0, "payments-0", ClusterMatch::kForeign);
  EXPECT_EQ(v.verdict, CoordinatorVerdict::kNoRecord);
  EXPECT_FALSE(v.certain);
  EXPECT_TRUE(v.evidence.empty());
  EXPECT_NE(v.why.find("another cluster"), std::string::npos) << v.why;
}

}  // namespace
}  // namespace klf
