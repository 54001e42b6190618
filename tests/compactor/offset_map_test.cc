// SkimpyOffsetMap, ported from Kafka's OffsetMapTest.java (cleaner-tests.md §5) plus the fill and
// sizing facts of kafka-log-cleaner.md §1 and §5.
#include "compactor/offset_map.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <string>

namespace klf {
namespace {

Bytes Key(const std::string& s) { return AsBytes(s); }

std::unique_ptr<SkimpyOffsetMap> Make(int32_t memory) {
  std::string error;
  auto m = SkimpyOffsetMap::Create(memory, &error);
  EXPECT_NE(m, nullptr) << error;
  return m;
}

// OffsetMapTest.testBasicValidation: memory = items × 48 bytes.
TEST(OffsetMapTest, BasicValidation) {
  for (int items : {10, 100, 1000, 5000}) {
    auto map = Make(items * 48);
    std::vector<std::string> keys;
    for (int i = 0; i < items; i++) keys.push_back(std::to_string(i));
    for (int i = 0; i < items; i++) ASSERT_TRUE(map->Put(Key(keys[i]), i));
    for (int i = 0; i < items; i++) EXPECT_EQ(map->Get(Key(keys[i])), i) << "items " << items;
  }
}

TEST(OffsetMapTest, Clear) {
  auto map = Make(4096);
  std::vector<std::string> keys;
  for (int i = 0; i < 10; i++) keys.push_back(std::to_string(i));
  for (int i = 0; i < 10; i++) map->Put(Key(keys[i]), i);
  for (int i = 0; i < 10; i++) EXPECT_EQ(map->Get(Key(keys[i])), i);
  map->Clear();
  for (int i = 0; i < 10; i++) EXPECT_EQ(map->Get(Key(keys[i])), -1);
  EXPECT_EQ(map->size(), 0);
  EXPECT_EQ(map->latest_offset(), -1);
}

// testGetWhenFull: 4096 bytes = 170 slots; a lookup of an absent key ends after the probe limit.
TEST(OffsetMapTest, GetWhenFull) {
  auto map = Make(4096);
  EXPECT_EQ(map->slots(), 170);
  int i = 37;
  std::string last;
  while (map->size() < map->slots()) {
    last = std::to_string(i);
    ASSERT_TRUE(map->Put(Key(last), i));
    i++;
  }
  std::string next = std::to_string(i);
  EXPECT_EQ(map->Get(Key(next)), -1);
  EXPECT_EQ(map->Get(Key(last)), i - 1);
  // A full map refuses new keys (Kafka throws).
  EXPECT_FALSE(map->Put(Key(next), i));
}

TEST(OffsetMapTest, UpdateLatestOffsetAndLatestOffset) {
  auto map = Make(4096);
  int i = 37;
  while (map->size() < map->slots()) {
    std::string k = std::to_string(i);
    map->Put(Key(k), i);
    EXPECT_EQ(map->latest_offset(), i);
    i++;
  }
  map->UpdateLatestOffset(40);
  EXPECT_EQ(map->latest_offset(), 40);
  EXPECT_EQ(map->Get(Key("40")), 40);
}

TEST(OffsetMapTest, Utilization) {
  auto map = Make(4096);
  EXPECT_EQ(map->Utilization(), 0.0);
  for (int i = 0; i < 50; i++) {
    std::string k = std::to_string(i);
    map->Put(Key(k), i);
    EXPECT_DOUBLE_EQ(map->Utilization(), double(i + 1) / map->slots());
  }
}

TEST(OffsetMapTest, OverwriteKeepsEntryCountAndSetsLatest) {
  auto map = Make(4096);
  map->Put(Key("a"), 5);
  map->Put(Key("a"), 3);  // latestOffset is assigned, not maxed (spec §4.5)
  EXPECT_EQ(map->size(), 1);
  EXPECT_EQ(map->Get(Key("a")), 3);
  EXPECT_EQ(map->latest_offset(), 3);
}

// The probe sequence: attempts 0..12 read the big-endian int at digest bytes 0..12, then linear.
TEST(OffsetMapTest, ProbeSequenceFollowsKafka) {
  auto map = Make(1000 * 24);
  uint8_t hash[16];
  SkimpyOffsetMap::Hash(Key("hello"), hash);
  // MD5("hello") = 5d41402abc4b2a76b9719d911017c592
  EXPECT_EQ(hash[0], 0x5d);
  EXPECT_EQ(hash[15], 0x92);
  auto abs_mod = [&](int32_t v) {
    int32_t a = v == INT32_MIN ? 0 : (v < 0 ? -v : v);
    return a % 1000;
  };
  for (int a = 0; a <= 12; a++) EXPECT_EQ(map->SlotOf(hash, a), abs_mod(LoadI32(hash + a))) << a;
  EXPECT_EQ(map->SlotOf(hash, 13), abs_mod(int32_t(uint32_t(LoadI32(hash + 12)) + 1)));
  EXPECT_EQ(map->SlotOf(hash, 20), abs_mod(int32_t(uint32_t(LoadI32(hash + 12)) + 8)));
}

// Sizing facts: default 128 MiB → 5 592 405 slots, fill limit 5 033 164; 240 bytes → 10 slots, 9 keys.
TEST(OffsetMapTest, DefaultSizing) {
  EXPECT_EQ(134217728 / SkimpyOffsetMap::kBytesPerEntry, 5592405);
  EXPECT_EQ(MaxDesiredMapSize(5592405, 0.9), 5033164);
  auto map = Make(240);
  EXPECT_EQ(map->slots(), 10);
  EXPECT_EQ(MaxDesiredMapSize(map->slots(), 0.9), 9);
  std::string error;
  EXPECT_EQ(SkimpyOffsetMap::Create(23, &error), nullptr);
}

}  // namespace
}  // namespace klf
