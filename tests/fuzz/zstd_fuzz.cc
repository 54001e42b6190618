// libFuzzer target: zstd decompression of arbitrary bytes under a small output cap, and a
// Compress -> Decompress round trip of the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "segment_reader/compression.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace klf;
  constexpr size_t kCap = 1 << 20;
  // The magic selects Kafka's per-magic quirks (lz4 frame header checksum for magic 0).
  int magic = size > 0 ? data[size - 1] % 3 : 2;
  std::string out, error;
  if (!Decompress(Compression::kZstd, Bytes(data, size), magic, kCap, &out, &error)) {
    if (error.empty()) __builtin_trap();  // every failure says why
  } else if (out.size() > kCap) {
    __builtin_trap();  // the cap holds
  }
  std::string packed, unpacked;
  Compress(Compression::kZstd, Bytes(data, size), magic, &packed);
  if (!Decompress(Compression::kZstd, AsBytes(packed), magic, size + 1, &unpacked, &error)) __builtin_trap();
  if (unpacked.size() != size || (size > 0 && std::memcmp(unpacked.data(), data, size) != 0)) __builtin_trap();
  return 0;
}
