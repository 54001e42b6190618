// Verification of Kafka data: a file, a partition directory or a whole broker log directory
// (spec cli.md "verify"; kafka-on-disk-format.md §2, §8-§12, §14; dump-log-segments.md §7).
//
// What a caller may rely on:
// - Every problem goes to the sink with file, byte position, check and severity:
//     error   — corruption or an inconsistency Kafka would not have written (bad CRC, unparseable
//               records, offsets going back, an index entry that points nowhere, a .txnindex entry
//               without its ABORT marker, ...);
//     warning — damage Kafka repairs or tolerates on its own but that loses or hides something (a torn
//               or zero-filled tail of the last segment, missing index files it rebuilds, leftover
//               .cleaned/.swap/.deleted files, checkpoints ahead of the log, snapshot disagreements);
//     info    — normal-but-worth-knowing facts (offset gaps in a range the local cleaner never
//               cleaned: the data was fetched from a compacted leader).
// - Offset gaps below the cleaner checkpoint, control markers and empty retained batches are normal
//   and never reported (they are counted in VerifyStats).
// - A broker log directory's partitions are verified in parallel (a bounded std::thread pool); the
//   problems of each partition still reach the sink in partition-name order, from one thread at a
//   time, and in the order they were found within the partition.
// - Inputs are only read (read-only mappings); memory does not grow with segment size: the log is
//   walked once, batch by batch, and index entries are checked against it in the same pass.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "partition/loaded_log.h"
#include "segment_reader/batch.h"
#include "segment_reader/problem.h"

namespace klf {

struct VerifyOptions {
  // Worker threads for a log directory's partitions; 0 = the number of cores (capped at 16).
  int threads = 0;
  // Decode every record of every batch (record counts, offset deltas, timestamps, control records).
  // When false only framing, CRCs and headers are checked.
  bool check_records = true;
  ReadOptions read;
  // A log dir's partitions are verified as they are scanned, but reported only after the scan (its
  // problems come first), so their problems are held until then. Once this many are held, partitions
  // not yet started are verified after the scan, their problems streamed as each is done (0: always
  // so); those already being verified on other threads are still held, so the bound is soft.
  size_t held_problems = size_t(1) << 16;
  // For a caller that verifies some partitions of a log directory itself, each on the pass that loads
  // it (PartitionCheck): VerifyPath of the log directory leaves out the partitions whose directory path
  // (as the scan names it: the log dir's path as given, '/', the name) this returns true for. Their
  // directories are still scanned, and the scan's problems still reported with the log dir's.
  std::function<bool(const std::string& partition_dir)> verified_elsewhere;
};

struct VerifyStats {
  uint64_t files_checked = 0;
  uint64_t bytes_checked = 0;
  uint64_t batches = 0;
  uint64_t records = 0;
  uint64_t errors = 0;
  uint64_t warnings = 0;
  uint64_t infos = 0;
  // Offset gaps seen, by classification (spec: compaction below the cleaner checkpoint is normal).
  uint64_t gaps_below_cleaner_checkpoint = 0;
  uint64_t gaps_never_cleaned = 0;
  // True when a PATH could not be read at all (missing, unlistable, not Kafka data), or a file or
  // directory in it exists but cannot be read (a "file-read" or "dir-read" problem: a FIFO, a directory
  // or a symlink loop named like a segment, no permission): exit 3. Everything else is still checked.
  bool unreadable = false;
  // Why, when `unreadable`.
  std::string unreadable_reason;

  void Add(const VerifyStats& o);
};

// One record-level problem of a decoded batch (CheckBatchRecords).
struct RecordsProblem {
  uint64_t position = 0;   // in the file: the batch's position, or the header field's
  const char* check = "";  // "record-offset", "batch-timestamp", "control-record", "control-batch"
  std::string message;
};

// The record-level checks of `klf verify` (repair's salvage applies the same ones): `records`, decoded
// from the batch `h`, have strictly increasing offsets inside the batch's range (v2: base..last offset;
// v0/v1: inner messages ending at the wrapper's offset), a CreateTime v2 batch's maxTimestamp is its
// largest record timestamp, control records parse and an end-transaction marker batch holds one record.
// Returns the problems in order; stops at the first offset problem. Holes in the offsets inside the
// batch (compaction, or data fetched from a compacted leader: the caller classifies them) are appended
// to `holes` as [from, to) when it is not null.
std::vector<RecordsProblem> CheckBatchRecords(const BatchHeader& h, const std::vector<Record>& records,
                                              std::vector<std::pair<int64_t, int64_t>>* holes);

// The offset and timestamp problems of a v2 batch whose records were folded into `walk` (after its
// Finish): the record that broke the offsets' order, else a CreateTime maxTimestamp that is not the
// largest record timestamp. CheckBatchRecords reports these first; verify's check-only record walk
// (RecordDecoder::Check) reports them for batches that are not control batches.
void AppendOffsetWalkProblems(const BatchHeader& h, const RecordOffsetWalk& walk,
                              std::vector<RecordsProblem>* problems);

// Verifies `path` (a file, a partition directory or a broker log directory) and reports every
// problem to `sink`. Returns what was checked and how many problems of each severity were found.
VerifyStats VerifyPath(const std::string& path, const VerifyOptions& options, ProblemSink* sink);

// One partition of a log directory verified on the pass that loads it, so that a command that does both
// (klf triage, klf digest) reads it once: the partition's part of VerifyPath of its log directory,
// the directory scan's problems left out (they are the log dir's: VerifyOptions::verified_elsewhere).
//
//   PartitionCheck check(dir, options);
//   ReplicaOptions ro; ro.rider = check.rider();   // LoadReplica(dir, ro, ...) walks the segments
//   VerifyStats stats = check.Finish(&sink);
//
// The rider verifies the partition as the load listed it (LoadedLog::scan), every batch as the load's
// reader gives it. When it did not see them all (the load failed before its pass, a segment could not be
// read, or options.read is not the load's), Finish verifies the partition alone, reading it again: the
// problems and stats are the same either way.
class PartitionCheck {
 public:
  PartitionCheck(const std::string& partition_dir, const VerifyOptions& options);
  ~PartitionCheck();
  PartitionCheck(const PartitionCheck&) = delete;
  PartitionCheck& operator=(const PartitionCheck&) = delete;

  // What to put on the load (ReplicaOptions::rider): null when the partition is verified alone.
  LoadedLog::Rider* rider();
  // Reports the partition's problems to `sink` in VerifyPath's order; returns its stats. Call once.
  VerifyStats Finish(ProblemSink* sink);
  // Whether Finish took the rider's work (false: it read the partition again). For tests.
  bool rode() const { return rode_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool rode_ = false;
};

}  // namespace klf
