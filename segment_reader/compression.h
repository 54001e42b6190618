// Kafka's compression codecs (spec kafka-on-disk-format.md §7), in both directions.
//
// Decompression writes into a caller-owned buffer and stops with an error once the output would
// exceed `max_output`: a decompression bomb is an error, never an out-of-memory.
// Libraries: zlib via Boost.Iostreams (gzip), Snappy (raw blocks; the xerial stream framing Kafka
// writes is parsed here, it is a 16-byte header plus length-prefixed blocks), liblz4 (block API; the
// LZ4 frame is parsed here because Kafka's v0 frames carry a wrong header checksum that liblz4's
// frame decoder rejects), libzstd (streaming API).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "segment_reader/bytes.h"

namespace klf {

enum class Compression : uint8_t { kNone = 0, kGzip = 1, kSnappy = 2, kLz4 = 3, kZstd = 4 };

// "none", "gzip", "snappy", "lz4", "zstd".
const char* CompressionName(Compression c);
std::optional<Compression> CompressionFromName(std::string_view name);
// The codec of attribute bits 0-2; nullopt for the unknown ids 5-7.
std::optional<Compression> CompressionFromId(int id);

constexpr size_t kDefaultMaxDecompressedBytes = size_t(256) << 20;

// Decompresses `input` (a v2 records section, or a v0/v1 wrapper's value) into `*out` (replaced).
// `magic` selects Kafka's per-magic quirks (lz4 header checksum not checked for magic 0).
// Returns false with a message in *error ("lz4: frame descriptor checksum mismatch", "decompressed
// size exceeds the 268435456-byte cap", ...) on any failure.
bool Decompress(Compression codec, Bytes input, int magic, size_t max_output, std::string* out, std::string* error);

// Compresses as Kafka's producer-side streams do, with the codec's default level (what the cleaner
// uses): gzip level 6 (one member, header OS byte 0xff as written by JDK >= 16), snappy in xerial
// framing with 32 KiB blocks, lz4 frame with 64 KiB blocks and Kafka's header checksum for `magic`
// (0x1a for magic 0), zstd level 3. `*out` is replaced.
void Compress(Compression codec, Bytes input, int magic, std::string* out);

// At least the size of Compress's output for `input_size` bytes, whatever they hold: the codec
// library's own bound for what it compresses, plus the framing Compress adds around it.
size_t CompressedBound(Compression codec, size_t input_size);

// XXH32 (the LZ4 frame's header and block checksums). Exposed for tests and writers.
uint32_t Xxh32(const uint8_t* data, size_t len, uint32_t seed);

}  // namespace klf
