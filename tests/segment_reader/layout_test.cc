// Directory model and path classification (spec kafka-on-disk-format.md §1, §12, §13).
#include "segment_reader/layout.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace klf {
namespace {
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "klf-layout-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& rel, const std::string& contents) const {
    fs::path p = fs::path(path_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << contents;
    return p.string();
  }
  std::string Mkdir(const std::string& rel) const {
    fs::create_directories(fs::path(path_) / rel);
    return (fs::path(path_) / rel).string();
  }

 private:
  std::string path_;
};

const Problem* Find(const CollectingSink& sink, const std::string& check, const std::string& file_suffix = "") {
  for (const auto& p : sink.problems) {
    if (p.check == check && (file_suffix.empty() || p.file.ends_with(file_suffix))) return &p;
  }
  return nullptr;
}

TEST(FileNameTest, Classify) {
  FileName f = ClassifyFileName("00000000000000004611.log");
  EXPECT_EQ(f.kind, FileKind::kLog);
  EXPECT_EQ(f.offset, 4611);
  EXPECT_EQ(f.suffix, FileSuffix::kNone);
  EXPECT_TRUE(f.canonical_name);

  f = ClassifyFileName("00000000000000000005.log.deleted");
  EXPECT_EQ(f.kind, FileKind::kLog);
  EXPECT_EQ(f.offset, 5);
  EXPECT_EQ(f.suffix, FileSuffix::kDeleted);

  EXPECT_EQ(ClassifyFileName("00000000000000000005.snapshot").kind, FileKind::kProducerSnapshot);
  EXPECT_EQ(ClassifyFileName("00000000000000000005.index.swap").suffix, FileSuffix::kSwap);
  EXPECT_EQ(ClassifyFileName("00000000000000000005.timeindex.cleaned").kind, FileKind::kTimeIndex);
  EXPECT_EQ(ClassifyFileName("00000000000000000005.txnindex").kind, FileKind::kTxnIndex);
  EXPECT_EQ(ClassifyFileName("leader-epoch-checkpoint.tmp").kind, FileKind::kLeaderEpochCheckpoint);
  EXPECT_EQ(ClassifyFileName("leader-epoch-checkpoint.tmp").suffix, FileSuffix::kTmp);
  EXPECT_EQ(ClassifyFileName("partition.metadata").kind, FileKind::kPartitionMetadata);
  EXPECT_EQ(ClassifyFileName("replication-offset-checkpoint").kind, FileKind::kReplicationOffsetCheckpoint);
  EXPECT_EQ(ClassifyFileName(".kafka_cleanshutdown").kind, FileKind::kCleanShutdown);
  EXPECT_EQ(ClassifyFileName("bootstrap.checkpoint").kind, FileKind::kBootstrapCheckpoint);

  f = ClassifyFileName("00000000000000007364-0000000001.checkpoint");
  EXPECT_EQ(f.kind, FileKind::kKraftSnapshot);
  EXPECT_EQ(f.offset, 7364);
  EXPECT_EQ(f.epoch, 1);
  EXPECT_EQ(ClassifyFileName("00000000000000007364-0000000001.checkpoint.part").kind, FileKind::kKraftSnapshotPart);
  f = ClassifyFileName("00000000000000007364-0000000001.checkpoint.deleted");
  EXPECT_EQ(f.kind, FileKind::kKraftSnapshot);
  EXPECT_EQ(f.suffix, FileSuffix::kDeleted);

  f = ClassifyFileName("5.log");
  EXPECT_EQ(f.kind, FileKind::kLog);
  EXPECT_FALSE(f.canonical_name);
  EXPECT_EQ(ClassifyFileName("abc.log").kind, FileKind::kUnknown);
  EXPECT_EQ(ClassifyFileName("99999999999999999999.log").kind, FileKind::kUnknown);  // > Long.MAX
  EXPECT_EQ(ClassifyFileName("00000000000000000000.log.bak").kind, FileKind::kUnknown);
  EXPECT_EQ(ClassifyFileName("README").kind, FileKind::kUnknown);
  EXPECT_EQ(OffsetFileNamePrefix(4611), "00000000000000004611");
  // Numbers in names are parsed, never trusted (no exception, no overflow).
  EXPECT_EQ(ClassifyFileName("9223372036854775807.log").offset, INT64_MAX);
  EXPECT_EQ(ClassifyFileName("9223372036854775808.log").kind, FileKind::kUnknown);
  EXPECT_EQ(ClassifyFileName("00000000000000007364-99999999999.checkpoint").kind, FileKind::kUnknown);
  EXPECT_EQ(ClassifyFileName("00000000000000007364-9999999999.checkpoint").kind, FileKind::kUnknown);  // > INT32_MAX
  EXPECT_EQ(ClassifyFileName("00000000000000007364-00000000-1.checkpoint").kind, FileKind::kUnknown);
  EXPECT_EQ(ClassifyFileName("-1.log").kind, FileKind::kUnknown);
  EXPECT_EQ(ClassifyFileName("\xff\xfe.log").kind, FileKind::kUnknown);
}

TEST(LayoutTest, PartitionDirScan) {
  TempDir t;
  t.Write("foo-0/00000000000000000000.log", std::string(100, 'x'));
  t.Write("foo-0/00000000000000000000.index", "");
  t.Write("foo-0/00000000000000000000.timeindex", "");
  t.Write("foo-0/00000000000000000007.log", std::string(50, 'x'));
  t.Write("foo-0/00000000000000000007.txnindex", std::string(34, '\0'));
  t.Write("foo-0/00000000000000000007.snapshot", "");
  t.Write("foo-0/00000000000000000009.snapshot", "");
  t.Write("foo-0/00000000000000000003.index", "");  // orphan
  t.Write("foo-0/00000000000000000005.log.cleaned", "");
  t.Write("foo-0/00000000000000000005.log.swap", "");
  t.Write("foo-0/00000000000000000002.log.deleted", "");
  t.Write("foo-0/leader-epoch-checkpoint", "0\n2\n0 0\n3 7\n");
  t.Write("foo-0/leader-epoch-checkpoint.tmp", "0\n");
  t.Write("foo-0/partition.metadata", "version: 0\ntopic_id: vrjw0NUpPfKAgWihSTIAzw");
  t.Write("foo-0/notes.txt", "hello");

  PartitionDir p;
  CollectingSink sink;
  ASSERT_TRUE(ScanPartitionDir(t.path() + "/foo-0/", &p, &sink));
  EXPECT_EQ(p.name, "foo-0");
  EXPECT_EQ(p.tp, (TopicPartition{"foo", 0}));
  EXPECT_EQ(p.state, PartitionDirState::kLive);
  ASSERT_EQ(p.segments.size(), 3u);
  auto logs = p.LogSegments();
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0]->base_offset, 0);
  EXPECT_EQ(logs[0]->log->size, 100u);
  EXPECT_TRUE(logs[0]->index.has_value());
  EXPECT_TRUE(logs[0]->time_index.has_value());
  EXPECT_FALSE(logs[0]->txn_index.has_value());
  EXPECT_EQ(logs[1]->base_offset, 7);
  EXPECT_EQ(logs[1]->txn_index->size, 34u);
  EXPECT_FALSE(logs[1]->index.has_value());
  EXPECT_EQ(p.producer_snapshots.size(), 2u);
  EXPECT_TRUE(p.producer_snapshots.count(9));
  EXPECT_EQ(p.leftovers.size(), 4u);
  EXPECT_EQ(p.unknown.size(), 1u);
  ASSERT_TRUE(p.leader_epochs.has_value());
  EXPECT_EQ(p.leader_epochs->size(), 2u);
  ASSERT_TRUE(p.partition_metadata.has_value());
  EXPECT_EQ(p.partition_metadata->topic_id, "vrjw0NUpPfKAgWihSTIAzw");

  EXPECT_NE(Find(sink, "orphan-index", "00000000000000000003.index"), nullptr);
  EXPECT_NE(Find(sink, "leftover-file", "00000000000000000005.log.swap"), nullptr);
  EXPECT_NE(Find(sink, "leftover-file", "leader-epoch-checkpoint.tmp"), nullptr);
  EXPECT_NE(Find(sink, "unknown-file", "notes.txt"), nullptr);
  EXPECT_EQ(sink.ErrorCount(), 0u);
}

TEST(LayoutTest, UnparseableAndNonCanonicalNames) {
  TempDir t;
  t.Write("foo-1/00000000000000000000.log", "");
  t.Write("foo-1/segment-a.log", "");
  t.Write("foo-1/12.index", "");
  PartitionDir p;
  CollectingSink sink;
  ASSERT_TRUE(ScanPartitionDir(t.path() + "/foo-1", &p, &sink));
  const Problem* bad = Find(sink, "file-name", "segment-a.log");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->severity, Severity::kWarning);
  EXPECT_NE(Find(sink, "file-name", "12.index"), nullptr);  // not 20 digits
  EXPECT_NE(Find(sink, "orphan-index", "12.index"), nullptr);
  EXPECT_EQ(p.unknown.size(), 1u);
  ASSERT_TRUE(p.segments.count(12));

  t.Mkdir("not_a_partition");
  PartitionDir r;
  CollectingSink sink3;
  ASSERT_TRUE(ScanPartitionDir(t.path() + "/not_a_partition", &r, &sink3));
  EXPECT_FALSE(r.tp.has_value());
  EXPECT_NE(Find(sink3, "partition-dir-name"), nullptr);
  EXPECT_NE(Find(sink3, "no-segments"), nullptr);
}

TEST(LayoutTest, PartitionDirWithBadTextFiles) {
  TempDir t;
  t.Write("bar-2/00000000000000000000.log", "");
  t.Write("bar-2/leader-epoch-checkpoint", "0\n5\n0 0\n");
  t.Write("bar-2/partition.metadata", "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA");
  PartitionDir p;
  CollectingSink sink;
  ASSERT_TRUE(ScanPartitionDir(t.path() + "/bar-2", &p, &sink));
  EXPECT_FALSE(p.leader_epochs.has_value());
  EXPECT_FALSE(p.partition_metadata.has_value());
  const Problem* count = Find(sink, "checkpoint-count", "leader-epoch-checkpoint");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->position, 2u);
  EXPECT_NE(Find(sink, "partition-metadata-topic-id", "partition.metadata"), nullptr);
}

TEST(LayoutTest, KraftMetadataDir) {
  TempDir t;
  t.Write("__cluster_metadata-0/00000000000000000000.log", "");
  t.Write("__cluster_metadata-0/00000000000000021265-0000000006.checkpoint", "x");
  t.Write("__cluster_metadata-0/00000000000000007364-0000000001.checkpoint", "x");
  t.Write("__cluster_metadata-0/00000000000000030000-0000000006.checkpoint.part", "x");
  t.Write("__cluster_metadata-0/quorum-state", "{}");
  PartitionDir p;
  CollectingSink sink;
  ASSERT_TRUE(ScanPartitionDir(t.path() + "/__cluster_metadata-0", &p, &sink));
  EXPECT_TRUE(p.is_cluster_metadata());
  ASSERT_EQ(p.kraft_snapshots.size(), 2u);
  EXPECT_EQ(p.kraft_snapshots[0].end_offset, 7364);
  EXPECT_EQ(p.kraft_snapshots[1].epoch, 6);
  EXPECT_TRUE(p.quorum_state.has_value());
  EXPECT_EQ(p.leftovers.size(), 1u);
}

TEST(LayoutTest, LogDirScanAndParentCheckpoints) {
  TempDir t;
  t.Write("meta.properties", "#\n#date\nversion=1\nnode.id=3\ncluster.id=abc\n");
  t.Write(".kafka_cleanshutdown", "{\"version\":0,\"brokerEpoch\":11}");
  t.Write("cleaner-offset-checkpoint", "0\n1\nfoo 0 16\n");
  t.Write("recovery-point-offset-checkpoint", "0\n2\nfoo 0 17\nbar 1 4\n");
  t.Write("replication-offset-checkpoint", "0\n2\nfoo 0 18\nfoo 0 19\n");  // later duplicate wins
  t.Write("log-start-offset-checkpoint", "0\n1\nfoo 0\n");                 // malformed
  t.Write("replication-offset-checkpoint.tmp", "0\n");
  t.Write(".lock", "");
  t.Write("foo-0/00000000000000000000.log", "");
  t.Write("bar-1.0123456789abcdef0123456789abcdef-delete/00000000000000000000.log", "");
  t.Mkdir("not-a-partition-dir-x");

  LogDir d;
  CollectingSink sink;
  ASSERT_TRUE(ScanLogDir(t.path(), &d, &sink));
  ASSERT_EQ(d.partitions.size(), 2u);
  EXPECT_EQ(d.partitions[0].tp, (TopicPartition{"bar", 1}));
  EXPECT_EQ(d.partitions[0].state, PartitionDirState::kDelete);
  EXPECT_EQ(d.partitions[1].tp, (TopicPartition{"foo", 0}));
  ASSERT_TRUE(d.meta_properties.has_value());
  EXPECT_EQ(d.meta_properties->node_id(), 3);
  EXPECT_TRUE(d.clean_shutdown_file.has_value());
  EXPECT_EQ(d.clean_shutdown_broker_epoch, 11);
  ASSERT_TRUE(d.cleaner_offsets.has_value());
  EXPECT_EQ(d.cleaner_offsets->at({"foo", 0}), 16);
  EXPECT_EQ(d.recovery_points->at({"bar", 1}), 4);
  EXPECT_EQ(d.high_watermarks->at({"foo", 0}), 19);
  EXPECT_FALSE(d.log_start_offsets.has_value());
  EXPECT_EQ(d.leftovers.size(), 1u);
  EXPECT_EQ(d.unknown.size(), 1u);
  const Problem* bad = Find(sink, "checkpoint-line", "log-start-offset-checkpoint");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->position, 4u);

  CollectingSink sink2;
  PartitionCheckpoints c = ReadParentCheckpoints(t.path() + "/foo-0", {"foo", 0}, &sink2);
  EXPECT_EQ(c.log_dir, t.path());
  EXPECT_EQ(c.cleaner_checkpoint, 16);
  EXPECT_EQ(c.recovery_point, 17);
  EXPECT_EQ(c.high_watermark, 19);
  EXPECT_FALSE(c.log_start_offset.has_value());
  EXPECT_NE(Find(sink2, "checkpoint-line"), nullptr);

  PartitionCheckpoints none = ReadParentCheckpoints(t.path() + "/foo-0", {"zzz", 0}, &sink2);
  EXPECT_FALSE(none.cleaner_checkpoint.has_value());
}

TEST(LayoutTest, ClassifyPath) {
  TempDir t;
  t.Write("logs/recovery-point-offset-checkpoint", "0\n0\n");
  t.Write("logs/foo-0/00000000000000000000.log", "");
  t.Mkdir("logs/empty-3");
  t.Mkdir("logs/random");
  t.Mkdir("onlypartitions/baz-1");

  PathInfo p = ClassifyPath(t.path() + "/logs");
  EXPECT_EQ(p.kind, PathKind::kLogDir);
  EXPECT_EQ(p.log_dir, t.path() + "/logs");

  p = ClassifyPath(t.path() + "/logs/foo-0/");
  EXPECT_EQ(p.kind, PathKind::kPartitionDir);
  EXPECT_EQ(p.tp, (TopicPartition{"foo", 0}));
  EXPECT_EQ(p.log_dir, t.path() + "/logs");

  p = ClassifyPath(t.path() + "/logs/empty-3");
  EXPECT_EQ(p.kind, PathKind::kPartitionDir);

  EXPECT_EQ(ClassifyPath(t.path() + "/logs/random").kind, PathKind::kOtherDir);
  EXPECT_EQ(ClassifyPath(t.path() + "/onlypartitions").kind, PathKind::kLogDir);
  EXPECT_EQ(ClassifyPath(t.path() + "/nope").kind, PathKind::kMissing);

  p = ClassifyPath(t.path() + "/logs/foo-0/00000000000000000000.log");
  EXPECT_EQ(p.kind, PathKind::kFile);
  EXPECT_EQ(p.file.kind, FileKind::kLog);
  EXPECT_EQ(p.partition_dir, t.path() + "/logs/foo-0");
  EXPECT_EQ(p.tp, (TopicPartition{"foo", 0}));
  EXPECT_EQ(p.log_dir, t.path() + "/logs");

  p = ClassifyPath(t.path() + "/logs/recovery-point-offset-checkpoint");
  EXPECT_EQ(p.kind, PathKind::kFile);
  EXPECT_EQ(p.file.kind, FileKind::kRecoveryPointCheckpoint);
  EXPECT_EQ(p.log_dir, t.path() + "/logs");
  EXPECT_TRUE(p.partition_dir.empty());
}

// A file klf reads that exists but cannot be read is reported with its name and listed in
// `unreadable`, never taken as absent: a FIFO, a directory and a symlink loop named like segments, a
// FIFO checkpoint in the log directory, a symlink loop named like a partition directory.
TEST(LayoutTest, UnreadableFilesAreListedNotAbsent) {
  TempDir t;
  t.Write("logs/foo-0/00000000000000000000.log", "");
  t.Write("logs/foo-0/00000000000000000000.index", "");
  t.Write("logs/foo-0/00000000000000000010.index", "");
  t.Write("logs/foo-0/00000000000000000010.timeindex", "");
  ASSERT_EQ(mkfifo((t.path() + "/logs/foo-0/00000000000000000010.log").c_str(), 0644), 0);
  t.Mkdir("logs/foo-0/00000000000000000020.log");
  fs::create_symlink("00000000000000000030.log", t.path() + "/logs/foo-0/00000000000000000030.log");
  fs::create_symlink("nowhere", t.path() + "/logs/foo-0/leader-epoch-checkpoint");
  ASSERT_EQ(mkfifo((t.path() + "/logs/foo-0/fifo-not-kafka").c_str(), 0644), 0);
  ASSERT_EQ(mkfifo((t.path() + "/logs/replication-offset-checkpoint").c_str(), 0644), 0);
  fs::create_symlink("bar-0", t.path() + "/logs/bar-0");

  PartitionDir p;
  CollectingSink sink;
  ASSERT_TRUE(ScanPartitionDir(t.path() + "/logs/foo-0", &p, &sink));
  std::vector<std::string> names;
  for (const UnreadableFile& u : p.unreadable) {
    names.push_back(u.file.name);
    EXPECT_EQ(u.error.rfind(u.file.path + ": ", 0), 0u) << u.error;
    const Problem* e = Find(sink, "file-read", "/" + u.file.name);
    ASSERT_NE(e, nullptr) << u.file.name;
    EXPECT_EQ(e->severity, Severity::kError);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"00000000000000000010.log", "00000000000000000020.log",
                                             "00000000000000000030.log", "leader-epoch-checkpoint"}));
  EXPECT_NE(Find(sink, "file-read", "10.log")->message.find("a FIFO, not a regular file"), std::string::npos);
  EXPECT_NE(Find(sink, "file-read", "20.log")->message.find("a directory, not a regular file"), std::string::npos);
  EXPECT_NE(Find(sink, "file-read", "30.log")->message.find("symbolic link loop"), std::string::npos);
  // The unreadable segments are in no other field, and their index files are not orphans.
  EXPECT_EQ(p.LogSegments().size(), 1u);
  EXPECT_FALSE(p.segments[10].log);
  EXPECT_FALSE(p.leader_epoch_checkpoint_file);
  EXPECT_EQ(Find(sink, "orphan-index"), nullptr);
  EXPECT_EQ(Find(sink, "unknown-file", "/00000000000000000020.log"), nullptr);
  EXPECT_EQ(Find(sink, "file-read", "fifo-not-kafka"), nullptr);  // not a file klf reads

  // Path classification reads names only: the directory stays a partition directory.
  EXPECT_EQ(ClassifyPath(t.path() + "/logs/foo-0").kind, PathKind::kPartitionDir);

  LogDir d;
  CollectingSink dsink;
  ASSERT_TRUE(ScanLogDir(t.path() + "/logs", &d, &dsink));
  std::vector<std::string> log_dir_names;
  for (const UnreadableFile& u : d.unreadable) log_dir_names.push_back(u.file.name);
  EXPECT_EQ(log_dir_names, (std::vector<std::string>{"replication-offset-checkpoint", "bar-0"}));
  EXPECT_FALSE(d.high_watermarks);
  ASSERT_NE(Find(dsink, "file-read", "/bar-0"), nullptr);
  ASSERT_EQ(d.partitions.size(), 1u);
  EXPECT_EQ(d.partitions[0].unreadable.size(), 4u);

  PartitionCheckpoints cp = ReadParentCheckpoints(t.path() + "/logs/foo-0", TopicPartition{"foo", 0}, &sink);
  ASSERT_EQ(cp.unreadable.size(), 1u);
  EXPECT_EQ(cp.unreadable[0].file.name, "replication-offset-checkpoint");
  EXPECT_FALSE(cp.high_watermark);
}

TEST(LayoutTest, LivePartitionDirsAreListedByNameAsTheScanNamesThem) {
  TempDir t;
  t.Write("meta.properties", "version=1\nnode.id=7\ncluster.id=abc\n");
  t.Write("foo-0/00000000000000000000.log", "");
  t.Mkdir("foo-1");
  t.Write("bar-1.0123456789abcdef0123456789abcdef-delete/00000000000000000000.log", "");
  t.Mkdir("baz-0.0123456789abcdef0123456789abcdef-future");
  t.Mkdir("qux-2.0123456789abcdef0123456789abcdef-stray");
  t.Mkdir("not-a-partition-dir-x");
  t.Write("zed-3", "a file named like a partition directory");
  for (const std::string& given : {t.path(), t.path() + "//"}) {
    std::vector<LivePartitionDir> live;
    std::string error;
    ASSERT_TRUE(ListLivePartitionDirs(given, &live, &error)) << error;
    LogDir scanned;
    NullSink quiet;
    ASSERT_TRUE(ScanLogDir(given, &scanned, &quiet));
    std::vector<std::string> want;
    for (const PartitionDir& pd : scanned.partitions)
      if (pd.state == PartitionDirState::kLive) want.push_back(pd.name + " " + pd.path);
    std::vector<std::string> got;
    for (const LivePartitionDir& pd : live) got.push_back(pd.name + " " + pd.path);
    EXPECT_EQ(got, want);
    EXPECT_EQ(got, (std::vector<std::string>{"foo-0 " + t.path() + "/foo-0", "foo-1 " + t.path() + "/foo-1"}));
    std::optional<MetaProperties> meta = ReadLogDirMetaProperties(given);
    ASSERT_TRUE(meta.has_value());
    EXPECT_EQ(meta->node_id(), 7);
  }
  std::vector<LivePartitionDir> none;
  std::string error;
  EXPECT_FALSE(ListLivePartitionDirs(t.path() + "/missing", &none, &error));
  EXPECT_FALSE(ReadLogDirMetaProperties(t.path() + "/foo-0").has_value());
}

std::string Describe(const CollectingSink& sink) {
  std::string s;
  for (const Problem& p : sink.problems) {
    s += fmt::format("{} {} {} {} {}\n", int(p.severity), p.file, p.position, p.check, p.message);
  }
  return s;
}

std::string Describe(const LogDir& d) {
  std::string s;
  for (const PartitionDir& p : d.partitions) {
    s += p.name + ":";
    for (const auto& [base, seg] : p.segments) s += fmt::format(" {}{}", base, seg.log ? "L" : "");
    for (const UnreadableFile& u : p.unreadable) s += " unreadable " + u.file.name + " (" + u.error + ")";
    for (const DirEntry& e : p.unknown) s += " unknown " + e.name;
    for (const DirEntry& e : p.leftovers) s += " leftover " + e.name;
    if (p.leader_epochs) s += fmt::format(" epochs {}", p.leader_epochs->size());
    s += "\n";
  }
  for (const UnreadableFile& u : d.unreadable) s += "unreadable " + u.file.name + "\n";
  for (const DirEntry& e : d.unknown) s += "unknown " + e.name + "\n";
  for (const DirEntry& e : d.files) s += "file " + e.name + "\n";
  for (const DirEntry& e : d.leftovers) s += "leftover " + e.name + "\n";
  if (d.meta_properties) s += fmt::format("node {}\n", d.meta_properties->node_id().value_or(-1));
  for (const auto* m : {&d.cleaner_offsets, &d.recovery_points, &d.high_watermarks, &d.log_start_offsets})
    s += m->has_value() ? fmt::format("checkpoint of {}\n", (*m)->size()) : "no checkpoint\n";
  return s;
}

// Partition directories scanned on several threads give the same log dir, and the same problems in
// the same order, as one thread; so do the log dir's own files, read beside the partitions then.
TEST(LayoutTest, ParallelScanIsTheSerialScan) {
  TempDir t;
  t.Write("logs/recovery-point-offset-checkpoint", "0\n1\nfoo 0 1\n");
  t.Write("logs/cleaner-offset-checkpoint", "0\n2\nfoo 0 1\n");  // one entry short: a problem
  t.Write("logs/log-start-offset-checkpoint.tmp", "");           // a leftover
  t.Write("logs/meta.properties", "version=1\ncluster.id=c\nnode.id=3\n");
  ASSERT_EQ(mkfifo((t.path() + "/logs/replication-offset-checkpoint").c_str(), 0644), 0);  // cannot be read
  for (int i = 0; i < 12; ++i) {
    std::string dir = fmt::format("logs/foo-{}/", i);
    t.Write(dir + "00000000000000000000.log", "");
    if (i % 3 == 0) t.Write(dir + "00000000000000000007.index", "");          // orphan index
    if (i % 4 == 1) t.Write(dir + "5.log", "");                               // non-canonical name
    if (i % 5 == 2) t.Write(dir + "notes.txt", "x");                          // unknown file
    if (i % 2 == 0) t.Write(dir + "leader-epoch-checkpoint", "0\n1\n0 0\n");  // parsed text file
    if (i == 7) {
      ASSERT_EQ(mkfifo((t.path() + "/" + dir + "00000000000000000009.log").c_str(), 0644), 0);
    }
  }
  t.Write("logs/foo-3/00000000000000000000.log.deleted", "");
  t.Mkdir("logs/foo-10/subdir");
  t.Mkdir("logs/not-a-partition-dir-x");
  t.Write("logs/stray-file", "");

  LogDir serial;
  CollectingSink serial_sink;
  ASSERT_TRUE(ScanLogDir(t.path() + "/logs", &serial, &serial_sink, 1));
  ASSERT_EQ(serial.partitions.size(), 12u);
  ASSERT_NE(Find(serial_sink, "orphan-index"), nullptr);
  ASSERT_NE(Find(serial_sink, "file-read", "9.log"), nullptr);
  ASSERT_NE(Find(serial_sink, "file-read", "replication-offset-checkpoint"), nullptr);
  ASSERT_NE(Find(serial_sink, "leftover-file"), nullptr);
  ASSERT_TRUE(serial.meta_properties.has_value());
  ASSERT_TRUE(serial.recovery_points.has_value());
  for (size_t jobs : {2, 3, 16}) {
    LogDir parallel;
    CollectingSink parallel_sink;
    ASSERT_TRUE(ScanLogDir(t.path() + "/logs", &parallel, &parallel_sink, jobs));
    EXPECT_EQ(Describe(parallel_sink), Describe(serial_sink)) << jobs;
    EXPECT_EQ(Describe(parallel), Describe(serial)) << jobs;
  }
}

// A checkpoint file over the size cap is damage ("file-size"), not read and not "unreadable".
TEST(LayoutTest, OversizedCheckpointIsReportedNotRead) {
  TempDir t;
  t.Write("logs/foo-0/00000000000000000000.log", "");
  std::string path = t.Write("logs/replication-offset-checkpoint", "");
  fs::resize_file(path, kMaxMetadataFileBytes + 1);  // sparse: nothing is written or read
  CollectingSink sink;
  PartitionCheckpoints cp = ReadParentCheckpoints(t.path() + "/logs/foo-0", TopicPartition{"foo", 0}, &sink);
  EXPECT_TRUE(cp.unreadable.empty());
  EXPECT_FALSE(cp.high_watermark);
  const Problem* e = Find(sink, "file-size", "replication-offset-checkpoint");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->message.find("limit"), std::string::npos) << e->message;
}

TEST(LayoutTest, UnlistableDirectory) {
  PartitionDir p;
  CollectingSink sink;
  EXPECT_FALSE(ScanPartitionDir("/nonexistent/klf/foo-0", &p, &sink));
  const Problem* e = Find(sink, "dir-read");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->severity, Severity::kError);
}

}  // namespace
}  // namespace klf
