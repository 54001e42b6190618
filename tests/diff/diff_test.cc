// klf diff, library level: each replica's state against Kafka's own answer (truth.json of the
// kafka-oracle replica sets), the findings on those sets, Kafka's own cleaned outputs and replicas
// compacted to different stages by the compactor (no finding), and unrelated logs.
#include "diff/diff.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compactor/cleaner.h"
#include "diff/replica_state.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

std::string Fixtures() { return KLF_FIXTURES_DIR; }
std::string Replicas() { return Fixtures() + "/kafka-oracle/replicas"; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "klf-diff-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

ReplicaState Load(const std::string& dir, ReplicaOptions options = {}) {
  ReplicaState r;
  std::string error;
  EXPECT_TRUE(LoadReplica(dir, options, &r, &error)) << error;
  return r;
}

std::vector<ReplicaState> LoadAll(const std::vector<std::string>& dirs) {
  std::vector<ReplicaState> rs;
  for (const std::string& d : dirs) rs.push_back(Load(d));
  return rs;
}

Digest Md5Of(const std::string& s) { return Md5(AsBytes(s)); }

std::string Describe(const DiffReport& report, const std::vector<ReplicaState>& rs) {
  std::string s;
  for (const Finding& f : report.findings) {
    s += std::string(FindingKindName(f.kind)) + " [" + std::to_string(f.first_offset) + "," +
         std::to_string(f.last_offset) + "] affected:";
    for (size_t i : f.affected) s += " " + rs[i].label;
    s += " evidence: " + f.evidence + "\n";
  }
  return s;
}

// Each broker's state, as LoadReplica rebuilds it, equals Kafka's own after reloading that broker's log.
TEST(ReplicaState, EqualsKafkasViewOfEveryOracleBroker) {
  for (const char* scenario : {"aborted-to-committed", "lost-tombstone-healthy-control"}) {
    std::string base = Replicas() + "/" + scenario;
    auto truth = nlohmann::json::parse(ReadFile(base + "/truth.json"));
    ReplicaOptions options;
    options.now_ms = truth["timeline"].back()["clockMs"].get<int64_t>();
    options.producer_id_expiration_ms = truth["config"]["broker"]["producer.id.expiration.ms"].get<int64_t>();
    for (auto& [broker, expected] : truth["brokers"].items()) {
      SCOPED_TRACE(std::string(scenario) + " " + broker);
      ReplicaState r = Load(base + "/" + broker + "/foo-0", options);
      EXPECT_EQ(r.label, broker);
      EXPECT_EQ(r.log_start_offset, expected["logStartOffset"].get<int64_t>());
      EXPECT_EQ(r.log_end_offset, expected["logEndOffset"].get<int64_t>());
      EXPECT_EQ(r.high_watermark, expected["highWatermark"].get<int64_t>());
      EXPECT_TRUE(r.high_watermark_from_checkpoint);
      EXPECT_EQ(r.last_stable_offset, expected["lastStableOffset"].get<int64_t>());
      ASSERT_TRUE(r.cleaner_checkpoint.has_value());
      EXPECT_EQ(*r.cleaner_checkpoint, expected["cleanerCheckpoint"].get<int64_t>());
      EXPECT_EQ(r.open_txns.size(), expected["openTransactions"].size());

      // read_committed and read_uncommitted: the same records, in order, with the same fields.
      for (const char* view : {"readCommitted", "readUncommitted"}) {
        SCOPED_TRACE(view);
        bool committed = std::string(view) == "readCommitted";
        std::vector<const RecordDigest*> got;
        for (const RecordDigest& d : r.records) {
          if (committed ? d.read_committed : d.read_uncommitted) got.push_back(&d);
        }
        const auto& want = expected[view];
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          const auto& w = want[i];
          SCOPED_TRACE(w.dump());
          EXPECT_EQ(got[i]->offset, w["offset"].get<int64_t>());
          EXPECT_EQ(got[i]->timestamp, w["timestamp"].get<int64_t>());
          EXPECT_EQ(got[i]->producer_id, w["producerId"].get<int64_t>());
          EXPECT_EQ(got[i]->transactional, w["transactional"].get<bool>());
          ASSERT_EQ(got[i]->has_key, !w["key"].is_null());
          if (got[i]->has_key) {
            EXPECT_EQ(got[i]->key, Md5Of(w["key"].get<std::string>()));
          }
          ASSERT_EQ(got[i]->has_value, !w["value"].is_null());
          if (got[i]->has_value) {
            // Values are not kept: the digest covers them, the bytes are read again on demand.
            auto rb = ReadRecordBytes(r, got[i]->offset);
            ASSERT_TRUE(rb && rb->value);
            EXPECT_EQ(*rb->value, w["value"].get<std::string>());
          }
        }
      }
      // The compacted key -> value view: latest committed value per key, tombstones applied.
      size_t live = 0;
      for (const auto& [k, ks] : r.key_view) live += !ks.tombstone;
      EXPECT_EQ(live, expected["finalKeyValues"].size());
      for (auto& [key, value] : expected["finalKeyValues"].items()) {
        const KeyState* ks = r.Key(Md5Of(key));
        ASSERT_NE(ks, nullptr) << key;
        EXPECT_FALSE(ks->tombstone) << key;
        auto rb = ReadRecordBytes(r, ks->offset);
        ASSERT_TRUE(rb && rb->value) << key;
        EXPECT_EQ(*rb->value, value.get<std::string>()) << key;
      }
    }
  }
}

// Loading with a reference replica (digests of byte-identical batches copied, the key view copied when
// the records match) gives exactly what loading alone gives: on copies of the same directory (every
// batch reused) and on Kafka's three brokers and the real five-broker set (followers' batches reused,
// different markers and compaction stages not).
void ExpectSameState(const ReplicaState& got, const ReplicaState& want) {
  EXPECT_EQ(got.log_start_offset, want.log_start_offset);
  EXPECT_EQ(got.log_end_offset, want.log_end_offset);
  EXPECT_EQ(got.last_stable_offset, want.last_stable_offset);
  EXPECT_EQ(got.markers.size(), want.markers.size());
  EXPECT_EQ(got.txns.size(), want.txns.size());
  EXPECT_EQ(got.notes.size(), want.notes.size());
  EXPECT_EQ(got.max_timestamp, want.max_timestamp);
  ASSERT_EQ(got.batches.size(), want.batches.size());
  for (size_t i = 0; i < got.batches.size(); ++i) {
    EXPECT_EQ(got.batches[i].base_offset, want.batches[i].base_offset);
    EXPECT_EQ(got.batches[i].records, want.batches[i].records);
    EXPECT_EQ(got.batches[i].first_record, want.batches[i].first_record);
  }
  ASSERT_EQ(got.records.size(), want.records.size());
  for (size_t i = 0; i < got.records.size(); ++i) {
    const RecordDigest& a = got.records[i];
    const RecordDigest& b = want.records[i];
    SCOPED_TRACE("offset " + std::to_string(b.offset));
    EXPECT_EQ(0, std::memcmp(&a, &b, sizeof(RecordDigest) - 2));  // all but fate and the flag bits
    EXPECT_EQ(a.fate, b.fate);
    EXPECT_EQ(a.transactional, b.transactional);
    EXPECT_EQ(a.control, b.control);
    EXPECT_EQ(a.has_key, b.has_key);
    EXPECT_EQ(a.has_value, b.has_value);
    EXPECT_EQ(a.read_committed, b.read_committed);
    EXPECT_EQ(a.read_uncommitted, b.read_uncommitted);
  }
  ASSERT_EQ(got.key_view.size(), want.key_view.size());
  for (size_t i = 0; i < got.key_view.size(); ++i) {
    EXPECT_EQ(got.key_view[i].first, want.key_view[i].first);
    EXPECT_EQ(got.key_view[i].second.offset, want.key_view[i].second.offset);
    EXPECT_EQ(got.key_view[i].second.record, want.key_view[i].second.record);
    EXPECT_EQ(got.key_view[i].second.tombstone, want.key_view[i].second.tombstone);
    if (i > 0) {
      EXPECT_TRUE(KeyLess(got.key_view[i - 1].first, got.key_view[i].first));
    }
  }
}

TEST(ReplicaState, LoadingWithAReferenceEqualsLoadingAlone) {
  std::vector<std::vector<std::string>> sets;
  for (const char* scenario : {"aborted-to-committed", "lost-tombstone-healthy-control"}) {
    std::string base = Replicas() + "/" + scenario;
    sets.push_back({base + "/broker1/foo-0", base + "/broker1/foo-0", base + "/broker1/foo-0"});
    sets.push_back({base + "/broker1/foo-0", base + "/broker2/foo-0", base + "/broker3/foo-0"});
    sets.push_back({base + "/broker3/foo-0", base + "/broker1/foo-0", base + "/broker2/foo-0"});
  }
  std::string real = Fixtures() + "/real/cesaralcancio__study-kafka/data";
  for (const auto& e : fs::directory_iterator(real + "/kafka1")) {
    if (!e.is_directory()) continue;
    std::vector<std::string> dirs;
    for (const char* broker : {"kafka1", "kafka2", "kafka3", "kafka4", "kafka5"}) {
      std::string d = real + "/" + broker + "/" + e.path().filename().string();
      if (fs::is_directory(d)) dirs.push_back(d);
    }
    if (dirs.size() >= 2) sets.push_back(dirs);
  }
  for (const auto& dirs : sets) {
    std::vector<ReplicaState> together;
    std::string error;
    ASSERT_TRUE(LoadReplicas(dirs, {}, &together, &error, 2)) << error;
    ASSERT_EQ(together.size(), dirs.size());
    for (size_t i = 0; i < dirs.size(); ++i) {
      SCOPED_TRACE(dirs[0] + " as the reference of " + dirs[i]);
      ExpectSameState(together[i], Load(dirs[i]));
    }
  }
}

RecordDigest TestRecord(int64_t offset) {
  RecordDigest d;
  d.offset = offset;
  d.timestamp = 1000 + offset;
  d.has_value = true;
  d.read_uncommitted = true;
  d.content[0] = uint8_t(offset);
  return d;
}

// The VmFlags line of the mapping of /proc/self/smaps that holds `p` ("" when none is found).
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &from, &to) == 2) {
      inside = a >= from && a < to;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line + " ";
    }
  }
  return "";
}

// A store's first chunk is not advised huge pages: the kernel backs only the pages its records use (a
// partition of 30 records costs a page, not a zeroed 2 MiB huge page: 37% of a 3 x 1,000-partition
// diff's CPU, docs/PERFORMANCE.md); the chunks after it are, when the kernel takes the advice.
TEST(RecordStore, OnlyChunksAfterTheFirstAreAdvisedHugePages) {
  RecordStore small;
  for (int64_t i = 0; i < 30; ++i) small.push_back(TestRecord(i));
  const std::string first = VmFlagsOf(small.ChunkOf(0));
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.find(" hg "), std::string::npos) << first;

  RecordStore big;
  for (size_t i = 0; i < RecordStore::kChunk + 1; ++i) big.push_back(TestRecord(int64_t(i)));
  EXPECT_EQ(VmFlagsOf(big.ChunkOf(0)).find(" hg "), std::string::npos);
  const bool advice_taken = std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
  if (advice_taken) {
    EXPECT_NE(VmFlagsOf(big.ChunkOf(RecordStore::kChunk)).find(" hg "), std::string::npos);
  }
}

// Records in chunks: a chunk equal to the reference's at the same index is held in common, a change
// copies it first, and capacity() grows as std::vector's does (the memory budget counts it).
TEST(RecordStore, SharesEqualChunksAndCopiesOnChange) {
  const size_t n = RecordStore::kChunk * 2 + 100;
  RecordStore ref;
  std::vector<RecordDigest, LargeAllocator<RecordDigest>> vec;
  for (size_t i = 0; i < n; ++i) {
    ref.push_back(TestRecord(int64_t(i)));
    vec.push_back(TestRecord(int64_t(i)));
    ASSERT_EQ(ref.capacity(), vec.capacity()) << i;
  }
  ref.Seal();
  EXPECT_EQ(ref.SharedChunks(), 0u);

  RecordStore same, other;
  same.ShareWith(&ref);
  other.ShareWith(&ref);
  for (size_t i = 0; i < n; ++i) {
    same.push_back(TestRecord(int64_t(i)));
    RecordDigest d = TestRecord(int64_t(i));
    if (i == RecordStore::kChunk + 5) d.read_committed = true;  // differs in the second chunk only
    other.push_back(d);
  }
  same.Seal();
  other.Seal();
  for (size_t i : {size_t(0), RecordStore::kChunk, 2 * RecordStore::kChunk}) {
    EXPECT_EQ(same.ChunkOf(i), ref.ChunkOf(i)) << i;
  }
  EXPECT_EQ(other.ChunkOf(0), ref.ChunkOf(0));
  EXPECT_NE(other.ChunkOf(RecordStore::kChunk), ref.ChunkOf(RecordStore::kChunk));
  EXPECT_EQ(other.ChunkOf(2 * RecordStore::kChunk), ref.ChunkOf(2 * RecordStore::kChunk));
  EXPECT_TRUE(other[RecordStore::kChunk + 5].read_committed);
  EXPECT_FALSE(ref[RecordStore::kChunk + 5].read_committed);

  // A change copies the shared chunk: the reference keeps its record.
  same.Mutable(3).fate = TxnFate::kAborted;
  EXPECT_NE(same.ChunkOf(3), ref.ChunkOf(3));
  EXPECT_EQ(same[3].fate, TxnFate::kAborted);
  EXPECT_EQ(ref[3].fate, TxnFate::kNone);
  EXPECT_EQ(same[4].offset, 4);
  // Appending to the shared, partly filled last chunk copies it too.
  same.push_back(TestRecord(int64_t(n)));
  EXPECT_NE(same.ChunkOf(n - 1), ref.ChunkOf(n - 1));
  EXPECT_EQ(same.back().offset, int64_t(n));
  EXPECT_EQ(ref.size(), n);
  // Iteration and search as over a vector.
  auto it = std::lower_bound(ref.begin(), ref.end(), int64_t(RecordStore::kChunk + 7),
                             [](const RecordDigest& d, int64_t o) { return d.offset < o; });
  EXPECT_EQ(it - ref.begin(), std::ptrdiff_t(RecordStore::kChunk + 7));
  EXPECT_EQ(std::count_if(ref.begin(), ref.end(), [](const RecordDigest& d) { return d.has_value; }),
            std::ptrdiff_t(n));
}

// Three replicas of 2 chunks and a bit of records; the third differs from the others at `differ`
// (content) when that is in range. `share`: the second and third share equal chunks with the first.
std::vector<ReplicaState> ChunkedReplicas(size_t differ, bool share) {
  const size_t n = RecordStore::kChunk * 2 + 100;
  std::vector<ReplicaState> rs(3);
  for (size_t r = 0; r < rs.size(); ++r) {
    ReplicaState& s = rs[r];
    s.path = s.label = "broker" + std::to_string(r + 1);
    s.log_end_offset = s.high_watermark = s.last_stable_offset = int64_t(n);
    s.from_digest = true;  // no segment files to quote records from
    BatchSpan b;
    b.base_offset = 0;
    b.last_offset = int64_t(n) - 1;
    b.records = int32_t(n);
    b.digested = true;
    s.batches.push_back(b);
    if (share && r > 0) s.records.ShareWith(&rs[0].records);
    for (size_t i = 0; i < n; ++i) {
      RecordDigest d = TestRecord(int64_t(i));
      d.read_committed = true;
      if (r == 2 && i == differ) d.content[5] = 0xAB;
      s.records.push_back(d);
    }
    s.records.Seal();
  }
  return rs;
}

// AlignRecords counts a chunk held in common in one step: the same findings as record by record.
TEST(Diff, SharedChunksGiveTheSameFindings) {
  for (size_t differ : {size_t(0), size_t(7), RecordStore::kChunk, RecordStore::kChunk + 5,
                        2 * RecordStore::kChunk + 99, size_t(SIZE_MAX)}) {
    SCOPED_TRACE(differ);
    std::vector<ReplicaState> shared = ChunkedReplicas(differ, true);
    std::vector<ReplicaState> apart = ChunkedReplicas(differ, false);
    EXPECT_EQ(shared[1].records.ChunkOf(0), shared[0].records.ChunkOf(0));
    EXPECT_NE(apart[1].records.ChunkOf(0), apart[0].records.ChunkOf(0));
    std::string with = Describe(DiffReplicas(shared), shared);
    EXPECT_EQ(with, Describe(DiffReplicas(apart), apart));
    EXPECT_EQ(with.empty(), differ == SIZE_MAX) << with;
  }
}

// Replicas that hold the same batches hold their records once (LoadReplicas: the first is the
// reference of the others).
TEST(ReplicaState, ByteIdenticalReplicasShareTheirRecords) {
  std::string dir = Replicas() + "/aborted-to-committed/broker1/foo-0";
  std::vector<ReplicaState> rs;
  std::string error;
  ASSERT_TRUE(LoadReplicas({dir, dir, dir}, {}, &rs, &error, 2)) << error;
  ASSERT_FALSE(rs[0].records.empty());
  for (size_t i = 1; i < rs.size(); ++i) {
    EXPECT_EQ(rs[i].records.ChunkOf(0), rs[0].records.ChunkOf(0)) << i;
    EXPECT_TRUE(rs[i].key_view.SharedWith(rs[0].key_view)) << i;
    ExpectSameState(rs[i], Load(dir));
  }
}

// Kafka's aborted-to-committed replicas: exactly one finding, the lost ABORT of producer 2000 whose
// poison record at offset 43 broker2 serves as committed.
TEST(Diff, AbortedToCommittedIsOneLostAbortOnBroker2) {
  std::string base = Replicas() + "/aborted-to-committed";
  auto rs = LoadAll({base + "/broker1/foo-0", base + "/broker2/foo-0", base + "/broker3/foo-0"});
  DiffReport report = DiffReplicas(rs);
  ASSERT_EQ(report.findings.size(), 1u) << Describe(report, rs);
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kLostAbort);
  EXPECT_EQ(f.producer_id, 2000);
  EXPECT_EQ(f.producer_epoch, 0);
  EXPECT_EQ(f.first_offset, 43);
  auto truth = nlohmann::json::parse(ReadFile(base + "/truth.json"));
  EXPECT_EQ(f.first_offset, truth["keyOffsets"]["poison (T1 data)"].get<int64_t>());
  EXPECT_EQ(f.last_offset, truth["keyOffsets"]["T2 COMMIT"].get<int64_t>());
  ASSERT_EQ(f.affected, std::vector<size_t>{1});
  EXPECT_EQ(f.healthy, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(f.key, "poison");
  EXPECT_EQ(f.value, "SHOULD_NOT_SEE_THIS");
  EXPECT_TRUE(report.HasDivergence());
  EXPECT_EQ(report.partition, "foo-0");
  // Broker order does not matter.
  auto swapped = LoadAll({base + "/broker2/foo-0", base + "/broker3/foo-0"});
  DiffReport r2 = DiffReplicas(swapped);
  ASSERT_EQ(r2.findings.size(), 1u) << Describe(r2, swapped);
  EXPECT_EQ(r2.findings[0].kind, FindingKind::kLostAbort);
  EXPECT_EQ(r2.findings[0].affected, std::vector<size_t>{0});
}

TEST(Diff, HealthyControlHasNoFinding) {
  std::string base = Replicas() + "/lost-tombstone-healthy-control";
  auto rs = LoadAll({base + "/broker1/foo-0", base + "/broker2/foo-0", base + "/broker3/foo-0"});
  DiffReport report = DiffReplicas(rs);
  EXPECT_TRUE(report.findings.empty()) << Describe(report, rs);
}

// Kafka's own cleaner output is the same history at a later compaction stage: no finding.
TEST(Diff, KafkaCleanedOutputsAgreeWithTheirInputs) {
  std::string o = Fixtures() + "/kafka-oracle";
  for (auto pair : std::vector<std::pair<std::string, std::string>>{
           {o + "/b-txn/txn-0", o + "/b-txn/cleaned-now-plus-10min/txn-0"},
           {o + "/x-legacy/legacy-0", o + "/x-legacy/cleaned/legacy-0"},
           {o + "/c-compact/pass0-before/compact-demo-0", o + "/c-compact/pass1/compact-demo-0"},
           {o + "/c-compact/pass2-input/compact-demo-0", o + "/c-compact/pass2/compact-demo-0"}}) {
    SCOPED_TRACE(pair.second);
    auto rs = LoadAll({pair.first, pair.second});
    DiffReport report = DiffReplicas(rs);
    EXPECT_TRUE(report.findings.empty()) << Describe(report, rs);
  }
  // A replica that has not fetched the last records yet is lag, not divergence.
  auto rs = LoadAll({o + "/c-compact/pass2/compact-demo-0", o + "/c-compact/pass1/compact-demo-0"});
  DiffReport report = DiffReplicas(rs);
  ASSERT_EQ(report.findings.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(report.findings[0].kind, FindingKind::kMissingRange);
  EXPECT_EQ(report.findings[0].affected, std::vector<size_t>{1});
  EXPECT_EQ(report.findings[0].first_offset, rs[1].log_end_offset);
  EXPECT_EQ(report.findings[0].last_offset, rs[0].log_end_offset - 1);
  EXPECT_FALSE(report.HasDivergence());
}

// Copies the partition directory and its log-dir checkpoint files into `<to>/`.
std::string CopyReplica(const std::string& partition_dir, const std::string& to) {
  fs::path src(partition_dir);
  fs::create_directories(to);
  fs::copy(src, fs::path(to) / src.filename(), fs::copy_options::recursive);
  for (const char* f : {"cleaner-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
                        "recovery-point-offset-checkpoint"}) {
    if (fs::exists(src.parent_path() / f)) fs::copy_file(src.parent_path() / f, fs::path(to) / f);
  }
  return (fs::path(to) / src.filename()).string();
}

// The same history compacted to different stages by klf's compactor (one pass; several passes a day
// apart, which also remove tombstones and markers) never reads as divergence.
TEST(Diff, ReplicasCompactedToDifferentStagesHaveNoFinding) {
  std::string o = Fixtures() + "/kafka-oracle";
  for (std::string input :
       {o + "/b-txn/txn-0", o + "/c-compact/pass2-input/compact-demo-0", o + "/a-keyed/keyed-none-0",
        o + "/a-keyed/keyed-zstd-0", o + "/x-legacy/legacy-0", Replicas() + "/aborted-to-committed/broker2/foo-0"}) {
    SCOPED_TRACE(input);
    TempDir tmp;
    std::vector<std::string> dirs = {CopyReplica(input, tmp.path() + "/original")};
    int stage = 0;
    for (auto [passes, segment_bytes] : std::vector<std::pair<int, int32_t>>{{1, 1 << 30}, {3, 400}, {5, 1 << 30}}) {
      CompactOptions co;
      co.config.compact = true;
      co.config.delete_policy = false;
      co.config.min_cleanable_ratio = 0.0;
      co.config.delete_retention_ms = 600000;
      co.config.segment_bytes = segment_bytes;
      co.now = 1800000000000;
      co.passes = passes;
      co.pass_interval_ms = 86400000;
      CompactReport report;
      CollectingSink sink;
      std::string error;
      std::string out = tmp.path() + "/stage" + std::to_string(++stage);
      ASSERT_TRUE(CompactPartition(dirs.front(), out, co, &report, &sink, &error)) << error;
      dirs.push_back(out + "/" + fs::path(input).filename().string());
    }
    auto rs = LoadAll(dirs);
    // The stages really differ (otherwise this test proves nothing).
    EXPECT_NE(rs.front().ReadUncommittedCount(), rs.back().ReadUncommittedCount());
    DiffReport report = DiffReplicas(rs);
    EXPECT_TRUE(report.findings.empty()) << Describe(report, rs);
  }
}

// data/kafka of greenlemonT is another single-node cluster: its logs are unrelated to kafka1's.
TEST(Diff, UnrelatedLogsAreSaidToBeUnrelated) {
  std::string base = Fixtures() + "/real/greenlemonT__kafka-temp/data";
  for (const char* partition : {"__cluster_metadata-0", "__consumer_offsets-14"}) {
    SCOPED_TRACE(partition);
    auto rs = LoadAll({base + "/kafka/" + partition, base + "/kafka1/" + partition});
    DiffReport report = DiffReplicas(rs);
    ASSERT_EQ(report.findings.size(), 1u) << Describe(report, rs);
    EXPECT_EQ(report.findings[0].kind, FindingKind::kUnrelatedLogs);
    EXPECT_TRUE(report.HasDivergence());
  }
  // Different partitions are not replicas of each other either.
  auto rs = LoadAll({base + "/kafka1/__consumer_offsets-14", base + "/kafka2/__consumer_offsets-26"});
  DiffReport report = DiffReplicas(rs);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].kind, FindingKind::kUnrelatedLogs);
}

// Real brokers' replicas: lag at most, never a divergence.
TEST(Diff, RealMultiBrokerSetsHaveNoDivergence) {
  std::string real = Fixtures() + "/real";
  for (auto set : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"cesaralcancio__study-kafka/data", {"kafka1", "kafka2", "kafka3", "kafka4", "kafka5"}},
           {"ducphongphung__BigData_VietStock/data", {"kafka1", "kafka2", "kafka3"}},
           {"hiage__kafka-raft/data", {"kafka1", "kafka2", "kafka3"}},
           {"greenlemonT__kafka-temp/data", {"kafka1", "kafka2", "kafka3"}}}) {
    std::map<std::string, std::vector<std::string>> partitions;
    for (const std::string& broker : set.second) {
      for (const auto& e : fs::directory_iterator(real + "/" + set.first + "/" + broker)) {
        if (e.is_directory()) partitions[e.path().filename().string()].push_back(e.path().string());
      }
    }
    int compared = 0;
    for (const auto& [name, dirs] : partitions) {
      if (dirs.size() < 2) continue;
      SCOPED_TRACE(set.first + " " + name);
      auto rs = LoadAll(dirs);
      DiffReport report = DiffReplicas(rs);
      EXPECT_FALSE(report.HasDivergence()) << Describe(report, rs);
      ++compared;
    }
    EXPECT_GT(compared, 0) << set.first;
  }
}

}  // namespace
}  // namespace klf

namespace klf {
namespace {

// A damaged segment in the middle of one replica (a flipped base offset, a truncated file) makes its
// offsets unreadable: reported as a missing range naming file and position, never as lost records.
TEST(Diff, DamagedSegmentsAreNotReadAsLostRecords) {
  std::string base = Replicas() + "/lost-tombstone-healthy-control";
  TempDir tmp;
  std::vector<std::string> dirs;
  for (const char* b : {"broker1", "broker2", "broker3"}) {
    dirs.push_back(CopyReplica(base + "/" + b + "/foo-0", tmp.path() + "/" + b));
  }
  fs::permissions(tmp.path(), fs::perms::owner_all, fs::perm_options::add);
  std::vector<std::string> logs;
  for (const auto& e : fs::directory_iterator(dirs[2])) {
    if (e.path().extension() == ".log") logs.push_back(e.path().string());
  }
  std::sort(logs.begin(), logs.end());
  ASSERT_GE(logs.size(), 3u);
  fs::permissions(logs[1], fs::perms::owner_write, fs::perm_options::add);
  fs::resize_file(logs[1], 50);  // a middle segment cut inside its first batch
  auto rs = LoadAll(dirs);
  ASSERT_EQ(rs[2].damaged.size(), 1u);
  DiffReport report = DiffReplicas(rs);
  EXPECT_FALSE(report.HasDivergence()) << Describe(report, rs);
  ASSERT_EQ(report.findings.size(), 1u) << Describe(report, rs);
  EXPECT_EQ(report.findings[0].kind, FindingKind::kMissingRange);
  EXPECT_EQ(report.findings[0].affected, std::vector<size_t>{2});
  EXPECT_NE(report.findings[0].evidence.find(logs[1]), std::string::npos);
}

}  // namespace
}  // namespace klf
