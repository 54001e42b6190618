// The one resolver of PATH arguments for the commands that compare replicas (diff, lso, repair).
//
// cli.md: "a PATH may be a file, a partition directory or a broker log directory; the command finds
// what it needs". For these commands a PATH is a replica of one partition: a partition directory taken
// as given, or a broker log directory standing for its live partitions, matched to the other PATHs by
// partition directory name. One rule for all three commands:
//   - the same directory given twice is refused;
//   - no PATH is a log directory: one partition, the PATHs as given;
//   - otherwise: every partition name held (live) by at least `min_copies` of the PATHs, each with the
//     directory that each PATH holds it in. A partition directory among the PATHs holds its own name
//     only, so it narrows the log directories to that partition.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace klf::cli {

struct PartitionCopies {
  std::string name;               // the partition directory name; "" when no PATH is a log directory
  std::vector<std::string> dirs;  // its directory under each PATH that holds it, in PATH order
  std::vector<size_t> from;       // for each of dirs, the index of the PATH it was found under
};

struct ResolvedPaths {
  std::vector<PartitionCopies> partitions;  // sorted by name
  bool any_log_dir = false;
};

// min_copies == 0 means "every PATH". On failure *error names the PATH at fault (or the mismatch) and
// *exit_code is the exit code to use (cli.md: 2 for a usage error, 3 for a PATH that cannot be read).
bool ResolvePartitionPaths(const std::vector<std::string>& paths, size_t min_copies, ResolvedPaths* out,
                           std::string* error, int* exit_code);

// lso and repair work on one partition: the PATHs must resolve to exactly one held by every PATH, or
// `partition` (`--partition T-P`, for log directories holding several) names it. *dirs gets its
// directory under each PATH, in PATH order.
bool ResolveOnePartition(const std::vector<std::string>& paths, const std::string& partition,
                         std::vector<std::string>* dirs, std::string* error, int* exit_code);

// Captures among PATH arguments (segment_reader/capture.h): each PATH that runs through an archive
// has the archive indexed now, so a refused archive (a member escaping it, a link, a device, ...) or
// one that is no archive fails the command before any work, with the archive's message naming the
// member (exit code 3, a PATH that cannot be read). With `expand_roots`, an archive given alone
// stands for the broker log directories it holds (layout.h ExpandCaptureRoots). Real paths pass
// through unchanged.
bool PrepareCapturePaths(std::vector<std::string>* paths, bool expand_roots, std::string* error);
// The same for one PATH (a partition directory, a log directory): no expansion.
bool CheckCapturePath(const std::string& path, std::string* error);

// The log dirs of PATHs: each PATH and its parent (a PATH may be a log dir, or a partition dir in one).
std::vector<std::string> CandidateLogDirs(const std::vector<std::string>& paths);

}  // namespace klf::cli
