// The transaction coordinator's records (`__transaction_state`), encoded as Kafka's TransactionLog
// encodes them (dump-log-segments.md §5; FMT "transaction log"): the decoder that reads them back is
// segment_reader/internal_topics.h.
//
//   key   = int16 version 0 + TransactionLogKey v0: transactionalId (int16-length string).
//   value = int16 version + TransactionLogValue:
//     v0: producerId int64, producerEpoch int16, transactionTimeoutMs int32, transactionStatus int8,
//         transactionPartitions (nullable int32-count array of {topic int16-string, partitionIds
//         int32-count array of int32}), transactionLastUpdateTimestampMs int64,
//         transactionStartTimestampMs int64.
//     v1 (flexible): the same fields with compact (uvarint length + 1) strings and arrays, a tagged-
//         field section after each partitions entry (empty) and after the value: tag 0
//         PreviousProducerId, tag 1 NextProducerId (both default -1), tag 2 ClientTransactionVersion
//         (default 0), each written only when it differs from its default, in tag order, as Kafka's
//         generated writer does.
//   A null value (tombstone) is an expired transactional id.
//
// Each record is its own batch (TransactionStateManager.appendTransactionToLog: one SimpleRecord per
// MemoryRecords.withRecords): magic 2, uncompressed, CreateTime, producer id / epoch / base sequence
// -1, not transactional.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "segment_writer/batch_builder.h"

namespace klf {

// TransactionState ids as Kafka persists them.
enum class TxnLogStatus : int8_t {
  kEmpty = 0,
  kOngoing = 1,
  kPrepareCommit = 2,
  kPrepareAbort = 3,
  kCompleteCommit = 4,
  kCompleteAbort = 5,
  kDead = 6,
  kPrepareEpochFence = 7,
};

struct TxnLogPartitions {
  std::string topic;
  std::vector<int32_t> partition_ids;
};

struct TxnLogValue {
  int16_t version = 0;  // 0, or 1 (flexible, with the tagged fields)
  int64_t producer_id = 0;
  int64_t previous_producer_id = -1;  // v1 only (tag 0)
  int64_t next_producer_id = -1;      // v1 only (tag 1)
  int16_t producer_epoch = 0;
  int32_t transaction_timeout_ms = 0;
  int8_t transaction_status = 0;
  std::optional<std::vector<TxnLogPartitions>> partitions;  // nullopt = null (Kafka writes null for Empty)
  int64_t last_update_timestamp_ms = 0;
  int64_t start_timestamp_ms = 0;
  int16_t client_transaction_version = 0;  // v1 only (tag 2)
};

// TransactionLog.keyToBytes.
std::string EncodeTxnLogKey(std::string_view transactional_id);

// TransactionLog.valueToBytes. Returns false with *error for a version other than 0 or 1, or a v0
// value carrying tagged fields that v0 cannot hold (they would be lost silently).
bool EncodeTxnLogValue(const TxnLogValue& value, std::string* out, std::string* error);

// One coordinator write: a batch holding one record (`value` nullopt = tombstone) at `offset`.
struct TxnLogRecordOptions {
  int64_t offset = 0;
  int32_t partition_leader_epoch = kNoPartitionLeaderEpoch;
  int64_t timestamp = kNoTimestamp;
};
bool AppendTxnLogRecord(const TxnLogRecordOptions& options, std::string_view key,
                        const std::optional<std::string>& value, std::string* out, BuiltBatch* built,
                        std::string* error);

}  // namespace klf
