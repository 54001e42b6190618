// Salvage (salvage/salvage.h SalvagePartition, the code behind `klf repair --salvage DIR --out DIR`) over
// every case of the damage corpus (tests/support/damage_corpus.h) of two directories Kafka wrote
// (kafka-oracle a-keyed/keyed-none-0 and b-txn/txn-0). For each case, salvaged into a fresh --out:
//   (a) the copy verifies with no error and no warning (verify/verify.h);
//   (b) no valid batch before the damage is lost: every batch of Kafka's dump of the source that lies,
//       in log order, entirely before the first damaged byte is in the copy byte for byte, in the
//       segment of the same name at the same position; Kafka's recovery deletes the segments after a
//       truncated one (spec §14), so batches after the damage may go;
//   (c) the report names exactly what was dropped: the damaged segment from the start of the batch
//       holding the first damaged byte (Kafka's dump says where it starts) to its end, then every later
//       segment whole, with its batch count and offsets from Kafka's dump; nothing when the .log files
//       are intact (index, snapshot, .txnindex damage is rebuilt, not dropped); the counts of kept
//       batches, segments and the log end offset agree with the copy;
//   (d) the damaged input is byte-identical afterwards.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "salvage/salvage.h"
#include "segment_reader/batch.h"
#include "segment_reader/bytes.h"
#include "verify/verify.h"
#include "segment_writer/file_writer.h"
#include "tests/support/damage_corpus.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using damage::DamageCase;
using damage::DamageCorpus;

const std::string kOracle = std::string(KLF_FIXTURES_DIR) + "/kafka-oracle";

// Env::Default() without fsync: the salvage code is the same, only durability is skipped (each case
// wrote ~22 fsyncs, which made the corpus take minutes on this VM instead of seconds).
class NoSyncFile : public WritableFile {
 public:
  explicit NoSyncFile(std::unique_ptr<WritableFile> f) : f_(std::move(f)) {}
  bool Append(Bytes data, std::string* error) override { return f_->Append(data, error); }
  bool Flush(std::string* error) override { return f_->Flush(error); }
  bool Sync(std::string* error) override { return f_->Flush(error); }
  bool Close(std::string* error) override { return f_->Close(error); }
  const std::string& path() const override { return f_->path(); }

 private:
  std::unique_ptr<WritableFile> f_;
};

class NoSyncEnv : public Env {
 public:
  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path, std::string* error) override {
    auto f = base_->NewWritableFile(path, error);
    if (!f) return nullptr;
    return std::make_unique<NoSyncFile>(std::move(f));
  }
  bool RenameFile(const std::string& from, const std::string& to, std::string* error) override {
    return base_->RenameFile(from, to, error);
  }
  bool RemoveFile(const std::string& path, std::string* error) override { return base_->RemoveFile(path, error); }
  bool CreateDir(const std::string& path, std::string* error) override { return base_->CreateDir(path, error); }
  bool CreateUniqueDir(const std::string& prefix, std::string* path, std::string* error) override {
    return base_->CreateUniqueDir(prefix, path, error);
  }
  bool RemoveDirRecursively(const std::string& path, std::string* error) override {
    return base_->RemoveDirRecursively(path, error);
  }
  bool SyncDir(const std::string&, std::string*) override { return true; }
  bool SyncFileSystem(const std::string&, std::string*) override { return true; }
  bool CopyFile(const std::string& from, const std::string& to, std::string* e) override {
    return base_->CopyFile(from, to, e);
  }
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  bool IsNonEmptyDir(const std::string& path) override { return base_->IsNonEmptyDir(path); }
  bool SetMtimeMs(const std::string& path, int64_t mtime_ms, std::string* error) override {
    return base_->SetMtimeMs(path, mtime_ms, error);
  }

 private:
  Env* base_ = Env::Default();
};

std::string Describe(const SalvageResult& r) {
  std::string s = "kept " + std::to_string(r.segments_kept) + " segments, " + std::to_string(r.batches_kept) +
                  " batches, log end " + std::to_string(r.log_end_offset) + "\n";
  for (const SalvageDrop& d : r.dropped) {
    s += "  dropped " + d.file + " @" + std::to_string(d.position) + " +" + std::to_string(d.bytes) + " batches " +
         std::to_string(d.batches) + " offsets " + (d.first_offset ? std::to_string(*d.first_offset) : "-") + ".." +
         (d.last_offset ? std::to_string(*d.last_offset) : "-") + (d.whole_segment ? " whole" : "") + ": " + d.reason +
         "\n";
  }
  return s;
}

// The .log files of a directory in log order (base offset = file name).
std::vector<std::string> LogFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.size() == 24 && n.compare(20, 4, ".log") == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What salvage must keep and drop for one case, from Kafka's dump of the source.
struct Expected {
  // The first damaged byte in log order: (segment file in the damaged copy, position), or none when no
  // .log byte was damaged. Salvage truncates there: `stop` = the start of the batch holding that byte.
  std::optional<std::string> stop_file;
  uint64_t stop = 0;
  const oracle::DumpBatch* damaged_batch = nullptr;  // the batch holding the first damaged byte, if any
  bool framing_intact = false;  // only CRC-covered bytes changed: every batch from there on can be framed
  // Only bytes outside the CRC that hold offsets or the leader epoch changed, in the log's last batch.
  bool undetectable = false;
};

// Whether [at, at+length) touches [from, to).
bool Touches(uint64_t at, uint64_t length, uint64_t from, uint64_t to) {
  return at < to && at + std::max<uint64_t>(length, 1) > from;
}

// The parameter: a kafka-oracle partition directory (its dump is <dir>.dump.txt beside it).
class SalvageCorpusTest : public ::testing::TestWithParam<std::string> {};

void CheckCase(const DamageCorpus& corpus, const DamageCase& c) {
  SCOPED_TRACE(c.name + ": " + c.what);
  const oracle::OracleDump& dump = corpus.dump();
  test::TempDir tmp("salvage-corpus", test::ScratchParent());
  const std::string in = corpus.Materialise(c, tmp.path() + "/in");
  const std::string out = tmp.path() + "/out";
  const auto before = test::SnapshotFiles(in);
  const std::vector<std::string> logs = LogFiles(in);

  SalvageOptions options;
  SalvageResult result;
  std::string error;
  NoSyncEnv env;
  ASSERT_TRUE(SalvagePartition(&env, in, out, options, &result, &error)) << error;
  SCOPED_TRACE(Describe(result));

  // (d) the input is untouched.
  EXPECT_TRUE(test::SnapshotFiles(in) == before) << "salvage modified its input";

  // (a) the copy verifies clean.
  ASSERT_FALSE(result.out_partition_dir.empty());
  const std::string part = result.out_partition_dir;
  {
    CollectingSink sink;
    VerifyStats st = VerifyPath(part, {}, &sink);
    for (const Problem& p : sink.problems) {
      if (p.severity != Severity::kInfo) {
        ADD_FAILURE() << "salvaged copy: " << SeverityName(p.severity) << " " << p.file << ":" << p.position << " "
                      << p.check << ": " << p.message;
      }
    }
    EXPECT_FALSE(st.unreadable);
  }

  // Where the damage lies in log order.
  Expected want;
  if (c.group == "segment-rename") {
    // The renamed segment's first batch no longer fits where its name puts it: the first "damaged"
    // byte is the first byte of the first segment (in the new log order) whose offsets conflict with
    // the name or the segment before it; batches of segments before the renamed one are intact.
    want.stop_file = c.group == "segment-rename" && c.name == "segment-rename/overlap"
                         ? std::optional<std::string>()  // decided below: salvage may keep either side
                         : std::optional<std::string>(c.file);
  } else if (c.DamagesLog() && c.changed) {
    const oracle::DumpSegment& seg = dump.segments[c.segment];
    if (c.batch >= 0) {
      want.damaged_batch = &seg.batches[c.batch];
      if (!(c.truncated && c.at == 0)) {  // a cut at a batch boundary leaves a well-formed, shorter log
        want.stop_file = c.file;
        want.stop = want.damaged_batch->position;
      }
      const bool last_batch =
          size_t(c.segment) + 1 == dump.segments.size() && size_t(c.batch) + 1 == seg.batches.size();
      want.undetectable =
          last_batch && !c.truncated && !Touches(c.at, c.length, 8, 12) && !Touches(c.at, c.length, 16, ~uint64_t(0));
      // Only bytes that leave every batch framed changed (the CRC and what it covers, or baseOffset).
      want.framing_intact = !c.truncated && (c.at >= 17 || c.at + c.length <= 8) &&
                            fs::file_size(in + "/" + c.file) == seg.size &&
                            (c.group == "flip-batch-byte" || c.group == "flip-payload" || c.group == "record-field");
    } else if (!c.truncated) {
      want.stop_file = c.file;  // bytes added after the last batch
      want.stop = c.position;
    }
  }

  if (want.undetectable && result.dropped.empty()) want.stop_file.reset();

  // (b) every batch before the damage is in the copy, byte for byte at the same position.
  const std::string source = corpus.source();
  std::map<std::string, std::string> out_logs;
  for (const std::string& f : LogFiles(part)) out_logs[f] = test::ReadAll(part + "/" + f);
  bool past_damage = false;
  size_t expected_kept = 0;
  for (const oracle::DumpSegment& seg : dump.segments) {
    if (c.group == "segment-rename") {
      // Only the segments named below the renamed one keep their place in log order.
      if (seg.file >= c.file || seg.file == dump.segments.back().file) break;
    }
    if (want.stop_file && seg.file > *want.stop_file) past_damage = true;
    if (past_damage) break;
    const std::string src = test::ReadAll(source + "/" + seg.file);
    const std::string damaged = test::ReadAll(in + "/" + seg.file);
    for (const oracle::DumpBatch& b : seg.batches) {
      const bool in_damaged_segment = want.stop_file && seg.file == *want.stop_file;
      if (in_damaged_segment && b.position + b.size > want.stop) break;
      if (b.position + b.size > damaged.size()) break;  // cut away by the damage itself
      if (c.removed && c.file == seg.file) break;
      ++expected_kept;
      auto it = out_logs.find(seg.file);
      ASSERT_NE(it, out_logs.end()) << seg.file << " is not in the salvaged copy; it held offsets " << b.base_offset
                                    << ".. before the damage";
      ASSERT_GE(it->second.size(), b.position + b.size)
          << seg.file << ": the batch at " << b.position << " (offsets " << b.base_offset << ".." << b.last_offset
          << ") before the damage was lost";
      // Batches before the first damaged byte are Kafka's bytes; a batch salvage cannot tell is damaged
      // (want.undetectable) is kept as the input has it.
      const bool before_damage = seg.file != c.file || b.position + b.size <= c.position;
      EXPECT_TRUE(it->second.compare(b.position, b.size, before_damage ? src : damaged, b.position, b.size) == 0)
          << seg.file << ": the batch at " << b.position << " is not byte-identical to "
          << (before_damage ? "Kafka's" : "the input's");
    }
  }

  // (c) the report.
  // Kept counts agree with the copy.
  int out_batches = 0;
  int64_t last_offset = -1;
  for (const auto& [name, bytes] : out_logs) {
    LogReader reader(part + "/" + name, AsBytes(bytes), nullptr);
    BatchView b;
    while (reader.Next(&b)) {
      ++out_batches;
      last_offset = b.header.last_offset;
    }
  }
  EXPECT_EQ(result.batches_kept, out_batches);
  EXPECT_EQ(result.segments_kept, int(out_logs.size()));
  if (last_offset >= 0) {
    EXPECT_EQ(result.log_end_offset, last_offset + 1);
  }
  if (c.group != "segment-rename") {
    EXPECT_EQ(size_t(result.batches_kept), expected_kept) << "kept batches";
  }

  // Drops: at most one truncation, then every later segment whole, each consistent with the input.
  const SalvageDrop* cut = nullptr;
  for (size_t i = 0; i < result.dropped.size(); ++i) {
    const SalvageDrop& d = result.dropped[i];
    const std::string name = fs::path(d.file).filename().string();
    ASSERT_TRUE(fs::exists(in + "/" + name)) << d.file;
    const uint64_t size = fs::file_size(in + "/" + name);
    EXPECT_EQ(d.position + d.bytes, size) << name << ": a drop runs to the end of its file";
    if (d.whole_segment) {
      EXPECT_EQ(d.position, 0u) << name;
      // A segment goes whole after a truncation, or first when its name conflicts with the log before it.
      EXPECT_TRUE(i > 0 || cut != nullptr || c.group == "segment-rename")
          << name << ": a whole segment dropped with no truncation before it";
      EXPECT_EQ(out_logs.count(name), 0u) << name << " dropped whole but in the copy";
    } else {
      EXPECT_EQ(cut, nullptr) << "two truncations";
      EXPECT_EQ(i, 0u) << "the truncation is the first drop";
      cut = &d;
      auto it = out_logs.find(name);
      ASSERT_NE(it, out_logs.end()) << name << " truncated but absent from the copy";
      EXPECT_EQ(it->second.size(), d.position) << name << ": the copy keeps exactly the bytes before the drop";
      EXPECT_TRUE(it->second == test::ReadAll(in + "/" + name).substr(0, d.position)) << name;
    }
  }
  if (!result.dropped.empty()) {
    // Every segment after the truncated one is reported whole (Kafka's recovery deletes them).
    const std::string cut_name = fs::path(result.dropped[0].file).filename().string();
    std::vector<std::string> later;
    for (const std::string& l : logs) {
      if (l > cut_name) later.push_back(l);
    }
    ASSERT_EQ(result.dropped.size(), 1 + later.size());
    for (size_t i = 0; i < later.size(); ++i) {
      EXPECT_EQ(fs::path(result.dropped[1 + i].file).filename().string(), later[i]);
    }
  }

  if (c.group == "segment-rename") {
    // The renamed segment's offsets conflict with its name or its neighbour: something is dropped, from
    // the start of a segment.
    ASSERT_FALSE(result.dropped.empty()) << "nothing dropped although segment names and offsets conflict";
    EXPECT_EQ(result.dropped[0].position, 0u);
    if (want.stop_file) {
      EXPECT_EQ(fs::path(result.dropped[0].file).filename().string(), *want.stop_file);
    }
    return;
  }
  if (!want.stop_file) {
    EXPECT_TRUE(result.dropped.empty()) << "dropped data although every .log batch is intact";
    return;
  }
  if (cut == nullptr && want.undetectable) {
    // Only baseOffset or partitionLeaderEpoch bytes (outside the CRC) of the log's last batch changed
    // to plausible values: no later batch contradicts them, so nothing can tell the damage.
    return;
  }
  ASSERT_NE(cut, nullptr) << "the damaged batch was not dropped";
  EXPECT_EQ(fs::path(cut->file).filename().string(), *want.stop_file);
  EXPECT_EQ(cut->position, want.stop) << "the drop starts at the damaged batch (Kafka's dump)";
  const oracle::DumpSegment& seg = dump.segments[c.segment];
  if (want.damaged_batch != nullptr) {
    const oracle::DumpBatch& b = *want.damaged_batch;
    const int from_damaged = int(seg.batches.size()) - c.batch;
    EXPECT_LE(cut->batches, from_damaged) << "more batches counted than the segment held from the damage on";
    const bool offsets_damaged = Touches(c.at, c.length, 0, 8) || Touches(c.at, c.length, 23, 27);
    if (want.framing_intact && Touches(c.at, c.length, 0, 8) && c.length <= 8 && from_damaged > 1) {
      // A lying baseOffset: its offsets are not reported; the dropped offsets start at the next batch.
      EXPECT_EQ(cut->batches, from_damaged);
      EXPECT_EQ(cut->first_offset, std::optional<int64_t>(seg.batches[c.batch + 1].base_offset));
      EXPECT_EQ(cut->last_offset, std::optional<int64_t>(seg.batches.back().last_offset));
    } else if (want.framing_intact) {
      EXPECT_EQ(cut->batches, from_damaged);
      EXPECT_EQ(cut->first_offset, std::optional<int64_t>(b.base_offset));
      if (!offsets_damaged) {
        EXPECT_EQ(cut->last_offset, std::optional<int64_t>(seg.batches.back().last_offset));
      }
    } else if (cut->first_offset && !offsets_damaged) {
      EXPECT_GE(*cut->first_offset, b.base_offset);
      EXPECT_LE(*cut->first_offset, seg.batches.back().last_offset);
      EXPECT_LE(*cut->last_offset, seg.batches.back().last_offset);
    }
    if (c.truncated && c.at >= 8) {
      EXPECT_EQ(cut->first_offset, std::optional<int64_t>(b.base_offset));
    }
  } else {
    EXPECT_EQ(cut->batches, 0) << "bytes past the last batch hold no batch";
  }
  // Later segments: their batch counts and offsets are Kafka's.
  for (size_t i = 1; i < result.dropped.size(); ++i) {
    const SalvageDrop& d = result.dropped[i];
    const std::string name = fs::path(d.file).filename().string();
    for (const oracle::DumpSegment& s : dump.segments) {
      if (s.file != name || s.batches.empty()) continue;
      EXPECT_EQ(d.batches, int(s.batches.size())) << name;
      EXPECT_EQ(d.first_offset, std::optional<int64_t>(s.batches.front().base_offset)) << name;
      EXPECT_EQ(d.last_offset, std::optional<int64_t>(s.batches.back().last_offset)) << name;
    }
  }
}

TEST_P(SalvageCorpusTest, EveryCaseSalvagesClean) {
  const std::string dir = kOracle + "/" + GetParam();
  DamageCorpus corpus;
  std::string error;
  ASSERT_TRUE(DamageCorpus::Build(dir, dir + ".dump.txt", &corpus, &error)) << error;
  ASSERT_GT(corpus.cases().size(), 100u);
  const char* only = std::getenv("KLF_DAMAGE_CASE");  // a name prefix, to debug one case
  for (const DamageCase& c : corpus.cases()) {
    if (only != nullptr && c.name.rfind(only, 0) != 0) continue;
    CheckCase(corpus, c);
  }
}

TEST_P(SalvageCorpusTest, UndamagedCopyKeepsEverything) {
  const std::string dir = kOracle + "/" + GetParam();
  DamageCorpus corpus;
  std::string error;
  ASSERT_TRUE(DamageCorpus::Build(dir, dir + ".dump.txt", &corpus, &error)) << error;
  test::TempDir tmp("salvage-corpus", test::ScratchParent());
  SalvageResult result;
  NoSyncEnv env;
  ASSERT_TRUE(SalvagePartition(&env, dir, tmp.path() + "/out", {}, &result, &error)) << error;
  EXPECT_TRUE(result.dropped.empty()) << Describe(result);
  size_t batches = 0;
  for (const oracle::DumpSegment& s : corpus.dump().segments) {
    batches += s.batches.size();
    EXPECT_EQ(test::ReadAll(result.out_partition_dir + "/" + s.file), test::ReadAll(dir + "/" + s.file)) << s.file;
  }
  EXPECT_EQ(size_t(result.batches_kept), batches);
  EXPECT_EQ(result.log_end_offset, corpus.dump().segments.back().batches.back().last_offset + 1);
}

INSTANTIATE_TEST_SUITE_P(Oracle, SalvageCorpusTest,
                         ::testing::Values(std::string("a-keyed/keyed-none-0"), std::string("b-txn/txn-0")),
                         [](const auto& info) { return info.index == 0 ? std::string("Keyed") : std::string("Txn"); });

}  // namespace
}  // namespace klf
