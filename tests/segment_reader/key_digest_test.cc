// Md5Many (eight keys per AVX2 register) against OpenSSL's MD5, one key at a time.
#include "segment_reader/key_digest.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <random>
#include <string>
#include <vector>

namespace klf {
namespace {

KeyDigest OpenSsl(const std::string& s) {
  KeyDigest d{};
  unsigned int len = 0;
  EXPECT_EQ(EVP_Digest(s.data(), s.size(), d.data(), &len, EVP_md5(), nullptr), 1);
  EXPECT_EQ(len, 16u);
  return d;
}

Bytes B(const std::string& s) { return Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

std::string Hex(const KeyDigest& d) {
  static const char* digits = "0123456789abcdef";
  std::string h;
  for (uint8_t b : d) {
    h += digits[b >> 4];
    h += digits[b & 15];
  }
  return h;
}

void ExpectManyMatches(const std::vector<std::string>& keys) {
  std::vector<Bytes> spans;
  for (const auto& k : keys) spans.push_back(B(k));
  std::vector<KeyDigest> got(keys.size());
  Md5Many(spans.data(), spans.size(), got.data());
  for (size_t i = 0; i < keys.size(); i++)
    ASSERT_EQ(Hex(got[i]), Hex(OpenSsl(keys[i])))
        << "key " << i << " of " << keys.size() << ", length " << keys[i].size();
}

TEST(KeyDigestTest, Rfc1321TestSuite) {
  // RFC 1321 appendix A.5.
  const std::vector<std::pair<std::string, std::string>> vectors = {
      {"", "d41d8cd98f00b204e9800998ecf8427e"},
      {"a", "0cc175b9c0f1b6a831c399e269772661"},
      {"abc", "900150983cd24fb0d6963f7d28e17f72"},
      {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
      {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
      {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"},
      {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
       "57edf4a22be3c955ac49da2e2107b67a"}};
  std::vector<std::string> keys;
  for (const auto& [k, hex] : vectors) {
    EXPECT_EQ(Hex(Md5(B(k))), hex) << k;
    keys.push_back(k);
  }
  std::vector<Bytes> spans;
  for (const auto& k : keys) spans.push_back(B(k));
  std::vector<KeyDigest> got(keys.size());
  Md5Many(spans.data(), spans.size(), got.data());
  for (size_t i = 0; i < keys.size(); i++) EXPECT_EQ(Hex(got[i]), vectors[i].second) << keys[i];
}

TEST(KeyDigestTest, EveryLengthAroundTheOneBlockLimit) {
  // 0..130 bytes: one block up to 55, two blocks from 56 (OpenSSL's path), three from 120.
  std::mt19937 rng(1);
  std::vector<std::string> keys;
  for (size_t len = 0; len <= 130; len++) {
    std::string k(len, '\0');
    for (auto& c : k) c = char(rng());
    keys.push_back(k);
  }
  ExpectManyMatches(keys);
}

TEST(KeyDigestTest, EveryBatchSizeAndLaneMix) {
  // Batches of 0..40 keys (full and partial groups of eight), long keys interleaved at random so the
  // short ones land in every lane.
  std::mt19937 rng(7);
  for (size_t n = 0; n <= 40; n++) {
    for (int round = 0; round < 20; round++) {
      std::vector<std::string> keys;
      for (size_t i = 0; i < n; i++) {
        size_t len = rng() % 4 == 0 ? 56 + rng() % 100 : rng() % 56;
        std::string k(len, '\0');
        for (auto& c : k) c = char(rng());
        keys.push_back(k);
      }
      ExpectManyMatches(keys);
    }
  }
}

TEST(KeyDigestTest, KafkaStyleKeys) {
  // The shapes of real keys: decimal counters, UUIDs, all-zero and all-0xff bytes.
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; i++) keys.push_back("user-" + std::to_string(1000000000 + i * 7919));
  keys.push_back("123e4567-e89b-12d3-a456-426614174000");
  keys.push_back(std::string(55, '\0'));
  keys.push_back(std::string(55, '\xff'));
  keys.push_back(std::string(1, '\0'));
  ExpectManyMatches(keys);
}

TEST(KeyDigestTest, ReportsWhetherItIsVectorized) {
  // On x86-64 with AVX2 (every machine this project runs on) the eight-lane path must be the one
  // tested above; elsewhere Md5Many is OpenSSL and the tests above still hold.
#if defined(__x86_64__)
  EXPECT_EQ(Md5ManyIsVectorized(), bool(__builtin_cpu_supports("avx2")));
#else
  EXPECT_FALSE(Md5ManyIsVectorized());
#endif
}

}  // namespace
}  // namespace klf
