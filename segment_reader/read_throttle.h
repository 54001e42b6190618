// A process-wide cap on the rate klf reads input files at (`klf digest --io-rate`): a token bucket that
// every read of segment data is charged to. StreamedFile charges each pread(2) as it happens; MappedFile
// charges the whole file when it is mapped (the readers that map a file read all of it), so the cap holds
// on average over a file, not within it. Off (no cost but one relaxed load) unless a rate is set.
#pragma once

#include <cstdint>

namespace klf {

// bytes_per_second 0: no cap (the default).
void SetReadRateLimit(uint64_t bytes_per_second);
// Charges `bytes` read; sleeps as long as the reads so far are ahead of the rate. Thread-safe.
void ThrottleRead(uint64_t bytes);
// Bytes charged since the process started (with or without a cap).
uint64_t BytesThrottled();

}  // namespace klf
