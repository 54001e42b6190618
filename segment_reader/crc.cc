#include "segment_reader/crc.h"

#include <isa-l/crc.h>
#include <zlib.h>

#include <climits>

namespace klf {

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
