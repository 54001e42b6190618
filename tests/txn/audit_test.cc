// txn/audit.h on hand-built copies of one partition (foo-0) against a coordinator log made up for the
// rules' sake: producer 7's transaction at epoch 0 was decided by a transaction-version-2 PrepareCommit
// at epoch 1, so its COMMIT markers carry epoch 1. (tests/e2e/txn_test.py holds the audit against the
// records and markers Kafka wrote.)
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/support/coordinator_log.h"
#include "tests/support/replica_builder.h"
#include "tests/support/test_files.h"
#include "txn/audit.h"

namespace klf {
namespace {

using test::kTxnPid;
using test::Replica;
using test::TempDir;

CoordinatorLog Decided(const char* state, int8_t tv) { return test::OneDecision(kTxnPid, 0, state, tv); }

const AuditFinding* Of(const AuditReport& r, const std::string& dir) {
  auto it =
      std::find_if(r.findings.begin(), r.findings.end(), [&](const AuditFinding& f) { return f.partition_dir == dir; });
  return it == r.findings.end() ? nullptr : &*it;
}

TEST(AuditTest, EachCopyIsJudgedByWhatItHolds) {
  TempDir tmp("audit-test");
  // The leader: the data at epoch 0, the COMMIT at epoch 1, the next transaction's data at epoch 1.
  std::string leader = Replica(tmp.path(), "b1")
                           .Txn(10, "k", "v")
                           .Marker(11, ControlType::kCommit, 0, kTxnPid, 1)
                           .Txn(12, "k", "w", kTxnPid, 1)
                           .Write();
  // Fetched past the marker without it (the leader's cleaner had removed it): lost, certain.
  std::string past = Replica(tmp.path(), "b2").Txn(10, "k", "v").Txn(12, "k", "w", kTxnPid, 1).Write();
  // Stopped right after the data: its log ends where the marker is, so it may not have fetched it yet.
  std::string lagging = Replica(tmp.path(), "b3").Txn(10, "k", "v").Write();
  // Its log reaches past the leader's marker at 11, which it lacks: lost, certain.
  std::string beyond = Replica(tmp.path(), "b4").Txn(10, "k", "v").Put(12, "a", "1").Write();
  // An ABORT at the decision's epoch: contradicts the coordinator.
  std::string wrong =
      Replica(tmp.path(), "b5").Txn(10, "k", "v").Marker(11, ControlType::kAbort, 0, kTxnPid, 1).Write();
  // Nothing of the transaction left (the cleaner removed data and marker): no trace, no finding.
  std::string clean = Replica(tmp.path(), "b6").Put(12, "a", "1").Write();

  CollectingSink sink;
  AuditReport r = AuditTransactions(Decided("PrepareCommit", 2), {leader, past, lagging, beyond, wrong, clean},
                                    LoadOptions{}, &sink);
  EXPECT_EQ(r.decisions, 1);
  EXPECT_EQ(r.version2_decisions, 1);
  EXPECT_EQ(r.partition_copies, 6);
  EXPECT_EQ(r.markers_checked, 2);
  EXPECT_EQ(r.markers_agree, 1);
  EXPECT_EQ(r.findings.size(), 4u);
  EXPECT_EQ(Of(r, leader), nullptr);
  EXPECT_EQ(Of(r, clean), nullptr);
  const AuditFinding* f = Of(r, past);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind, AuditKind::kMissingMarker);
  EXPECT_TRUE(f->certain) << f->why;
  EXPECT_EQ(f->data_epoch, 0);
  EXPECT_EQ(f->marker_epoch, 1);
  f = Of(r, lagging);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind, AuditKind::kMissingMarker);
  EXPECT_FALSE(f->certain) << f->why;
  f = Of(r, beyond);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->certain) << f->why;
  EXPECT_NE(f->why.find("offset 11"), std::string::npos) << f->why;
  f = Of(r, wrong);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind, AuditKind::kContradicts);
  EXPECT_TRUE(f->certain);
  ASSERT_EQ(f->facts.size(), 1u);
  EXPECT_NE(f->facts[0].fact.find("ABORT marker of producer 7 epoch 1 at offset 11"), std::string::npos);

  // Loaded on several threads (a missing copy among them): the same report, the same problems, in order.
  const std::vector<std::string> dirs = {leader, past, tmp.path() + "/missing/foo-0", lagging, beyond, wrong, clean};
  CollectingSink one_sink, many_sink;
  AuditReport one = AuditTransactions(Decided("PrepareCommit", 2), dirs, LoadOptions{}, &one_sink, 1);
  AuditReport many = AuditTransactions(Decided("PrepareCommit", 2), dirs, LoadOptions{}, &many_sink, 4);
  EXPECT_EQ(many.partition_copies, 6);
  EXPECT_EQ(many.unreadable, (std::vector<std::string>{tmp.path() + "/missing/foo-0"}));
  EXPECT_EQ(many.unreadable, one.unreadable);
  EXPECT_EQ(many.markers_checked, one.markers_checked);
  ASSERT_EQ(many.findings.size(), one.findings.size());
  for (size_t i = 0; i < one.findings.size(); ++i) {
    EXPECT_EQ(many.findings[i].partition_dir, one.findings[i].partition_dir);
    EXPECT_EQ(many.findings[i].kind, one.findings[i].kind);
    EXPECT_EQ(many.findings[i].why, one.findings[i].why);
  }
  ASSERT_EQ(many_sink.problems.size(), one_sink.problems.size());
  for (size_t i = 0; i < one_sink.problems.size(); ++i)
    EXPECT_EQ(many_sink.problems[i].message, one_sink.problems[i].message);
}

// Under transaction version 0/1 the epoch does not tie a decision to one marker: counted, not judged.
TEST(AuditTest, Version1DecisionsAreNotJudged) {
  TempDir tmp("audit-test");
  std::string wrong =
      Replica(tmp.path(), "b1").Txn(10, "k", "v").Marker(11, ControlType::kAbort, 0, kTxnPid, 1).Write();
  CollectingSink sink;
  AuditReport r = AuditTransactions(Decided("PrepareCommit", 1), {wrong}, LoadOptions{}, &sink);
  EXPECT_EQ(r.decisions, 1);
  EXPECT_EQ(r.unjudged_decisions, 1);
  EXPECT_EQ(r.markers_checked, 0);
  EXPECT_TRUE(r.findings.empty());
}

// A .txnindex that closes the data with an ABORT the coordinator did not decide: the copy applied
// another marker after the data, so it lost this decision's COMMIT (certain), and serves the
// committed data as aborted.
TEST(AuditTest, TxnIndexOverCommittedDataProvesTheLoss) {
  TempDir tmp("audit-test");
  // The copy's own ABORT at epoch 0 (a version-1 style marker) builds the .txnindex entry 10..11.
  std::string copy = Replica(tmp.path(), "b1").Txn(10, "k", "v").Marker(11, ControlType::kAbort).Write();
  CollectingSink sink;
  AuditReport r = AuditTransactions(Decided("PrepareCommit", 2), {copy}, LoadOptions{}, &sink);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, AuditKind::kMissingMarker);
  EXPECT_TRUE(r.findings[0].certain);
  ASSERT_EQ(r.findings[0].facts.size(), 2u);
  EXPECT_NE(r.findings[0].facts[1].fact.find(".txnindex"), std::string::npos);
  EXPECT_NE(r.findings[0].why.find("serves this committed data as aborted"), std::string::npos) << r.findings[0].why;
}

// Producer ids repeat across clusters: with nothing to show that the coordinator's log and a copy are of
// one cluster (no meta.properties, not in one log dir, not vouched for), a finding is suspected at most.
TEST(AuditTest, ACopyNotShownToBeOfTheCoordinatorsClusterIsOnlySuspected) {
  TempDir tmp("audit-test");
  std::string wrong =
      Replica(tmp.path(), "b5").Txn(10, "k", "v").Marker(11, ControlType::kAbort, 0, kTxnPid, 1).Write();
  CoordinatorLog log = test::OneDecision(kTxnPid, 0, "PrepareCommit", 2);
  log.same_cluster_vouched = false;
  CollectingSink sink;
  AuditReport r = AuditTransactions(log, {wrong}, LoadOptions{}, &sink);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, AuditKind::kContradicts);
  EXPECT_FALSE(r.findings[0].certain);
  EXPECT_NE(r.findings[0].why.find("--same-cluster"), std::string::npos) << r.findings[0].why;
  log.same_cluster_vouched = true;
  r = AuditTransactions(log, {wrong}, LoadOptions{}, &sink);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_TRUE(r.findings[0].certain);
}

}  // namespace
}  // namespace klf
