// Kafka's CleanedTransactionMetadata (spec kafka-log-cleaner.md §7.2): while the cleaner walks the
// batches of a round in offset order, it tracks which transactions were aborted (from the .txnindex)
// and which were seen, to decide whether data batches belong to an aborted transaction and whether a
// COMMIT/ABORT marker may be discarded; and it rebuilds the cleaned segment's .txnindex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/index_files.h"

namespace klf {

class CleanedTransactionMetadata {
 public:
  // Adds aborted transactions (collectAbortedTransactions, §7.1). Duplicates are harmless.
  void AddAbortedTransactions(const std::vector<AbortedTxn>& txns);

  // §7.2 onBatchRead: a data batch; returns true when it belongs to an aborted transaction.
  bool OnBatchRead(const BatchHeader& batch);
  // §7.2 onControlBatchRead: `type` is the control type of the batch's first record, nullopt when
  // the batch has no records. Returns true when the marker may be discarded.
  bool OnControlBatchRead(const BatchHeader& batch, std::optional<ControlType> type);

  // The cleaned segment's transaction index: kept ABORT markers append their entry here (when set).
  void set_cleaned_index(std::vector<AbortedTxn>* index) { cleaned_index_ = index; }

 private:
  struct Ongoing {
    AbortedTxn txn;
    std::optional<int64_t> last_observed_batch_offset;
  };
  struct ByFirstOffset {
    bool operator()(const AbortedTxn& a, const AbortedTxn& b) const { return a.first_offset > b.first_offset; }
  };
  void ConsumeAbortedTxnsUpTo(int64_t offset);

  std::priority_queue<AbortedTxn, std::vector<AbortedTxn>, ByFirstOffset> aborted_;
  std::map<int64_t, Ongoing> ongoing_aborted_;
  std::set<int64_t> ongoing_committed_;
  std::vector<AbortedTxn>* cleaned_index_ = nullptr;
};

}  // namespace klf
