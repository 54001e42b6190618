// Directory model (spec kafka-on-disk-format.md §1, §12, §13). Only listings, sizes and the small
// text files of the scanned directory are read; segment contents never are (each file klf reads is
// opened once and closed, to know that it can be read).
#include "segment_reader/layout.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <filesystem>
#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "segment_reader/capture.h"
#include "segment_reader/file.h"
#include "segment_reader/parallel.h"

namespace klf {
namespace fs = std::filesystem;

namespace {

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// LogFileUtils.offsetFromFileName parses the part before the first '.' with Long.parseLong; Kafka
// itself only ever writes 20 digits, so we accept digits only (a sign would be someone else's file).
std::optional<int64_t> ParseOffsetPrefix(std::string_view digits) {
  if (!AllDigits(digits) || digits.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : digits) {
    if (v > (uint64_t(INT64_MAX) - uint64_t(c - '0')) / 10) return std::nullopt;
    v = v * 10 + uint64_t(c - '0');
  }
  return int64_t(v);
}

std::string StripTrailingSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::string BaseName(const std::string& path) { return fs::path(StripTrailingSlashes(path)).filename().string(); }

std::string ParentOf(const std::string& path) {
  fs::path p(StripTrailingSlashes(path));
  fs::path parent = p.parent_path();
  if (parent.empty()) {
    if (p.is_absolute()) return "/";
    return (p == "." || p == "..") ? (p / "..").string() : ".";
  }
  return parent.string();
}

std::string Join(const std::string& dir, const std::string& name) {
  if (!dir.empty() && dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// A file klf reads when it scans or loads a directory (segments, indexes, snapshots, text files), as
// opposed to names it only lists (.lock, leftovers of interrupted operations) or does not know.
bool IsReadByKlf(const FileName& f) {
  return f.kind != FileKind::kUnknown && f.kind != FileKind::kLock && f.kind != FileKind::kKraftSnapshotPart &&
         f.suffix == FileSuffix::kNone;
}

struct Listing {
  std::vector<DirEntry> files;
  std::vector<std::string> dirs;  // names
  std::vector<std::string> others;
  std::vector<UnreadableFile> unreadable;  // only when probed: see ListDir
};

// How much ListDir looks at each entry.
enum class Probe {
  kNamesOnly,  // classify names (ClassifyDir): a file klf reads counts as one whatever its type
  kOpen,       // open each file klf reads (OpenInputFile): those that cannot be read go to `unreadable`
};

// Adds one entry klf reads to `out`: a file when it opens as a regular file, else unreadable.
void ProbeEntry(DirEntry d, Listing* out, Env* env) {
  InputFileInfo info;
  std::string error;
  InputFailure failure = InputFailure::kNone;
  if (ProbeInputFile(d.path, &info, &error, &failure, env)) {
    d.size = info.size;
    out->files.push_back(std::move(d));
  } else if (failure != InputFailure::kMissing) {  // missing: removed since it was listed
    out->unreadable.push_back(UnreadableFile{std::move(d), std::move(error)});
  }
}

bool ListDir(const std::string& path, Listing* out, ProblemSink* sink, Probe probe = Probe::kOpen, Env* env = nullptr) {
  // Real directories and directories of captures alike (segment_reader/capture.h).
  std::vector<InputDirEntry> entries;
  std::string list_error;
  // Sizes come from the probe of each file klf reads (ProbeEntry), so the listing stats only the
  // others (kNamesOnly: none).
  auto size_wanted = [probe](std::string_view name) {
    return probe == Probe::kOpen && !IsReadByKlf(ClassifyFileName(name));
  };
  if (!ListInputDir(path, &entries, &list_error, size_wanted)) {
    if (sink) Report(sink, Severity::kError, path, 0, "dir-read", fmt::format("cannot list directory: {}", list_error));
    return false;
  }
  for (InputDirEntry& e : entries) {
    std::string name = std::move(e.name);
    // klf's own output marker (segment_writer/output_guard.h): not Kafka data, not worth a note.
    if (name == ".klf-output") continue;
    DirEntry d;
    d.name = name;
    d.path = Join(path, name);
    d.info = ClassifyFileName(name);
    if (IsReadByKlf(d.info)) {
      // Whatever its type: a FIFO, directory or symlink loop with a segment's name is a segment
      // that cannot be read, not an unknown entry.
      if (probe == Probe::kOpen) {
        ProbeEntry(std::move(d), out, env);
      } else {
        out->files.push_back(std::move(d));
      }
      continue;
    }
    if (e.kind == InputKind::kDir) {
      out->dirs.push_back(name);
    } else if (e.kind == InputKind::kFile) {
      d.size = e.size;
      out->files.push_back(std::move(d));
    } else {
      out->others.push_back(name);
    }
  }
  std::sort(out->files.begin(), out->files.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  std::sort(out->dirs.begin(), out->dirs.end());
  std::sort(out->others.begin(), out->others.end());
  std::sort(out->unreadable.begin(), out->unreadable.end(),
            [](const UnreadableFile& a, const UnreadableFile& b) { return a.file.name < b.file.name; });
  return true;
}

void ReportUnreadable(ProblemSink* sink, const UnreadableFile& u) {
  Report(sink, Severity::kError, u.file.path, 0, "file-read",
         fmt::format("cannot be read: {}", WithoutFile(u.error, u.file.path)));
}

// Reads a text file of the scanned directory. One that cannot be read (it may have changed since it was
// listed) is added to *unreadable; one over the cap is damage ("file-size"), as if it did not parse.
bool ReadText(const DirEntry& e, std::string* text, ProblemSink* sink, std::vector<UnreadableFile>* unreadable,
              Env* env) {
  std::string error;
  InputFailure failure = InputFailure::kNone;
  if (ReadSmallFile(e.path, kMaxMetadataFileBytes, text, &error, &failure, env)) return true;
  if (failure == InputFailure::kTooLarge) {
    Report(sink, Severity::kError, e.path, 0, "file-size", error);
  } else {
    unreadable->push_back(UnreadableFile{e, error});
    ReportUnreadable(sink, unreadable->back());
  }
  return false;
}

bool IsPartitionLevel(FileKind k) {
  switch (k) {
    case FileKind::kLog:
    case FileKind::kOffsetIndex:
    case FileKind::kTimeIndex:
    case FileKind::kTxnIndex:
    case FileKind::kProducerSnapshot:
    case FileKind::kLeaderEpochCheckpoint:
    case FileKind::kPartitionMetadata:
    case FileKind::kKraftSnapshot:
    case FileKind::kKraftSnapshotPart:
    case FileKind::kQuorumState: return true;
    default: return false;
  }
}

bool IsLogDirLevel(FileKind k) {
  switch (k) {
    case FileKind::kMetaProperties:
    case FileKind::kCleanShutdown:
    case FileKind::kLock:
    case FileKind::kBootstrapCheckpoint:
    case FileKind::kCleanerOffsetCheckpoint:
    case FileKind::kRecoveryPointCheckpoint:
    case FileKind::kReplicationOffsetCheckpoint:
    case FileKind::kLogStartOffsetCheckpoint: return true;
    default: return false;
  }
}

const char* LeftoverMeaning(const DirEntry& e) {
  switch (e.info.suffix) {
    case FileSuffix::kCleaned:
      return "output of a log-cleaner pass or segment split that did not finish; Kafka deletes it at "
             "startup (LogLoader)";
    case FileSuffix::kSwap:
      return "a cleaned or split segment whose swap did not finish; Kafka completes the swap at startup "
             "(LogLoader)";
    case FileSuffix::kDeleted:
      return "a file scheduled for asynchronous deletion; Kafka deletes it at startup (LogLoader)";
    case FileSuffix::kTmp:
      return "an interrupted atomic write (tmp file not renamed); the real file is the one without .tmp "
             "(Kafka writes checkpoints and snapshots as .tmp, then renames)";
    case FileSuffix::kNone: break;
  }
  if (e.info.kind == FileKind::kKraftSnapshotPart)
    return "a KRaft snapshot that was not completely written (KRaft deletes it at startup)";
  return "leftover file";
}

// A name ending in a segment-file extension (possibly with a leftover suffix) whatever its prefix.
bool LooksLikeSegmentFile(std::string_view name) {
  for (std::string_view suffix : {".cleaned", ".swap", ".deleted", ".tmp"}) {
    if (name.ends_with(suffix)) {
      name.remove_suffix(suffix.size());
      break;
    }
  }
  for (std::string_view ext : {".log", ".index", ".timeindex", ".txnindex", ".snapshot"}) {
    if (name.ends_with(ext)) return true;
  }
  return false;
}

void ParseTextFilesOfPartition(PartitionDir* out, ProblemSink* sink, Env* env) {
  std::string text;
  if (out->leader_epoch_checkpoint_file &&
      ReadText(*out->leader_epoch_checkpoint_file, &text, sink, &out->unreadable, env)) {
    std::vector<LeaderEpochEntry> entries;
    if (ParseLeaderEpochCheckpoint(out->leader_epoch_checkpoint_file->path, text, &entries, sink)) {
      out->leader_epochs = std::move(entries);
    }
  }
  if (out->partition_metadata_file && ReadText(*out->partition_metadata_file, &text, sink, &out->unreadable, env)) {
    PartitionMetadata m;
    if (ParsePartitionMetadata(out->partition_metadata_file->path, text, &m, sink)) out->partition_metadata = m;
  }
}

// A directory's kind from names only (see ClassifyPath in layout.h). Log-dir files win: a partition
// directory never holds meta.properties or offset checkpoints, while a log directory may itself be
// named like "<topic>-<n>" (e.g. "kafka-logs-1"). A partition directory has no subdirectories.
PathKind ClassifyDir(const std::string& dir, bool look_into_subdirs) {
  Listing l;
  if (!ListDir(dir, &l, nullptr, Probe::kNamesOnly)) return PathKind::kOtherDir;
  bool partition_files = false, logdir_files = false;
  for (const auto& f : l.files) {
    partition_files = partition_files || IsPartitionLevel(f.info.kind);
    logdir_files = logdir_files || IsLogDirLevel(f.info.kind);
  }
  if (logdir_files) return PathKind::kLogDir;
  if (partition_files) return PathKind::kPartitionDir;
  if (look_into_subdirs) {
    for (const auto& d : l.dirs) {
      if (ParsePartitionDirName(d) &&
          ClassifyDir(Join(dir, d), /*look_into_subdirs=*/false) == PathKind::kPartitionDir) {
        return PathKind::kLogDir;
      }
    }
  }
  if (l.dirs.empty() && ParsePartitionDirName(BaseName(dir))) return PathKind::kPartitionDir;
  return PathKind::kOtherDir;
}

}  // namespace

PartitionDirState StateOfDirName(std::string_view name) {
  if (name.ends_with("-future")) return PartitionDirState::kFuture;
  if (name.ends_with("-delete")) return PartitionDirState::kDelete;
  if (name.ends_with("-stray")) return PartitionDirState::kStray;
  return PartitionDirState::kLive;
}

const char* FileKindName(FileKind k) {
  switch (k) {
    case FileKind::kLog: return "log";
    case FileKind::kOffsetIndex: return "offset-index";
    case FileKind::kTimeIndex: return "time-index";
    case FileKind::kTxnIndex: return "txn-index";
    case FileKind::kProducerSnapshot: return "producer-snapshot";
    case FileKind::kLeaderEpochCheckpoint: return "leader-epoch-checkpoint";
    case FileKind::kPartitionMetadata: return "partition-metadata";
    case FileKind::kKraftSnapshot: return "kraft-snapshot";
    case FileKind::kKraftSnapshotPart: return "kraft-snapshot-part";
    case FileKind::kQuorumState: return "quorum-state";
    case FileKind::kBootstrapCheckpoint: return "bootstrap-checkpoint";
    case FileKind::kMetaProperties: return "meta-properties";
    case FileKind::kCleanShutdown: return "clean-shutdown";
    case FileKind::kLock: return "lock";
    case FileKind::kCleanerOffsetCheckpoint: return "cleaner-offset-checkpoint";
    case FileKind::kRecoveryPointCheckpoint: return "recovery-point-offset-checkpoint";
    case FileKind::kReplicationOffsetCheckpoint: return "replication-offset-checkpoint";
    case FileKind::kLogStartOffsetCheckpoint: return "log-start-offset-checkpoint";
    case FileKind::kUnknown: return "unknown";
  }
  return "unknown";
}

const char* PathKindName(PathKind k) {
  switch (k) {
    case PathKind::kFile: return "file";
    case PathKind::kPartitionDir: return "partition-dir";
    case PathKind::kLogDir: return "log-dir";
    case PathKind::kOtherDir: return "other-dir";
    case PathKind::kMissing: return "missing";
  }
  return "missing";
}

std::string OffsetFileNamePrefix(int64_t offset) { return fmt::format("{:020d}", offset); }

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per file name Kafka writes in a partition directory (FMT §1, §12)
FileName ClassifyFileName(std::string_view name) {
  FileName out;
  static constexpr std::pair<std::string_view, FileSuffix> kSuffixes[] = {
      {".cleaned", FileSuffix::kCleaned},
      {".swap", FileSuffix::kSwap},
      {".deleted", FileSuffix::kDeleted},
      {".tmp", FileSuffix::kTmp},
  };
  for (const auto& [text, suffix] : kSuffixes) {
    if (name.size() > text.size() && name.ends_with(text)) {
      out.suffix = suffix;
      name.remove_suffix(text.size());
      break;
    }
  }
  static constexpr std::pair<std::string_view, FileKind> kFixed[] = {
      {"leader-epoch-checkpoint", FileKind::kLeaderEpochCheckpoint},
      {"partition.metadata", FileKind::kPartitionMetadata},
      {"quorum-state", FileKind::kQuorumState},
      {"bootstrap.checkpoint", FileKind::kBootstrapCheckpoint},
      {"meta.properties", FileKind::kMetaProperties},
      {".kafka_cleanshutdown", FileKind::kCleanShutdown},
      {".lock", FileKind::kLock},
      {"cleaner-offset-checkpoint", FileKind::kCleanerOffsetCheckpoint},
      {"recovery-point-offset-checkpoint", FileKind::kRecoveryPointCheckpoint},
      {"replication-offset-checkpoint", FileKind::kReplicationOffsetCheckpoint},
      {"log-start-offset-checkpoint", FileKind::kLogStartOffsetCheckpoint},
  };
  for (const auto& [text, kind] : kFixed) {
    if (name == text) {
      out.kind = kind;
      return out;
    }
  }
  // KRaft snapshot: <20-digit end offset>-<10-digit epoch>.checkpoint[.part] (Snapshots.java).
  bool part = name.ends_with(".checkpoint.part");
  if (part || name.ends_with(".checkpoint")) {
    std::string_view stem = name.substr(0, name.size() - (part ? 16 : 11));
    size_t dash = stem.find('-');
    if (dash != std::string_view::npos) {
      auto offset = ParseOffsetPrefix(stem.substr(0, dash));
      std::string_view epoch = stem.substr(dash + 1);
      std::optional<int64_t> e = epoch.size() <= 10 ? ParseOffsetPrefix(epoch) : std::nullopt;
      if (offset && e) {
        if (*e <= INT32_MAX) {
          out.kind = part ? FileKind::kKraftSnapshotPart : FileKind::kKraftSnapshot;
          out.offset = offset;
          out.epoch = int32_t(*e);
          out.canonical_name = dash == 20 && epoch.size() == 10;
          return out;
        }
      }
    }
    out.kind = FileKind::kUnknown;
    return out;
  }
  size_t dot = name.find('.');
  if (dot == std::string_view::npos) return out;
  std::string_view ext = name.substr(dot);
  static constexpr std::pair<std::string_view, FileKind> kSegment[] = {
      {".log", FileKind::kLog},
      {".index", FileKind::kOffsetIndex},
      {".timeindex", FileKind::kTimeIndex},
      {".txnindex", FileKind::kTxnIndex},
      {".snapshot", FileKind::kProducerSnapshot},
  };
  for (const auto& [text, kind] : kSegment) {
    if (ext == text) {
      auto offset = ParseOffsetPrefix(name.substr(0, dot));
      if (!offset) return out;
      out.kind = kind;
      out.offset = offset;
      out.canonical_name = dot == 20;
      return out;
    }
  }
  return out;
}

std::vector<const SegmentFiles*> PartitionDir::LogSegments() const {
  std::vector<const SegmentFiles*> out;
  for (const auto& [base, seg] : segments) {
    if (seg.log) out.push_back(&seg);
  }
  return out;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per directory entry kind (FMT §1, §12, §13)
bool ScanPartitionDir(const std::string& path_in, PartitionDir* out, ProblemSink* sink, Env* env) {
  *out = PartitionDir{};
  out->path = StripTrailingSlashes(path_in);
  out->name = BaseName(out->path);
  out->tp = ParsePartitionDirName(out->name);
  out->state = StateOfDirName(out->name);
  if (!out->tp) {
    Report(sink, Severity::kWarning, out->path, 0, "partition-dir-name",
           fmt::format("directory name \"{}\" is not <topic>-<partition> (UnifiedLog.parseTopicPartitionName)",
                       out->name));
  }
  Listing listing;
  if (!ListDir(out->path, &listing, sink, Probe::kOpen, env)) return false;
  for (const std::string& d : listing.dirs) {
    DirEntry e;
    e.name = d;
    e.path = Join(out->path, d);
    out->unknown.push_back(e);
    Report(sink, Severity::kInfo, e.path, 0, "unknown-file", "unexpected subdirectory in a partition directory");
  }
  for (UnreadableFile& u : listing.unreadable) {
    ReportUnreadable(sink, u);
    out->unreadable.push_back(std::move(u));
  }
  std::set<int64_t> unreadable_logs;  // their index files are not orphans: the .log is there
  for (const UnreadableFile& u : out->unreadable) {
    if (u.file.info.kind == FileKind::kLog) unreadable_logs.insert(*u.file.info.offset);
  }
  for (DirEntry& e : listing.files) {
    if (!e.info.canonical_name) {
      Report(sink, Severity::kWarning, e.path, 0, "file-name",
             fmt::format("offset in the name is not written as 20 zero-padded digits as Kafka writes it "
                         "(LogFileUtils.filenamePrefixFromOffset)"));
    }
    if (e.info.suffix != FileSuffix::kNone || e.info.kind == FileKind::kKraftSnapshotPart) {
      Report(sink, Severity::kWarning, e.path, 0, "leftover-file", LeftoverMeaning(e));
      out->leftovers.push_back(std::move(e));
      continue;
    }
    switch (e.info.kind) {
      case FileKind::kLog:
      case FileKind::kOffsetIndex:
      case FileKind::kTimeIndex:
      case FileKind::kTxnIndex: {
        SegmentFiles& seg = out->segments[*e.info.offset];
        seg.base_offset = *e.info.offset;
        std::optional<DirEntry>* slot = e.info.kind == FileKind::kLog           ? &seg.log
                                        : e.info.kind == FileKind::kOffsetIndex ? &seg.index
                                        : e.info.kind == FileKind::kTimeIndex   ? &seg.time_index
                                                                                : &seg.txn_index;
        if (*slot) {
          // Two names with the same offset (e.g. "5.log" and "00000000000000000005.log").
          Report(sink, Severity::kWarning, e.path, 0, "duplicate-segment-file",
                 fmt::format("another file ({}) has the same kind and offset {}", (*slot)->name, *e.info.offset));
          out->unknown.push_back(std::move(e));
        } else {
          *slot = std::move(e);
        }
        break;
      }
      case FileKind::kProducerSnapshot: out->producer_snapshots.emplace(*e.info.offset, std::move(e)); break;
      case FileKind::kLeaderEpochCheckpoint: out->leader_epoch_checkpoint_file = std::move(e); break;
      case FileKind::kPartitionMetadata: out->partition_metadata_file = std::move(e); break;
      case FileKind::kKraftSnapshot: {
        KraftSnapshotFile k{*e.info.offset, e.info.epoch, std::move(e)};
        out->kraft_snapshots.push_back(std::move(k));
        break;
      }
      case FileKind::kQuorumState: out->quorum_state = std::move(e); break;
      default:
        if (LooksLikeSegmentFile(e.name)) {
          // LogLoader parses the name of every *.log (and index/snapshot) file with Long.parseLong:
          // a broker would fail to load this directory.
          Report(sink, Severity::kWarning, e.path, 0, "file-name",
                 "name has a segment/index/snapshot extension but does not start with a decimal offset "
                 "(LogFileUtils.offsetFromFileName); Kafka cannot parse it");
        } else {
          Report(sink, Severity::kInfo, e.path, 0, "unknown-file",
                 fmt::format("file is not one Kafka keeps in a partition directory ({})", FileKindName(e.info.kind)));
        }
        out->unknown.push_back(std::move(e));
    }
  }
  std::sort(out->kraft_snapshots.begin(), out->kraft_snapshots.end(), [](const auto& a, const auto& b) {
    return std::pair(a.end_offset, a.epoch) < std::pair(b.end_offset, b.epoch);
  });
  for (const auto& [base, seg] : out->segments) {
    if (seg.log || unreadable_logs.count(base)) continue;
    // LogLoader deletes index files that have no .log (spec §12 step 6).
    for (const auto* f : {&seg.index, &seg.time_index, &seg.txn_index}) {
      if (*f) {
        Report(sink, Severity::kWarning, (*f)->path, 0, "orphan-index",
               fmt::format("index file without a {}.log; Kafka deletes it at startup (LogLoader)",
                           OffsetFileNamePrefix(base)));
      }
    }
  }
  if (out->LogSegments().empty() && unreadable_logs.empty()) {
    // Kafka would start such a log with a new empty segment; for an offline reader the data is gone
    // (or was not copied).
    Report(sink, Severity::kWarning, out->path, 0, "no-segments", "partition directory holds no .log segment file");
  }
  ParseTextFilesOfPartition(out, sink, env);
  return true;
}

bool ReadOffsetCheckpointFile(const std::string& path, std::map<TopicPartition, int64_t>* out, ProblemSink* sink,
                              std::vector<UnreadableFile>* unreadable, Env* env) {
  out->clear();
  std::string text, error;
  InputFailure failure = InputFailure::kNone;
  if (!ReadSmallFile(path, kMaxMetadataFileBytes, &text, &error, &failure, env)) {
    // Absent is normal (a broker that never wrote it); a file that is there but cannot be read is not.
    if (failure == InputFailure::kTooLarge) Report(sink, Severity::kError, path, 0, "file-size", error);
    if (failure == InputFailure::kUnreadable) {
      DirEntry e;
      e.path = path;
      e.name = fs::path(path).filename().string();
      e.info = ClassifyFileName(e.name);
      UnreadableFile u{e, error};
      ReportUnreadable(sink, u);
      if (unreadable) unreadable->push_back(std::move(u));
    }
    return false;
  }
  std::vector<OffsetCheckpointEntry> entries;
  if (!ParseOffsetCheckpoint(path, text, &entries, sink)) return false;
  for (const auto& e : entries) (*out)[e.tp] = e.offset;
  return true;
}

namespace {

struct ScannedPartition {
  PartitionDir dir;
  CollectingSink problems;
  bool listed = false;
};

// The partition directories among `names` (the subdirectories of log dir `path`), scanned on `jobs`
// threads; indexed like `names`. Empty when one thread does it (the caller scans them in order).
std::vector<ScannedPartition> ScanPartitionDirs(const std::string& path, const std::vector<std::string>& names,
                                                size_t jobs, Env* env, const std::function<void(PartitionDir*)>& hook) {
  std::vector<ScannedPartition> out;
  jobs = std::min({jobs, names.size(), size_t(16)});
  if (jobs <= 1) return out;
  out.resize(names.size());
  ParallelFor(names.size(), unsigned(jobs), [&](size_t i) {
    if (ParsePartitionDirName(names[i])) {
      out[i].listed = ScanPartitionDir(Join(path, names[i]), &out[i].dir, &out[i].problems, env);
      if (out[i].listed && hook) hook(&out[i].dir);
    }
  });
  return out;
}

}  // namespace

bool ListLivePartitionDirs(const std::string& path, std::vector<LivePartitionDir>* out, std::string* error) {
  out->clear();
  std::vector<InputDirEntry> entries;
  if (!ListInputDir(path, &entries, error, [](std::string_view) { return false; })) return false;
  const std::string dir = StripTrailingSlashes(path);
  for (InputDirEntry& e : entries) {
    if (e.kind != InputKind::kDir || !ParsePartitionDirName(e.name) ||
        StateOfDirName(e.name) != PartitionDirState::kLive)
      continue;
    out->push_back(LivePartitionDir{e.name, Join(dir, e.name)});
  }
  std::sort(out->begin(), out->end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return true;
}

namespace {

// The log directory's own files (FMT §11.2: checkpoints, meta.properties, .kafka_cleanshutdown, leftovers)
// into `out`, their problems to `sink`.
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per log dir file kind (FMT §1.1)
void ReadLogDirOwnFiles(const std::vector<DirEntry>& files, LogDir* out, ProblemSink* sink, Env* env) {
  for (const DirEntry& e : files) {
    out->files.push_back(e);
    if (e.info.suffix != FileSuffix::kNone) {
      Report(sink, Severity::kWarning, e.path, 0, "leftover-file", LeftoverMeaning(e));
      out->leftovers.push_back(e);
      continue;
    }
    std::optional<std::map<TopicPartition, int64_t>>* checkpoint = nullptr;
    switch (e.info.kind) {
      case FileKind::kMetaProperties: {
        std::string text;
        MetaProperties m;
        if (ReadText(e, &text, sink, &out->unreadable, env) && ParseMetaProperties(e.path, text, &m, sink)) {
          out->meta_properties = m;
        }
        break;
      }
      case FileKind::kCleanShutdown: {
        out->clean_shutdown_file = e;
        std::string text;
        CleanShutdown c;
        if (ReadText(e, &text, sink, &out->unreadable, env) && ParseCleanShutdown(e.path, text, &c, sink)) {
          out->clean_shutdown_broker_epoch = c.broker_epoch;
        }
        break;
      }
      case FileKind::kBootstrapCheckpoint: out->bootstrap_checkpoint = e; break;
      case FileKind::kLock: break;
      case FileKind::kCleanerOffsetCheckpoint: checkpoint = &out->cleaner_offsets; break;
      case FileKind::kRecoveryPointCheckpoint: checkpoint = &out->recovery_points; break;
      case FileKind::kReplicationOffsetCheckpoint: checkpoint = &out->high_watermarks; break;
      case FileKind::kLogStartOffsetCheckpoint: checkpoint = &out->log_start_offsets; break;
      default:
        Report(sink, Severity::kInfo, e.path, 0, "unknown-file",
               fmt::format("file is not one Kafka keeps in a log directory ({})", FileKindName(e.info.kind)));
        out->unknown.push_back(e);
    }
    if (checkpoint) {
      std::map<TopicPartition, int64_t> m;
      if (ReadOffsetCheckpointFile(e.path, &m, sink, &out->unreadable, env)) *checkpoint = std::move(m);
    }
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per log dir entry kind (FMT §1.1)
bool ScanLogDir(const std::string& path_in, LogDir* out, ProblemSink* sink, size_t jobs, Env* env,
                const ScannedPartitionHook& on_scanned) {
  *out = LogDir{};
  out->path = StripTrailingSlashes(path_in);
  Listing listing;
  if (!ListDir(out->path, &listing, sink, Probe::kOpen, env)) return false;
  for (UnreadableFile& u : listing.unreadable) {
    ReportUnreadable(sink, u);
    out->unreadable.push_back(std::move(u));
  }
  for (const std::string& name : listing.others) {
    // A partition directory's name on something that is not a directory: a symlink loop, a dangling
    // link, a FIFO. The partition is there and cannot be read.
    if (!ParsePartitionDirName(name)) continue;
    std::string path = Join(out->path, name);
    struct stat st;
    std::string why = ::stat(path.c_str(), &st) != 0 ? std::strerror(errno)
                                                     : std::string(FileTypeName(st.st_mode)) + ", not a directory";
    DirEntry e;
    e.name = name;
    e.path = path;
    out->unreadable.push_back(UnreadableFile{e, path + ": " + why});
    ReportUnreadable(sink, out->unreadable.back());
  }
  // The log dir's own files do not depend on its partitions: they are read first (with more than one
  // job, on a thread of their own while the partitions are scanned; a hook waits for them), into their
  // own sink and LogDir, and reported and merged after the partitions, as one thread would have.
  LogDir own;
  own.path = out->path;
  CollectingSink own_sink;
  std::latch own_read(1);
  auto read_own = [&] {
    ReadLogDirOwnFiles(listing.files, &own, &own_sink, env);
    own_read.count_down();
  };
  std::thread own_reader;
  if (jobs > 1 && !listing.files.empty()) {
    own_reader = std::thread(read_own);
  } else {
    read_own();
  }
  std::function<void(PartitionDir*)> hook;
  if (on_scanned) {
    hook = [&](PartitionDir* p) {
      own_read.wait();
      on_scanned(own, p);
    };
  }
  // Partition directories are scanned on `jobs` threads, each into its own sink; the problems are
  // then reported in name order, as one thread reports them.
  std::vector<ScannedPartition> scanned = ScanPartitionDirs(out->path, listing.dirs, jobs, env, hook);
  out->partitions.reserve(listing.dirs.size());
  for (size_t i = 0; i < listing.dirs.size(); ++i) {
    const std::string& d = listing.dirs[i];
    if (!ParsePartitionDirName(d)) {
      DirEntry e;
      e.name = d;
      e.path = Join(out->path, d);
      Report(sink, Severity::kInfo, e.path, 0, "unknown-file",
             "subdirectory is not a partition directory (<topic>-<partition>)");
      out->unknown.push_back(std::move(e));
      continue;
    }
    PartitionDir& p = out->partitions.emplace_back();
    bool listed;
    if (scanned.empty()) {
      listed = ScanPartitionDir(Join(out->path, d), &p, sink, env);
      if (listed && hook) hook(&p);
    } else {
      for (const Problem& problem : scanned[i].problems.problems) {
        if (sink) sink->Report(problem);
      }
      listed = scanned[i].listed;
      p = std::move(scanned[i].dir);
      scanned[i] = ScannedPartition();
    }
    if (!listed) {
      out->partitions.pop_back();
      DirEntry e;
      e.name = d;
      e.path = Join(out->path, d);
      out->unreadable.push_back(UnreadableFile{e, e.path + ": cannot list the partition directory"});
    }
  }
  if (own_reader.joinable()) own_reader.join();
  for (const Problem& problem : own_sink.problems) {
    if (sink) sink->Report(problem);
  }
  // `own` holds what the log dir's files gave; this function's own fields (path, partitions, and the
  // unknown and unreadable entries found before the files, which come first) go into it.
  own.path = std::move(out->path);
  own.partitions = std::move(out->partitions);
  own.unknown.insert(own.unknown.begin(), out->unknown.begin(), out->unknown.end());
  own.unreadable.insert(own.unreadable.begin(), out->unreadable.begin(), out->unreadable.end());
  *out = std::move(own);
  return true;
}

namespace {

// What is read from a log directory's own files (the four checkpoints, meta.properties) serves every
// partition in it: a command that loads each of P partitions would read them P times (for the
// checkpoints, which list every partition, quadratic: 75% of a 2,000 partition diff). So a value read
// from such a file is kept, keyed by path and checked against the file's identity (device, inode, size,
// modification and change times) at every use: one stat(2), and a rewritten file is read again. Only
// regular files are kept; anything else is read each time. Reads through an Env other than the default
// are not cached: its faults are its own.
template <typename T>
class LogDirFileCache {
 public:
  // The value of `path`: kept, or `read()`'s.
  template <typename Read>
  std::shared_ptr<const T> Get(const std::string& path, Env* env, Read read) {
    if (env != nullptr && env != Env::Default()) return read();
    struct stat st;
    const bool regular = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    auto same = [&](const Entry& e) {
      return e.dev == st.st_dev && e.ino == st.st_ino && e.size == st.st_size && e.mtime.tv_sec == st.st_mtim.tv_sec &&
             e.mtime.tv_nsec == st.st_mtim.tv_nsec && e.ctime.tv_sec == st.st_ctim.tv_sec &&
             e.ctime.tv_nsec == st.st_ctim.tv_nsec;
    };
    if (regular) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = entries_.find(path);
      if (it != entries_.end() && same(it->second)) return it->second.value;
    }
    std::shared_ptr<const T> value = read();
    if (regular) {
      std::lock_guard<std::mutex> lock(mu_);
      if (entries_.size() >= kMaxFiles) entries_.clear();
      entries_[path] = Entry{st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim, value};
    }
    return value;
  }

 private:
  static constexpr size_t kMaxFiles = 256;  // 4 checkpoints per log directory: a capture of 64 log dirs
  struct Entry {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    struct timespec mtime {};
    struct timespec ctime {};  // a chmod changes whether the file can be read, and only ctime
    std::shared_ptr<const T> value;
  };
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

// A checkpoint file as ReadOffsetCheckpointFile read it. The problems it reported are kept with it and
// reported again to every caller's sink, so each partition still sees them.
struct ParsedCheckpointFile {
  bool read = false;  // ReadOffsetCheckpointFile's result
  std::map<TopicPartition, int64_t> entries;
  std::vector<Problem> problems;
  std::vector<UnreadableFile> unreadable;
};

std::shared_ptr<const ParsedCheckpointFile> ParseCheckpointCached(const std::string& path, Env* env) {
  static LogDirFileCache<ParsedCheckpointFile> cache;
  return cache.Get(path, env, [&] {
    auto parsed = std::make_shared<ParsedCheckpointFile>();
    CollectingSink recorder;
    parsed->read = ReadOffsetCheckpointFile(path, &parsed->entries, &recorder, &parsed->unreadable, env);
    parsed->problems = std::move(recorder.problems);
    return parsed;
  });
}

}  // namespace

std::optional<MetaProperties> ReadLogDirMetaProperties(const std::string& log_dir, Env* env, std::string* unreadable) {
  struct Read {
    std::optional<MetaProperties> properties;
    std::string unreadable;
  };
  static LogDirFileCache<Read> cache;  // read once per log dir, not once per partition (LoadedLog)
  const std::string path = Join(log_dir.empty() ? "." : StripTrailingSlashes(log_dir), "meta.properties");
  std::shared_ptr<const Read> read = cache.Get(path, env, [&] {
    auto r = std::make_shared<Read>();
    std::string text, error;
    InputFailure failure = InputFailure::kNone;
    MetaProperties m;
    NullSink quiet;
    if (!ReadSmallFile(path, kMaxMetadataFileBytes, &text, &error, &failure, env)) {
      if (failure == InputFailure::kUnreadable) r->unreadable = error;
    } else if (ParseMetaProperties(path, text, &m, &quiet)) {
      r->properties = m;
    }
    return r;
  });
  if (unreadable != nullptr) *unreadable = read->unreadable;
  return read->properties;
}

std::string PartitionDirBaseName(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

std::vector<std::string> FindTopicPartitionDirs(const std::vector<std::string>& paths, std::string_view topic) {
  auto is_topic = [&](const std::string& name) {
    std::optional<TopicPartition> tp = ParsePartitionDirName(name);
    return tp && tp->topic == topic;
  };
  std::set<std::string> found;
  for (const std::string& path : paths) {
    if (is_topic(PartitionDirBaseName(path))) {
      if (IsInputDir(path)) found.insert(path);
      continue;
    }
    std::vector<InputDirEntry> entries;
    std::string ignored;
    if (!ListInputDir(path, &entries, &ignored)) continue;
    for (const InputDirEntry& e : entries) {
      if (is_topic(e.name) && e.kind == InputKind::kDir) found.insert(Join(path, e.name));
    }
  }
  return {found.begin(), found.end()};
}

PartitionCheckpoints ReadParentCheckpoints(const std::string& partition_dir_path, const TopicPartition& tp,
                                           ProblemSink* sink, Env* env) {
  PartitionCheckpoints out;
  out.log_dir = ParentOf(partition_dir_path);
  auto pick = [&](const char* name, std::optional<int64_t>* value) {
    std::shared_ptr<const ParsedCheckpointFile> f = ParseCheckpointCached(Join(out.log_dir, name), env);
    for (const Problem& p : f->problems) sink->Report(p);
    out.unreadable.insert(out.unreadable.end(), f->unreadable.begin(), f->unreadable.end());
    if (!f->read) return;
    if (auto it = f->entries.find(tp); it != f->entries.end()) *value = it->second;
  };
  pick("cleaner-offset-checkpoint", &out.cleaner_checkpoint);
  pick("recovery-point-offset-checkpoint", &out.recovery_point);
  pick("replication-offset-checkpoint", &out.high_watermark);
  pick("log-start-offset-checkpoint", &out.log_start_offset);
  return out;
}

PathInfo ClassifyPath(const std::string& path_in) {
  PathInfo out;
  out.path = StripTrailingSlashes(path_in);
  InputStat st = StatInput(out.path);  // real paths and paths into captures (capture.h)
  if (st.kind == InputKind::kMissing) {
    out.kind = PathKind::kMissing;
    return out;
  }
  if (st.kind == InputKind::kDir) {
    out.kind = ClassifyDir(out.path, /*look_into_subdirs=*/true);
    if (out.kind == PathKind::kPartitionDir) {
      out.partition_dir = out.path;
      out.tp = ParsePartitionDirName(BaseName(out.path));
      out.log_dir = ParentOf(out.path);
    } else if (out.kind == PathKind::kLogDir) {
      out.log_dir = out.path;
    }
    return out;
  }
  out.kind = PathKind::kFile;
  out.file = ClassifyFileName(BaseName(out.path));
  std::string parent = ParentOf(out.path);
  if (IsLogDirLevel(out.file.kind)) {
    out.log_dir = parent;
  } else if (ClassifyDir(parent, /*look_into_subdirs=*/false) == PathKind::kPartitionDir) {
    out.partition_dir = parent;
    out.tp = ParsePartitionDirName(BaseName(parent));
    out.log_dir = ParentOf(parent);
  }
  return out;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one archive root's descent with its two stop rules
std::vector<std::string> ExpandCaptureRoots(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::string archive, member;
    if (!SplitCapturePath(path, &archive, &member) || !member.empty()) {
      out.push_back(path);
      continue;
    }
    // The archive's root; below one lone top-level directory that is no Kafka directory, that one.
    std::string dir = StripTrailingSlashes(path);
    std::vector<InputDirEntry> entries;
    std::string ignored;
    for (int depth = 0; depth < 2; ++depth) {
      PathKind kind = ClassifyPath(dir).kind;
      if (kind != PathKind::kOtherDir || !ListInputDir(dir, &entries, &ignored)) break;
      std::vector<std::string> subdirs;
      for (const InputDirEntry& e : entries) {
        if (e.kind == InputKind::kDir) subdirs.push_back(e.name);
      }
      if (subdirs.size() != 1) break;
      dir = Join(dir, subdirs[0]);
    }
    if (ClassifyPath(dir).kind != PathKind::kOtherDir || !ListInputDir(dir, &entries, &ignored)) {
      out.push_back(dir);
      continue;
    }
    std::vector<std::string> subdirs;
    for (const InputDirEntry& e : entries) {
      if (e.kind == InputKind::kDir) subdirs.push_back(Join(dir, e.name));
    }
    std::sort(subdirs.begin(), subdirs.end());
    if (subdirs.empty()) subdirs.push_back(dir);
    out.insert(out.end(), subdirs.begin(), subdirs.end());
  }
  return out;
}

}  // namespace klf
