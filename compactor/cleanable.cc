#include "compactor/cleanable.h"
#include "segment_reader/java_long.h"

#include <algorithm>
#include <fmt/format.h>

namespace klf {
SegmentRange SegmentsInRange(const LogSummary& log, int64_t from, int64_t to) {
  SegmentRange r;
  const auto& segs = log.segments;
  if (from >= to) return r;
  // Greatest base <= from (floorKey); if none, start at the first segment.
  size_t first = 0;
  for (size_t i = 0; i < segs.size(); i++) {
    if (segs[i].base_offset <= from)
      first = i;
    else
      break;
  }
  size_t last = first;
  while (last < segs.size() && segs[last].base_offset < to) last++;
  r.first = first;
  r.last = last;
  return r;
}

SegmentRange NonActiveSegmentsFrom(const LogSummary& log, int64_t from) {
  int64_t active_base = log.active().base_offset;
  if (from > active_base) return {};
  return SegmentsInRange(log, from, active_base);
}

CleanableOffsets ComputeCleanableOffsets(const LogSummary& log, const CleanerConfig& config, int64_t now) {
  CleanableOffsets r;
  // §2.1: the checkpoint, reset to the log start when it is outside the log.
  int64_t checkpoint = log.cleaner_checkpoint.value_or(log.log_start_offset);
  if (checkpoint < log.log_start_offset || checkpoint > log.log_end_offset) {
    r.first_dirty_offset = log.log_start_offset;
    r.force_update_checkpoint = true;
  } else {
    r.first_dirty_offset = checkpoint;
  }
  // §2.2: min(LSO, active base, first segment within min.compaction.lag.ms).
  int64_t bound = std::min(log.last_stable_offset, log.active().base_offset);
  int64_t min_lag = std::max<int64_t>(config.min_compaction_lag_ms, 0);
  if (min_lag > 0) {
    SegmentRange dirty = NonActiveSegmentsFrom(log, r.first_dirty_offset);
    for (size_t i = dirty.first; i < dirty.last; i++) {
      if (log.segments[i].largest_timestamp() > JavaSub(now, min_lag)) {
        bound = std::min(bound, log.segments[i].base_offset);
        break;
      }
    }
  }
  r.first_uncleanable_dirty_offset = std::max(r.first_dirty_offset, bound);
  return r;
}

int64_t MaxCompactionDelay(const LogSummary& log, int64_t first_dirty_offset, const CleanerConfig& config,
                           int64_t now) {
  SegmentRange dirty = NonActiveSegmentsFrom(log, first_dirty_offset);
  int64_t earliest = INT64_MAX;
  for (size_t i = dirty.first; i < dirty.last; i++) {
    const auto& t = log.segments[i].first_batch_timestamp;
    if (t && *t > 0) earliest = std::min(earliest, *t);
  }
  int64_t clean_until = JavaSub(now, std::max<int64_t>(config.max_compaction_lag_ms, 0));
  return earliest < clean_until ? JavaSub(clean_until, earliest) : 0;
}

LogToClean ComputeLogToClean(const LogSummary& log, int64_t first_dirty_offset, int64_t uncleanable_offset) {
  LogToClean r;
  r.first_dirty_offset = first_dirty_offset;
  r.uncleanable_offset = uncleanable_offset;
  SegmentRange rest = NonActiveSegmentsFrom(log, uncleanable_offset);
  r.first_uncleanable_offset = rest.empty() ? log.active().base_offset : log.segments[rest.first].base_offset;
  auto sum = [&](SegmentRange range) {
    int64_t s = 0;
    for (size_t i = range.first; i < range.last; i++) s += log.segments[i].size;
    return s;
  };
  r.cleanable_bytes =
      sum(SegmentsInRange(log, std::min(first_dirty_offset, r.first_uncleanable_offset), r.first_uncleanable_offset));
  r.clean_bytes = sum(SegmentsInRange(log, -1, first_dirty_offset));
  r.total_bytes = r.clean_bytes + r.cleanable_bytes;
  r.cleanable_ratio = r.total_bytes == 0 ? 0 : double(r.cleanable_bytes) / double(r.total_bytes);
  return r;
}

CleaningDecision DecideCleaning(const LogSummary& log, const CleanerConfig& config, int64_t now) {
  CleaningDecision d;
  d.offsets = ComputeCleanableOffsets(log, config, now);
  d.max_compaction_delay_ms = MaxCompactionDelay(log, d.offsets.first_dirty_offset, config, now);
  d.need_compaction_now = d.max_compaction_delay_ms > 0;
  d.range = ComputeLogToClean(log, d.offsets.first_dirty_offset, d.offsets.first_uncleanable_dirty_offset);
  if (!config.compact) {
    d.reason = "cleanup.policy does not contain compact";
  } else if (d.range.total_bytes == 0) {
    d.reason = "nothing to clean (total bytes 0)";
  } else if (d.need_compaction_now && d.range.cleanable_bytes > 0) {
    d.selected = true;
    d.reason = fmt::format("max.compaction.lag.ms overdue by {} ms", d.max_compaction_delay_ms);
  } else if (d.range.cleanable_ratio > config.min_cleanable_ratio) {
    d.selected = true;
    d.reason = fmt::format("dirty ratio {:.4f} > min.cleanable.dirty.ratio {}", d.range.cleanable_ratio,
                           config.min_cleanable_ratio);
  } else {
    d.reason = fmt::format("dirty ratio {:.4f} <= min.cleanable.dirty.ratio {}", d.range.cleanable_ratio,
                           config.min_cleanable_ratio);
  }
  return d;
}

std::optional<size_t> GrabFilthiest(const std::vector<CleaningDecision>& decisions) {
  std::optional<size_t> best;
  for (size_t i = 0; i < decisions.size(); i++) {
    if (!decisions[i].selected) continue;
    if (!best || decisions[i].range.cleanable_ratio > decisions[*best].range.cleanable_ratio) best = i;
  }
  return best;
}

}  // namespace klf
