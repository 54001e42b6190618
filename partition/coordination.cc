#include "partition/coordination.h"

#include <algorithm>

#include "partition/loaded_log.h"

namespace klf {

CoordinationOffsets CoordinationOffsetsOf(int64_t log_start, int64_t log_end, std::optional<int64_t> checkpoint,
                                          std::optional<int64_t> first_unstable) {
  int64_t dirty = checkpoint.value_or(log_start);
  if (dirty < log_start || dirty > log_end) dirty = log_start;
  CoordinationOffsets c;
  c.mcco = std::min(dirty, log_end);
  c.mxfo = first_unstable ? std::min(*first_unstable, log_end) : log_end;
  return c;
}

CoordinationOffsets CoordinationOffsetsOf(const LoadedLog& log) {
  return CoordinationOffsetsOf(log.log_start_offset, log.log_end_offset, log.cleaner_checkpoint,
                               log.first_unstable_offset);
}

}  // namespace klf
