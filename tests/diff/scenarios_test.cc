// klf diff on hand-built replicas of the four failure modes of scenarios.md §4 (what each broker holds
// after the lagging one came back and fetched the already-compacted leader log), each giving exactly
// its finding and no other divergence, plus truncation, lag and in-flight transactions.
//
// Each replica is written by tests/support/replica_builder.h (segment_writer's batch builders at the
// offsets a follower copies from its leader; a .txnindex as Kafka's producer-state replay builds it).
#include <gtest/gtest.h>

#include "diff/diff.h"
#include "tests/support/replica_builder.h"
#include "tests/support/replica_loading.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

using test::kTxnPid;
using test::Replica;
using test::TempDir;

using test::Divergences;
using test::LoadAll;
std::string Describe(const DiffReport& report, const std::vector<ReplicaState>& rs) {
  return test::DescribeFindings(report, rs);
}

// §4.1: K=v1 at 0, tombstone at 2. B1/B2 compacted both away; B3 kept v1 and fetched the compacted tail.
TEST(DiffScenario, LostTombstone) {
  TempDir tmp("diff-scenario");
  auto healthy = [&](const char* b) {
    return Replica(tmp.path(), b).Put(1, "other", "x").Put(3, "other", "y").Put(4, "z", "1").Write();
  };
  std::string b1 = healthy("B1"), b2 = healthy("B2");
  std::string b3 =
      Replica(tmp.path(), "B3").Put(0, "K", "v1").Put(1, "other", "x").Put(3, "other", "y").Put(4, "z", "1").Write();
  auto rs = LoadAll({b1, b2, b3});
  DiffReport report = DiffReplicas(rs);
  auto d = Divergences(report);
  ASSERT_EQ(d.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(d[0]->kind, FindingKind::kLostTombstone);
  EXPECT_EQ(d[0]->key, "K");
  EXPECT_EQ(d[0]->value, "v1");
  EXPECT_EQ(d[0]->first_offset, 0);
  EXPECT_EQ(d[0]->affected, std::vector<size_t>{2});
  EXPECT_EQ(d[0]->healthy, (std::vector<size_t>{0, 1}));
  EXPECT_NE(d[0]->evidence.find("gap 2..2"), std::string::npos) << d[0]->evidence;
  // Incident window: no replica holds the tombstone; it lies after offset 0 in B3's hole 2..2. Without
  // delete.retention.ms the window says so; with it, B3 had not fetched it until T(0) + delete.retention.ms.
  ASSERT_TRUE(d[0]->incident) << Describe(report, rs);
  ASSERT_EQ(d[0]->incident->windows.size(), 1u);
  const IncidentWindow& w = d[0]->incident->windows[0];
  EXPECT_EQ(w.replica, 2u);
  EXPECT_EQ(w.lost, "tombstone");
  EXPECT_FALSE(w.lost_offset);
  EXPECT_EQ(w.key_offset, 0);
  EXPECT_EQ(w.lost_from, 1);
  EXPECT_EQ(w.hole_from, 2);
  EXPECT_EQ(w.hole_to, 2);
  EXPECT_EQ(w.before_offset, 1);
  EXPECT_EQ(w.after_offset, 3);
  EXPECT_FALSE(w.behind_until_at_least_ms);
  EXPECT_NE(w.sentence.find("not in the files given"), std::string::npos) << w.sentence;
  DiffOptions o;
  o.delete_retention_ms = 600000;
  o.delete_retention_from = "test";
  DiffReport with = DiffReplicas(rs, o);
  auto dw = Divergences(with);
  ASSERT_EQ(dw.size(), 1u);
  ASSERT_TRUE(dw[0]->incident);
  const IncidentWindow& ww = dw[0]->incident->windows[0];
  ASSERT_TRUE(ww.behind_until_at_least_ms);
  EXPECT_EQ(*ww.behind_until_at_least_ms, ww.key_ms + 600000);
  ASSERT_EQ(dw[0]->incident->prevention.size(), 1u);
  EXPECT_EQ(dw[0]->incident->prevention[0].setting, "delete.retention.ms");
  EXPECT_TRUE(dw[0]->incident->prevention[0].prevents);
  EXPECT_EQ(dw[0]->incident->prevention[0].at_least_ms, 600000);
}

// The tombstone is still on the healthy replicas (its horizon has not passed) but B3 skipped it.
TEST(DiffScenario, LostTombstoneStillHeldByHealthyReplica) {
  TempDir tmp("diff-scenario");
  std::string b1 = Replica(tmp.path(), "B1").Put(1, "other", "x").Put(2, "K", std::nullopt).Put(3, "z", "1").Write();
  std::string b3 = Replica(tmp.path(), "B3").Put(0, "K", "v1").Put(1, "other", "x").Put(3, "z", "1").Write();
  auto rs = LoadAll({b1, b3});
  DiffReport report = DiffReplicas(rs);
  auto d = Divergences(report);
  ASSERT_EQ(d.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(d[0]->kind, FindingKind::kLostTombstone);
  EXPECT_EQ(d[0]->first_offset, 0);
  EXPECT_EQ(d[0]->last_offset, 2);
  // Incident window: B1 holds the tombstone at 2, in B3's hole 2..2, written at B1's timestamp there.
  ASSERT_TRUE(d[0]->incident);
  const IncidentWindow& w = d[0]->incident->windows.at(0);
  EXPECT_EQ(w.replica, 1u);
  ASSERT_TRUE(w.lost_offset);
  EXPECT_EQ(*w.lost_offset, 2);
  EXPECT_EQ(w.lost_on, 0u);
  EXPECT_EQ(w.lost_ms, rs[0].records[size_t(rs[0].FindRecord(2))].timestamp);
  EXPECT_EQ(w.hole_from, 2);
  EXPECT_EQ(w.hole_to, 2);
  EXPECT_FALSE(w.hole_in_batch);
  EXPECT_NE(w.sentence.find("holds at offset 2"), std::string::npos) << w.sentence;
  EXPECT_EQ(d[0]->affected, std::vector<size_t>{1});
}

// §4.2: poison (T1) at 0, ABORT at 1, T2 good at 2 + COMMIT at 3. The ABORT is still on the healthy
// replicas here (explicit evidence).
TEST(DiffScenario, LostAbortWithMarkerStillOnHealthyReplicas) {
  TempDir tmp("diff-scenario");
  std::string b1 = Replica(tmp.path(), "B1")
                       .Marker(1, ControlType::kAbort)
                       .Txn(2, "good", "data")
                       .Marker(3, ControlType::kCommit)
                       .Write();
  std::string b3 = Replica(tmp.path(), "B3")
                       .Txn(0, "poison", "SHOULD_NOT_SEE_THIS")
                       .Txn(2, "good", "data")
                       .Marker(3, ControlType::kCommit)
                       .Write();
  auto rs = LoadAll({b1, b3});
  DiffReport report = DiffReplicas(rs);
  auto d = Divergences(report);
  ASSERT_EQ(d.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(d[0]->kind, FindingKind::kLostAbort);
  EXPECT_EQ(d[0]->producer_id, kTxnPid);
  EXPECT_EQ(d[0]->first_offset, 0);
  EXPECT_EQ(d[0]->affected, std::vector<size_t>{1});
  EXPECT_NE(d[0]->evidence.find("ABORT"), std::string::npos);
}

// §4.3: T1 k1=a at 0 + COMMIT at 1, k1 overwritten at 2, T2 k2=c at 3 + ABORT at 4. Healthy replicas
// removed T1 (superseded) and its COMMIT; B3 held T1 open and the ABORT swallowed it. Latent: k1's latest
// value agrees everywhere.
TEST(DiffScenario, LostCommitLatent) {
  TempDir tmp("diff-scenario");
  std::string b1 = Replica(tmp.path(), "B1").Put(2, "k1", "b").Txn(3, "k2", "c").Marker(4, ControlType::kAbort).Write();
  std::string b2 = Replica(tmp.path(), "B2").Put(2, "k1", "b").Txn(3, "k2", "c").Marker(4, ControlType::kAbort).Write();
  std::string b3 = Replica(tmp.path(), "B3")
                       .Txn(0, "k1", "a")
                       .Put(2, "k1", "b")
                       .Txn(3, "k2", "c")
                       .Marker(4, ControlType::kAbort)
                       .Write();
  auto rs = LoadAll({b1, b2, b3});
  // B3's aborted range starts at T1, the healthy ones' at T2.
  ASSERT_EQ(rs[2].aborted_txns.size(), 1u);
  EXPECT_EQ(rs[2].aborted_txns[0].first_offset, 0);
  EXPECT_EQ(rs[0].aborted_txns[0].first_offset, 3);
  DiffReport report = DiffReplicas(rs);
  auto d = Divergences(report);
  ASSERT_EQ(d.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(d[0]->kind, FindingKind::kLostCommit);
  EXPECT_EQ(d[0]->first_offset, 0);
  EXPECT_EQ(d[0]->last_offset, 4);
  EXPECT_EQ(d[0]->affected, std::vector<size_t>{2});
  EXPECT_EQ(d[0]->healthy, (std::vector<size_t>{0, 1}));
  EXPECT_NE(d[0]->impact.find("latent"), std::string::npos) << d[0]->impact;
  // T1's records are superseded on the healthy replicas: that proves nothing about its outcome (an ABORT
  // leaves the same files), so only the merge is proven (the healthy .txnindex starts at T2).
  EXPECT_EQ(d[0]->certainty, FindingCertainty::kSuspected);
  EXPECT_EQ(d[0]->outcome, TxnOutcome::kUnknown);
  EXPECT_EQ(d[0]->records_at_stake, std::vector<int64_t>{0});
  EXPECT_FALSE(d[0]->settle_with.empty());
}

// The COMMIT is still on the healthy replica: B3 lacks it and its later ABORT hides committed data.
TEST(DiffScenario, LostCommitWithMarkerStillOnHealthyReplica) {
  TempDir tmp("diff-scenario");
  std::string b1 = Replica(tmp.path(), "B1")
                       .Txn(0, "k1", "a")
                       .Marker(1, ControlType::kCommit)
                       .Txn(3, "k2", "c")
                       .Marker(4, ControlType::kAbort)
                       .Write();
  std::string b3 = Replica(tmp.path(), "B3").Txn(0, "k1", "a").Txn(3, "k2", "c").Marker(4, ControlType::kAbort).Write();
  auto rs = LoadAll({b1, b3});
  DiffReport report = DiffReplicas(rs);
  auto d = Divergences(report);
  ASSERT_EQ(d.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(d[0]->kind, FindingKind::kLostCommit);
  EXPECT_EQ(d[0]->key, "k1");
  EXPECT_EQ(d[0]->affected, std::vector<size_t>{1});
  EXPECT_EQ(d[0]->impact.find("latent"), std::string::npos) << d[0]->impact;
}

// §4.4: T1 k1=a at 0 + COMMIT at 1, then much traffic. Healthy replicas removed T1, the COMMIT and its
// empty remnant; B3 holds T1 open: its LSO is pinned at 0, which explains every later key it hides.
TEST(DiffScenario, HangingTransactionExplainsTheKeysItHides) {
  TempDir tmp("diff-scenario");
  auto tail = [](Replica& r) -> Replica& { return r.Put(2, "k1", "b").Put(3, "x", "1").Put(4, "y", "2"); };
  Replica r1(tmp.path(), "B1"), r2(tmp.path(), "B2"), r3(tmp.path(), "B3");
  std::string b1 = tail(r1).Write(), b2 = tail(r2).Write();
  std::string b3 = tail(r3.Txn(0, "k1", "a")).Write();
  auto rs = LoadAll({b1, b2, b3});
  EXPECT_EQ(rs[2].last_stable_offset, 0);
  EXPECT_EQ(rs[0].last_stable_offset, 5);
  DiffReport report = DiffReplicas(rs);
  auto d = Divergences(report);
  ASSERT_EQ(d.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(d[0]->kind, FindingKind::kHangingTransaction);
  EXPECT_EQ(d[0]->producer_id, kTxnPid);
  EXPECT_EQ(d[0]->first_offset, 0);
  EXPECT_EQ(d[0]->affected, std::vector<size_t>{2});
  EXPECT_EQ(d[0]->healthy, (std::vector<size_t>{0, 1}));
}

// A transaction still open on every replica (in flight) and a follower that has not fetched the
// marker yet are normal.
TEST(DiffScenario, InFlightTransactionAndLaggingMarkerAreNotDivergence) {
  TempDir tmp("diff-scenario");
  std::string b1 = Replica(tmp.path(), "B1").Put(0, "a", "1").Txn(1, "k", "v").Marker(2, ControlType::kCommit).Write();
  std::string b2 = Replica(tmp.path(), "B2").Put(0, "a", "1").Txn(1, "k", "v").Write();
  std::string b3 = Replica(tmp.path(), "B3").Put(0, "a", "1").Txn(1, "k", "v").Write();
  auto rs = LoadAll({b1, b2, b3});
  DiffReport report = DiffReplicas(rs);
  EXPECT_FALSE(report.HasDivergence()) << Describe(report, rs);
  ASSERT_EQ(report.findings.size(), 2u) << Describe(report, rs);
  for (const Finding& f : report.findings) {
    EXPECT_EQ(f.kind, FindingKind::kMissingRange);
    EXPECT_EQ(f.first_offset, 2);
  }
}

// An unclean leader election: B2 was truncated and took different records at offsets 2..3.
TEST(DiffScenario, DivergentRecordsAfterUncleanElection) {
  TempDir tmp("diff-scenario");
  auto common = [](Replica& r) -> Replica& { return r.Put(0, "a", "1").Put(1, "b", "2"); };
  Replica r1(tmp.path(), "B1"), r2(tmp.path(), "B2"), r3(tmp.path(), "B3");
  std::string b1 = common(r1).Put(2, "c", "3").Put(3, "d", "4").Write();
  std::string b2 = common(r2).Put(2, "c", "X").Put(3, "e", "Y").Write();
  std::string b3 = common(r3).Put(2, "c", "3").Put(3, "d", "4").Write();
  auto rs = LoadAll({b1, b2, b3});
  DiffReport report = DiffReplicas(rs);
  auto d = Divergences(report);
  ASSERT_EQ(d.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(d[0]->kind, FindingKind::kDivergentRecord);
  EXPECT_EQ(d[0]->first_offset, 2);
  EXPECT_EQ(d[0]->last_offset, 3);
  EXPECT_EQ(d[0]->affected, std::vector<size_t>{1});
  // Incident window: raw facts only (the last offset held alike, the leader epochs), no prevention.
  ASSERT_TRUE(d[0]->incident);
  const IncidentWindow& w = d[0]->incident->windows.at(0);
  EXPECT_EQ(w.replica, 1u);
  EXPECT_EQ(w.lost_from, 2);
  EXPECT_EQ(w.lost_to, 3);
  EXPECT_EQ(w.agreed_offset, 1);
  EXPECT_EQ(w.epoch_first, 0);
  EXPECT_EQ(w.healthy_epoch_first, 0);
  EXPECT_NE(w.sentence.find("same leader epoch"), std::string::npos) << w.sentence;
  EXPECT_TRUE(d[0]->incident->prevention.empty());
}

}  // namespace
}  // namespace klf

namespace klf {
namespace {

// A replica that lacks the value written after a key's deletion serves the key as deleted.
TEST(DiffScenario, MissingNewerValueAfterDeletionIsDivergent) {
  TempDir tmp("diff-scenario");
  std::string b1 = Replica(tmp.path(), "B1").Put(1, "K", std::nullopt).Put(3, "K", "v2").Put(4, "z", "1").Write();
  std::string b2 = Replica(tmp.path(), "B2").Put(1, "K", std::nullopt).Put(4, "z", "1").Write();
  auto rs = LoadAll({b1, b2});
  DiffReport report = DiffReplicas(rs);
  auto d = Divergences(report);
  ASSERT_EQ(d.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(d[0]->kind, FindingKind::kDivergentRecord);
  EXPECT_EQ(d[0]->key, "K");
  EXPECT_EQ(d[0]->first_offset, 1);
  EXPECT_EQ(d[0]->last_offset, 3);
  EXPECT_EQ(d[0]->affected, std::vector<size_t>{1});
  // Incident window: the newer value at 3 that B1 holds, in B2's hole 2..3; no cleaner setting explains it.
  ASSERT_TRUE(d[0]->incident);
  const IncidentWindow& w = d[0]->incident->windows.at(0);
  EXPECT_EQ(w.lost, "newer value");
  ASSERT_TRUE(w.lost_offset);
  EXPECT_EQ(*w.lost_offset, 3);
  EXPECT_EQ(w.hole_from, 2);
  EXPECT_EQ(w.hole_to, 3);
  EXPECT_FALSE(w.behind_until_at_least_ms);
  EXPECT_TRUE(d[0]->incident->prevention.empty());
}

}  // namespace
}  // namespace klf

namespace klf {
namespace {

// The follower received the COMMIT only as the cleaner's emptied batch: it closes nothing there, so the
// transaction hangs although the follower holds a batch at the marker's offset.
TEST(DiffScenario, HangingBehindAnEmptiedCommit) {
  TempDir tmp("diff-scenario");
  std::string b1 = Replica(tmp.path(), "B1").EmptiedMarker(1).Put(2, "k1", "b").Write();
  std::string b3 = Replica(tmp.path(), "B3").Txn(0, "k1", "a").EmptiedMarker(1).Put(2, "k1", "b").Write();
  auto rs = LoadAll({b1, b3});
  EXPECT_EQ(rs[1].last_stable_offset, 0);
  DiffReport report = DiffReplicas(rs);
  auto d = Divergences(report);
  ASSERT_EQ(d.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(d[0]->kind, FindingKind::kHangingTransaction);
  EXPECT_EQ(d[0]->affected, std::vector<size_t>{1});
  EXPECT_NE(d[0]->evidence.find("emptied"), std::string::npos) << d[0]->evidence;
}

}  // namespace
}  // namespace klf
