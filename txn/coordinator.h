// The transaction coordinator, offline: what the `__transaction_state` partitions of a cluster's log
// dirs say about every transactional id, and that account joined with the data partitions' open
// transactions (`klf txn describe`, `klf txn find-hanging`).
//
// `__transaction_state` is compacted by transactional id: the latest record of an id is always kept,
// older ones may be gone. A coordinator record is evidence only for what it states: the id's producer
// id and epoch, its state, and the partitions of the transaction at that moment (PrepareCommit and
// PrepareAbort list them; CompleteCommit and CompleteAbort list none, as TransactionMetadata clears
// them). Nothing here guesses an outcome the records do not hold.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "partition/loaded_log.h"
#include "segment_reader/problem.h"

namespace klf {

// One record of `__transaction_state` (TransactionLogKey + TransactionLogValue).
struct CoordinatorRecord {
  std::string file;       // the segment
  uint64_t position = 0;  // the batch's byte position in it
  int64_t offset = 0;
  int64_t timestamp = -1;  // the record's timestamp
  bool tombstone = false;  // the id expired (a null value): nothing below applies
  int16_t value_version = -1;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t timeout_ms = 0;
  std::string state;                    // Kafka's TransactionState name (Empty, Ongoing, PrepareCommit, ...)
  std::vector<std::string> partitions;  // "topic-partition"
  int64_t last_update_ms = -1, start_ms = -1;
  std::optional<int64_t> previous_producer_id, next_producer_id;  // v1 tagged fields
  std::optional<int8_t> client_transaction_version;
};

struct TransactionalIdHistory {
  std::string id;
  std::vector<CoordinatorRecord> records;  // in log order (partition by partition, offset order)
  const CoordinatorRecord& latest() const { return records.back(); }
};

struct CoordinatorLog {
  std::vector<std::string> partition_dirs;  // the `__transaction_state-N` directories read
  std::set<std::string> cluster_ids;        // of their log dirs' meta.properties, where there is one
  std::map<std::string, TransactionalIdHistory> ids;
  // The operator vouches that these records and the data partitions come from one cluster (--same-cluster),
  // where the files cannot show it (MatchCluster).
  bool same_cluster_vouched = false;
};

// Whether a coordinator's records can speak for a data partition's copies. Producer ids are unique
// within one cluster only (ProducerIdManager), and every cluster hands them out from 0: two clusters'
// producer 0 at epoch 0 on a topic of the same name are different producers. So a coordinator's word
// on a transaction is certain only when the files show the coordinator's log and the copy are of one
// cluster: the same cluster id in both log dirs' meta.properties, or both in one log dir (one broker).
enum class ClusterMatch {
  kProven,    // one cluster, as the files show (or as the operator vouched)
  kUnproven,  // nothing shows it either way: the coordinator's word is at most suspected
  kForeign,   // the copy's meta.properties names another cluster: its records say nothing here
};
struct CopyOrigin {
  std::string partition_dir;
  std::optional<std::string> cluster_id;  // of the copy's log dir's meta.properties
};
// kProven when one of `copies` is proven (copies of one partition are taken to be of one cluster),
// else kForeign when one is foreign, else kUnproven.
ClusterMatch MatchCluster(const CoordinatorLog& log, const std::vector<CopyOrigin>& copies);
// What the files lack when the match is not proven, and what settles it, as a clause.
std::string ClusterMatchCaveat(const CoordinatorLog& log, ClusterMatch match);

// Reads every given `__transaction_state-N` directory (never modified). Copies of one partition from
// several brokers are read together, each offset once (a record one copy's cleaner removed may survive
// in another); copies holding different records at one offset are reported. Records that do not decode
// are reported (file, position, reason) and skipped. Returns false with *error when a directory
// cannot be loaded (partition/loaded_log.h) or a segment cannot be read.
bool LoadCoordinatorLog(const std::vector<std::string>& txn_state_dirs, CoordinatorLog* out, ProblemSink* sink,
                        std::string* error);

// `__transaction_state-<N>` (the coordinator's partitions; a partition directory name, no path).
bool IsTransactionStateDirName(const std::string& name);
// The coordinator's partition directories among `paths`: each PATH that is one, and those that each
// PATH holds when it is a log directory. Sorted, each once.
std::vector<std::string> FindTransactionStateDirs(const std::vector<std::string>& paths);

// What the coordinator's records say about one open transaction of a data partition.
enum class CoordinatorVerdict {
  kNoRecord,      // no record of this producer id: compacted away, or another cluster's coordinator log
  kCommitted,     // an Ongoing record at the transaction's epoch listing this partition, then a
                  // PrepareCommit listing it (same epoch, or above it under transaction version 2)
  kAborted,       // the same with PrepareAbort
  kOngoing,       // the latest such Ongoing record is not followed by a decision
  kUndetermined,  // records of the producer exist, but none (or several that disagree) decide this one
};
const char* CoordinatorVerdictName(CoordinatorVerdict v);  // "no-record", "committed", ...

struct CoordinatorView {
  CoordinatorVerdict verdict = CoordinatorVerdict::kNoRecord;
  // kCommitted/kAborted: true only when the records can belong to this transaction alone (transaction
  // version 2, one epoch per transaction, and a single decision); otherwise the verdict is suspected.
  bool certain = false;
  std::string transactional_id;             // when a record of the producer was found
  std::vector<CoordinatorRecord> evidence;  // the records the verdict rests on, in log order
  std::string why;                          // the verdict in words
};

// The coordinator's word on the transaction of `producer_id` at `producer_epoch` (its data's epoch)
// on partition `topic_partition` ("topic-partition"), for copies that `match` the log (MatchCluster):
// certain only when proven; kForeign yields kNoRecord.
CoordinatorView ViewOfTransaction(const CoordinatorLog& log, int64_t producer_id, int16_t producer_epoch,
                                  const std::string& topic_partition, ClusterMatch match);

// What an operator may do about an open transaction by the coordinator's word `c`: a manual abort
// writes an ABORT, right only when the coordinator aborted it; if it committed, the abort hides
// committed data. `abort_command` is printed only when the abort agrees with a certain decision;
// `settle` says what would settle a suspected one.
std::string CoordinatorAdvice(const CoordinatorView& c, const std::string& abort_command, const std::string& settle);

// One open (hanging) transaction of a data partition, as the partition's broker would load it.
struct HangingTransaction {
  std::string partition_dir;
  std::string topic_partition;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int64_t first_offset = 0;
  int64_t last_offset = -1;     // last data offset of the producer
  int64_t last_timestamp = -1;  // of that data
  int64_t last_stable_offset = 0, high_watermark = 0;
  bool pins_lso = false;  // its first offset is the partition's LSO, below the HW
  CoordinatorView coordinator;
};

// Every open transaction of every given data partition directory, joined with `coordinator`, in the
// order of `partition_dirs`. Partition directories that cannot be loaded are reported to `sink` (check
// "partition-load") and listed in *unreadable; the others are still examined. The directories are loaded
// on `jobs` threads (0: one per core); the result and the reports do not depend on it.
std::vector<HangingTransaction> FindHangingTransactions(const std::vector<std::string>& partition_dirs,
                                                        const CoordinatorLog& coordinator, const LoadOptions& options,
                                                        ProblemSink* sink, std::vector<std::string>* unreadable,
                                                        unsigned jobs = 1);

}  // namespace klf
