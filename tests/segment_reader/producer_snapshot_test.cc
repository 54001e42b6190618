// Producer-state snapshot files (spec kafka-on-disk-format.md §10).
#include "segment_reader/producer_snapshot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <string>

namespace klf {
namespace {

std::string Hex(std::string_view hex) {
  std::string out, digits;
  for (char c : hex) {
    if (isxdigit(static_cast<unsigned char>(c))) digits.push_back(c);
  }
  for (size_t i = 0; i + 1 < digits.size(); i += 2) out.push_back(char(std::stoi(digits.substr(i, 2), nullptr, 16)));
  return out;
}

const Problem* Find(const CollectingSink& sink, const std::string& check) {
  for (const auto& p : sink.problems) {
    if (p.check == check) return &p;
  }
  return nullptr;
}

// §10 example: pid 1, epoch 0, lastSeq 2, lastOffset 2, offsetDelta 2, ts 1 700 000 000 000,
// coordinatorEpoch -1, no transaction.
const char* kOneProducer =
    "00 01 0f 22 b8 ca 00 00 00 01 00 00 00 00 00 00"
    "00 01 00 00 00 00 00 02 00 00 00 00 00 00 00 02"
    "00 00 00 02 00 00 01 8b cf e5 68 00 ff ff ff ff"
    "ff ff ff ff ff ff ff ff";

ProducerSnapshotEntry OneProducer() {
  ProducerSnapshotEntry e;
  e.producer_id = 1;
  e.epoch = 0;
  e.last_sequence = 2;
  e.last_offset = 2;
  e.offset_delta = 2;
  e.timestamp = 1700000000000;
  e.coordinator_epoch = -1;
  e.current_txn_first_offset = -1;
  return e;
}

TEST(ProducerSnapshotTest, EmptySnapshotSpecBytes) {
  const std::string bytes = Hex("00 01 48 67 4b c7 00 00 00 00");
  EXPECT_EQ(EncodeProducerSnapshot({}), bytes);
  CollectingSink sink;
  ProducerSnapshot s;
  ASSERT_TRUE(ParseProducerSnapshot("e.snapshot", AsBytes(bytes), 7, &s, &sink));
  EXPECT_EQ(s.offset, 7);
  EXPECT_EQ(s.version, 1);
  EXPECT_EQ(s.crc, 0x48674bc7u);
  EXPECT_TRUE(s.crc_valid);
  EXPECT_TRUE(s.entries.empty());
  EXPECT_TRUE(sink.problems.empty());
}

TEST(ProducerSnapshotTest, OneProducerSpecBytes) {
  const std::string bytes = Hex(kOneProducer);
  ASSERT_EQ(bytes.size(), 56u);
  EXPECT_EQ(EncodeProducerSnapshot({OneProducer()}), bytes);
  CollectingSink sink;
  ProducerSnapshot s;
  ASSERT_TRUE(ParseProducerSnapshot("one.snapshot", AsBytes(bytes), 3, &s, &sink));
  ASSERT_EQ(s.entries.size(), 1u);
  EXPECT_EQ(s.entries[0], OneProducer());
  EXPECT_EQ(s.entries[0].first_sequence(), 0);
  EXPECT_EQ(s.entries[0].first_offset(), 0);
  EXPECT_TRUE(sink.problems.empty());
}

TEST(ProducerSnapshotTest, BadCrcReportedEntriesKept) {
  std::string bytes = Hex(kOneProducer);
  bytes[20] ^= 0x01;  // inside the entry (covered by the CRC)
  CollectingSink sink;
  ProducerSnapshot s;
  EXPECT_FALSE(ParseProducerSnapshot("bad.snapshot", AsBytes(bytes), 3, &s, &sink));
  EXPECT_FALSE(s.crc_valid);
  EXPECT_EQ(s.entries.size(), 1u);
  const Problem* p = Find(sink, "snapshot-crc");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->file, "bad.snapshot");
  EXPECT_EQ(p->position, 2u);
  EXPECT_EQ(p->severity, Severity::kError);
}

TEST(ProducerSnapshotTest, WrongVersion) {
  std::string bytes = Hex(kOneProducer);
  bytes[1] = 2;
  CollectingSink sink;
  ProducerSnapshot s;
  EXPECT_FALSE(ParseProducerSnapshot("v.snapshot", AsBytes(bytes), 3, &s, &sink));
  const Problem* p = Find(sink, "snapshot-version");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->position, 0u);
  EXPECT_TRUE(s.entries.empty());
}

TEST(ProducerSnapshotTest, TruncatedEntries) {
  std::string full = EncodeProducerSnapshot({OneProducer(), OneProducer()});
  std::string bytes = full.substr(0, full.size() - 10);
  CollectingSink sink;
  ProducerSnapshot s;
  EXPECT_FALSE(ParseProducerSnapshot("t.snapshot", AsBytes(bytes), 3, &s, &sink));
  EXPECT_EQ(s.entries.size(), 1u);  // the whole first entry still decodes
  const Problem* p = Find(sink, "snapshot-entry-count");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->position, 10u + 46u);
  EXPECT_NE(Find(sink, "snapshot-crc"), nullptr);  // the CRC covers what was cut too
}

TEST(ProducerSnapshotTest, TooShortAndTrailingBytes) {
  CollectingSink sink;
  ProducerSnapshot s;
  std::string tiny = Hex("00 01 48 67");
  EXPECT_FALSE(ParseProducerSnapshot("s.snapshot", AsBytes(tiny), 0, &s, &sink));
  ASSERT_NE(Find(sink, "snapshot-size"), nullptr);

  std::string extra = EncodeProducerSnapshot({}) + "xy";
  CollectingSink sink2;
  EXPECT_FALSE(ParseProducerSnapshot("x.snapshot", AsBytes(extra), 0, &s, &sink2));
  ASSERT_NE(Find(sink2, "snapshot-trailing-bytes"), nullptr);
  EXPECT_EQ(Find(sink2, "snapshot-trailing-bytes")->position, 10u);

  std::string negative = Hex("00 01 00 00 00 00 ff ff ff ff");
  CollectingSink sink3;
  EXPECT_FALSE(ParseProducerSnapshot("n.snapshot", AsBytes(negative), 0, &s, &sink3));
  ASSERT_NE(Find(sink3, "snapshot-entry-count"), nullptr);
  EXPECT_EQ(Find(sink3, "snapshot-entry-count")->position, 6u);
}

TEST(ProducerSnapshotTest, FirstSequenceWraps) {
  // DefaultRecordBatch.decrementSequence: a batch whose sequences wrapped past Integer.MAX_VALUE.
  ProducerSnapshotEntry e = OneProducer();
  e.last_sequence = 1;
  e.offset_delta = 3;
  EXPECT_EQ(e.first_sequence(), INT32_MAX - 1);
}

TEST(ProducerSnapshotTest, EntryWithoutBatchHasNoFirstSequence) {
  // ProducerStateManager.readSnapshot keeps no BatchMetadata for lastOffset < 0 (a producer whose only
  // batch left is a marker), so firstSeq and firstDataOffset are NO_SEQUENCE and -1, not a wrapped value.
  ProducerSnapshotEntry e = OneProducer();
  e.last_sequence = -1;
  e.last_offset = -1;
  e.offset_delta = 0;
  EXPECT_FALSE(e.has_batch());
  EXPECT_EQ(e.first_sequence(), -1);
  EXPECT_EQ(e.first_offset(), -1);
}

TEST(JavaHashMapOrderTest, BucketsInIndexOrder) {
  // 6000 & 15 = 0, 5000 & 15 = 8, 5001 & 15 = 9: the order of b-txn/txn-0's 15.snapshot.
  EXPECT_EQ(JavaHashMapOrder({5000, 5001, 6000}), (std::vector<int64_t>{6000, 5000, 5001}));
}

TEST(JavaHashMapOrderTest, CollisionsKeepInsertionOrderAndDuplicatesKeepPlace) {
  // 1 and 17 share bucket 1 of a 16-slot table.
  EXPECT_EQ(JavaHashMapOrder({17, 1, 2}), (std::vector<int64_t>{17, 1, 2}));
  EXPECT_EQ(JavaHashMapOrder({1, 17, 2, 17}), (std::vector<int64_t>{1, 17, 2}));
}

TEST(JavaHashMapOrderTest, HighBitsFoldedIn) {
  // Long.hashCode folds the high word: (1 << 32) hashes like 1; spread() folds bit 16 into bit 0.
  int64_t high = int64_t(1) << 32;
  EXPECT_EQ(JavaHashMapOrder({high, 0}), (std::vector<int64_t>{0, high}));    // bucket 1 vs bucket 0
  EXPECT_EQ(JavaHashMapOrder({65536, 1}), (std::vector<int64_t>{65536, 1}));  // 65536 -> bucket 1, first
  // -1: h = (int)(0xffffffffffffffff ^ 0x00000000ffffffff) = 0xffffffff00000000 -> low int 0 -> bucket 0.
  EXPECT_EQ(JavaHashMapOrder({3, -1}), (std::vector<int64_t>{-1, 3}));
}

TEST(JavaHashMapOrderTest, ResizeAt13Entries) {
  // 13 entries exceed the 0.75 * 16 threshold: the table doubles to 32, so 16 (bucket 16) now
  // follows 15 instead of sharing bucket 0 with 0 and 32.
  std::vector<int64_t> keys = {0, 16, 32, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<int64_t> small(keys.begin(), keys.begin() + 12);
  // 12 entries: capacity 16, bucket 0 holds 0, 16, 32 in insertion order.
  EXPECT_EQ(JavaHashMapOrder(small), (std::vector<int64_t>{0, 16, 32, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // 13 entries: capacity 32; bucket 0 holds 0 and 32 (lo list), bucket 16 holds 16 (hi list).
  EXPECT_EQ(JavaHashMapOrder(keys), (std::vector<int64_t>{0, 32, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 16}));
}

TEST(JavaHashMapOrderTest, TreeifyBinResizesSmallTables) {
  // Nine keys in bucket 0 of a 16-slot table: putVal's treeifyBin resizes to 32 instead of
  // building a tree, splitting the bucket into 0 (multiples of 32) and 16.
  std::vector<int64_t> keys;
  for (int64_t i = 0; i < 9; ++i) keys.push_back(i * 16);
  std::vector<int64_t> expect = {0, 32, 64, 96, 128, 16, 48, 80, 112};
  EXPECT_EQ(JavaHashMapOrder(keys), expect);
}

TEST(JavaHashMapOrderTest, RemovalsAndClearKeepTheCapacity) {
  JavaLongHashMapOrder map;
  for (int64_t k : {0, 16, 32, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) map.Put(k);
  EXPECT_EQ(map.capacity(), 32u);
  for (int64_t k = 1; k <= 10; ++k) map.Remove(k);
  map.Remove(999);  // absent: nothing happens
  EXPECT_EQ(map.size(), 3u);
  // Java does not shrink: 16 still lives in bucket 16 of 32, after 0 and 32 in bucket 0 ...
  EXPECT_EQ(map.Keys(), (std::vector<int64_t>{0, 32, 16}));
  // ... while a map that only ever held these three keys iterates them in bucket 0 of 16.
  EXPECT_EQ(JavaHashMapOrder({0, 16, 32}), (std::vector<int64_t>{0, 16, 32}));
  map.Clear();
  EXPECT_EQ(map.capacity(), 32u);
  map.Put(16);
  map.Put(0);
  EXPECT_EQ(map.Keys(), (std::vector<int64_t>{0, 16}));
}

TEST(JavaHashMapOrderTest, ManyProducersIsAPermutation) {
  std::vector<int64_t> keys;
  for (int64_t i = 0; i < 1000; ++i) keys.push_back(i * 7919 + 123456789012);
  auto order = JavaHashMapOrder(keys);
  ASSERT_EQ(order.size(), keys.size());
  std::vector<int64_t> a = keys, b = order;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  // Inserting in iteration order reproduces the iteration order (same final capacity, no trees).
  EXPECT_EQ(JavaHashMapOrder(order), order);
}

}  // namespace
}  // namespace klf
