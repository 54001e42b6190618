// Entry encoders (see batch_builder.h). Layouts: spec kafka-on-disk-format.md §3.1 (legacy message),
// §4.1 (v2 header), §5.1 (v2 record), §5.3 (control records), §4.5 (empty batch).
#include "segment_writer/batch_builder.h"

#include <limits>

#include "segment_reader/crc.h"

namespace klf {
namespace {

constexpr int kV2LengthOffset = 8;
constexpr int kV2CountOffset = 57;

void PutBytesWithVarintLength(std::string* out, const std::optional<Bytes>& b) {
  if (!b) {
    PutVarint(out, -1);
    return;
  }
  PutVarint(out, int32_t(b->size()));
  out->append(reinterpret_cast<const char*>(b->data()), b->size());
}

// DefaultRecord.writeTo: length varint, attributes 0, timestampDelta varlong, offsetDelta varint,
// key, value, headers.
void AppendV2Record(const RecordInput& r, int64_t base_offset, int64_t base_timestamp, std::string* body,
                    std::string* out) {
  body->clear();
  body->push_back(0);  // record attributes: unused, written 0
  PutVarlong(body, r.timestamp - base_timestamp);
  PutVarint(body, int32_t(r.offset - base_offset));
  PutBytesWithVarintLength(body, r.key);
  PutBytesWithVarintLength(body, r.value);
  PutVarint(body, int32_t(r.headers.size() + r.decoded_headers.size()));
  for (const RecordHeader& h : r.headers) {
    PutBytesWithVarintLength(body, h.key);
    PutBytesWithVarintLength(body, h.value);
  }
  for (const RecordHeader& h : r.decoded_headers) {
    PutBytesWithVarintLength(body, h.key);
    PutBytesWithVarintLength(body, h.value);
  }
  PutVarint(out, int32_t(body->size()));
  out->append(*body);
}

struct V2Header {
  int64_t base_offset = 0;
  int32_t partition_leader_epoch = kNoPartitionLeaderEpoch;
  uint16_t attributes = 0;
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = kNoTimestamp;
  int64_t max_timestamp = kNoTimestamp;
  int64_t producer_id = kNoProducerId;
  int16_t producer_epoch = kNoProducerEpoch;
  int32_t base_sequence = kNoSequence;
  int32_t count = 0;
};

// Appends the 61-byte header, its length and CRC-32C left zero (FinishV2 fills them in).
void WriteV2Head(const V2Header& h, std::string* out) {
  size_t start = out->size();
  out->resize(start + kRecordBatchOverhead);
  uint8_t* p = reinterpret_cast<uint8_t*>(out->data()) + start;
  StoreBE64(p, uint64_t(h.base_offset));
  StoreBE32(p + 12, uint32_t(h.partition_leader_epoch));
  p[16] = 2;
  StoreBE16(p + kV2AttributesOffset, h.attributes);
  StoreBE32(p + 23, uint32_t(h.last_offset_delta));
  StoreBE64(p + 27, uint64_t(h.base_timestamp));
  StoreBE64(p + 35, uint64_t(h.max_timestamp));
  StoreBE64(p + 43, uint64_t(h.producer_id));
  StoreBE16(p + 51, uint16_t(h.producer_epoch));
  StoreBE32(p + 53, uint32_t(h.base_sequence));
  StoreBE32(p + kV2CountOffset, uint32_t(h.count));
}

// Appends `head` (WriteV2Head's) and `records_section`, then fills in the length and CRC-32C.
void FinishV2(std::string_view head, std::string_view records_section, std::string* out) {
  size_t start = out->size();
  out->append(head);
  out->append(records_section);
  uint8_t* p = reinterpret_cast<uint8_t*>(out->data()) + start;
  size_t total = out->size() - start;
  StoreBE32(p + kV2LengthOffset, uint32_t(total - kLogOverhead));
  uint32_t crc = Crc32c(Bytes(p + kV2AttributesOffset, total - kV2AttributesOffset));
  StoreBE32(p + kV2CrcOffset, crc);
}

uint16_t V2Attributes(Compression codec, TimestampType tt, bool txn, bool control, bool horizon) {
  uint16_t a = uint16_t(codec) & kAttrCompressionMask;
  if (tt == TimestampType::kLogAppendTime) a |= kAttrTimestampType;
  if (txn) a |= kAttrTransactional;
  if (control) a |= kAttrControl;
  if (horizon) a |= kAttrDeleteHorizon;
  return a;
}

// LegacyRecord.writeTo: offset, size, crc, magic, attributes, [timestamp], key, value.
void WriteLegacyMessage(int64_t offset, int8_t magic, uint8_t attributes, int64_t timestamp,
                        const std::optional<Bytes>& key, const std::optional<Bytes>& value, std::string* out) {
  size_t start = out->size();
  PutBE64(out, uint64_t(offset));
  PutBE32(out, 0);  // size, patched below
  PutBE32(out, 0);  // crc, patched below
  out->push_back(char(magic));
  out->push_back(char(attributes));
  if (magic > 0) PutBE64(out, uint64_t(timestamp));
  for (const auto* b : {&key, &value}) {
    if (!*b) {
      PutBE32(out, uint32_t(-1));
    } else {
      PutBE32(out, uint32_t((*b)->size()));
      out->append(reinterpret_cast<const char*>((*b)->data()), (*b)->size());
    }
  }
  uint8_t* p = reinterpret_cast<uint8_t*>(out->data()) + start;
  size_t total = out->size() - start;
  StoreBE32(p + 8, uint32_t(total - kLogOverhead));
  StoreBE32(p + 12, Crc32(Bytes(p + 16, total - 16)));
}

bool CheckOffsets(std::span<const RecordInput> records, int64_t base_offset, std::string* error) {
  int64_t prev = std::numeric_limits<int64_t>::min();
  for (const RecordInput& r : records) {
    if (r.offset < base_offset || r.offset <= prev) {
      *error = "record offset " + std::to_string(r.offset) + " is not increasing from base offset " +
               std::to_string(base_offset);
      return false;
    }
    if (r.offset - base_offset > std::numeric_limits<int32_t>::max()) {
      *error = "record offset " + std::to_string(r.offset) + " is more than 2^31-1 above base offset " +
               std::to_string(base_offset);
      return false;
    }
    prev = r.offset;
  }
  return true;
}

}  // namespace

RecordInput RecordInputFrom(const Record& record, std::span<const RecordHeader> headers) {
  RecordInput r;
  r.offset = record.offset;
  r.timestamp = record.timestamp;
  r.key = record.key;
  r.value = record.value;
  r.headers = headers;
  return r;
}

RecordInput RecordInputFrom(const Record& record, RecordHeaders headers) {
  RecordInput r = RecordInputFrom(record, std::span<const RecordHeader>());
  r.decoded_headers = headers;
  return r;
}

bool EncodeV2Batch(const V2BatchOptions& o, std::span<const RecordInput> records, EncodedV2Batch* batch,
                   std::string* error) {
  if (records.empty()) {
    *error = "a v2 batch needs at least one record (use an empty batch for none)";
    return false;
  }
  if (uint8_t(o.compression) > uint8_t(Compression::kZstd)) {
    *error = "unknown compression id " + std::to_string(int(o.compression));
    return false;
  }
  if (!CheckOffsets(records, o.base_offset, error)) return false;
  int64_t last_offset = o.last_offset.value_or(records.back().offset);
  if (last_offset < records.back().offset || last_offset - o.base_offset > std::numeric_limits<int32_t>::max()) {
    *error = "last offset " + std::to_string(last_offset) + " does not cover the records of base offset " +
             std::to_string(o.base_offset);
    return false;
  }
  bool horizon = o.delete_horizon_ms && *o.delete_horizon_ms >= 0;
  // MemoryRecordsBuilder: the first appended record fixes baseTimestamp, unless a delete horizon is
  // set, which then takes its place (KIP-534, spec §4.3).
  int64_t base_timestamp = horizon ? *o.delete_horizon_ms : records.front().timestamp;
  int64_t max_timestamp = kNoTimestamp;
  int64_t max_offset = -1;
  std::string body;
  batch->records.clear();
  for (const RecordInput& r : records) {
    if (r.timestamp < 0 && r.timestamp != kNoTimestamp) {
      *error = "invalid negative timestamp " + std::to_string(r.timestamp);
      return false;
    }
    if (r.timestamp > max_timestamp) max_timestamp = r.timestamp;
    max_offset = r.offset;
    AppendV2Record(r, o.base_offset, base_timestamp, &body, &batch->records);
  }
  if (o.timestamp_type == TimestampType::kLogAppendTime) max_timestamp = o.log_append_time;

  V2Header h;
  h.base_offset = o.base_offset;
  h.partition_leader_epoch = o.partition_leader_epoch;
  h.attributes = V2Attributes(o.compression, o.timestamp_type, o.is_transactional, o.is_control, horizon);
  h.last_offset_delta = int32_t(last_offset - o.base_offset);
  h.base_timestamp = base_timestamp;
  h.max_timestamp = max_timestamp;
  h.producer_id = o.producer_id;
  h.producer_epoch = o.producer_epoch;
  h.base_sequence = o.base_sequence;
  h.count = int32_t(records.size());
  batch->head.clear();
  WriteV2Head(h, &batch->head);
  batch->compression = o.compression;
  batch->built = BuiltBatch{};
  batch->built.base_offset = o.base_offset;
  batch->built.last_offset = last_offset;
  batch->built.max_offset = max_offset;
  batch->built.max_timestamp = max_timestamp;
  // MemoryRecordsBuilder.info() for v2: the (possibly forced) last offset.
  batch->built.shallow_offset_of_max_timestamp = last_offset;
  return true;
}

size_t FinishV2Batch(const EncodedV2Batch& batch, std::string* out) {
  size_t start = out->size();
  if (batch.compression == Compression::kNone) {
    FinishV2(batch.head, batch.records, out);
  } else {
    std::string compressed;
    Compress(batch.compression, AsBytes(batch.records), 2, &compressed);
    FinishV2(batch.head, compressed, out);
  }
  return out->size() - start;
}

size_t V2BatchBound(const EncodedV2Batch& batch) {
  return batch.head.size() + CompressedBound(batch.compression, batch.records.size());
}

bool AppendV2Batch(const V2BatchOptions& o, std::span<const RecordInput> records, std::string* out, BuiltBatch* built,
                   std::string* error) {
  EncodedV2Batch batch;
  if (!EncodeV2Batch(o, records, &batch, error)) return false;
  batch.built.size_in_bytes = FinishV2Batch(batch, out);
  if (built) *built = batch.built;
  return true;
}

bool AppendEndTxnMarker(const EndTxnMarkerOptions& o, std::string* out, BuiltBatch* built, std::string* error) {
  if (!IsEndTxnMarker(o.type)) {
    *error = "an end-transaction marker is ABORT or COMMIT";
    return false;
  }
  std::string key, value;
  PutBE16(&key, 0);  // ControlRecordType key version 0
  PutBE16(&key, uint16_t(o.type));
  PutBE16(&value, 0);  // EndTransactionMarker value version 0
  PutBE32(&value, uint32_t(o.coordinator_epoch));
  RecordInput r;
  r.offset = o.offset;
  r.timestamp = o.timestamp;
  r.key = AsBytes(key);
  r.value = AsBytes(value);
  V2BatchOptions b;
  b.base_offset = o.offset;
  b.partition_leader_epoch = o.partition_leader_epoch;
  b.producer_id = o.producer_id;
  b.producer_epoch = o.producer_epoch;
  b.is_transactional = true;
  b.is_control = true;
  return AppendV2Batch(b, std::span<const RecordInput>(&r, 1), out, built, error);
}

bool AppendEmptyBatch(const BatchHeader& original, std::string* out, BuiltBatch* built, std::string* error) {
  if (original.magic < 2) {
    *error = "Empty batches are only supported for magic v2 and above";
    return false;
  }
  V2Header h;
  h.base_offset = original.base_offset;
  h.partition_leader_epoch = original.partition_leader_epoch;
  h.attributes =
      V2Attributes(Compression::kNone, original.timestamp_type, original.is_transactional, original.is_control, false);
  h.last_offset_delta = int32_t(original.last_offset - original.base_offset);
  h.base_timestamp = kNoTimestamp;
  h.max_timestamp = original.max_timestamp;
  h.producer_id = original.producer_id;
  h.producer_epoch = original.producer_epoch;
  h.base_sequence = original.base_sequence;
  h.count = 0;
  size_t start = out->size();
  std::string head;
  WriteV2Head(h, &head);
  FinishV2(head, {}, out);
  if (built) {
    built->size_in_bytes = out->size() - start;
    built->base_offset = original.base_offset;
    built->last_offset = original.last_offset;
    built->max_offset = original.last_offset;
    built->max_timestamp = original.max_timestamp;
    built->shallow_offset_of_max_timestamp = original.last_offset;
  }
  return true;
}

bool AppendLegacyMessages(const LegacyOptions& o, std::span<const RecordInput> records, std::string* out,
                          BuiltBatch* built, std::string* error) {
  if (o.magic != 0 && o.magic != 1) {
    *error = "legacy magic must be 0 or 1";
    return false;
  }
  if (o.compression != Compression::kNone) {
    *error = "uncompressed messages take no codec (use a wrapper)";
    return false;
  }
  if (records.empty()) {
    *error = "no records";
    return false;
  }
  if (!CheckOffsets(records, records.front().offset, error)) return false;
  bool log_append = o.magic > 0 && o.timestamp_type == TimestampType::kLogAppendTime;
  uint8_t attributes = log_append ? uint8_t(kAttrTimestampType) : 0;
  size_t start = out->size();
  int64_t max_ts = kNoTimestamp;
  int64_t offset_of_max = -1;
  for (const RecordInput& r : records) {
    int64_t ts = o.magic == 0 ? kNoTimestamp : (log_append ? o.log_append_time : r.timestamp);
    if (ts > max_ts) {
      max_ts = ts;
      offset_of_max = r.offset;
    }
    WriteLegacyMessage(r.offset, o.magic, attributes, ts, r.key, r.value, out);
  }
  if (built) {
    built->size_in_bytes = out->size() - start;
    built->base_offset = records.front().offset;
    built->last_offset = records.back().offset;
    built->max_offset = records.back().offset;
    built->max_timestamp = max_ts;
    built->shallow_offset_of_max_timestamp = o.magic == 0 ? -1 : offset_of_max;
  }
  return true;
}

bool AppendLegacyWrapper(const LegacyOptions& o, std::span<const RecordInput> records, std::string* out,
                         BuiltBatch* built, std::string* error) {
  if (o.magic != 0 && o.magic != 1) {
    *error = "legacy magic must be 0 or 1";
    return false;
  }
  if (o.compression == Compression::kNone || o.compression == Compression::kZstd) {
    *error = std::string("a legacy wrapper cannot use codec ") + CompressionName(o.compression);
    return false;
  }
  if (records.empty()) {
    *error = "an empty inner message set is invalid";
    return false;
  }
  int64_t first = records.front().offset;
  if (!CheckOffsets(records, first, error)) return false;
  bool log_append = o.magic > 0 && o.timestamp_type == TimestampType::kLogAppendTime;
  uint8_t inner_attributes = log_append ? uint8_t(kAttrTimestampType) : 0;
  std::string inner;
  int64_t max_ts = kNoTimestamp;
  for (const RecordInput& r : records) {
    int64_t ts = o.magic == 0 ? kNoTimestamp : (log_append ? o.log_append_time : r.timestamp);
    if (ts > max_ts) max_ts = ts;
    // MemoryRecordsBuilder.toInnerOffset: v1 inner offsets are relative to the first record.
    int64_t inner_offset = o.magic > 0 ? r.offset - first : r.offset;
    WriteLegacyMessage(inner_offset, o.magic, inner_attributes, ts, r.key, r.value, &inner);
  }
  std::string compressed;
  Compress(o.compression, AsBytes(inner), o.magic, &compressed);
  int64_t wrapper_ts = log_append ? o.log_append_time : max_ts;
  uint8_t attributes = uint8_t(o.compression) | inner_attributes;
  size_t start = out->size();
  WriteLegacyMessage(records.back().offset, o.magic, attributes, wrapper_ts, std::nullopt,
                     std::optional<Bytes>(AsBytes(compressed)), out);
  if (built) {
    built->size_in_bytes = out->size() - start;
    built->base_offset = first;
    built->last_offset = records.back().offset;
    built->max_offset = records.back().offset;
    built->max_timestamp = o.magic == 0 ? kNoTimestamp : wrapper_ts;
    built->shallow_offset_of_max_timestamp = o.magic == 0 ? -1 : records.back().offset;
  }
  return true;
}

namespace {

// filterTo's builder for a v2 batch keeping `retained` (cleaner spec §9.1).
V2BatchOptions RetainedV2Options(const BatchHeader& h, std::optional<int64_t> delete_horizon_ms) {
  V2BatchOptions o;
  o.base_offset = h.base_offset;
  o.last_offset = h.last_offset;  // filterTo: builder.overrideLastOffset(originalBatch.lastOffset())
  o.partition_leader_epoch = h.partition_leader_epoch;
  o.compression = h.compression;
  o.timestamp_type = h.timestamp_type;
  o.log_append_time = h.timestamp_type == TimestampType::kLogAppendTime ? h.max_timestamp : kNoTimestamp;
  o.producer_id = h.producer_id;
  o.producer_epoch = h.producer_epoch;
  o.base_sequence = h.base_sequence;
  o.is_transactional = h.is_transactional;
  o.is_control = h.is_control;
  if (delete_horizon_ms && *delete_horizon_ms >= 0) o.delete_horizon_ms = delete_horizon_ms;
  return o;
}

}  // namespace

bool EncodeRetainedV2Batch(const BatchView& original, std::span<const RecordInput> retained,
                           std::optional<int64_t> delete_horizon_ms, EncodedV2Batch* batch, std::string* error) {
  if (original.header.magic < 2) {
    *error = "a v0/v1 entry is rebuilt by AppendRetainedBatch";
    return false;
  }
  if (retained.empty()) {
    *error = "no retained records (use AppendEmptyBatch or drop the batch)";
    return false;
  }
  return EncodeV2Batch(RetainedV2Options(original.header, delete_horizon_ms), retained, batch, error);
}

bool AppendRetainedBatch(const BatchView& original, std::span<const RecordInput> retained,
                         std::optional<int64_t> delete_horizon_ms, std::string* out, BuiltBatch* built,
                         std::string* error) {
  const BatchHeader& h = original.header;
  if (retained.empty()) {
    *error = "no retained records (use AppendEmptyBatch or drop the batch)";
    return false;
  }
  if (h.magic >= 2) return AppendV2Batch(RetainedV2Options(h, delete_horizon_ms), retained, out, built, error);
  if (h.compression == Compression::kNone) {
    // An uncompressed legacy entry is a single-record batch: kept as it is.
    AppendOriginalBatch(original, out, built);
    return true;
  }
  LegacyOptions o;
  o.magic = h.magic;
  o.compression = h.compression;
  o.timestamp_type = h.timestamp_type;
  o.log_append_time = h.timestamp_type == TimestampType::kLogAppendTime ? h.max_timestamp : kNoTimestamp;
  return AppendLegacyWrapper(o, retained, out, built, error);
}

void AppendOriginalBatch(const BatchView& original, std::string* out, BuiltBatch* built) {
  out->append(reinterpret_cast<const char*>(original.bytes.data()), original.bytes.size());
  if (built) {
    built->size_in_bytes = original.bytes.size();
    built->base_offset = original.header.base_offset;
    built->last_offset = original.header.last_offset;
    built->max_offset = original.header.last_offset;
    built->max_timestamp = original.header.max_timestamp;
    built->shallow_offset_of_max_timestamp = original.header.last_offset;
  }
}

}  // namespace klf
