// MD5 of record keys: the digest Kafka's cleaner keeps per key in its offset map
// (SkimpyOffsetMap.hashInto: MD5 over the key bytes only, no length prefix, no salt). The compactor
// builds its map from these digests and the replica diff compares keys by them.
//
// Kafka hashes one key at a time, and so does OpenSSL: MD5 is a chain of 64 dependent steps per
// 64-byte block, so a short key costs ~100 ns however fast the core. Keys come a batch at a time,
// and most are short, so Md5Many hashes eight keys at once in the eight 32-bit lanes of an AVX2
// register (the same 64 steps, each on eight independent messages). No library packaged by Debian
// offers a multi-buffer MD5 (ISA-L's lives in isa-l_crypto, which Debian does not ship), hence this
// one file of hand-written code; it is checked against OpenSSL on every length and lane mix
// (tests/segment_reader/key_digest_test.cc). Without AVX2, and for keys of 56 bytes or more (more than
// one block), OpenSSL computes the digest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "segment_reader/bytes.h"

namespace klf {

using KeyDigest = std::array<uint8_t, 16>;

// MD5 of `bytes` (OpenSSL).
KeyDigest Md5(Bytes bytes);

// out[i] = Md5(keys[i]) for i < n; multi-lane where the CPU allows it (see above).
void Md5Many(const Bytes* keys, size_t n, KeyDigest* out);

// True when Md5Many uses its eight-lane AVX2 path on this CPU (for tests and benchmarks).
bool Md5ManyIsVectorized();

}  // namespace klf
