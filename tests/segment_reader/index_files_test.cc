// .index / .timeindex / .txnindex parsing and encoding (spec kafka-on-disk-format.md §8, §9).
#include "segment_reader/index_files.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace klf {
namespace {

std::string Hex(std::string_view hex) {
  std::string out;
  std::string digits;
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

TEST(OffsetIndexTest, SpecExampleEntryBytes) {
  // §8.1: offset base+5 at position 4169 -> 00 00 00 05 00 00 10 49.
  std::string out;
  EncodeOffsetIndexEntry({1005, 4169}, 1000, &out);
  EXPECT_EQ(out, Hex("00 00 00 05 00 00 10 49"));
  CollectingSink sink;
  OffsetIndex idx = ParseOffsetIndex("x.index", AsBytes(out), 1000, &sink);
  ASSERT_EQ(idx.entries.size(), 1u);
  EXPECT_EQ(idx.entries[0], (OffsetIndexEntry{1005, 4169}));
  EXPECT_TRUE(sink.problems.empty());
}

TEST(OffsetIndexTest, ZeroTailStartsUnusedSpace) {
  std::string data;
  EncodeOffsetIndexEntry({3, 165}, 0, &data);
  EncodeOffsetIndexEntry({6, 339}, 0, &data);
  data.append(8 * 5, '\0');  // preallocated zero slots
  CollectingSink sink;
  OffsetIndex idx = ParseOffsetIndex("a.index", AsBytes(data), 0, &sink);
  EXPECT_EQ(idx.entries.size(), 2u);
  EXPECT_EQ(idx.unused_slots, 5u);
  EXPECT_EQ(idx.file_size, data.size());
  EXPECT_TRUE(sink.problems.empty());
}

TEST(OffsetIndexTest, EntirelyZeroFileHasNoEntries) {
  std::string data(8 * 16, '\0');
  CollectingSink sink;
  OffsetIndex idx = ParseOffsetIndex("a.index", AsBytes(data), 42, &sink);
  EXPECT_TRUE(idx.entries.empty());
  EXPECT_EQ(idx.unused_slots, 16u);
  EXPECT_TRUE(sink.problems.empty());
}

TEST(OffsetIndexTest, GarbageAfterUnusedSlotIsReported) {
  std::string data;
  EncodeOffsetIndexEntry({3, 165}, 0, &data);
  data.append(8, '\0');
  EncodeOffsetIndexEntry({9, 500}, 0, &data);
  CollectingSink sink;
  OffsetIndex idx = ParseOffsetIndex("a.index", AsBytes(data), 0, &sink);
  EXPECT_EQ(idx.entries.size(), 1u);
  const Problem* p = Find(sink, "offset-index-unused-space");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->position, 19u);  // last byte of the relative offset 9 in slot 2
  EXPECT_EQ(p->file, "a.index");
}

TEST(OffsetIndexTest, LengthNotMultipleOfEntrySize) {
  std::string data;
  EncodeOffsetIndexEntry({3, 165}, 0, &data);
  data += "\x01\x02\x03";
  CollectingSink sink;
  OffsetIndex idx = ParseOffsetIndex("b.index", AsBytes(data), 0, &sink);
  EXPECT_EQ(idx.entries.size(), 1u);
  const Problem* p = Find(sink, "offset-index-size");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->severity, Severity::kError);
  EXPECT_EQ(p->position, 8u);
}

TEST(OffsetIndexTest, OutOfOrderAndNegativeEntries) {
  std::string data;
  EncodeOffsetIndexEntry({6, 339}, 0, &data);
  EncodeOffsetIndexEntry({3, 400}, 0, &data);   // offset goes back
  EncodeOffsetIndexEntry({-2, 500}, 0, &data);  // negative relative offset
  CollectingSink sink;
  OffsetIndex idx = ParseOffsetIndex("c.index", AsBytes(data), 0, &sink);
  EXPECT_EQ(idx.entries.size(), 3u);
  const Problem* order = Find(sink, "offset-index-order");
  ASSERT_NE(order, nullptr);
  EXPECT_EQ(order->position, 8u);
  const Problem* neg = Find(sink, "offset-index-entry");
  ASSERT_NE(neg, nullptr);
  EXPECT_EQ(neg->position, 16u);
}

TEST(TimeIndexTest, SpecExampleEntryBytes) {
  // §8.1: (1 700 000 000 000, base+5) -> 00 00 01 8b cf e5 68 00 00 00 00 05.
  std::string out;
  EncodeTimeIndexEntry({1700000000000, 105}, 100, &out);
  EXPECT_EQ(out, Hex("00 00 01 8b cf e5 68 00 00 00 00 05"));
  CollectingSink sink;
  TimeIndex idx = ParseTimeIndex("x.timeindex", AsBytes(out), 100, &sink);
  ASSERT_EQ(idx.entries.size(), 1u);
  EXPECT_EQ(idx.entries[0], (TimeIndexEntry{1700000000000, 105}));
}

TEST(TimeIndexTest, FirstEntryAtBaseOffsetIsGenuine) {
  // A segment holding one batch at its base offset gets the time entry (maxTimestamp, base).
  std::string data;
  EncodeTimeIndexEntry({1700000017000, 16}, 16, &data);
  data.append(12 * 3, '\0');
  CollectingSink sink;
  TimeIndex idx = ParseTimeIndex("x.timeindex", AsBytes(data), 16, &sink);
  ASSERT_EQ(idx.entries.size(), 1u);
  EXPECT_EQ(idx.entries[0].offset, 16);
  EXPECT_EQ(idx.unused_slots, 3u);
  EXPECT_TRUE(sink.problems.empty());
}

TEST(TimeIndexTest, RelativeZeroAtLaterSlotStopsEvenWithTimestamp) {
  // DumpLogSegments stops at the first entry whose offset is the base offset at slot >= 1.
  std::string data;
  EncodeTimeIndexEntry({1000, 5}, 0, &data);
  EncodeTimeIndexEntry({2000, 0}, 0, &data);
  CollectingSink sink;
  TimeIndex idx = ParseTimeIndex("x.timeindex", AsBytes(data), 0, &sink);
  EXPECT_EQ(idx.entries.size(), 1u);
  EXPECT_EQ(idx.unused_slots, 1u);
  ASSERT_NE(Find(sink, "time-index-unused-space"), nullptr);
  EXPECT_EQ(Find(sink, "time-index-unused-space")->position, 18u);
}

TEST(TimeIndexTest, TruncatedAndNonIncreasing) {
  std::string data;
  EncodeTimeIndexEntry({2000, 5}, 0, &data);
  EncodeTimeIndexEntry({2000, 7}, 0, &data);  // timestamp not strictly increasing
  data += std::string(5, '\x7f');
  CollectingSink sink;
  TimeIndex idx = ParseTimeIndex("t.timeindex", AsBytes(data), 0, &sink);
  EXPECT_EQ(idx.entries.size(), 2u);
  ASSERT_NE(Find(sink, "time-index-size"), nullptr);
  EXPECT_EQ(Find(sink, "time-index-size")->position, 24u);
  ASSERT_NE(Find(sink, "time-index-order"), nullptr);
  EXPECT_EQ(Find(sink, "time-index-order")->position, 12u);
}

// A file named for base offset 2^63-1 (any name is possible): baseOffset + relative wraps as Java's
// long does in OffsetIndex/TimeIndex.parseEntry, instead of overflowing (cli_fuzz found `klf dump` of
// such a .timeindex: signed overflow under UBSan), and the entries encode back to the same bytes.
TEST(IndexFilesTest, EntriesOfTheLargestBaseOffsetWrapAsJavasLongDoes) {
  const int64_t base = INT64_MAX;
  std::string offsets = Hex("00 00 00 0c 00 00 00 40");
  std::string times = Hex("00 00 01 8b cf e5 68 00 00 00 00 0c");
  CollectingSink sink;
  OffsetIndex oi = ParseOffsetIndex("x.index", AsBytes(offsets), base, &sink);
  TimeIndex ti = ParseTimeIndex("x.timeindex", AsBytes(times), base, &sink);
  ASSERT_EQ(oi.entries.size(), 1u);
  ASSERT_EQ(ti.entries.size(), 1u);
  EXPECT_EQ(oi.entries[0].offset, INT64_MIN + 11);
  EXPECT_EQ(ti.entries[0].offset, INT64_MIN + 11);
  std::string re;
  EncodeOffsetIndexEntry(oi.entries[0], base, &re);
  EXPECT_EQ(re, offsets);
  re.clear();
  EncodeTimeIndexEntry(ti.entries[0], base, &re);
  EXPECT_EQ(re, times);
}

TEST(TxnIndexTest, SpecExample) {
  // §9: pid 1, first 8, last 10, LSO 11.
  const std::string bytes =
      Hex("00 00 | 00 00 00 00 00 00 00 01 | 00 00 00 00 00 00 00 08 | 00 00 00 00 00 00 00 0a | 00 00 00 00 "
          "00 00 00 0b");
  std::string encoded;
  EncodeAbortedTxn({0, 1, 8, 10, 11}, &encoded);
  EXPECT_EQ(encoded, bytes);
  CollectingSink sink;
  TxnIndex idx = ParseTxnIndex("x.txnindex", AsBytes(bytes), &sink);
  ASSERT_EQ(idx.entries.size(), 1u);
  EXPECT_EQ(idx.entries[0], (AbortedTxn{0, 1, 8, 10, 11}));
  EXPECT_TRUE(sink.problems.empty());
}

TEST(TxnIndexTest, TrailingPartialEntryIgnoredAndReported) {
  std::string data;
  EncodeAbortedTxn({0, 1, 8, 10, 11}, &data);
  EncodeAbortedTxn({0, 2, 12, 20, 21}, &data);
  data.resize(data.size() - 3);
  CollectingSink sink;
  TxnIndex idx = ParseTxnIndex("x.txnindex", AsBytes(data), &sink);
  EXPECT_EQ(idx.entries.size(), 1u);
  const Problem* p = Find(sink, "txn-index-size");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->position, 34u);
  EXPECT_EQ(p->severity, Severity::kWarning);
}

TEST(TxnIndexTest, VersionCheckReadsFirstByteOnly) {
  std::string data;
  EncodeAbortedTxn({0, 1, 8, 10, 11}, &data);
  // Version 0x0001 as an int16: Kafka reads only the high byte (0) and accepts it.
  EncodeAbortedTxn({1, 2, 12, 20, 21}, &data);
  // Version 0x0100: the high byte is 1 -> "Unexpected aborted transaction version".
  EncodeAbortedTxn({256, 3, 30, 40, 41}, &data);
  // A negative first byte passes Kafka's "> 0" check.
  CollectingSink sink;
  TxnIndex idx = ParseTxnIndex("v.txnindex", AsBytes(data), &sink);
  ASSERT_EQ(idx.entries.size(), 2u);
  EXPECT_EQ(idx.entries[1].version, 1);
  const Problem* p = Find(sink, "txn-index-version");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->position, 68u);

  std::string neg;
  EncodeAbortedTxn({int16_t(0xff00), 3, 30, 40, 41}, &neg);
  CollectingSink sink2;
  EXPECT_EQ(ParseTxnIndex("n.txnindex", AsBytes(neg), &sink2).entries.size(), 1u);
  EXPECT_EQ(Find(sink2, "txn-index-version"), nullptr);
}

TEST(TxnIndexTest, LastOffsetMustIncrease) {
  std::string data;
  EncodeAbortedTxn({0, 1, 8, 10, 11}, &data);
  EncodeAbortedTxn({0, 2, 9, 10, 11}, &data);
  CollectingSink sink;
  ParseTxnIndex("o.txnindex", AsBytes(data), &sink);
  const Problem* p = Find(sink, "txn-index-order");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->position, 34u + 18u);
}

TEST(IndexFilesTest, EmptyFilesAreFine) {
  CollectingSink sink;
  EXPECT_TRUE(ParseOffsetIndex("e.index", {}, 0, &sink).entries.empty());
  EXPECT_TRUE(ParseTimeIndex("e.timeindex", {}, 0, &sink).entries.empty());
  EXPECT_TRUE(ParseTxnIndex("e.txnindex", {}, &sink).entries.empty());
  EXPECT_TRUE(sink.problems.empty());
}

}  // namespace
}  // namespace klf
