// Choosing what to clean (spec kafka-log-cleaner.md §2; Kafka's LogCleanerManager.cleanableOffsets,
// maxCompactionDelay, calculateCleanableBytes, grabFilthiestCompactedLog and LogToClean), as pure
// functions over a summary of a log's segments, so every rule can be tested without files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compactor/config.h"
#include "partition/loaded_log.h"

namespace klf {

// A log as the cleaner manager sees it. The last segment is the active one.
struct LogSummary {
  std::vector<SegmentSummary> segments;  // ascending base offset, at least one
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  int64_t last_stable_offset = 0;             // min(HW, first unstable offset)
  std::optional<int64_t> cleaner_checkpoint;  // cleaner-offset-checkpoint entry, if any

  const SegmentSummary& active() const { return segments.back(); }
};

// Index range [first, last) into LogSummary::segments.
struct SegmentRange {
  size_t first = 0, last = 0;
  bool empty() const { return first >= last; }
  size_t size() const { return last - first; }
};

// UnifiedLog.logSegments(from, to): the segment containing `from` (greatest base <= from) through
// every segment with base < to; empty when from == to. Requires from <= to.
SegmentRange SegmentsInRange(const LogSummary& log, int64_t from, int64_t to);
// Empty if from > active base, else SegmentsInRange(from, active base).
SegmentRange NonActiveSegmentsFrom(const LogSummary& log, int64_t from);

struct CleanableOffsets {
  int64_t first_dirty_offset = 0;
  int64_t first_uncleanable_dirty_offset = 0;  // not yet segment aligned (§2.2)
  bool force_update_checkpoint = false;        // checkpoint was outside [logStart, logEnd] (§2.1)
};
CleanableOffsets ComputeCleanableOffsets(const LogSummary& log, const CleanerConfig& config, int64_t now);

// §2.3: how long the dirty data is overdue for max.compaction.lag.ms (0 = not overdue).
int64_t MaxCompactionDelay(const LogSummary& log, int64_t first_dirty_offset, const CleanerConfig& config, int64_t now);

// §2.4 (LogToClean): the segment-aligned upper bound and the byte sums behind the dirty ratio.
struct LogToClean {
  int64_t first_dirty_offset = 0;
  int64_t uncleanable_offset = 0;        // as given (first_uncleanable_dirty_offset)
  int64_t first_uncleanable_offset = 0;  // base of the segment holding uncleanable_offset
  int64_t clean_bytes = 0;
  int64_t cleanable_bytes = 0;
  int64_t total_bytes = 0;
  double cleanable_ratio = 0;
};
LogToClean ComputeLogToClean(const LogSummary& log, int64_t first_dirty_offset, int64_t uncleanable_offset);

// Everything the cleaner manager decides for one log (§2.5), with the reason in words.
struct CleaningDecision {
  CleanableOffsets offsets;
  LogToClean range;
  int64_t max_compaction_delay_ms = 0;
  bool need_compaction_now = false;
  bool selected = false;  // a broker would clean this log now
  std::string reason;     // why (not) selected
};
CleaningDecision DecideCleaning(const LogSummary& log, const CleanerConfig& config, int64_t now);

// grabFilthiestCompactedLog over several logs' decisions: the selected one with the largest
// cleanable ratio (first on ties), or nullopt.
std::optional<size_t> GrabFilthiest(const std::vector<CleaningDecision>& decisions);

}  // namespace klf
