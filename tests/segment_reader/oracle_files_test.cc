// The non-.log files of partition directories written by Kafka's own code
// (fixtures/kafka-oracle) read the way Kafka's dump (<dir>.dump.txt, parsed by
// tests/support/oracle_dump.h) shows them, and re-encode to the same bytes.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/index_files.h"
#include "segment_reader/layout.h"
#include "segment_reader/producer_snapshot.h"
#include "tests/support/oracle_dump.h"

namespace klf {
namespace {
namespace fs = std::filesystem;

const fs::path kOracle = fs::path(KLF_FIXTURES_DIR) / "kafka-oracle";

std::string ReadAll(const fs::path& p) {
  std::string contents, error;
  EXPECT_TRUE(ReadSmallFile(p.string(), 64 << 20, &contents, &error)) << error;
  return contents;
}

struct OracleDir {
  fs::path dump;
  fs::path partition_dir;
  oracle::OracleDump parsed;
};

std::vector<OracleDir> AllOracleDirs() {
  std::vector<OracleDir> out;
  for (const auto& [dir, dump] : oracle::FindOraclePartitionDirs(kOracle.string())) {
    OracleDir o;
    o.dump = dump;
    o.partition_dir = dir;
    std::string error;
    EXPECT_TRUE(oracle::ParseOracleDump(dump, &o.parsed, &error)) << error;
    EXPECT_EQ(o.parsed.partition_dir, o.partition_dir.filename().string()) << dump;
    out.push_back(std::move(o));
  }
  return out;
}

int64_t BaseOffsetOf(const std::string& file) { return *ClassifyFileName(file).offset; }

TEST(OracleFilesTest, FindsEveryDump) {
  auto dirs = AllOracleDirs();
  EXPECT_GE(dirs.size(), 39u);
  size_t dumps = 0;
  for (const auto& e : fs::recursive_directory_iterator(kOracle)) {
    dumps += e.path().filename().string().ends_with(".dump.txt");
  }
  EXPECT_EQ(dirs.size(), dumps);
}

TEST(OracleFilesTest, OffsetIndexSectionsMatchAndReencode) {
  size_t checked = 0, entries_checked = 0;
  for (const auto& d : AllOracleDirs()) {
    for (const auto& s : d.parsed.offset_indexes) {
      SCOPED_TRACE(d.dump.string() + ": " + s.file);
      fs::path p = d.partition_dir / s.file;
      std::string bytes = ReadAll(p);
      int64_t base = BaseOffsetOf(s.file);
      CollectingSink sink;
      OffsetIndex idx = ParseOffsetIndex(p.string(), AsBytes(bytes), base, &sink);
      ASSERT_EQ(idx.entries.size(), s.offset_position.size());
      EXPECT_EQ(int64_t(idx.entries.size()), s.entries);
      std::string reencoded;
      for (size_t i = 0; i < idx.entries.size(); ++i) {
        EXPECT_EQ(idx.entries[i].offset, s.offset_position[i].first) << i;
        EXPECT_EQ(idx.entries[i].position, s.offset_position[i].second) << i;
        EncodeOffsetIndexEntry(idx.entries[i], base, &reencoded);
      }
      reencoded.append(idx.unused_slots * kOffsetIndexEntrySize, '\0');
      EXPECT_EQ(reencoded, bytes);
      EXPECT_TRUE(sink.problems.empty());
      ++checked;
      entries_checked += idx.entries.size();
    }
  }
  EXPECT_GT(checked, 140u);
  EXPECT_GT(entries_checked, 50u);
}

TEST(OracleFilesTest, TimeIndexSectionsMatchAndReencode) {
  size_t checked = 0, entries_checked = 0;
  for (const auto& d : AllOracleDirs()) {
    for (const auto& s : d.parsed.time_indexes) {
      SCOPED_TRACE(d.dump.string() + ": " + s.file);
      fs::path p = d.partition_dir / s.file;
      std::string bytes = ReadAll(p);
      int64_t base = BaseOffsetOf(s.file);
      CollectingSink sink;
      TimeIndex idx = ParseTimeIndex(p.string(), AsBytes(bytes), base, &sink);
      ASSERT_EQ(idx.entries.size(), s.timestamp_offset.size());
      EXPECT_EQ(int64_t(idx.entries.size()), s.entries);
      std::string reencoded;
      for (size_t i = 0; i < idx.entries.size(); ++i) {
        EXPECT_EQ(idx.entries[i].timestamp, s.timestamp_offset[i].first) << i;
        EXPECT_EQ(idx.entries[i].offset, s.timestamp_offset[i].second) << i;
        EncodeTimeIndexEntry(idx.entries[i], base, &reencoded);
      }
      reencoded.append(idx.unused_slots * kTimeIndexEntrySize, '\0');
      EXPECT_EQ(reencoded, bytes);
      EXPECT_TRUE(sink.problems.empty());
      ++checked;
      entries_checked += idx.entries.size();
    }
  }
  EXPECT_GT(checked, 140u);
  EXPECT_GT(entries_checked, 140u);
}

TEST(OracleFilesTest, TxnIndexSectionsMatchAndReencode) {
  size_t checked = 0;
  for (const auto& d : AllOracleDirs()) {
    for (const auto& s : d.parsed.txn_indexes) {
      SCOPED_TRACE(d.dump.string() + ": " + s.file);
      fs::path p = d.partition_dir / s.file;
      std::string bytes = ReadAll(p);
      CollectingSink sink;
      TxnIndex idx = ParseTxnIndex(p.string(), AsBytes(bytes), &sink);
      ASSERT_EQ(idx.entries.size(), s.aborted.size());
      EXPECT_EQ(int64_t(idx.entries.size()), s.entries);
      std::string reencoded;
      for (size_t i = 0; i < idx.entries.size(); ++i) {
        EXPECT_EQ(idx.entries[i].producer_id, s.aborted[i].producer_id);
        EXPECT_EQ(idx.entries[i].first_offset, s.aborted[i].first_offset);
        EXPECT_EQ(idx.entries[i].last_offset, s.aborted[i].last_offset);
        EXPECT_EQ(idx.entries[i].last_stable_offset, s.aborted[i].last_stable_offset);
        EXPECT_EQ(idx.entries[i].version, 0);
        // TransactionIndex sanity check: every lastOffset at or above the segment base offset.
        EXPECT_GE(idx.entries[i].last_offset, BaseOffsetOf(s.file));
        EncodeAbortedTxn(idx.entries[i], &reencoded);
      }
      EXPECT_EQ(reencoded, bytes);
      EXPECT_TRUE(sink.problems.empty());
      ++checked;
    }
  }
  EXPECT_GE(checked, 10u);
}

TEST(OracleFilesTest, ProducerSnapshotSectionsMatchAndReencode) {
  size_t checked = 0, with_entries = 0, not_ascending = 0;
  for (const auto& d : AllOracleDirs()) {
    for (const auto& s : d.parsed.producer_snapshots) {
      SCOPED_TRACE(d.dump.string() + ": " + s.file);
      fs::path p = d.partition_dir / s.file;
      std::string bytes = ReadAll(p);
      CollectingSink sink;
      ProducerSnapshot snap;
      ASSERT_TRUE(ParseProducerSnapshot(p.string(), AsBytes(bytes), BaseOffsetOf(s.file), &snap, &sink));
      EXPECT_TRUE(snap.crc_valid);
      EXPECT_TRUE(sink.problems.empty());
      ASSERT_EQ(snap.entries.size(), s.entries.size());
      for (size_t i = 0; i < snap.entries.size(); ++i) {
        const auto& e = snap.entries[i];
        const auto& k = s.entries[i];
        EXPECT_EQ(e.producer_id, k.producer_id) << i;
        EXPECT_EQ(e.epoch, k.epoch) << i;
        EXPECT_EQ(e.first_sequence(), k.first_seq) << i;
        EXPECT_EQ(e.last_sequence, k.last_seq) << i;
        EXPECT_EQ(e.first_offset(), k.first_data_offset) << i;
        EXPECT_EQ(e.last_offset, k.last_data_offset) << i;
        EXPECT_EQ(e.timestamp, k.last_timestamp) << i;
        EXPECT_EQ(e.coordinator_epoch, k.coordinator_epoch) << i;
        EXPECT_EQ(e.current_txn_first_offset, k.current_txn_first_offset.value_or(-1)) << i;
      }
      EXPECT_EQ(EncodeProducerSnapshot(snap.entries), bytes);

      // The on-disk order is Java's HashMap order: whatever order the producers were inserted in
      // (ascending ids, or reversed), Java iterates them as the file lists them.
      std::vector<int64_t> file_order;
      for (const auto& e : snap.entries) file_order.push_back(e.producer_id);
      std::vector<int64_t> ascending = file_order;
      std::sort(ascending.begin(), ascending.end());
      std::vector<int64_t> descending(ascending.rbegin(), ascending.rend());
      EXPECT_EQ(JavaHashMapOrder(file_order), file_order);
      EXPECT_EQ(JavaHashMapOrder(ascending), file_order);
      EXPECT_EQ(JavaHashMapOrder(descending), file_order);
      ++checked;
      with_entries += !snap.entries.empty();
      not_ascending += file_order != ascending;
    }
  }
  EXPECT_GE(checked, 100u);
  EXPECT_GE(with_entries, 20u);
  EXPECT_GE(not_ascending, 1u);  // at least one snapshot whose Java order is not ascending
}

TEST(OracleFilesTest, EveryIndexAndSnapshotFileIsInTheDump) {
  for (const auto& d : AllOracleDirs()) {
    std::set<std::string> dumped;
    for (const auto& s : d.parsed.offset_indexes) dumped.insert(s.file);
    for (const auto& s : d.parsed.time_indexes) dumped.insert(s.file);
    for (const auto& s : d.parsed.txn_indexes) dumped.insert(s.file);
    for (const auto& s : d.parsed.producer_snapshots) dumped.insert(s.file);
    PartitionDir pd;
    CollectingSink sink;
    ASSERT_TRUE(ScanPartitionDir(d.partition_dir.string(), &pd, &sink));
    EXPECT_EQ(sink.ErrorCount(), 0u) << d.partition_dir;
    EXPECT_TRUE(pd.leftovers.empty()) << d.partition_dir;
    ASSERT_EQ(pd.LogSegments().size(), d.parsed.segments.size()) << d.partition_dir;
    for (const auto& [base, seg] : pd.segments) {
      ASSERT_TRUE(seg.log.has_value()) << d.partition_dir << " " << base;
      if (seg.index && seg.index->size > 0) {
        EXPECT_TRUE(dumped.count(seg.index->name)) << seg.index->path;
      }
      if (seg.txn_index) {
        EXPECT_TRUE(dumped.count(seg.txn_index->name)) << seg.txn_index->path;
      }
    }
    for (const auto& [offset, snap] : pd.producer_snapshots) {
      EXPECT_TRUE(dumped.count(snap.name)) << snap.path;
    }
  }
}

TEST(OracleFilesTest, PartitionTextFilesMatchDumpAndReencode) {
  size_t epochs = 0, metadata = 0;
  for (const auto& d : AllOracleDirs()) {
    for (const auto& s : d.parsed.files) {
      SCOPED_TRACE(d.dump.string() + ": " + s.name);
      fs::path p = d.partition_dir / s.name;
      std::string text = ReadAll(p);
      // The dump shows the file's lines.
      std::string joined;
      for (size_t i = 0; i < s.lines.size(); ++i) joined += s.lines[i] + (i + 1 < s.lines.size() ? "\n" : "");
      std::string trimmed = text;
      if (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
      EXPECT_EQ(trimmed, joined);
      CollectingSink sink;
      if (s.name == "leader-epoch-checkpoint") {
        std::vector<LeaderEpochEntry> entries;
        ASSERT_TRUE(ParseLeaderEpochCheckpoint(p.string(), text, &entries, &sink));
        ASSERT_EQ(entries.size() + 2, s.lines.size());
        for (size_t i = 0; i < entries.size(); ++i) {
          std::istringstream ss(s.lines[i + 2]);
          int64_t epoch, start;
          ss >> epoch >> start;
          EXPECT_EQ(entries[i].epoch, epoch);
          EXPECT_EQ(entries[i].start_offset, start);
        }
        EXPECT_EQ(EncodeLeaderEpochCheckpoint(entries), text);
        ++epochs;
      } else if (s.name == "partition.metadata") {
        PartitionMetadata m;
        ASSERT_TRUE(ParsePartitionMetadata(p.string(), text, &m, &sink));
        EXPECT_EQ("topic_id: " + m.topic_id, s.lines.at(1));
        EXPECT_EQ(EncodePartitionMetadata(m), text);
        ++metadata;
      }
      EXPECT_TRUE(sink.problems.empty());
    }
  }
  EXPECT_GE(epochs, 39u);
  EXPECT_GE(metadata, 39u);
}

// LevelDB's corruption_test style: copy a Kafka-written directory, damage one file, and check the
// exact problem (file, byte position, check) while everything else still reads.
TEST(OracleFilesTest, DamagedCopyReportsExactProblems) {
  std::string tmpl = (fs::temp_directory_path() / "klf-oracle-damage-XXXXXX").string();
  fs::path tmp = mkdtemp(tmpl.data());
  fs::path dir = tmp / "txn-0";
  fs::copy(kOracle / "b-txn" / "txn-0", dir);
  for (const auto& e : fs::directory_iterator(dir)) {
    fs::permissions(e.path(), fs::perms::owner_read | fs::perms::owner_write);
  }
  auto rewrite = [](const fs::path& p, const std::function<void(std::string*)>& damage) {
    std::string contents, error;
    ASSERT_TRUE(ReadSmallFile(p.string(), 1 << 20, &contents, &error)) << error;
    damage(&contents);
    std::ofstream(p, std::ios::binary | std::ios::trunc) << contents;
  };
  const fs::path snapshot = dir / "00000000000000000015.snapshot";
  const fs::path index = dir / "00000000000000000007.index";
  const fs::path txn = dir / "00000000000000000007.txnindex";
  uint64_t index_size = fs::file_size(index);
  rewrite(snapshot, [](std::string* s) { (*s)[30] ^= 0x40; });                      // inside the first entry
  rewrite(index, [](std::string* s) { s->append("\x01\x02\x03"); });                // 3 stray bytes
  rewrite(txn, [](std::string* s) { s->resize(s->size() - 5); });                   // partial last entry
  rewrite(dir / "leader-epoch-checkpoint", [](std::string* s) { (*s)[2] = '7'; });  // count 1 -> 7
  rewrite(dir / "partition.metadata",
          [](std::string* s) { *s = s->substr(0, s->find("topic_id: ") + 10) + std::string(22, 'A'); });

  PartitionDir pd;
  CollectingSink sink;
  ASSERT_TRUE(ScanPartitionDir(dir.string(), &pd, &sink));
  auto find = [](const CollectingSink& sink, const std::string& check) -> const Problem* {
    for (const auto& p : sink.problems) {
      if (p.check == check) return &p;
    }
    return nullptr;
  };
  const Problem* count = find(sink, "checkpoint-count");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->file, (dir / "leader-epoch-checkpoint").string());
  EXPECT_EQ(count->position, 2u);
  const Problem* uuid = find(sink, "partition-metadata-topic-id");
  ASSERT_NE(uuid, nullptr);
  EXPECT_EQ(uuid->position, 11u);
  EXPECT_FALSE(pd.leader_epochs.has_value());
  EXPECT_FALSE(pd.partition_metadata.has_value());

  std::string bytes, error;
  ASSERT_TRUE(ReadSmallFile(snapshot.string(), 1 << 20, &bytes, &error));
  CollectingSink snap_sink;
  ProducerSnapshot snap;
  EXPECT_FALSE(ParseProducerSnapshot(snapshot.string(), AsBytes(bytes), 15, &snap, &snap_sink));
  ASSERT_NE(find(snap_sink, "snapshot-crc"), nullptr);
  EXPECT_EQ(find(snap_sink, "snapshot-crc")->position, 2u);
  EXPECT_EQ(snap.entries.size(), 3u);  // the entries still decode

  ASSERT_TRUE(ReadSmallFile(index.string(), 1 << 20, &bytes, &error));
  CollectingSink index_sink;
  OffsetIndex idx = ParseOffsetIndex(index.string(), AsBytes(bytes), 7, &index_sink);
  EXPECT_EQ(idx.entries.size(), 2u);
  ASSERT_NE(find(index_sink, "offset-index-size"), nullptr);
  EXPECT_EQ(find(index_sink, "offset-index-size")->position, index_size);

  ASSERT_TRUE(ReadSmallFile(txn.string(), 1 << 20, &bytes, &error));
  CollectingSink txn_sink;
  TxnIndex t = ParseTxnIndex(txn.string(), AsBytes(bytes), &txn_sink);
  EXPECT_TRUE(t.entries.empty());
  ASSERT_NE(find(txn_sink, "txn-index-size"), nullptr);
  EXPECT_EQ(find(txn_sink, "txn-index-size")->position, 0u);

  fs::remove_all(tmp);
}

TEST(OracleFilesTest, LogDirCheckpointsReencode) {
  size_t checked = 0;
  for (const auto& e : fs::recursive_directory_iterator(kOracle)) {
    if (!e.is_regular_file()) continue;
    FileKind k = ClassifyFileName(e.path().filename().string()).kind;
    if (k != FileKind::kCleanerOffsetCheckpoint && k != FileKind::kRecoveryPointCheckpoint &&
        k != FileKind::kReplicationOffsetCheckpoint && k != FileKind::kLogStartOffsetCheckpoint) {
      continue;
    }
    SCOPED_TRACE(e.path().string());
    std::string text = ReadAll(e.path());
    std::vector<OffsetCheckpointEntry> entries;
    CollectingSink sink;
    ASSERT_TRUE(ParseOffsetCheckpoint(e.path().string(), text, &entries, &sink));
    EXPECT_TRUE(sink.problems.empty());
    EXPECT_EQ(EncodeOffsetCheckpoint(entries), text);
    ++checked;
  }
  EXPECT_GE(checked, 40u);
}

TEST(OracleFilesTest, ParentCheckpointsOfOraclePartitions) {
  // c-compact/pass2: the cleaner checkpoint of compact-demo-0 is 16 (see the file); the helper must
  // find it from the partition directory.
  fs::path part = kOracle / "c-compact" / "pass2" / "compact-demo-0";
  std::vector<OffsetCheckpointEntry> expected;
  CollectingSink sink;
  ASSERT_TRUE(ParseOffsetCheckpoint("c", ReadAll(part.parent_path() / "cleaner-offset-checkpoint"), &expected, &sink));
  ASSERT_EQ(expected.size(), 1u);
  PartitionCheckpoints c = ReadParentCheckpoints(part.string(), {"compact-demo", 0}, &sink);
  EXPECT_EQ(c.cleaner_checkpoint, expected[0].offset);
  EXPECT_TRUE(c.recovery_point.has_value());
  EXPECT_TRUE(c.high_watermark.has_value());
  EXPECT_EQ(sink.ErrorCount(), 0u);

  PathInfo info = ClassifyPath(part.string());
  EXPECT_EQ(info.kind, PathKind::kPartitionDir);
  EXPECT_EQ(ClassifyPath(part.parent_path().string()).kind, PathKind::kLogDir);
  EXPECT_EQ(ClassifyPath((part / "00000000000000000000.log").string()).kind, PathKind::kFile);
}

}  // namespace
}  // namespace klf
