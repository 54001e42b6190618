// Java's long arithmetic: two's-complement and wrapping. Offsets, timestamps and clocks come from
// files and flags that may hold any 64-bit value (a baseOffset of 2^63 - 1 is outside the CRC; `--now`
// and the lags may be Long.MIN_VALUE), and Kafka computes with them as Java longs, which wrap where
// C++'s signed overflow is undefined. Every such sum or difference goes through these.
#pragma once

#include <cstdint>

namespace klf {

constexpr int64_t JavaAdd(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
constexpr int64_t JavaSub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
constexpr int64_t JavaMul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

}  // namespace klf
