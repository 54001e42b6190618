// klf repair and klf lso as libraries:
//  * Kafka's aborted-to-committed replica set (bytes written by Kafka's code, truth.json): the plan is one
//    ABORT of producer 2000 at the offset Kafka wrote it (44); the repaired copy has Kafka's healthy
//    brokers' LSO, compacted key->value view and no divergence left, and its .txnindex the aborted
//    transaction.
//  * Hand-built replicas for the choices that the scenarios do not exercise: a window with no free offset
//    (the poison is removed instead), a hanging transaction whose COMMIT the target holds only as the
//    cleaner's empty remnant (replaced by the full marker at that offset), a lost tombstone still held by a
//    healthy replica (its batch copied), and the LSO explanation for them.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "diff/diff.h"
#include "diff/lso.h"
#include "repair/repair.h"
#include "segment_reader/file.h"
#include "tests/support/fault_injection_env.h"
#include "verify/verify.h"
#include "tests/support/replica_builder.h"
#include "tests/support/coordinator_log.h"
#include "tests/support/replica_loading.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using test::kTxnPid;
using test::OneDecision;
using test::Replica;
using test::TempDir;

ReplicaState Load(const std::string& dir) { return test::LoadOne(dir); }

// Repairs `target` against `healthy` into `out`; expects the copy to verify without errors or warnings and
// to leave no divergence. Returns the loaded copy.
ReplicaState RepairAndCheck(const std::vector<std::string>& healthy, const std::string& target, const std::string& out,
                            RepairPlan* plan_out = nullptr, std::vector<RepairAssumption> assume = {}) {
  RepairOptions options;
  options.assumptions = std::move(assume);
  RepairPlan plan;
  std::string error;
  EXPECT_TRUE(PlanRepair(healthy, target, options, &plan, &error)) << error;
  RepairResult result;
  EXPECT_TRUE(WriteRepairedCopy(Env::Default(), plan, out, options, &result, &error)) << error;
  for (const Finding& f : result.remaining) ADD_FAILURE() << "still divergent: " << f.evidence;
  CollectingSink sink;
  VerifyStats st = VerifyPath(result.out_partition_dir, {}, &sink);
  EXPECT_EQ(st.errors, 0u);
  EXPECT_EQ(st.warnings, 0u);
  for (const Problem& p : sink.problems) {
    if (p.severity != Severity::kInfo) ADD_FAILURE() << p.file << ":" << p.position << " " << p.message;
  }
  if (plan_out) *plan_out = plan;
  return Load(result.out_partition_dir);
}

std::string Fixtures() { return KLF_FIXTURES_DIR; }

TEST(Repair, KafkasAbortedToCommittedGetsItsAbortBack) {
  TempDir tmp("repair-test");
  std::string src = Fixtures() + "/kafka-oracle/replicas/aborted-to-committed";
  fs::copy(src, tmp.path() + "/in", fs::copy_options::recursive);
  std::string in = tmp.path() + "/in";
  std::ifstream tf(in + "/truth.json");
  nlohmann::json truth = nlohmann::json::parse(tf);
  RepairPlan plan;
  ReplicaState fixed =
      RepairAndCheck({in + "/broker1/foo-0", in + "/broker3/foo-0"}, in + "/broker2/foo-0", tmp.path() + "/out", &plan);
  ASSERT_EQ(plan.actions.size(), 1u);
  const RepairAction& a = plan.actions[0];
  EXPECT_EQ(a.kind, RepairActionKind::kInsertMarker);
  EXPECT_EQ(a.marker_type, ControlType::kAbort);
  EXPECT_EQ(a.offset, truth["keyOffsets"]["T1 ABORT"].get<int64_t>());  // where Kafka's leader wrote it
  EXPECT_EQ(a.producer_id, 2000);
  EXPECT_EQ(a.producer_epoch, 0);
  EXPECT_EQ(a.coordinator_epoch, 0);

  const nlohmann::json& b1 = truth["brokers"]["broker1"];
  EXPECT_EQ(fixed.last_stable_offset, b1["lastStableOffset"].get<int64_t>());
  EXPECT_EQ(fixed.log_end_offset, b1["logEndOffset"].get<int64_t>());
  EXPECT_TRUE(fixed.open_txns.empty());
  // Kafka's final key->value map of the healthy broker.
  std::map<std::string, std::string> got;
  for (const auto& [k, ks] : fixed.key_view) {
    if (ks.tombstone) continue;
    auto rb = ReadRecordBytes(fixed, ks.offset);
    ASSERT_TRUE(rb && rb->key && rb->value);
    got[*rb->key] = *rb->value;
  }
  std::map<std::string, std::string> want = b1["finalKeyValues"].get<std::map<std::string, std::string>>();
  EXPECT_EQ(got, want);
  // Every record Kafka's healthy broker delivers to read_committed is delivered by the copy.
  for (const auto& r : b1["readCommitted"]) {
    int64_t i = fixed.FindRecord(r["offset"].get<int64_t>());
    ASSERT_GE(i, 0) << r.dump();
    EXPECT_TRUE(fixed.records[i].read_committed) << r.dump();
  }
  int64_t poison = truth["keyOffsets"]["poison (T1 data)"].get<int64_t>();
  ASSERT_GE(fixed.FindRecord(poison), 0);
  EXPECT_FALSE(fixed.records[fixed.FindRecord(poison)].read_committed);
  // The .txnindex entry Kafka's replay appends for the aborted transaction.
  bool found = false;
  for (const AbortedTxn& t : fixed.aborted_txns)
    found = found || (t.producer_id == 2000 && t.first_offset == poison && t.last_offset == a.offset);
  EXPECT_TRUE(found);
}

// Replicas b1, b2 (healthy) and b3 (the target) under `root`: the target merged T1 (poison at 10) into
// T2 (12, COMMIT 13). Offset 11 is held by the healthy replicas with another record, so no marker fits
// between 10 and 12.
struct PoisonMerged {
  std::string target, h1, h2;
};
PoisonMerged PoisonMergedIntoTheCommit(const std::string& root) {
  PoisonMerged r;
  r.target =
      Replica(root, "b3").Txn(10, "poison", "x").Txn(12, "good", "data").Marker(13, ControlType::kCommit, 3).Write();
  for (std::string* h : {&r.h1, &r.h2}) {
    *h = Replica(root, h == &r.h1 ? "b1" : "b2")
             .Put(11, "other", "1")
             .Txn(12, "good", "data")
             .Marker(13, ControlType::kCommit, 3)
             .Write();
  }
  return r;
}

TEST(Repair, NoFreeOffsetForTheAbortRemovesThePoison) {
  TempDir tmp("repair-test");
  const PoisonMerged r = PoisonMergedIntoTheCommit(tmp.path());
  RepairPlan plan;
  ReplicaState fixed = RepairAndCheck({r.h1, r.h2}, r.target, tmp.path() + "/out", &plan);
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kRemoveRecords);
  EXPECT_EQ(plan.actions[0].removed_offsets, std::vector<int64_t>{10});
  EXPECT_LT(fixed.FindRecord(10), 0);
  ASSERT_GE(fixed.FindRecord(12), 0);
  EXPECT_TRUE(fixed.records[fixed.FindRecord(12)].read_committed);
}

TEST(Repair, HangingTransactionWithEmptyRemnantIsLeftUnlessAssumed) {
  TempDir tmp("repair-test");
  // T1 (order-1 at 10) was committed at 12 while the target was down; the leader's cleaner emptied the
  // COMMIT (T1's record superseded at 13) and the target fetched only the empty batch: it hangs.
  std::string t = Replica(tmp.path(), "b3")
                      .Txn(10, "order-1", "committed")
                      .Put(11, "a", "1")
                      .EmptiedMarker(12)
                      .Put(13, "order-1", "shipped")
                      .Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(11, "a", "1").EmptiedMarker(12).Put(13, "order-1", "shipped").Write();
  std::string h2 = Replica(tmp.path(), "b2").Put(11, "a", "1").EmptiedMarker(12).Put(13, "order-1", "shipped").Write();
  ReplicaState target = Load(t);
  ASSERT_EQ(target.last_stable_offset, 10);

  LsoReport lso = ExplainLso(target, {Load(h1), Load(h2)}, {});
  ASSERT_TRUE(lso.pinned());
  EXPECT_EQ(lso.pinned_by->producer_id, kTxnPid);
  EXPECT_EQ(lso.pinned_by->first_offset, 10);
  EXPECT_EQ(lso.abort_command,
            "kafka-transactions.sh --bootstrap-server <broker:9092> abort --topic foo --partition 0 --producer-id 7 "
            "--producer-epoch 0 --coordinator-epoch 0");
  ASSERT_EQ(lso.replicas.size(), 2u);
  EXPECT_EQ(lso.replicas[0].kind, LsoWitness::Kind::kEmptyBatch);
  ASSERT_TRUE(lso.replicas[0].first);
  EXPECT_EQ(lso.replicas[0].first->offset, 12);
  EXPECT_NE(lso.explanation.find("never"), std::string::npos);

  // The healthy replicas removed order-1 at 10 and hold a later value of the key: superseded, which an
  // ABORT leaves exactly as a COMMIT does. Nothing proves the outcome: left, nothing written for it.
  RepairPlan undecided;
  std::string error;
  ASSERT_TRUE(PlanRepair({h1, h2}, t, RepairOptions{}, &undecided, &error)) << error;
  ASSERT_EQ(undecided.actions.size(), 1u);
  EXPECT_EQ(undecided.actions[0].kind, RepairActionKind::kLeft);
  EXPECT_EQ(undecided.actions[0].certainty, Certainty::kNone);
  EXPECT_EQ(undecided.actions[0].records_at_stake, std::vector<int64_t>{10});
  EXPECT_EQ(undecided.actions[0].assume_key, "7@10");
  EXPECT_NE(undecided.actions[0].reason.find("--assume 7@10=commit"), std::string::npos);
  EXPECT_NE(undecided.actions[0].reason.find("--rebuild-from"), std::string::npos);
  EXPECT_TRUE(undecided.HasUnrepairable());
  RepairResult left;
  ASSERT_TRUE(WriteRepairedCopy(Env::Default(), undecided, tmp.path() + "/left", RepairOptions{}, &left, &error))
      << error;
  EXPECT_EQ(left.markers_inserted, 0);
  EXPECT_EQ(left.records_removed, 0);
  EXPECT_EQ(left.last_stable_offset, 10);  // still open: the copy claims nothing

  // The operator knows it committed: --assume 7@10=commit.
  RepairPlan plan;
  ReplicaState fixed = RepairAndCheck({h1, h2}, t, tmp.path() + "/out", &plan, {{kTxnPid, 10, ControlType::kCommit}});
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kInsertMarker);
  EXPECT_EQ(plan.actions[0].certainty, Certainty::kAssumed);
  EXPECT_TRUE(plan.actions[0].replaces_empty_batch);
  EXPECT_EQ(plan.actions[0].offset, 12);
  EXPECT_EQ(plan.actions[0].marker_type, ControlType::kCommit);
  EXPECT_EQ(fixed.last_stable_offset, 14);
  EXPECT_TRUE(fixed.open_txns.empty());
  EXPECT_FALSE(ExplainLso(fixed, {}, {}).pinned());
}

// Where no replica holds the marker's remnant, the marker is written at the epoch the coordinator wrote
// its markers at: under transaction version 2 the decision's, one above the data's (as Kafka writes it).
TEST(Repair, CoordinatorsDecisionGivesTheMarkersEpoch) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b3").Txn(10, "k", "v").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(11, "b", "1").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h2 = Replica(tmp.path(), "b2").Put(11, "b", "1").Put(12, "a", "1").Put(14, "k", "w").Write();
  CoordinatorLog tv2 = OneDecision(kTxnPid, 0, "PrepareAbort", 2);
  RepairOptions options;
  options.coordinator = &tv2;
  RepairPlan plan;
  std::string error;
  ASSERT_TRUE(PlanRepair({h1, h2}, t, options, &plan, &error)) << error;
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kInsertMarker);
  EXPECT_EQ(plan.actions[0].certainty, Certainty::kCertain);
  EXPECT_EQ(plan.actions[0].marker_type, ControlType::kAbort);
  EXPECT_EQ(plan.actions[0].offset, 13);
  EXPECT_EQ(plan.actions[0].producer_epoch, 1);
  RepairResult result;
  ASSERT_TRUE(WriteRepairedCopy(Env::Default(), plan, tmp.path() + "/out", options, &result, &error)) << error;
  ReplicaState fixed = Load(result.out_partition_dir);
  EXPECT_TRUE(fixed.open_txns.empty());
  EXPECT_FALSE(fixed.records[fixed.FindRecord(10)].read_committed);
}

// The same hanging transaction as above, whose outcome no replica proves: the coordinator's
// transaction-version-2 decision does (--txn-log), so repair writes that marker as a certain step. A
// version-1 record of the same transaction decides nothing (its epoch does not tie the decision to
// these records): still left.
TEST(Repair, CoordinatorsVersion2DecisionProvesTheMarker) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b3")
                      .Txn(10, "order-1", "committed")
                      .Put(11, "a", "1")
                      .EmptiedMarker(12)
                      .Put(13, "order-1", "shipped")
                      .Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(11, "a", "1").EmptiedMarker(12).Put(13, "order-1", "shipped").Write();
  std::string h2 = Replica(tmp.path(), "b2").Put(11, "a", "1").EmptiedMarker(12).Put(13, "order-1", "shipped").Write();
  const int16_t epoch = Load(t).records[Load(t).FindRecord(10)].producer_epoch;

  CoordinatorLog tv1 = OneDecision(kTxnPid, epoch, "PrepareCommit", 1);
  RepairOptions options;
  options.coordinator = &tv1;
  RepairPlan undecided;
  std::string error;
  ASSERT_TRUE(PlanRepair({h1, h2}, t, options, &undecided, &error)) << error;
  ASSERT_EQ(undecided.actions.size(), 1u);
  EXPECT_EQ(undecided.actions[0].kind, RepairActionKind::kLeft);
  EXPECT_NE(undecided.actions[0].reason.find("--txn-log"), std::string::npos) << undecided.actions[0].reason;

  CoordinatorLog tv2 = OneDecision(kTxnPid, epoch, "PrepareCommit", 2);
  options.coordinator = &tv2;
  RepairPlan plan;
  ASSERT_TRUE(PlanRepair({h1, h2}, t, options, &plan, &error)) << error;
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kInsertMarker);
  EXPECT_EQ(plan.actions[0].certainty, Certainty::kCertain);
  EXPECT_EQ(plan.actions[0].marker_type, ControlType::kCommit);
  EXPECT_EQ(plan.actions[0].offset, 12);
  EXPECT_NE(plan.actions[0].proof.find("transactional id 'app'"), std::string::npos) << plan.actions[0].proof;
  RepairResult result;
  ASSERT_TRUE(WriteRepairedCopy(Env::Default(), plan, tmp.path() + "/out", options, &result, &error)) << error;
  for (const Finding& f : result.remaining) ADD_FAILURE() << "still divergent: " << f.evidence;
  ReplicaState fixed = Load(result.out_partition_dir);
  EXPECT_TRUE(fixed.open_txns.empty());
  EXPECT_TRUE(fixed.records[fixed.FindRecord(10)].read_committed);

  // A coordinator that says ABORT for records a healthy replica proves committed proves nothing.
  CoordinatorLog wrong = OneDecision(kTxnPid, epoch, "PrepareAbort", 2);
  options.coordinator = &wrong;
  RepairPlan contradicted;
  std::string t2 = Replica(tmp.path(), "c3").Txn(10, "k", "v").Put(12, "a", "1").Write();
  std::string w1 =
      Replica(tmp.path(), "c1").Txn(10, "k", "v").Marker(11, ControlType::kCommit).Put(12, "a", "1").Write();
  ASSERT_TRUE(PlanRepair({w1}, t2, options, &contradicted, &error)) << error;
  ASSERT_EQ(contradicted.actions.size(), 1u);
  EXPECT_EQ(contradicted.actions[0].kind, RepairActionKind::kLeft);
  for (const RepairAction& a : contradicted.actions) {
    EXPECT_NE(a.certainty, Certainty::kCertain) << a.reason << a.proof;
  }
}

TEST(Repair, HangingTransactionMarkerGoesToAnOffsetNoReplicaHolds) {
  TempDir tmp("repair-test");
  // The COMMIT at 13 is gone everywhere (and T1's data on the healthy replicas); offset 11 is held by
  // the healthy replicas only (the target lacks it): the marker must not land there.
  std::string t = Replica(tmp.path(), "b3").Txn(10, "k", "v").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(11, "b", "1").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h2 = Replica(tmp.path(), "b2").Put(11, "b", "1").Put(12, "a", "1").Put(14, "k", "w").Write();
  RepairPlan plan;
  ReplicaState fixed = RepairAndCheck({h1, h2}, t, tmp.path() + "/out", &plan, {{kTxnPid, 10, ControlType::kAbort}});
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].offset, 13);
  EXPECT_EQ(plan.actions[0].marker_type, ControlType::kAbort);
  EXPECT_EQ(plan.actions[0].certainty, Certainty::kAssumed);
  EXPECT_EQ(fixed.last_stable_offset, 15);
  EXPECT_FALSE(fixed.records[fixed.FindRecord(10)].read_committed);
}

// A healthy replica that still holds the hanging transaction's record closed by its ABORT proves the
// outcome: the marker is written where it holds it, marked certain.
TEST(Repair, HangingTransactionProvenByAHealthyReplicasMarkerIsCertain) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b3").Txn(10, "k", "v").Put(12, "a", "1").Write();
  std::string h1 =
      Replica(tmp.path(), "b1").Txn(10, "k", "v").Marker(11, ControlType::kAbort).Put(12, "a", "1").Write();
  std::string h2 =
      Replica(tmp.path(), "b2").Txn(10, "k", "v").Marker(11, ControlType::kAbort).Put(12, "a", "1").Write();
  RepairPlan plan;
  ReplicaState fixed = RepairAndCheck({h1, h2}, t, tmp.path() + "/out", &plan);
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kInsertMarker);
  EXPECT_EQ(plan.actions[0].certainty, Certainty::kCertain);
  EXPECT_EQ(plan.actions[0].marker_type, ControlType::kAbort);
  EXPECT_EQ(plan.actions[0].offset, 11);
  EXPECT_NE(plan.actions[0].proof.find("closes it with the ABORT at offset 11"), std::string::npos)
      << plan.actions[0].proof;
  EXPECT_FALSE(fixed.records[fixed.FindRecord(10)].read_committed);
}

// One record proven committed does not decide a record before it when a lost marker could lie between
// them (offset 11: the target lacks it and no replica holds anything there).
TEST(Repair, ProofDoesNotCrossASlotWhereAMarkerCouldHaveBeen) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b3").Txn(10, "a", "x").Txn(12, "b", "y").Put(20, "a", "z").Write();
  std::string h1 =
      Replica(tmp.path(), "b1").Txn(12, "b", "y").Marker(13, ControlType::kCommit).Put(20, "a", "z").Write();
  std::string h2 =
      Replica(tmp.path(), "b2").Txn(12, "b", "y").Marker(13, ControlType::kCommit).Put(20, "a", "z").Write();
  RepairPlan plan;
  std::string error;
  ASSERT_TRUE(PlanRepair({h1, h2}, t, RepairOptions{}, &plan, &error)) << error;
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kLeft);
  EXPECT_EQ(plan.actions[0].records_at_stake, (std::vector<int64_t>{10, 12}));
  EXPECT_NE(plan.actions[0].reason.find("offset 11"), std::string::npos) << plan.actions[0].reason;

  // Without the later value of "a", the healthy replicas removed an unsuperseded value at 10 (aborted)
  // while they close 12 with a COMMIT: conflicting evidence, left as well.
  TempDir tmp2("repair-test");
  t = Replica(tmp2.path(), "b3").Txn(10, "a", "x").Txn(12, "b", "y").Put(20, "c", "z").Write();
  h1 = Replica(tmp2.path(), "b1").Txn(12, "b", "y").Marker(13, ControlType::kCommit).Put(20, "c", "z").Write();
  h2 = Replica(tmp2.path(), "b2").Txn(12, "b", "y").Marker(13, ControlType::kCommit).Put(20, "c", "z").Write();
  ASSERT_TRUE(PlanRepair({h1, h2}, t, RepairOptions{}, &plan, &error)) << error;
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kLeft);
  EXPECT_NE(plan.actions[0].reason.find("conflicts"), std::string::npos) << plan.actions[0].reason;
}

// The target's own decided transaction: its ABORT at 13 closes record 10, but a lost COMMIT could have
// been at 11 or 12 (a follower merges a transaction whose marker it lost into the next one), and nothing
// in the healthy replicas shows which. Left unless decided; --assume abort confirms the target's verdict,
// --assume commit closes 10 with a COMMIT in the slot.
TEST(Repair, TargetsOwnVerdictAfterASlotIsLeftUnlessAssumed) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b3").Txn(10, "a", "x").Marker(13, ControlType::kAbort).Put(20, "a", "z").Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(20, "a", "z").Write();
  std::string h2 = Replica(tmp.path(), "b2").Put(20, "a", "z").Write();
  RepairPlan plan;
  std::string error;
  ASSERT_TRUE(PlanRepair({h1, h2}, t, RepairOptions{}, &plan, &error)) << error;
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kLeft);
  EXPECT_EQ(plan.actions[0].assume_key, "7@10");
  EXPECT_NE(plan.actions[0].reason.find("ABORT at offset 13"), std::string::npos) << plan.actions[0].reason;

  RepairOptions abort;
  abort.assumptions = {{kTxnPid, 10, ControlType::kAbort}};
  ASSERT_TRUE(PlanRepair({h1, h2}, t, abort, &plan, &error)) << error;
  EXPECT_TRUE(plan.actions.empty());
  EXPECT_TRUE(plan.unmatched_assumptions.empty());

  ReplicaState fixed = RepairAndCheck({h1, h2}, t, tmp.path() + "/out", &plan, {{kTxnPid, 10, ControlType::kCommit}});
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kInsertMarker);
  EXPECT_EQ(plan.actions[0].certainty, Certainty::kAssumed);
  EXPECT_EQ(plan.actions[0].marker_type, ControlType::kCommit);
  EXPECT_EQ(plan.actions[0].offset, 11);
  EXPECT_TRUE(fixed.records[fixed.FindRecord(10)].read_committed);
}

TEST(Repair, AssumptionsAreParsedAndAnUnmatchedOneIsReported) {
  RepairAssumption a;
  std::string error;
  ASSERT_TRUE(ParseRepairAssumption("2001@331=commit", &a, &error)) << error;
  EXPECT_EQ(a.producer_id, 2001);
  EXPECT_EQ(a.first_offset, 331);
  EXPECT_EQ(a.outcome, ControlType::kCommit);
  ASSERT_TRUE(ParseRepairAssumption("7@0=abort", &a, &error));
  EXPECT_EQ(a.outcome, ControlType::kAbort);
  for (const char* bad :
       {"", "7@0", "7=commit", "7@0=COMMITTED", "x@0=abort", "7@-1=abort", "7@0=abort=x", "@0=abort"}) {
    EXPECT_FALSE(ParseRepairAssumption(bad, &a, &error)) << bad;
  }

  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b3").Txn(10, "k", "v").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(12, "a", "1").Put(14, "k", "w").Write();
  RepairOptions options;
  options.assumptions = {{kTxnPid, 11, ControlType::kCommit}, {kTxnPid, 10, ControlType::kAbort}};
  RepairPlan plan;
  ASSERT_TRUE(PlanRepair({h1}, t, options, &plan, &error)) << error;
  EXPECT_EQ(plan.unmatched_assumptions, std::vector<std::string>{"7@11=commit"});
}

// --rebuild-from: the copy holds the source's batches byte for byte; no verdict is needed.
TEST(Repair, RebuildFromAHealthyReplicaCopiesItsBatches) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b3").Txn(10, "k", "v").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(11, "b", "1").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h2 = Replica(tmp.path(), "b2").Put(11, "b", "1").Put(12, "a", "1").Put(14, "k", "w").Write();
  RepairResult result;
  std::string error;
  ASSERT_TRUE(WriteRebuiltCopy(Env::Default(), h1, t, {h2}, tmp.path() + "/out", RepairOptions{}, &result, &error))
      << error;
  EXPECT_TRUE(result.remaining.empty());
  EXPECT_EQ(result.batches_copied, 3);
  EXPECT_EQ(result.last_stable_offset, 15);
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_EQ(slurp(result.out_partition_dir + "/00000000000000000000.log"), slurp(h1 + "/00000000000000000000.log"));
  CollectingSink sink;
  VerifyStats st = VerifyPath(result.out_partition_dir, {}, &sink);
  EXPECT_EQ(st.errors, 0u);
  EXPECT_EQ(st.warnings, 0u);
  ReplicaState fixed = Load(result.out_partition_dir);
  EXPECT_TRUE(fixed.open_txns.empty());
  EXPECT_LT(fixed.FindRecord(10), 0);
  // Inputs untouched; --out inside an input refused.
  EXPECT_FALSE(WriteRebuiltCopy(Env::Default(), h1, t, {}, t + "/x", RepairOptions{}, &result, &error));
}

TEST(Repair, LostTombstoneStillHeldByAHealthyReplicaIsCopied) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b3").Put(10, "K", "v1").Put(12, "a", "1").Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(11, "K", std::nullopt).Put(12, "a", "1").Write();
  std::string h2 = Replica(tmp.path(), "b2").Put(12, "a", "1").Write();
  RepairPlan plan;
  ReplicaState fixed = RepairAndCheck({h1, h2}, t, tmp.path() + "/out", &plan);
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kCopyBatch);
  ASSERT_GE(fixed.FindRecord(11), 0);
  EXPECT_FALSE(fixed.records[fixed.FindRecord(11)].has_value);
  const KeyState* k = fixed.Key(Md5(AsBytes(std::string("K"))));
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->tombstone);
}

TEST(Repair, LostTombstoneGoneEverywhereRemovesTheStaleValue) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b3").Put(9, "K", "v0").Put(10, "K", "v1").Put(12, "a", "1").Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(12, "a", "1").Write();
  std::string h2 = Replica(tmp.path(), "b2").Put(12, "a", "1").Write();
  RepairPlan plan;
  ReplicaState fixed = RepairAndCheck({h1, h2}, t, tmp.path() + "/out", &plan);
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kRemoveRecords);
  EXPECT_EQ(plan.actions[0].removed_offsets, (std::vector<int64_t>{9, 10}));
  EXPECT_EQ(fixed.Key(Md5(AsBytes(std::string("K")))), nullptr);
}

// Issue 15 item 8: with one healthy replica, diff's "larger group is healthy" rule ties and names the
// first replica given (the target) healthy. Different records at one offset prove only that the replicas
// disagree, so repair must report the finding as unrepairable, not "no divergence".
TEST(Repair, DivergentRecordAgainstTheTargetIsUnrepairableEvenOnATie) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b2").Put(0, "a", "1").Put(1, "b", "target").Put(2, "c", "3").Write();
  std::string h = Replica(tmp.path(), "b1").Put(0, "a", "1").Put(1, "b", "leader").Put(2, "c", "3").Write();
  RepairPlan plan;
  std::string error;
  ASSERT_TRUE(PlanRepair({h}, t, RepairOptions{}, &plan, &error)) << error;
  ASSERT_EQ(plan.findings.size(), 1u);
  EXPECT_EQ(plan.findings[0].kind, FindingKind::kDivergentRecord);
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kUnrepairable);
  EXPECT_EQ(plan.actions[0].offset, 1);
  EXPECT_TRUE(plan.HasUnrepairable());

  // Written anyway: the copy is the target as it was, and the divergence is still there.
  RepairResult result;
  ASSERT_TRUE(WriteRepairedCopy(Env::Default(), plan, tmp.path() + "/out", RepairOptions{}, &result, &error)) << error;
  ASSERT_EQ(result.remaining.size(), 1u);
  EXPECT_EQ(result.remaining[0].kind, FindingKind::kDivergentRecord);
}

// With three replicas the target may be in diff's larger group; records that differ at one offset still
// dispute the target's own record there, so they are reported, not hidden behind "no divergence".
TEST(Repair, DivergentRecordWithTheTargetInTheLargerGroupIsReported) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b2").Put(0, "a", "1").Put(1, "b", "2").Put(2, "c", "3").Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(0, "a", "1").Put(1, "b", "2").Put(2, "c", "3").Write();
  std::string h3 = Replica(tmp.path(), "b3").Put(0, "a", "1").Put(1, "b", "other").Put(2, "c", "3").Write();
  RepairPlan plan;
  std::string error;
  ASSERT_TRUE(PlanRepair({h1, h3}, t, RepairOptions{}, &plan, &error)) << error;
  ASSERT_EQ(plan.findings.size(), 1u);
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, RepairActionKind::kUnrepairable);
  EXPECT_EQ(plan.actions[0].offset, 1);
}

TEST(Repair, InputsAreNeverWrittenAndOutIsRefused) {
  TempDir tmp("repair-test");
  std::string t = Replica(tmp.path(), "b3").Put(10, "K", "v1").Write();
  std::string h = Replica(tmp.path(), "b1").Put(12, "a", "1").Write();
  RepairPlan plan;
  std::string error;
  ASSERT_TRUE(PlanRepair({h}, t, {}, &plan, &error)) << error;
  RepairResult result;
  // --out inside an input.
  EXPECT_FALSE(WriteRepairedCopy(Env::Default(), plan, t + "/x", {}, &result, &error));
  fs::create_directories(tmp.path() + "/busy");
  std::ofstream(tmp.path() + "/busy/file") << "x";
  EXPECT_FALSE(WriteRepairedCopy(Env::Default(), plan, tmp.path() + "/busy", {}, &result, &error));
  // --force replaces only a previous klf output (segment_writer/output_guard.h), never this.
  RepairOptions force;
  force.force = true;
  EXPECT_FALSE(WriteRepairedCopy(Env::Default(), plan, tmp.path() + "/busy", force, &result, &error));
  EXPECT_TRUE(fs::exists(tmp.path() + "/busy/file"));
  ASSERT_TRUE(WriteRepairedCopy(Env::Default(), plan, tmp.path() + "/out", {}, &result, &error)) << error;
  EXPECT_FALSE(WriteRepairedCopy(Env::Default(), plan, tmp.path() + "/out", {}, &result, &error));
  EXPECT_TRUE(WriteRepairedCopy(Env::Default(), plan, tmp.path() + "/out", force, &result, &error)) << error;
}

// The `.log` files of partition directory `dir`.
std::vector<std::string> Logs(const std::string& dir) {
  std::vector<std::string> logs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".log") logs.push_back(e.path().string());
  return logs;
}

// Nothing but the replicas under tmp: no --out, no staging directory (repair reads the replicas it
// copies from through the Env it writes with: a failed read fails the run, naming the file).
void ExpectNothingLeft(const TempDir& tmp) {
  EXPECT_FALSE(fs::exists(tmp.path() + "/out")) << "a failed run must not leave --out";
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "b1" || name == "b2" || name == "b3") << "left behind: " << e.path();
  }
}

TEST(RepairReadFaults, AFailedReadOfTheTargetFailsTheRepairedCopy) {
  TempDir tmp("repair-faults");
  const PoisonMerged r = PoisonMergedIntoTheCommit(tmp.path());  // the plan removes the poison
  const std::string& t = r.target;
  RepairPlan plan;
  std::string error;
  ASSERT_TRUE(PlanRepair({r.h1, r.h2}, t, RepairOptions{}, &plan, &error)) << error;
  ASSERT_FALSE(plan.actions.empty());
  const std::vector<std::string> logs = Logs(t);
  ASSERT_EQ(logs.size(), 1u);

  FaultInjectionEnv faults(Env::Default());
  faults.FailRead(fs::path(logs[0]).filename().string(), 10);
  RepairResult result;
  EXPECT_FALSE(WriteRepairedCopy(&faults, plan, tmp.path() + "/out", RepairOptions{}, &result, &error));
  EXPECT_NE(error.find(logs[0]), std::string::npos) << error;
  ExpectNothingLeft(tmp);
}

TEST(RepairReadFaults, AFailedReadOfTheSourceFailsTheRebuiltCopy) {
  TempDir tmp("repair-faults");
  std::string t = Replica(tmp.path(), "b3").Txn(10, "k", "v").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(11, "b", "1").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h2 = Replica(tmp.path(), "b2").Put(11, "b", "1").Put(12, "a", "1").Put(14, "k", "w").Write();
  const std::vector<std::string> logs = Logs(h1);
  ASSERT_EQ(logs.size(), 1u);
  FaultInjectionEnv faults(Env::Default());
  faults.FailRead(logs[0], 10);  // the source's segment only (the other replicas' share its name)
  RepairResult result;
  std::string error;
  EXPECT_FALSE(WriteRebuiltCopy(&faults, h1, t, {h2}, tmp.path() + "/out", RepairOptions{}, &result, &error));
  EXPECT_NE(error.find(logs[0]), std::string::npos) << error;
  ExpectNothingLeft(tmp);
}

// A copy is written only from intact logs: bytes after a segment's last intact batch (a torn or
// zero-filled tail) end the copy with an error naming the file, the position and the remedy.
TEST(RepairReadFaults, BytesAfterTheLastIntactBatchRefuseTheCopy) {
  for (bool rebuild : {false, true}) {
    SCOPED_TRACE(rebuild ? "rebuilt copy: the source's tail" : "repaired copy: the target's tail");
    TempDir tmp("repair-faults");
    const PoisonMerged r = PoisonMergedIntoTheCommit(tmp.path());
    const std::string damaged = Logs(rebuild ? r.h1 : r.target)[0];
    const uint64_t intact = fs::file_size(damaged);
    RepairPlan plan;
    std::string error;
    if (!rebuild) {
      ASSERT_TRUE(PlanRepair({r.h1, r.h2}, r.target, RepairOptions{}, &plan, &error)) << error;
    }
    test::WriteAll(damaged, test::ReadAll(damaged) + std::string(12, '\0'));
    RepairResult result;
    const bool ok =
        rebuild ? WriteRebuiltCopy(Env::Default(), r.h1, r.target, {r.h2}, tmp.path() + "/out", {}, &result, &error)
                : WriteRepairedCopy(Env::Default(), plan, tmp.path() + "/out", {}, &result, &error);
    EXPECT_FALSE(ok);
    EXPECT_NE(error.find(damaged + ": position " + std::to_string(intact) + ": 12 bytes are not valid batches"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("salvage"), std::string::npos) << error;
    ExpectNothingLeft(tmp);
  }
}

}  // namespace
}  // namespace klf
