#include "segment_reader/crc.h"

#include <zlib.h>

#include <climits>

#if KLF_CRC32C_BOOST
#include <cstring>

#include <boost/crc.hpp>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif
#else
#include <isa-l/crc.h>
#include <isa-l/crc64.h>
#endif

namespace klf {

#if KLF_CRC32C_BOOST
// The static build (KLF_STATIC: Debian ships no static ISA-L): Boost.CRC's table-driven CRC-32C, reflected
// in and out. Its initial remainder is given unreflected, so continuing from the register `~crc` (as
// ISA-L's is) takes that register bit-reversed.
namespace {
uint32_t BitReverse(uint32_t x) {
  x = (x >> 1 & 0x55555555u) | (x & 0x55555555u) << 1;
  x = (x >> 2 & 0x33333333u) | (x & 0x33333333u) << 2;
  x = (x >> 4 & 0x0F0F0F0Fu) | (x & 0x0F0F0F0Fu) << 4;
  x = (x >> 8 & 0x00FF00FFu) | (x & 0x00FF00FFu) << 8;
  return x >> 16 | x << 16;
}
uint64_t BitReverse64(uint64_t x) { return uint64_t(BitReverse(uint32_t(x))) << 32 | BitReverse(uint32_t(x >> 32)); }

#if defined(__x86_64__)
// Written by hand because Debian ships no static ISA-L and Boost.CRC's table walk is about 9x slower
// (docs/PERFORMANCE.md): SSE4.2's crc32 instruction computes CRC-32C's register update, 8 bytes at a time.
__attribute__((target("sse4.2"))) uint32_t Crc32cRegister(uint32_t reg, const uint8_t* p, size_t n) {
  uint64_t r = reg;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    r = _mm_crc32_u64(r, v);
  }
  uint32_t r32 = uint32_t(r);
  for (; n > 0; ++p, --n) r32 = _mm_crc32_u8(r32, *p);
  return r32;
}
const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif
}  // namespace

uint32_t Crc32cExtend(uint32_t crc, Bytes data) {
#if defined(__x86_64__)
  if (kHaveSse42) return ~Crc32cRegister(~crc, data.data(), data.size());
#endif
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> c(BitReverse(~crc));
  c.process_bytes(data.data(), data.size());
  return c.checksum();
}

uint64_t Crc64Extend(uint64_t crc, Bytes data) {
  boost::crc_optimal<64, 0x1BULL, ~0ULL, ~0ULL, true, true> c(BitReverse64(~crc));
  c.process_bytes(data.data(), data.size());
  return c.checksum();
}
#else
// ISA-L's crc32_iscsi takes the running register as `init_crc` and returns the register without the
// final inversion: the standard CRC-32C is ~crc32_iscsi(buf, len, ~previous) with previous = 0 at the
// start (so init 0xFFFFFFFF and final xor 0xFFFFFFFF). Its length is an int, so feed it in slices.
uint32_t Crc32cExtend(uint32_t crc, Bytes data) {
  uint32_t reg = ~crc;
  const uint8_t* p = data.data();
  size_t n = data.size();
  while (n > 0) {
    int chunk = n > size_t(INT_MAX / 2) ? INT_MAX / 2 : int(n);
    reg = crc32_iscsi(const_cast<unsigned char*>(p), chunk, reg);
    p += chunk;
    n -= size_t(chunk);
  }
  return ~reg;
}

uint64_t Crc64Extend(uint64_t crc, Bytes data) { return crc64_iso_refl(crc, data.data(), data.size()); }
#endif

uint32_t Crc32c(Bytes data) { return Crc32cExtend(0, data); }

uint32_t Crc32(Bytes data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const uint8_t* p = data.data();
  size_t n = data.size();
  while (n > 0) {
    uInt chunk = n > size_t(1u << 30) ? uInt(1u << 30) : uInt(n);
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return uint32_t(crc);
}

}  // namespace klf
