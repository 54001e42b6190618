#include "segment_reader/key_digest.h"

#include <openssl/evp.h>

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define KLF_MD5_LANES 1
#endif

namespace klf {
namespace {

// One fetched MD5 implementation and one reused context per thread: EVP_Digest(EVP_md5()) would
// fetch the algorithm (taking a lock) and allocate a context on every call, which costs more than
// hashing a short key.
struct OpenSslMd5 {
  EVP_MD* md = EVP_MD_fetch(nullptr, "MD5", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~OpenSslMd5() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
};

void Md5Into(Bytes bytes, uint8_t* out) {
  thread_local OpenSslMd5 md5;
  unsigned int len = 0;
  if (md5.md && md5.ctx && EVP_DigestInit_ex2(md5.ctx, md5.md, nullptr) &&
      EVP_DigestUpdate(md5.ctx, bytes.data(), bytes.size()) && EVP_DigestFinal_ex(md5.ctx, out, &len))
    return;
  EVP_Digest(bytes.data(), bytes.size(), out, &len, EVP_md5(), nullptr);
}

#ifdef KLF_MD5_LANES

// RFC 1321 §3.4: T[i] = floor(2^32 × |sin(i + 1)|), the per-step shift amounts, and the message
// word each step reads (round 1: i; round 2: 5i + 1; round 3: 3i + 5; round 4: 7i, all mod 16).
constexpr uint32_t kT[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

constexpr int kWord(int i) { return i < 16 ? i : i < 32 ? (5 * i + 1) % 16 : i < 48 ? (3 * i + 5) % 16 : (7 * i) % 16; }

constexpr int kLanes = 8;
constexpr size_t kMaxOneBlockKey = 55;  // 55 bytes + 0x80 + 8-byte bit length = one 64-byte block

#define KLF_AVX2 __attribute__((target("avx2")))

template <int S>
KLF_AVX2 inline __m256i Rotl(__m256i x) {
  return _mm256_or_si256(_mm256_slli_epi32(x, S), _mm256_srli_epi32(x, 32 - S));
}

// The four auxiliary functions of RFC 1321 §3.4, lane by lane.
struct F {
  KLF_AVX2 static __m256i Of(__m256i x, __m256i y, __m256i z) {
    return _mm256_xor_si256(z, _mm256_and_si256(x, _mm256_xor_si256(y, z)));  // (x & y) | (~x & z)
  }
};
struct G {
  KLF_AVX2 static __m256i Of(__m256i x, __m256i y, __m256i z) {
    return _mm256_xor_si256(y, _mm256_and_si256(z, _mm256_xor_si256(x, y)));  // (x & z) | (y & ~z)
  }
};
struct H {
  KLF_AVX2 static __m256i Of(__m256i x, __m256i y, __m256i z) { return _mm256_xor_si256(x, _mm256_xor_si256(y, z)); }
};
struct I {
  KLF_AVX2 static __m256i Of(__m256i x, __m256i y, __m256i z) {
    return _mm256_xor_si256(y, _mm256_or_si256(x, _mm256_xor_si256(z, _mm256_set1_epi32(-1))));  // y ^ (x | ~z)
  }
};

// One step i: a = b + ((a + Fn(b, c, d) + X[k] + T[i]) <<< S).
template <typename Fn, int S, int Step>
KLF_AVX2 inline void Op(__m256i& a, __m256i b, __m256i c, __m256i d, const __m256i* x) {
  __m256i sum = _mm256_add_epi32(_mm256_add_epi32(a, Fn::Of(b, c, d)),
                                 _mm256_add_epi32(x[kWord(Step)], _mm256_set1_epi32(int(kT[Step]))));
  a = _mm256_add_epi32(b, Rotl<S>(sum));
}

// Four steps of one round (the shifts repeat every four steps).
template <typename Fn, int S0, int S1, int S2, int S3, int Step>
KLF_AVX2 inline void Four(__m256i& a, __m256i& b, __m256i& c, __m256i& d, const __m256i* x) {
  Op<Fn, S0, Step>(a, b, c, d, x);
  Op<Fn, S1, Step + 1>(d, a, b, c, x);
  Op<Fn, S2, Step + 2>(c, d, a, b, x);
  Op<Fn, S3, Step + 3>(b, c, d, a, x);
}

// MD5 of eight one-block messages at once. blocks[l] is lane l's padded 64-byte block; out[l] its
// digest.
KLF_AVX2 void Md5EightBlocks(const uint32_t (*blocks)[16], KeyDigest* const* out) {
  __m256i x[16];
  const __m256i lane_starts = _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112);
  const int* base = reinterpret_cast<const int*>(blocks);
  for (int w = 0; w < 16; w++) x[w] = _mm256_i32gather_epi32(base + w, lane_starts, 4);

  __m256i a = _mm256_set1_epi32(0x67452301), b = _mm256_set1_epi32(int(0xefcdab89));
  __m256i c = _mm256_set1_epi32(int(0x98badcfe)), d = _mm256_set1_epi32(0x10325476);
  const __m256i a0 = a, b0 = b, c0 = c, d0 = d;
  Four<F, 7, 12, 17, 22, 0>(a, b, c, d, x);
  Four<F, 7, 12, 17, 22, 4>(a, b, c, d, x);
  Four<F, 7, 12, 17, 22, 8>(a, b, c, d, x);
  Four<F, 7, 12, 17, 22, 12>(a, b, c, d, x);
  Four<G, 5, 9, 14, 20, 16>(a, b, c, d, x);
  Four<G, 5, 9, 14, 20, 20>(a, b, c, d, x);
  Four<G, 5, 9, 14, 20, 24>(a, b, c, d, x);
  Four<G, 5, 9, 14, 20, 28>(a, b, c, d, x);
  Four<H, 4, 11, 16, 23, 32>(a, b, c, d, x);
  Four<H, 4, 11, 16, 23, 36>(a, b, c, d, x);
  Four<H, 4, 11, 16, 23, 40>(a, b, c, d, x);
  Four<H, 4, 11, 16, 23, 44>(a, b, c, d, x);
  Four<I, 6, 10, 15, 21, 48>(a, b, c, d, x);
  Four<I, 6, 10, 15, 21, 52>(a, b, c, d, x);
  Four<I, 6, 10, 15, 21, 56>(a, b, c, d, x);
  Four<I, 6, 10, 15, 21, 60>(a, b, c, d, x);

  alignas(32) uint32_t words[4][kLanes];
  _mm256_store_si256(reinterpret_cast<__m256i*>(words[0]), _mm256_add_epi32(a, a0));
  _mm256_store_si256(reinterpret_cast<__m256i*>(words[1]), _mm256_add_epi32(b, b0));
  _mm256_store_si256(reinterpret_cast<__m256i*>(words[2]), _mm256_add_epi32(c, c0));
  _mm256_store_si256(reinterpret_cast<__m256i*>(words[3]), _mm256_add_epi32(d, d0));
  for (int l = 0; l < kLanes; l++) {
    if (!out[l]) continue;
    for (int j = 0; j < 4; j++) std::memcpy(out[l]->data() + 4 * j, &words[j][l], 4);  // little-endian host
  }
}

// Lays `key` (at most kMaxOneBlockKey bytes) out as MD5's single padded block (RFC 1321 §3.1-3.2).
void PadOneBlock(Bytes key, uint32_t block[16]) {
  uint8_t* bytes = reinterpret_cast<uint8_t*>(block);
  std::memset(bytes, 0, 64);
  if (!key.empty()) std::memcpy(bytes, key.data(), key.size());
  bytes[key.size()] = 0x80;
  uint64_t bits = uint64_t(key.size()) * 8;
  std::memcpy(bytes + 56, &bits, 8);  // little-endian host
}

bool CpuHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

#endif  // KLF_MD5_LANES

}  // namespace

KeyDigest Md5(Bytes bytes) {
  KeyDigest d;
  Md5Into(bytes, d.data());
  return d;
}

bool Md5ManyIsVectorized() {
#ifdef KLF_MD5_LANES
  return CpuHasAvx2();
#else
  return false;
#endif
}

void Md5Many(const Bytes* keys, size_t n, KeyDigest* out) {
#ifdef KLF_MD5_LANES
  if (CpuHasAvx2()) {
    alignas(32) uint32_t blocks[kLanes][16];
    KeyDigest* targets[kLanes];
    int queued = 0;
    for (size_t i = 0; i < n; i++) {
      if (keys[i].size() > kMaxOneBlockKey) {
        Md5Into(keys[i], out[i].data());
        continue;
      }
      PadOneBlock(keys[i], blocks[queued]);
      targets[queued++] = &out[i];
      if (queued == kLanes) {
        Md5EightBlocks(blocks, targets);
        queued = 0;
      }
    }
    if (queued > 0) {  // the last few: idle lanes cost nothing extra
      for (int l = queued; l < kLanes; l++) {
        std::memset(blocks[l], 0, 64);
        targets[l] = nullptr;
      }
      Md5EightBlocks(blocks, targets);
    }
    return;
  }
#endif
  for (size_t i = 0; i < n; i++) Md5Into(keys[i], out[i].data());
}

}  // namespace klf
