// LookupAhead: every answer it hands over is the map's own answer for that key, whichever records the
// caller asks about; it skips control batches and records beyond the map's latest offset.
#include "compactor/lookup_ahead.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_writer/batch_builder.h"
#include "tests/support/replica_builder.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

using test::Replica;
using test::TempDir;

struct Rec {
  int64_t offset;
  std::string key;
};

class LookupAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two segments: keyed records (1000 distinct keys, some tombstones), and a committed transaction
    // whose marker (a control batch) the look-ahead must skip.
    Replica a(tmp_.path(), "a"), b(tmp_.path(), "b");
    for (int64_t o = 0; o < 6000; o++) Add(a, o);
    for (int64_t o = 6000; o < 12000; o++) {
      if (o == 9000) {
        b.Txn(o, "txn-key", "v");
        b.Marker(o + 1, ControlType::kCommit);
        recs_.push_back({o, "txn-key"});
        o++;
        continue;
      }
      Add(b, o);
    }
    for (Replica* r : {&a, &b}) {
      std::string dir = r->Write();
      std::string path = dir + "/00000000000000000000.log";
      segments_.push_back({path, std::filesystem::file_size(path)});
    }
    std::string error;
    map_ = SkimpyOffsetMap::Create(1 << 20, &error);
    ASSERT_NE(map_, nullptr) << error;
    for (const Rec& r : recs_) map_->Put(AsBytes(r.key), r.offset);
    map_->UpdateLatestOffset(10000);  // records after it are not looked up
  }
  void Add(Replica& r, int64_t offset) {
    std::string key = "key-" + std::to_string(offset % 1000);
    if (offset % 7 == 0)
      r.Put(offset, key, std::nullopt);
    else
      r.Put(offset, key, "value-" + std::to_string(offset));
    recs_.push_back({offset, key});
  }

  TempDir tmp_;
  std::vector<Rec> recs_;
  std::vector<LookupAhead::Segment> segments_;
  std::unique_ptr<SkimpyOffsetMap> map_;
};

TEST_F(LookupAheadTest, EveryAnswerIsTheMapsOwn) {
  LookupAhead ahead(*map_, segments_, 1 << 20);
  ahead.TEST_WaitUntilIdle();  // the thread is ahead of every call below
  int64_t expected_answers = 0;
  for (const Rec& r : recs_) {
    if (r.offset > map_->latest_offset()) {
      EXPECT_EQ(ahead.Find(r.offset, AsBytes(r.key)), std::nullopt) << r.offset;
      continue;
    }
    std::optional<int64_t> got = ahead.Find(r.offset, AsBytes(r.key));
    ASSERT_TRUE(got.has_value()) << "offset " << r.offset;
    EXPECT_EQ(*got, map_->Get(AsBytes(r.key))) << "offset " << r.offset;
    expected_answers++;
  }
  EXPECT_EQ(ahead.answered(), expected_answers);
  EXPECT_EQ(expected_answers, 10000);  // offsets 0..10000 minus the marker
}

TEST_F(LookupAheadTest, CallerSkippingRecordsStillGetsTheRightAnswers) {
  LookupAhead ahead(*map_, segments_, 1 << 20);
  ahead.TEST_WaitUntilIdle();
  int64_t asked = 0;
  for (size_t i = 0; i < recs_.size(); i += 3) {
    const Rec& r = recs_[i];
    if (r.offset > map_->latest_offset()) break;
    std::optional<int64_t> got = ahead.Find(r.offset, AsBytes(r.key));
    ASSERT_TRUE(got.has_value()) << "offset " << r.offset;
    EXPECT_EQ(*got, map_->Get(AsBytes(r.key)));
    asked++;
  }
  EXPECT_EQ(ahead.answered(), asked);
}

TEST_F(LookupAheadTest, AnotherKeyAtTheSameOffsetIsNotAnswered) {
  LookupAhead ahead(*map_, segments_, 1 << 20);
  ahead.TEST_WaitUntilIdle();
  EXPECT_EQ(ahead.Find(5, AsBytes("not-the-key")), std::nullopt);
  EXPECT_EQ(ahead.Find(6, AsBytes("key-6")), std::optional<int64_t>(map_->Get(AsBytes("key-6"))));
}

TEST_F(LookupAheadTest, DamagedOrMissingSegmentEndsTheLookAheadQuietly) {
  // The second segment's path does not exist: answers for the first are still right; none after.
  segments_[1].path += ".missing";
  LookupAhead ahead(*map_, segments_, 1 << 20);
  ahead.TEST_WaitUntilIdle();
  for (const Rec& r : recs_) {
    std::optional<int64_t> got = ahead.Find(r.offset, AsBytes(r.key));
    if (r.offset < 6000) {
      ASSERT_TRUE(got.has_value()) << r.offset;
      EXPECT_EQ(*got, map_->Get(AsBytes(r.key)));
    } else {
      EXPECT_EQ(got, std::nullopt) << r.offset;
    }
  }
}

// A segment of compressed batches (every codec in turn): the pass takes the sections the thread
// decompressed, or decompresses a batch itself, and decodes the same records either way.
class SectionHandOverTest : public ::testing::Test {
 protected:
  static constexpr int kBatches = 400;
  static constexpr int kPerBatch = 5;
  void SetUp() override {
    const Compression codecs[] = {Compression::kLz4, Compression::kZstd, Compression::kGzip, Compression::kSnappy};
    std::vector<std::string> keys, values;
    for (int b = 0; b < kBatches; b++) {
      keys.clear();
      values.clear();
      for (int i = 0; i < kPerBatch; i++) {
        const int64_t o = int64_t(b) * kPerBatch + i;
        keys.push_back("key-" + std::to_string(o % 300));
        values.push_back("value-" + std::to_string(o) + std::string(40, char('a' + o % 26)));
      }
      std::vector<RecordInput> records(kPerBatch);
      for (int i = 0; i < kPerBatch; i++) {
        records[i].offset = int64_t(b) * kPerBatch + i;
        records[i].timestamp = 1700000000000 + records[i].offset;
        records[i].key = AsBytes(keys[i]);
        records[i].value = AsBytes(values[i]);
      }
      V2BatchOptions o;
      o.base_offset = int64_t(b) * kPerBatch;
      o.compression = codecs[b % 4];
      BuiltBatch built;
      std::string error;
      ASSERT_TRUE(AppendV2Batch(o, records, &log_, &built, &error)) << error;
      for (const std::string& k : keys) map_keys_.push_back(k);
    }
    path_ = tmp_.path() + "/00000000000000000000.log";
    std::ofstream(path_, std::ios::binary) << log_;
    std::string error;
    map_ = SkimpyOffsetMap::Create(1 << 20, &error);
    ASSERT_NE(map_, nullptr) << error;
    for (size_t i = 0; i < map_keys_.size(); i++) map_->Put(AsBytes(map_keys_[i]), int64_t(i));
    map_->UpdateLatestOffset(int64_t(map_keys_.size()) - 1);
  }
  // Walks the batches as the cleaning pass does, asking for every `step`-th one; returns the number
  // of batches asked for. Every decode must equal a plain Decode of the batch.
  int Walk(LookupAhead* ahead, int step) {
    LogReader reader(path_, AsBytes(log_), nullptr);
    RecordDecoder pass, plain;
    std::string section;
    BatchView b;
    int n = 0, asked = 0;
    while (reader.Next(&b)) {
      if (n++ % step != 0) continue;
      asked++;
      const bool taken = ahead->TakeSection(path_, b.header, &section);
      EXPECT_TRUE(taken ? pass.DecodeDecompressed(b, path_, nullptr, &section) : pass.Decode(b, path_, nullptr));
      EXPECT_TRUE(plain.Decode(b, path_, nullptr));
      EXPECT_EQ(pass.records().size(), plain.records().size());
      for (size_t i = 0; i < std::min(pass.records().size(), plain.records().size()); i++) {
        const Record& x = pass.records()[i];
        const Record& y = plain.records()[i];
        EXPECT_EQ(x.offset, y.offset);
        EXPECT_EQ(AsStringView(*x.key), AsStringView(*y.key)) << x.offset;
        EXPECT_EQ(AsStringView(*x.value), AsStringView(*y.value)) << x.offset;
      }
    }
    EXPECT_EQ(n, kBatches);
    return asked;
  }

  TempDir tmp_;
  std::string log_, path_;
  std::vector<std::string> map_keys_;
  std::unique_ptr<SkimpyOffsetMap> map_;
};

TEST_F(SectionHandOverTest, ThreadAheadHandsOverEverySection) {
  LookupAhead ahead(*map_, {{path_, log_.size()}}, 1 << 20);
  ahead.TEST_WaitUntilIdle();  // all sections (about 100 KiB) fit the queue
  EXPECT_EQ(Walk(&ahead, 1), kBatches);
  // zstd and gzip batches are handed over (LookupAhead::HandsOver), lz4 and snappy decompressed again.
  EXPECT_TRUE(LookupAhead::HandsOver(Compression::kZstd) && LookupAhead::HandsOver(Compression::kGzip));
  int handed = 0;
  for (Compression c : {Compression::kLz4, Compression::kZstd, Compression::kGzip, Compression::kSnappy})
    handed += LookupAhead::HandsOver(c) ? kBatches / 4 : 0;
  EXPECT_EQ(ahead.sections_taken(), handed);
}

TEST_F(SectionHandOverTest, RacingCallerDecodesTheSameRecords) {
  // The caller starts at once: each batch is either taken from the thread or, when the thread has not
  // got there yet, decompressed by the caller; the records are the same every way.
  for (int step : {1, 2, 7}) {
    LookupAhead ahead(*map_, {{path_, log_.size()}}, 1 << 20);
    const int asked = Walk(&ahead, step);
    EXPECT_LE(ahead.sections_taken(), asked);
  }
}

TEST_F(SectionHandOverTest, AnswersStillComeWithTheSections) {
  LookupAhead ahead(*map_, {{path_, log_.size()}}, 1 << 20);
  ahead.TEST_WaitUntilIdle();
  for (size_t i = 0; i < map_keys_.size(); i++) {
    std::optional<int64_t> got = ahead.Find(int64_t(i), AsBytes(map_keys_[i]));
    ASSERT_TRUE(got.has_value()) << i;
    EXPECT_EQ(*got, map_->Get(AsBytes(map_keys_[i])));
  }
}

TEST(SectionHandOverQueueTest, OffsetsGoingBackwardsDoNotHangTheCaller) {
  // A damaged log: 41 zstd batches of ~100 KB sections at offsets from 1,000,000, then one at offset 0.
  // The caller skips the first 41 (as it does batches it deletes whole) and asks for the last while the
  // thread's queue holds the sections it skipped: it must neither wait forever nor decode anything but
  // the batch's own records.
  TempDir tmp;
  std::string log;
  const std::string value(100000, 'v');
  for (int b = 0; b <= 41; b++) {
    RecordInput r;
    r.offset = b < 41 ? 1000000 + b : 0;
    r.timestamp = 1700000000000;
    const std::string key = "key-" + std::to_string(b);
    r.key = AsBytes(key);
    r.value = AsBytes(value);
    V2BatchOptions o;
    o.base_offset = r.offset;
    o.compression = Compression::kZstd;
    BuiltBatch built;
    std::string error;
    ASSERT_TRUE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &log, &built, &error)) << error;
  }
  const std::string path = tmp.path() + "/00000000000000000000.log";
  std::ofstream(path, std::ios::binary) << log;
  std::string error;
  std::unique_ptr<SkimpyOffsetMap> map = SkimpyOffsetMap::Create(1 << 20, &error);
  ASSERT_NE(map, nullptr) << error;
  map->UpdateLatestOffset(2000000);
  LookupAhead ahead(*map, {{path, log.size()}}, 1 << 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // lets the thread fill its queue
  LogReader reader(path, AsBytes(log), nullptr);
  BatchView b;
  int n = 0;
  while (reader.Next(&b)) {
    if (++n <= 41) continue;
    std::string section;
    RecordDecoder pass;
    const bool taken = ahead.TakeSection(path, b.header, &section);
    ASSERT_TRUE(taken ? pass.DecodeDecompressed(b, path, nullptr, &section) : pass.Decode(b, path, nullptr));
    ASSERT_EQ(pass.records().size(), 1u);
    EXPECT_EQ(pass.records()[0].offset, 0);
    EXPECT_EQ(AsStringView(*pass.records()[0].key), "key-41");
  }
  EXPECT_EQ(n, 42);
}

}  // namespace
}  // namespace klf
