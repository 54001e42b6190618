// Files from real brokers' data directories (fixtures/real, see its PROVENANCE.md): every non-.log
// file parses without error-severity problems, and every directory scans into a sane layout.
// Files of 4 MiB or more were not copied (mostly preallocated indexes of active segments), so a
// missing index, or an index whose .log is missing, is not an error here.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/index_files.h"
#include "segment_reader/layout.h"
#include "segment_reader/producer_snapshot.h"

namespace klf {
namespace {
namespace fs = std::filesystem;

const fs::path kReal = fs::path(KLF_FIXTURES_DIR) / "real";

std::string Describe(const CollectingSink& sink) {
  std::string out;
  for (const auto& p : sink.problems) {
    if (p.severity != Severity::kError) continue;
    out += p.file + " @" + std::to_string(p.position) + " " + p.check + ": " + p.message + "\n";
  }
  return out;
}

TEST(RealFilesTest, EveryNonLogFileParses) {
  std::map<FileKind, size_t> counts;
  size_t snapshot_entries = 0, index_entries = 0, epochs = 0;
  for (const auto& e : fs::recursive_directory_iterator(kReal)) {
    if (!e.is_regular_file()) continue;
    const std::string path = e.path().string();
    FileName name = ClassifyFileName(e.path().filename().string());
    if (name.suffix != FileSuffix::kNone) continue;
    CollectingSink sink;
    std::string contents, error;
    switch (name.kind) {
      case FileKind::kOffsetIndex:
      case FileKind::kTimeIndex:
      case FileKind::kTxnIndex:
      case FileKind::kProducerSnapshot:
      case FileKind::kLeaderEpochCheckpoint:
      case FileKind::kPartitionMetadata:
      case FileKind::kMetaProperties:
      case FileKind::kCleanShutdown:
      case FileKind::kCleanerOffsetCheckpoint:
      case FileKind::kRecoveryPointCheckpoint:
      case FileKind::kReplicationOffsetCheckpoint:
      case FileKind::kLogStartOffsetCheckpoint: break;
      default: continue;
    }
    ASSERT_TRUE(ReadSmallFile(path, 64 << 20, &contents, &error)) << error;
    Bytes bytes = AsBytes(contents);
    switch (name.kind) {
      case FileKind::kOffsetIndex: {
        OffsetIndex idx = ParseOffsetIndex(path, bytes, *name.offset, &sink);
        index_entries += idx.entries.size();
        // Kafka's OffsetIndex.sanityCheck: last offset >= base offset; the file has whole entries.
        if (!idx.entries.empty()) {
          EXPECT_GE(idx.entries.back().offset, *name.offset) << path;
        }
        break;
      }
      case FileKind::kTimeIndex: {
        TimeIndex idx = ParseTimeIndex(path, bytes, *name.offset, &sink);
        index_entries += idx.entries.size();
        if (!idx.entries.empty()) {
          EXPECT_GE(idx.entries.back().timestamp, idx.entries.front().timestamp) << path;
        }
        break;
      }
      case FileKind::kTxnIndex: {
        TxnIndex idx = ParseTxnIndex(path, bytes, &sink);
        for (const auto& t : idx.entries) EXPECT_GE(t.last_offset, *name.offset) << path;
        break;
      }
      case FileKind::kProducerSnapshot: {
        ProducerSnapshot s;
        EXPECT_TRUE(ParseProducerSnapshot(path, bytes, *name.offset, &s, &sink)) << path;
        EXPECT_TRUE(s.crc_valid) << path;
        snapshot_entries += s.entries.size();
        // Byte-exact re-encoding of what a real broker wrote.
        EXPECT_EQ(EncodeProducerSnapshot(s.entries), contents) << path;
        break;
      }
      case FileKind::kLeaderEpochCheckpoint: {
        std::vector<LeaderEpochEntry> entries;
        EXPECT_TRUE(ParseLeaderEpochCheckpoint(path, contents, &entries, &sink)) << path;
        epochs += entries.size();
        if (!contents.empty()) {
          EXPECT_EQ(EncodeLeaderEpochCheckpoint(entries), contents) << path;
        }
        break;
      }
      case FileKind::kPartitionMetadata: {
        PartitionMetadata m;
        EXPECT_TRUE(ParsePartitionMetadata(path, contents, &m, &sink)) << path;
        EXPECT_EQ(EncodePartitionMetadata(m), contents) << path;
        break;
      }
      case FileKind::kMetaProperties: {
        MetaProperties m;
        EXPECT_TRUE(ParseMetaProperties(path, contents, &m, &sink)) << path;
        EXPECT_TRUE(m.node_id().has_value()) << path;
        break;
      }
      case FileKind::kCleanShutdown: {
        CleanShutdown c;
        EXPECT_TRUE(ParseCleanShutdown(path, contents, &c, &sink)) << path;
        if (c.broker_epoch) {
          EXPECT_EQ(EncodeCleanShutdown(*c.broker_epoch), contents) << path;
        }
        break;
      }
      default: {
        std::vector<OffsetCheckpointEntry> entries;
        EXPECT_TRUE(ParseOffsetCheckpoint(path, contents, &entries, &sink)) << path;
        // Kafka writes "0\n<n>\n<lines>"; an empty file is what an old broker left before its first
        // write.
        if (!contents.empty()) {
          EXPECT_EQ(EncodeOffsetCheckpoint(entries), contents) << path;
        }
        break;
      }
    }
    EXPECT_EQ(sink.ErrorCount(), 0u) << Describe(sink);
    ++counts[name.kind];
  }
  EXPECT_GE(counts[FileKind::kOffsetIndex], 400u);
  EXPECT_GE(counts[FileKind::kTimeIndex], 400u);
  EXPECT_GE(counts[FileKind::kProducerSnapshot], 150u);
  EXPECT_GE(counts[FileKind::kLeaderEpochCheckpoint], 1000u);
  EXPECT_GE(counts[FileKind::kPartitionMetadata], 800u);
  EXPECT_GE(counts[FileKind::kMetaProperties], 28u);
  EXPECT_GE(counts[FileKind::kRecoveryPointCheckpoint], 28u);
  EXPECT_GE(counts[FileKind::kCleanShutdown], 9u);
  EXPECT_GT(snapshot_entries, 0u);
  EXPECT_GT(index_entries, 1000u);
  EXPECT_GT(epochs, 1000u);
}

TEST(RealFilesTest, EveryDirectoryScansIntoASaneLayout) {
  std::set<fs::path> partition_dirs_seen;
  std::set<fs::path> all_partition_dirs;
  size_t log_dirs = 0, partitions = 0, segments = 0, kraft_snapshots = 0;
  for (const auto& e : fs::recursive_directory_iterator(kReal)) {
    if (!e.is_directory()) continue;
    PathInfo info = ClassifyPath(e.path().string());
    if (info.kind == PathKind::kPartitionDir) all_partition_dirs.insert(e.path());
    if (info.kind != PathKind::kLogDir) continue;
    SCOPED_TRACE(e.path().string());
    LogDir d;
    CollectingSink sink;
    ASSERT_TRUE(ScanLogDir(e.path().string(), &d, &sink));
    EXPECT_EQ(sink.ErrorCount(), 0u) << Describe(sink);
    ++log_dirs;
    // A broker log directory found in the wild has its meta.properties and checkpoint files.
    EXPECT_TRUE(d.meta_properties.has_value());
    EXPECT_TRUE(d.recovery_points.has_value());
    EXPECT_TRUE(d.high_watermarks.has_value());
    for (const PartitionDir& p : d.partitions) {
      partition_dirs_seen.insert(fs::path(p.path));
      ++partitions;
      ASSERT_TRUE(p.tp.has_value()) << p.path;
      EXPECT_EQ(p.tp->ToString(), p.name);
      if (p.LogSegments().empty()) {
        // The .log was not copied (>= 4 MiB): the scan says so.
        bool reported = false;
        for (const auto& pr : sink.problems) reported = reported || (pr.check == "no-segments" && pr.file == p.path);
        EXPECT_TRUE(reported) << p.path;
      }
      segments += p.LogSegments().size();
      kraft_snapshots += p.kraft_snapshots.size();
      if (!p.is_cluster_metadata()) {
        EXPECT_TRUE(p.kraft_snapshots.empty());
      }
      if (p.partition_metadata_file) {
        EXPECT_TRUE(p.partition_metadata.has_value()) << p.path;
      }
      if (p.leader_epoch_checkpoint_file) {
        EXPECT_TRUE(p.leader_epochs.has_value()) << p.path;
      }
      // The recovery point of a partition the broker hosted is at or above its first segment.
      if (d.recovery_points && d.recovery_points->count(*p.tp) && !p.LogSegments().empty()) {
        EXPECT_GE(d.recovery_points->at(*p.tp), p.LogSegments().front()->base_offset) << p.path;
      }
      // Snapshot offsets and segment base offsets are file-name offsets: never negative.
      for (const auto& [offset, snap] : p.producer_snapshots) EXPECT_GE(offset, 0);
    }
    // The parent-checkpoint helper agrees with the log-dir scan.
    if (!d.partitions.empty() && d.partitions[0].tp) {
      CollectingSink s2;
      PartitionCheckpoints c = ReadParentCheckpoints(d.partitions[0].path, *d.partitions[0].tp, &s2);
      std::optional<int64_t> expect;
      if (d.recovery_points && d.recovery_points->count(*d.partitions[0].tp)) {
        expect = d.recovery_points->at(*d.partitions[0].tp);
      }
      EXPECT_EQ(c.recovery_point, expect);
    }
  }
  EXPECT_GE(log_dirs, 28u);
  EXPECT_GE(partitions, 800u);
  EXPECT_GE(segments, 1000u);
  EXPECT_GT(kraft_snapshots, 100u);
  for (const auto& p : all_partition_dirs) EXPECT_TRUE(partition_dirs_seen.count(p)) << p;
}

}  // namespace
}  // namespace klf
