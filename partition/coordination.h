// The offsets a replica reports to coordinated compaction (../shared/spec/
// redpanda-coordinated-compaction.md §2, §8), exclusive, from what the replica holds:
//   * MCCO, how far it has cleanly compacted: its cleaner checkpoint (firstDirtyOffset), reset to the
//     log start offset when there is none or when it lies outside [log start, log end], as Kafka's
//     cleanableOffsets resets it;
//   * MXFO, how far it is free of open transactions: its first unstable offset, else its log end.
// The cluster removes tombstones below MTRO = min MCCO and markers below MXRO = min MXFO.
#pragma once

#include <cstdint>
#include <optional>

namespace klf {

struct LoadedLog;

struct CoordinationOffsets {
  int64_t mcco = 0, mxfo = 0;
};

CoordinationOffsets CoordinationOffsetsOf(int64_t log_start_offset, int64_t log_end_offset,
                                          std::optional<int64_t> cleaner_checkpoint,
                                          std::optional<int64_t> first_unstable_offset);
// The same from a partition as LoadedLog::Open loaded it.
CoordinationOffsets CoordinationOffsetsOf(const LoadedLog& log);

}  // namespace klf
