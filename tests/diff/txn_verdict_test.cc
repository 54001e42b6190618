// The transaction rules of diff/txn_verdict.h, one test each, on replicas Kafka's own code wrote
// (kafka4/tv2-replicas, kafka-oracle/random-replicas with Kafka's truth.json beside them).
#include "diff/txn_verdict.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "diff/diff.h"
#include "tests/support/coordinator_log.h"
#include "tests/support/replica_loading.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {
using test::OneDecision;

std::string Fixtures() { return KLF_FIXTURES_DIR; }

std::vector<ReplicaState> Brokers(const std::string& timeline) {
  std::string base = Fixtures() + "/" + timeline;
  return test::LoadAll({base + "/broker1/foo-0", base + "/broker2/foo-0", base + "/broker3/foo-0"});
}

nlohmann::json Truth(const std::string& timeline) {
  std::ifstream in(Fixtures() + "/" + timeline + "/truth.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// The transaction of replica `r` that holds data record `offset`.
int32_t TxnOf(const ReplicaState& r, int64_t offset) {
  int64_t i = r.FindRecord(offset);
  return i < 0 ? -1 : r.records[i].txn;
}

// Kafka's truth: the outcome of the leader's transaction that holds data offset `offset`.
std::string TruthOutcome(const nlohmann::json& truth, int64_t offset) {
  for (const auto& t : truth["writes"]["transactions"]) {
    for (const auto& b : t["dataBatches"]) {
      if (b[0].get<int64_t>() <= offset && offset <= b[1].get<int64_t>()) return t["outcome"].get<std::string>();
    }
  }
  return "";
}

const char* kTv2 = "kafka4/tv2-replicas/timeline-04";
const char* kT05 = "kafka-oracle/random-replicas/timeline-05";
const char* kT11 = "kafka-oracle/random-replicas/timeline-11";

// Rule "txnindex range": broker3's cleaner thinned producer 2001's aborted transaction, so replaying
// its batches starts that transaction at 891; its .txnindex (and Kafka's reload) says 863, as on the
// other brokers.
TEST(TxnVerdict, AbortedRangeComesFromTheTxnIndexNotFromReplay) {
  auto rs = Brokers(kTv2);
  auto truth = Truth(kTv2);
  const ReplicaState& b3 = rs[2];
  int64_t replayed = -1;
  for (const Txn& t : b3.txns) {
    if (t.producer_id == 2001 && t.marker_offset == 900) replayed = t.first_offset;
  }
  EXPECT_GT(replayed, 863);  // what replay of the thinned batches gives
  // The .txnindex range covering 900: the one its ABORT at 900 closed.
  auto e = AbortedRangeCovering(b3, 2001, 900);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(b3.aborted_txns[*e].last_offset, 900);
  bool in_truth = false;
  for (const auto& a : truth["brokers"]["broker3"]["abortedTransactions"]) {
    if (a["producerId"] == 2001 && a["lastOffset"] == 900) {
      in_truth = true;
      EXPECT_EQ(b3.aborted_txns[*e].first_offset, a["firstOffset"].get<int64_t>());
    }
  }
  EXPECT_TRUE(in_truth);
  TxnFact f = TxnIndexFact(b3, 2, *e, "x");
  EXPECT_NE(f.file.find(".txnindex"), std::string::npos) << f.file;
  EXPECT_EQ(f.position % kTxnIndexEntrySize, 0);
  // So the leader's own transaction 863..900 is no merge: nothing shows a marker inside it.
  std::vector<int64_t> records = TxnRecords(rs[0], TxnOf(rs[0], 863));
  ASSERT_FALSE(records.empty());
  EXPECT_FALSE(ProveMerge(rs, 0, TxnOf(rs[0], 863), records).proven);
}

// Rule "slot": an offset broker2 lacks and broker3 holds as producer 2000's ABORT can hold that
// producer's lost marker; an offset every broker holds as data cannot; nor can a marker of another producer.
TEST(TxnVerdict, SlotIsAnOffsetTheReplicaLacksAndNoReplicaHoldsAsAnythingElse) {
  auto rs = Brokers(kT11);
  ASSERT_FALSE(rs[1].HoldsOffset(1004));
  ASSERT_TRUE(rs[2].HoldsOffset(1004));
  EXPECT_TRUE(IsSlot(rs, 1, 2000, 1004));
  EXPECT_FALSE(IsSlot(rs, 1, 2001, 1004));                  // broker3 holds another producer's marker there
  EXPECT_FALSE(IsSlot(rs, 1, 2000, 1050));                  // a data batch of producer 1001 on every broker
  EXPECT_FALSE(IsSlot(rs, 1, 2000, rs[1].log_end_offset));  // past its log: not fetched
  auto s = FindSlot(rs, 1, 2000, 380, 1224);
  ASSERT_TRUE(s.has_value());
  EXPECT_GT(*s, 380);
  EXPECT_LT(*s, 1224);
  EXPECT_FALSE(FindSlot(rs, 1, 2000, 362, 365).has_value());  // inside a batch it holds
}

// Rule "merge": broker2 holds producer 2000's records 362.. in one transaction up to the ABORT at 1224;
// broker3 holds an ABORT of that producer at 1004, which broker2 lacks. Kafka's truth: 362..365 were
// a transaction of their own (committed at 393).
TEST(TxnVerdict, MergeProvenByAHealthyMarkerInsideTheTransaction) {
  auto rs = Brokers(kT11);
  int32_t ti = TxnOf(rs[1], 362);
  ASSERT_GE(ti, 0);
  std::vector<int64_t> records = TxnRecords(rs[1], ti);
  MergeProof p = ProveMerge(rs, 1, ti, records);
  ASSERT_TRUE(p.proven);
  EXPECT_GE(p.split, 1004);
  EXPECT_EQ(p.witnesses.count(2), 1u);
  ASSERT_FALSE(p.facts.empty());
  EXPECT_EQ(p.facts.front().replica, 2u);
  EXPECT_NE(p.facts.front().file.find(".log"), std::string::npos);
  EXPECT_GE(p.facts.front().position, 0);
  // Kafka's truth: broker2 misjudges records of this transaction.
  bool misjudged = false;
  auto truth = Truth(kT11);
  for (const auto& m : truth["divergenceTruth"]["misjudgedTransactionalRecords"]) {
    if (m["broker"] == "broker2" && m["offset"].get<int64_t>() >= records.front() &&
        m["offset"].get<int64_t>() < p.split) {
      misjudged = true;
    }
  }
  EXPECT_TRUE(misjudged);
}

// Rule "merge" by epochs: under TV2 every transaction has its own data epoch and markers sit above it
// (e+1, e+2); on the leader no transaction's data spans two epochs, and no marker epoch raises a merge.
TEST(TxnVerdict, MarkerAboveItsDataEpochIsNoMerge) {
  auto rs = Brokers(kTv2);
  size_t above = 0;
  for (size_t ti = 0; ti < rs[0].txns.size(); ++ti) {
    const Txn& t = rs[0].txns[ti];
    std::vector<int64_t> records = TxnRecords(rs[0], int32_t(ti));
    if (records.empty() || !t.marker_offset) continue;
    for (const Marker& m : rs[0].markers) {
      if (m.offset == *t.marker_offset && m.producer_epoch > t.producer_epoch) ++above;
    }
    EXPECT_FALSE(ProveMerge(rs, 0, int32_t(ti), records).proven) << "transaction from " << t.first_offset;
    EXPECT_FALSE(SuspectMerge(rs, 0, int32_t(ti), records, 900000).raised) << "transaction from " << t.first_offset;
  }
  EXPECT_GT(above, 0u);  // the fixture does have TV2 markers above their data's epoch
}

// Copies the broker log directory `broker` (Kafka's bytes) to `to` with the batch at base offset `offset`
// of foo-0 cut out of its segment: a follower that never received that batch. Returns the copy's foo-0.
std::string CopyWithoutBatch(const std::string& broker, const std::string& to, int64_t offset) {
  test::CopyWritable(broker, to);
  std::string dir = to + "/foo-0";
  ReplicaState r = test::LoadOne(dir);
  for (const BatchSpan& b : r.batches) {
    if (b.base_offset != offset) continue;
    std::string path = r.segment_files[b.segment];
    std::string bytes = test::ReadAll(path);
    bytes.erase(b.position, b.size);
    test::WriteAll(path, bytes);
    return dir;
  }
  ADD_FAILURE() << "no batch at offset " << offset << " in " << dir;
  return dir;
}

// Rule "merge", each of its three proofs, on a follower that lost producer 2000's TV2 COMMIT at 850
// (data 845..849 at epoch 40, the COMMIT at 41, the next transaction 880.. at epoch 41, ABORT at 899):
// it merges 845.. into the aborted transaction. The other brokers hold the COMMIT (a marker inside its
// transaction), their .txnindex starts the ABORT's range at 880 (after its first record), and its data
// spans epochs 40 and 41. Broker2 still holds 845.. closed by the COMMIT: a certain lost_commit.
TEST(TxnVerdict, MergeProvenByMarkerTxnIndexAndEpochsOnAFollowerThatLostATv2Commit) {
  test::TempDir tmp("txn-verdict");
  std::string base = Fixtures() + "/" + kTv2;
  std::string lost = CopyWithoutBatch(base + "/broker3", tmp.path() + "/broker3", 850);
  auto rs = test::LoadAll({base + "/broker1/foo-0", base + "/broker2/foo-0", lost});
  ASSERT_LT(rs[2].FindRecord(850), 0);
  int32_t ti = TxnOf(rs[2], 845);
  ASSERT_GE(ti, 0);
  ASSERT_EQ(rs[2].txns[ti].marker_offset, 899);  // merged into the aborted transaction
  std::vector<int64_t> records = TxnRecords(rs[2], ti);
  MergeProof p = ProveMerge(rs, 2, ti, records);
  ASSERT_TRUE(p.proven);
  EXPECT_GE(p.split, 850);
  auto has = [&](const std::string& what, const std::string& file_part) {
    return std::any_of(p.facts.begin(), p.facts.end(), [&](const TxnFact& f) {
      return f.fact.find(what) != std::string::npos && f.file.find(file_part) != std::string::npos;
    });
  };
  EXPECT_TRUE(has("holds the COMMIT of producer 2000 (epoch 41) at offset 850", ".log"));
  EXPECT_TRUE(has("starting at offset 880", ".txnindex"));
  EXPECT_TRUE(has("spans two producer epochs: 40", ".log"));
  std::vector<int64_t> at_stake;
  for (int64_t o : records) {
    if (o < p.split) at_stake.push_back(o);
  }
  OutcomeProof op = ProveOutcome(rs, 2, 2000, at_stake);
  EXPECT_EQ(op.seen.count(TxnOutcome::kCommit), 1u);
  EXPECT_EQ(op.seen.count(TxnOutcome::kAbort), 0u);
  EXPECT_EQ(TruthOutcome(Truth(kTv2), 845), "committed");

  DiffReport r = DiffReplicas(rs);
  auto d = std::find_if(r.findings.begin(), r.findings.end(),
                        [](const Finding& f) { return f.kind == FindingKind::kLostCommit; });
  ASSERT_NE(d, r.findings.end()) << test::DescribeFindings(r, rs);
  EXPECT_EQ(d->certainty, FindingCertainty::kCertain);
  EXPECT_EQ(d->outcome, TxnOutcome::kCommit);
  EXPECT_EQ(d->affected, std::vector<size_t>{2});
  EXPECT_EQ(d->records_at_stake.front(), 845);
  EXPECT_TRUE(d->settle_with.empty());
}

// Copies the broker log directory `broker` to `to` with every batch of foo-0 from base offset `offset` on
// cut away (a follower that has fetched only that far), and the files of later segments removed.
std::string CopyTruncatedAt(const std::string& broker, const std::string& to, int64_t offset) {
  namespace fs = std::filesystem;
  test::CopyWritable(broker, to);
  std::string dir = to + "/foo-0";
  ReplicaState r = test::LoadOne(dir);
  for (const BatchSpan& b : r.batches) {
    if (b.base_offset < offset) continue;
    std::string path = r.segment_files[b.segment];
    std::string bytes = test::ReadAll(path);
    test::WriteAll(path, bytes.substr(0, b.position));
    break;
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.size() > 20 && std::isdigit(static_cast<unsigned char>(name[0])) &&
        std::stoll(name.substr(0, 20)) > offset) {
      fs::remove(e.path());
    }
  }
  return dir;
}

// Rule "decided", lag: a follower that has fetched producer 2000's data 880.. but not yet its ABORT at 899
// (its log ends there) is in flight, not hanging, although broker3 removed offset 880 and has no open
// transaction: the marker is past the follower's log end, and its log has no slot for it.
TEST(TxnVerdict, OpenTransactionOfALaggingFollowerIsNotDecided) {
  test::TempDir tmp("txn-verdict");
  std::string base = Fixtures() + "/" + kTv2;
  std::string lagging = CopyTruncatedAt(base + "/broker1", tmp.path() + "/broker1", 899);
  auto rs = test::LoadAll({lagging, base + "/broker2/foo-0", base + "/broker3/foo-0"});
  ASSERT_EQ(rs[0].log_end_offset, 899);
  ASSERT_LT(rs[2].FindRecord(880), 0);  // broker3 removed it
  int32_t ti = TxnOf(rs[0], 880);
  ASSERT_GE(ti, 0);
  ASSERT_FALSE(rs[0].txns[ti].marker_offset.has_value());
  EXPECT_FALSE(ProveDecided(rs, 0, ti, TxnRecords(rs[0], ti)).proven);
  DiffReport r = DiffReplicas(rs);
  EXPECT_FALSE(r.HasDivergence()) << test::DescribeFindings(r, rs);
}

// Rule "outcome": broker1 still holds producer 2001's records 863.. and closes them with the ABORT at
// 900; broker3 removed them but its .txnindex covers them. Both prove ABORT, as Kafka's truth says.
TEST(TxnVerdict, OutcomeFromAHeldRecordOrTheTxnIndex) {
  auto rs = Brokers(kTv2);
  auto truth = Truth(kTv2);
  ASSERT_GE(rs[1].FindRecord(863), 0);
  std::vector<int64_t> at_stake{863};
  OutcomeProof p = ProveOutcome(rs, 1, 2001, at_stake);
  EXPECT_EQ(p.outcome, TxnOutcome::kAbort);
  EXPECT_EQ(TruthOutcome(truth, 863), "aborted");
  EXPECT_EQ(p.witnesses.count(0), 1u);  // holds and closes it
  EXPECT_EQ(p.witnesses.count(2), 1u);  // .txnindex covers it
  ASSERT_LT(rs[2].FindRecord(863), 0);
  bool index_fact = std::any_of(p.facts.begin(), p.facts.end(),
                                [](const TxnFact& f) { return f.file.find(".txnindex") != std::string::npos; });
  bool log_fact = std::any_of(p.facts.begin(), p.facts.end(),
                              [](const TxnFact& f) { return f.file.find(".log") != std::string::npos; });
  EXPECT_TRUE(log_fact || index_fact);
}

// Rule "outcome": superseded records removed by the healthy replicas prove nothing. Broker2 of
// timeline-11 holds producer 2001's records 331.. that the others removed; the first marker the
// others still hold after them is an ABORT, yet Kafka's truth says they committed.
TEST(TxnVerdict, SupersededRecordsAndTheNextMarkerProveNoOutcome) {
  auto rs = Brokers(kT11);
  auto truth = Truth(kT11);
  ASSERT_GE(rs[1].FindRecord(331), 0);
  ASSERT_LT(rs[2].FindRecord(331), 0);
  const Marker* next = rs[2].NextMarker(2001, 331);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->type, MarkerType::kAbort);
  EXPECT_EQ(TruthOutcome(truth, 331), "committed");
  std::vector<int64_t> at_stake{331};
  OutcomeProof p = ProveOutcome(rs, 1, 2001, at_stake);
  EXPECT_EQ(p.outcome, TxnOutcome::kUnknown);
  EXPECT_EQ(p.seen.count(TxnOutcome::kAbort), 0u);
}

// Rule "decided": broker2's transaction of producer 2000 from 112 is open; broker1 removed its records
// and has no open transaction (Kafka's truth: committed at 167, and broker2's LSO pinned at 112).
// Between two states of one log where the transaction is open in both, nothing is decided.
TEST(TxnVerdict, OpenTransactionDecidedElsewhere) {
  auto rs = Brokers(kT05);
  int32_t ti = TxnOf(rs[1], 112);
  ASSERT_GE(ti, 0);
  EXPECT_FALSE(rs[1].txns[ti].marker_offset.has_value());
  DecidedProof p = ProveDecided(rs, 1, ti, TxnRecords(rs[1], ti));
  EXPECT_TRUE(p.proven);
  EXPECT_EQ(p.witnesses.count(0), 1u);
  auto truth = Truth(kT05);
  EXPECT_EQ(truth["divergenceTruth"]["lastStableOffsetPinned"]["broker2"]["firstOffset"], 112);

  std::string tv2 = Fixtures() + "/kafka4/tv2-txn";
  auto states = test::LoadAll({tv2 + "/written/tv2-txn-0", tv2 + "/cleaned-pass1/tv2-txn-0"});
  ASSERT_FALSE(states[0].open_txns.empty());
  const OpenTxn& open = states[0].open_txns.back();
  int32_t oi = TxnOf(states[0], open.first_offset);
  ASSERT_GE(oi, 0);
  EXPECT_FALSE(ProveDecided(states, 0, oi, TxnRecords(states[0], oi)).proven);
}

// Rule "weak signal": broker2's merged transaction of producer 2000 (362..1224, TV1: marker at its
// data's epoch) stayed open far longer than transaction.max.timeout.ms; with a larger time-out it is not
// raised.
TEST(TxnVerdict, SameEpochTransactionLongerThanTheTimeoutIsSuspected) {
  auto rs = Brokers(kT11);
  int32_t ti = TxnOf(rs[1], 362);
  std::vector<int64_t> records = TxnRecords(rs[1], ti);
  Suspicion s = SuspectMerge(rs, 1, ti, records, 900000);
  ASSERT_TRUE(s.raised);
  EXPECT_GT(s.split, 362);
  EXPECT_FALSE(s.facts.empty());
  EXPECT_FALSE(SuspectMerge(rs, 1, ti, records, int64_t(1) << 50).raised);
}

// Rule "coordinator": no replica proves what producer 2001's records 331.. of timeline-11 were (see
// SupersededRecordsAndTheNextMarkerProveNoOutcome); a transaction version 2 decision of their
// transaction does, and it is the coordinator's fact, not a replica's. Under version 1 the same
// records decide nothing and are shown as what they are: suspected.
TEST(TxnVerdict, CoordinatorDecidesWhatNoReplicaProvesOnlyUnderTransactionVersion2) {
  auto rs = Brokers(kT11);
  std::vector<int64_t> at_stake{331};
  const int16_t epoch = rs[1].records[rs[1].FindRecord(331)].producer_epoch;
  EXPECT_EQ(TruthOutcome(Truth(kT11), 331), "committed");

  CoordinatorLog tv2 = OneDecision(2001, epoch, "PrepareCommit", 2);
  OutcomeProof p = ProveOutcome(rs, 1, 2001, at_stake, &tv2);
  EXPECT_EQ(p.outcome, TxnOutcome::kCommit);
  EXPECT_TRUE(p.coordinator_proves);
  EXPECT_TRUE(p.witnesses.empty());  // no replica proved it
  ASSERT_EQ(p.facts.size(), 1u);
  EXPECT_EQ(p.facts[0].replica, kCoordinatorWitness);
  EXPECT_EQ(p.facts[0].position, 200);  // the PrepareCommit
  EXPECT_NE(p.facts[0].fact.find("transactional id 'app'"), std::string::npos) << p.facts[0].fact;
  EXPECT_NE(p.facts[0].fact.find("proven"), std::string::npos) << p.facts[0].fact;

  CoordinatorLog tv1 = OneDecision(2001, epoch, "PrepareCommit", 1);
  p = ProveOutcome(rs, 1, 2001, at_stake, &tv1);
  EXPECT_EQ(p.outcome, TxnOutcome::kUnknown);
  EXPECT_FALSE(p.coordinator_proves);
  ASSERT_EQ(p.coordinator_facts.size(), 1u);
  EXPECT_NE(p.coordinator_facts[0].fact.find("suspected"), std::string::npos) << p.coordinator_facts[0].fact;

  // Another producer's records: "no record", said so.
  CoordinatorLog other = OneDecision(9999, epoch, "PrepareCommit", 2);
  p = ProveOutcome(rs, 1, 2001, at_stake, &other);
  EXPECT_EQ(p.outcome, TxnOutcome::kUnknown);
  ASSERT_EQ(p.coordinator_facts.size(), 1u);
  EXPECT_NE(p.coordinator_facts[0].fact.find("holds no record of producer 2001"), std::string::npos);

  // In diff: broker2's suspected lost_abort of producer 2001 (its COMMIT at 1200 closes 331..) is
  // settled: the records were committed, as broker2 serves them, so nothing is at stake. The
  // suspected finding under version 1 stays, with the coordinator's word among its facts.
  auto lost_abort_2001 = [](const DiffReport& r) {
    return std::find_if(r.findings.begin(), r.findings.end(), [](const Finding& x) {
      return x.kind == FindingKind::kLostAbort && x.producer_id == 2001 && x.affected == std::vector<size_t>{1};
    });
  };
  DiffReport without = DiffReplicas(rs);
  ASSERT_NE(lost_abort_2001(without), without.findings.end()) << test::DescribeFindings(without, rs);
  DiffOptions options;
  options.coordinator = &tv2;
  DiffReport settled = DiffReplicas(rs, options);
  EXPECT_EQ(lost_abort_2001(settled), settled.findings.end()) << test::DescribeFindings(settled, rs);
  options.coordinator = &tv1;
  DiffReport still = DiffReplicas(rs, options);
  auto f = lost_abort_2001(still);
  ASSERT_NE(f, still.findings.end());
  EXPECT_EQ(f->certainty, FindingCertainty::kSuspected);
  EXPECT_TRUE(
      std::any_of(f->facts.begin(), f->facts.end(), [](const TxnFact& x) { return x.replica == kCoordinatorWitness; }));
  EXPECT_NE(f->settle_with.find("an older copy of"), std::string::npos) << f->settle_with;
}

// Rule "coordinator": a coordinator's proof that contradicts a replica's decides nothing. Broker1 holds
// producer 2001's record 863 closed by the ABORT at 900 (Kafka's truth: aborted); a made-up coordinator
// log that says it committed leaves the record unproven.
TEST(TxnVerdict, CoordinatorAndReplicaThatDisagreeProveNothing) {
  auto rs = Brokers(kTv2);
  std::vector<int64_t> at_stake{863};
  const int16_t epoch = rs[1].records[rs[1].FindRecord(863)].producer_epoch;
  CoordinatorLog agrees = OneDecision(2001, epoch, "PrepareAbort", 2);
  OutcomeProof p = ProveOutcome(rs, 1, 2001, at_stake, &agrees);
  EXPECT_EQ(p.outcome, TxnOutcome::kAbort);
  EXPECT_TRUE(p.coordinator_proves);
  CoordinatorLog contradicts = OneDecision(2001, epoch, "PrepareCommit", 2);
  p = ProveOutcome(rs, 1, 2001, at_stake, &contradicts);
  EXPECT_EQ(p.outcome, TxnOutcome::kUnknown);
  EXPECT_EQ(p.unproven, at_stake);
}

// The verdicts diff gives: no finding where Kafka says nothing diverged (TV2), and on timeline-11 no
// certain finding that Kafka's truth contradicts, with the hidden committed records named.
TEST(TxnVerdict, DiffFindingsCarryCertaintyAndNoCertainFindingTruthContradicts) {
  {
    auto rs = Brokers(kTv2);
    DiffReport r = DiffReplicas(rs);
    EXPECT_TRUE(r.findings.empty()) << test::DescribeFindings(r, rs);
  }
  auto rs = Brokers(kT11);
  auto truth = Truth(kT11);
  DiffReport r = DiffReplicas(rs);
  bool hidden_named = false;
  for (const Finding& f : r.findings) {
    if (f.kind != FindingKind::kLostAbort && f.kind != FindingKind::kLostCommit) continue;
    ASSERT_TRUE(f.outcome.has_value());
    EXPECT_FALSE(f.records_at_stake.empty());
    EXPECT_FALSE(f.facts.empty());
    if (*f.outcome == TxnOutcome::kUnknown) {
      EXPECT_FALSE(f.settle_with.empty());
    }
    if (f.certainty == FindingCertainty::kCertain) {
      for (int64_t o : f.records_at_stake) {
        std::string want = *f.outcome == TxnOutcome::kCommit ? "committed" : "aborted";
        EXPECT_EQ(TruthOutcome(truth, o), want) << "offset " << o;
      }
    }
    if (f.kind == FindingKind::kLostCommit && f.affected == std::vector<size_t>{1} &&
        std::count(f.records_at_stake.begin(), f.records_at_stake.end(), 362) == 1) {
      hidden_named = true;
    }
  }
  EXPECT_TRUE(hidden_named) << test::DescribeFindings(r, rs);
}

}  // namespace
}  // namespace klf
