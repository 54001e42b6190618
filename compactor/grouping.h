// groupSegmentsBySize (spec kafka-log-cleaner.md §6.1): which consecutive source segments are
// cleaned into one new segment.
#pragma once

#include <cstdint>
#include <vector>

#include "compactor/cleanable.h"

namespace klf {

// Groups `segments` (a run of consecutive segments, in order) greedily; each group is a list of
// indexes into `segments`. Sizes are the source segments' .log bytes and index bytes.
std::vector<std::vector<size_t>> GroupSegmentsBySize(const std::vector<SegmentSummary>& segments, int64_t max_size,
                                                     int64_t max_index_size, int64_t first_uncleanable_offset);

}  // namespace klf
