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

// Where a two-thread map build splits a run of segments of these byte sizes (not a Kafka rule: the
// map is the same either way, cleaner.cc BuildOffsetMap): the index of the first segment of the later
// part, at the segment boundary nearest the middle byte (ties: the earlier boundary, as the first
// thread also merges the two maps). In [1, sizes.size() - 1]; needs two segments or more.
size_t SplitNearMiddle(const std::vector<uint64_t>& sizes);

}  // namespace klf
