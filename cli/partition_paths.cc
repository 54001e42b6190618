#include "cli/partition_paths.h"

#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/command.h"
#include "segment_reader/capture.h"
#include "segment_reader/layout.h"
#include "segment_reader/problem.h"

namespace klf::cli {

bool CheckCapturePath(const std::string& path, std::string* error) {
  std::string archive, member;
  if (!SplitCapturePath(path, &archive, &member)) return true;
  return OpenCapture(archive, error) != nullptr;
}

bool PrepareCapturePaths(std::vector<std::string>* paths, bool expand_roots, std::string* error) {
  for (const std::string& p : *paths) {
    if (!CheckCapturePath(p, error)) return false;
  }
  if (expand_roots) *paths = ExpandCaptureRoots(*paths);
  return true;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one branch per PATH shape (file, partition dir, log dir, several brokers), cli.md's order
bool ResolvePartitionPaths(const std::vector<std::string>& given, size_t min_copies, ResolvedPaths* out,
                           std::string* error, int* exit_code) {
  *out = ResolvedPaths();
  std::vector<std::string> paths = given;
  if (!PrepareCapturePaths(&paths, /*expand_roots=*/true, error)) {
    *exit_code = kExitUnreadable;
    return false;
  }
  std::vector<PathInfo> infos;
  for (const std::string& p : paths) {
    PathInfo info = ClassifyPath(p);
    if (info.kind == PathKind::kMissing) {
      *error = p + ": no such file or directory";
      *exit_code = kExitUnreadable;
      return false;
    }
    if (info.kind == PathKind::kFile) {
      *error = info.path + ": a file, not a partition directory; give partition directories or broker log directories";
      *exit_code = kExitUsage;
      return false;
    }
    if (info.kind == PathKind::kLogDir) out->any_log_dir = true;
    infos.push_back(std::move(info));
  }
  // The same directory twice would compare a replica with itself and find nothing (`klf diff X X`).
  std::map<std::string, std::string> seen;  // real path -> PATH as given
  for (const PathInfo& info : infos) {
    std::error_code ec;
    std::string real = std::filesystem::weakly_canonical(info.path, ec).string();
    if (ec) real = info.path;
    auto [it, fresh] = seen.emplace(real, info.path);
    if (!fresh) {
      *error = fmt::format("{} and {} are the same directory; give each replica once", it->second, info.path);
      *exit_code = kExitUsage;
      return false;
    }
  }
  if (!out->any_log_dir) {
    std::vector<size_t> from(paths.size());
    for (size_t i = 0; i < from.size(); ++i) from[i] = i;
    out->partitions.push_back({"", paths, from});
    return true;
  }

  const size_t need = min_copies == 0 ? paths.size() : min_copies;
  std::map<std::string, std::pair<std::vector<std::string>, std::vector<size_t>>> by_name;
  for (size_t index = 0; index < infos.size(); ++index) {
    const PathInfo& info = infos[index];
    if (info.kind != PathKind::kLogDir) {
      auto& [dirs, from] = by_name[std::filesystem::path(info.path).filename().string()];
      dirs.push_back(info.path);
      from.push_back(index);
      continue;
    }
    // The log dir's partition directories by name: listed, not scanned (each command loads the ones
    // it reads).
    std::vector<LivePartitionDir> live;
    std::string why;
    if (!ListLivePartitionDirs(info.path, &live, &why)) {
      *error = info.path + ": cannot list the directory";
      *exit_code = kExitUnreadable;
      return false;
    }
    for (LivePartitionDir& pd : live) {
      auto& [dirs, from] = by_name[pd.name];
      dirs.push_back(std::move(pd.path));
      from.push_back(index);
    }
  }
  for (auto& [name, copies] : by_name) {
    if (copies.first.size() >= need)
      out->partitions.push_back({name, std::move(copies.first), std::move(copies.second)});
  }
  if (out->partitions.empty()) {
    *error = need == paths.size()
                 ? "no partition directory is present in every directory given"
                 : fmt::format("no partition directory is present in {} of the directories given", need);
    *exit_code = kExitUsage;
    return false;
  }
  return true;
}

bool ResolveOnePartition(const std::vector<std::string>& paths, const std::string& partition,
                         std::vector<std::string>* dirs, std::string* error, int* exit_code) {
  ResolvedPaths r;
  if (!ResolvePartitionPaths(paths, 0, &r, error, exit_code)) return false;
  if (!partition.empty()) {
    *exit_code = kExitUsage;
    if (!r.any_log_dir) {
      *error = "--partition " + partition +
               " picks a partition of broker log directories; the PATHs given are "
               "partition directories";
      return false;
    }
    for (PartitionCopies& p : r.partitions) {
      if (p.name == partition) {
        *dirs = std::move(p.dirs);
        return true;
      }
    }
    *error = "--partition " + partition + ": no live partition directory of that name in every directory given";
    return false;
  }
  if (r.partitions.size() != 1) {
    std::vector<std::string> names;
    for (const PartitionCopies& p : r.partitions) names.push_back(p.name);
    *error = fmt::format("the directories given share {} partitions ({}); pick one with --partition T-P", names.size(),
                         fmt::join(names, ", "));
    *exit_code = kExitUsage;
    return false;
  }
  *dirs = std::move(r.partitions.front().dirs);
  return true;
}

std::vector<std::string> CandidateLogDirs(const std::vector<std::string>& paths) {
  std::vector<std::string> where;
  std::set<std::string> seen;
  for (const std::string& p : paths) {
    std::filesystem::path path = std::filesystem::path(p).lexically_normal();
    if (path.filename().empty()) path = path.parent_path();
    // Both: a log dir's name may parse as a partition's ("kafka-logs-1").
    for (std::filesystem::path c : {path, path.parent_path()}) {
      if (c.empty()) c = ".";
      if (seen.insert(c.string()).second) where.push_back(c.string());
    }
  }
  return where;
}

}  // namespace klf::cli
