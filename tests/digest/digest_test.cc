// digest/digest.h: a partition copy survives the encoding whole (every field diff and lso read), a plain
// log's elided records come back exactly, and a digest file that is truncated at any byte, has any bit
// flipped, is foreign or of a newer major version is refused with the file and position named; a
// version 1 digest (tests/digest/v1, written by klf before format 2) is still read, to the same states.
#include "digest/digest.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "diff/replica_state.h"
#include "segment_reader/compression.h"
#include "segment_reader/crc.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

std::string Fixtures() { return KLF_FIXTURES_DIR; }

// Every partition directory of the Kafka-made replica sets.
std::vector<std::string> FixtureCopies() {
  std::vector<std::string> out;
  for (std::string base : {Fixtures() + "/kafka-oracle/replicas", Fixtures() + "/kafka-oracle/random-replicas",
                           Fixtures() + "/kafka4/tv2-replicas"}) {
    if (!fs::is_directory(base)) continue;
    for (const auto& set : fs::directory_iterator(base)) {
      for (const char* b : {"broker1", "broker2", "broker3"}) {
        fs::path d = set.path() / b;
        if (!fs::is_directory(d)) continue;
        for (const auto& p : fs::directory_iterator(d)) {
          if (p.is_directory()) out.push_back(p.path().string());
        }
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

ReplicaState Load(const std::string& dir) {
  ReplicaState r;
  std::string error;
  EXPECT_TRUE(LoadReplica(dir, {}, &r, &error)) << error;
  return r;
}

void ExpectSame(const ReplicaState& a, const ReplicaState& b) {
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.tp, b.tp);
  EXPECT_EQ(a.topic_id, b.topic_id);
  EXPECT_EQ(a.cluster_id, b.cluster_id);
  EXPECT_EQ(a.node_id, b.node_id);
  EXPECT_EQ(a.log_start_offset, b.log_start_offset);
  EXPECT_EQ(a.log_end_offset, b.log_end_offset);
  EXPECT_EQ(a.high_watermark, b.high_watermark);
  EXPECT_EQ(a.high_watermark_from_checkpoint, b.high_watermark_from_checkpoint);
  EXPECT_EQ(a.last_stable_offset, b.last_stable_offset);
  EXPECT_EQ(a.cleaner_checkpoint, b.cleaner_checkpoint);
  EXPECT_EQ(a.snapshot_offset, b.snapshot_offset);
  EXPECT_EQ(a.max_timestamp, b.max_timestamp);
  EXPECT_EQ(a.segment_files, b.segment_files);
  ASSERT_EQ(a.batches.size(), b.batches.size());
  for (size_t i = 0; i < a.batches.size(); ++i) {
    const BatchSpan &x = a.batches[i], &y = b.batches[i];
    EXPECT_EQ(std::tie(x.base_offset, x.last_offset, x.producer_id, x.producer_epoch, x.transactional, x.control,
                       x.records, x.segment, x.position, x.size, x.crc, x.fingerprint, x.first_record, x.digested),
              std::tie(y.base_offset, y.last_offset, y.producer_id, y.producer_epoch, y.transactional, y.control,
                       y.records, y.segment, y.position, y.size, y.crc, y.fingerprint, y.first_record, y.digested));
  }
  ASSERT_EQ(a.records.size(), b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    const RecordDigest &x = a.records[i], &y = b.records[i];
    SCOPED_TRACE("offset " + std::to_string(y.offset));
    EXPECT_EQ(0, std::memcmp(&x, &y, sizeof(RecordDigest) - 2));
    EXPECT_EQ(std::tie(x.fate), std::tie(y.fate));
    EXPECT_EQ(x.transactional, y.transactional);
    EXPECT_EQ(x.control, y.control);
    EXPECT_EQ(x.has_key, y.has_key);
    EXPECT_EQ(x.has_value, y.has_value);
    EXPECT_EQ(x.read_committed, y.read_committed);
    EXPECT_EQ(x.read_uncommitted, y.read_uncommitted);
  }
  ASSERT_EQ(a.markers.size(), b.markers.size());
  for (size_t i = 0; i < a.markers.size(); ++i) {
    EXPECT_EQ(std::tie(a.markers[i].offset, a.markers[i].producer_id, a.markers[i].producer_epoch, a.markers[i].type,
                       a.markers[i].coordinator_epoch),
              std::tie(b.markers[i].offset, b.markers[i].producer_id, b.markers[i].producer_epoch, b.markers[i].type,
                       b.markers[i].coordinator_epoch));
  }
  ASSERT_EQ(a.txns.size(), b.txns.size());
  for (size_t i = 0; i < a.txns.size(); ++i) {
    const Txn &x = a.txns[i], &y = b.txns[i];
    EXPECT_EQ(std::tie(x.producer_id, x.producer_epoch, x.first_offset, x.last_data_offset, x.marker_offset, x.fate,
                       x.records),
              std::tie(y.producer_id, y.producer_epoch, y.first_offset, y.last_data_offset, y.marker_offset, y.fate,
                       y.records));
  }
  ASSERT_EQ(a.open_txns.size(), b.open_txns.size());
  for (size_t i = 0; i < a.open_txns.size(); ++i) {
    const OpenTxn &x = a.open_txns[i], &y = b.open_txns[i];
    EXPECT_EQ(std::tie(x.producer_id, x.producer_epoch, x.first_offset, x.last_offset, x.last_timestamp),
              std::tie(y.producer_id, y.producer_epoch, y.first_offset, y.last_offset, y.last_timestamp));
  }
  ASSERT_EQ(a.producers.size(), b.producers.size());
  for (size_t i = 0; i < a.producers.size(); ++i) {
    EXPECT_EQ(std::tie(a.producers[i].producer_id, a.producers[i].producer_epoch, a.producers[i].coordinator_epoch),
              std::tie(b.producers[i].producer_id, b.producers[i].producer_epoch, b.producers[i].coordinator_epoch));
  }
  EXPECT_EQ(a.aborted_txns, b.aborted_txns);
  ASSERT_EQ(a.aborted_txn_sources.size(), b.aborted_txn_sources.size());
  for (size_t i = 0; i < a.aborted_txn_sources.size(); ++i) {
    EXPECT_EQ(a.aborted_txn_sources[i].file, b.aborted_txn_sources[i].file);
    EXPECT_EQ(a.aborted_txn_sources[i].position, b.aborted_txn_sources[i].position);
  }
  EXPECT_EQ(a.txn_index_max_last, b.txn_index_max_last);
  ASSERT_EQ(a.gaps.size(), b.gaps.size());
  for (size_t i = 0; i < a.gaps.size(); ++i) {
    EXPECT_EQ(std::tie(a.gaps[i].from, a.gaps[i].to), std::tie(b.gaps[i].from, b.gaps[i].to));
  }
  ASSERT_EQ(a.damaged.size(), b.damaged.size());
  for (size_t i = 0; i < a.damaged.size(); ++i) {
    EXPECT_EQ(std::tie(a.damaged[i].from, a.damaged[i].to, a.damaged[i].file, a.damaged[i].position, a.damaged[i].why),
              std::tie(b.damaged[i].from, b.damaged[i].to, b.damaged[i].file, b.damaged[i].position, b.damaged[i].why));
  }
  ASSERT_EQ(a.notes.size(), b.notes.size());
  for (size_t i = 0; i < a.notes.size(); ++i) {
    EXPECT_EQ(
        std::tie(a.notes[i].severity, a.notes[i].file, a.notes[i].position, a.notes[i].check, a.notes[i].message),
        std::tie(b.notes[i].severity, b.notes[i].file, b.notes[i].position, b.notes[i].check, b.notes[i].message));
  }
  ASSERT_EQ(a.key_view.size(), b.key_view.size());
  for (size_t i = 0; i < a.key_view.size(); ++i) {
    EXPECT_EQ(a.key_view[i].first, b.key_view[i].first);
    EXPECT_EQ(a.key_view[i].second.offset, b.key_view[i].second.offset);
    EXPECT_EQ(a.key_view[i].second.record, b.key_view[i].second.record);
    EXPECT_EQ(a.key_view[i].second.tombstone, b.key_view[i].second.tombstone);
  }
}

DigestCopy CopyOf(const std::string& dir, ReplicaState state) {
  DigestCopy c;
  c.partition = fs::path(dir).filename().string();
  c.log_dir = fs::path(dir).parent_path().string();
  c.path = dir;
  c.broker = "broker 1";
  c.loaded = true;
  c.damage = {2, 1, "x.log:10 batch-crc: bad"};
  c.files = {{"00000000000000000000.log", 1234, 1700000000000},
             {"00000000000000000042.txnindex", 0, 1700000000999},
             {"partition.metadata", 43, 1600000000000}};
  c.state = std::move(state);
  return c;
}

TEST(Digest, EveryFixtureCopySurvivesTheEncodingWhole) {
  std::vector<std::string> dirs = FixtureCopies();
  ASSERT_GE(dirs.size(), 20u);
  for (const std::string& dir : dirs) {
    SCOPED_TRACE(dir);
    ReplicaState want = Load(dir);
    DigestCopy c = CopyOf(dir, want);
    std::string payload = EncodeDigestCopy(c);
    DigestCopy got;
    std::string error;
    ASSERT_TRUE(DecodeDigestCopy(payload, &got, &error)) << error;
    EXPECT_EQ(got.partition, c.partition);
    EXPECT_EQ(got.damage.errors, 2u);
    EXPECT_EQ(got.damage.first_error, c.damage.first_error);
    ASSERT_EQ(got.files.size(), 3u);
    EXPECT_EQ(got.files[1].name, "00000000000000000042.txnindex");
    EXPECT_EQ(got.files[2].mtime_ms, 1600000000000);
    EXPECT_TRUE(got.state.from_digest);
    if (got.state.records_elided) {
      // A plain log: restored next to the loaded copy (its records taken over) and alone (derived).
      EXPECT_TRUE(IsPlainReplica(want));
      std::vector<ReplicaState> pair = {want, got.state};
      std::string why;
      int64_t first, last;
      ASSERT_TRUE(RestoreElidedRecords(&pair, &why, &first, &last)) << why;
      ExpectSame(pair[1], want);
    } else {
      ExpectSame(got.state, want);
    }
  }
}

TEST(Digest, PlainLogsAreKeptAsBatchesAndDifferentBatchesAreUndecided) {
  std::string a = Fixtures() + "/kafka-oracle/a-keyed/keyed-none-0";
  std::string b = Fixtures() + "/kafka-oracle/a-keyed/keyed-lz4-0";  // same records, other bytes
  ReplicaState ra = Load(a), rb = Load(b);
  ASSERT_TRUE(IsPlainReplica(ra));
  ASSERT_TRUE(IsPlainReplica(rb));
  DigestCopy ca, cb;
  std::string error;
  ASSERT_TRUE(DecodeDigestCopy(EncodeDigestCopy(CopyOf(a, ra)), &ca, &error)) << error;
  ASSERT_TRUE(DecodeDigestCopy(EncodeDigestCopy(CopyOf(b, rb)), &cb, &error)) << error;
  ASSERT_TRUE(ca.state.records_elided);
  EXPECT_LT(EncodeDigestCopy(ca).size(), EncodeDigestCopy(CopyOf(a, ra)).size() + 1);
  // Two digests of the same bytes: restored alike, derived records equal.
  std::vector<ReplicaState> same = {ca.state, ca.state};
  std::string why;
  int64_t first = -1, last = -1;
  ASSERT_TRUE(RestoreElidedRecords(&same, &why, &first, &last)) << why;
  ASSERT_EQ(same[0].records.size(), ra.records.size());
  for (size_t i = 0; i < ra.records.size(); ++i) {
    EXPECT_EQ(same[0].records[i].content, same[1].records[i].content);
    EXPECT_EQ(same[0].records[i].offset, ra.records[i].offset);
  }
  // Other batch bytes at the same offsets: the digests cannot say which records differ.
  std::vector<ReplicaState> other = {ca.state, cb.state};
  EXPECT_FALSE(RestoreElidedRecords(&other, &why, &first, &last));
  EXPECT_NE(why.find("different batches"), std::string::npos) << why;
  EXPECT_GE(first, 0);
  // A plain digest next to a copy that is not plain (a transaction): undecided too.
  ReplicaState txn = Load(Fixtures() + "/kafka-oracle/b-txn/txn-0");
  ASSERT_FALSE(IsPlainReplica(txn));
  std::vector<ReplicaState> mixed = {ca.state, txn};
  EXPECT_FALSE(RestoreElidedRecords(&mixed, &why, &first, &last));
  EXPECT_NE(why.find("not plain"), std::string::npos) << why;
}

// A small digest file: the capture and two copies.
std::string SmallDigest(uint16_t minor = kDigestMinor, bool extra_section = false) {
  DigestCapture cap;
  cap.klf_version = "test";
  cap.host = "h";
  cap.log_dirs = {"/data/kafka"};
  cap.brokers = {"broker 1"};
  std::string dir = Fixtures() + "/kafka-oracle/replicas/aborted-to-committed/broker2/foo-0";
  std::string f = DigestFileHeader();
  f[10] = char(minor & 0xff);
  f[11] = char(minor >> 8);
  f += DigestSection(kDigestSectionCapture, EncodeDigestCapture(cap));
  f += DigestSection(kDigestSectionCopy, EncodeDigestCopy(CopyOf(dir, Load(dir))));
  DigestCopy bad;
  bad.partition = "foo-1";
  bad.path = "/data/kafka/foo-1";
  bad.error = "cannot be read";
  f += DigestSection(kDigestSectionCopy, EncodeDigestCopy(bad));
  uint64_t n = 3;
  if (extra_section) {
    f += DigestSection(7, "a section a newer minor version added");
    ++n;
  }
  f += DigestTrailer(n, Crc32c(AsBytes(f)));
  return f;
}

class DigestFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Thousands of small files: in memory when the machine has a tmpfs at hand.
    fs::path tmp = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    dir_ = tmp / ("klf-digest-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& bytes) {
    std::string p = (dir_ / "d.kdg").string();
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    return p;
  }
  fs::path dir_;
};

TEST_F(DigestFileTest, ReadsWhatItWrote) {
  std::string p = Write(SmallDigest());
  DigestFile f;
  std::string error;
  ASSERT_TRUE(LooksLikeDigest(p));
  ASSERT_TRUE(ReadDigestFile(p, &f, &error)) << error;
  EXPECT_EQ(f.capture.log_dirs, std::vector<std::string>{"/data/kafka"});
  ASSERT_EQ(f.copies.size(), 2u);
  EXPECT_TRUE(f.copies[0].loaded);
  EXPECT_FALSE(f.copies[1].loaded);
  EXPECT_EQ(f.copies[1].error, "cannot be read");
  // Kept compact, decoded on demand: the same state.
  DigestFile lazy;
  ASSERT_TRUE(ReadDigestFile(p, &lazy, &error, /*keep_states=*/false)) << error;
  ASSERT_TRUE(DecodeDigestState(lazy, &lazy.copies[0], &error)) << error;
  ExpectSame(lazy.copies[0].state, f.copies[0].state);
}

TEST_F(DigestFileTest, TruncatedAtEveryByteIsRefused) {
  std::string full = SmallDigest();
  for (size_t n = 0; n < full.size(); ++n) {
    std::string p = Write(full.substr(0, n));
    DigestFile f;
    std::string error;
    ASSERT_FALSE(ReadDigestFile(p, &f, &error)) << "cut at " << n;
    EXPECT_NE(error.find(p), std::string::npos) << error;
    EXPECT_NE(error.find("byte "), std::string::npos) << error;
    // --resume keeps the complete sections before the cut.
    uint64_t valid = 0;
    uint32_t crc = 0;
    if (n >= kDigestHeaderSize) {
      ASSERT_TRUE(ReadPartialDigest(p, &f, &valid, &crc, &error)) << error;
      EXPECT_LE(valid, n);
    }
  }
}

TEST_F(DigestFileTest, EveryBitFlipIsRefused) {
  std::string full = SmallDigest();
  for (size_t i = 0; i < full.size(); ++i) {
    for (int bit : {int(i % 8)}) {
      std::string bad = full;
      bad[i] = char(bad[i] ^ (1 << bit));
      if (i >= 10 && i < 12) continue;  // the minor version: a newer minor is read on purpose (below)
      std::string p = Write(bad);
      DigestFile f;
      std::string error;
      EXPECT_FALSE(ReadDigestFile(p, &f, &error)) << "flip of bit " << bit << " at byte " << i;
    }
  }
}

// Version 2.1's closing section holds the log dirs' problems found with the copies; the capture
// section's list is what verify's pass over the log dirs found alone (what a 2.0 reader shows).
TEST_F(DigestFileTest, LogDirProblemsSectionClosesTheFile) {
  auto digest = [](uint16_t minor, const std::vector<std::vector<std::string>>& closing) {
    DigestCapture cap;
    cap.klf_version = "test";
    cap.log_dirs = {"/data/kafka"};
    cap.brokers = {"broker 1"};
    cap.log_dir_problems = {"/data/kafka/cleaner-offset-checkpoint:0 checkpoint: bad"};
    std::string f = DigestFileHeader();
    f[10] = char(minor & 0xff);
    f += DigestSection(kDigestSectionCapture, EncodeDigestCapture(cap));
    DigestCopy bad;
    bad.partition = "foo-1";
    bad.path = "/data/kafka/foo-1";
    bad.error = "cannot be read";
    f += DigestSection(kDigestSectionCopy, EncodeDigestCopy(bad));
    for (const std::vector<std::string>& list : closing)
      f += DigestSection(kDigestSectionLogDirProblems, EncodeLogDirProblems(list));
    f += DigestTrailer(2 + closing.size(), Crc32c(AsBytes(f)));
    return f;
  };
  const std::vector<std::string> all = {"/data/kafka/cleaner-offset-checkpoint:0 checkpoint: bad",
                                        "/data/kafka/foo-1/00000000000000000000.log: cannot be read"};
  DigestFile f;
  std::string error;
  ASSERT_TRUE(ReadDigestFile(Write(digest(1, {all})), &f, &error)) << error;
  EXPECT_EQ(f.capture.log_dir_problems, all);
  EXPECT_TRUE(f.have_log_dir_problems);
  // A 2.0 digest (an older klf's) has none: its capture's list is the list.
  ASSERT_TRUE(ReadDigestFile(Write(digest(0, {})), &f, &error)) << error;
  EXPECT_EQ(f.capture.log_dir_problems, std::vector<std::string>{all[0]});
  EXPECT_FALSE(f.have_log_dir_problems);
  // In 2.0 the kind is unknown (damage); in 2.1 it comes once.
  EXPECT_FALSE(ReadDigestFile(Write(digest(0, {all})), &f, &error));
  EXPECT_NE(error.find("unknown section kind 3"), std::string::npos) << error;
  EXPECT_FALSE(ReadDigestFile(Write(digest(1, {all, all})), &f, &error));
  EXPECT_NE(error.find("a second log-dir problems section"), std::string::npos) << error;
  // A run stopped after its closing section but before the trailer: --resume keeps the copies and
  // writes the closing section again.
  const std::string closed = digest(1, {all});
  const std::string closing = DigestSection(kDigestSectionLogDirProblems, EncodeLogDirProblems(all));
  uint64_t valid = 0;
  uint32_t crc = 0;
  ASSERT_TRUE(ReadPartialDigest(Write(closed.substr(0, closed.size() - kDigestTrailerSize)), &f, &valid, &crc, &error))
      << error;
  EXPECT_EQ(valid, closed.size() - kDigestTrailerSize - closing.size());
  EXPECT_EQ(f.copies.size(), 1u);
  // Its payload is checked like any other.
  std::vector<std::string> out;
  EXPECT_FALSE(DecodeLogDirProblems(EncodeLogDirProblems(all) + "x", &out, &error));
  EXPECT_FALSE(DecodeLogDirProblems(EncodeLogDirProblems(all).substr(0, 5), &out, &error));
  ASSERT_TRUE(DecodeLogDirProblems(EncodeLogDirProblems(all), &out, &error)) << error;
  EXPECT_EQ(out, all);
}

TEST_F(DigestFileTest, VersionRule) {
  std::string newer_major = SmallDigest();
  newer_major[8] = char(kDigestMajor + 1);
  DigestFile f;
  std::string error;
  EXPECT_FALSE(ReadDigestFile(Write(newer_major), &f, &error));
  EXPECT_NE(error.find(fmt::format("byte 8: digest format version {}.{} is newer than this klf reads (1.0 and 2.x)",
                                   kDigestMajor + 1, kDigestMinor)),
            std::string::npos)
      << error;
  EXPECT_NE(error.find((dir_ / "d.kdg").string()), std::string::npos) << error;
  std::string major0 = SmallDigest();
  major0[8] = 0;
  EXPECT_FALSE(ReadDigestFile(Write(major0), &f, &error));
  EXPECT_NE(
      error.find(fmt::format("digest format version 0.{} does not exist (this klf reads 1.0 and 2.x)", kDigestMinor)),
      std::string::npos)
      << error;
  // A version 2 payload read as version 1 (or the reverse) is refused, not misread.
  std::string dir = Fixtures() + "/kafka-oracle/replicas/aborted-to-committed/broker2/foo-0";
  DigestCopy c;
  EXPECT_FALSE(DecodeDigestCopy(EncodeDigestCopy(CopyOf(dir, Load(dir))), &c, &error, 1));
  EXPECT_FALSE(DecodeDigestCopy(EncodeDigestCopy(CopyOf(dir, Load(dir))), &c, &error, 3));
  EXPECT_NE(error.find("digest format version 3 is not one this klf reads"), std::string::npos) << error;
  // A newer minor version with a section kind this klf does not know: read, the section skipped.
  EXPECT_TRUE(ReadDigestFile(Write(SmallDigest(kDigestMinor + 1, true)), &f, &error)) << error;
  EXPECT_EQ(f.copies.size(), 2u);
  // The same unknown section in this minor version is damage.
  EXPECT_FALSE(ReadDigestFile(Write(SmallDigest(kDigestMinor, true)), &f, &error));
  EXPECT_NE(error.find("unknown section kind 7"), std::string::npos) << error;
  // Foreign files.
  EXPECT_FALSE(ReadDigestFile(Write("hello, world: not a digest at all"), &f, &error));
  EXPECT_NE(error.find("not a klf digest"), std::string::npos) << error;
  EXPECT_FALSE(LooksLikeDigest(Write("KLFDIG")));
}

TEST(Digest, HostilePayloadsNeverCrash) {
  std::string dir = Fixtures() + "/kafka-oracle/b-txn/txn-0";
  std::string good = EncodeDigestCopy(CopyOf(dir, Load(dir)));
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string p = good;
    int flips = 1 + int(rng() % 8);
    for (int k = 0; k < flips; ++k) p[rng() % p.size()] = char(rng());
    if (rng() % 4 == 0) p.resize(rng() % p.size());
    DigestCopy c;
    std::string error;
    if (DecodeDigestCopy(p, &c, &error) && c.loaded) {
      // Whatever decodes is usable: indexes inside the state.
      for (const BatchSpan& b : c.state.batches) {
        if (!c.state.segment_files.empty()) {
          EXPECT_LT(b.segment, c.state.segment_files.size());
        }
      }
    }
  }
}

// A version 2 state's compressed part with bytes changed before compression (what a crafted digest that
// passes its checksums holds): refused or decoded to a state whose indexes are inside it, never a crash
// or an allocation beyond the payload's size.
TEST(Digest, HostileColumnsNeverCrash) {
  std::string dir = Fixtures() + "/kafka-oracle/b-txn/txn-0";
  DigestCopy copy;
  copy.loaded = true;
  copy.state = Load(dir);
  std::string good = EncodeDigestCopy(copy);
  // The payload: four empty strings, loaded, an empty error, two zero counts, an empty string, no files
  // (10 bytes), then the state: raw size, compressed part, hashes.
  size_t pos = 10;
  auto var = [&](const std::string& s) {
    uint64_t v = 0;
    for (int shift = 0; pos < s.size(); shift += 7) {
      uint8_t b = uint8_t(s[pos++]);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  uint64_t raw_size = var(good);
  uint64_t packed_size = var(good);
  std::string packed = good.substr(pos, packed_size);
  pos += packed_size;
  uint64_t hash_size = var(good);
  std::string hashes = good.substr(pos, hash_size);
  ASSERT_EQ(pos + hash_size, good.size());
  std::string raw, error;
  ASSERT_TRUE(Decompress(Compression::kZstd, AsBytes(packed), 2, raw_size, &raw, &error)) << error;
  ASSERT_EQ(raw.size(), raw_size);
  auto put_var = [](std::string* s, uint64_t v) {
    for (; v >= 0x80; v >>= 7) s->push_back(char((v & 0x7f) | 0x80));
    s->push_back(char(v));
  };
  std::mt19937 rng(11);
  int decoded = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string r = raw, h = hashes;
    int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) r[rng() % r.size()] = char(rng() % 4 == 0 ? rng() : rng() % 3);
    if (rng() % 8 == 0) h.resize(rng() % (h.size() + 1));
    if (rng() % 8 == 0) r.resize(rng() % (r.size() + 1));
    std::string z;
    Compress(Compression::kZstd, AsBytes(r), 2, &z);
    std::string p = good.substr(0, 10);
    put_var(&p, r.size());
    put_var(&p, z.size());
    p += z;
    put_var(&p, h.size());
    p += h;
    DigestCopy c;
    if (!DecodeDigestCopy(p, &c, &error) || !c.loaded) continue;
    ++decoded;
    const ReplicaState& st = c.state;
    for (const BatchSpan& b : st.batches) {
      if (!st.segment_files.empty()) {
        EXPECT_LT(b.segment, st.segment_files.size());
      }
      if (b.digested && !st.records_elided) {
        EXPECT_LE(uint64_t(b.first_record) + uint64_t(b.records), st.records.size());
      }
    }
    for (const RecordDigest& d : st.records) EXPECT_LT(d.txn, int64_t(st.txns.size()));
  }
  EXPECT_GT(decoded, 100);  // the changes reached the decoder, not only its checks
}

// Version 1 digests, written by klf 1.x's `klf digest` (before format 2) of Kafka-made replica sets with
// paths relative to the fixtures: read, every copy's state the one loading its directory gives.
TEST(Digest, Version1DigestsAreStillRead) {
  fs::path cwd = fs::current_path();
  fs::current_path(Fixtures());  // the digests name their log dirs relative to it
  size_t copies = 0, with_records = 0, elided = 0;
  for (const char* name : {"aborted-to-committed", "lost-tombstone-healthy-control", "real-ducphongphung"}) {
    std::string path = std::string(KLF_SOURCE_DIR) + "/tests/digest/v1/" + name + ".kdg";
    SCOPED_TRACE(path);
    for (bool keep : {true, false}) {
      DigestFile f;
      std::string error;
      ASSERT_TRUE(ReadDigestFile(path, &f, &error, keep)) << error;
      EXPECT_EQ(f.version.major, 1);
      EXPECT_EQ(f.version.minor, 0);
      for (DigestCopy& c : f.copies) {
        if (!c.loaded) continue;
        SCOPED_TRACE(c.path);
        ASSERT_TRUE(DecodeDigestState(f, &c, &error)) << error;
        ReplicaState loaded = Load(c.path);
        if (c.state.records_elided) {
          ++elided;
          std::vector<ReplicaState> rs = {c.state, loaded};
          std::string why;
          int64_t first = 0, last = 0;
          ASSERT_TRUE(RestoreElidedRecords(&rs, &why, &first, &last)) << why;
          ExpectSame(rs[0], loaded);
        } else {
          with_records += c.state.records.empty() ? 0 : 1;
          ExpectSame(c.state, loaded);
        }
        ++copies;
      }
    }
  }
  fs::current_path(cwd);
  // Both kinds of copy (records kept, plain ones as batch identities), each read eagerly and lazily.
  EXPECT_GT(copies, 100u) << copies;
  EXPECT_GT(with_records, 6u) << with_records;
  EXPECT_GE(elided, 6u) << elided;
}

}  // namespace
}  // namespace klf
