// Kafka's log cleaner, run offline on a copy of a partition directory (`klf compact`).
//
// The pipeline (spec kafka-log-cleaner.md §13), one broker cleaning round per pass:
//   1. Copy the partition directory (mtimes preserved) and its log-dir checkpoint files into a
//      staging directory; every pass works on that copy (inputs are never opened for writing).
//   2. Load segments, summaries, transaction indexes, producer state (partition_log.h, §7.3).
//   3. Decide like LogCleanerManager: first dirty offset, first uncleanable offset, dirty ratio,
//      max-lag forcing (cleanable.h, §2). A checkpoint reset is written as a broker would.
//   4. Build the SkimpyOffsetMap over [firstDirtyOffset, firstUncleanableOffset), stopping at the
//      fill limit (offset_map.h, §4, §5); endOffset = map.latestOffset + 1.
//   5. Group segments below endOffset (grouping.h, §6.1); clean each group chunk by chunk with the
//      cleaner's read-buffer sizes, deciding every batch and record (txn_metadata.h, retention.h,
//      §6.2-§9) and re-encoding through segment_writer's batch builders. A dirty batch whose records
//      the map superseded, every one, is decided from its header without reading them (superseded.h).
//   6. Write each cleaned segment with its .index/.timeindex built per chunk (§10.2), its .txnindex
//      (§10.3), the group's last mtime; delete merged-away segments and their snapshots; set the
//      cleaner checkpoint to endOffset (§11).
//   7. Rename the staging directory to --out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compactor/cleanable.h"
#include "compactor/config.h"
#include "compactor/retention.h"
#include "segment_reader/env.h"
#include "segment_reader/problem.h"

namespace klf {

struct CompactOptions {
  CleanerConfig config;
  int64_t now = 0;
  // --passes N: pass k (0-based) runs at now + k × pass_interval_ms, so later passes can reach the
  // delete horizons stamped by earlier ones (tombstones and markers need 2-3 rounds, spec §12).
  int64_t pass_interval_ms = 0;
  bool only_if_eligible = false;  // exactly one broker pass: clean only when a broker would
  int passes = 1;
  bool explain = false;
  bool force = false;  // replace a non-empty --out
  std::optional<int64_t> high_watermark;
  // Replaces the cleaner-offset-checkpoint value for the first pass (a case.json's
  // firstDirtyOffsetOverride; Kafka's tests' LogToClean(firstDirtyOffset)). Still subject to the
  // log-start/log-end reset rule (§2.1).
  std::optional<int64_t> first_dirty_offset;
  // Coordinated compaction (spec redpanda-coordinated-compaction.md §4, §8), on top of Kafka's own
  // rules: tombstones may be removed only at offsets below max_tombstone_remove_offset (MTRO) and
  // COMMIT/ABORT markers only below max_tx_end_remove_offset (MXRO). Both exclusive; nullopt = no
  // limit (Kafka's uncoordinated cleaner). The simulator and `klf compact --mode coordinated` set them.
  std::optional<int64_t> max_tombstone_remove_offset;
  std::optional<int64_t> max_tx_end_remove_offset;
  // A second thread helps from this many bytes of dirty segments: it builds half of the offset map
  // (merged when the result cannot differ from one thread's, cleaner.cc Round::BuildOffsetMap) and
  // looks keys up ahead of the cleaning pass (lookup_ahead.h). Neither changes a decision. Tests set
  // 0 to take both paths on small logs.
  uint64_t parallel_min_bytes = uint64_t(64) << 20;
  // The cleaning pass uses what the map pass recorded of the dirty records (superseded.h): a batch
  // all of whose records were superseded is decided from its header, without reading its records
  // again, and a record the map pass put is decided without hashing and looking its key up again.
  // Never changes a decision; tests turn it off to compare.
  bool skip_superseded_batches = true;
  // A broker log directory's partitions each have their topic's configs: when set, ChooseFilthiestLog
  // judges each partition directory with config_for(dir) instead of `config` (klf compact takes them
  // from the metadata log).
  std::function<CleanerConfig(const std::string& partition_dir)> config_for;
  // Every file the compactor writes, copies, renames or removes goes through it (tests inject faults).
  Env* env = Env::Default();
};

// What --explain prints for one record.
struct RecordExplain {
  int64_t offset = 0;
  RecordDecision decision = RecordDecision::kKept;
  bool tombstone = false;
  std::optional<std::string> key;      // copied (explain mode only); nullopt = null key
  std::optional<ControlType> control;  // a control record's type (COMMIT, ABORT, ...)
};

// What --explain prints for one source batch.
struct BatchExplain {
  std::string file;       // source segment
  uint64_t position = 0;  // in the source segment
  int64_t base_offset = 0, last_offset = 0;
  bool is_control = false;
  int64_t producer_id = -1;
  BatchRetention retention = BatchRetention::kDeleteEmpty;
  BatchReason reason = BatchReason::kRecordsDecide;
  // "copied", "rebuilt", "stamped" (rebuilt with a new delete horizon), "emptied" (written as an
  // empty batch), "removed".
  std::string action;
  std::optional<int64_t> delete_horizon_ms;  // of the written batch
  std::vector<RecordExplain> records;        // not filled for DELETE batches (records not read)
};

struct CleanerStats {
  int64_t messages_read = 0, bytes_read = 0, messages_written = 0, bytes_written = 0;
  int64_t invalid_messages_read = 0, map_messages_read = 0, map_bytes_read = 0;
  int64_t tombstones_removed = 0, markers_removed = 0;
  // Coordinated mode: removals Kafka would have made that MTRO / MXRO held back.
  int64_t tombstones_held = 0, markers_held = 0;
};

struct OutputSegment {
  int64_t base_offset = 0;
  int64_t size = 0;
  bool cleaned = false;              // written by this pass (else untouched)
  std::vector<int64_t> merged_from;  // source segment bases
};

struct PassReport {
  int64_t now = 0;
  CleaningDecision decision;
  std::string partition;
  int64_t log_start_offset = 0, log_end_offset = 0, high_watermark = 0, last_stable_offset = 0;
  int64_t active_segment_base = 0;
  std::vector<int64_t> active_producers, expired_producers;
  std::optional<int64_t> cleaner_checkpoint_before;
  bool cleaned = false;
  int64_t end_offset = 0;     // new cleaner checkpoint when cleaned
  bool map_filled = false;    // the offset map reached its fill limit
  int map_threads = 1;        // 2 when the map was built by two threads (CompactOptions::parallel_min_bytes)
  int64_t lookups_ahead = 0;  // map lookups of the cleaning pass answered by the look-ahead thread
  // Batches the cleaning pass dropped or emptied without reading their records (superseded.h).
  int64_t batches_superseded = 0;
  int32_t map_slots = 0, map_entries = 0, max_desired_map_size = 0;
  std::optional<int64_t> checkpoint_written;  // value written to cleaner-offset-checkpoint, if any
  // Base offset of a source segment whose offsets overflowed its cleaned segment (legacy logs, spec
  // §6.2 step 4e): it was split into segments that each fit and the round was aborted (`cleaned` is
  // false; groups cleaned before it are in `segments`).
  std::optional<int64_t> split_segment;
  CleanerStats stats;
  std::vector<OutputSegment> segments;
  std::vector<BatchExplain> explain;
};

struct CompactReport {
  std::string out_partition_dir;
  std::vector<PassReport> passes;
};

// A broker log directory: LogCleanerManager.grabFilthiestCompactedLog over its partitions (spec §2.5).
struct LogDirCandidate {
  std::string partition_dir;
  CleaningDecision decision;
};
struct LogDirChoice {
  std::vector<LogDirCandidate> candidates;  // every partition directory with segments, by name
  // The eligible log with the largest dirty ratio; without `only_if_eligible`, if none is eligible,
  // the one with the largest ratio that has something to clean.
  std::optional<size_t> chosen;
};
// Returns false only when the directory cannot be listed; partitions that fail to load are reported
// and skipped (Kafka marks them uncleanable).
bool ChooseFilthiestLog(const std::string& log_dir, const CompactOptions& options, LogDirChoice* choice,
                        ProblemSink* sink, std::string* error);

// Runs the pipeline above from `partition_dir` (left untouched) into `out_dir`, which receives
// `<topic>-<partition>/` and the log-dir checkpoint files. Returns false with *error on bad input
// (corruption where the cleaner reads: Kafka would mark the partition uncleanable) or I/O failure;
// `out_dir` is then not created.
bool CompactPartition(const std::string& partition_dir, const std::string& out_dir, const CompactOptions& options,
                      CompactReport* report, ProblemSink* sink, std::string* error);

}  // namespace klf
