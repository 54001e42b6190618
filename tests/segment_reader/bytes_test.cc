// Varint encoding/decoding with Kafka's quirks (spec §5.2).
#include <climits>

#include <gtest/gtest.h>

#include <string>

#include "segment_reader/bytes.h"

namespace klf {
namespace {

std::string Enc32(int32_t v) {
  std::string s;
  PutVarint(&s, v);
  return s;
}
std::string Enc64(int64_t v) {
  std::string s;
  PutVarlong(&s, v);
  return s;
}

TEST(BytesTest, SpecVarintExamples) {
  EXPECT_EQ(Enc32(0), std::string("\x00", 1));
  EXPECT_EQ(Enc32(-1), "\x01");
  EXPECT_EQ(Enc32(1), "\x02");
  EXPECT_EQ(Enc32(16), "\x20");
  EXPECT_EQ(Enc32(63), "\x7e");
  EXPECT_EQ(Enc32(-64), "\x7f");
  EXPECT_EQ(Enc32(64), "\x80\x01");
  EXPECT_EQ(Enc64(-282609), "\xe1\xbf\x22");        // §4.6 (a) tsDelta
  EXPECT_EQ(Enc64(-86400000), "\xff\xef\xb2\x52");  // §4.6 (d) tsDelta
  EXPECT_EQ(VarintSize(64), 2);
  EXPECT_EQ(VarintSize(INT32_MIN), 5);
  EXPECT_EQ(VarlongSize(INT64_MIN), 10);
}

TEST(BytesTest, RoundTrip) {
  for (int32_t v : {0, 1, -1, 127, -128, 300, INT32_MAX, INT32_MIN}) {
    std::string s = Enc32(v);
    ByteCursor c(AsBytes(s));
    int32_t out;
    ASSERT_TRUE(c.ReadVarint(&out));
    EXPECT_EQ(out, v);
    EXPECT_EQ(c.remaining(), 0u);
  }
  for (int64_t v : {int64_t(0), int64_t(-1), int64_t(1) << 40, INT64_MAX, INT64_MIN}) {
    std::string s = Enc64(v);
    ByteCursor c(AsBytes(s));
    int64_t out;
    ASSERT_TRUE(c.ReadVarlong(&out));
    EXPECT_EQ(out, v);
  }
}

TEST(BytesTest, VarintFifthByteContinuationIsError) {
  std::string s("\x80\x80\x80\x80\x80\x00", 6);
  ByteCursor c(AsBytes(s));
  int32_t v;
  EXPECT_FALSE(c.ReadVarint(&v));
  EXPECT_EQ(c.pos(), 0u);  // left at the start of the failed field
}

TEST(BytesTest, VarintFifthByteHighBitsDropped) {
  // 5th byte 0x7f: bits above bit 3 fall off (Kafka keeps only 4 bits there).
  std::string s("\xfe\xff\xff\xff\x7f", 5);
  ByteCursor c(AsBytes(s));
  int32_t v;
  ASSERT_TRUE(c.ReadVarint(&v));
  std::string t("\xfe\xff\xff\xff\x0f", 5);
  ByteCursor d(AsBytes(t));
  int32_t w;
  ASSERT_TRUE(d.ReadVarint(&w));
  EXPECT_EQ(v, w);
  EXPECT_EQ(w, INT32_MAX);
}

TEST(BytesTest, VarlongTooLong) {
  std::string eleven = std::string(10, '\x80') + std::string("\x01");
  ByteCursor c(AsBytes(eleven));
  int64_t v;
  EXPECT_FALSE(c.ReadVarlong(&v));
  std::string ok(9, '\xff');
  ok.push_back('\x01');
  ByteCursor d(AsBytes(ok));
  EXPECT_TRUE(d.ReadVarlong(&v));
  EXPECT_EQ(v, INT64_MIN);
}

TEST(BytesTest, TruncatedVarint) {
  std::string s("\x80\x80", 2);
  ByteCursor c(AsBytes(s));
  int32_t v;
  EXPECT_FALSE(c.ReadVarint(&v));
  EXPECT_FALSE(c.ok());
}

TEST(BytesTest, BigEndian) {
  uint8_t b[8];
  StoreBE64(b, 0x0102030405060708ull);
  EXPECT_EQ(LoadBE64(b), 0x0102030405060708ull);
  EXPECT_EQ(LoadBE32(b), 0x01020304u);
  EXPECT_EQ(LoadI16(b), 0x0102);
}

TEST(BytesTest, WallClock) {
  EXPECT_EQ(FormatEpochMs(1700000000000), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(FormatEpochMs(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatEpochMs(1735689601007), "2025-01-01T00:00:01.007Z");
  EXPECT_EQ(FormatEpochMs(951782400000), "2000-02-29T00:00:00.000Z");  // a leap day of a century year
  EXPECT_EQ(FormatEpochMs(253402300799999), "9999-12-31T23:59:59.999Z");
  // Not wall-clock times: the raw number only.
  for (int64_t v : {int64_t(-1), INT64_MIN, INT64_MAX, int64_t(253402300800000)}) {
    EXPECT_EQ(FormatEpochMs(v), "") << v;
    EXPECT_EQ(WithWallClock(v), std::to_string(v));
  }
  EXPECT_EQ(WithWallClock(1700000000000), "1700000000000 (2023-11-14T22:13:20.000Z)");
}

}  // namespace
}  // namespace klf
