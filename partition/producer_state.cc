// Producer state (see producer_state.h). Kafka sources followed: ProducerStateManager.java (update,
// lastStableOffset, completeTxn, loadFromSnapshot, isProducerExpired, takeSnapshot),
// ProducerAppendInfo.java (append, appendDataBatch, appendEndTxnMarker), ProducerStateEntry.java,
// LogSegment.updateProducerState.
#include "partition/producer_state.h"

#include <algorithm>
#include <limits>

#include "partition/loaded_log.h"
#include "segment_reader/file.h"
#include "segment_reader/layout.h"
#include "segment_reader/java_long.h"
#include "segment_reader/problem.h"

namespace klf {
namespace {

// DefaultRecordBatch.decrementSequence.
int32_t DecrementSequence(int32_t sequence, int32_t decrement) {
  if (sequence < decrement) return std::numeric_limits<int32_t>::max() - (decrement - sequence) + 1;
  return sequence - decrement;
}

}  // namespace

int32_t ProducerBatchMetadata::first_seq() const { return DecrementSequence(last_seq, offset_delta); }

int32_t ProducerStateEntry::first_seq() const { return empty() ? kNoSequence : batch_metadata.front().first_seq(); }
int32_t ProducerStateEntry::last_seq() const { return empty() ? kNoSequence : batch_metadata.back().last_seq; }
int64_t ProducerStateEntry::first_data_offset() const { return empty() ? -1 : batch_metadata.front().first_offset(); }
int64_t ProducerStateEntry::last_data_offset() const { return empty() ? -1 : batch_metadata.back().last_offset; }
int32_t ProducerStateEntry::last_offset_delta() const { return empty() ? 0 : batch_metadata.back().offset_delta; }

void ProducerStateEntry::MaybeUpdateProducerEpoch(int16_t epoch) {
  if (producer_epoch != epoch) {
    batch_metadata.clear();
    producer_epoch = epoch;
  }
}

void ProducerStateEntry::AddBatch(int16_t epoch, int32_t last_seq_, int64_t last_offset, int32_t offset_delta,
                                  int64_t timestamp) {
  MaybeUpdateProducerEpoch(epoch);
  if (batch_metadata.size() == kNumBatchesToRetain) batch_metadata.pop_front();
  batch_metadata.push_back(ProducerBatchMetadata{last_seq_, last_offset, offset_delta, timestamp});
  last_timestamp = timestamp;
}

ProducerSnapshotEntry ProducerStateEntry::ToSnapshotEntry() const {
  ProducerSnapshotEntry e;
  e.producer_id = producer_id;
  e.epoch = producer_epoch;
  e.last_sequence = last_seq();
  e.last_offset = last_data_offset();
  e.offset_delta = last_offset_delta();
  e.timestamp = last_timestamp;
  e.coordinator_epoch = coordinator_epoch;
  e.current_txn_first_offset = current_txn_first_offset.value_or(-1);
  return e;
}

ProducerStateEntry ProducerStateEntry::FromSnapshotEntry(const ProducerSnapshotEntry& e) {
  // ProducerStateManager.readSnapshot seeds a BatchMetadata only when the entry's lastOffset is
  // >= 0; an entry without one (a producer whose only batch left is a marker) writes back as
  // lastSeq -1, lastOffset -1, offsetDelta 0, which is what such a snapshot holds.
  ProducerStateEntry s;
  s.producer_id = e.producer_id;
  s.producer_epoch = e.epoch;
  s.coordinator_epoch = e.coordinator_epoch;
  s.last_timestamp = e.timestamp;
  if (e.current_txn_first_offset >= 0) s.current_txn_first_offset = e.current_txn_first_offset;
  if (e.has_batch()) {
    s.batch_metadata.push_back(ProducerBatchMetadata{e.last_sequence, e.last_offset, e.offset_delta, e.timestamp});
  }
  return s;
}

ProducerStateManager::ProducerStateManager(ProducerStateOptions options) : options_(options) {}

ProducerStateEntry& ProducerStateManager::EntryFor(int64_t producer_id) {
  auto it = producers_.find(producer_id);
  if (it != producers_.end()) return it->second;
  // ProducerStateEntry.empty: epoch -1, coordinator epoch -1, timestamp -1, no transaction.
  ProducerStateEntry e;
  e.producer_id = producer_id;
  hash_order_.Put(producer_id);
  return producers_.emplace(producer_id, std::move(e)).first->second;
}

const ProducerStateEntry* ProducerStateManager::Find(int64_t producer_id) const {
  auto it = producers_.find(producer_id);
  return it == producers_.end() ? nullptr : &it->second;
}

BatchUpdate ProducerStateManager::Apply(const BatchView& batch, const std::string& file, ProblemSink* sink) {
  const BatchHeader& h = batch.header;
  BatchUpdate update;
  // LogSegment.recover only calls updateProducerState for magic >= 2 batches; legacy entries carry no
  // producer id. The map end offset still moves past them (rebuildProducerState reads them too).
  if (h.magic >= 2 && h.has_producer_id()) {
    if (h.is_control) {
      if (h.record_count <= 0) {
        // "An empty control batch means the entire transaction has been cleaned from the log".
        ApplyEmptyControlBatch(h);
      } else {
        RecordDecoder decoder;
        NullSink quiet;
        std::optional<ControlRecord> marker;
        std::string why;
        if (!decoder.Decode(batch, file, &quiet) || decoder.records().empty()) {
          Report(sink, Severity::kError, file, h.position, "txn-marker",
                 "control batch records do not decode; producer state not updated for producer " +
                     std::to_string(h.producer_id));
        } else if (marker = ControlBatchMarker(decoder.records(), &why); !marker) {
          Report(sink, Severity::kError, file, h.position, "txn-marker", "control record: " + why);
        } else if (!IsEndTxnMarker(marker->type)) {
          // EndTransactionMarker.deserialize refuses other control types.
          Report(sink, Severity::kError, file, h.position, "txn-marker",
                 std::string("control batch of a producer holds a ") + ControlTypeName(marker->type) +
                     " record, expected an end-transaction marker (ABORT or COMMIT)");
        } else {
          update = ApplyEndTxnMarker(h, *marker, decoder.records().front().timestamp, file, sink);
        }
      }
    } else {
      update = ApplyDataBatch(h, file, sink);
    }
  }
  UpdateMapEndOffset(JavaAdd(h.last_offset, 1));
  return update;
}

BatchUpdate ProducerStateManager::ApplyDataBatch(const BatchHeader& h, const std::string& file, ProblemSink* sink) {
  BatchUpdate update;
  ProducerStateEntry& entry = EntryFor(h.producer_id);
  if (h.producer_epoch < entry.producer_epoch) {
    // checkProducerEpoch with origin REPLICATION: a warning, the batch is applied.
    Report(sink, Severity::kWarning, file, h.position, "producer-epoch",
           "producer " + std::to_string(h.producer_id) + " epoch " + std::to_string(h.producer_epoch) + " at offset " +
               std::to_string(h.base_offset) + " is below the last seen epoch " + std::to_string(entry.producer_epoch));
  }
  if (entry.current_txn_first_offset && !h.is_transactional) {
    // ProducerAppendInfo throws InvalidTxnStateException before the state is updated.
    Report(sink, Severity::kError, file, h.position, "txn-state",
           "non-transactional batch at offset " + std::to_string(h.base_offset) + " from producer " +
               std::to_string(h.producer_id) + " inside its open transaction (first offset " +
               std::to_string(*entry.current_txn_first_offset) + "); Kafka rejects it");
    return update;
  }
  entry.AddBatch(h.producer_epoch, h.last_sequence(), h.last_offset, int32_t(h.last_offset - h.base_offset),
                 h.max_timestamp);
  if (!entry.current_txn_first_offset && h.is_transactional) {
    entry.current_txn_first_offset = h.base_offset;
    ongoing_txns_[h.base_offset] = TxnMetadata{h.producer_id, h.base_offset, std::nullopt};
  }
  return update;
}

BatchUpdate ProducerStateManager::ApplyEndTxnMarker(const BatchHeader& h, const ControlRecord& marker,
                                                    int64_t record_timestamp, const std::string& file,
                                                    ProblemSink* sink) {
  BatchUpdate update;
  ProducerStateEntry& entry = EntryFor(h.producer_id);
  if (h.producer_epoch < entry.producer_epoch) {
    Report(sink, Severity::kWarning, file, h.position, "producer-epoch",
           "transaction marker of producer " + std::to_string(h.producer_id) + " at offset " +
               std::to_string(h.base_offset) + " has epoch " + std::to_string(h.producer_epoch) +
               " below the last seen epoch " + std::to_string(entry.producer_epoch));
  }
  if (entry.coordinator_epoch > marker.coordinator_epoch) {
    Report(sink, Severity::kWarning, file, h.position, "coordinator-epoch",
           "transaction marker of producer " + std::to_string(h.producer_id) + " at offset " +
               std::to_string(h.base_offset) + " has coordinator epoch " + std::to_string(marker.coordinator_epoch) +
               " below the known " + std::to_string(entry.coordinator_epoch));
  }
  // Only a transaction that had data completes (appendEndTxnMarker).
  if (entry.current_txn_first_offset) {
    update.completed =
        CompletedTxn{h.producer_id, *entry.current_txn_first_offset, h.base_offset, marker.type == ControlType::kAbort};
  }
  entry.MaybeUpdateProducerEpoch(h.producer_epoch);
  entry.coordinator_epoch = marker.coordinator_epoch;
  entry.current_txn_first_offset.reset();
  entry.last_timestamp = record_timestamp;
  if (update.completed) {
    update.last_stable_offset = LastStableOffsetOf(*update.completed);
    if (update.completed->is_aborted) {
      AbortedTxn a;
      a.producer_id = update.completed->producer_id;
      a.first_offset = update.completed->first_offset;
      a.last_offset = update.completed->last_offset;
      a.last_stable_offset = update.last_stable_offset;
      update.aborted_txn = a;
    }
    CompleteTxn(*update.completed);
  }
  return update;
}

void ProducerStateManager::ApplyEmptyControlBatch(const BatchHeader& h) { EntryFor(h.producer_id); }

int64_t ProducerStateManager::LastStableOffsetOf(const CompletedTxn& txn) const {
  // findNextIncompleteTxn: the earliest ongoing transaction of another producer.
  for (const auto& [first, meta] : ongoing_txns_) {
    if (meta.producer_id != txn.producer_id) return first;
  }
  return JavaAdd(txn.last_offset, 1);
}

void ProducerStateManager::CompleteTxn(const CompletedTxn& txn) { ongoing_txns_.erase(txn.first_offset); }

void ProducerStateManager::LoadSnapshot(const ProducerSnapshot& snapshot, int64_t current_time_ms) {
  TruncateFullyAndStartAt(snapshot.offset);
  for (const ProducerSnapshotEntry& e : snapshot.entries) {
    ProducerStateEntry entry = ProducerStateEntry::FromSnapshotEntry(e);
    if (IsProducerExpired(entry, current_time_ms)) continue;
    hash_order_.Put(e.producer_id);
    if (entry.current_txn_first_offset) {
      ongoing_txns_[*entry.current_txn_first_offset] =
          TxnMetadata{e.producer_id, *entry.current_txn_first_offset, std::nullopt};
    }
    producers_[e.producer_id] = std::move(entry);
  }
}

void ProducerStateManager::TruncateFullyAndStartAt(int64_t offset) {
  producers_.clear();
  hash_order_.Clear();
  ongoing_txns_.clear();
  map_end_offset_ = offset;
}

bool ProducerStateManager::IsProducerExpired(const ProducerStateEntry& entry, int64_t current_time_ms) const {
  // currentTimeMs - lastTimestamp wraps as Java's long arithmetic does (a snapshot may hold any value).
  int64_t idle = JavaSub(current_time_ms, entry.last_timestamp);
  return !entry.current_txn_first_offset && idle >= options_.producer_id_expiration_ms;
}

void ProducerStateManager::RemoveExpiredProducers(int64_t current_time_ms) {
  for (int64_t pid : hash_order_.Keys()) {
    if (IsProducerExpired(producers_.at(pid), current_time_ms)) {
      producers_.erase(pid);
      hash_order_.Remove(pid);
    }
  }
}

std::vector<ProducerSnapshotEntry> ProducerStateManager::SnapshotEntries() const {
  std::vector<ProducerSnapshotEntry> out;
  for (int64_t pid : hash_order_.Keys()) out.push_back(producers_.at(pid).ToSnapshotEntry());
  return out;
}

std::string ProducerStateManager::EncodeSnapshot() const { return EncodeProducerSnapshot(SnapshotEntries()); }

std::optional<int64_t> ProducerStateManager::FirstUndecidedOffset() const {
  if (ongoing_txns_.empty()) return std::nullopt;
  return ongoing_txns_.begin()->first;
}

int64_t ProducerStateManager::LastStableOffset(int64_t high_watermark) const {
  auto first = FirstUndecidedOffset();
  return first ? std::min(*first, high_watermark) : high_watermark;
}

// ---------------------------------------------------------------------------------------------

namespace {

// Replays every batch of the log with lastOffset >= from, on its pass: segments wholly below `from`
// are not read, and a segment's replay stops at its first batch whose CRC fails (recovery stops at the
// first invalid batch, §14). Sets *log_end to the next offset after the last batch read (segments
// without one count by their base offset). False when a segment cannot be opened or read to its end
// (reported, check "file-read").
bool Replay(const LoadedLog& log, int64_t from, ProducerStateManager* state, int64_t* log_end,
            ProducerStateLoadResult* result, ProblemSink* sink) {
  const std::vector<SegmentInfo>& segments = log.segments;
  *log_end = segments.empty() ? 0 : segments.back().base_offset;
  size_t at = 0;        // the segment the pass is at
  int64_t seg_end = 0;  // the next offset after its last batch
  LoadedLog::SegmentVisitor v;
  v.before = [&](size_t i) {
    at = i;
    const bool below = i + 1 < segments.size() && segments[i + 1].base_offset <= from;
    return below ? LoadedLog::Step::kNextSegment : LoadedLog::Step::kNext;
  };
  v.begin = [&](size_t i, LogReader&) { seg_end = segments[i].base_offset; };
  v.batch = [&](size_t i, const BatchView& batch) {
    if (!batch.header.crc_valid) return LoadedLog::Step::kNextSegment;
    seg_end = JavaAdd(batch.header.last_offset, 1);  // the log end offset counts the batches before `from` too
    if (batch.header.last_offset < from) return LoadedLog::Step::kNext;
    BatchUpdate u = state->Apply(batch, segments[i].log_path, sink);
    if (u.completed) result->replayed_completions.push_back(u);
    return LoadedLog::Step::kNext;
  };
  v.end = [&](size_t, const LogReader&) { *log_end = std::max(*log_end, seg_end); };
  NullSink quiet;  // framing problems are the reader's to report (dump/verify)
  std::string error;
  if (log.ForEachBatch(v, &quiet, &error)) return true;
  Report(sink, Severity::kError, segments[at].log_path, 0, "file-read",
         std::string(WithoutFile(error, segments[at].log_path)));
  return false;
}

}  // namespace

bool LoadProducerState(const std::string& partition_dir, int64_t current_time_ms, ProducerStateManager* state,
                       ProducerStateLoadResult* result, ProblemSink* sink, std::optional<int64_t> log_start_offset,
                       Env* env) {
  PartitionDir dir;
  if (!ScanPartitionDir(partition_dir, &dir, sink, env)) return false;
  return LoadProducerState(LoadedLog::Listed(std::move(dir), env), current_time_ms, state, result, sink,
                           log_start_offset);
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): ProducerStateManager's snapshot fallback loop, in Kafka's order (truncateAndReload)
bool LoadProducerState(const LoadedLog& log, int64_t current_time_ms, ProducerStateManager* state,
                       ProducerStateLoadResult* result, ProblemSink* sink, std::optional<int64_t> log_start_offset) {
  const PartitionDir& dir = log.scan;
  Env* env = log.env;
  // A segment or snapshot that cannot be read is not absent: the state would be built from the rest
  // (already reported by the scan).
  if (!dir.unreadable.empty()) return false;

  // Snapshots from the newest down; a snapshot that does not parse (or is over the size cap: not one
  // Kafka wrote) is skipped as Kafka deletes it.
  std::vector<std::pair<int64_t, ProducerSnapshot>> candidates;
  for (auto it = dir.producer_snapshots.rbegin(); it != dir.producer_snapshots.rend(); ++it) {
    std::string contents, error;
    InputFailure failure = InputFailure::kNone;
    if (!ReadSmallFile(it->second.path, kMaxMetadataFileBytes, &contents, &error, &failure, env)) {
      Report(sink, Severity::kError, it->second.path, 0, failure == InputFailure::kTooLarge ? "file-size" : "file-read",
             error);
      if (failure == InputFailure::kTooLarge) continue;
      return false;
    }
    ProducerSnapshot snap;
    if (!ParseProducerSnapshot(it->second.path, AsBytes(contents), it->first, &snap, sink)) continue;
    candidates.emplace_back(it->first, std::move(snap));
  }

  // truncateAndReload deletes the snapshots at or below the log start offset before loading one.
  const int64_t start = log_start_offset.value_or(log.segments.empty() ? 0 : log.segments.front().base_offset);
  std::erase_if(candidates, [&](const auto& c) { return c.first <= start; });
  for (size_t attempt = 0; attempt <= candidates.size(); ++attempt) {
    *result = ProducerStateLoadResult();
    // Without a snapshot the state starts at the log start offset (loadFromSnapshot), and replay never
    // starts below it (rebuildProducerState: max(segment base, map end offset, log start offset)).
    int64_t from = 0;
    if (attempt < candidates.size()) {
      state->LoadSnapshot(candidates[attempt].second, current_time_ms);
      result->snapshot_offset = candidates[attempt].first;
      from = candidates[attempt].first;
    } else {
      state->TruncateFullyAndStartAt(start);
      from = start;
    }
    int64_t log_end = 0;
    if (!Replay(log, from, state, &log_end, result, sink)) return false;
    // A snapshot above the log end offset is out of range (truncateAndReload removes it).
    if (result->snapshot_offset && *result->snapshot_offset > log_end) {
      Report(sink, Severity::kWarning, dir.producer_snapshots.at(*result->snapshot_offset).path, 0, "snapshot-range",
             "producer snapshot offset " + std::to_string(*result->snapshot_offset) + " is above the log end offset " +
                 std::to_string(log_end) + "; Kafka deletes it");
      continue;
    }
    result->log_end_offset = log_end;
    state->UpdateMapEndOffset(std::max(state->map_end_offset(), log_end));
    return true;
  }
  return true;
}

}  // namespace klf
