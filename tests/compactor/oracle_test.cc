// Acceptance: every before/after pair Kafka's own cleaner produced (fixtures/kafka-oracle) is
// reproduced by CompactPartition — same files, byte-identical wherever Kafka's bytes are determined
// (everything except re-compressed payloads), same index/time-index/txn-index entries, same
// checkpoint, and the cleaner statistics Kafka printed in its summary.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "compactor/cleaner.h"
#include "segment_reader/batch.h"
#include "segment_reader/index_files.h"

namespace klf {
namespace {
namespace fs = std::filesystem;

const fs::path kOracle = fs::path(KLF_FIXTURES_DIR) / "kafka-oracle";

std::string ReadAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// mtimes.tsv: "<relative path>\t<ms>" (git does not keep modification times).
std::map<std::string, int64_t> ReadMtimes(const fs::path& tsv) {
  std::map<std::string, int64_t> m;
  std::ifstream f(tsv);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    m[line.substr(0, tab)] = std::stoll(line.substr(tab + 1));
  }
  return m;
}

void SetMtime(const fs::path& p, int64_t ms) {
  struct timespec ts[2];
  ts[0].tv_sec = ts[1].tv_sec = ms / 1000;
  ts[0].tv_nsec = ts[1].tv_nsec = (ms % 1000) * 1000000;
  ASSERT_EQ(utimensat(AT_FDCWD, p.c_str(), ts, 0), 0) << p;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "klf-compactor-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Copies the log dir `src` (fixture, read-only) to `dst` with Kafka's mtimes restored from `mtimes`
// (keys relative to `mtimes_root`).
void CopyWithMtimes(const fs::path& src, const fs::path& dst, const fs::path& mtimes_root,
                    const std::map<std::string, int64_t>& mtimes) {
  fs::create_directories(dst);
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    fs::path rel = fs::relative(e.path(), src);
    if (e.is_directory()) {
      fs::create_directories(dst / rel);
      continue;
    }
    fs::copy_file(e.path(), dst / rel);
    fs::permissions(dst / rel, fs::perms::owner_read | fs::perms::owner_write);
    auto it = mtimes.find(fs::relative(e.path(), mtimes_root).string());
    if (it != mtimes.end()) SetMtime(dst / rel, it->second);
  }
}

struct DecodedBatch {
  BatchHeader h;
  std::vector<Record> records;
  std::vector<std::string> keys, values;
  Bytes bytes;
};

std::vector<DecodedBatch> DecodeLog(const std::string& name, const std::string& data) {
  std::vector<DecodedBatch> out;
  NullSink sink;
  LogReader reader(name, AsBytes(data), &sink);
  RecordDecoder dec;
  BatchView b;
  while (reader.Next(&b)) {
    DecodedBatch d;
    d.h = b.header;
    d.bytes = b.bytes;
    if (b.header.magic < 2 || b.header.record_count > 0) {
      EXPECT_TRUE(dec.Decode(b, name, &sink)) << name << " @" << b.header.position;
      d.h = dec.header();
      d.records = dec.records();
      for (const auto& r : d.records) {
        d.keys.push_back(r.key ? std::string(AsStringView(*r.key)) : "<null>");
        d.values.push_back(r.value ? std::string(AsStringView(*r.value)) : "<null>");
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

// Compares two .log files: equal bytes, or — where Kafka re-compressed a batch — equal batch
// headers (except CRC and size) and records. Returns true when the bytes were identical.
bool CompareLogs(const std::string& label, const std::string& ours, const std::string& kafka) {
  if (ours == kafka) return true;
  auto a = DecodeLog(label, ours), b = DecodeLog(label, kafka);
  EXPECT_EQ(a.size(), b.size()) << label << ": batch count";
  for (size_t i = 0; i < std::min(a.size(), b.size()); i++) {
    const auto &x = a[i], &y = b[i];
    std::string where = label + " batch " + std::to_string(i) + " (kafka base " + std::to_string(y.h.base_offset) + ")";
    EXPECT_EQ(x.h.base_offset, y.h.base_offset) << where;
    EXPECT_EQ(x.h.last_offset, y.h.last_offset) << where;
    EXPECT_EQ(x.h.magic, y.h.magic) << where;
    EXPECT_EQ(x.h.compression, y.h.compression) << where;
    EXPECT_EQ(x.h.record_count, y.h.record_count) << where;
    EXPECT_EQ(x.h.base_timestamp, y.h.base_timestamp) << where;
    EXPECT_EQ(x.h.max_timestamp, y.h.max_timestamp) << where;
    EXPECT_EQ(x.h.delete_horizon_ms, y.h.delete_horizon_ms) << where;
    EXPECT_EQ(x.h.producer_id, y.h.producer_id) << where;
    EXPECT_EQ(x.h.producer_epoch, y.h.producer_epoch) << where;
    EXPECT_EQ(x.h.base_sequence, y.h.base_sequence) << where;
    EXPECT_EQ(x.h.partition_leader_epoch, y.h.partition_leader_epoch) << where;
    EXPECT_EQ(x.h.attributes, y.h.attributes) << where;
    EXPECT_EQ(x.keys, y.keys) << where;
    EXPECT_EQ(x.values, y.values) << where;
    if (x.records.size() != y.records.size()) continue;
    for (size_t r = 0; r < x.records.size(); r++) {
      EXPECT_EQ(x.records[r].offset, y.records[r].offset) << where;
      EXPECT_EQ(x.records[r].timestamp, y.records[r].timestamp) << where;
    }
    if (y.h.compression == Compression::kNone) {
      bool same = std::equal(x.bytes.begin(), x.bytes.end(), y.bytes.begin(), y.bytes.end());
      EXPECT_TRUE(same) << where << ": uncompressed batch bytes differ";
    }
  }
  return false;
}

// Compares the directory klf wrote with Kafka's.
void CompareDirs(const fs::path& ours, const fs::path& kafka, const std::string& partition) {
  std::set<std::string> ours_files, kafka_files;
  for (const auto& e : fs::directory_iterator(ours / partition)) ours_files.insert(e.path().filename().string());
  for (const auto& e : fs::directory_iterator(kafka / partition)) kafka_files.insert(e.path().filename().string());
  EXPECT_EQ(ours_files, kafka_files) << "files of " << partition;
  bool logs_identical = true;
  for (const auto& n : kafka_files) {
    if (n.size() > 4 && n.substr(n.size() - 4) == ".log" && ours_files.count(n))
      logs_identical &= CompareLogs(partition + "/" + n, ReadAll(ours / partition / n), ReadAll(kafka / partition / n));
  }
  for (const auto& n : kafka_files) {
    if (!ours_files.count(n) || (n.size() > 4 && n.substr(n.size() - 4) == ".log")) continue;
    std::string a = ReadAll(ours / partition / n), b = ReadAll(kafka / partition / n);
    if (a == b) continue;
    int64_t base = std::stoll(n.substr(0, 20));
    NullSink sink;
    if (n.find(".index") != std::string::npos && logs_identical) {
      ADD_FAILURE() << n << ": offset index differs";
    } else if (n.find(".index") != std::string::npos) {
      auto x = ParseOffsetIndex(n, AsBytes(a), base, &sink), y = ParseOffsetIndex(n, AsBytes(b), base, &sink);
      ASSERT_EQ(x.entries.size(), y.entries.size()) << n;
      for (size_t i = 0; i < x.entries.size(); i++) EXPECT_EQ(x.entries[i].offset, y.entries[i].offset) << n;
    } else {
      ADD_FAILURE() << n << ": bytes differ (" << a.size() << " vs " << b.size() << ")";
    }
  }
  EXPECT_EQ(ReadAll(ours / "cleaner-offset-checkpoint"), ReadAll(kafka / "cleaner-offset-checkpoint"));
}

// "key=value" pairs of Kafka's cleaner summary.
std::map<std::string, std::string> SummaryFields(const std::string& text) {
  std::map<std::string, std::string> m;
  std::regex re(R"(([A-Za-z]+)=([^\s]+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    m[(*it)[1]] = (*it)[2];
  return m;
}

void CheckSummary(const PassReport& pass, const std::string& summary) {
  auto f = SummaryFields(summary);
  EXPECT_EQ(pass.decision.offsets.first_dirty_offset, std::stoll(f["firstDirtyOffset"]));
  EXPECT_EQ(pass.decision.range.first_uncleanable_offset, std::stoll(f["firstUncleanableOffset"]));
  EXPECT_EQ(pass.decision.range.clean_bytes, std::stoll(f["cleanBytes"]));
  EXPECT_EQ(pass.decision.range.cleanable_bytes, std::stoll(f["cleanableBytes"]));
  EXPECT_EQ(pass.last_stable_offset, std::stoll(f["lastStableOffset"]));
  if (f.count("selected")) {
    EXPECT_EQ(pass.decision.selected, f["selected"] == "true");
  }
  if (f.count("brokerWouldSelect")) {
    EXPECT_EQ(pass.decision.selected, f["brokerWouldSelect"] == "true");
  }
  EXPECT_EQ(pass.end_offset, std::stoll(f["endOffset"]));
  EXPECT_EQ(pass.stats.messages_read, std::stoll(f["messagesRead"]));
  EXPECT_EQ(pass.stats.bytes_read, std::stoll(f["bytesRead"]));
  EXPECT_EQ(pass.stats.messages_written, std::stoll(f["messagesWritten"]));
  EXPECT_EQ(pass.stats.invalid_messages_read, std::stoll(f["invalidMessagesRead"]));
  EXPECT_EQ(pass.stats.map_messages_read, std::stoll(f["mapMessagesRead"]));
  // bytesWritten depends on re-compressed sizes; exact only when no batch was re-compressed.
}

// One cleaner-passes/<case>: klf compact before/<partition> --now nowMs --only-if-eligible --config ...
// With `parallel_map`, the offset map is built by two threads whenever the result cannot differ
// (CompactOptions::parallel_min_bytes = 0): Kafka's output must come out all the same.
// `superseded`: the batches the cleaning pass decided from their headers (compactor/superseded.h).
void RunCase(const std::string& name, bool parallel_map = false, int* map_threads = nullptr,
             int64_t* superseded = nullptr) {
  fs::path dir = kOracle / "cleaner-passes" / name;
  nlohmann::json c = nlohmann::json::parse(ReadAll(dir / "case.json"));
  TempDir tmp;
  CopyWithMtimes(dir / "before", tmp.path() / "before", kOracle / "cleaner-passes" / name, [&] {
    auto all = ReadMtimes(kOracle / "cleaner-passes" / "mtimes.tsv");
    std::map<std::string, int64_t> m;
    for (auto& [k, v] : all)
      if (k.rfind(name + "/", 0) == 0) m[k.substr(name.size() + 1)] = v;
    return m;
  }());
  CompactOptions o;
  o.now = c["nowMs"].get<int64_t>();
  o.only_if_eligible = true;
  if (parallel_map) o.parallel_min_bytes = 0;
  std::string error;
  for (auto& [k, v] : c["config"].items()) ASSERT_TRUE(o.config.Set(k, v.get<std::string>(), &error)) << error;
  std::string partition = c["partitionDir"];
  CompactReport report;
  CollectingSink sink;
  ASSERT_TRUE(CompactPartition((tmp.path() / "before" / partition).string(), (tmp.path() / "out").string(), o, &report,
                               &sink, &error))
      << error;
  ASSERT_EQ(report.passes.size(), 1u);
  EXPECT_EQ(report.passes[0].cleaned, c["expectCleaned"].get<bool>());
  if (map_threads) *map_threads = report.passes[0].map_threads;
  if (superseded) *superseded = report.passes[0].batches_superseded;
  CheckSummary(report.passes[0], c["cleanSummary"]);
  CompareDirs(tmp.path() / "out", dir / "after", partition);
}

TEST(OracleCleanerPasses, CodecsV2Recompress) { RunCase("codecs-v2-recompress"); }
TEST(OracleCleanerPasses, DedupeBuffer240NineEntries) { RunCase("dedupe-buffer-240-nine-entries"); }
TEST(OracleCleanerPasses, GroupBySegmentBytes) { RunCase("group-by-segment-bytes"); }
TEST(OracleCleanerPasses, IoBufferSmallTwoThreads) { RunCase("io-buffer-small-two-threads"); }
TEST(OracleCleanerPasses, LegacyV0V1MtimeHorizon) { RunCase("legacy-v0-v1-mtime-horizon"); }
TEST(OracleCleanerPasses, MinCompactionLagPartial) { RunCase("min-compaction-lag-partial"); }
TEST(OracleCleanerPasses, ProducerLastBatchKeptWhileActive) { RunCase("producer-last-batch-kept-while-active"); }
TEST(OracleCleanerPasses, Random1) { RunCase("random-1"); }
TEST(OracleCleanerPasses, TombstonesFirstPassStamp) { RunCase("tombstones-first-pass-stamp"); }
TEST(OracleCleanerPasses, TxnCommitAbortInterleaved) { RunCase("txn-commit-abort-interleaved"); }
TEST(OracleCleanerPasses, SupersededBatchesDecidedFromTheirHeadersAsKafkaDecided) {
  // Batches whose records the map superseded, every one, are dropped or emptied without being read
  // again: removed outright, emptied as a producer's last batch, among transactions, by one and two
  // map threads. RunCase holds the result against Kafka's own `after`.
  for (const char* name : {"group-by-segment-bytes", "producer-last-batch-kept-while-active",
                           "txn-commit-abort-interleaved", "io-buffer-small-two-threads"}) {
    for (bool parallel : {false, true}) {
      int64_t superseded = 0;
      RunCase(name, parallel, nullptr, &superseded);
      EXPECT_GT(superseded, 0) << name << (parallel ? " (two map threads)" : "");
    }
  }
}
TEST(OracleCleanerPassesParallelMap, CodecsV2Recompress) { RunCase("codecs-v2-recompress", true); }
TEST(OracleCleanerPassesParallelMap, DedupeBuffer240NineEntries) {
  // The map fills (nine entries): the second thread's work is dropped and the later half mapped again.
  int threads = 0;
  RunCase("dedupe-buffer-240-nine-entries", true, &threads);
  EXPECT_EQ(threads, 1);
}
TEST(OracleCleanerPassesParallelMap, GroupBySegmentBytes) {
  // Several dirty segments, no aborted transaction, room in the map: the two-thread map is taken
  // (as in CodecsV2Recompress and MinCompactionLagPartial), and Kafka's output must come out the same.
  int threads = 0;
  RunCase("group-by-segment-bytes", true, &threads);
  EXPECT_EQ(threads, 2);
}
TEST(OracleCleanerPassesParallelMap, IoBufferSmallTwoThreads) { RunCase("io-buffer-small-two-threads", true); }
TEST(OracleCleanerPassesParallelMap, LegacyV0V1MtimeHorizon) { RunCase("legacy-v0-v1-mtime-horizon", true); }
TEST(OracleCleanerPassesParallelMap, MinCompactionLagPartial) { RunCase("min-compaction-lag-partial", true); }
TEST(OracleCleanerPassesParallelMap, ProducerLastBatchKeptWhileActive) {
  RunCase("producer-last-batch-kept-while-active", true);
}
TEST(OracleCleanerPassesParallelMap, Random1) { RunCase("random-1", true); }
TEST(OracleCleanerPassesParallelMap, TombstonesFirstPassStamp) { RunCase("tombstones-first-pass-stamp", true); }
TEST(OracleCleanerPassesParallelMap, TxnCommitAbortInterleaved) { RunCase("txn-commit-abort-interleaved", true); }

// The sample passes of fixtures/README.md: index.interval.bytes=128, defaults otherwise, run even
// when the dirty ratio is below the minimum.
void RunSample(const std::string& before_log_dir, const std::string& partition, const std::string& after_log_dir,
               int64_t now, const std::string& segment_bytes, const std::string& summary_file,
               bool parallel_map = false, int* map_threads = nullptr) {
  TempDir tmp;
  auto all = ReadMtimes(kOracle / "mtimes.tsv");
  CopyWithMtimes(kOracle / before_log_dir, tmp.path() / "before", kOracle / before_log_dir, [&] {
    std::map<std::string, int64_t> m;
    for (auto& [k, v] : all)
      if (k.rfind(before_log_dir + "/", 0) == 0) m[k.substr(before_log_dir.size() + 1)] = v;
    return m;
  }());
  CompactOptions o;
  o.now = now;
  if (parallel_map) o.parallel_min_bytes = 0;
  std::string error;
  ASSERT_TRUE(o.config.Set("cleanup.policy", "compact", &error));
  ASSERT_TRUE(o.config.Set("segment.bytes", segment_bytes, &error));
  ASSERT_TRUE(o.config.Set("index.interval.bytes", "128", &error));
  CompactReport report;
  CollectingSink sink;
  ASSERT_TRUE(CompactPartition((tmp.path() / "before" / partition).string(), (tmp.path() / "out").string(), o, &report,
                               &sink, &error))
      << error;
  ASSERT_EQ(report.passes.size(), 1u);
  EXPECT_TRUE(report.passes[0].cleaned);
  if (map_threads) *map_threads = report.passes[0].map_threads;
  CheckSummary(report.passes[0], ReadAll(kOracle / summary_file));
  CompareDirs(tmp.path() / "out", kOracle / after_log_dir, partition);
}

TEST(OracleSamplePasses, TxnCleanedNowPlus10Min) {
  RunSample("b-txn", "txn-0", "b-txn/cleaned-now-plus-10min", 1700000600000, "500",
            "b-txn/cleaned-now-plus-10min.clean.txt");
}
TEST(OracleSamplePasses, LegacyCleaned) {
  RunSample("x-legacy", "legacy-0", "x-legacy/cleaned", 1700172800000, "700", "x-legacy/cleaned.clean.txt");
}
TEST(OracleSamplePasses, CompactPass1) {
  RunSample("c-compact/pass0-before", "compact-demo-0", "c-compact/pass1", 1700000600000, "400",
            "c-compact/pass1.clean.txt");
}
TEST(OracleSamplePasses, CompactPass2) {
  RunSample("c-compact/pass2-input", "compact-demo-0", "c-compact/pass2", 1700007800000, "400",
            "c-compact/pass2.clean.txt");
}
TEST(OracleSamplePassesParallelMap, TxnCleanedNowPlus10Min) {
  RunSample("b-txn", "txn-0", "b-txn/cleaned-now-plus-10min", 1700000600000, "500",
            "b-txn/cleaned-now-plus-10min.clean.txt", true);
}
TEST(OracleSamplePassesParallelMap, LegacyCleaned) {
  RunSample("x-legacy", "legacy-0", "x-legacy/cleaned", 1700172800000, "700", "x-legacy/cleaned.clean.txt", true);
}
TEST(OracleSamplePassesParallelMap, CompactPass1) {
  RunSample("c-compact/pass0-before", "compact-demo-0", "c-compact/pass1", 1700000600000, "400",
            "c-compact/pass1.clean.txt", true);
}
TEST(OracleSamplePassesParallelMap, CompactPass2) {
  RunSample("c-compact/pass2-input", "compact-demo-0", "c-compact/pass2", 1700007800000, "400",
            "c-compact/pass2.clean.txt", true);
}

}  // namespace
}  // namespace klf
