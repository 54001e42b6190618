// Writing segments and partition directories as a broker leaves them (spec kafka-on-disk-format.md
// §1.3, §8, §9, §10, §11).
//
// SegmentWriter is Kafka's LogSegment on the write path: `.log` appended chunk by chunk, `.index`
// and `.timeindex` entries decided per appended chunk by the index.interval.bytes rule (§8.3), the
// final time-index entry and trimmed index files on Close (as after a roll or clean shutdown), a
// `.txnindex` only if an aborted transaction was appended. The compactor drives it directly (one
// Append per cleaner read buffer, cleaner spec §6.3/§10).
//
// PartitionWriter is a log: it rolls segments (segment.bytes, full index, 32-bit relative offsets),
// maintains producer state (→ `.txnindex` entries and `.snapshot` files at each roll and at the
// end), the leader-epoch cache, and writes leader-epoch-checkpoint and partition.metadata.
//
// Files are written as `<name>.tmp` and renamed on Close; callers write into a StagedDirectory
// (file_writer.h) so the whole directory appears at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/index_files.h"
#include "segment_reader/layout.h"
#include "partition/producer_state.h"
#include "segment_writer/file_writer.h"

namespace klf {

// The topic configs that shape files (names as in Kafka).
struct LogConfig {
  int64_t segment_bytes = int64_t(1) << 30;  // segment.bytes
  int32_t segment_index_bytes = 10 << 20;    // segment.index.bytes
  int32_t index_interval_bytes = 4096;       // index.interval.bytes
};

// How batches arrive, which decides the index entries (spec §8.3): a leader appends one produce
// request per chunk, a follower a fetched chunk, the cleaner one read buffer, and recovery
// (LogSegment.recover) indexes per batch. kPerBatch = one chunk per batch (also what recovery builds).
enum class AppendGranularity { kPerBatch, kPerChunk };

// What LogSegment.append receives with a chunk.
struct ChunkInfo {
  int64_t largest_offset = -1;  // index entry offset if one is added
  int64_t largest_timestamp = kNoTimestamp;
  int64_t shallow_offset_of_max_timestamp = -1;  // last offset of the earliest batch with the max
};

// ChunkInfo of a run of whole batches as a leader/follower append computes it: largest offset =
// last batch's lastOffset, max timestamp with the lastOffset of the first batch reaching it.
ChunkInfo ChunkInfoOf(std::span<const BatchHeader> batches);

class SegmentWriter {
 public:
  // Creates the segment `<dir>/<20-digit base_offset>.log` (and its indexes on Close). `name_suffix`
  // follows every file's name: the cleaner writes `.log.cleaned`, `.index.cleaned`, ... and swaps them
  // in itself (LocalLog.replaceSegments).
  static std::unique_ptr<SegmentWriter> Create(Env* env, const std::string& dir, int64_t base_offset,
                                               const LogConfig& config, std::string* error,
                                               const std::string& name_suffix = "");
  ~SegmentWriter();

  // LogSegment.append: `chunk` is whole entries, appended at the current end. The offset-index entry
  // (chunk.largest_offset → chunk start) and time-index entry are added when more than
  // index.interval.bytes were appended since the last entry. Refuses a largest_offset whose relative
  // offset does not fit in an int32 and appends that would overfill an index.
  bool Append(Bytes chunk, const ChunkInfo& info, std::string* error);
  // Appends bytes that are not whole entries (a truncated or garbage tail being preserved as-is);
  // they never create index entries.
  bool AppendRaw(Bytes bytes, std::string* error);
  // TransactionIndex.append: lastOffset must be increasing.
  bool AppendAbortedTxn(const AbortedTxn& txn, std::string* error);

  // onBecomeInactiveSegment + close: final time-index entry, `.index`/`.timeindex` trimmed to their
  // entries, `.txnindex` if any entry, everything fsynced and renamed to its final name. When
  // `mtime_ms` is set the `.log`, `.index`, `.timeindex` get that modification time.
  bool Close(std::string* error, std::optional<int64_t> mtime_ms = std::nullopt);

  int64_t base_offset() const { return base_offset_; }
  uint64_t size() const;           // bytes in `.log`
  bool offset_index_full() const;  // entries >= segment.index.bytes / 8
  bool time_index_full() const;    // entries >= segment.index.bytes / 12 - 1 (always, below 24 bytes)
  bool CanConvertToRelativeOffset(int64_t offset) const;
  const std::vector<OffsetIndexEntry>& offset_index() const { return offset_entries_; }
  const std::vector<TimeIndexEntry>& time_index() const { return time_entries_; }
  const std::vector<AbortedTxn>& txn_index() const { return txn_entries_; }
  // (maxTimestampSoFar, offsetOfMaxTimestampSoFar).
  int64_t max_timestamp_so_far() const { return max_timestamp_so_far_; }

 private:
  SegmentWriter() = default;
  void MaybeAppendTimeEntry(int64_t timestamp, int64_t offset);

  Env* env_ = nullptr;
  std::string dir_;
  std::string name_suffix_;
  int64_t base_offset_ = 0;
  LogConfig config_;
  std::unique_ptr<AtomicFile> log_;
  std::vector<OffsetIndexEntry> offset_entries_;
  std::vector<TimeIndexEntry> time_entries_;
  std::vector<AbortedTxn> txn_entries_;
  uint64_t bytes_since_last_index_entry_ = 0;
  int64_t max_timestamp_so_far_ = kNoTimestamp;
  int64_t offset_of_max_timestamp_so_far_ = -1;
  bool closed_ = false;
};

struct PartitionWriterOptions {
  LogConfig config;
  ProducerStateOptions producer_state;
  // Roll by LogSegment.shouldRoll before a chunk. Off: segments change only by Roll() (reproducing
  // an existing directory's boundaries); a chunk that does not fit the active segment then fails.
  bool auto_roll = true;
  // Leader-epoch cache content before the first append (LeaderEpochFileCache loaded from its file);
  // batches then add entries by LeaderEpochFileCache.assign's rule (a higher epoch only).
  std::vector<LeaderEpochEntry> initial_leader_epochs;
  std::optional<PartitionMetadata> partition_metadata;  // written as partition.metadata when set
};

// A partition directory being written, batch by batch or chunk by chunk, in offset order.
class PartitionWriter {
 public:
  // `dir` must exist (usually a StagedDirectory path or a subdirectory of one).
  static std::unique_ptr<PartitionWriter> Create(Env* env, const std::string& dir,
                                                 const PartitionWriterOptions& options, std::string* error);
  ~PartitionWriter();

  // Appends whole entries as one chunk (Kafka's UnifiedLog.append of one produce request / fetched
  // chunk / cleaner buffer). Rolls first when LogSegment.shouldRoll would (the active segment is
  // non-empty and the chunk would take it past segment.bytes, an index is full, or the chunk's last
  // offset does not fit the active segment's relative offsets); the new segment's base offset is the
  // chunk's first offset. Then updates producer state and the leader-epoch cache per batch (magic 2),
  // appending `.txnindex` entries for completed aborted transactions.
  // `batches` must view `chunk`'s entries in order (as a LogReader returns them).
  bool AppendChunk(Bytes chunk, std::span<const BatchView> batches, std::string* error);
  // One batch = one chunk.
  bool AppendBatch(const BatchView& batch, std::string* error);
  // Encodes nothing itself: convenience for a buffer of whole entries (parsed here).
  bool AppendEntries(Bytes entries, AppendGranularity granularity, std::string* error);

  // Closes the active segment and starts one at `base_offset` (>= log end offset), taking a producer
  // snapshot at `base_offset` (UnifiedLog.roll). Used to reproduce an input directory's segment
  // boundaries. If no segment exists yet this just sets the first segment's base offset.
  bool Roll(int64_t base_offset, std::string* error);
  // Preserves non-entry bytes at the end of the active segment (see SegmentWriter::AppendRaw).
  bool AppendRaw(Bytes bytes, std::string* error);

  // Closes the active segment, writes the final producer snapshot (at the log end offset),
  // leader-epoch-checkpoint and partition.metadata.
  bool Close(std::string* error);

  int64_t log_end_offset() const { return log_end_offset_; }
  const ProducerStateManager& producer_state() const { return *producer_state_; }
  const std::vector<LeaderEpochEntry>& leader_epochs() const { return leader_epochs_; }

 private:
  PartitionWriter() = default;
  bool StartSegment(int64_t base_offset, std::string* error);
  bool TakeSnapshot(std::string* error);
  bool UpdateStates(const BatchView& batch, std::string* error);

  Env* env_ = nullptr;
  std::string dir_;
  PartitionWriterOptions options_;
  std::unique_ptr<SegmentWriter> active_;
  std::optional<int64_t> next_base_offset_;
  int64_t log_end_offset_ = 0;
  int64_t last_snapshot_offset_ = -1;
  std::unique_ptr<ProducerStateManager> producer_state_;
  std::vector<LeaderEpochEntry> leader_epochs_;
  bool closed_ = false;
};

// ---------------------------------------------------------------------------------------------
// Text checkpoint files (spec §11), each written as `<file>.tmp`, fsync, rename (CheckpointFile).

// A log-dir offset checkpoint: cleaner-offset-checkpoint, recovery-point-offset-checkpoint,
// replication-offset-checkpoint or log-start-offset-checkpoint (`path` names which).
bool WriteOffsetCheckpointFile(Env* env, const std::string& path, const std::vector<OffsetCheckpointEntry>& entries,
                               std::string* error);
// `<partition dir>/leader-epoch-checkpoint`.
bool WriteLeaderEpochCheckpointFile(Env* env, const std::string& partition_dir,
                                    const std::vector<LeaderEpochEntry>& entries, std::string* error);
// `<partition dir>/partition.metadata` (no trailing newline, as Kafka writes it).
bool WritePartitionMetadataFile(Env* env, const std::string& partition_dir, const PartitionMetadata& metadata,
                                std::string* error);

// ---------------------------------------------------------------------------------------------
// Rebuilding a partition directory as Kafka's segment recovery does (`klf reindex`).

struct ReindexOptions {
  LogConfig config;  // index.interval.bytes matters; segment.index.bytes bounds the indexes
  ProducerStateOptions producer_state;
  bool force = false;  // replace a non-empty output directory
  // Start the leader-epoch cache from the input's leader-epoch-checkpoint, as a broker's recovery does
  // (then entries at or above the log end offset are dropped, truncateFromEnd). Off: rebuilt from the
  // batches alone. Cleaning never changes the checkpoint, so only this reproduces it for cleaned logs.
  bool keep_leader_epoch_checkpoint = true;
};

struct ReindexResult {
  std::string out_partition_dir;  // <out>/<topic>-<partition>
  int segments = 0;
  int batches = 0;
  int64_t log_end_offset = 0;
  std::vector<std::string> files_written;  // bare names, sorted
};

// Writes a copy of the partition directory `in` to `out`: every `.log` copied byte for byte; `.index`,
// `.timeindex` and `.txnindex` rebuilt per segment as LogSegment.recover does (per-batch index rule,
// producer state → aborted transactions with their LSO); producer snapshots at every segment base
// offset after the first and at the log end offset; leader-epoch-checkpoint rebuilt from the batches;
// partition.metadata copied. Bytes of a segment after its last valid entry are copied but not indexed
// (reported as warnings). `out` is a log directory, as compact's and repair's: it receives
// `<topic>-<partition>/` and the log-dir checkpoints of that partition (WriteCopyCheckpoints), written
// through a StagedDirectory: complete or absent.
bool ReindexPartition(Env* env, const std::string& in, const std::string& out, const ReindexOptions& options,
                      ReindexResult* result, ProblemSink* sink, std::string* error);

// ---------------------------------------------------------------------------------------------
// Writing a copy of one partition (repair, rebuild, salvage).

// The partition directory's name: "<topic>-<partition>" when its name parses, else its last component.
std::string PartitionDirName(const PartitionDir& dir);

// The staged --out of a partition copy (StagedDirectory with `force` and `inputs`), holding the new,
// empty directory `PartitionDirName(dir)` whose path goes to *part_dir. Null with *error.
std::unique_ptr<StagedDirectory> StagePartitionCopy(Env* env, const std::string& out, bool force,
                                                    std::vector<std::string> inputs, const PartitionDir& dir,
                                                    std::string* part_dir, std::string* error);

// The log-dir checkpoints under `root` for the one partition copied (spec §11.2): the high watermark,
// log start and cleaner offsets of `dir`'s log directory capped at `log_end_offset`, and the recovery
// point at `log_end_offset`. Nothing is written when `dir`'s name is not a topic-partition.
bool WriteCopyCheckpoints(Env* env, const std::string& root, const PartitionDir& dir, int64_t log_end_offset,
                          std::string* error);

}  // namespace klf
