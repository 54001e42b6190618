// One broker's copy of a partition, kept on disk as Kafka keeps it (scenarios.md §6; FMT §1, §8-§11).
//
// Closed segments live only on disk (written by segment_writer when they rolled, or rewritten by the
// offline cleaner, compactor/cleaner.h). The active segment is kept in memory as the chunks appended
// to it (one produce request or one fetched chunk each, Kafka's LogSegment.append unit) and written to
// disk by Flush() - so its index entries are exactly what LogSegment.append would have made - and
// again when it rolls. Producer state, the `.txnindex` entries it decides, the leader-epoch cache and
// the high watermark are maintained as UnifiedLog does on the leader and on followers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compactor/cleaner.h"
#include "segment_reader/checkpoints.h"
#include "partition/producer_state.h"
#include "segment_writer/segment_writer.h"

namespace klf {

class ReplicaLog {
 public:
  // Creates `<log_dir>/<tp>` (log_dir is created if needed) holding an empty log: partition.metadata
  // with `topic_id`, an empty active segment at offset 0. Every file of the log is written through `env`.
  static std::unique_ptr<ReplicaLog> Create(Env* env, const std::string& log_dir, const TopicPartition& tp,
                                            const std::string& topic_id, int32_t broker_id, const LogConfig& config,
                                            const ProducerStateOptions& producer_state, std::string* error);

  // UnifiedLog.append of one chunk of whole v2 batches whose offsets are already assigned (by the
  // leader, or the leader's offsets for a follower): rolls first as LogSegment.shouldRoll would, then
  // appends, updating producer state (a completed ABORT adds a `.txnindex` entry; an empty control
  // batch completes nothing: ProducerAppendInfo), the leader-epoch cache and the log end offset.
  // `now_ms` is the broker's clock (segment mtimes).
  bool AppendChunk(const std::string& chunk, int64_t now_ms, std::string* error);
  // UnifiedLog.roll: closes the active segment (if it holds anything) and starts an empty one at the
  // log end offset, taking a producer snapshot there.
  bool Roll(int64_t now_ms, std::string* error);
  // LeaderEpochFileCache.assign when this replica becomes leader of `epoch` (at the log end offset).
  void AssignLeaderEpoch(int32_t epoch);

  // The fetch a follower at `fetch_offset` gets from this (leader) log (scenarios.md §6): the first
  // segment, from the one containing `fetch_offset` on, that has a batch whose last offset is at or
  // past `fetch_offset`; the bytes from that batch to the end of that segment. Empty at the log end.
  bool ReadForFetch(int64_t fetch_offset, std::string* chunk, std::string* error) const;

  // Writes the active segment's files, leader-epoch-checkpoint and the log-dir checkpoint files
  // (recovery point, high watermark, log start offset). `shutdown`: also the producer snapshot at the
  // log end offset, as a clean shutdown does.
  bool Flush(bool shutdown, int64_t now_ms, std::string* error);

  // One pass of the broker's cleaner on this log (compactor/cleaner.h) at `options.now`: flushes,
  // cleans a copy under `scratch_dir`, and swaps the result in (segments and cleaner-offset-checkpoint).
  bool Clean(const CompactOptions& options, const std::string& scratch_dir, PassReport* report, ProblemSink* sink,
             std::string* error);

  // removeExpiredProducers at the broker's periodic check (never a producer with an open transaction).
  void RemoveExpiredProducers(int64_t now_ms) { producer_state_.RemoveExpiredProducers(now_ms); }

  const std::string& dir() const { return dir_; }
  const std::string& log_dir() const { return log_dir_; }
  int32_t broker_id() const { return broker_id_; }
  int64_t log_end_offset() const { return log_end_offset_; }
  int64_t log_start_offset() const { return 0; }  // compacted topics never move it here
  int64_t high_watermark() const { return high_watermark_; }
  void set_high_watermark(int64_t hw) { high_watermark_ = std::min(hw, log_end_offset_); }
  const ProducerStateManager& producer_state() const { return producer_state_; }
  // min(high watermark, first unstable offset).
  int64_t last_stable_offset() const { return producer_state_.LastStableOffset(high_watermark_); }
  // The cleaner-offset-checkpoint entry for this partition, if the cleaner wrote one.
  std::optional<int64_t> cleaner_checkpoint() const { return cleaner_checkpoint_; }
  int64_t active_base_offset() const { return active_base_; }

 private:
  struct Chunk {
    std::string bytes;
    ChunkInfo info;
  };
  ReplicaLog(ProducerStateOptions o) : producer_state_(o) {}
  bool CloseActive(int64_t now_ms, std::string* error);
  bool WriteActive(std::string* error) const;
  bool WriteSnapshot(std::string* error) const;
  bool WriteLogDirCheckpoints(std::string* error) const;

  Env* env_ = nullptr;
  std::string log_dir_, dir_;
  TopicPartition tp_;
  int32_t broker_id_ = 0;
  LogConfig config_;
  ProducerStateManager producer_state_;
  std::vector<LeaderEpochEntry> leader_epochs_;
  int64_t log_end_offset_ = 0;
  int64_t high_watermark_ = 0;
  std::optional<int64_t> cleaner_checkpoint_;
  // The active segment.
  int64_t active_base_ = 0;
  std::vector<Chunk> active_chunks_;
  std::vector<AbortedTxn> active_txn_index_;
  uint64_t active_size_ = 0;
  int64_t active_last_append_ms_ = 0;
};

}  // namespace klf
