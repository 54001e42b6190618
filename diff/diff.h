// Comparing replicas of one partition (`klf diff`, spec cli.md "diff", scenarios.md §4-§6).
//
// Replicas are aligned by offset. What is normal is not reported as divergence: different compaction
// progress (records, markers and whole batches removed on one replica and still present on another),
// a replica that merely lags (reported as missing_range), emptied control batches, gaps. What a
// consumer could see differently is reported with its evidence:
//   lost_abort          a COMMIT on the affected replica closes records that belonged to an earlier
//                       transaction of the leader (its transaction merged across a lost marker);
//                       certain when a healthy replica proves them aborted, else suspected;
//   lost_commit         an ABORT on the affected replica swallows records of an earlier transaction;
//                       certain when a healthy replica proves them committed, else suspected (also when
//                       they are superseded everywhere: latent damage, or none);
//   (the rules of both, and of hanging_transaction, are diff/txn_verdict.h's)
//   hanging_transaction a transaction open on the affected replica that the others decided: its LSO
//                       is pinned (keys that differ only because of the pin are not reported again);
//   lost_tombstone      a key alive on the affected replica that the healthy replicas deleted;
//   divergent_record    the same offset holding different records (truncation, unclean election), or
//                       a replica missing a record it cannot legitimately have lost;
//   missing_range       offsets a replica does not hold yet (lag) or any more (log start): not a divergence;
//   unrelated_logs      the directories are not copies of one partition (different topic ids, or no
//                       record in common at the offsets they share): nothing else is reported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diff/incident.h"
#include "diff/replica_state.h"
#include "diff/txn_verdict.h"

namespace klf {

enum class FindingKind {
  kLostTombstone,
  kLostAbort,
  kLostCommit,
  kHangingTransaction,
  kDivergentRecord,
  kMissingRange,
  kUnrelatedLogs,
};
const char* FindingKindName(FindingKind k);  // "lost_tombstone", ...
// Everything but missing_range is a divergence (exit 1).
inline bool IsDivergence(FindingKind k) { return k != FindingKind::kMissingRange; }

struct Finding {
  FindingKind kind = FindingKind::kDivergentRecord;
  bool has_key = false;              // a key is named (key may still be nullopt = null key)
  std::optional<std::string> key;    // raw key bytes
  std::optional<std::string> value;  // the value the affected replica serves, when one is named
  int64_t first_offset = -1, last_offset = -1;
  std::optional<int64_t> producer_id;
  std::optional<int16_t> producer_epoch;
  std::vector<size_t> affected, healthy;  // indices into the replicas
  std::string evidence;                   // offsets and files that prove it (one-sentence summary)
  std::string impact;                     // what consumers get, one sentence
  // Transaction findings (txn_verdict.h): certain only when the files prove both the merge (or, for a
  // hanging transaction, that a healthy replica decided it) and an outcome that differs; suspected when
  // only the merge (or a weak signal) is proven. Other findings are certain.
  FindingCertainty certainty = FindingCertainty::kCertain;
  std::optional<TxnOutcome> outcome;      // transaction findings: what the records at stake really were
  std::vector<TxnFact> facts;             // each piece of evidence with its replica, file and position
  std::vector<int64_t> records_at_stake;  // offsets on the affected replica whose visibility is in question
  std::string settle_with;                // when the outcome is unknown: what would settle it
  // A key's finding (lost_tombstone, or divergent_record of a key whose newer record the affected
  // replica lacks): first_offset is the affected replica's latest record of the key, last_offset the
  // healthy replicas' newer one when one still holds it (else first_offset).
  bool by_key = false;
  // The incident window of a lost marker, a lost tombstone or a divergent record, and the settings that
  // would have prevented it (diff/incident.h).
  std::optional<Incident> incident;
};

// The incident window's settings (IncidentOptions: --bytes, wall-clock times, delete.retention.ms and
// producer.id.expiration.ms when known) apply to the whole diff: its sentences (explanation, evidence,
// facts) print times and keys as the window's do. Wall-clock times are off for JSON, whose sentences keep
// the raw numbers.
struct DiffOptions : IncidentOptions {
  // The broker's transaction.max.timeout.ms (Kafka's default): a same-epoch transaction open longer
  // raises a suspected merge.
  int64_t transaction_max_timeout_ms = 900000;
  // The coordinator's records (`__transaction_state`), when given: rule "coordinator" of txn_verdict.h.
  const CoordinatorLog* coordinator = nullptr;
};

struct DiffReport {
  std::string partition;
  std::vector<Finding> findings;
  bool HasDivergence() const;
};

// Compares at least two loaded replicas of one partition.
DiffReport DiffReplicas(const std::vector<ReplicaState>& replicas, const DiffOptions& options = {});

}  // namespace klf
