// klf lso as a library (issue 17 item 3): every open transaction is named with the abort command in the
// form that works on any replica (--producer-id/--producer-epoch/--coordinator-epoch, never the
// --start-offset form that looks the transaction up on the leader), with epochs at least what any loaded
// replica holds for the producer (the leader fences lower ones: ProducerAppendInfo.appendEndTxnMarker),
// the warning that an ABORT hides records that committed elsewhere, and, when another replica decided
// the transaction, re-replication from the leader as the fix instead of a guessed marker.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "diff/lso.h"
#include "tests/support/replica_builder.h"
#include "tests/support/replica_loading.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

using test::kTxnPid;
using test::Replica;
using test::TempDir;

ReplicaState Load(const std::string& dir) { return test::LoadOne(dir); }

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::string Abort(int64_t pid, int epoch, int coordinator_epoch) {
  return "kafka-transactions.sh --bootstrap-server <broker:9092> abort --topic foo --partition 0 --producer-id " +
         std::to_string(pid) + " --producer-epoch " + std::to_string(epoch) + " --coordinator-epoch " +
         std::to_string(coordinator_epoch);
}

TEST(Lso, EveryOpenTransactionGetsTheExplicitAbortForm) {
  TempDir tmp("lso-test");
  constexpr int64_t kOther = 8;
  // Producer 8 committed a transaction with coordinator epoch 4 at epoch 3, then opened another at 11;
  // producer 7 opened one at 10 and never wrote a marker.
  std::string t = Replica(tmp.path(), "b2")
                      .Txn(5, "x", "1", kOther, 3)
                      .Marker(6, ControlType::kCommit, 4, kOther, 3)
                      .Txn(10, "a", "1")
                      .Txn(11, "b", "2", kOther, 3)
                      .Put(12, "c", "3")
                      .Write();
  ReplicaState target = Load(t);
  ASSERT_EQ(target.last_stable_offset, 10);
  LsoReport lso = ExplainLso(target, {}, {});
  ASSERT_TRUE(lso.pinned());
  ASSERT_EQ(lso.transactions.size(), 2u);

  const LsoTxn& a = lso.transactions[0];
  EXPECT_EQ(a.txn.producer_id, kTxnPid);
  EXPECT_TRUE(a.pins);
  EXPECT_EQ(a.producer_epoch_for_abort, 0);
  EXPECT_EQ(a.coordinator_epoch_for_abort, 0);
  EXPECT_FALSE(a.coordinator_epoch_seen);  // no marker of producer 7 anywhere: 0, as kafka-transactions.sh does
  EXPECT_EQ(a.abort_command, Abort(kTxnPid, 0, 0));
  EXPECT_EQ(lso.abort_command, a.abort_command);

  const LsoTxn& b = lso.transactions[1];
  EXPECT_EQ(b.txn.producer_id, kOther);
  EXPECT_EQ(b.txn.first_offset, 11);
  EXPECT_FALSE(b.pins);
  EXPECT_EQ(b.producer_epoch_for_abort, 3);
  EXPECT_EQ(b.coordinator_epoch_for_abort, 4);
  EXPECT_TRUE(b.coordinator_epoch_seen);
  EXPECT_EQ(b.coordinator_epoch_from, std::vector<std::string>{target.label});
  EXPECT_EQ(b.abort_command, Abort(kOther, 3, 4));

  for (const LsoTxn& x : lso.transactions) {
    EXPECT_FALSE(Has(x.abort_command, "--start-offset"));
    EXPECT_TRUE(Has(x.epochs_note, "this replica alone")) << x.epochs_note;
    EXPECT_TRUE(Has(x.epochs_note, "describe-producers")) << x.epochs_note;
    EXPECT_TRUE(Has(x.warning, "committed elsewhere")) << x.warning;
    EXPECT_TRUE(Has(x.verdict, "--replica")) << x.verdict;
    EXPECT_TRUE(x.decided_on.empty());
  }
  EXPECT_TRUE(Has(lso.resolution, "--replica")) << lso.resolution;
  EXPECT_FALSE(Has(lso.resolution, "klf repair")) << lso.resolution;
}

TEST(Lso, ATimeoutAbortOnTheLeaderRaisesTheEpochsAndProvesTheTransactionDecided) {
  TempDir tmp("lso-test");
  // The coordinator timed the transaction out: its ABORT at 11 carries a bumped producer epoch (1) and
  // coordinator epoch 2. The target missed it; a marker with epoch 0 would be fenced on the leader.
  std::string t = Replica(tmp.path(), "b2").Txn(10, "k", "v").Put(12, "a", "1").Write();
  std::string l = Replica(tmp.path(), "b1")
                      .Txn(10, "k", "v")
                      .Marker(11, ControlType::kAbort, 2, kTxnPid, 1)
                      .Put(12, "a", "1")
                      .Write();
  std::string f = Replica(tmp.path(), "b3")
                      .Txn(10, "k", "v")
                      .Marker(11, ControlType::kAbort, 2, kTxnPid, 1)
                      .Put(12, "a", "1")
                      .Write();
  ReplicaState target = Load(t);
  LsoReport lso = ExplainLso(target, {Load(l), Load(f)}, {});
  ASSERT_TRUE(lso.pinned());
  ASSERT_EQ(lso.transactions.size(), 1u);
  const LsoTxn& x = lso.transactions[0];
  EXPECT_EQ(x.txn.producer_epoch, 0);  // what this replica holds
  EXPECT_EQ(x.producer_epoch_for_abort, 1);
  EXPECT_EQ(x.coordinator_epoch_for_abort, 2);
  EXPECT_EQ(x.producer_epoch_from, (std::vector<std::string>{"b1", "b3"}));
  EXPECT_EQ(x.coordinator_epoch_from, (std::vector<std::string>{"b1", "b3"}));
  EXPECT_EQ(x.abort_command, Abort(kTxnPid, 1, 2));
  EXPECT_EQ(lso.abort_command, x.abort_command);
  ASSERT_EQ(x.epoch_sources.size(), 3u);
  EXPECT_EQ(x.epoch_sources[0].label, "b2");
  EXPECT_EQ(x.epoch_sources[0].producer_epoch, 0);
  EXPECT_EQ(x.epoch_sources[0].coordinator_epoch, -1);
  EXPECT_TRUE(x.epoch_sources[0].in_producer_state);
  EXPECT_FALSE(Has(x.epochs_note, "this replica alone"));

  EXPECT_EQ(x.decided_on, (std::vector<std::string>{"b1", "b3"}));
  ASSERT_EQ(x.replicas.size(), 2u);
  EXPECT_EQ(x.replicas[0].kind, LsoWitness::Kind::kMarker);
  ASSERT_TRUE(x.replicas[0].first);
  EXPECT_EQ(x.replicas[0].first->type, MarkerType::kAbort);
  EXPECT_EQ(x.replicas[0].first->offset, 11);
  EXPECT_FALSE(Has(x.verdict, "committed")) << x.verdict;  // only an ABORT is shown: no claim of a commit
  EXPECT_TRUE(Has(x.verdict, "Decided on b1, b3")) << x.verdict;
  EXPECT_EQ(lso.replicas.size(), 2u);  // the pinning transaction's view, as before

  // The fix is re-replication from the leader, spelled out; never a marker klf would write.
  EXPECT_TRUE(Has(lso.resolution, "re-replicate this replica from the leader")) << lso.resolution;
  EXPECT_TRUE(Has(lso.resolution, "Stop the broker that holds " + t)) << lso.resolution;
  EXPECT_TRUE(Has(lso.resolution, "Move that partition directory out of the broker's log directory")) << lso.resolution;
  EXPECT_TRUE(Has(lso.resolution, "Start the broker")) << lso.resolution;
  EXPECT_TRUE(Has(lso.resolution, "kafka-reassign-partitions.sh")) << lso.resolution;
  EXPECT_FALSE(Has(lso.resolution, "klf repair")) << lso.resolution;
  EXPECT_FALSE(Has(lso.resolution, "--rebuild-from")) << lso.resolution;
}

TEST(Lso, ACommitElsewhereIsNamedAndTheMergedTransactionsListed) {
  TempDir tmp("lso-test");
  // The target lost the COMMIT at 11 and the ABORT at 13: its open transaction from 10 holds both of the
  // leader's transactions. Aborting would hide the committed record at 10.
  std::string t = Replica(tmp.path(), "b2").Txn(10, "k", "v").Txn(12, "k2", "w").Put(14, "a", "1").Write();
  std::string l = Replica(tmp.path(), "b1")
                      .Txn(10, "k", "v")
                      .Marker(11, ControlType::kCommit)
                      .Txn(12, "k2", "w")
                      .Marker(13, ControlType::kAbort)
                      .Put(14, "a", "1")
                      .Write();
  LsoReport lso = ExplainLso(Load(t), {Load(l)}, {});
  ASSERT_EQ(lso.transactions.size(), 1u);
  const LsoTxn& x = lso.transactions[0];
  ASSERT_EQ(x.replicas.size(), 1u);
  const LsoWitness& m = x.replicas[0];
  EXPECT_EQ(m.kind, LsoWitness::Kind::kMarker);
  ASSERT_TRUE(m.first);
  EXPECT_EQ(m.first->type, MarkerType::kCommit);
  ASSERT_EQ(m.markers.size(), 2u);
  EXPECT_EQ(m.markers[1].offset, 13);
  EXPECT_EQ(m.markers[1].type, MarkerType::kAbort);
  EXPECT_TRUE(Has(x.verdict, "aborting would hide records here that b1 committed")) << x.verdict;
  EXPECT_TRUE(Has(x.verdict, "then ABORT at 13")) << x.verdict;
  EXPECT_EQ(x.decided_on, std::vector<std::string>{"b1"});
}

TEST(Lso, AMarkerGoneFromTheOtherReplicasIsDecidedWithoutAnOutcome) {
  TempDir tmp("lso-test");
  // The healthy replicas hold offset 10 with no open transaction and no marker of producer 7: decided,
  // outcome unknown from the files.
  std::string t = Replica(tmp.path(), "b2").Txn(10, "k", "v").Put(12, "a", "1").Write();
  std::string h = Replica(tmp.path(), "b1").Put(11, "b", "1").Put(12, "a", "1").Write();
  LsoReport lso = ExplainLso(Load(t), {Load(h)}, {});
  ASSERT_EQ(lso.transactions.size(), 1u);
  const LsoTxn& x = lso.transactions[0];
  ASSERT_EQ(x.replicas.size(), 1u);
  EXPECT_EQ(x.replicas[0].kind, LsoWitness::Kind::kDecided);
  EXPECT_TRUE(Has(x.verdict, "do not show whether it committed or aborted")) << x.verdict;
  EXPECT_EQ(x.decided_on, std::vector<std::string>{"b1"});
  EXPECT_TRUE(Has(lso.resolution, "re-replicate")) << lso.resolution;
  // b1 knows nothing of producer 7: the epochs come from the target, and the note says which.
  ASSERT_EQ(x.epoch_sources.size(), 1u);
  EXPECT_EQ(x.epoch_sources[0].label, "b2");
  EXPECT_EQ(x.producer_epoch_from, std::vector<std::string>{"b2"});
}

TEST(Lso, OpenOnEveryReplicaTheAbortIsTheFix) {
  TempDir tmp("lso-test");
  std::string t = Replica(tmp.path(), "b2").Txn(10, "k", "v").Put(11, "a", "1").Write();
  std::string l = Replica(tmp.path(), "b1").Txn(10, "k", "v").Put(11, "a", "1").Write();
  LsoReport lso = ExplainLso(Load(t), {Load(l)}, {});
  ASSERT_TRUE(lso.pinned());
  const LsoTxn& x = lso.transactions.at(0);
  EXPECT_EQ(x.replicas.at(0).kind, LsoWitness::Kind::kOpenToo);
  EXPECT_TRUE(x.decided_on.empty());
  EXPECT_TRUE(Has(x.verdict, "Open on every replica given")) << x.verdict;
  EXPECT_TRUE(Has(lso.resolution, "no replica given shows")) << lso.resolution;
  EXPECT_TRUE(Has(lso.resolution, "abort it with the command")) << lso.resolution;
  EXPECT_FALSE(Has(lso.resolution, "Stop the broker")) << lso.resolution;
}

TEST(Lso, NothingOpenNoCommand) {
  TempDir tmp("lso-test");
  std::string t = Replica(tmp.path(), "b2").Txn(10, "k", "v").Marker(11, ControlType::kCommit).Write();
  LsoReport lso = ExplainLso(Load(t), {}, {});
  EXPECT_FALSE(lso.pinned());
  EXPECT_TRUE(lso.transactions.empty());
  EXPECT_TRUE(lso.abort_command.empty());
  EXPECT_EQ(lso.resolution, "nothing to do");
}

}  // namespace
}  // namespace klf
