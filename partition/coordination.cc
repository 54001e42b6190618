#include "partition/coordination.h"

#include <algorithm>

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

}  // namespace klf
