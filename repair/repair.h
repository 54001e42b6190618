// Writing a diverged replica back to health (`klf repair`, spec cli.md "repair", scenarios.md §4, §6).
// Salvaging a damaged partition directory is salvage/salvage.h's.
//
// Repair never edits the target: it plans (diff/diff.h findings against the healthy replicas turned
// into edits of the target's batch stream), then writes a complete new partition directory through
// segment_writer's PartitionWriter, which rebuilds `.index`, `.timeindex`, `.txnindex`, producer
// snapshots and leader-epoch-checkpoint from the repaired batches exactly as a broker's recovery would.
// See repair.cc for the numbered recipe and the rules behind every choice.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diff/diff.h"
#include "diff/replica_state.h"
#include "txn/coordinator.h"
#include "segment_reader/batch.h"
#include "segment_reader/problem.h"
#include "segment_writer/file_writer.h"
#include "segment_writer/segment_writer.h"

namespace klf {

enum class RepairActionKind {
  kInsertMarker,   // write an end-transaction marker at a free offset (or over an empty control batch)
  kCopyBatch,      // copy a healthy replica's batch the target lacks (byte for byte)
  kRemoveRecords,  // rewrite batches without some records (as the cleaner's filterTo would)
  kUnrepairable,   // nothing safe to do: reported, exit 1
  kLeft,           // a transaction whose outcome the files do not prove: left alone, reported, exit 1
};
const char* RepairActionKindName(RepairActionKind k);  // "insert_marker", "copy_batch", ..., "left"

// How sure a step is. A step that writes a transaction's outcome is kCertain only when the files prove
// the outcome (repair.cc "What proves an outcome"); kAssumed when the operator decided it (--assume).
// kUnrepairable and kLeft steps write nothing and carry kNone.
enum class Certainty { kNone, kCertain, kAssumed };
const char* CertaintyName(Certainty c);  // "none", "certain", "assumed"

struct RepairAction {
  RepairActionKind kind = RepairActionKind::kUnrepairable;
  FindingKind finding = FindingKind::kDivergentRecord;  // what it repairs
  // kInsertMarker / kCopyBatch: the offset written. kRemoveRecords: first removed offset.
  int64_t offset = -1;
  std::vector<int64_t> removed_offsets;  // kRemoveRecords
  // kInsertMarker: the marker's fields.
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t coordinator_epoch = 0;
  ControlType marker_type = ControlType::kAbort;
  int64_t timestamp = -1;
  int32_t partition_leader_epoch = 0;
  bool replaces_empty_batch = false;  // the target holds an emptied control batch at `offset`
  // The window the marker had to land in: (after, before) exclusive.
  int64_t window_after = -1, window_before = -1;
  // kCopyBatch: where the bytes come from.
  std::string source_file;
  uint64_t source_position = 0;
  int64_t source_last_offset = -1;
  std::string reason;  // why this edit, why this offset (one sentence, for the printed plan)
  Certainty certainty = Certainty::kNone;
  std::string proof;  // kInsertMarker / kRemoveRecords of a transaction: what proves (or assumes) the outcome
  // kLeft: the records at stake (the target's records of the undecided transaction) and the --assume
  // spelling that decides it (PID@FIRST_OFFSET).
  std::vector<int64_t> records_at_stake;
  std::string assume_key;
  int finding_index = -1;  // index into RepairPlan::findings of the finding this step answers
};

struct RepairPlan {
  std::string partition;
  std::string target;                       // target partition dir
  std::vector<std::string> healthy;         // healthy partition dirs
  std::vector<Finding> findings;            // divergences of the target found by diff (indices: 0 = target)
  std::vector<std::string> replica_labels;  // labels for the findings' indices
  std::vector<RepairAction> actions;        // in offset order
  // --assume entries that matched no undecided transaction (a usage error: nothing is written).
  std::vector<std::string> unmatched_assumptions;
  bool HasUnrepairable() const;  // an kUnrepairable or kLeft step
};

// `--assume PRODUCER_ID@FIRST_OFFSET=commit|abort`: the operator's decision for one transaction of the
// target (FIRST_OFFSET: the first offset of the target's records at stake, as a "left" step names it).
struct RepairAssumption {
  int64_t producer_id = -1;
  int64_t first_offset = -1;
  ControlType outcome = ControlType::kAbort;
};
// Parses "PID@FIRST=commit|abort"; false with *error on anything else.
bool ParseRepairAssumption(const std::string& text, RepairAssumption* out, std::string* error);

struct RepairOptions {
  std::optional<int64_t> now_ms;  // clock for producer-state loading (expiration)
  int64_t producer_id_expiration_ms = 86400000;
  LogConfig config;                             // index.interval.bytes etc. for the rebuilt indexes
  bool force = false;                           // replace a non-empty --out
  std::vector<RepairAssumption> assumptions;    // --assume
  const CoordinatorLog* coordinator = nullptr;  // --txn-log: the coordinator's records as evidence
  // Memory for the per-record state of the replicas loaded at once (--memory-budget), shared equally among
  // them (ReplicaOptions::max_state_bytes): a replica that needs more stops the repair with an error naming
  // its segment, never an allocation failure. 0: none.
  uint64_t memory_budget_bytes = uint64_t(2048) << 20;
};

// Loads the replicas and plans. Returns false with *error when a replica cannot be read.
bool PlanRepair(const std::vector<std::string>& healthy_dirs, const std::string& target_dir,
                const RepairOptions& options, RepairPlan* plan, std::string* error);
// Planning on loaded replicas (tests).
RepairPlan PlanRepairOf(const std::vector<ReplicaState>& healthy, const ReplicaState& target,
                        const std::vector<RepairAssumption>& assumptions = {},
                        const CoordinatorLog* coordinator = nullptr);

struct RepairResult {
  std::string out_partition_dir;  // <out>/<topic>-<partition>
  int segments = 0;
  int batches_written = 0;
  int markers_inserted = 0;
  int batches_copied = 0;
  int records_removed = 0;
  int64_t log_end_offset = 0;
  int64_t last_stable_offset = 0;  // of the repaired copy, as a broker loads it
  std::vector<Finding> remaining;  // divergences diff still finds between the copy and the healthy replicas
  std::vector<std::string> remaining_labels;
  // What changed for consumers, the target against the copy (both as a broker loads them): offsets that
  // read_committed consumers now receive and did not (became_visible) or no longer receive
  // (became_hidden, removed records included), and keys whose latest read_committed value changed (their
  // latest record's offset before and after, -1 when the key had or has none). Lists are capped at
  // kMaxChangesListed entries; the counts are complete.
  static constexpr size_t kMaxChangesListed = 1000;
  std::vector<int64_t> became_visible, became_hidden;
  size_t became_visible_count = 0, became_hidden_count = 0;
  std::vector<std::pair<int64_t, int64_t>> keys_changed;
  size_t keys_changed_count = 0;
};

// Writes `<out>/<topic>-<partition>/` (the repaired copy) and the log-dir checkpoint files for that
// partition into `out` (complete or absent: staged and renamed), then reloads the copy and diffs it
// against the healthy replicas (RepairResult::remaining). Never writes inside an input.
bool WriteRepairedCopy(Env* env, const RepairPlan& plan, const std::string& out, const RepairOptions& options,
                       RepairResult* result, std::string* error);

// `--rebuild-from SOURCE`: writes `<out>/<topic>-<partition>/` as a follower holds the partition after
// re-fetching the whole log from SOURCE (the offline twin of re-replication): every batch of SOURCE from
// its log start offset on, byte for byte, in SOURCE's segments; indexes, `.txnindex`, producer snapshots
// and leader-epoch-checkpoint rebuilt from those batches; partition.metadata kept from the target (SOURCE's
// when the target has none); high watermark and log start offset taken from SOURCE (a follower takes the
// leader's), the recovery point at the log end. No transaction outcome is judged. `compare` (the healthy
// replicas, may be empty) are diffed against the copy afterwards (RepairResult::remaining), with SOURCE.
bool WriteRebuiltCopy(Env* env, const std::string& source_dir, const std::string& target_dir,
                      const std::vector<std::string>& compare, const std::string& out, const RepairOptions& options,
                      RepairResult* result, std::string* error);

}  // namespace klf
