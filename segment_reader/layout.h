// The shape of Kafka's data on disk (spec kafka-on-disk-format.md §1, §12, §13): what each file name
// means, what a partition directory and a broker log directory hold, and what a user-given PATH is.
//
// Scanning reads directory listings (names and sizes) and the small text files that belong to the
// directory being scanned (log dir: the four offset checkpoints, meta.properties,
// .kafka_cleanshutdown; partition dir: leader-epoch-checkpoint, partition.metadata). It never reads
// segment, index or snapshot contents, but opens each file klf would read (OpenInputFile, file.h) to
// make sure it can: an entry named like one of them that is a FIFO, a directory, a symlink loop or a
// file without read permission is listed in `unreadable`, never taken as absent. Problems (unparseable
// names, orphan index files, leftovers of interrupted operations, text files that do not parse, files
// that cannot be read) are reported to the sink once, during the scan.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/problem.h"

namespace klf {

// ---------------------------------------------------------------------------------------------
// File names

enum class FileKind {
  kLog,                          // NNNNNNNNNNNNNNNNNNNN.log
  kOffsetIndex,                  // .index
  kTimeIndex,                    // .timeindex
  kTxnIndex,                     // .txnindex
  kProducerSnapshot,             // .snapshot
  kLeaderEpochCheckpoint,        // leader-epoch-checkpoint
  kPartitionMetadata,            // partition.metadata
  kKraftSnapshot,                // <20-digit end offset>-<10-digit epoch>.checkpoint (§13)
  kKraftSnapshotPart,            // ...checkpoint.part (snapshot being written)
  kQuorumState,                  // quorum-state (__cluster_metadata-0)
  kBootstrapCheckpoint,          // bootstrap.checkpoint (log dir of a KRaft controller)
  kMetaProperties,               // meta.properties
  kCleanShutdown,                // .kafka_cleanshutdown
  kLock,                         // .lock
  kCleanerOffsetCheckpoint,      // cleaner-offset-checkpoint
  kRecoveryPointCheckpoint,      // recovery-point-offset-checkpoint
  kReplicationOffsetCheckpoint,  // replication-offset-checkpoint (high watermarks)
  kLogStartOffsetCheckpoint,     // log-start-offset-checkpoint
  kUnknown,
};
const char* FileKindName(FileKind k);  // "log", "offset-index", "time-index", ... "unknown"

// Suffix appended after the normal name by an operation that did not finish (§11, §12).
enum class FileSuffix { kNone, kCleaned, kSwap, kDeleted, kTmp };

struct FileName {
  FileKind kind = FileKind::kUnknown;
  FileSuffix suffix = FileSuffix::kNone;
  // Segment files and snapshots: the offset of the name (base offset / snapshot offset), parsed as
  // Kafka's LogFileUtils.offsetFromFileName does (decimal before the first '.'). KRaft snapshots:
  // the end offset.
  std::optional<int64_t> offset;
  int32_t epoch = -1;          // KRaft snapshots only
  bool canonical_name = true;  // false: offset not written as exactly 20 digits (Kafka never does that)
};

// Classifies a bare file name (no directory part). Never fails: unknown names are kUnknown.
FileName ClassifyFileName(std::string_view name);

// The 20-digit zero-padded name prefix Kafka uses for `offset` (LogFileUtils.filenamePrefixFromOffset).
std::string OffsetFileNamePrefix(int64_t offset);

// ---------------------------------------------------------------------------------------------
// Directory model

struct DirEntry {
  std::string name;  // bare file name
  std::string path;  // directory path + "/" + name
  uint64_t size = 0;
  FileName info;
};

// A directory entry klf would read that exists but cannot be read (reported as a "file-read" error
// by the scan). A caller that takes a directory as a whole -- a replica to diff, repair or compact --
// must refuse it while any is left: the data in it is unknown, not absent.
struct UnreadableFile {
  DirEntry file;      // name, path and classification (size 0)
  std::string error;  // "<path>: <why>" (file.h OpenInputFile)
};

// The files of one segment. `log` may be absent when only index files exist (orphans, which Kafka
// deletes at load); index files may be absent (the preallocated index of an active segment, a
// segment without aborted transactions has no .txnindex, Kafka rebuilds a missing .index).
struct SegmentFiles {
  int64_t base_offset = 0;
  std::optional<DirEntry> log, index, time_index, txn_index;
};

struct KraftSnapshotFile {
  int64_t end_offset = 0;
  int32_t epoch = 0;
  DirEntry file;
};

enum class PartitionDirState { kLive, kFuture, kDelete, kStray };  // the §1.1 name suffixes

// The state a partition directory's name gives it (its §1.1 suffix).
PartitionDirState StateOfDirName(std::string_view name);

struct PartitionDir {
  std::string path;
  std::string name;                  // directory name
  std::optional<TopicPartition> tp;  // nullopt when the name is not <topic>-<partition>
  PartitionDirState state = PartitionDirState::kLive;

  std::map<int64_t, SegmentFiles> segments;        // by base offset; only names without suffix
  std::map<int64_t, DirEntry> producer_snapshots;  // by snapshot offset
  std::optional<DirEntry> leader_epoch_checkpoint_file;
  std::optional<DirEntry> partition_metadata_file;
  // Parsed when the files exist and parse (problems were reported during the scan).
  std::optional<std::vector<LeaderEpochEntry>> leader_epochs;
  std::optional<PartitionMetadata> partition_metadata;

  // KRaft metadata log (__cluster_metadata-0), §13.
  std::vector<KraftSnapshotFile> kraft_snapshots;  // ascending (end offset, epoch)
  std::optional<DirEntry> quorum_state;

  std::vector<DirEntry> leftovers;  // *.cleaned, *.swap, *.deleted, *.tmp, *.checkpoint.part (§12)
  std::vector<DirEntry> unknown;    // anything else
  // Segments, indexes, snapshots and text files that cannot be read. They are in none of the fields
  // above (an unreadable .log is not in `segments`): see UnreadableFile.
  std::vector<UnreadableFile> unreadable;

  bool is_cluster_metadata() const { return tp && tp->topic == "__cluster_metadata"; }
  // Segments that have a .log file, ascending by base offset.
  std::vector<const SegmentFiles*> LogSegments() const;
};

struct LogDir {
  std::string path;
  std::vector<PartitionDir> partitions;  // ascending by directory name

  std::optional<MetaProperties> meta_properties;
  std::optional<DirEntry> clean_shutdown_file;  // presence = last shutdown was clean
  std::optional<int64_t> clean_shutdown_broker_epoch;
  std::optional<DirEntry> bootstrap_checkpoint;

  // The §11.2 checkpoint files, parsed. nullopt = file absent (or unreadable: reported).
  std::optional<std::map<TopicPartition, int64_t>> cleaner_offsets;  // firstDirtyOffset
  std::optional<std::map<TopicPartition, int64_t>> recovery_points;
  std::optional<std::map<TopicPartition, int64_t>> high_watermarks;  // replication-offset-checkpoint
  std::optional<std::map<TopicPartition, int64_t>> log_start_offsets;

  std::vector<DirEntry> files;      // every plain file of the directory (classified)
  std::vector<DirEntry> leftovers;  // *.tmp and other suffixed leftovers
  std::vector<DirEntry> unknown;    // unknown files and directories that are not partitions
  // Log-dir files (checkpoints, meta.properties, ...) that cannot be read, and partition directories
  // that cannot be listed (their own unreadable files are in each PartitionDir).
  std::vector<UnreadableFile> unreadable;
};

// Scans a partition directory. Returns false (and reports, check "dir-read") only when the
// directory cannot be listed. Files are probed and read through `env` (null: Env::Default()); the
// listing itself is capture.h's ListInputDir.
bool ScanPartitionDir(const std::string& path, PartitionDir* out, ProblemSink* sink, Env* env = nullptr);
// Called by ScanLogDir on the thread that scanned a partition directory, right after it was listed
// (never for one that could not be), with the log directory's own files already read (`files`: its
// path, checkpoints and meta.properties; not yet its partitions). Partitions come in no particular
// order, at once from several threads when jobs > 1. The hook may take what it needs from *dir
// (the result keeps whatever it leaves). For a command that works through every partition anyway:
// the partition's files are still in the caches (verify: 6-8% of its time on small partitions).
using ScannedPartitionHook = std::function<void(const LogDir& files, PartitionDir* dir)>;

// Scans a broker log directory and every partition directory in it; the partition directories on
// `jobs` threads (at most 16), with the same result and problems in the same order as one thread.
bool ScanLogDir(const std::string& path, LogDir* out, ProblemSink* sink, size_t jobs = 1, Env* env = nullptr,
                const ScannedPartitionHook& on_scanned = nullptr);

// A live partition directory of a log directory (no -delete/-future/-stray suffix), named as ScanLogDir
// names it: the log dir without trailing slashes, '/', the directory's name.
struct LivePartitionDir {
  std::string name;
  std::string path;
};
// The live partition directories of log directory `path`, by name, listed but not scanned: one
// getdents pass and no stat of a regular file (for a command that loads the partitions it reads, which
// scans them then). False with *error when `path` cannot be listed.
bool ListLivePartitionDirs(const std::string& path, std::vector<LivePartitionDir>* out, std::string* error);
// The log directory's meta.properties as ScanLogDir reads it (a regular file of at most
// kMaxMetadataFileBytes that parses, real or in a capture; "" is the current directory), without
// reporting what is wrong with it (verify does); nullopt otherwise. When the file exists but cannot be
// read (file.h's InputFailure::kUnreadable: a FIFO, no permission, an I/O error), *unreadable (when not
// null) receives the error naming it: the broker's identity is unknown then, not absent. The one reader
// of a log dir's broker id (LoadedLog, triage, the CLI).
std::optional<MetaProperties> ReadLogDirMetaProperties(const std::string& log_dir, Env* env = nullptr,
                                                       std::string* unreadable = nullptr);

// The log-dir checkpoint values for one partition (spec §11.2), from the log directory that holds it.
struct PartitionCheckpoints {
  std::string log_dir;                        // parent directory looked in
  std::optional<int64_t> cleaner_checkpoint;  // cleaner-offset-checkpoint (firstDirtyOffset)
  std::optional<int64_t> recovery_point;      // recovery-point-offset-checkpoint
  std::optional<int64_t> high_watermark;      // replication-offset-checkpoint
  std::optional<int64_t> log_start_offset;    // log-start-offset-checkpoint
  std::vector<UnreadableFile> unreadable;     // checkpoint files that exist but cannot be read
};
// Reads the parent directory's checkpoint files and picks `tp`'s values. Files that are absent leave
// the values unset; files that do not parse are reported; files that cannot be read are reported and
// listed in `unreadable`.
// The partition directories of `topic` among `paths` (an internal topic's: `__transaction_state`,
// `__cluster_metadata`, `__consumer_offsets`): each PATH that is one, and those each PATH holds when it
// is a log directory. Sorted, each once; nothing is opened.
std::vector<std::string> FindTopicPartitionDirs(const std::vector<std::string>& paths, std::string_view topic);

// A partition directory's name without its path, trailing slashes and "." parts ("dir/foo-0/" -> "foo-0").
std::string PartitionDirBaseName(const std::string& dir);

PartitionCheckpoints ReadParentCheckpoints(const std::string& partition_dir_path, const TopicPartition& tp,
                                           ProblemSink* sink, Env* env = nullptr);

// Reads one offset checkpoint file into a map (later duplicates win, as in Kafka's map). Returns
// false when the file is absent (no report), cannot be read (reported, and added to *unreadable when
// given), is over kMaxMetadataFileBytes or does not parse (reported).
bool ReadOffsetCheckpointFile(const std::string& path, std::map<TopicPartition, int64_t>* out, ProblemSink* sink,
                              std::vector<UnreadableFile>* unreadable = nullptr, Env* env = nullptr);

// ---------------------------------------------------------------------------------------------
// What a user-given PATH is (cli.md: "a file, a partition directory or a broker log directory").

enum class PathKind { kFile, kPartitionDir, kLogDir, kOtherDir, kMissing };
const char* PathKindName(PathKind k);

struct PathInfo {
  PathKind kind = PathKind::kMissing;
  std::string path;
  FileName file;                     // kFile: the classified file name
  std::string partition_dir;         // kFile: its directory if that is a partition dir;
                                     // kPartitionDir: the path itself
  std::optional<TopicPartition> tp;  // kFile/kPartitionDir when the dir name parses
  std::string log_dir;               // kPartitionDir, kFile in a partition dir: the parent;
                                     // kLogDir: the path itself
};

// A directory is a log directory when it holds log-dir files (meta.properties, offset checkpoints,
// .kafka_cleanshutdown, .lock, bootstrap.checkpoint) -- even when its own name looks like
// <topic>-<n>, e.g. "kafka-logs-1"; otherwise a partition directory when it holds partition-level
// files (segments, indexes, snapshots, leader-epoch-checkpoint, partition.metadata, KRaft files);
// otherwise a log directory when a subdirectory is a partition directory; otherwise, with no
// subdirectories and a name that parses as <topic>-<partition>, an (empty) partition directory.
// Never reads file contents.
PathInfo ClassifyPath(const std::string& path);

// PATH arguments with each capture (segment_reader/capture.h) given by its archive path alone
// replaced by the broker log directories it holds: `klf triage cap.tar.zst` is `klf triage
// cap.tar.zst/broker1 cap.tar.zst/broker2 ...` when the archive's root holds the log directories (or
// one top-level directory that holds them). An archive whose root (or lone top-level directory) is
// itself a log or partition directory stands for that directory; every other PATH is kept as given.
std::vector<std::string> ExpandCaptureRoots(const std::vector<std::string>& paths);

}  // namespace klf
