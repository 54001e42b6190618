#include "compactor/grouping.h"
#include "segment_reader/java_long.h"

namespace klf {

std::vector<std::vector<size_t>> GroupSegmentsBySize(const std::vector<SegmentSummary>& segments, int64_t max_size,
                                                     int64_t max_index_size, int64_t first_uncleanable_offset) {
  std::vector<std::vector<size_t>> groups;
  size_t i = 0;
  while (i < segments.size()) {
    const SegmentSummary& g0 = segments[i];
    std::vector<size_t> group{i};
    int64_t log_size = g0.size, index_size = g0.offset_index_bytes, time_index_size = g0.time_index_bytes;
    i++;
    while (i < segments.size()) {
      const SegmentSummary& s = segments[i];
      // Kafka's lastOffsetForFirstSegment: the next remaining segment's base - 1, or the round's
      // upper bound - 1 for the last one. Keeps relative offsets of the merged segment in int32.
      int64_t last_offset_estimate =
          i + 1 < segments.size() ? JavaSub(segments[i + 1].base_offset, 1) : JavaSub(first_uncleanable_offset, 1);
      bool fits = log_size + s.size <= max_size && index_size + s.offset_index_bytes <= max_index_size &&
                  time_index_size + s.time_index_bytes <= max_index_size &&
                  (s.size == 0 || last_offset_estimate - g0.base_offset <= INT32_MAX);
      if (!fits) break;
      group.push_back(i);
      log_size += s.size;
      index_size += s.offset_index_bytes;
      time_index_size += s.time_index_bytes;
      i++;
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

size_t SplitNearMiddle(const std::vector<uint64_t>& sizes) {
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;
  size_t split = 1;
  uint64_t before = 0, best = UINT64_MAX;
  for (size_t i = 0; i + 1 < sizes.size(); i++) {
    before += sizes[i];
    uint64_t off_middle = before * 2 > total ? before * 2 - total : total - before * 2;
    if (off_middle < best) {
      best = off_middle;
      split = i + 1;
    }
  }
  return split;
}

}  // namespace klf
