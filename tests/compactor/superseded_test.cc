// SupersededRecords (compactor/superseded.h): the map pass's record of which dirty records a later
// record of their key superseded, and the cleaning pass deciding such batches from their headers.
// The Kafka-made cases (oracle_test.cc) run with it on; here its own rules, and whole compactions
// with it on and off that must leave the same bytes and the same statistics.
#include "compactor/superseded.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "compactor/cleaner.h"
#include "segment_writer/batch_builder.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {
namespace fs = std::filesystem;

BatchHeader V2(int64_t base, int64_t last, int32_t count, bool control = false) {
  BatchHeader h;
  h.magic = 2;
  h.base_offset = base;
  h.last_offset = last;
  h.record_count = count;
  h.is_control = control;
  return h;
}

TEST(SupersededRecordsTest, ABatchIsSupersededWhenEveryRecordWasPutAndReplaced) {
  SupersededRecords s;
  s.Reset(100, 200);
  s.OnBatch(V2(100, 102, 3));
  s.OnPut(100, -1, false);   // key a
  s.OnPut(101, -1, true);    // key b, a tombstone
  s.OnPut(102, 100, false);  // key a again
  s.OnBatch(V2(103, 104, 2));
  s.OnPut(103, 101, false);  // key b
  s.OnPut(104, 102, false);  // key a
  int64_t tombstones = -1;
  EXPECT_TRUE(s.AllSuperseded(V2(100, 102, 3), 104, &tombstones));
  EXPECT_EQ(tombstones, 1);
  EXPECT_FALSE(s.AllSuperseded(V2(103, 104, 2), 104, &tombstones));  // both still the latest
  // A record's answer without the map: its own offset while the latest of its key, else a later one.
  EXPECT_EQ(s.Found(104), 104);
  EXPECT_EQ(s.Found(100), 101);
  EXPECT_EQ(s.Found(99), std::nullopt);   // outside the range
  EXPECT_EQ(s.Found(105), std::nullopt);  // not put
  // Beyond the map's latest offset, records are kept whatever the map says (§15.3).
  EXPECT_FALSE(s.AllSuperseded(V2(100, 102, 3), 101, &tombstones));
  // A count that is not the records put: a record was not put (no key), or the header is another batch's.
  EXPECT_FALSE(s.AllSuperseded(V2(100, 102, 4), 104, &tombstones));
  EXPECT_FALSE(s.AllSuperseded(V2(100, 102, 3, /*control=*/true), 104, &tombstones));
  BatchHeader legacy = V2(100, 102, 3);
  legacy.magic = 1;
  EXPECT_FALSE(s.AllSuperseded(legacy, 104, &tombstones));
  EXPECT_FALSE(s.AllSuperseded(V2(99, 102, 4), 104, &tombstones));  // starts before the range
}

TEST(SupersededRecordsTest, CountsAcrossWordBoundaries) {
  SupersededRecords s;
  s.Reset(0, 1000);
  // One batch of 200 records at 50..249, each key once; then a batch replacing all but 130 and 191.
  s.OnBatch(V2(50, 249, 200));
  for (int64_t o = 50; o < 250; o++) s.OnPut(o, -1, o % 64 == 0);
  s.OnBatch(V2(300, 499, 200));
  for (int64_t o = 300; o < 500; o++) s.OnPut(o, (o - 250 == 130 || o - 250 == 191) ? -1 : o - 250, false);
  int64_t tombstones = 0;
  EXPECT_FALSE(s.AllSuperseded(V2(50, 249, 200), 499, &tombstones));
  EXPECT_FALSE(s.AllSuperseded(V2(120, 130, 11), 499, &tombstones));  // 130 is live
  EXPECT_TRUE(s.AllSuperseded(V2(50, 129, 80), 499, &tombstones));    // every bit up to 129 superseded
  s.Supersede(130);
  s.Supersede(191);
  EXPECT_TRUE(s.AllSuperseded(V2(50, 249, 200), 499, &tombstones));
  EXPECT_EQ(tombstones, 3);                                       // 64, 128, 192
  EXPECT_TRUE(s.AllSuperseded(V2(63, 65, 3), 499, &tombstones));  // inside a batch's offsets: all put
  EXPECT_EQ(tombstones, 1);
}

TEST(SupersededRecordsTest, TurnsItselfOffWhenOffsetsDoNotNameOneRecord) {
  int64_t t = 0;
  auto two_batches = [](SupersededRecords* s) {
    s->Reset(0, 100);
    s->OnBatch(V2(0, 1, 2));
    s->OnPut(0, -1, false);
    s->OnPut(1, -1, false);
  };
  SupersededRecords s;
  two_batches(&s);
  s.OnBatch(V2(1, 3, 2));  // overlaps the batch before
  EXPECT_FALSE(s.on());
  two_batches(&s);
  s.OnBatch(V2(2, 3, 2));
  s.OnPut(5, 0, false);  // outside its batch
  EXPECT_FALSE(s.on());
  two_batches(&s);
  s.OnBatch(V2(2, 9, 2));
  s.OnPut(4, 0, false);
  s.OnPut(4, 1, false);  // not after the record before
  EXPECT_FALSE(s.on());
  two_batches(&s);
  BatchHeader legacy = V2(2, 3, 2);
  legacy.magic = 1;
  s.OnBatch(legacy);
  EXPECT_FALSE(s.on());
  EXPECT_FALSE(s.AllSuperseded(V2(0, 1, 2), 10, &t));
  s.Reset(0, SupersededRecords::kMaxOffsets + 1);  // too wide to track
  EXPECT_FALSE(s.on());
  s.Reset(5, 5);
  EXPECT_FALSE(s.on());
}

TEST(SupersededRecordsTest, MergesTheSecondHalfsRecords) {
  SupersededRecords first, second;
  first.Reset(0, 100);
  second.Reset(0, 100);
  first.OnBatch(V2(0, 1, 2));
  first.OnPut(0, -1, false);  // key a
  first.OnPut(1, -1, true);   // key b
  second.OnBatch(V2(2, 2, 1));
  second.OnPut(2, -1, false);  // key a, unknown to the second half's own map
  // The merge put the second map's entry for a over the first's (offset 0).
  first.Supersede(0);
  first.MergeNewer(second);
  ASSERT_TRUE(first.on());
  int64_t t = 0;
  EXPECT_FALSE(first.AllSuperseded(V2(0, 1, 2), 2, &t));  // b at 1 is live
  first.Supersede(1);
  EXPECT_TRUE(first.AllSuperseded(V2(0, 1, 2), 2, &t));
  EXPECT_EQ(t, 1);
  // A second half that starts inside the first's offsets cannot be merged.
  SupersededRecords overlapping;
  overlapping.Reset(0, 100);
  overlapping.OnBatch(V2(1, 3, 1));
  first.MergeNewer(overlapping);
  EXPECT_FALSE(first.on());
}

// A log of compressed (or not) batches of random keys drawn from a small key space, with tombstones,
// keyless records and an idempotent producer whose last batch must stay, cleaned with the skip on and off: the same
// files, byte for byte, and the same statistics.
void WriteLog(const std::string& dir, Compression codec, uint32_t seed) {
  fs::create_directories(dir);
  std::mt19937 rng(seed);
  int64_t next = 0;
  std::string segment;
  int64_t segment_base = 0;
  std::string error;
  auto flush = [&] {
    char name[32];
    std::snprintf(name, sizeof(name), "%020lld.log", static_cast<long long>(segment_base));
    test::WriteAll(dir + "/" + name, segment);
    segment.clear();
    segment_base = next;
  };
  for (int b = 0; b < 240; b++) {
    std::vector<std::string> keys, values;
    std::vector<RecordInput> records;
    int n = 1 + int(rng() % 12);
    for (int i = 0; i < n; i++) {
      keys.push_back("k" + std::to_string(rng() % 60));
      values.push_back(std::string(20 + rng() % 40, char('a' + rng() % 26)));
    }
    for (int i = 0; i < n; i++) {
      RecordInput r;
      r.offset = next + i;
      r.timestamp = 1700000000000 + next + i;
      if (b % 37 != 5 || i != 0) r.key = AsBytes(keys[size_t(i)]);  // now and then a record without a key
      if (rng() % 9 != 0) r.value = AsBytes(values[size_t(i)]);     // about one in nine a tombstone
      records.push_back(r);
    }
    V2BatchOptions o;
    o.base_offset = next;
    o.compression = codec;
    if (b % 10 == 3) {  // an idempotent producer
      o.producer_id = 7;
      o.producer_epoch = 0;
      o.base_sequence = int32_t(b);
    }
    BuiltBatch built;
    ASSERT_TRUE(AppendV2Batch(o, records, &segment, &built, &error)) << error;
    next += n;
    if (b % 40 == 39) flush();
  }
  flush();
}

PassReport Compact(const std::string& in, const std::string& out, bool skip, bool two_threads,
                   const char* io_buffer_size = nullptr) {
  CompactOptions o;
  std::string e;
  if (io_buffer_size) {
    EXPECT_TRUE(o.config.Set("log.cleaner.io.buffer.size", io_buffer_size, &e)) << e;
  }
  EXPECT_TRUE(o.config.Set("cleanup.policy", "compact", &e)) << e;
  EXPECT_TRUE(o.config.Set("min.cleanable.dirty.ratio", "0", &e)) << e;
  EXPECT_TRUE(o.config.Set("producer.id.expiration.ms", "9223372036854775807", &e)) << e;
  o.now = 1800000000000;  // past every delete horizon once stamped
  o.passes = 3;
  o.pass_interval_ms = 86400000 * 2;
  o.skip_superseded_batches = skip;
  if (two_threads) o.parallel_min_bytes = 0;
  CompactReport report;
  CollectingSink sink;
  EXPECT_TRUE(CompactPartition(in, out, o, &report, &sink, &e)) << e;
  PassReport total;
  for (const PassReport& p : report.passes) {
    total.stats.messages_read += p.stats.messages_read;
    total.stats.bytes_read += p.stats.bytes_read;
    total.stats.messages_written += p.stats.messages_written;
    total.stats.bytes_written += p.stats.bytes_written;
    total.stats.invalid_messages_read += p.stats.invalid_messages_read;
    total.stats.map_messages_read += p.stats.map_messages_read;
    total.stats.tombstones_removed += p.stats.tombstones_removed;
    total.stats.markers_removed += p.stats.markers_removed;
    total.batches_superseded += p.batches_superseded;
  }
  return total;
}

// The same files under both directories, byte for byte.
void ExpectSameFiles(const std::string& x, const std::string& y) {
  auto a = test::SnapshotFiles(x);
  auto b = test::SnapshotFiles(y);
  EXPECT_EQ(a.size(), b.size());
  for (const auto& [name, bytes] : a) {
    auto it = b.find(name);
    ASSERT_NE(it, b.end()) << name;
    EXPECT_TRUE(bytes == it->second) << name << " differs";
  }
}

class SupersededCompaction : public ::testing::TestWithParam<std::tuple<Compression, bool>> {};

TEST_P(SupersededCompaction, SameBytesAndStatisticsWithTheSkipOnAndOff) {
  auto [codec, two_threads] = GetParam();
  test::TempDir tmp("superseded");
  std::string in = tmp.path() + "/in/t-0";
  WriteLog(in, codec, 1234 + uint32_t(codec));
  PassReport on = Compact(in, tmp.path() + "/on", true, two_threads);
  PassReport off = Compact(in, tmp.path() + "/off", false, two_threads);
  EXPECT_GT(on.batches_superseded, 0);
  EXPECT_EQ(off.batches_superseded, 0);
  EXPECT_EQ(on.stats.messages_read, off.stats.messages_read);
  EXPECT_EQ(on.stats.bytes_read, off.stats.bytes_read);
  EXPECT_EQ(on.stats.messages_written, off.stats.messages_written);
  EXPECT_EQ(on.stats.bytes_written, off.stats.bytes_written);
  EXPECT_EQ(on.stats.invalid_messages_read, off.stats.invalid_messages_read);
  EXPECT_EQ(on.stats.map_messages_read, off.stats.map_messages_read);
  EXPECT_EQ(on.stats.tombstones_removed, off.stats.tombstones_removed);
  EXPECT_GT(off.stats.tombstones_removed, 0);
  EXPECT_GT(off.stats.invalid_messages_read, 0);
  ExpectSameFiles(tmp.path() + "/on", tmp.path() + "/off");
}

// With the look-ahead thread (two_threads), rebuilt compressed batches are compressed when the
// thread has time, and spliced into the chunk's output afterwards (cleaner.cc DeferRetainedBatch);
// KAFKA-5316's early return is decided from their bound until their sizes are known. Small io
// buffers (chunks of a few batches, the bound reached inside most of them) and the default: the
// same bytes and statistics as the one-thread pass, which compresses each batch where it is built.
class DeferredCompression : public ::testing::TestWithParam<std::tuple<Compression, const char*>> {};

TEST_P(DeferredCompression, SameBytesAndStatisticsAsCompressingInPlace) {
  auto [codec, io_buffer] = GetParam();
  test::TempDir tmp("deferred");
  std::string in = tmp.path() + "/in/t-0";
  WriteLog(in, codec, 99 + uint32_t(codec));
  PassReport two = Compact(in, tmp.path() + "/two", true, true, io_buffer);
  PassReport one = Compact(in, tmp.path() + "/one", true, false, io_buffer);
  EXPECT_GT(one.stats.messages_written, 0);
  EXPECT_EQ(two.stats.messages_written, one.stats.messages_written);
  EXPECT_EQ(two.stats.bytes_written, one.stats.bytes_written);
  EXPECT_EQ(two.stats.bytes_read, one.stats.bytes_read);
  EXPECT_EQ(two.stats.tombstones_removed, one.stats.tombstones_removed);
  ExpectSameFiles(tmp.path() + "/two", tmp.path() + "/one");
}

INSTANTIATE_TEST_SUITE_P(Codecs, DeferredCompression,
                         ::testing::Combine(::testing::Values(Compression::kGzip, Compression::kSnappy,
                                                              Compression::kLz4, Compression::kZstd),
                                            ::testing::Values("2048", "8192", "524288")));

// Offsets that name two records (a batch starting inside the one before: the bytes of a damaged or
// hand-made log) could make one record's bit look superseded by another's key: here the record a5 at
// offset 5 stays the latest of its key, while b5, at the same offset in the overlapping batch, is
// superseded. The tracker turns itself off, and the round keeps a5 as the full record loop does.
TEST(SupersededCompactionTest, OverlappingBatchesAreReadRecordByRecord) {
  test::TempDir tmp("superseded-overlap");
  std::string in = tmp.path() + "/in/t-0";
  fs::create_directories(in);
  std::string log, error;
  auto batch = [&](int64_t base, const std::vector<std::string>& keys) {
    std::vector<RecordInput> records;
    for (size_t i = 0; i < keys.size(); i++) {
      RecordInput r;
      r.offset = base + int64_t(i);
      r.timestamp = 1700000000000;
      r.key = AsBytes(keys[i]);
      r.value = AsBytes(keys[i]);
      records.push_back(r);
    }
    V2BatchOptions o;
    o.base_offset = base;
    o.compression = Compression::kLz4;
    BuiltBatch built;
    ASSERT_TRUE(AppendV2Batch(o, records, &log, &built, &error)) << error;
  };
  std::vector<std::string> a, b, later;
  for (int i = 0; i < 10; i++) a.push_back("a" + std::to_string(i));
  for (int i = 5; i < 15; i++) b.push_back("b" + std::to_string(i));
  for (const std::string& k : a)
    if (k != "a5") later.push_back(k);
  later.insert(later.end(), b.begin(), b.end());
  batch(0, a);       // offsets 0..9
  batch(5, b);       // offsets 5..14: starts inside the batch before
  batch(20, later);  // supersedes every record of both but a5
  test::WriteAll(in + "/00000000000000000000.log", log);
  test::WriteAll(in + "/00000000000000000039.log", "");
  PassReport on = Compact(in, tmp.path() + "/on", true, false);
  PassReport off = Compact(in, tmp.path() + "/off", false, false);
  EXPECT_EQ(on.batches_superseded, 0);
  EXPECT_GT(off.stats.messages_written, int64_t(later.size()));  // a5 kept
  EXPECT_EQ(on.stats.messages_read, off.stats.messages_read);
  EXPECT_EQ(on.stats.messages_written, off.stats.messages_written);
  EXPECT_EQ(test::SnapshotFiles(tmp.path() + "/on"), test::SnapshotFiles(tmp.path() + "/off"));
}

INSTANTIATE_TEST_SUITE_P(EveryCodec, SupersededCompaction,
                         ::testing::Combine(::testing::Values(Compression::kNone, Compression::kGzip,
                                                              Compression::kSnappy, Compression::kLz4,
                                                              Compression::kZstd),
                                            ::testing::Bool()));

}  // namespace
}  // namespace klf
