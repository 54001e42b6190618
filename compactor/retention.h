// The log cleaner's RecordFilter (spec kafka-log-cleaner.md §8) as pure functions with named
// results: what happens to a batch (checkBatchRetention) and to each record (shouldRetainRecord).
// The names are what `klf compact --explain` prints.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "compactor/offset_map.h"
#include "segment_reader/batch.h"

namespace klf {

// MemoryRecords.RecordFilter.BatchRetention.
enum class BatchRetention { kDelete, kDeleteEmpty, kRetainEmpty };
const char* BatchRetentionName(BatchRetention r);  // "DELETE", "DELETE_EMPTY", "RETAIN_EMPTY"

// lastRecordsOfActiveProducers (§7.3): per active producer, the last offset of its last data batch
// (absent if none is recorded) and its current epoch.
struct LastRecord {
  std::optional<int64_t> last_data_offset;
  int16_t producer_epoch = -1;
};
using LastRecords = std::map<int64_t, LastRecord>;

// Why a batch has the retention it has (for --explain).
enum class BatchReason {
  kLastOfActiveProducer,  // RETAIN_EMPTY: the producer's last data batch / current-epoch marker
  kLastOfRound,           // RETAIN_EMPTY: nextOffset == the round's upper bound
  kAbortedData,           // DELETE: data of an aborted transaction
  kMarkerPastHorizon,     // DELETE: a discardable marker whose delete horizon has passed
  kRecordsDecide,         // DELETE_EMPTY: dropped only if no record survives
};
const char* BatchReasonName(BatchReason r);

struct BatchDecision {
  BatchRetention retention = BatchRetention::kDeleteEmpty;
  BatchReason reason = BatchReason::kRecordsDecide;
  bool discard_batch_records = false;
  bool contains_marker_for_empty_txn = false;
};

// §8.1 given `can_discard` = the CleanedTransactionMetadata answer for this batch.
BatchDecision CheckBatchRetention(const BatchHeader& batch, bool can_discard, const LastRecords& last_records,
                                  int64_t upper_bound_offset, int64_t current_time);

// Per-record outcome (§8.2), with the rule that decided.
enum class RecordDecision {
  kKept,                    // latest value for its key
  kKeptTombstone,           // latest, null value, horizon not reached (or none yet)
  kKeptBeyondMap,           // offset > map.latestOffset: never judged this round
  kKeptControl,             // control record of a kept marker
  kRemovedSuperseded,       // a later record has the same key
  kRemovedPastHorizon,      // tombstone whose batch delete horizon has passed
  kRemovedLegacyTombstone,  // v0/v1 tombstone in a segment older than the legacy horizon
  kRemovedNoKey,            // null key in a compacted log (counted as invalid)
  kRemovedAborted,          // data of an aborted transaction
  kRemovedMarker,           // discardable marker past its horizon
};
const char* RecordDecisionName(RecordDecision d);
inline bool IsRetained(RecordDecision d) {
  return d == RecordDecision::kKept || d == RecordDecision::kKeptTombstone || d == RecordDecision::kKeptBeyondMap ||
         d == RecordDecision::kKeptControl;
}

// §8.2. `retain_legacy_deletes` = source segment mtime > legacyDeleteHorizonMs (v0/v1 only).
// `found`: map.Get(record.key) when the caller already has it (lookup_ahead.h); asked of `map` otherwise.
RecordDecision ShouldRetainRecord(const BatchHeader& batch, const BatchDecision& batch_decision, const Record& record,
                                  const OffsetMap& map, int64_t current_time, bool retain_legacy_deletes,
                                  std::optional<int64_t> found = std::nullopt);

}  // namespace klf
