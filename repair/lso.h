// Explaining a partition's last stable offset (`klf lso`, spec cli.md "lso", scenarios.md §2.5, §4.4, §6).
//
// The facts follow Kafka's code, not folklore:
//   * LSO = min(first offset of the earliest open transaction, high watermark)
//     (ProducerStateManager.firstUnstableOffset, UnifiedLog.updateHighWatermarkMetadata);
//   * a producer with an open transaction never expires (ProducerStateManager.isProducerExpired is false
//     while currentTxnFirstOffset is set, also after a snapshot reload), so producer.id.expiration.ms
//     does not lift a pin;
//   * the pin lifts when a marker for that producer is appended (the producer's next transaction ends,
//     or an operator aborts it with kafka-transactions.sh abort, which writes an ABORT through the
//     leader), or when retention moves the log start offset past the transaction's first offset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diff/replica_state.h"

namespace klf {

struct LsoReplicaMarker {
  std::string label, path;
  // What that replica shows for the pinning transaction.
  enum class Kind {
    kMarker,         // holds a COMMIT/ABORT of the producer after the transaction's first offset
    kEmptyBatch,     // holds only the cleaner's emptied control batch of the producer there
    kOpenToo,        // has the same transaction open
    kDecided,        // no open transaction of the producer and no marker: decided, marker compacted away
    kBehind,         // does not reach the transaction's first offset yet
  } kind = Kind::kDecided;
  int64_t offset = -1;  // marker offset (kMarker, kEmptyBatch)
  std::string type;     // "COMMIT", "ABORT", "empty control batch"
};
const char* LsoReplicaMarkerKindName(LsoReplicaMarker::Kind k);

struct LsoReport {
  std::string partition;  // topic-partition
  std::string topic;
  int32_t partition_number = 0;
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  int64_t high_watermark = 0;
  int64_t last_stable_offset = 0;
  std::vector<OpenTxn> open_transactions;
  std::optional<OpenTxn> pinned_by;  // the open transaction that sets the LSO below the high watermark
  std::vector<LsoReplicaMarker> replicas;  // the other replicas' view of the pinning transaction
  std::string explanation;
  std::string resolution;
  std::string abort_command;  // empty when not pinned
  bool pinned() const { return pinned_by.has_value(); }
};

struct LsoOptions {
  std::optional<int64_t> now_ms;  // default: the newest timestamp in the log
  int64_t producer_id_expiration_ms = 86400000;
  std::string bootstrap_server = "<broker:9092>";
};

// `target` and the other replicas must be loaded with the same ReplicaOptions.
LsoReport ExplainLso(const ReplicaState& target, const std::vector<ReplicaState>& others, const LsoOptions& options);

}  // namespace klf
