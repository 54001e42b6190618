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
//     leader), or when retention moves the log start offset past the transaction's first offset;
//   * that ABORT closes whatever transaction of the producer each replica has open: on a follower that
//     lost the marker of a transaction the leader committed, it hides committed records. When another
//     replica shows the transaction decided, the safe fix is to re-replicate the pinned follower from the
//     leader, which copies the leader's records and markers; the files never show an outcome that a
//     marker no longer in any log decided, and klf does not guess one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diff/replica_state.h"
#include "txn/coordinator.h"

namespace klf {

// What another replica shows about one open transaction of the target (producer P, first offset F).
struct LsoWitness {
  std::string label, path;
  enum class Kind {
    kMarker,      // holds a COMMIT/ABORT of P after F
    kEmptyBatch,  // holds only the cleaner's emptied control batch of P after F
    kOpenToo,     // has P's transaction open from F or earlier too
    kDecided,     // holds offset F, no open transaction of P there and no marker of P after F:
                  // decided there, the marker no longer in its log
    kBehind,      // does not reach F yet
    kNotHeld,     // its log starts after F: it shows nothing about the transaction
  } kind = Kind::kDecided;
  std::optional<Marker> first;  // its first control batch of P after F (kMarker, kEmptyBatch)
  // Every COMMIT/ABORT of P it holds after F, up to the first one after the target's last data offset of
  // P (the target's open transaction may span several of that replica's transactions).
  std::vector<Marker> markers;
  bool decided() const { return kind == Kind::kMarker || kind == Kind::kEmptyBatch || kind == Kind::kDecided; }
};
const char* LsoWitnessKindName(LsoWitness::Kind k);

// The epochs one replica holds for a producer: its broker-loaded producer state (snapshot + log) and
// the markers and transactional data of the producer in its log, whichever is highest.
struct LsoEpochSource {
  std::string label, path;
  bool in_producer_state = false;  // its broker-loaded producer state has an entry for the producer
  int16_t producer_epoch = -1;
  int32_t coordinator_epoch = -1;  // -1: no marker of the producer, nor a coordinator epoch in its state
};

// One open transaction of the target with the abort command that works on any replica: the explicit
// --producer-id/--producer-epoch/--coordinator-epoch form is written through the leader without looking
// the transaction up there (the --start-offset form asks the leader's DescribeProducers for a transaction
// open at that offset, which fails when only a follower has it open). The leader fences the marker when
// E or C is below what it holds for the producer (ProducerAppendInfo.appendEndTxnMarker:
// checkProducerEpoch, checkCoordinatorEpoch; the admin's WriteTxnMarkers carries no transaction version,
// so E equal to the current epoch passes, TV2 included), so E and C are the highest any loaded replica
// holds for the producer. kafka-transactions.sh itself turns a negative coordinator epoch into 0.
struct LsoTxn {
  OpenTxn txn;
  bool pins = false;  // it sets the LSO below the high watermark
  int16_t producer_epoch_for_abort = -1;
  int32_t coordinator_epoch_for_abort = 0;
  bool coordinator_epoch_seen = false;        // some replica holds a coordinator epoch >= 0 for the producer
  std::vector<LsoEpochSource> epoch_sources;  // the target first, then the other replicas
  std::vector<std::string> producer_epoch_from, coordinator_epoch_from;  // labels holding E, C
  std::vector<LsoWitness> replicas;                                      // the other replicas' view of it
  std::vector<std::string> decided_on;                                   // labels of the replicas that decided it
  std::string abort_command;
  std::string epochs_note;  // where E and C come from, and what they cannot show
  std::string warning;      // what the ABORT does to this replica's records
  std::string verdict;      // what the other replicas show, and what to do
  // With LsoOptions::coordinator: its word on this transaction (txn/coordinator.h), and what that lets
  // an operator do (CoordinatorAdvice).
  std::optional<CoordinatorView> coordinator;
  std::string coordinator_advice;
};

struct LsoReport {
  std::string partition;  // topic-partition
  std::string topic;
  int32_t partition_number = 0;
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  int64_t high_watermark = 0;
  int64_t last_stable_offset = 0;
  std::vector<OpenTxn> open_transactions;  // by first offset
  std::vector<LsoTxn> transactions;        // one per open transaction, same order
  std::optional<OpenTxn> pinned_by;        // the open transaction that sets the LSO below the high watermark
  std::vector<LsoWitness> replicas;        // the other replicas' view of the pinning transaction
  bool replicas_given = false;             // --replica: the other replicas were loaded
  std::string explanation;
  std::string resolution;
  std::string abort_command;  // the pinning transaction's; empty when not pinned
  bool pinned() const { return pinned_by.has_value(); }
};

struct LsoOptions {
  std::optional<int64_t> now_ms;  // default: the newest timestamp in the log
  int64_t producer_id_expiration_ms = 86400000;
  std::string bootstrap_server = "<broker:9092>";
  const CoordinatorLog* coordinator = nullptr;  // the coordinator's records, when given
  // Times in the sentences (explanation, evidence, facts) as text and HTML print them: the number with its
  // ISO-8601 UTC time (WithWallClock). Off for JSON, whose sentences keep the raw numbers.
  bool wall_clock_times = false;
};

// `target` and the other replicas must be loaded with the same ReplicaOptions.
LsoReport ExplainLso(const ReplicaState& target, const std::vector<ReplicaState>& others, const LsoOptions& options);

}  // namespace klf
