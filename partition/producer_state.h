// Producer state as Kafka rebuilds it while loading or recovering a log (ProducerStateManager,
// ProducerAppendInfo, ProducerStateEntry; spec kafka-on-disk-format.md §9, §10, §14 step 2).
//
// Shared read-side semantics for the writer (which `.txnindex` entries and `.snapshot` files a
// broker would write), verify, the compactor and diff. Batches are applied as the REPLICATION /
// recovery path does: epoch and coordinator-epoch regressions and a non-transactional write inside
// an open transaction are reported (Kafka logs or throws) but the state is updated as Kafka's code
// would have done up to that point.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/index_files.h"
#include "segment_reader/layout.h"
#include "segment_reader/problem.h"
#include "segment_reader/producer_snapshot.h"

namespace klf {

struct LoadedLog;  // partition/loaded_log.h

struct ProducerStateOptions {
  int64_t producer_id_expiration_ms = 86400000;  // producer.id.expiration.ms (default 1 day)
};

// BatchMetadata.java: one of the producer's last data batches.
struct ProducerBatchMetadata {
  int32_t last_seq = -1;
  int64_t last_offset = -1;
  int32_t offset_delta = 0;
  int64_t timestamp = kNoTimestamp;
  int32_t first_seq() const;  // lastSeq - offsetDelta with DefaultRecordBatch.decrementSequence's wrap
  int64_t first_offset() const { return last_offset - offset_delta; }
  bool operator==(const ProducerBatchMetadata&) const = default;
};

// ProducerStateEntry.java.
struct ProducerStateEntry {
  static constexpr size_t kNumBatchesToRetain = 5;  // NUM_BATCHES_TO_RETAIN

  int64_t producer_id = 0;
  int16_t producer_epoch = kNoProducerEpoch;
  int32_t coordinator_epoch = -1;
  int64_t last_timestamp = kNoTimestamp;
  std::optional<int64_t> current_txn_first_offset;
  std::deque<ProducerBatchMetadata> batch_metadata;  // oldest first, at most 5

  bool empty() const { return batch_metadata.empty(); }
  int32_t first_seq() const;          // -1 when empty
  int32_t last_seq() const;           // -1 when empty
  int64_t first_data_offset() const;  // -1 when empty
  int64_t last_data_offset() const;   // -1 when empty
  int32_t last_offset_delta() const;  // 0 when empty

  // Clears the batch metadata when the epoch changes (maybeUpdateProducerEpoch).
  void MaybeUpdateProducerEpoch(int16_t epoch);
  void AddBatch(int16_t epoch, int32_t last_seq, int64_t last_offset, int32_t offset_delta, int64_t timestamp);

  ProducerSnapshotEntry ToSnapshotEntry() const;
  static ProducerStateEntry FromSnapshotEntry(const ProducerSnapshotEntry& e);
};

// TxnMetadata.java: an ongoing transaction, keyed by its first offset.
struct TxnMetadata {
  int64_t producer_id = 0;
  int64_t first_offset = 0;
  std::optional<int64_t> last_offset;  // set once completed
};

// CompletedTxn.java.
struct CompletedTxn {
  int64_t producer_id = 0;
  int64_t first_offset = 0;
  int64_t last_offset = 0;  // offset of the marker
  bool is_aborted = false;
  bool operator==(const CompletedTxn&) const = default;
};

// What applying one batch did.
struct BatchUpdate {
  // Set when a marker completed a transaction that had data (ProducerAppendInfo.appendEndTxnMarker).
  std::optional<CompletedTxn> completed;
  // ProducerStateManager.lastStableOffset(completedTxn) at that moment: first offset of the earliest
  // other producer's still-open transaction, else marker offset + 1. Valid when `completed`.
  int64_t last_stable_offset = -1;
  // The `.txnindex` entry Kafka appends (LogSegment.updateTxnIndex): only for aborted transactions.
  std::optional<AbortedTxn> aborted_txn;
};

class ProducerStateManager {
 public:
  explicit ProducerStateManager(ProducerStateOptions options = {});

  // LogSegment.updateProducerState for one batch: for a batch with a producer id, prepareUpdate /
  // ProducerAppendInfo.append / update, then lastStableOffset + completeTxn for a completed
  // transaction; in all cases updateMapEndOffset(lastOffset + 1). Magic < 2 batches only move the map
  // end offset. A control batch's first record is decoded (its marker type, coordinator epoch and
  // record timestamp matter); an EMPTY control batch (its transaction cleaned away) does not touch
  // the transaction, but still registers the producer with an empty entry if it was unknown (Kafka
  // calls update() regardless). Problems (undecodable marker, fenced epochs, non-transactional write
  // in an open transaction) go to `sink` with `file` and the batch position.
  BatchUpdate Apply(const BatchView& batch, const std::string& file, ProblemSink* sink);

  // The lower-level steps (same semantics as Kafka's ProducerAppendInfo), for callers that already
  // decoded the batch.
  BatchUpdate ApplyDataBatch(const BatchHeader& batch, const std::string& file, ProblemSink* sink);
  BatchUpdate ApplyEndTxnMarker(const BatchHeader& batch, const ControlRecord& marker, int64_t record_timestamp,
                                const std::string& file, ProblemSink* sink);
  // An empty control batch (no records): registers the producer if unknown, nothing else.
  void ApplyEmptyControlBatch(const BatchHeader& batch);
  void UpdateMapEndOffset(int64_t offset) { map_end_offset_ = offset; }

  // Loads a snapshot as loadFromSnapshot does: producers that are expired at `current_time_ms` (no
  // open transaction and now - lastTimestamp >= producer.id.expiration.ms) are dropped; open
  // transactions become ongoing; mapEndOffset = snapshot offset. Replaces the current state.
  void LoadSnapshot(const ProducerSnapshot& snapshot, int64_t current_time_ms);
  // Clears everything and starts at `offset` (truncateFullyAndStartAt).
  void TruncateFullyAndStartAt(int64_t offset);
  // removeExpiredProducers: never a producer with an open transaction.
  void RemoveExpiredProducers(int64_t current_time_ms);
  bool IsProducerExpired(const ProducerStateEntry& entry, int64_t current_time_ms) const;

  // Entries as writeSnapshot iterates them (Java HashMap order of the producers map).
  std::vector<ProducerSnapshotEntry> SnapshotEntries() const;
  // The bytes of `<map end offset>.snapshot`.
  std::string EncodeSnapshot() const;

  int64_t map_end_offset() const { return map_end_offset_; }
  const std::map<int64_t, ProducerStateEntry>& producers() const { return producers_; }
  const ProducerStateEntry* Find(int64_t producer_id) const;
  // ongoingTxns: first offset → transaction.
  const std::map<int64_t, TxnMetadata>& ongoing_txns() const { return ongoing_txns_; }
  // firstUndecidedOffset: first offset of the earliest open transaction.
  std::optional<int64_t> FirstUndecidedOffset() const;
  // The log's last stable offset once every completed transaction is replicated: the first undecided
  // offset, capped by the high watermark (UnifiedLog: min(firstUnstableOffset, highWatermark)).
  int64_t LastStableOffset(int64_t high_watermark) const;

 private:
  ProducerStateEntry& EntryFor(int64_t producer_id);  // inserting an empty entry when unknown
  int64_t LastStableOffsetOf(const CompletedTxn& txn) const;
  void CompleteTxn(const CompletedTxn& txn);

  ProducerStateOptions options_;
  std::map<int64_t, ProducerStateEntry> producers_;
  // The producers map's key order as Java's HashMap keeps it (never shrinks, keeps bucket order
  // through removals and clear()), which writeSnapshot iterates.
  JavaLongHashMapOrder hash_order_;
  std::map<int64_t, TxnMetadata> ongoing_txns_;
  int64_t map_end_offset_ = 0;
};

// Loads a partition's producer state as a broker does on startup (LogLoader/UnifiedLog
// rebuildProducerState): the latest valid `.snapshot` at or below the log end offset (snapshots with a
// bad version or CRC are reported and skipped, as Kafka deletes them and tries the next older one),
// then every batch of the segments from the snapshot offset to the end replayed through Apply.
// Without a usable snapshot replay starts at the first segment. Returns false when the directory
// cannot be listed, or a segment or snapshot in it exists but cannot be read (reported, check
// "file-read"): a state built without it would be wrong, not partial.
struct ProducerStateLoadResult {
  std::optional<int64_t> snapshot_offset;  // the snapshot used, if any
  int64_t log_end_offset = 0;
  std::vector<BatchUpdate> replayed_completions;  // completed transactions seen while replaying
};
// `log_start_offset` (LoadedLog's: the checkpoint's, never below the first segment): replay never starts
// below it; unset, the first segment's base offset.
// The files are read through `env` (segment_reader/env.h; null: Env::Default()).
bool LoadProducerState(const std::string& partition_dir, int64_t current_time_ms, ProducerStateManager* state,
                       ProducerStateLoadResult* result, ProblemSink* sink,
                       std::optional<int64_t> log_start_offset = std::nullopt, Env* env = nullptr);
// The same on a log already listed (LoadedLog::Open scans once for everything it loads): its snapshot
// files and unreadable files from `log.scan`, the replay on its pass (ForEachBatch, through log.env).
bool LoadProducerState(const LoadedLog& log, int64_t current_time_ms, ProducerStateManager* state,
                       ProducerStateLoadResult* result, ProblemSink* sink,
                       std::optional<int64_t> log_start_offset = std::nullopt);

}  // namespace klf
