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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diff/diff.h"
#include "digest/digest.h"
#include "verify/verify.h"

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
  // Read from a digest (klf digest) instead of its directory: the digest file, the files the partition
  // directory held on the broker (what to fetch), and where its state is.
  std::string digest;
  std::vector<DigestFileInfo> files;
  std::shared_ptr<DigestFile> source;
  size_t source_copy = 0;
};

// Problems verify reported in one partition directory.
struct TriageDamage {
  uint64_t errors = 0, warnings = 0;
  std::string first_error;  // "<file>:<position> <check>: <message>"
  // What verify found on the copy that its log dir reports (FinishLogDirProblems): a file it could not
  // read, and errors in files outside the copy's directory.
  std::string unreadable;
  std::vector<std::string> other_files;
};

// kUndecided: only with digests, when they cannot settle whether the copies diverge (TriagePartition::undecided).
enum class TriageStatus { kDiverged, kUndecided, kPinned, kDamaged, kLagging, kSingleCopy, kHealthy };
const char* TriageStatusName(TriageStatus s);  // "diverged", "pinned", ...

struct TriagePartition {
  std::string name;  // <topic>-<partition>
  std::vector<TriageCopy> copies;
  std::vector<TriageDamage> damage;              // per copy, same order
  std::optional<DiffReport> diff;                // when two or more copies were loaded
  std::vector<std::string> diff_labels;          // the replica labels the diff's indices refer to
  std::vector<size_t> diff_copies;               // the copies the diff's indices refer to
  TriageStatus status = TriageStatus::kHealthy;  // the highest-ranked one
  // Digests that kept only batch identities cannot settle the diff (RestoreElidedRecords): why, and the
  // offsets whose files would (no diff then).
  std::string undecided;
  int64_t undecided_first = -1, undecided_last = -1;
  bool diverged() const;
  bool pinned() const;
  bool damaged() const;
  bool lagging() const;
};

struct TriageCounts {
  size_t partitions = 0, compared = 0, single_copy = 0, diverged = 0, pinned = 0, damaged = 0, lagging = 0, healthy = 0,
         unreadable = 0, undecided = 0;
};

// Verify's pass over one log directory, its partitions' copies left out (they are verified on the pass
// that loads them: CheckCopy): the errors in its own files, and whether it met a file it cannot read.
struct LogDirVerify {
  std::string log_dir;
  std::vector<std::string> problems;
  std::string unreadable;
};

struct TriageReport {
  std::vector<std::string> log_dirs;          // the log dirs given, and those the digests given were made of
  std::vector<std::string> digests;           // the digest files given
  std::vector<std::string> log_dir_brokers;   // the broker of each log dir scanned (TriageScan), same order
  bool input_unreadable = false;              // TriageCapture failed on an input that cannot be read (exit 3)
  std::vector<std::string> brokers;           // distinct, in log-dir order
  std::vector<TriagePartition> partitions;    // ranked: status, then name
  std::vector<std::string> log_dir_problems;  // verify's errors about log-dir files, and unreadable dirs
  TriageCounts counts;
  std::vector<LogDirVerify> log_dir_verify;  // TriageScan's passes, until FinishLogDirProblems
};

// Returns false with *error when an input is neither a broker log directory nor a digest, when a log
// directory cannot be listed, or when a digest cannot be read whole (digest/digest.h) or was made with
// other options (--now, --producer-id-expiration-ms, --headers-only) than these.
// Each input is a log directory or a digest file (klf digest); findings are the same either way, except
// that sentences cannot quote key and value bytes a digest does not hold (they name what to fetch).
bool TriageCapture(const std::vector<std::string>& inputs, const TriageOptions& options, TriageReport* out,
                   std::string* error);

// The copies of one partition loaded again as TriageCapture loaded them for its diff (same options, same
// labels) and diffed again, for a page that draws the replicas (klf triage --html): TriageCapture keeps
// no replica, and a caller that reloads one partition at a time keeps memory at one partition's.
// False when fewer than two copies load, or when digests cannot settle the diff (an undecided partition).
bool TriageReloadForDiff(const TriagePartition& p, const TriageOptions& options, std::vector<ReplicaState>* replicas,
                         DiffReport* report);

// Steps 1 and 2 of TriageCapture for log directories only (what klf digest records): the partition
// copies grouped by name, the brokers, and verify's pass over each log directory (log_dir_verify; the
// damage its scan found in the copies). Nothing loaded. The copies are verified when they are loaded
// (CheckCopy), and log_dir_problems is complete after FinishLogDirProblems.
bool TriageScan(const std::vector<std::string>& log_dirs, const TriageOptions& options, TriageReport* out,
                std::string* error);

// Verify's part for one copy read from its directory, on the pass that loads it (verify/verify.h
// PartitionCheck: the copy is read once): put rider() on the copy's load (ReplicaOptions::rider), then
// Finish adds what verify found to the copy's damage.
class CheckCopy {
 public:
  CheckCopy(const TriageCopy& copy, const TriageOptions& options);
  LoadedLog::Rider* rider() { return check_.rider(); }
  void Finish(TriageDamage* damage);

 private:
  std::string path_;
  PartitionCheck check_;
};

// log_dir_problems from verify's passes (log_dir_verify) and what the copies' checks found for their
// log dirs, in the order verify reports them: per log dir, its own errors, the copies' (by partition
// name), then the first file it could not read. Call after every copy's CheckCopy::Finish, before ranking.
void FinishLogDirProblems(TriageReport* report);
// The list FinishLogDirProblems would make from the log dirs' passes alone (the copies not yet checked).
std::vector<std::string> LogDirPassProblems(const TriageReport& report);

// For a finding of p's diff: per copy it names that comes from a digest, the segment files holding
// offsets [f.first_offset, f.last_offset] (the whole log when the finding has no offsets), as
// "<broker> on <host>: <path> (offsets A..B, N bytes)": what to fetch from which broker before klf diff.
std::vector<std::string> FilesToFetch(const TriagePartition& p, const Finding& f);
// The same for an undecided partition: every digest copy's files holding the undecided offsets.
std::vector<std::string> FilesToFetch(const TriagePartition& p);

}  // namespace klf
