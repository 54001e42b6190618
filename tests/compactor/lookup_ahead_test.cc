// LookupAhead: every answer it hands over is the map's own answer for that key, whichever records the
// caller asks about; it skips control batches and records beyond the map's latest offset.
#include "compactor/lookup_ahead.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_writer/batch_builder.h"
#include "tests/support/fault_injection_env.h"
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

// A segment of compressed batches (every codec in turn) and uncompressed ones: the pass takes the
// batches the thread decoded, or decodes a batch itself, and gets the same records either way, with
// the map's own answer for every key the thread looked up.
class DecodedHandOverTest : public ::testing::Test {
 protected:
  static constexpr int kBatches = 400;
  static constexpr int kPerBatch = 5;
  static constexpr Compression kCodecs[] = {Compression::kLz4, Compression::kZstd, Compression::kGzip,
                                            Compression::kSnappy, Compression::kNone};
  static constexpr int kCompressedBatches = kBatches * 4 / 5;
  void SetUp() override {
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
        if (i != 3) records[i].key = AsBytes(keys[i]);  // one record of each batch has no key
        records[i].value = AsBytes(values[i]);
      }
      V2BatchOptions o;
      o.base_offset = int64_t(b) * kPerBatch;
      o.compression = kCodecs[b % 5];
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
    map_->UpdateLatestOffset(int64_t(map_keys_.size()) - 100);  // the last records are not looked up
  }
  // Walks the batches as the cleaning pass does, asking for every `step`-th one; returns the number
  // of batches asked for. Every batch's records must equal a plain Decode's.
  int Walk(LookupAhead* ahead, int step) {
    LogReader reader(path_, AsBytes(log_), nullptr);
    RecordDecoder own, plain;
    std::unique_ptr<LookupAhead::Decoded> taken;
    BatchView b;
    int n = 0, asked = 0;
    while (reader.Next(&b)) {
      if (n++ % step != 0) continue;
      asked++;
      const RecordDecoder* pass = &own;
      const bool handed = LookupAhead::HandsOver(b.header) && ahead->TakeDecoded(path_, b.header, &taken);
      if (handed) {
        pass = &taken->decoder;
        EXPECT_NE(b.header.compression, Compression::kNone);
      } else {
        EXPECT_TRUE(own.Decode(b, path_, nullptr));
      }
      EXPECT_TRUE(plain.Decode(b, path_, nullptr));
      EXPECT_EQ(pass->header().base_offset, plain.header().base_offset);
      EXPECT_EQ(pass->records().size(), plain.records().size());
      if (handed) {
        EXPECT_EQ(taken->found.size(), plain.records().size());
      }
      for (size_t i = 0; i < std::min(pass->records().size(), plain.records().size()); i++) {
        const Record& x = pass->records()[i];
        const Record& y = plain.records()[i];
        EXPECT_EQ(x.offset, y.offset);
        EXPECT_EQ(x.timestamp, y.timestamp);
        EXPECT_EQ(x.key.has_value(), y.key.has_value()) << x.offset;
        if (x.key && y.key) {
          EXPECT_EQ(AsStringView(*x.key), AsStringView(*y.key)) << x.offset;
        }
        EXPECT_EQ(AsStringView(*x.value), AsStringView(*y.value)) << x.offset;
        if (!handed || i >= taken->found.size()) continue;
        // The answer for every key the pass looks up (keyed, at or below the map's latest offset), the
        // map's own; none for the others.
        if (y.key && y.offset <= map_->latest_offset()) {
          EXPECT_EQ(taken->found[i], std::optional<int64_t>(map_->Get(*y.key))) << y.offset;
        } else {
          EXPECT_EQ(taken->found[i], std::nullopt) << y.offset;
        }
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

TEST_F(DecodedHandOverTest, ThreadAheadHandsOverEveryCompressedBatch) {
  LookupAhead ahead(*map_, {{path_, log_.size()}}, 1 << 20);
  ahead.TEST_WaitUntilIdle();  // all batches (about 200 KiB decoded) fit the queue
  EXPECT_EQ(Walk(&ahead, 1), kBatches);
  // Every codec's batches are handed over decoded; uncompressed ones are not (HandsOver).
  EXPECT_EQ(ahead.batches_taken(), kCompressedBatches);
}

TEST_F(DecodedHandOverTest, RacingCallerDecodesTheSameRecords) {
  // The caller starts at once: each batch is either taken from the thread or, when the thread has not
  // got there yet, decoded by the caller; the records are the same every way.
  for (int step : {1, 2, 7}) {
    LookupAhead ahead(*map_, {{path_, log_.size()}}, 1 << 20);
    const int asked = Walk(&ahead, step);
    EXPECT_LE(ahead.batches_taken(), asked);
  }
}

TEST_F(DecodedHandOverTest, AnswersOfUncompressedBatchesComeThroughFind) {
  // Answers for records of decoded batches come with the batch, not through Find; the uncompressed
  // batches' answers do, and are the map's own.
  LookupAhead ahead(*map_, {{path_, log_.size()}}, 1 << 20);
  ahead.TEST_WaitUntilIdle();
  int64_t answered = 0;
  for (size_t i = 0; i < map_keys_.size(); i++) {
    const int64_t offset = int64_t(i);
    if (offset > map_->latest_offset() || i % kPerBatch == 3) continue;
    std::optional<int64_t> got = ahead.Find(offset, AsBytes(map_keys_[i]));
    const bool uncompressed = (i / kPerBatch) % 5 == 4;
    if (!uncompressed) {
      EXPECT_EQ(got, std::nullopt) << i;
      continue;
    }
    ASSERT_TRUE(got.has_value()) << i;
    EXPECT_EQ(*got, map_->Get(AsBytes(map_keys_[i])));
    answered++;
  }
  EXPECT_EQ(ahead.answered(), answered);
  EXPECT_GT(answered, 0);
}

// The superseded records of a batch handed over decoded are left out of it and only counted
// (LookupAhead::Decoded::elided): the records handed over are every other record of the batch, each
// as a plain Decode gives it, with the map's answer.
TEST(DecodedHandOverElisionTest, SupersededRecordsAreCountedNotHandedOver) {
  // 60 compressed batches (every codec) of 20 records; 97 keys written over and over, every 13th
  // record a tombstone, the 7th of each batch without a key (never put: always handed over).
  TempDir tmp;
  std::string log;
  constexpr Compression kCodecs[] = {Compression::kGzip, Compression::kSnappy, Compression::kLz4, Compression::kZstd};
  constexpr int kBatches = 60, kPerBatch = 20;
  std::vector<std::string> keys(kBatches * kPerBatch);
  for (int b = 0; b < kBatches; b++) {
    std::vector<RecordInput> records(kPerBatch);
    const std::string value = "value-" + std::to_string(b);
    for (int i = 0; i < kPerBatch; i++) {
      RecordInput& r = records[i];
      r.offset = int64_t(b) * kPerBatch + i;
      r.timestamp = 1700000000000 + r.offset;
      keys[r.offset] = "k" + std::to_string(r.offset % 97);
      if (i != 7) r.key = AsBytes(keys[r.offset]);
      if (r.offset % 13 != 0) r.value = AsBytes(value);
    }
    V2BatchOptions o;
    o.base_offset = int64_t(b) * kPerBatch;
    o.compression = kCodecs[b % 4];
    std::string error;
    ASSERT_TRUE(AppendV2Batch(o, records, &log, nullptr, &error)) << error;
  }
  const std::string path = tmp.path() + "/00000000000000000000.log";
  std::ofstream(path, std::ios::binary) << log;
  // The map pass: every keyed record put in order, the tracker told of each batch and put.
  std::string error;
  std::unique_ptr<SkimpyOffsetMap> map = SkimpyOffsetMap::Create(1 << 20, &error);
  ASSERT_NE(map, nullptr) << error;
  SupersededRecords superseded;
  superseded.Reset(0, kBatches * kPerBatch);
  RecordDecoder plain;
  {
    LogReader reader(path, AsBytes(log), nullptr);
    BatchView b;
    while (reader.Next(&b)) {
      ASSERT_TRUE(plain.Decode(b, path, nullptr));
      superseded.OnBatch(b.header);
      for (const Record& r : plain.records()) {
        if (!r.key) continue;
        int64_t previous = -1;
        ASSERT_TRUE(map->Put(*r.key, r.offset, &previous));
        superseded.OnPut(r.offset, previous, !r.value);
      }
      map->UpdateLatestOffset(b.header.last_offset);
    }
  }
  ASSERT_TRUE(superseded.on());

  LookupAhead ahead(*map, {{path, log.size()}}, 1 << 20, nullptr, &superseded);
  ahead.TEST_WaitUntilIdle();  // every batch decoded: room in the queue for all
  LogReader reader(path, AsBytes(log), nullptr);
  BatchView b;
  std::unique_ptr<LookupAhead::Decoded> taken;
  int64_t elided = 0, handed = 0, handed_batches = 0;
  while (reader.Next(&b)) {
    ASSERT_TRUE(plain.Decode(b, path, nullptr));
    int64_t tombstones = 0;
    if (superseded.AllSuperseded(b.header, map->latest_offset(), &tombstones)) continue;  // the pass skips it
    SCOPED_TRACE("batch at " + std::to_string(b.header.base_offset));
    ASSERT_TRUE(ahead.TakeDecoded(path, b.header, &taken));
    handed_batches++;
    int64_t batch_elided = 0, elided_tombstones = 0;
    size_t next = 0;
    for (const Record& r : plain.records()) {
      const std::optional<int64_t> found = superseded.Found(r.offset);
      if (found && *found > r.offset) {  // put, then superseded
        batch_elided++;
        elided_tombstones += !r.value;
        continue;
      }
      ASSERT_LT(next, taken->decoder.records().size());
      const Record& x = taken->decoder.records()[next];
      EXPECT_EQ(x.offset, r.offset);
      EXPECT_EQ(x.timestamp, r.timestamp);
      EXPECT_EQ(x.key.has_value(), r.key.has_value());
      if (x.key && r.key) {
        EXPECT_EQ(AsStringView(*x.key), AsStringView(*r.key));
      }
      EXPECT_EQ(x.value.has_value(), r.value.has_value());
      if (x.value && r.value) {
        EXPECT_EQ(AsStringView(*x.value), AsStringView(*r.value));
      }
      // The answer the pass needs: the map's own for every keyed record (its offset: it is the latest).
      EXPECT_EQ(taken->found[next], r.key ? std::optional<int64_t>(map->Get(*r.key)) : std::nullopt) << r.offset;
      next++;
    }
    EXPECT_EQ(next, taken->decoder.records().size());
    EXPECT_EQ(taken->elided, batch_elided);
    EXPECT_EQ(taken->elided_tombstones, elided_tombstones);
    EXPECT_EQ(taken->decoder.header().base_offset, b.header.base_offset);
    elided += batch_elided;
    handed += int64_t(next);
  }
  EXPECT_GT(handed_batches, 0);
  EXPECT_GT(elided, 0);
  EXPECT_GT(handed, handed_batches);  // the keyless record of each, and the latest records
}

TEST_F(LookupAheadTest, LentJobsRunOnceEachByTheThreadOrByReclaim) {
  LookupAhead ahead(*map_, segments_, 1 << 20);
  std::vector<int> runs(2000, 0);
  std::vector<std::function<void()>> jobs;
  for (size_t i = 0; i < runs.size(); i++) jobs.push_back([&runs, i] { runs[i]++; });
  for (size_t i = 0; i < jobs.size(); i++) {
    ahead.Lend(&jobs[i]);
    // Now and then the answers the thread has, so that it reads on while jobs wait for it.
    if (i % 100 == 0) ahead.Find(int64_t(i), AsBytes(recs_[i].key));
  }
  ahead.Reclaim();
  for (size_t i = 0; i < runs.size(); i++) EXPECT_EQ(runs[i], 1) << "job " << i;
  EXPECT_LE(ahead.jobs_run_by_thread(), int64_t(runs.size()));
  ahead.Reclaim();  // nothing lent: returns at once
}

// A log of `count` zstd batches of one record each with a ~100 KB value (large decoded batches), the
// b-th at offset offset_of(b).
std::string LargeZstdBatches(int count, const std::function<int64_t(int)>& offset_of) {
  std::string log;
  const std::string value(100000, 'v');
  for (int b = 0; b < count; b++) {
    RecordInput r;
    r.offset = offset_of(b);
    r.timestamp = 1700000000000;
    const std::string key = "key-" + std::to_string(b);
    r.key = AsBytes(key);
    r.value = AsBytes(value);
    V2BatchOptions o;
    o.base_offset = r.offset;
    o.compression = Compression::kZstd;
    std::string error;
    EXPECT_TRUE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &log, nullptr, &error)) << error;
  }
  return log;
}

// A segment of LargeZstdBatches written to a scratch directory, and an empty map whose latest offset
// is `latest` (the look-ahead decodes the batches at or below it for the pass).
struct LargeZstdSegment {
  LargeZstdSegment(int count, const std::function<int64_t(int)>& offset_of, int64_t latest)
      : log(LargeZstdBatches(count, offset_of)), path(tmp.path() + "/00000000000000000000.log") {
    std::ofstream(path, std::ios::binary) << log;
    std::string error;
    map = SkimpyOffsetMap::Create(1 << 20, &error);
    EXPECT_NE(map, nullptr) << error;
    if (map) map->UpdateLatestOffset(latest);
  }
  std::vector<LookupAhead::Segment> segments() const { return {{path, log.size()}}; }

  TempDir tmp;
  std::string log, path;
  std::unique_ptr<SkimpyOffsetMap> map;
};

// Lends a job and waits (up to ten seconds) for the thread to run it, without Reclaim.
void ExpectTheThreadToRunALentJob(LookupAhead* ahead) {
  std::atomic<bool> ran{false};
  std::function<void()> job = [&ran] { ran = true; };
  ahead->Lend(&job);
  for (int i = 0; i < 2000 && !ran; i++) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(ran);
  EXPECT_EQ(ahead->jobs_run_by_thread(), 1);
  ahead->Reclaim();
}

TEST(LentJobsTest, AThreadWithNothingLeftToReadRunsThemWithoutReclaim) {
  std::string error;
  std::unique_ptr<SkimpyOffsetMap> map = SkimpyOffsetMap::Create(1 << 20, &error);
  ASSERT_NE(map, nullptr) << error;
  LookupAhead ahead(*map, {}, 1 << 20);
  ahead.TEST_WaitUntilIdle();  // no segment: the thread has read all there is
  ExpectTheThreadToRunALentJob(&ahead);
}

TEST(LentJobsTest, AThreadWaitingForRoomInItsQueueRunsThem) {
  // 100 batches: more than the 8 MiB of decoded batches the thread queues before it waits for the caller.
  LargeZstdSegment seg(
      100, [](int b) { return int64_t(b); }, 1000);
  ASSERT_NE(seg.map, nullptr);
  LookupAhead ahead(*seg.map, seg.segments(), 1 << 20);
  ahead.TEST_WaitUntilIdle();  // the queue is full: the thread waits for the caller
  ExpectTheThreadToRunALentJob(&ahead);
}

// Inputs open only once the test says so: the look-ahead thread reads nothing before.
class GatedEnv : public FaultInjectionEnv {
 public:
  GatedEnv() : FaultInjectionEnv(Env::Default()) {}
  std::unique_ptr<ReadableFile> NewReadableFile(const std::string& path, std::string* error,
                                                InputFailure* failure = nullptr) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return open_; });
    }
    return FaultInjectionEnv::NewReadableFile(path, error, failure);
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(LentJobsTest, AThreadAheadOfThePassRunsThemBeforeDecodingMore) {
  // 40 batches (4 MB decoded: the queue has room for all, so the thread never waits for room). A
  // job lent before the thread reads anything runs as soon as one decoded batch waits for the pass:
  // the pass is behind, and its work comes first.
  LargeZstdSegment seg(
      40, [](int b) { return int64_t(b); }, 1000);
  ASSERT_NE(seg.map, nullptr);
  GatedEnv env;
  LookupAhead ahead(*seg.map, seg.segments(), 1 << 20, &env);
  std::atomic<bool> ran{false};
  std::atomic<size_t> queued = 0;
  std::function<void()> job = [&] {
    queued = ahead.TEST_DecodedQueued();
    ran = true;
  };
  ahead.Lend(&job);
  env.Open();
  for (int i = 0; i < 2000 && !ran; i++) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(ran);
  EXPECT_EQ(ahead.jobs_run_by_thread(), 1);
  EXPECT_EQ(queued, 1u);  // after the first batch, not the 40th
  ahead.Reclaim();
}

TEST(DecodedHandOverQueueTest, OffsetsGoingBackwardsDoNotHangTheCaller) {
  // A damaged log: 41 zstd batches of ~100 KB sections at offsets from 1,000,000, then one at offset 0.
  // The caller skips the first 41 (as it does batches it deletes whole) and asks for the last while the
  // thread's queue holds the batches it skipped: it must neither wait forever nor get anything but
  // the batch's own records.
  LargeZstdSegment seg(
      42, [](int b) { return b < 41 ? 1000000 + int64_t(b) : int64_t(0); }, 2000000);
  ASSERT_NE(seg.map, nullptr);
  const std::string& path = seg.path;
  LookupAhead ahead(*seg.map, seg.segments(), 1 << 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // lets the thread fill its queue
  LogReader reader(path, AsBytes(seg.log), nullptr);
  BatchView b;
  int n = 0;
  std::unique_ptr<LookupAhead::Decoded> taken;
  while (reader.Next(&b)) {
    if (++n <= 41) continue;
    RecordDecoder own;
    const bool handed = ahead.TakeDecoded(path, b.header, &taken);
    if (!handed) {
      ASSERT_TRUE(own.Decode(b, path, nullptr));
    }
    const RecordDecoder& pass = handed ? taken->decoder : own;
    ASSERT_EQ(pass.records().size(), 1u);
    EXPECT_EQ(pass.records()[0].offset, 0);
    EXPECT_EQ(AsStringView(*pass.records()[0].key), "key-41");
  }
  EXPECT_EQ(n, 42);
}

}  // namespace
}  // namespace klf
