// klf verify (verify/verify.h): the damage corpus and the clean fixtures.
//
// LevelDB corruption_test.cc style: the damage corpus (tests/support/damage_corpus.h) damages a copy of a
// directory Kafka wrote (kafka-oracle fixtures) at a chosen byte of a chosen file, one case per fresh
// copy; each test verifies the cases of one group and asserts the problem reported (file, byte position,
// check, severity). Batch positions and index entries come from Kafka's own dump of the fixture
// (<dir>.dump.txt), not from our reader. And: zero errors on every directory Kafka or a real broker
// wrote, with the inputs byte-identical afterwards.
#include "verify/verify.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "segment_reader/bytes.h"
#include "segment_reader/layout.h"
#include "segment_reader/producer_snapshot.h"
#include "tests/support/damage_corpus.h"
#include "tests/support/oracle_dump.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using test::ReadAll;
using test::TempDir;

const std::string kOracle = std::string(KLF_FIXTURES_DIR) + "/kafka-oracle";
const std::string kReal = std::string(KLF_FIXTURES_DIR) + "/real";

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

VerifyRun Verify(const std::string& path, int threads = 0, size_t held_problems = VerifyOptions().held_problems) {
  VerifyRun r;
  CollectingSink sink;
  VerifyOptions options;
  options.threads = threads;
  options.held_problems = held_problems;
  r.stats = VerifyPath(path, options, &sink);
  r.problems = std::move(sink.problems);
  return r;
}

// The damage corpus of a fixture partition directory; Run() verifies one case in a fresh copy.
class DamageTest : public ::testing::Test {
 protected:
  void Load(const std::string& fixture_dir, const std::string& dump_file) {
    std::string error;
    ASSERT_TRUE(damage::DamageCorpus::Build(fixture_dir, dump_file, &corpus_, &error)) << error;
  }
  void LoadKeyed() { Load(kOracle + "/a-keyed/keyed-none-0", kOracle + "/a-keyed/keyed-none-0.dump.txt"); }
  void LoadTxn() { Load(kOracle + "/b-txn/txn-0", kOracle + "/b-txn/txn-0.dump.txt"); }
  const oracle::OracleDump& dump() const { return corpus_.dump(); }

  // The case named `name`; fails the test when the corpus lacks it.
  const damage::DamageCase& Case(const std::string& name) {
    const damage::DamageCase* c = corpus_.Find(name);
    if (c == nullptr) {
      ADD_FAILURE() << "the damage corpus has no case " << name;
      static const damage::DamageCase kNone = [] {
        damage::DamageCase n;
        n.apply = [](const std::string&) {};
        return n;
      }();
      return kNone;
    }
    return *c;
  }
  // Materialises `c` into a fresh directory (dir_) and verifies it.
  VerifyRun Run(const damage::DamageCase& c) {
    tmp_ = std::make_unique<TempDir>("verify", test::ScratchParent());
    dir_ = corpus_.Materialise(c, tmp_->path());
    return Verify(dir_);
  }
  VerifyRun Run(const std::string& name) { return Run(Case(name)); }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

  damage::DamageCorpus corpus_;
  std::unique_ptr<TempDir> tmp_;
  std::string dir_;
};

TEST_F(DamageTest, UndamagedCopyIsClean) {
  LoadKeyed();
  TempDir tmp("verify");
  std::string d = tmp.path() + "/keyed-none-0";
  test::CopyWritable(corpus_.source(), d);
  VerifyRun r = Verify(d);
  EXPECT_EQ(r.problems.size(), 0u) << r.Dump();
  EXPECT_EQ(r.stats.batches, 15u);
  EXPECT_EQ(r.stats.files_checked, 14u);  // 3 logs, 3 indexes, 3 time indexes, 3 snapshots, 2 text files
}

TEST_F(DamageTest, FlippedByteInEveryHeaderFieldAndPayload) {
  LoadKeyed();
  // A batch in the middle of the middle segment: 00000000000000000014.log, batch at 133 (16..18).
  const std::string log = "00000000000000000014.log";
  const oracle::DumpBatch& b = dump().segments[1].batches[1];
  ASSERT_EQ(b.position, 133u);
  std::vector<const damage::DamageCase*> cases = corpus_.Group("flip-batch-byte");
  ASSERT_EQ(cases.size(), b.size);  // every byte of the batch
  for (const damage::DamageCase* c : cases) {
    ASSERT_EQ(c->file, log);
    ASSERT_EQ(c->segment, 1);
    ASSERT_EQ(c->batch, 1);
    const uint64_t at = c->at;
    ASSERT_EQ(c->position, b.position + at);
    VerifyRun r = Run(*c);
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
  const oracle::DumpBatch& b = dump().segments[0].batches[2];  // 5..6 at 190
  const damage::DamageCase& c = Case("flip-payload/00000000000000000000.log@260");
  ASSERT_EQ(c.position, b.position + 70);
  VerifyRun r = Run(c);
  ASSERT_EQ(r.problems.size(), 1u) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000000.log", b.position + 17, "batch-crc", Severity::kError)) << r.Dump();
}

TEST_F(DamageTest, TruncationAtEveryBoundaryAndMidField) {
  LoadKeyed();
  // Every batch of every segment is cut inside its length field and at its last byte (and between).
  std::set<std::pair<int, int>> cut_first, cut_last;
  for (const damage::DamageCase* c : corpus_.Group("truncate-mid")) {
    ASSERT_TRUE(c->truncated && c->segment >= 0 && c->batch >= 0) << c->name;
    const oracle::DumpSegment& seg = dump().segments[c->segment];
    const oracle::DumpBatch& b = seg.batches[c->batch];
    const bool last = size_t(c->segment) + 1 == dump().segments.size();
    if (c->at == 4) cut_first.insert({c->segment, c->batch});
    if (c->at == b.size - 1) cut_last.insert({c->segment, c->batch});
    VerifyRun r = Run(*c);
    SCOPED_TRACE(seg.file + " cut at " + std::to_string(c->position) + "\n" + r.Dump());
    // Kafka's recovery truncates at the start of the torn batch: that is the position reported,
    // an error unless it is the active (last) segment.
    // (A cut within the first bytes can leave only zeros of the base offset: a zero tail.)
    const Severity sev = last ? Severity::kWarning : Severity::kError;
    EXPECT_TRUE(r.Has(seg.file, b.position, "truncated-tail", sev) || r.Has(seg.file, b.position, "zero-tail", sev));
  }
  size_t batches = 0, boundaries = 0;
  for (const oracle::DumpSegment& seg : dump().segments) {
    batches += seg.batches.size();
    for (const oracle::DumpBatch& b : seg.batches) boundaries += b.position > 0;
  }
  EXPECT_EQ(cut_first.size(), batches);
  EXPECT_EQ(cut_last.size(), batches);
  // Boundary cut: the log is well-formed, but what the indexes and the next segment or the
  // checkpoints say about the lost batches gives it away.
  std::vector<const damage::DamageCase*> at_boundary = corpus_.Group("truncate-boundary");
  EXPECT_EQ(at_boundary.size(), boundaries);
  for (const damage::DamageCase* c : at_boundary) {
    ASSERT_TRUE(c->truncated && c->batch >= 0 && c->at == 0) << c->name;
    VerifyRun r = Run(*c);
    SCOPED_TRACE(c->file + " cut at boundary " + std::to_string(c->position) + "\n" + r.Dump());
    EXPECT_FALSE(r.problems.empty());
    for (const Problem& p : r.problems) EXPECT_NE(p.check, "truncated-tail");
    // Nothing at all is wrong with the log file itself; what gives the cut away is named.
    bool seen = false;
    for (const Problem& p : r.problems) seen |= p.severity != Severity::kInfo || p.check == "offset-gap";
    EXPECT_TRUE(seen);
  }
  // A boundary cut that loses indexed batches: the index entries now point past the log.
  VerifyRun r = Run("truncate-boundary/00000000000000000000.log@190");
  EXPECT_TRUE(r.Has("00000000000000000000.index", 4, "offset-index-position", Severity::kError)) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000000.index", 12, "offset-index-position", Severity::kError)) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000000.timeindex", 8, "time-index-offset", Severity::kError)) << r.Dump();
}

TEST_F(DamageTest, LyingLengths) {
  LoadKeyed();
  const std::string log = "00000000000000000000.log";
  const oracle::DumpBatch& b = dump().segments[0].batches[1];  // at 102, 88 bytes
  std::set<uint64_t> lengths;
  for (const damage::DamageCase* c : corpus_.Group("lying-length")) {
    ASSERT_EQ(c->file, log);
    ASSERT_TRUE(c->position >= b.position + 8 && c->position < b.position + 12) << c->name;  // the length field
    lengths.insert(c->value);
    VerifyRun r = Run(*c);
    SCOPED_TRACE("length " + std::to_string(c->value) + "\n" + r.Dump());
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
  EXPECT_EQ(lengths,
            (std::set<uint64_t>{0, 13, b.size - 12 - 1, b.size - 12 + 1, b.size - 12 + 100, 0x7fffffff, 0xffffffff}));
}

TEST_F(DamageTest, ZeroFilledTails) {
  LoadKeyed();
  // Active segment: a preallocated tail after a crash is routine (warning), with the bytes lost.
  const uint64_t last_size = fs::file_size(corpus_.source() + "/00000000000000000024.log");
  const damage::DamageCase& active = Case("zero-tail/active-1MiB");
  ASSERT_EQ(active.position, last_size);
  VerifyRun r = Run(active);
  EXPECT_TRUE(r.Has("00000000000000000024.log", last_size, "zero-tail", Severity::kWarning)) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 0u) << r.Dump();
  auto tail = r.Find("00000000000000000024.log", "zero-tail");
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_NE(tail[0].message.find(std::to_string(1 << 20)), std::string::npos) << tail[0].message;
  // A rolled segment is never torn: the same tail there is an error.
  const uint64_t first_size = fs::file_size(corpus_.source() + "/00000000000000000000.log");
  r = Run("zero-tail/rolled-4KiB");
  EXPECT_TRUE(r.Has("00000000000000000000.log", first_size, "zero-tail", Severity::kError)) << r.Dump();
  // Zeros over the last batches (a crash before the data reached the disk).
  const damage::DamageCase& over = Case("zero-tail/active-over-batches");
  ASSERT_EQ(over.value, 190u);  // zeros from there on (the first bytes that differ: a few bytes later)
  ASSERT_EQ(over.batch, 2);
  r = Run(over);
  EXPECT_TRUE(r.Has("00000000000000000024.log", 190, "zero-tail", Severity::kWarning)) << r.Dump();
  // ... and its index entries now point into that tail.
  EXPECT_TRUE(r.Has("00000000000000000024.index", 4, "offset-index-position", Severity::kWarning)) << r.Dump();
}

TEST_F(DamageTest, IndexEntriesPastTheLogOutOfOrderOrOffBoundary) {
  LoadKeyed();
  const std::string index = "00000000000000000000.index";  // (6,190) (9,323) (13,513)
  ASSERT_EQ(dump().offset_indexes[0].offset_position.size(), 3u);
  for (const damage::DamageCase* c : corpus_.Group("offset-index")) ASSERT_EQ(c->file, index);
  // Past the end of the log.
  ASSERT_EQ(Case("offset-index/past-log").value, 100000u);
  VerifyRun r = Run("offset-index/past-log");
  EXPECT_TRUE(r.Has(index, 16 + 4, "offset-index-position", Severity::kError)) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 1u) << r.Dump();
  // Not at a batch boundary.
  ASSERT_EQ(Case("offset-index/off-boundary").value, 324u);
  r = Run("offset-index/off-boundary");
  EXPECT_TRUE(r.Has(index, 12, "offset-index-position", Severity::kError)) << r.Dump();
  // Offset below the batch at its position.
  ASSERT_EQ(Case("offset-index/offset-below").value, 6u);  // entry 1: relative offset 6 -> 323 holds 7..9
  r = Run("offset-index/offset-below");
  EXPECT_TRUE(r.Has(index, 8, "offset-index-offset", Severity::kError)) << r.Dump();
  // Offset beyond the segment.
  ASSERT_EQ(Case("offset-index/offset-beyond").value, 40u);
  r = Run("offset-index/offset-beyond");
  EXPECT_TRUE(r.Has(index, 16, "offset-index-offset", Severity::kError)) << r.Dump();
  // Out of order: entries 0 and 1 swapped.
  r = Run("offset-index/swapped");
  EXPECT_TRUE(r.Has(index, 8, "offset-index-order", Severity::kError)) << r.Dump();
  // A multi-batch chunk entry (offset = the chunk's last offset, position = its first batch) is fine:
  // kafka-dump-log --verify-index-only calls it a mismatch (dump-log-segments.md §7.3).
  // (9, 190): batches 5..6 and 7..9 appended as one chunk; (11, 323).
  const damage::DamageCase& chunk = Case("offset-index/chunk-entry");
  const std::string pristine = ReadAll(corpus_.source() + "/" + index);
  TempDir t("verify");
  std::string written = ReadAll(corpus_.Materialise(chunk, t.path()) + "/" + index);
  std::string want = pristine;
  want[3] = 9;
  want[11] = 11;
  ASSERT_EQ(written, want);
  r = Run(chunk);
  EXPECT_TRUE(r.Find(index, "offset-index-offset").empty()) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 0u) << r.Dump();
}

TEST_F(DamageTest, TimeIndexDamage) {
  LoadKeyed();
  const std::string ti = "00000000000000000000.timeindex";  // (7000,6) (10000,9) (14000,13)
  for (const damage::DamageCase* c : corpus_.Group("time-index")) ASSERT_EQ(c->file, ti);
  ASSERT_EQ(Case("time-index/not-max").value, 1700000009000u);  // entry 1: not the max timestamp up to offset 9
  VerifyRun r = Run("time-index/not-max");
  EXPECT_TRUE(r.Has(ti, 12, "time-index-timestamp", Severity::kError)) << r.Dump();
  ASSERT_LT(Case("time-index/not-monotonic").value, 1700000007000u);  // below entry 0: not monotonic
  r = Run("time-index/not-monotonic");
  EXPECT_TRUE(r.Has(ti, 12, "time-index-order", Severity::kError)) << r.Dump();
  ASSERT_EQ(Case("time-index/offset-beyond").value, 30u);  // entry 2: offset past the segment
  r = Run("time-index/offset-beyond");
  EXPECT_TRUE(r.Has(ti, 24 + 8, "time-index-offset", Severity::kError)) << r.Dump();
}

TEST_F(DamageTest, MissingIndexFilesAreRebuildableWarnings) {
  LoadKeyed();
  VerifyRun r = Run("missing-index/00000000000000000014");
  ASSERT_FALSE(fs::exists(File("00000000000000000014.index")));
  ASSERT_FALSE(fs::exists(File("00000000000000000014.timeindex")));
  EXPECT_TRUE(r.Has("00000000000000000014.log", 0, "missing-index", Severity::kWarning)) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000014.log", 0, "missing-time-index", Severity::kWarning)) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 0u) << r.Dump();
}

TEST_F(DamageTest, SnapshotWithBadCrc) {
  LoadTxn();
  const damage::DamageCase& c = Case("snapshot/snapshot-crc");
  ASSERT_EQ(c.file, "00000000000000000015.snapshot");
  ASSERT_EQ(c.position, 20u);
  VerifyRun r = Run(c);
  EXPECT_TRUE(r.Has("00000000000000000015.snapshot", 2, "snapshot-crc", Severity::kError)) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 1u) << r.Dump();
}

TEST_F(DamageTest, SnapshotDisagreeingWithTheLog) {
  LoadTxn();
  // 00000000000000000007.snapshot: producer 5001 has an open transaction from offset 3. The corpus
  // rewrites its currentTxnFirstOffset and fixes the CRC: the content is well-formed but wrong.
  const damage::DamageCase& c = Case("snapshot/snapshot-disagree");
  ASSERT_EQ(c.file, "00000000000000000007.snapshot");
  const size_t i = size_t(c.value);
  std::string bytes = ReadAll(corpus_.source() + "/" + c.file);
  ProducerSnapshot snap;
  CollectingSink quiet;
  ASSERT_TRUE(ParseProducerSnapshot("s", AsBytes(bytes), 7, &snap, &quiet));
  ASSERT_EQ(snap.entries.size(), 2u);
  ASSERT_EQ(snap.entries[i].producer_id, 5001);
  ASSERT_EQ(snap.entries[i].current_txn_first_offset, 3);
  VerifyRun r = Run(c);
  EXPECT_TRUE(r.Has("00000000000000000007.snapshot", 10 + 46 * i, "producer-snapshot", Severity::kWarning)) << r.Dump();
}

TEST_F(DamageTest, TxnIndexEntryWithoutMarker) {
  LoadTxn();
  const std::string txn = "00000000000000000007.txnindex";  // (5001, 3, 10, 11)
  ASSERT_EQ(dump().txn_indexes.size(), 1u);
  const damage::DamageCase& c = Case("txn-index/marker-data");
  ASSERT_EQ(c.file, txn);
  ASSERT_EQ(c.value, 9u);  // lastOffset 9 is a data batch, not a marker
  VerifyRun r = Run(c);
  EXPECT_TRUE(r.Has(txn, 18, "txn-index-marker", Severity::kError)) << r.Dump();
  // ... and the real ABORT at 10 is now unindexed.
  EXPECT_EQ(r.Find("00000000000000000007.log", "txn-index-missing").size(), 1u) << r.Dump();
}

TEST_F(DamageTest, TxnIndexMissingOrLate) {
  LoadTxn();
  const std::string txn = "00000000000000000007.txnindex";
  ASSERT_EQ(Case("txn-index/first-offset").value, 8u);  // firstOffset 8: hides the aborted data at 3
  VerifyRun r = Run("txn-index/first-offset");
  EXPECT_TRUE(r.Has(txn, 10, "txn-index-first-offset", Severity::kError)) << r.Dump();
  r = Run("txn-index/removed");
  ASSERT_FALSE(fs::exists(File(txn)));
  // The ABORT marker of producer 5001 at offset 10 is the batch at 214 of 00000000000000000007.log.
  EXPECT_TRUE(r.Has("00000000000000000007.log", 214, "txn-index-missing", Severity::kError)) << r.Dump();
  // A COMMIT marker named by an entry.
  ASSERT_EQ(Case("txn-index/commit-marker").value, 7u);  // offset 7 is producer 5000's COMMIT
  r = Run("txn-index/commit-marker");
  EXPECT_TRUE(r.Has(txn, 18, "txn-index-marker", Severity::kError)) << r.Dump();
}

TEST_F(DamageTest, LeftoverSwapCleanedAndDeletedFiles) {
  LoadKeyed();
  VerifyRun r = Run("leftover/swap-deleted-cleaned");
  EXPECT_TRUE(r.Has("00000000000000000014.log.swap", 0, "leftover-file", Severity::kWarning)) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000000.index.deleted", 0, "leftover-file", Severity::kWarning)) << r.Dump();
  EXPECT_TRUE(r.Has("00000000000000000000.log.cleaned", 0, "leftover-file", Severity::kWarning)) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 0u) << r.Dump();
}

TEST_F(DamageTest, SegmentNameAndOverlap) {
  LoadKeyed();
  // The last segment (24..31) renamed to sort before the middle one (14..23): the middle segment now
  // starts below the end of the segment before it.
  VerifyRun r = Run("segment-rename/overlap");
  ASSERT_TRUE(fs::exists(File("00000000000000000010.log")));
  ASSERT_FALSE(fs::exists(File("00000000000000000024.log")));
  EXPECT_TRUE(r.Has("00000000000000000014.log", 0, "segment-overlap", Severity::kError)) << r.Dump();
  // Named above its first batch.
  r = Run("segment-rename/base-offset");
  ASSERT_TRUE(fs::exists(File("00000000000000000025.log")));
  EXPECT_TRUE(r.Has("00000000000000000025.log", 0, "segment-base-offset", Severity::kError)) << r.Dump();
}

TEST_F(DamageTest, RecordLevelDamageWithAValidCrc) {
  LoadKeyed();
  // One header field of a batch rewritten and its CRC recomputed: framing and CRC pass, so only the
  // record-level checks can see it.
  const std::string log = "00000000000000000000.log";
  const oracle::DumpBatch& b = dump().segments[0].batches[0];  // 0..2, 3 records at 0
  for (const damage::DamageCase* c : corpus_.Group("record-field")) {
    ASSERT_EQ(c->file, log);
    ASSERT_EQ(c->batch, 0);
  }
  ASSERT_EQ(Case("record-field/record-count").value, 4u);  // recordCount 3 -> 4
  VerifyRun r = Run("record-field/record-count");
  EXPECT_TRUE(!r.Find(log, "record-count").empty()) << r.Dump();
  EXPECT_EQ(r.Count(Severity::kError), 1u) << r.Dump();
  ASSERT_EQ(Case("record-field/max-timestamp").value, 1700000002500u);  // no longer the largest record timestamp
  r = Run("record-field/max-timestamp");
  EXPECT_TRUE(r.Has(log, b.position + 35, "batch-timestamp", Severity::kError)) << r.Dump();
  ASSERT_EQ(Case("record-field/last-offset-delta-short").value, 1u);  // 2 -> 1: record 2 lies outside the batch
  r = Run("record-field/last-offset-delta-short");
  EXPECT_TRUE(r.Has(log, b.position, "record-offset", Severity::kError)) << r.Dump();
  // lastOffsetDelta 2 -> 4: the batch claims offsets 3..4 as well, overlapping the next batch.
  ASSERT_EQ(Case("record-field/last-offset-delta-long").value, 4u);
  r = Run("record-field/last-offset-delta-long");
  EXPECT_TRUE(!r.Find(log, "offset-order").empty()) << r.Dump();
}

TEST_F(DamageTest, RandomDamageNeverCrashes) {
  LoadTxn();
  std::vector<const damage::DamageCase*> cases = corpus_.Group("random");
  EXPECT_GT(cases.size(), 250u);  // 300 seeded rounds, minus those that drew an empty file
  for (const damage::DamageCase* c : cases) {
    VerifyRun r = Run(*c);
    for (const Problem& p : r.problems) {
      EXPECT_FALSE(p.file.empty()) << c->name;
      EXPECT_FALSE(p.check.empty()) << c->name;
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
  auto before = test::SnapshotFiles(kOracle);
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
      // the data, and the followers of the replica sets (broker 2 of aborted-to-committed and of the
      // random timelines), which fetched a compacted leader log after an outage: their never-cleaned
      // segments have compaction gaps (fixtures README).
      if (p.check == "offset-gap") {
        const bool follower =
            p.file.find("aborted-to-committed/broker2/") != std::string::npos ||
            (p.file.find("random-replicas/") != std::string::npos && p.file.find("/broker1/") == std::string::npos);
        EXPECT_TRUE(follower) << p.file;
        saw_fetched_gap = true;
      } else {
        EXPECT_EQ(p.check, "unknown-file") << p.file << ": " << p.message;
      }
    }
  }
  EXPECT_TRUE(saw_fetched_gap);
  EXPECT_EQ(before, test::SnapshotFiles(kOracle)) << "verify modified its input";
}

TEST(VerifyFixtures, RealBrokerDataHasNoErrors) {
  auto before = test::SnapshotFiles(kReal);
  std::vector<std::string> dirs = DataDirs(kReal);
  ASSERT_GE(dirs.size(), 25u);
  // Warnings that are genuine findings about these copies (fixtures/real/PROVENANCE.md): files of
  // 4 MiB or more were not copied (the preallocated indexes of active segments, some active .log
  // files), so indexes are missing, index files are orphaned, and checkpoints (high watermark, leader
  // epochs) point past the data that is here; some partitions hold no segment at all.
  const std::set<std::string> expected_warnings = {"missing-index",  "missing-time-index", "orphan-index",
                                                   "high-watermark", "leader-epoch-cache", "no-segments"};
  uint64_t batches = 0;
  for (const std::string& d : dirs) {
    VerifyRun r = Verify(d);
    batches += r.stats.batches;
    EXPECT_EQ(r.Count(Severity::kError), 0u) << d << "\n" << r.Dump();
    for (const Problem& p : r.problems) {
      if (p.severity == Severity::kWarning) {
        EXPECT_TRUE(expected_warnings.count(p.check)) << p.file << " " << p.check;
      }
    }
  }
  EXPECT_GT(batches, 200000u);
  EXPECT_EQ(before, test::SnapshotFiles(kReal)) << "verify modified its input";
}

// DeleteRecords moves the log start offset into a segment, and Kafka truncates the leader-epoch cache from
// the start (LeaderEpochFileCache.truncateFromStart): the epoch holding the new log start offset then
// starts there, above its first batch in the file. That is normal (issue 19); the same checkpoint with the
// log start offset still at 0 is a genuine disagreement.
TEST(VerifyFixtures, EpochCacheTruncatedByDeleteRecordsIsNormal) {
  TempDir tmp("verify", test::ScratchParent());
  const std::string logdir = tmp.path() + "/a-keyed";
  fs::copy(kOracle + "/a-keyed", logdir, fs::copy_options::recursive);
  const std::string part = logdir + "/keyed-none-0";
  auto write = [](const std::string& path, const std::string& text) {
    fs::remove(path);
    std::ofstream(path) << text;
  };
  // Kafka's own: epoch 0 from offset 0, epoch 1 from 22. DeleteRecords up to offset 10 leaves:
  write(part + "/leader-epoch-checkpoint", "0\n2\n0 10\n1 22\n");
  VerifyRun stale = Verify(logdir);
  EXPECT_EQ(stale.Find("keyed-none-0/leader-epoch-checkpoint", "leader-epoch-cache").size(), 1u) << stale.Dump();
  write(logdir + "/log-start-offset-checkpoint",
        "0\n5\nkeyed-none 0 10\nkeyed-snappy 0 0\nkeyed-lz4 0 0\nkeyed-zstd 0 0\nkeyed-gzip 0 0\n");
  VerifyRun deleted = Verify(logdir);
  EXPECT_TRUE(deleted.Find("keyed-none-0/leader-epoch-checkpoint", "leader-epoch-cache").empty()) << deleted.Dump();
}

TEST(VerifyFixtures, ParallelAndSerialAgree) {
  std::string d = kReal + "/greenlemonT__kafka-temp/data/kafka";
  VerifyRun serial = Verify(d, 1);
  VerifyRun parallel = Verify(d, 4);
  EXPECT_EQ(serial.Dump(), parallel.Dump());
  EXPECT_EQ(serial.stats.batches, parallel.stats.batches);
  EXPECT_EQ(serial.stats.bytes_checked, parallel.stats.bytes_checked);
}

// A log dir's partitions are verified as they are scanned (their problems held until the scan's are
// out) or after the scan (past VerifyOptions::held_problems): the same problems in the same order
// either way, on any number of threads, the scan's first.
TEST(VerifyFixtures, VerifiedDuringOrAfterTheScanTheSameProblemsInTheSameOrder) {
  TempDir tmp("verify-held", test::ScratchParent());
  const std::string log_dir = tmp.path() + "/broker";
  fs::create_directory(log_dir);
  const std::vector<std::string> codecs = {"none", "gzip", "lz4", "snappy", "zstd", "none"};
  for (size_t i = 0; i < codecs.size(); ++i) {
    fs::copy(kOracle + "/a-keyed/keyed-" + codecs[i] + "-0", log_dir + "/t-" + std::to_string(i),
             fs::copy_options::recursive);
  }
  const std::string seg = "/00000000000000000000.log";
  auto flip = [](const std::string& file, std::streamoff at) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(at);
    f.put(char(0x5a));
  };
  std::ofstream(log_dir + "/t-1/00000000000000000000.index.deleted") << "x";  // the scan's
  flip(log_dir + "/t-1" + seg, 70);                                           // the verification's
  std::ofstream(log_dir + "/t-3/notes.txt") << "x";                           // the scan's
  fs::resize_file(log_dir + "/t-4" + seg, fs::file_size(log_dir + "/t-4" + seg) - 5);
  flip(log_dir + "/t-5" + seg, 70);
  std::ofstream(log_dir + "/replication-offset-checkpoint") << "0\n1\nt-0 not-a-number\n";  // the log dir's
  fs::create_directory(log_dir + "/not a partition");

  const VerifyRun reference = Verify(log_dir, 1, 0);  // scan, then verify: the order verify has always had
  ASSERT_GE(reference.problems.size(), 6u) << reference.Dump();
  auto first = [&](const std::string& file_part) {
    for (size_t i = 0; i < reference.problems.size(); ++i)
      if (reference.problems[i].file.find(file_part) != std::string::npos) return i;
    return reference.problems.size();
  };
  EXPECT_LT(first("t-3/notes.txt"), first("t-1" + seg)) << reference.Dump();
  EXPECT_LT(first("replication-offset-checkpoint"), first("t-1" + seg)) << reference.Dump();
  for (int threads : {1, 2, 4}) {
    for (size_t held : {size_t(0), size_t(1), size_t(3), VerifyOptions().held_problems}) {
      const VerifyRun r = Verify(log_dir, threads, held);
      EXPECT_EQ(r.Dump(), reference.Dump()) << threads << " threads, " << held << " held";
      EXPECT_EQ(r.stats.batches, reference.stats.batches);
      EXPECT_EQ(r.stats.records, reference.stats.records);
      EXPECT_EQ(r.stats.bytes_checked, reference.stats.bytes_checked);
      EXPECT_EQ(r.stats.files_checked, reference.stats.files_checked);
      EXPECT_EQ(r.stats.errors, reference.stats.errors);
    }
  }
}

TEST(VerifyFixtures, UnreadableInputs) {
  VerifyRun r = Verify("/nonexistent/klf-verify");
  EXPECT_TRUE(r.stats.unreadable);
  TempDir t("verify");
  fs::create_directories(t.path() + "/just-a-dir/sub");
  r = Verify(t.path() + "/just-a-dir/sub");
  EXPECT_TRUE(r.stats.unreadable);
}

}  // namespace
}  // namespace klf
