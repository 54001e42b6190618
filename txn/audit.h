// The transaction audit (`klf txn audit`): the coordinator's decisions held against the markers that
// every given copy of every data partition holds. Kafka has no such check, online or offline: a
// follower that missed a marker serves the wrong outcome until it is rebuilt.
//
// What a coordinator record proves about a partition's markers, and nothing more:
//   * The coordinator writes a transaction's COMMIT/ABORT markers at the producer id and epoch of its
//     PrepareCommit/PrepareAbort record (TransactionMetadata.prepareComplete, then
//     TransactionMarkerChannelManager). Under transaction version 2 (KIP-890, the record's
//     ClientTransactionVersion) that epoch was bumped for this transaction alone, so a marker of that
//     producer id and epoch on any partition is this transaction's, and one of the other type
//     contradicts the coordinator (certain). Its CompleteCommit/CompleteAbort carries the same id and
//     epoch, except after a producer-id rollover (the new id at epoch 0), which is therefore not used.
//   * A partition the Prepare record lists (or its Ongoing record) whose copy holds the transaction's
//     data (transaction version 2: the producer's data at the Ongoing record's epoch, else the epoch
//     below the decision) and no marker at the decision's epoch lacks the marker. It lost it for certain
//     when the copy also holds a later batch of the producer (it fetched past where the marker was), or
//     when another copy holds the marker below this copy's log end; otherwise it may simply not have
//     fetched it yet (suspected).
//     A `.txnindex` entry of the producer over that data also proves it: the copy applied another
//     ABORT after the data (and serves committed data as aborted, if the coordinator committed). So
//     does another copy with the transaction decided (no open transaction of the producer, the data's
//     offsets covered) below a log end this copy's log reaches.
//   * Producer ids are unique within one cluster (ProducerIdManager): the coordinator's log and the
//     partitions must come from the same cluster. Where both log dirs have a meta.properties, a copy of
//     another cluster is refused (problem "cluster-mismatch"), never judged. Where nothing shows one
//     cluster (txn/coordinator.h MatchCluster: the same cluster id, or one log dir, or --same-cluster),
//     every finding is suspected at most.
//   * Under transaction version 0/1 one epoch spans many transactions and the older records of an id
//     are compacted away: a record cannot be tied to one marker. Such decisions are counted, not judged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "partition/loaded_log.h"
#include "segment_reader/problem.h"
#include "txn/coordinator.h"

namespace klf {

enum class AuditKind {
  kContradicts,    // the copy holds a marker of the other outcome at the decision's epoch
  kMissingMarker,  // the copy holds the transaction's data but not its marker
};
const char* AuditKindName(AuditKind k);  // "contradicts", "missing-marker"

// One piece of a partition copy's evidence.
struct AuditFact {
  std::string file;
  uint64_t position = 0;
  std::string fact;
};

struct AuditFinding {
  AuditKind kind = AuditKind::kContradicts;
  bool certain = false;
  std::string topic_partition;
  std::string partition_dir;  // the copy
  std::string transactional_id;
  int64_t producer_id = -1;
  int16_t data_epoch = -1;       // the epoch of the transaction's data
  int16_t marker_epoch = -1;     // the epoch of its markers (the decision's)
  bool committed = false;        // the coordinator's outcome
  CoordinatorRecord decision;    // the PrepareCommit/PrepareAbort (or Complete) record
  std::vector<AuditFact> facts;  // the copy's side
  std::string why;               // the finding in one sentence
};

struct AuditReport {
  int decisions = 0;           // decisions of the coordinator found (Prepare/Complete records)
  int version2_decisions = 0;  // of them, judged (transaction version 2)
  int unjudged_decisions = 0;  // version 0/1, or a rollover's Complete: counted, not judged
  int partition_copies = 0;    // data partition copies read
  int markers_checked = 0;     // markers found at a judged decision's producer id and epoch
  int markers_agree = 0;       // of them, of the coordinator's outcome
  std::vector<AuditFinding> findings;
  std::vector<std::string> unreadable;  // partition copies that could not be loaded
  std::vector<std::string> foreign;     // copies whose meta.properties names another cluster (not judged)
};

// Audits `partition_dirs` (data partitions, copies of one partition from several brokers included)
// against `coordinator`. A copy that cannot be loaded is reported to `sink` (check "partition-load")
// and listed in `unreadable`; the others are still audited. The copies are loaded on `jobs` threads (0:
// one per core); the report does not depend on it.
AuditReport AuditTransactions(const CoordinatorLog& coordinator, const std::vector<std::string>& partition_dirs,
                              const LoadOptions& options, ProblemSink* sink, unsigned jobs = 1);

}  // namespace klf
