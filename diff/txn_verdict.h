// What the files of several replicas prove about one transaction of one replica (issue 17 item 2):
// the rules `klf diff` judges a transaction by, each written once here.
//
// A follower that never received a COMMIT or ABORT merges the producer's transaction into the next one
// it sees and gives both the outcome of the next marker it does receive (scenarios.md §6). Whether that
// happened, and what the swallowed records really were, is decided only by facts in the files:
//
//   Rule "txnindex range"  A healthy replica's aborted range comes from its .txnindex where one exists,
//                          never from replaying batches that its cleaner thinned (AbortedRangeCovering,
//                          and ProveMerge's .txnindex entries).
//   Rule "slot"            A lost marker needs a slot: an offset inside the affected replica's
//                          transaction that it lacks (or holds only as the cleaner's emptied control batch,
//                          which closes nothing on a follower) and that no replica holds as anything but a
//                          control batch of that producer (IsSlot, FindSlot).
//   Rule "merge"           A merge is proven (ProveMerge) when, with a slot:
//                          - a healthy replica holds a COMMIT or ABORT of the producer inside the affected
//                            replica's transaction (a cleaner keeps a marker while its data exists, so the
//                            records before it were closed by it or by an earlier marker);
//                          - a healthy .txnindex entry for the same ABORT starts after the affected
//                            replica's first record;
//                          - the transaction's data spans two producer epochs (one transaction's data has a
//                            single epoch in both transaction versions; a marker above its data's epoch is
//                            normal under TV2, e+1 or e+2, and proves nothing);
//                          - a record of it is proven (rule "outcome") to have the other outcome than the
//                            marker that closes it there (MergeFromOutcome).
//   Rule "outcome"         An outcome of a record is proven (ProveOutcome) when a healthy replica still
//                          holds the record and closes it (the marker that closed it is kept while the record
//                          exists, so the first marker after it there is the one), or its .txnindex covers it
//                          (ABORT), or it removed the value and keeps no later record of the key, nor does
//                          any other replica (the cleaner removes an unsuperseded value only when its
//                          transaction aborted). "The records are superseded, so it committed" proves
//                          nothing: an ABORT leaves identical files.
//   Rule "decided"         A transaction open on the affected replica is decided on a healthy one when that
//                          one closes its records, holds a marker of the producer after them that the affected
//                          replica lacks, or removed them with no open transaction of the producer there (the
//                          cleaner never removes data above the first unstable offset) (ProveDecided).
//   Rule "weak signal"     A same-epoch transaction (marker epoch equal to its data's) that stayed open longer
//                          than transaction.max.timeout.ms (the coordinator aborts it, bumping the epoch, well
//                          before) suggests a merge; it may raise a suspected finding, never a certain one
//                          (SuspectMerge).
//   Rule "coordinator"     The coordinator's __transaction_state records prove a record's outcome only when they
//                          can belong to its transaction alone (txn/coordinator.h ViewOfTransaction with the
//                          record's own producer epoch, certain: transaction version 2, one epoch per
//                          transaction, one decision). Anything less they say is shown as a fact, never used as a
//                          proof (CoordinatorOutcome). __transaction_state is compacted by transactional id, so
//                          "no record" proves nothing either.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "diff/replica_state.h"
#include "txn/coordinator.h"

namespace klf {

enum class FindingCertainty { kCertain, kSuspected };
const char* FindingCertaintyName(FindingCertainty c);  // "certain" | "suspected"

enum class TxnOutcome { kCommit, kAbort, kUnknown };
const char* TxnOutcomeName(TxnOutcome o);  // "commit" | "abort" | "unknown"

// One piece of evidence: which replica, which file and byte position, and what it shows.
// TxnFact::replica of a fact from the coordinator's records (rule "coordinator"), not from a replica.
inline constexpr size_t kCoordinatorWitness = static_cast<size_t>(-1);

struct TxnFact {
  size_t replica = 0;     // index into the replicas, or kCoordinatorWitness
  std::string file;       // segment, .txnindex; empty when the fact is about no single file
  int64_t position = -1;  // byte position in `file` (-1: none)
  std::string fact;
};

// The segment file and byte position of the batch holding `offset` (or of the first batch after it),
// as a fact about `replica`.
TxnFact BatchFact(const std::vector<ReplicaState>& rs, size_t replica, int64_t offset, std::string fact);

// Rule "txnindex range": the .txnindex entry of `b` for `pid` whose range covers `offset` (index into
// b.aborted_txns), if any.
std::optional<size_t> AbortedRangeCovering(const ReplicaState& b, int64_t pid, int64_t offset);
// A fact naming b.aborted_txns[entry] with its file and position.
TxnFact TxnIndexFact(const ReplicaState& b, size_t replica, size_t entry, std::string fact);

// Rule "slot": could `offset` have held a lost marker of `pid` that replica `affected` lacks?
bool IsSlot(const std::vector<ReplicaState>& rs, size_t affected, int64_t pid, int64_t offset);
// The first slot strictly between `from` and `to`. Stretches of more than a million candidate offsets
// are not walked (their first unchecked offset counts as a slot).
std::optional<int64_t> FindSlot(const std::vector<ReplicaState>& rs, size_t affected, int64_t pid, int64_t from,
                                int64_t to);

// The data records (offsets, ascending) of transaction `txn` of replica `a`.
std::vector<int64_t> TxnRecords(const ReplicaState& a, int32_t txn);
// TxnRecords of every transaction of `a` (indexed as a.txns), in one pass over its records.
std::vector<std::vector<int64_t>> RecordsByTxn(const ReplicaState& a);

struct MergeProof {
  bool proven = false;
  // The records of the transaction below `split` belong to an earlier transaction of the leader than the
  // one the affected replica's marker (or open end) has: they are at stake.
  int64_t split = -1;
  std::vector<TxnFact> facts;
  std::set<size_t> witnesses;  // replicas whose files prove it
};
// Rule "merge" for transaction `txn` of replica `affected` (records: TxnRecords).
MergeProof ProveMerge(const std::vector<ReplicaState>& rs, size_t affected, int32_t txn,
                      std::span<const int64_t> records);

// Rule "coordinator": what `log` says about the transaction of producer `pid` whose data is at `epoch` on
// `topic_partition`, for replicas that `match` it (txn/coordinator.h MatchCluster). `outcome` is set only
// when the records prove it.
struct CoordinatorOutcome {
  std::optional<TxnOutcome> outcome;
  TxnFact fact;  // what the records say, certain or not (replica kCoordinatorWitness)
  // With `outcome`: the epoch of the decision (its PrepareCommit/PrepareAbort), which is the epoch of
  // the markers the coordinator wrote for it.
  std::optional<int16_t> marker_epoch;
};
CoordinatorOutcome OutcomeFromCoordinator(const CoordinatorLog& log, int64_t pid, int16_t epoch,
                                          const std::string& topic_partition, ClusterMatch match);

struct OutcomeProof {
  TxnOutcome outcome = TxnOutcome::kUnknown;           // when every proven record agrees and none is unproven
  std::set<TxnOutcome> seen;                           // outcomes single records are proven to have
  std::vector<int64_t> unproven;                       // records no replica decides
  std::vector<std::pair<int64_t, TxnOutcome>> proven;  // records some replica decides, with the first outcome proven
  std::vector<TxnFact> facts;
  std::set<size_t> witnesses;                       // replicas (never kCoordinatorWitness)
  bool coordinator_proves = false;                  // the coordinator's records prove some record's outcome
  std::optional<int16_t> coordinator_marker_epoch;  // then: the epoch of the markers it wrote
  std::vector<TxnFact> coordinator_facts;           // what they say where they prove nothing (one per epoch)
};
// Rule "outcome": what the replicas other than `affected` prove about the records (offsets on `affected`)
// of producer `pid`, and, when `coordinator` is given, rule "coordinator" for the records no replica
// decides. A replica's proof and the coordinator's that disagree decide nothing.
OutcomeProof ProveOutcome(const std::vector<ReplicaState>& rs, size_t affected, int64_t pid,
                          std::span<const int64_t> records, const CoordinatorLog* coordinator = nullptr);

// Rule "merge", from an outcome: a record of the transaction proven (ProveOutcome) to have the other
// outcome than the marker that closes it on the affected replica, with a slot between that record and the
// marker, proves that a marker was lost there. `split` is just after the last such record.
MergeProof MergeFromOutcome(const std::vector<ReplicaState>& rs, size_t affected, int32_t txn,
                            const OutcomeProof& outcome);

struct DecidedProof {
  bool proven = false;
  std::vector<TxnFact> facts;
  std::set<size_t> witnesses;
};
// Rule "decided" for an open transaction `txn` of replica `affected`: some healthy replica decided it,
// and the affected replica has a slot for the marker after its data (else it has not fetched it yet).
DecidedProof ProveDecided(const std::vector<ReplicaState>& rs, size_t affected, int32_t txn,
                          std::span<const int64_t> records);

struct Suspicion {
  bool raised = false;
  int64_t split = -1;  // records below it are at stake
  std::vector<TxnFact> facts;
};
// Rule "weak signal" for a decided transaction `txn` of replica `affected`.
// `wall_clock_times`: the fact's timestamps as text prints them (DiffOptions::wall_clock_times).
Suspicion SuspectMerge(const std::vector<ReplicaState>& rs, size_t affected, int32_t txn,
                       std::span<const int64_t> records, int64_t transaction_max_timeout_ms,
                       bool wall_clock_times = false);

}  // namespace klf
