// Whole-capture triage (`klf triage LOG_DIR...`): one pass over the log directories of several brokers
// (or several disks of one broker) that says where to look first.
//
// For every live partition directory of every log directory it runs the checks klf has, and nothing
// new: verify (verify/verify.h) on each log directory, the replica diff (diff/diff.h) of every
// partition held by two or more brokers, the last-stable-offset explanation (diff/lso.h) of every copy
// (an offline find-hanging), and the log end offsets of the copies (lag). Its findings are those
// commands' findings; it only collects and ranks them:
//   diverged  > pinned LSO > damaged > lagging > single copy > healthy.
// The partitions are processed on a pool of `jobs` threads, one partition at a time per thread, so
// memory is bounded by the largest partitions' work, not by the capture; results keep partition order.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "diff/diff.h"

namespace klf {

struct TriageOptions {
  unsigned jobs = 0;  // partitions processed at once; 0 = one per core
  std::optional<int64_t> now_ms;
  int64_t producer_id_expiration_ms = 86400000;
  bool verify_records = true;  // verify decodes every record (false: framing, CRCs, headers)
  // The diff's and lso's sentences with wall-clock times (LsoOptions::wall_clock_times): text, not JSON.
  bool wall_clock_times = false;
  // Called after each partition with (done, total), from the worker threads one at a time.
  std::function<void(size_t, size_t)> progress;
};

// One copy of a partition: which log directory (and broker) holds it, and what it serves.
struct TriageCopy {
  std::string log_dir;
  std::string path;     // the partition directory
  std::string broker;   // node.id / broker.id from meta.properties, else the log directory
  bool loaded = false;  // false: it could not be read (error says why)
  std::string error;
  int64_t log_start_offset = 0, log_end_offset = 0, high_watermark = 0, last_stable_offset = 0;
  // The open transaction that pins the LSO on this copy (klf lso), as one sentence; empty when none.
  std::string pinned_by;
  int64_t lag = 0;  // offsets behind the copy with the highest log end offset
};

// Problems verify reported in one partition directory.
struct TriageDamage {
  uint64_t errors = 0, warnings = 0;
  std::string first_error;  // "<file>:<position> <check>: <message>"
};

enum class TriageStatus { kDiverged, kPinned, kDamaged, kLagging, kSingleCopy, kHealthy };
const char* TriageStatusName(TriageStatus s);  // "diverged", "pinned", ...

struct TriagePartition {
  std::string name;  // <topic>-<partition>
  std::vector<TriageCopy> copies;
  std::vector<TriageDamage> damage;              // per copy, same order
  std::optional<DiffReport> diff;                // when two or more copies were loaded
  std::vector<std::string> diff_labels;          // the replica labels the diff's indices refer to
  TriageStatus status = TriageStatus::kHealthy;  // the highest-ranked one
  bool diverged() const;
  bool pinned() const;
  bool damaged() const;
  bool lagging() const;
};

struct TriageCounts {
  size_t partitions = 0, compared = 0, single_copy = 0, diverged = 0, pinned = 0, damaged = 0, lagging = 0, healthy = 0,
         unreadable = 0;
};

struct TriageReport {
  std::vector<std::string> log_dirs;
  std::vector<std::string> brokers;           // distinct, in log-dir order
  std::vector<TriagePartition> partitions;    // ranked: status, then name
  std::vector<std::string> log_dir_problems;  // verify's errors about log-dir files, and unreadable dirs
  TriageCounts counts;
};

// Returns false with *error when a LOG_DIR is not a broker log directory or cannot be listed.
bool TriageCapture(const std::vector<std::string>& log_dirs, const TriageOptions& options, TriageReport* out,
                   std::string* error);

// The copies of one partition loaded again as TriageCapture loaded them for its diff (same options, same
// labels) and diffed again, for a page that draws the replicas (klf triage --html): TriageCapture keeps
// no replica, and a caller that reloads one partition at a time keeps memory at one partition's.
// False when fewer than two copies load.
bool TriageReloadForDiff(const TriagePartition& p, const TriageOptions& options, std::vector<ReplicaState>* replicas,
                         DiffReport* report);

}  // namespace klf
