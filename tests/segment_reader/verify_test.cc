// klf verify (segment_reader/verify.h): the damage corpus and the clean fixtures.
//
// LevelDB corruption_test.cc style: copy a directory Kafka wrote (kafka-oracle fixtures), damage one
// thing at a chosen byte of a chosen file, verify, and assert the problem reported (file, byte
// position, check, severity). Batch positions and index entries come from Kafka's own dump of the
// fixture (<dir>.dump.txt), not from our reader. And: zero errors on every directory Kafka or a real
// broker wrote, with the inputs byte-identical afterwards.
#include "segment_reader/verify.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "segment_reader/bytes.h"
#include "segment_reader/crc.h"
#include "segment_reader/layout.h"
#include "segment_reader/producer_snapshot.h"
#include "tests/support/oracle_dump.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

const std::string kOracle = std::string(KLF_FIXTURES_DIR) + "/kafka-oracle";
const std::string kReal = std::string(KLF_FIXTURES_DIR) + "/real";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "klf-verify-XXXXXX").string();
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

// Every regular file under `root` with its contents (inputs must be byte-identical after a run).
std::map<std::string, std::string> Snapshot(const std::string& root) {
  std::map<std::string, std::string> out;
  for (auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out[e.path().string()] = ReadAll(e.path().string());
  }
  return out;
}

struct VerifyRun {
  VerifyStats stats;
  std::vector<Problem> problems;

  size_t Count(Severity s) const {
    size_t n = 0;
    for (const Problem& p : problems) n += p.severity == s;
    return n;
  }
  // Problems about `file` (path suffix) with `check`.
  std::vector<Problem> Find(const std::string& file_suffix, const std::string& check) const {
    std::vector<Problem> out;
    for (const Problem& p : problems) {
      if (p.check == check && p.file.size() >= file_suffix.size() &&
          p.file.compare(p.file.size() - file_suffix.size(), file_suffix.size(), file_suffix) == 0) {
        out.push_back(p);
      }
    }
    return out;
  }
  bool Has(const std::string& file_suffix, uint64_t position, const std::string& check, Severity severity) const {
    for (const Problem& p : Find(file_suffix, check)) {
      if (p.position == position && p.severity == severity) return true;
    }
    return false;
  }
  std::string Dump() const {
    std::string s;
    for (const Problem& p : problems) {
      s += std::string(SeverityName(p.severity)) + " " + p.file + ":" + std::to_string(p.position) + " " + p.check +
           ": " + p.message + "\n";
    }
    return s;
  }
};

VerifyRun Verify(const std::string& path, int threads = 0) {
  VerifyRun r;
  CollectingSink sink;
  VerifyOptions options;
  options.threads = threads;
  r.stats = VerifyPath(path, options, &sink);
  r.problems = std::move(sink.problems);
  return r;
}

// A copy of a fixture partition directory, with Kafka's dump of it.
class DamageTest : public ::testing::Test {
 protected:
  void Load(const std::string& fixture_dir, const std::string& dump_file) {
    dir_ = tmp_.path() + "/" + fs::path(fixture_dir).filename().string();
    fs::copy(fixture_dir, dir_, fs::copy_options::recursive);
    std::string error;
    ASSERT_TRUE(oracle::ParseOracleDump(dump_file, &dump_, &error)) << error;
  }
  void LoadKeyed() { Load(kOracle + "/a-keyed/keyed-none-0", kOracle + "/a-keyed/keyed-none-0.dump.txt"); }
  void LoadTxn() { Load(kOracle + "/b-txn/txn-0", kOracle + "/b-txn/txn-0.dump.txt"); }

  std::string File(const std::string& name) const { return dir_ + "/" + name; }
  void Flip(const std::string& name, uint64_t position, uint8_t mask = 0xFF) {
    std::string bytes = ReadAll(File(name));
    ASSERT_LT(position, bytes.size());
    bytes[position] = char(uint8_t(bytes[position]) ^ mask);
    WriteAll(File(name), bytes);
  }
  void Truncate(const std::string& name, uint64_t size) { fs::resize_file(File(name), size); }
  void Put32(const std::string& name, uint64_t position, uint32_t v) {
    std::string bytes = ReadAll(File(name));
    for (int i = 0; i < 4; ++i) bytes[position + i] = char(v >> (24 - 8 * i));
    WriteAll(File(name), bytes);
  }
  void Put64(const std::string& name, uint64_t position, uint64_t v) {
    Put32(name, position, uint32_t(v >> 32));
    Put32(name, position + 4, uint32_t(v));
  }

  TempDir tmp_;
  std::string dir_;
  oracle::OracleDump dump_;
};

TEST_F(DamageTest, UndamagedCopyIsClean) {
  LoadKeyed();
  VerifyRun r = Verify(dir_);
  EXPECT_EQ(r.problems.size(), 0u) << r.Dump();
  EXPECT_EQ(r.stats.batches, 15u);
  EXPECT_EQ(r.stats.files_checked, 14u);  // 3 logs, 3 indexes, 3 time indexes, 3 snapshots, 2 text files
}

TEST_F(DamageTest, FlippedByteInEveryHeaderFieldAndPayload) {
  LoadKeyed();
  // A batch in the middle of the middle segment: 00000000000000000014.log, batch at 133 (16..18).
  const std::string log = "00000000000000000014.log";
  const oracle::DumpBatch& b = dump_.segments[1].batches[1];
  ASSERT_EQ(b.position, 133u);
  const std::string pristine = ReadAll(File(log));
  for (uint64_t at = 0; at < b.size; ++at) {
    WriteAll(File(log), pristine);
    Flip(log, b.position + at);
    VerifyRun r = Verify(dir_);
    SCOPED_TRACE("flipped byte " + std::to_string(at) + " of the batch\n" + r.Dump());
    std::string expected_check;
    uint64_t expected_pos = b.position;
    if (at < 8) {
      // baseOffset is outside the CRC: the offsets no longer follow the previous batch (or the file
      // name) -> offset-order from the reader.
      expected_check = "offset-order";
    } else if (at < 12) {
      expected_check = "batch-size";  // the length field lies
      expected_pos = b.position + 8;
    } else if (at < 16) {
      // partitionLeaderEpoch is outside the CRC: epoch 0 -> negative or above the next batches'.
      expected_check = at == 12 ? "leader-epoch" : "leader-epoch-order";
      if (at == 12) expected_pos = b.position + 12;
    } else if (at == 16) {
      expected_check = "unknown-magic";
      expected_pos = b.position + 16;
    } else {
      expected_check = "batch-crc";  // everything from the CRC field on is covered by it
      expected_pos = b.position + 17;
    }
    EXPECT_GE(r.Count(Severity::kError), 1u);
    bool found = false;
    for (const Problem& p : r.problems) {
      if (at >= 8 && at < 12 && p.check == "batch-crc" && p.position == b.position + 17) found = true;  // longer
      if (p.check == expected_check && p.severity == Severity::kError &&
          (p.position == expected_pos || expected_check == "offset-order" || expected_check == "leader-epoch-order")) {
        found = true;
      }
    }
    EXPECT_TRUE(found) << "expected " << expected_check << " at " << expected_pos;
    // The damage is confined: no problem names another segment's log.
    for (const Problem& p : r.problems) {
      if (p.severity == Severity::kError) {
        EXPECT_TRUE(p.file.find("00000000000000000014.") != std::string::npos ||
                    p.file.find("00000000000000000024.") != std::string::npos)
            << p.file;
      }
    }
  }
}

TEST_F(DamageTest, CrcErrorIsTheOnlyProblemOfAPayloadFlip) {
  LoadKeyed();
  const oracle::DumpBatch& b = dump_.segments[0].batches[2];  // 5..6 at 190
  Flip("00000000000000000000.log", b.position + 70, 0x01);
  VerifyRun r = Verify(dir_);
  ASSERT_EQ(r.problems.size(), 1u) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000000.log", b.position + 17, "batch-crc", Severity::kError)) << r.Dump();
}

TEST_F(DamageTest, TruncationAtEveryBoundaryAndMidField) {
  LoadKeyed();
  for (size_t s = 0; s < dump_.segments.size(); ++s) {
    const oracle::DumpSegment& seg = dump_.segments[s];
    const bool last = s + 1 == dump_.segments.size();
    const std::string pristine = ReadAll(File(seg.file));
    for (const oracle::DumpBatch& b : seg.batches) {
      // Mid-field cuts: inside the length field, the magic, the CRC, the header, the records.
      for (uint64_t cut : {uint64_t(4), uint64_t(10), uint64_t(17), uint64_t(19), uint64_t(40), uint64_t(61),
                           b.size - 1}) {
        if (cut >= b.size) continue;
        WriteAll(File(seg.file), pristine);
        Truncate(seg.file, b.position + cut);
        VerifyRun r = Verify(dir_);
        SCOPED_TRACE(seg.file + " cut at " + std::to_string(b.position + cut) + "\n" + r.Dump());
        // Kafka's recovery truncates at the start of the torn batch: that is the position reported,
        // an error unless it is the active (last) segment.
        // (A cut within the first bytes can leave only zeros of the base offset: a zero tail.)
        const Severity sev = last ? Severity::kWarning : Severity::kError;
        EXPECT_TRUE(r.Has(seg.file, b.position, "truncated-tail", sev) || r.Has(seg.file, b.position, "zero-tail", sev));
      }
      // Boundary cut: the log is well-formed, but what the indexes and the next segment or the
      // checkpoints say about the lost batches gives it away.
      if (b.position == 0) continue;
      WriteAll(File(seg.file), pristine);
      Truncate(seg.file, b.position);
      VerifyRun r = Verify(dir_);
      SCOPED_TRACE(seg.file + " cut at boundary " + std::to_string(b.position) + "\n" + r.Dump());
      EXPECT_FALSE(r.problems.empty());
      for (const Problem& p : r.problems) EXPECT_NE(p.check, "truncated-tail");
      // Nothing at all is wrong with the log file itself; what gives the cut away is named.
      bool seen = false;
      for (const Problem& p : r.problems) seen |= p.severity != Severity::kInfo || p.check == "offset-gap";
      EXPECT_TRUE(seen);
    }
    WriteAll(File(seg.file), pristine);
  }
  // A boundary cut that loses indexed batches: the index entries now point past the log.
  Truncate("00000000000000000000.log", 190);
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has("00000000000000000000.index", 4, "offset-index-position", Severity::kError)) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000000.index", 12, "offset-index-position", Severity::kError)) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000000.timeindex", 8, "time-index-offset", Severity::kError)) << r.Dump();
}

TEST_F(DamageTest, LyingLengths) {
  LoadKeyed();
  const std::string log = "00000000000000000000.log";
  const oracle::DumpBatch& b = dump_.segments[0].batches[1];  // at 102, 88 bytes
  const std::string pristine = ReadAll(File(log));
  for (uint32_t length : {uint32_t(0), uint32_t(13), uint32_t(b.size - 12 - 1), uint32_t(b.size - 12 + 1),
                          uint32_t(b.size - 12 + 100), uint32_t(0x7fffffff), uint32_t(0xffffffff)}) {
    WriteAll(File(log), pristine);
    Put32(log, b.position + 8, length);
    VerifyRun r = Verify(dir_);
    SCOPED_TRACE("length " + std::to_string(length) + "\n" + r.Dump());
    bool found = false;
    for (const Problem& p : r.problems) {
      if (p.file == File(log) && p.severity == Severity::kError && p.position >= b.position &&
          p.position < b.position + b.size && (p.check == "batch-size" || p.check == "batch-crc")) {
        found = true;
      }
    }
    EXPECT_TRUE(found);
    // The reader resynchronises: the next batches are still read (their index entries match).
    EXPECT_TRUE(r.Find("00000000000000000000.index", "offset-index-position").empty());
  }
}

TEST_F(DamageTest, ZeroFilledTails) {
  LoadKeyed();
  // Active segment: a preallocated tail after a crash is routine (warning), with the bytes lost.
  std::string last = ReadAll(File("00000000000000000024.log"));
  WriteAll(File("00000000000000000024.log"), last + std::string(1 << 20, '\0'));
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has("00000000000000000024.log", last.size(), "zero-tail", Severity::kWarning)) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 0u) << r.Dump();
  auto tail = r.Find("00000000000000000024.log", "zero-tail");
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_NE(tail[0].message.find(std::to_string(1 << 20)), std::string::npos) << tail[0].message;
  // A rolled segment is never torn: the same tail there is an error.
  WriteAll(File("00000000000000000024.log"), last);
  std::string first = ReadAll(File("00000000000000000000.log"));
  WriteAll(File("00000000000000000000.log"), first + std::string(4096, '\0'));
  r = Verify(dir_);
  EXPECT_TRUE(r.Has("00000000000000000000.log", first.size(), "zero-tail", Severity::kError)) << r.Dump();
  // Zeros over the last batches (a crash before the data reached the disk).
  WriteAll(File("00000000000000000000.log"), first);
  std::string zeroed = last.substr(0, 190) + std::string(last.size() - 190, '\0');
  WriteAll(File("00000000000000000024.log"), zeroed);
  r = Verify(dir_);
  EXPECT_TRUE(r.Has("00000000000000000024.log", 190, "zero-tail", Severity::kWarning)) << r.Dump();
  // ... and its index entries now point into that tail.
  EXPECT_TRUE(r.Has("00000000000000000024.index", 4, "offset-index-position", Severity::kWarning)) << r.Dump();
}

TEST_F(DamageTest, IndexEntriesPastTheLogOutOfOrderOrOffBoundary) {
  LoadKeyed();
  const std::string index = "00000000000000000000.index";  // (6,190) (9,323) (13,513)
  ASSERT_EQ(dump_.offset_indexes[0].offset_position.size(), 3u);
  const std::string pristine = ReadAll(File(index));
  // Past the end of the log.
  Put32(index, 16 + 4, 100000);  // entry 2's position
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has(index, 16 + 4, "offset-index-position", Severity::kError)) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 1u) << r.Dump();
  // Not at a batch boundary.
  WriteAll(File(index), pristine);
  Put32(index, 8 + 4, 324);
  r = Verify(dir_);
  EXPECT_TRUE(r.Has(index, 12, "offset-index-position", Severity::kError)) << r.Dump();
  // Offset below the batch at its position.
  WriteAll(File(index), pristine);
  Put32(index, 8, 6);  // entry 1: relative offset 6 -> position 323 holds 7..9
  r = Verify(dir_);
  EXPECT_TRUE(r.Has(index, 8, "offset-index-offset", Severity::kError)) << r.Dump();
  // Offset beyond the segment.
  WriteAll(File(index), pristine);
  Put32(index, 16, 40);
  r = Verify(dir_);
  EXPECT_TRUE(r.Has(index, 16, "offset-index-offset", Severity::kError)) << r.Dump();
  // Out of order: entries 0 and 1 swapped.
  WriteAll(File(index), pristine.substr(8, 8) + pristine.substr(0, 8) + pristine.substr(16));
  r = Verify(dir_);
  EXPECT_TRUE(r.Has(index, 8, "offset-index-order", Severity::kError)) << r.Dump();
  // A multi-batch chunk entry (offset = the chunk's last offset, position = its first batch) is fine:
  // kafka-dump-log --verify-index-only calls it a mismatch (dump-log-segments.md §7.3).
  WriteAll(File(index), pristine);
  Put32(index, 0, 9);   // (9, 190): batches 5..6 and 7..9 appended as one chunk
  Put32(index, 8, 11);  // (11, 323)
  r = Verify(dir_);
  EXPECT_TRUE(r.Find(index, "offset-index-offset").empty()) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 0u) << r.Dump();
}

TEST_F(DamageTest, TimeIndexDamage) {
  LoadKeyed();
  const std::string ti = "00000000000000000000.timeindex";  // (7000,6) (10000,9) (14000,13)
  const std::string pristine = ReadAll(File(ti));
  Put64(ti, 12, 1700000009000);  // entry 1: not the max timestamp up to offset 9
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has(ti, 12, "time-index-timestamp", Severity::kError)) << r.Dump();
  WriteAll(File(ti), pristine);
  Put64(ti, 12, 1700000001000);  // below entry 0: not monotonic
  r = Verify(dir_);
  EXPECT_TRUE(r.Has(ti, 12, "time-index-order", Severity::kError)) << r.Dump();
  WriteAll(File(ti), pristine);
  Put32(ti, 24 + 8, 30);  // entry 2: offset past the segment
  r = Verify(dir_);
  EXPECT_TRUE(r.Has(ti, 24 + 8, "time-index-offset", Severity::kError)) << r.Dump();
}

TEST_F(DamageTest, MissingIndexFilesAreRebuildableWarnings) {
  LoadKeyed();
  fs::remove(File("00000000000000000014.index"));
  fs::remove(File("00000000000000000014.timeindex"));
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has("00000000000000000014.log", 0, "missing-index", Severity::kWarning)) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000014.log", 0, "missing-time-index", Severity::kWarning)) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 0u) << r.Dump();
}

TEST_F(DamageTest, SnapshotWithBadCrc) {
  LoadTxn();
  Flip("00000000000000000015.snapshot", 20, 0x01);
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has("00000000000000000015.snapshot", 2, "snapshot-crc", Severity::kError)) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 1u) << r.Dump();
}

TEST_F(DamageTest, SnapshotDisagreeingWithTheLog) {
  LoadTxn();
  // 00000000000000000007.snapshot: producer 5001 (entry 1) has an open transaction from offset 3.
  // Rewrite its currentTxnFirstOffset and fix the CRC: the content is well-formed but wrong.
  std::string bytes = ReadAll(File("00000000000000000007.snapshot"));
  ProducerSnapshot snap;
  CollectingSink quiet;
  ASSERT_TRUE(ParseProducerSnapshot("s", AsBytes(bytes), 7, &snap, &quiet));
  ASSERT_EQ(snap.entries.size(), 2u);
  size_t i = snap.entries[0].producer_id == 5001 ? 0 : 1;
  ASSERT_EQ(snap.entries[i].current_txn_first_offset, 3);
  snap.entries[i].current_txn_first_offset = -1;
  WriteAll(File("00000000000000000007.snapshot"), EncodeProducerSnapshot(snap.entries));
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has("00000000000000000007.snapshot", 10 + 46 * i, "producer-snapshot", Severity::kWarning))
      << r.Dump();
}

TEST_F(DamageTest, TxnIndexEntryWithoutMarker) {
  LoadTxn();
  const std::string txn = "00000000000000000007.txnindex";  // (5001, 3, 10, 11)
  ASSERT_EQ(dump_.txn_indexes.size(), 1u);
  Put64(txn, 18, 9);  // lastOffset 9 is a data batch, not a marker
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has(txn, 18, "txn-index-marker", Severity::kError)) << r.Dump();
  // ... and the real ABORT at 10 is now unindexed.
  EXPECT_EQ(r.Find("00000000000000000007.log", "txn-index-missing").size(), 1u) << r.Dump();
}

TEST_F(DamageTest, TxnIndexMissingOrLate) {
  LoadTxn();
  const std::string txn = "00000000000000000007.txnindex";
  const std::string pristine = ReadAll(File(txn));
  Put64(txn, 10, 8);  // firstOffset 8: hides the aborted data at 3
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has(txn, 10, "txn-index-first-offset", Severity::kError)) << r.Dump();
  fs::remove(File(txn));
  r = Verify(dir_);
  // The ABORT marker of producer 5001 at offset 10 is the batch at 214 of 00000000000000000007.log.
  EXPECT_TRUE(r.Has("00000000000000000007.log", 214, "txn-index-missing", Severity::kError)) << r.Dump();
  // A COMMIT marker named by an entry.
  WriteAll(File(txn), pristine);
  Put64(txn, 18, 7);  // offset 7 is producer 5000's COMMIT
  r = Verify(dir_);
  EXPECT_TRUE(r.Has(txn, 18, "txn-index-marker", Severity::kError)) << r.Dump();
}

TEST_F(DamageTest, LeftoverSwapCleanedAndDeletedFiles) {
  LoadKeyed();
  fs::copy_file(File("00000000000000000014.log"), File("00000000000000000014.log.swap"));
  fs::copy_file(File("00000000000000000000.index"), File("00000000000000000000.index.deleted"));
  fs::copy_file(File("00000000000000000000.log"), File("00000000000000000000.log.cleaned"));
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has("00000000000000000014.log.swap", 0, "leftover-file", Severity::kWarning)) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000000.index.deleted", 0, "leftover-file", Severity::kWarning)) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000000.log.cleaned", 0, "leftover-file", Severity::kWarning)) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 0u) << r.Dump();
}

TEST_F(DamageTest, SegmentNameAndOverlap) {
  LoadKeyed();
  // The last segment (24..31) renamed to sort before the middle one (14..23): the middle segment now
  // starts below the end of the segment before it.
  for (const char* ext : {".log", ".index", ".timeindex"}) {
    fs::rename(File(std::string("00000000000000000024") + ext), File(std::string("00000000000000000010") + ext));
  }
  VerifyRun r = Verify(dir_);
  EXPECT_TRUE(r.Has("00000000000000000014.log", 0, "segment-overlap", Severity::kError)) << r.Dump();
  // Named above its first batch.
  TempDir other;
  std::string d = other.path() + "/keyed-none-0";
  fs::copy(kOracle + "/a-keyed/keyed-none-0", d, fs::copy_options::recursive);
  for (const char* ext : {".log", ".index", ".timeindex"}) {
    fs::rename(d + "/00000000000000000024" + ext, d + "/00000000000000000025" + ext);
  }
  r = Verify(d);
  EXPECT_TRUE(r.Has("00000000000000000025.log", 0, "segment-base-offset", Severity::kError)) << r.Dump();
}

TEST_F(DamageTest, RecordLevelDamageWithAValidCrc) {
  LoadKeyed();
  // Rewrite one header field of a batch and recompute its CRC: framing and CRC pass, so only the
  // record-level checks can see it.
  const std::string log = "00000000000000000000.log";
  const oracle::DumpBatch& b = dump_.segments[0].batches[0];  // 0..2, 3 records at 0
  const std::string pristine = ReadAll(File(log));
  auto rewrite = [&](uint64_t field, int width, uint64_t value) {
    std::string s = pristine;
    for (int i = 0; i < width; ++i) s[b.position + field + i] = char(value >> (8 * (width - 1 - i)));
    uint32_t crc = Crc32c(AsBytes(s).subspan(b.position + 21, b.size - 21));
    for (int i = 0; i < 4; ++i) s[b.position + 17 + i] = char(crc >> (24 - 8 * i));
    WriteAll(File(log), s);
    return Verify(dir_);
  };
  VerifyRun r = rewrite(57, 4, 4);  // recordCount 3 -> 4
  EXPECT_TRUE(!r.Find(log, "record-count").empty()) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 1u) << r.Dump();
  r = rewrite(35, 8, 1700000002500);  // maxTimestamp no longer the largest record timestamp
  EXPECT_TRUE(r.Has(log, b.position + 35, "batch-timestamp", Severity::kError)) << r.Dump();
  r = rewrite(23, 4, 1);  // lastOffsetDelta 2 -> 1: record 2 lies outside the batch
  EXPECT_TRUE(r.Has(log, b.position, "record-offset", Severity::kError)) << r.Dump();
  // lastOffsetDelta 2 -> 4: the batch claims offsets 3..4 as well, overlapping the next batch.
  r = rewrite(23, 4, 4);
  EXPECT_TRUE(!r.Find(log, "offset-order").empty()) << r.Dump();
}

TEST_F(DamageTest, RandomDamageNeverCrashes) {
  LoadTxn();
  std::mt19937 rng(12345);
  std::vector<std::string> files;
  for (auto& e : fs::directory_iterator(dir_)) files.push_back(e.path().filename().string());
  std::map<std::string, std::string> pristine;
  for (const std::string& f : files) pristine[f] = ReadAll(File(f));
  for (int round = 0; round < 300; ++round) {
    for (const auto& [f, bytes] : pristine) WriteAll(File(f), bytes);
    const std::string& f = files[rng() % files.size()];
    std::string bytes = pristine[f];
    if (bytes.empty()) continue;
    int kind = int(rng() % 3);
    if (kind == 0) {
      bytes[rng() % bytes.size()] ^= char(1 + rng() % 255);
    } else if (kind == 1) {
      bytes.resize(rng() % bytes.size());
    } else {
      size_t at = rng() % bytes.size();
      for (size_t k = at; k < std::min(bytes.size(), at + 8); ++k) bytes[k] = char(rng());
    }
    WriteAll(File(f), bytes);
    VerifyRun r = Verify(dir_);
    for (const Problem& p : r.problems) {
      EXPECT_FALSE(p.file.empty());
      EXPECT_FALSE(p.check.empty());
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Clean fixtures: zero errors, inputs untouched.

// Directories Kafka or a real broker wrote: every log dir or partition dir (not nested in another).
std::vector<std::string> DataDirs(const std::string& root) {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_directory()) continue;
    PathInfo info = ClassifyPath(it->path().string());
    if (info.kind == PathKind::kLogDir || info.kind == PathKind::kPartitionDir) {
      out.push_back(it->path().string());
      it.disable_recursion_pending();
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(VerifyFixtures, KafkaOracleHasNoErrors) {
  auto before = Snapshot(kOracle);
  std::vector<std::string> dirs = DataDirs(kOracle);
  ASSERT_GE(dirs.size(), 20u);
  bool saw_fetched_gap = false;
  for (const std::string& d : dirs) {
    VerifyRun r = Verify(d);
    EXPECT_EQ(r.Count(Severity::kError), 0u) << d << "\n" << r.Dump();
    EXPECT_EQ(r.Count(Severity::kWarning), 0u) << d << "\n" << r.Dump();
    EXPECT_FALSE(r.stats.unreadable) << d;
    for (const Problem& p : r.problems) {
      // Genuine findings: the only infos are the oracle's own `.dump.txt`/`.clean.txt` files next to
      // the data, and broker 2 of aborted-to-committed, which fetched the compacted leader log after it
      // came back: its never-cleaned segments have compaction gaps (fixtures README).
      if (p.check == "offset-gap") {
        EXPECT_NE(p.file.find("aborted-to-committed/broker2/"), std::string::npos) << p.file;
        saw_fetched_gap = true;
      } else {
        EXPECT_EQ(p.check, "unknown-file") << p.file << ": " << p.message;
      }
    }
  }
  EXPECT_TRUE(saw_fetched_gap);
  EXPECT_EQ(before, Snapshot(kOracle)) << "verify modified its input";
}

TEST(VerifyFixtures, RealBrokerDataHasNoErrors) {
  auto before = Snapshot(kReal);
  std::vector<std::string> dirs = DataDirs(kReal);
  ASSERT_GE(dirs.size(), 25u);
  // Warnings that are genuine findings about these copies (fixtures/real/PROVENANCE.md): files of
  // 4 MiB or more were not copied (the preallocated indexes of active segments, some active .log
  // files), so indexes are missing, index files are orphaned, and checkpoints (high watermark, leader
  // epochs) point past the data that is here; some partitions hold no segment at all.
  const std::set<std::string> expected_warnings = {"missing-index", "missing-time-index", "orphan-index",
                                                   "high-watermark", "leader-epoch-cache", "no-segments"};
  uint64_t batches = 0;
  for (const std::string& d : dirs) {
    VerifyRun r = Verify(d);
    batches += r.stats.batches;
    EXPECT_EQ(r.Count(Severity::kError), 0u) << d << "\n" << r.Dump();
    for (const Problem& p : r.problems) {
      if (p.severity == Severity::kWarning) EXPECT_TRUE(expected_warnings.count(p.check)) << p.file << " " << p.check;
    }
  }
  EXPECT_GT(batches, 200000u);
  EXPECT_EQ(before, Snapshot(kReal)) << "verify modified its input";
}

TEST(VerifyFixtures, ParallelAndSerialAgree) {
  std::string d = kReal + "/greenlemonT__kafka-temp/data/kafka";
  VerifyRun serial = Verify(d, 1);
  VerifyRun parallel = Verify(d, 4);
  EXPECT_EQ(serial.Dump(), parallel.Dump());
  EXPECT_EQ(serial.stats.batches, parallel.stats.batches);
  EXPECT_EQ(serial.stats.bytes_checked, parallel.stats.bytes_checked);
}

TEST(VerifyFixtures, UnreadableInputs) {
  VerifyRun r = Verify("/nonexistent/klf-verify");
  EXPECT_TRUE(r.stats.unreadable);
  TempDir t;
  fs::create_directories(t.path() + "/just-a-dir/sub");
  r = Verify(t.path() + "/just-a-dir/sub");
  EXPECT_TRUE(r.stats.unreadable);
}

}  // namespace
}  // namespace klf
