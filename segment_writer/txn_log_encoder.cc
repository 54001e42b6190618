// TransactionLog key and value encoders (see txn_log_encoder.h). Field layout: Kafka's
// TransactionLogKey.json / TransactionLogValue.json, serialized as its message generator writes them.
#include "segment_writer/txn_log_encoder.h"

#include <fmt/format.h>

namespace klf {
namespace {

void PutString16(std::string* out, std::string_view s) {
  PutBE16(out, uint16_t(s.size()));
  out->append(s);
}

void PutCompactString(std::string* out, std::string_view s) {
  PutUvarint(out, uint32_t(s.size() + 1));
  out->append(s);
}

// A tagged field whose value is an int64 or int16: tag, size, big-endian value.
void PutTaggedInt64(std::string* out, uint32_t tag, int64_t v) {
  PutUvarint(out, tag);
  PutUvarint(out, 8);
  PutBE64(out, uint64_t(v));
}

void PutTaggedInt16(std::string* out, uint32_t tag, int16_t v) {
  PutUvarint(out, tag);
  PutUvarint(out, 2);
  PutBE16(out, uint16_t(v));
}

}  // namespace

std::string EncodeTxnLogKey(std::string_view transactional_id) {
  std::string out;
  PutBE16(&out, 0);  // key version 0
  PutString16(&out, transactional_id);
  return out;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): TransactionLogValue's fields, each version-gated as Kafka's generated writer
bool EncodeTxnLogValue(const TxnLogValue& v, std::string* out, std::string* error) {
  if (v.version != 0 && v.version != 1) {
    *error = fmt::format("TransactionLogValue version {} (Kafka knows 0 and 1)", v.version);
    return false;
  }
  const bool flexible = v.version >= 1;
  if (!flexible && (v.previous_producer_id != -1 || v.next_producer_id != -1 || v.client_transaction_version != 0)) {
    *error = "TransactionLogValue version 0 has no PreviousProducerId, NextProducerId or ClientTransactionVersion";
    return false;
  }
  out->clear();
  PutBE16(out, uint16_t(v.version));
  PutBE64(out, uint64_t(v.producer_id));
  PutBE16(out, uint16_t(v.producer_epoch));
  PutBE32(out, uint32_t(v.transaction_timeout_ms));
  out->push_back(char(v.transaction_status));
  if (!v.partitions) {
    if (flexible) {
      PutUvarint(out, 0);
    } else {
      PutBE32(out, uint32_t(-1));
    }
  } else {
    if (flexible) {
      PutUvarint(out, uint32_t(v.partitions->size() + 1));
    } else {
      PutBE32(out, uint32_t(v.partitions->size()));
    }
    for (const TxnLogPartitions& p : *v.partitions) {
      if (flexible) {
        PutCompactString(out, p.topic);
        PutUvarint(out, uint32_t(p.partition_ids.size() + 1));
      } else {
        PutString16(out, p.topic);
        PutBE32(out, uint32_t(p.partition_ids.size()));
      }
      for (int32_t id : p.partition_ids) PutBE32(out, uint32_t(id));
      if (flexible) PutUvarint(out, 0);  // the entry's tagged fields: none
    }
  }
  PutBE64(out, uint64_t(v.last_update_timestamp_ms));
  PutBE64(out, uint64_t(v.start_timestamp_ms));
  if (flexible) {
    uint32_t tags = (v.previous_producer_id != -1) + (v.next_producer_id != -1) + (v.client_transaction_version != 0);
    PutUvarint(out, tags);
    if (v.previous_producer_id != -1) PutTaggedInt64(out, 0, v.previous_producer_id);
    if (v.next_producer_id != -1) PutTaggedInt64(out, 1, v.next_producer_id);
    if (v.client_transaction_version != 0) PutTaggedInt16(out, 2, v.client_transaction_version);
  }
  return true;
}

bool AppendTxnLogRecord(const TxnLogRecordOptions& o, std::string_view key, const std::optional<std::string>& value,
                        std::string* out, BuiltBatch* built, std::string* error) {
  RecordInput r;
  r.offset = o.offset;
  r.timestamp = o.timestamp;
  r.key = AsBytes(key);
  if (value) r.value = AsBytes(*value);
  V2BatchOptions b;
  b.base_offset = o.offset;
  b.partition_leader_epoch = o.partition_leader_epoch;
  // The coordinator's producer fields: none (RecordBatch.NO_PRODUCER_ID / EPOCH / SEQUENCE).
  b.producer_id = kNoProducerId;
  b.producer_epoch = kNoProducerEpoch;
  b.base_sequence = kNoSequence;
  return AppendV2Batch(b, std::span<const RecordInput>(&r, 1), out, built, error);
}

}  // namespace klf
