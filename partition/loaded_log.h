// A partition directory as a broker's LogLoader loads it, offline: the one load every command starts
// from (LevelDB's Repairer reuses log::Reader the same way, and Kafka's cleaner works on the
// UnifiedLog that LogLoader built).
//
// LoadedLog::Open does one scan of the directory and reads what a broker reads on startup:
//   * the segments, each with its base offset and `.log` path, and every `.txnindex` entry (the
//     aborted transactions the fetch path returns);
//   * the log dir's checkpoints (log start, high watermark, cleaner offset) and meta.properties;
//   * the producer state at the log end: the latest valid `.snapshot` plus the log after it
//     (partition/producer_state.h, LoadProducerState);
//   * from those: the log start and end offsets, the high watermark as Kafka clamps it, the first
//     unstable offset and the last stable offset.
// ForEachBatch then streams the batches of every segment (segment_reader's LogReader), for the
// command's own pass. A file of the partition that exists but cannot be read makes the load fail:
// it is never treated as absent.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "partition/producer_state.h"
#include "segment_reader/batch.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/index_files.h"
#include "segment_reader/layout.h"
#include "segment_reader/problem.h"

namespace klf {

struct LoadOptions {
  // The clock of the load: a snapshot's producers expired at this time are dropped, as
  // loadFromSnapshot drops them. Unset: no producer is expired.
  std::optional<int64_t> now_ms;
  int64_t producer_id_expiration_ms = 86400000;
  // After the load, also run the broker's periodic removeExpiredProducers at now_ms (never a producer
  // with an open transaction).
  bool remove_expired_producers = false;
  // The listing, the checkpoints and the broker's identity only: no producer-state replay and no
  // `.txnindex` (the load reads no batch and no index). For readers that stream every batch
  // themselves and decide nothing from producer state: the metadata log, `__consumer_offsets`, the
  // coordinator's `__transaction_state`. Then producer_state, aborted_txns, snapshot_offset and
  // first_unstable_offset stay empty, and log_end_offset, high_watermark and last_stable_offset are not
  // computed (0; the checkpoint's high watermark is in high_watermark_checkpoint).
  bool segments_only = false;
  // What the load reads the files through (segment_reader/env.h; null: Env::Default()); kept in
  // LoadedLog::env for ForEachBatch. Tests pass FaultInjectionEnv (tests/support).
  Env* env = nullptr;
};

struct SegmentInfo {
  int64_t base_offset = 0;
  std::string log_path;
  std::optional<std::string> offset_index_path, time_index_path;  // when the files exist
  std::vector<AbortedTxn> txn_index;  // its `.txnindex` entries in file order (empty without one)
};

// One segment as a broker's LogSegment reports it after the load (spec kafka-log-cleaner.md §0): what
// the cleaner's choices are made from.
struct SegmentSummary {
  int64_t base_offset = 0;
  int64_t size = 0;                   // bytes of the .log
  int64_t last_modified_ms = 0;       // mtime of the .log
  int64_t max_timestamp_so_far = -1;  // last .timeindex entry's timestamp, -1 if none
  // maxTimestamp of the first batch (LogSegment.getFirstBatchTimestamp); nullopt for an empty segment.
  std::optional<int64_t> first_batch_timestamp;
  int64_t next_offset = 0;         // readNextOffset: last offset of its last batch + 1, or base if empty
  int64_t offset_index_bytes = 0;  // entries × 8
  int64_t time_index_bytes = 0;    // entries × 12

  // segment.largestTimestamp: maxTimestampSoFar if >= 0, else the file's mtime.
  int64_t largest_timestamp() const { return max_timestamp_so_far >= 0 ? max_timestamp_so_far : last_modified_ms; }
};

// Summarises `segment` (a LoadedLog segment) as LogSegment does: size and mtime of the `.log`; the
// `.index` entries (returned in *offset_index when given) and `.timeindex`'s last entry and byte sizes
// (whole entries; an index that cannot be read counts as empty, its problems go to `sink`, capped);
// the first batch's max timestamp; and LogSegment.readNextOffset: the batches from the offset index's
// last entry to the end of the file. Without a usable entry, or when the entry does not lead to a
// batch that holds its offset (a stale index), or the walk from it meets damage, every batch header
// from the start, which also reports the damage: a torn or zero-filled tail is a "truncated-tail"
// warning, framing corruption (NextEntry's rules, segment_reader/batch.h) an error that fails the call
// with *error naming the file and position. The `.log` is read in windows (WindowReader).
// Reads through `env` (null: Env::Default()); an index that exists but cannot be opened fails the call.
bool SummarizeSegment(const SegmentInfo& segment, SegmentSummary* out, std::vector<OffsetIndexEntry>* offset_index,
                      ProblemSink* sink, std::string* error, Env* env = nullptr);

// What a load establishes about a partition: whose it is, its offsets and its `.txnindex` entries.
// diff's ReplicaState holds the same, from a load or read back from a digest.
struct LoadedFacts {
  std::optional<TopicPartition> tp;
  std::optional<std::string> topic_id;    // partition.metadata
  std::optional<std::string> cluster_id;  // the log dir's meta.properties
  std::optional<int32_t> node_id;

  int64_t log_start_offset = 0;  // max(log-start-offset-checkpoint, first segment's base offset)
  int64_t log_end_offset = 0;
  // replication-offset-checkpoint (the log end offset without one), clamped into
  // [log start, log end] as UnifiedLog.updateHighWatermarkMetadata clamps it.
  int64_t high_watermark = 0;
  int64_t last_stable_offset = 0;             // min(first unstable offset, high watermark)
  std::optional<int64_t> cleaner_checkpoint;  // cleaner-offset-checkpoint (firstDirtyOffset)
  std::optional<int64_t> snapshot_offset;     // the producer snapshot the load started from

  std::vector<AbortedTxn> aborted_txns;  // every `.txnindex` entry, by first offset
  struct FilePosition {
    std::string file;
    uint64_t position = 0;
  };
  std::vector<FilePosition> aborted_txn_sources;  // parallel to aborted_txns: where each entry was read
};

struct LoadedLog : LoadedFacts {
  std::string dir;     // the partition directory as given
  Env* env = nullptr;  // LoadOptions::env: ForEachBatch reads through it (unless ReadOptions::env is set)

  std::vector<SegmentInfo> segments;               // every segment with a `.log`, ascending base offset
  std::map<int64_t, std::string> snapshot_files;   // producer snapshots: offset -> path
  std::vector<KraftSnapshotFile> kraft_snapshots;  // __cluster_metadata's `.checkpoint` snapshots, ascending

  PartitionDir scan;                                 // the directory as the load listed it (segment_reader/layout.h)
  std::optional<int64_t> high_watermark_checkpoint;  // replication-offset-checkpoint's value, before the clamp
  ProducerStateManager producer_state;               // at the log end
  std::optional<int64_t> first_unstable_offset;      // first offset of the earliest open transaction

  // Loads `partition_dir` (never modified). Problems met on the way (a damaged index or snapshot, a
  // high watermark past the log end) go to `sink`. Returns false with *error naming the file when the
  // directory cannot be listed, is not a partition directory, or holds a file the load needs that
  // exists but cannot be read; then *unreadable_file (when given) is true: the partition's content is
  // unknown, not absent, and it must not be used as if the file were not there.
  static bool Open(const std::string& partition_dir, const LoadOptions& options, LoadedLog* out, ProblemSink* sink,
                   std::string* error, bool* unreadable_file = nullptr);

  // The log as `listing` (a ScanPartitionDir result) gives it, reading no file: `dir`, `scan`, `tp`,
  // `topic_id`, the segments, the snapshot files; no fact (the offsets stay 0). For klf verify, which
  // checks the files a load refuses and reports what Open would stop at, on the same pass.
  static LoadedLog Listed(PartitionDir listing, Env* env);

  // One batch of the log, in offset order: the segment it is in (index into `segments`) and the
  // batch, valid only during the call. Return false to stop.
  using BatchVisitor = std::function<bool(size_t segment, const BatchView& batch)>;
  // Streams every batch of every segment front to back (LogReader::Open with `read`). Problems of the
  // framing go to `sink`. Returns false with *error when a segment cannot be opened, or cannot be read
  // to its end (an I/O error, a file that shrank: LogReader::read_error, naming the byte position);
  // the batches before it were visited.
  bool ForEachBatch(const BatchVisitor& visit, ProblemSink* sink, std::string* error, ReadOptions read = {}) const;

  // The same pass for a visitor that also sees the segments' boundaries: `before` (optional) before a
  // segment is opened, saying whether to read it, skip it or stop; `begin` (optional) when it is
  // opened, before its first batch (the reader knows the file's size and mtime); `batch` for each batch,
  // saying whether to go on, skip the rest of the segment or stop; `end` (optional) after the segment's
  // last batch or the skip (the reader says how the segment ended).
  // `unreadable` (optional) makes the files the pass cannot read the visitor's to judge: a segment that
  // cannot be opened is passed to it instead of failing the pass, and a read error ends its segment
  // (the reader reported it to the sink as a "file-read" problem; `end` is called); the pass goes on
  // with the next segment either way. Without it the pass fails at either.
  enum class Step { kNext, kNextSegment, kStop };
  struct SegmentVisitor {
    std::function<Step(size_t segment)> before;
    std::function<void(size_t segment, LogReader& reader)> begin;
    std::function<Step(size_t segment, const BatchView& batch)> batch;
    std::function<void(size_t segment, const LogReader& reader)> end;
    std::function<void(size_t segment, const std::string& error)> unreadable;
  };
  // A second visitor riding on the pass, so that two commands' work on a partition reads it once (klf
  // triage and digest verify a copy on the pass that loads it: verify/verify.h PartitionCheck). It
  // sees every batch of every segment and every problem the readers report, also where the pass's own
  // visitor skips a segment (or the rest of one) or stops: the reading goes on for the rider alone, and
  // what it finds then reaches neither the pass's visitor nor its sink, so the pass's result is what it
  // is without a rider. `start` (optional) is called before the first segment with the log (its `scan`
  // is the directory the segments come from); it may set `visit` and `sink`, which are read after it.
  // `complete` says whether the rider saw every segment to its end: false when the pass did not run, or
  // a segment could not be opened or read to its end.
  struct Rider {
    std::function<void(const LoadedLog& log)> start;
    SegmentVisitor visit;         // begin, batch (its Step is not looked at) and end
    ProblemSink* sink = nullptr;  // the readers' problems
    bool complete = false;
  };
  bool ForEachBatch(const SegmentVisitor& visit, ProblemSink* sink, std::string* error, ReadOptions read = {},
                    Rider* rider = nullptr) const;
};

}  // namespace klf
