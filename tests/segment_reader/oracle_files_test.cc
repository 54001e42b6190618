// The non-.log files of partition directories written by Kafka's own code
// (fixtures/kafka-oracle) read the way Kafka's dump (<dir>.dump.txt) shows them, and re-encode to the
// same bytes.
//
// The dump sections used here (written by Kafka's DumpLogSegments-like tool):
//   offset-index <file> entries=N      then "  offset=O position=P" lines
//   time-index <file> entries=N        then "  timestamp=T offset=O"
//   txn-index <file> entries=N         then "  producerId=.. firstOffset=.. lastOffset=.. lastStableOffset=.."
//   producer-snapshot <file>           then "  producerId=.. epoch=.. firstSeq=.. lastSeq=.. firstDataOffset=..
//                                            lastDataOffset=.. lastTimestamp=.. coordinatorEpoch=..
//                                            currentTxnFirstOffset=<n|none>"
//   file <name>                        then the file's lines, indented
// tests/support had no shared dump parser when this was written, so the few sections needed are
// parsed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/index_files.h"
#include "segment_reader/layout.h"
#include "segment_reader/producer_snapshot.h"

namespace klf {
namespace {
namespace fs = std::filesystem;

const fs::path kOracle = fs::path(KLF_FIXTURES_DIR) / "kafka-oracle";

struct Section {
  std::string kind;  // offset-index, time-index, txn-index, producer-snapshot, file
  std::string file;
  std::optional<size_t> declared_entries;
  std::vector<std::map<std::string, std::string>> entries;
  std::vector<std::string> lines;  // indented lines, indentation removed
};

struct Dump {
  std::string partition_dir_name;
  std::vector<Section> sections;
};

Dump ParseDump(const fs::path& path) {
  Dump d;
  std::ifstream in(path);
  std::string line;
  Section* current = nullptr;
  while (std::getline(in, line)) {
    if (line.rfind("# partition-dir ", 0) == 0) {
      d.partition_dir_name = line.substr(16);
      current = nullptr;
      continue;
    }
    if (line.rfind("  ", 0) == 0) {
      if (!current) continue;
      std::string body = line.substr(2);
      current->lines.push_back(body);
      std::map<std::string, std::string> kv;
      std::istringstream ss(body);
      std::string tok;
      while (ss >> tok) {
        size_t eq = tok.find('=');
        if (eq != std::string::npos) kv[tok.substr(0, eq)] = tok.substr(eq + 1);
      }
      current->entries.push_back(std::move(kv));
      continue;
    }
    std::istringstream ss(line);
    std::string kind, file, extra;
    ss >> kind >> file;
    if (kind == "offset-index" || kind == "time-index" || kind == "txn-index" || kind == "producer-snapshot" ||
        kind == "file") {
      Section s;
      s.kind = kind;
      s.file = file;
      while (ss >> extra) {
        if (extra.rfind("entries=", 0) == 0) s.declared_entries = std::stoul(extra.substr(8));
      }
      d.sections.push_back(std::move(s));
      current = &d.sections.back();
    } else {
      current = nullptr;
    }
  }
  return d;
}

std::string ReadAll(const fs::path& p) {
  std::string contents, error;
  EXPECT_TRUE(ReadSmallFile(p.string(), 64 << 20, &contents, &error)) << error;
  return contents;
}

int64_t Num(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  EXPECT_NE(it, kv.end()) << "missing " << key;
  if (it == kv.end()) return 0;
  if (it->second == "none") return -1;
  return std::stoll(it->second);
}

struct OracleDir {
  fs::path dump;
  fs::path partition_dir;
  Dump parsed;
};

std::vector<OracleDir> AllOracleDirs() {
  std::vector<OracleDir> out;
  for (const auto& e : fs::recursive_directory_iterator(kOracle)) {
    std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !name.ends_with(".dump.txt")) continue;
    fs::path dir = e.path().parent_path() / name.substr(0, name.size() - 9);
    if (!fs::is_directory(dir)) continue;
    OracleDir o;
    o.dump = e.path();
    o.parsed = ParseDump(e.path());
    o.partition_dir = dir.filename() == o.parsed.partition_dir_name ? dir : dir / o.parsed.partition_dir_name;
    out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.dump < b.dump; });
  return out;
}

int64_t BaseOffsetOf(const std::string& file) { return *ClassifyFileName(file).offset; }

TEST(OracleFilesTest, FindsEveryDump) {
  auto dirs = AllOracleDirs();
  EXPECT_GE(dirs.size(), 39u);
  for (const auto& d : dirs) {
    EXPECT_TRUE(fs::is_directory(d.partition_dir)) << d.partition_dir;
    EXPECT_FALSE(d.parsed.sections.empty()) << d.dump;
  }
}

TEST(OracleFilesTest, IndexSectionsMatchAndReencode) {
  size_t checked = 0, entries_checked = 0;
  for (const auto& d : AllOracleDirs()) {
    for (const Section& s : d.parsed.sections) {
      if (s.kind != "offset-index" && s.kind != "time-index") continue;
      SCOPED_TRACE(d.dump.string() + ": " + s.file);
      fs::path p = d.partition_dir / s.file;
      std::string bytes = ReadAll(p);
      int64_t base = BaseOffsetOf(s.file);
      CollectingSink sink;
      std::string reencoded;
      size_t unused = 0;
      if (s.kind == "offset-index") {
        OffsetIndex idx = ParseOffsetIndex(p.string(), AsBytes(bytes), base, &sink);
        ASSERT_EQ(idx.entries.size(), s.entries.size());
        if (s.declared_entries) {
          EXPECT_EQ(idx.entries.size(), *s.declared_entries);
        }
        for (size_t i = 0; i < idx.entries.size(); ++i) {
          EXPECT_EQ(idx.entries[i].offset, Num(s.entries[i], "offset")) << i;
          EXPECT_EQ(idx.entries[i].position, Num(s.entries[i], "position")) << i;
          EncodeOffsetIndexEntry(idx.entries[i], base, &reencoded);
        }
        unused = idx.unused_slots * kOffsetIndexEntrySize;
      } else {
        TimeIndex idx = ParseTimeIndex(p.string(), AsBytes(bytes), base, &sink);
        ASSERT_EQ(idx.entries.size(), s.entries.size());
        for (size_t i = 0; i < idx.entries.size(); ++i) {
          EXPECT_EQ(idx.entries[i].timestamp, Num(s.entries[i], "timestamp")) << i;
          EXPECT_EQ(idx.entries[i].offset, Num(s.entries[i], "offset")) << i;
          EncodeTimeIndexEntry(idx.entries[i], base, &reencoded);
        }
        unused = idx.unused_slots * kTimeIndexEntrySize;
      }
      reencoded.append(unused, '\0');
      EXPECT_EQ(reencoded, bytes);
      EXPECT_TRUE(sink.problems.empty()) << sink.problems[0].message;
      ++checked;
      entries_checked += s.entries.size();
    }
  }
  EXPECT_GT(checked, 250u);
  EXPECT_GT(entries_checked, 100u);
}

TEST(OracleFilesTest, TxnIndexSectionsMatchAndReencode) {
  size_t checked = 0;
  for (const auto& d : AllOracleDirs()) {
    for (const Section& s : d.parsed.sections) {
      if (s.kind != "txn-index") continue;
      SCOPED_TRACE(d.dump.string() + ": " + s.file);
      fs::path p = d.partition_dir / s.file;
      std::string bytes = ReadAll(p);
      CollectingSink sink;
      TxnIndex idx = ParseTxnIndex(p.string(), AsBytes(bytes), &sink);
      ASSERT_EQ(idx.entries.size(), s.entries.size());
      std::string reencoded;
      for (size_t i = 0; i < idx.entries.size(); ++i) {
        EXPECT_EQ(idx.entries[i].producer_id, Num(s.entries[i], "producerId"));
        EXPECT_EQ(idx.entries[i].first_offset, Num(s.entries[i], "firstOffset"));
        EXPECT_EQ(idx.entries[i].last_offset, Num(s.entries[i], "lastOffset"));
        EXPECT_EQ(idx.entries[i].last_stable_offset, Num(s.entries[i], "lastStableOffset"));
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
  size_t checked = 0, with_entries = 0, multi = 0;
  for (const auto& d : AllOracleDirs()) {
    for (const Section& s : d.parsed.sections) {
      if (s.kind != "producer-snapshot") continue;
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
        const auto& kv = s.entries[i];
        EXPECT_EQ(e.producer_id, Num(kv, "producerId")) << i;
        EXPECT_EQ(e.epoch, Num(kv, "epoch")) << i;
        EXPECT_EQ(e.first_sequence(), Num(kv, "firstSeq")) << i;
        EXPECT_EQ(e.last_sequence, Num(kv, "lastSeq")) << i;
        EXPECT_EQ(e.first_offset(), Num(kv, "firstDataOffset")) << i;
        EXPECT_EQ(e.last_offset, Num(kv, "lastDataOffset")) << i;
        EXPECT_EQ(e.timestamp, Num(kv, "lastTimestamp")) << i;
        EXPECT_EQ(e.coordinator_epoch, Num(kv, "coordinatorEpoch")) << i;
        EXPECT_EQ(e.current_txn_first_offset, Num(kv, "currentTxnFirstOffset")) << i;
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
      multi += snap.entries.size() > 1 && file_order != ascending;
    }
  }
  EXPECT_GE(checked, 100u);
  EXPECT_GE(with_entries, 20u);
  EXPECT_GE(multi, 1u);  // at least one snapshot whose Java order is not ascending
}

TEST(OracleFilesTest, EveryIndexAndSnapshotFileIsInTheDump) {
  for (const auto& d : AllOracleDirs()) {
    std::set<std::string> dumped;
    for (const Section& s : d.parsed.sections) dumped.insert(s.file);
    PartitionDir pd;
    CollectingSink sink;
    ASSERT_TRUE(ScanPartitionDir(d.partition_dir.string(), &pd, &sink));
    EXPECT_EQ(sink.ErrorCount(), 0u) << d.partition_dir;
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
    for (const Section& s : d.parsed.sections) {
      if (s.kind != "file") continue;
      SCOPED_TRACE(d.dump.string() + ": " + s.file);
      fs::path p = d.partition_dir / s.file;
      std::string text = ReadAll(p);
      // The dump shows the file's lines.
      std::string joined;
      for (size_t i = 0; i < s.lines.size(); ++i) joined += s.lines[i] + (i + 1 < s.lines.size() ? "\n" : "");
      std::string trimmed = text;
      if (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
      EXPECT_EQ(trimmed, joined);
      CollectingSink sink;
      if (s.file == "leader-epoch-checkpoint") {
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
      } else if (s.file == "partition.metadata") {
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
  EXPECT_EQ(c.cleaner_offset, expected[0].offset);
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
