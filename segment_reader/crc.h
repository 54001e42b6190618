// Checksums of Kafka's formats. CRC-32C (Castagnoli) for v2 batches and producer snapshots, computed
// with ISA-L; CRC-32 (IEEE) for v0/v1 messages, computed with zlib. CRC-64 (ISO, ISA-L) is klf's own
// content fingerprint (diff). The static build (KLF_STATIC) computes CRC-32C and CRC-64 with Boost.CRC,
// to the same values.
#pragma once

#include <cstdint>

#include "segment_reader/bytes.h"

namespace klf {

// Standard CRC-32C (init 0xFFFFFFFF, final xor): Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(Bytes data);
// Continues a CRC-32C over more bytes: Crc32cExtend(Crc32c(a), b) == Crc32c(a ++ b).
uint32_t Crc32cExtend(uint32_t crc, Bytes data);
// CRC-64/GO-ISO, continued as Crc32cExtend is: Crc64Extend(0, "123456789") == 0xB90956C775A41001
// (ISA-L's crc64_iso_refl).
uint64_t Crc64Extend(uint64_t crc, Bytes data);
// Standard CRC-32 (zlib): Crc32("123456789") == 0xCBF43926.
uint32_t Crc32(Bytes data);

}  // namespace klf
