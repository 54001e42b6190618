#include "compactor/retention.h"

namespace klf {

const char* BatchRetentionName(BatchRetention r) {
  switch (r) {
    case BatchRetention::kDelete: return "DELETE";
    case BatchRetention::kDeleteEmpty: return "DELETE_EMPTY";
    case BatchRetention::kRetainEmpty: return "RETAIN_EMPTY";
  }
  return "?";
}

const char* BatchReasonName(BatchReason r) {
  switch (r) {
    case BatchReason::kLastOfActiveProducer: return "last-batch-of-active-producer";
    case BatchReason::kLastOfRound: return "last-batch-of-round";
    case BatchReason::kAbortedData: return "aborted-data";
    case BatchReason::kMarkerPastHorizon: return "marker-past-horizon";
    case BatchReason::kRecordsDecide: return "records-decide";
  }
  return "?";
}

const char* RecordDecisionName(RecordDecision d) {
  switch (d) {
    case RecordDecision::kKept: return "kept";
    case RecordDecision::kKeptTombstone: return "kept-tombstone";
    case RecordDecision::kKeptBeyondMap: return "kept-beyond-map";
    case RecordDecision::kKeptControl: return "kept-marker";
    case RecordDecision::kRemovedSuperseded: return "removed-superseded";
    case RecordDecision::kRemovedPastHorizon: return "removed-past-horizon";
    case RecordDecision::kRemovedLegacyTombstone: return "removed-legacy-tombstone";
    case RecordDecision::kRemovedNoKey: return "removed-no-key";
    case RecordDecision::kRemovedAborted: return "removed-aborted";
    case RecordDecision::kRemovedMarker: return "removed-marker";
  }
  return "?";
}

BatchDecision CheckBatchRetention(const BatchHeader& batch, bool can_discard, const LastRecords& last_records,
                                  int64_t upper_bound_offset, int64_t current_time) {
  BatchDecision d;
  if (batch.is_control) {
    d.discard_batch_records =
        can_discard && batch.delete_horizon_ms.has_value() && *batch.delete_horizon_ms <= current_time;
  } else {
    d.discard_batch_records = can_discard;
  }
  bool is_last_of_producer = false;
  auto it = last_records.find(batch.producer_id);
  if (it != last_records.end()) {
    if (it->second.last_data_offset)
      is_last_of_producer = batch.last_offset == *it->second.last_data_offset;
    else
      is_last_of_producer = batch.is_control && batch.producer_epoch == it->second.producer_epoch;
  }
  if (batch.has_producer_id() && is_last_of_producer) {
    d.retention = BatchRetention::kRetainEmpty;
    d.reason = BatchReason::kLastOfActiveProducer;
  } else if (batch.next_offset() == upper_bound_offset) {
    d.retention = BatchRetention::kRetainEmpty;
    d.reason = BatchReason::kLastOfRound;
  } else if (d.discard_batch_records) {
    d.retention = BatchRetention::kDelete;
    d.reason = batch.is_control ? BatchReason::kMarkerPastHorizon : BatchReason::kAbortedData;
  } else {
    d.retention = BatchRetention::kDeleteEmpty;
    d.reason = BatchReason::kRecordsDecide;
  }
  d.contains_marker_for_empty_txn = can_discard && batch.is_control;
  return d;
}

RecordDecision ShouldRetainRecord(const BatchHeader& batch, const BatchDecision& batch_decision, const Record& record,
                                  const OffsetMap& map, int64_t current_time, bool retain_legacy_deletes,
                                  std::optional<int64_t> found) {
  if (batch_decision.discard_batch_records)
    return batch.is_control ? RecordDecision::kRemovedMarker : RecordDecision::kRemovedAborted;
  if (batch.is_control) return RecordDecision::kKeptControl;
  // Records beyond the mapped range are not judged this round (quirk §15.3).
  if (record.offset > map.latest_offset()) return RecordDecision::kKeptBeyondMap;
  if (!record.key) return RecordDecision::kRemovedNoKey;
  bool is_latest = record.offset >= (found ? *found : map.Get(*record.key));
  if (!is_latest) return RecordDecision::kRemovedSuperseded;
  if (record.value) return RecordDecision::kKept;
  bool retain_deletes;
  if (batch.magic >= 2)
    retain_deletes = !batch.delete_horizon_ms.has_value() || current_time < *batch.delete_horizon_ms;
  else
    retain_deletes = retain_legacy_deletes;
  if (retain_deletes) return RecordDecision::kKeptTombstone;
  return batch.magic >= 2 ? RecordDecision::kRemovedPastHorizon : RecordDecision::kRemovedLegacyTombstone;
}

}  // namespace klf
