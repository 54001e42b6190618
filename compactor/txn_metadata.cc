#include "compactor/txn_metadata.h"

namespace klf {

void CleanedTransactionMetadata::AddAbortedTransactions(const std::vector<AbortedTxn>& txns) {
  for (const auto& t : txns) aborted_.push(t);
}

void CleanedTransactionMetadata::ConsumeAbortedTxnsUpTo(int64_t offset) {
  while (!aborted_.empty() && aborted_.top().first_offset <= offset) {
    AbortedTxn t = aborted_.top();
    aborted_.pop();
    // An existing entry for the producer is kept (putIfAbsent).
    ongoing_aborted_.try_emplace(t.producer_id, Ongoing{t, std::nullopt});
  }
}

bool CleanedTransactionMetadata::OnBatchRead(const BatchHeader& batch) {
  ConsumeAbortedTxnsUpTo(batch.last_offset);
  if (!batch.is_transactional) return false;
  auto it = ongoing_aborted_.find(batch.producer_id);
  if (it != ongoing_aborted_.end()) {
    it->second.last_observed_batch_offset = batch.last_offset;
    return true;
  }
  ongoing_committed_.insert(batch.producer_id);
  return false;
}

bool CleanedTransactionMetadata::OnControlBatchRead(const BatchHeader& batch, std::optional<ControlType> type) {
  ConsumeAbortedTxnsUpTo(batch.last_offset);
  if (!type) return true;  // an empty control batch left by an earlier clean
  switch (*type) {
    case ControlType::kAbort: {
      auto it = ongoing_aborted_.find(batch.producer_id);
      if (it == ongoing_aborted_.end()) return true;
      Ongoing o = it->second;
      ongoing_aborted_.erase(it);
      if (o.last_observed_batch_offset) {
        if (cleaned_index_) cleaned_index_->push_back(o.txn);
        return false;
      }
      return true;
    }
    case ControlType::kCommit:
      // Discardable only if no data batch of this transaction was read in this round.
      return ongoing_committed_.erase(batch.producer_id) == 0;
    default: return false;
  }
}

}  // namespace klf
