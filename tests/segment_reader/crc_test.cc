#include <gtest/gtest.h>

#include <string>

#include "segment_reader/crc.h"

namespace klf {
namespace {

TEST(CrcTest, Crc32cCheckValue) { EXPECT_EQ(Crc32c(AsBytes("123456789")), 0xE3069283u); }
TEST(CrcTest, Crc32CheckValue) { EXPECT_EQ(Crc32(AsBytes("123456789")), 0xCBF43926u); }
// CRC-64/GO-ISO's check value, whole and continued (the static build's Boost.CRC must agree with ISA-L).
TEST(CrcTest, Crc64CheckValueWholeAndExtended) {
  EXPECT_EQ(Crc64Extend(0, AsBytes("123456789")), 0xB90956C775A41001ull);
  EXPECT_EQ(Crc64Extend(Crc64Extend(0, AsBytes("1234")), AsBytes("56789")), 0xB90956C775A41001ull);
  EXPECT_EQ(Crc64Extend(0, AsBytes("")), 0u);
}
TEST(CrcTest, EmptyInput) {
  EXPECT_EQ(Crc32c(Bytes()), 0u);
  EXPECT_EQ(Crc32(Bytes()), 0u);
}
TEST(CrcTest, Crc32cExtendEqualsWhole) {
  std::string a = "The quick brown fox ", b = "jumps over the lazy dog";
  EXPECT_EQ(Crc32cExtend(Crc32c(AsBytes(a)), AsBytes(b)), Crc32c(AsBytes(a + b)));
  EXPECT_EQ(Crc32cExtend(0, AsBytes(a)), Crc32c(AsBytes(a)));
}
// RFC 3720 B.4 test vectors for CRC-32C.
TEST(CrcTest, Crc32cRfc3720Vectors) {
  std::string zeros(32, '\0'), ones(32, '\xff'), inc(32, '\0');
  for (int i = 0; i < 32; ++i) inc[i] = char(i);
  EXPECT_EQ(Crc32c(AsBytes(zeros)), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(AsBytes(ones)), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(AsBytes(inc)), 0x46DD794Eu);
}

}  // namespace
}  // namespace klf
