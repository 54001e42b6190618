// Encoders for every kind of `.log` entry Kafka writes (spec kafka-on-disk-format.md §3-§5), with
// every header field under the caller's control:
//   * magic 2 batches (any codec, idempotent/transactional, control, delete horizon, forced last
//     offset) — Kafka's MemoryRecordsBuilder;
//   * end-transaction markers (ABORT/COMMIT) — MemoryRecords.withEndTransactionMarker;
//   * empty retained batches — DefaultRecordBatch.writeEmptyHeader (§4.5);
//   * magic 0/1 messages and compressed wrappers — LegacyRecord / MemoryRecordsBuilder legacy path;
//   * a batch rebuilt from a retained subset of an original batch's records, exactly as the log
//     cleaner's MemoryRecords.filterTo does (cleaner spec §9.1).
// A batch that is kept unchanged is never re-encoded: copy its BatchView::bytes.
//
// Every builder appends to `*out` and fills an optional BuiltBatch with what Kafka's builder reports
// (MemoryRecordsBuilder.info()), which the segment writer needs for its index entries.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "segment_reader/batch.h"
#include "segment_reader/bytes.h"
#include "segment_reader/compression.h"

namespace klf {

// One record to encode. Views: the bytes must stay alive during the call.
struct RecordInput {
  int64_t offset = 0;  // absolute offset
  int64_t timestamp = kNoTimestamp;
  std::optional<Bytes> key;               // nullopt = null key
  std::optional<Bytes> value;             // nullopt = null value (tombstone)
  std::span<const RecordHeader> headers;  // v2 only
  // v2 only: headers of a decoded record, written after `headers` (RecordInputFrom fills these).
  RecordHeaders decoded_headers;
};

// Convenience: a RecordInput viewing a decoded Record (headers from the decoder that produced it).
RecordInput RecordInputFrom(const Record& record, std::span<const RecordHeader> headers);
RecordInput RecordInputFrom(const Record& record, RecordHeaders headers);

// What the builder reports about the entry it wrote.
struct BuiltBatch {
  uint64_t size_in_bytes = 0;
  int64_t base_offset = 0;
  int64_t last_offset = 0;  // v2: the header's (possibly forced) last offset; legacy: wrapper offset
  int64_t max_offset = 0;   // largest record offset written (cleaner's chunk maxOffset)
  int64_t max_timestamp = kNoTimestamp;
  int64_t shallow_offset_of_max_timestamp = -1;
};

// Magic 2 batch header fields (spec §4.1, §4.2).
struct V2BatchOptions {
  int64_t base_offset = 0;
  // Forces lastOffset (MemoryRecordsBuilder.overrideLastOffset; filterTo keeps the original last
  // offset). Default: the last record's offset.
  std::optional<int64_t> last_offset;
  int32_t partition_leader_epoch = kNoPartitionLeaderEpoch;
  Compression compression = Compression::kNone;
  TimestampType timestamp_type = TimestampType::kCreateTime;
  // LogAppendTime only: the broker's append time, written as maxTimestamp.
  int64_t log_append_time = kNoTimestamp;
  int64_t producer_id = kNoProducerId;
  int16_t producer_epoch = kNoProducerEpoch;
  int32_t base_sequence = kNoSequence;
  bool is_transactional = false;
  bool is_control = false;
  // KIP-534: when set (>= 0) the delete-horizon bit is written and baseTimestamp holds it (§4.3).
  std::optional<int64_t> delete_horizon_ms;
  // Override of the attribute's unused high bits etc. is deliberately not offered: Kafka writes 0.
};

// Encodes a v2 batch of `records` (at least one; Kafka never builds a non-empty-header batch without
// records — use AppendEmptyBatch for that). Record offsets must be >= base_offset and increasing;
// record attribute bytes are written 0. Returns false with *error on invalid input.
bool AppendV2Batch(const V2BatchOptions& options, std::span<const RecordInput> records, std::string* out,
                   BuiltBatch* built, std::string* error);

// AppendV2Batch in two steps, for a caller that compresses elsewhere (the cleaner lends the
// compression to its look-ahead thread): EncodeV2Batch checks the input as AppendV2Batch does and
// encodes the header and the records, uncompressed; FinishV2Batch compresses them and appends the
// batch AppendV2Batch would have appended, and returns its size.
struct EncodedV2Batch {
  std::string head;     // the 61 header bytes, length and CRC still zero
  std::string records;  // the records section, uncompressed
  Compression compression = Compression::kNone;
  BuiltBatch built;  // what AppendV2Batch reports, but size_in_bytes (FinishV2Batch's result)
};
bool EncodeV2Batch(const V2BatchOptions& options, std::span<const RecordInput> records, EncodedV2Batch* batch,
                   std::string* error);
size_t FinishV2Batch(const EncodedV2Batch& batch, std::string* out);
// At least the bytes FinishV2Batch appends (compression.h CompressedBound).
size_t V2BatchBound(const EncodedV2Batch& batch);

// Encodes an end-transaction marker: a transactional control batch, uncompressed, CreateTime,
// baseSequence -1, one record with key (version 0, type) and value (version 0, coordinatorEpoch)
// (spec §5.3, example §4.6 b). `type` must be kAbort or kCommit.
struct EndTxnMarkerOptions {
  int64_t offset = 0;
  int32_t partition_leader_epoch = kNoPartitionLeaderEpoch;
  int64_t producer_id = 0;
  int16_t producer_epoch = 0;
  int64_t timestamp = kNoTimestamp;
  ControlType type = ControlType::kCommit;
  int32_t coordinator_epoch = 0;
};
bool AppendEndTxnMarker(const EndTxnMarkerOptions& options, std::string* out, BuiltBatch* built, std::string* error);

// Encodes the 61-byte header-only batch Kafka's cleaner writes for a batch whose records were all
// removed but which must be retained (DefaultRecordBatch.writeEmptyHeader, spec §4.5): the original's
// baseOffset, lastOffset, producer fields, PLE, timestamp type, transactional/control flags and
// maxTimestamp; codec none; no delete horizon; baseTimestamp -1; count 0. Only for magic 2.
bool AppendEmptyBatch(const BatchHeader& original, std::string* out, BuiltBatch* built, std::string* error);

// Magic 0/1 (spec §3). An uncompressed message: one entry at `record.offset`. For magic 0 the
// timestamp is ignored (written nowhere); `timestamp_type` LogAppendTime sets attribute bit 3 (v1).
struct LegacyOptions {
  int8_t magic = 1;                              // 0 or 1
  Compression compression = Compression::kNone;  // wrapper codec; zstd is refused (§7.4)
  TimestampType timestamp_type = TimestampType::kCreateTime;
  int64_t log_append_time = kNoTimestamp;  // LogAppendTime: the time written on wrapper and inner records
};
// Writes each record as its own uncompressed message (compression must be kNone).
bool AppendLegacyMessages(const LegacyOptions& options, std::span<const RecordInput> records, std::string* out,
                          BuiltBatch* built, std::string* error);
// Writes one compressed wrapper holding `records` (at least one) as Kafka's MemoryRecordsBuilder does
// (spec §3.3): wrapper offset = last record offset; inner offsets absolute (v0) or relative to the
// first record's offset (v1); wrapper timestamp = max inner timestamp (CreateTime) or the append time;
// wrapper key null; value = Compress(codec, inner message set, magic).
bool AppendLegacyWrapper(const LegacyOptions& options, std::span<const RecordInput> records, std::string* out,
                         BuiltBatch* built, std::string* error);

// Rebuilds `original` keeping only `retained` (a non-empty subset of its records, in order), as the
// cleaner's filterTo does (cleaner spec §9.1):
//   v2: same base offset, last offset forced to the original's, same producer fields, PLE, flags,
//       timestamp type (LogAppendTime: logAppendTime = original maxTimestamp), same codec recompressed
//       at its default level; baseTimestamp = delete_horizon_ms if >= 0 (bit 6 set) else the first
//       retained record's timestamp; records re-encoded with attribute 0.
//   v0/v1 compressed wrapper: new wrapper at the last retained offset, inner records rewritten in the
//       wrapper's magic (inner v0 records of a v1 wrapper get timestamp -1), same codec.
//   v0/v1 uncompressed: the single message is copied unchanged.
// `delete_horizon_ms` is ignored for magic < 2.
bool AppendRetainedBatch(const BatchView& original, std::span<const RecordInput> retained,
                         std::optional<int64_t> delete_horizon_ms, std::string* out, BuiltBatch* built,
                         std::string* error);

// AppendRetainedBatch's first step for a v2 original (magic >= 2; see EncodeV2Batch).
bool EncodeRetainedV2Batch(const BatchView& original, std::span<const RecordInput> retained,
                           std::optional<int64_t> delete_horizon_ms, EncodedV2Batch* batch, std::string* error);

// Copies a kept entry byte for byte and reports it as the cleaner does for copied batches:
// (maxTimestamp, lastOffset), maxOffset = lastOffset.
void AppendOriginalBatch(const BatchView& original, std::string* out, BuiltBatch* built);

}  // namespace klf
