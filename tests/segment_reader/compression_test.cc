// Kafka's codec framings (spec §7): exact byte examples, round trips, caps and corrupt input.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "segment_reader/compression.h"

namespace klf {
namespace {

std::string Hex(std::string_view hex) {
  std::string out;
  int hi = -1;
  for (char c : hex) {
    int v;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else
      continue;
    if (hi < 0)
      hi = v;
    else {
      out.push_back(char(hi << 4 | v));
      hi = -1;
    }
  }
  return out;
}

bool Dec(Compression c, const std::string& in, std::string* out, std::string* err, int magic = 2,
         size_t cap = kDefaultMaxDecompressedBytes) {
  return Decompress(c, AsBytes(in), magic, cap, out, err);
}

std::string Payload(size_t n, unsigned seed, bool compressible) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = compressible ? "abcdefgh"[rng() % 8] : char(rng());
  return s;
}

TEST(CompressionTest, Names) {
  EXPECT_STREQ(CompressionName(Compression::kZstd), "zstd");
  EXPECT_EQ(CompressionFromName("lz4"), Compression::kLz4);
  EXPECT_FALSE(CompressionFromName("brotli").has_value());
  EXPECT_FALSE(CompressionFromId(5).has_value());
}

TEST(CompressionTest, GzipSpecExample) {
  std::string expected = Hex("1f 8b 08 00 00 00 00 00 00 ff 4b 4c 4a 06 00 c2 41 24 35 03 00 00 00");
  std::string out, err;
  Compress(Compression::kGzip, AsBytes("abc"), 2, &out);
  EXPECT_EQ(out, expected);
  ASSERT_TRUE(Dec(Compression::kGzip, expected, &out, &err)) << err;
  EXPECT_EQ(out, "abc");
}

TEST(CompressionTest, GzipConcatenatedMembersAndTrailingGarbage) {
  std::string a, b, out, err;
  Compress(Compression::kGzip, AsBytes("hello "), 2, &a);
  Compress(Compression::kGzip, AsBytes("world"), 2, &b);
  ASSERT_TRUE(Dec(Compression::kGzip, a + b, &out, &err)) << err;
  EXPECT_EQ(out, "hello world");
  ASSERT_TRUE(Dec(Compression::kGzip, a + "garbage!!", &out, &err)) << err;
  EXPECT_EQ(out, "hello ");
  ASSERT_TRUE(Dec(Compression::kGzip, a + std::string(3, '\0'), &out, &err)) << err;
  // Corrupt trailer CRC is an error (GZIPInputStream verifies it).
  std::string bad = a;
  bad[bad.size() - 8] ^= 1;
  EXPECT_FALSE(Dec(Compression::kGzip, bad, &out, &err));
  // Truncated and non-gzip input.
  EXPECT_FALSE(Dec(Compression::kGzip, a.substr(0, a.size() - 3), &out, &err));
  EXPECT_FALSE(Dec(Compression::kGzip, "not gzip at all", &out, &err));
  EXPECT_FALSE(Dec(Compression::kGzip, "", &out, &err));
}

TEST(CompressionTest, SnappySpecExample) {
  std::string expected = Hex("82 53 4e 41 50 50 59 00 00 00 00 01 00 00 00 01 00 00 00 05 03 08 61 62 63");
  std::string out, err;
  Compress(Compression::kSnappy, AsBytes("abc"), 2, &out);
  EXPECT_EQ(out, expected);
  ASSERT_TRUE(Dec(Compression::kSnappy, expected, &out, &err)) << err;
  EXPECT_EQ(out, "abc");
}

TEST(CompressionTest, SnappyRawFallbackAndConcatenation) {
  std::string out, err;
  // A raw snappy block without xerial framing (librdkafka writes these).
  std::string raw = Hex("03 08 61 62 63");
  ASSERT_TRUE(Dec(Compression::kSnappy, raw, &out, &err)) << err;
  EXPECT_EQ(out, "abc");
  std::string framed = Hex("82 53 4e 41 50 50 59 00 00 00 00 01 00 00 00 01 00 00 00 05 03 08 61 62 63");
  ASSERT_TRUE(Dec(Compression::kSnappy, framed + framed, &out, &err)) << err;
  EXPECT_EQ(out, "abcabc");
  // Header only: no data. EOF inside a length word: quiet end.
  ASSERT_TRUE(Dec(Compression::kSnappy, framed.substr(0, 16), &out, &err)) << err;
  EXPECT_EQ(out, "");
  ASSERT_TRUE(Dec(Compression::kSnappy, framed + "\x00\x00", &out, &err)) << err;
  EXPECT_EQ(out, "abc");
  EXPECT_FALSE(Dec(Compression::kSnappy, "", &out, &err));
  EXPECT_FALSE(Dec(Compression::kSnappy, framed.substr(0, framed.size() - 1), &out, &err));  // short chunk
  std::string neg = framed.substr(0, 16) + Hex("ff ff ff f0");
  EXPECT_FALSE(Dec(Compression::kSnappy, neg, &out, &err));
}

TEST(CompressionTest, SnappyMultiBlock) {
  std::string in = Payload(100000, 1, true), c, out, err;
  Compress(Compression::kSnappy, AsBytes(in), 2, &c);
  // 32 KiB blocks: 4 chunks.
  ASSERT_TRUE(Dec(Compression::kSnappy, c, &out, &err)) << err;
  EXPECT_EQ(out, in);
}

TEST(CompressionTest, Lz4SpecExampleAndMagic0Header) {
  std::string expected = Hex("04 22 4d 18 60 40 82 03 00 00 80 61 62 63 00 00 00 00");
  std::string out, err;
  Compress(Compression::kLz4, AsBytes("abc"), 2, &out);
  EXPECT_EQ(out, expected);
  ASSERT_TRUE(Dec(Compression::kLz4, expected, &out, &err)) << err;
  EXPECT_EQ(out, "abc");
  std::string v0;
  Compress(Compression::kLz4, AsBytes("abc"), 0, &v0);
  EXPECT_EQ(v0.substr(0, 7), Hex("04 22 4d 18 60 40 1a"));
  // Magic 0: the (wrong) header checksum is not checked; magic 1 and 2 check it.
  ASSERT_TRUE(Dec(Compression::kLz4, v0, &out, &err, 0)) << err;
  EXPECT_EQ(out, "abc");
  EXPECT_FALSE(Dec(Compression::kLz4, v0, &out, &err, 1));
  EXPECT_NE(err.find("descriptor"), std::string::npos) << err;
  EXPECT_EQ(Xxh32(nullptr, 0, 0), 0x02CC5D05u);
}

TEST(CompressionTest, Lz4FrameVariants) {
  std::string out, err;
  std::string in = Payload(200000, 2, true), c;
  Compress(Compression::kLz4, AsBytes(in), 2, &c);
  ASSERT_TRUE(Dec(Compression::kLz4, c, &out, &err)) << err;
  EXPECT_EQ(out, in);
  // Bytes after the end mark are ignored.
  ASSERT_TRUE(Dec(Compression::kLz4, c + "junk", &out, &err)) << err;
  // Missing end mark is an error.
  EXPECT_FALSE(Dec(Compression::kLz4, c.substr(0, c.size() - 4), &out, &err));
  // Content-size flag (FLG 0x68): 8 bytes skipped; header checksum over FLG..content size.
  std::string frame = Hex("04 22 4d 18 68 40") + std::string("\x03\0\0\0\0\0\0\0", 8);
  uint8_t hc = uint8_t((Xxh32(reinterpret_cast<const uint8_t*>(frame.data()) + 4, 10, 0) >> 8) & 0xff);
  frame.push_back(char(hc));
  frame += Hex("03 00 00 80 61 62 63 00 00 00 00");
  ASSERT_TRUE(Dec(Compression::kLz4, frame, &out, &err)) << err;
  EXPECT_EQ(out, "abc");
  // Block size codes 5..7 accepted, <4 rejected; dependent blocks rejected; bad magic rejected.
  std::string bd7 = Hex("04 22 4d 18 60 70");
  bd7.push_back(char((Xxh32(reinterpret_cast<const uint8_t*>(bd7.data()) + 4, 2, 0) >> 8) & 0xff));
  bd7 += Hex("03 00 00 80 61 62 63 00 00 00 00");
  ASSERT_TRUE(Dec(Compression::kLz4, bd7, &out, &err)) << err;
  std::string bd3 = bd7;
  bd3[5] = 0x30;
  EXPECT_FALSE(Dec(Compression::kLz4, bd3, &out, &err, 0));
  std::string dep = bd7;
  dep[4] = 0x40;
  EXPECT_FALSE(Dec(Compression::kLz4, dep, &out, &err, 0));
  EXPECT_FALSE(Dec(Compression::kLz4, "\x05\x22\x4d\x18\x60\x40\x82", &out, &err));
  EXPECT_FALSE(Dec(Compression::kLz4, "\x04\x22", &out, &err));
}

TEST(CompressionTest, ZstdRoundTripConcatenatedAndSkippable) {
  std::string a, b, out, err;
  Compress(Compression::kZstd, AsBytes("hello "), 2, &a);
  Compress(Compression::kZstd, AsBytes("world"), 2, &b);
  EXPECT_EQ(a.substr(0, 4), Hex("28 b5 2f fd"));
  std::string skippable = Hex("50 2a 4d 18 03 00 00 00 01 02 03");
  ASSERT_TRUE(Dec(Compression::kZstd, a + skippable + b, &out, &err)) << err;
  EXPECT_EQ(out, "hello world");
  EXPECT_FALSE(Dec(Compression::kZstd, a.substr(0, a.size() - 2), &out, &err));
  EXPECT_FALSE(Dec(Compression::kZstd, a + "garbage", &out, &err));
}

TEST(CompressionTest, RoundTripEveryCodec) {
  for (Compression c :
       {Compression::kNone, Compression::kGzip, Compression::kSnappy, Compression::kLz4, Compression::kZstd}) {
    for (size_t n : {size_t(0), size_t(1), size_t(65536), size_t(300000)}) {
      for (bool compressible : {true, false}) {
        SCOPED_TRACE(std::string(CompressionName(c)) + " " + std::to_string(n));
        std::string in = Payload(n, unsigned(n), compressible), z, out, err;
        Compress(c, AsBytes(in), 2, &z);
        if (n == 0 && c == Compression::kZstd) {
          // An empty zstd frame.
        }
        ASSERT_TRUE(Dec(c, z, &out, &err)) << err;
        EXPECT_EQ(out, in);
      }
    }
  }
}

TEST(CompressionTest, BombIsAnError) {
  std::string zeros(4 << 20, '\0');
  for (Compression c :
       {Compression::kGzip, Compression::kSnappy, Compression::kLz4, Compression::kZstd, Compression::kNone}) {
    SCOPED_TRACE(CompressionName(c));
    std::string z, out, err;
    Compress(c, AsBytes(zeros), 2, &z);
    EXPECT_FALSE(Dec(c, z, &out, &err, 2, 1 << 20));
    EXPECT_NE(err.find("cap"), std::string::npos) << err;
    EXPECT_LE(out.size(), size_t(5) << 20);
    ASSERT_TRUE(Dec(c, z, &out, &err, 2, 4 << 20)) << err;  // exactly at the cap is fine
  }
}

TEST(CompressionTest, CorruptPayloads) {
  std::string in = Payload(5000, 9, true);
  for (Compression c : {Compression::kGzip, Compression::kSnappy, Compression::kLz4, Compression::kZstd}) {
    SCOPED_TRACE(CompressionName(c));
    std::string z, out, err;
    Compress(c, AsBytes(in), 2, &z);
    // Flip bytes in the middle: the codec must fail or produce something, never crash.
    for (size_t i = 20; i < z.size(); i += 7) {
      std::string bad = z;
      bad[i] ^= 0x5a;
      err.clear();
      if (!Dec(c, bad, &out, &err)) {
        EXPECT_FALSE(err.empty());
      }
    }
  }
}

TEST(CompressionTest, CompressedBoundHoldsForIncompressibleAndCompressibleInput) {
  // The cleaner decides KAFKA-5316's early return from this bound before it compresses (cleaner.cc),
  // so it must hold for any input: random bytes (nothing to compress) and runs, across block edges.
  std::mt19937 rng(7);
  for (Compression codec :
       {Compression::kNone, Compression::kGzip, Compression::kSnappy, Compression::kLz4, Compression::kZstd}) {
    for (size_t n : {size_t(0), size_t(1), size_t(61), size_t(4096), size_t(32767), size_t(32768), size_t(32769),
                     size_t(65535), size_t(65536), size_t(65537), size_t(131073), size_t(300000)}) {
      std::string random(n, '\0'), runs(n, 'k');
      for (char& c : random) c = char(rng());
      for (const std::string* input : {&random, &runs}) {
        std::string out;
        Compress(codec, AsBytes(*input), 2, &out);
        EXPECT_LE(out.size(), CompressedBound(codec, n)) << CompressionName(codec) << " " << n;
      }
    }
  }
}

}  // namespace
}  // namespace klf
