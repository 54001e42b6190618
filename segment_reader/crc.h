// Checksums of Kafka's formats. CRC-32C (Castagnoli) for v2 batches and producer snapshots, computed
// with ISA-L; CRC-32 (IEEE) for v0/v1 messages, computed with zlib.
#pragma once

#include <cstdint>

#include "segment_reader/bytes.h"

namespace klf {

// Standard CRC-32C (init 0xFFFFFFFF, final xor): Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(Bytes data);
// Continues a CRC-32C over more bytes: Crc32cExtend(Crc32c(a), b) == Crc32c(a ++ b).
uint32_t Crc32cExtend(uint32_t crc, Bytes data);
// Standard CRC-32 (zlib): Crc32("123456789") == 0xCBF43926.
uint32_t Crc32(Bytes data);

}  // namespace klf
