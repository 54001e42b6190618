// A partition directory loaded the way the log cleaner sees it (spec kafka-log-cleaner.md §0, §7.1,
// §7.3, §13 steps 1-2): the LoadedLog a broker's LogLoader builds (partition/loaded_log.h), plus what
// the cleaner adds: each segment's summary and offset index (SummarizeSegment), the high watermark it
// was given, and the producers expired before the pass.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compactor/cleanable.h"
#include "compactor/config.h"
#include "compactor/retention.h"
#include "partition/loaded_log.h"
#include "segment_reader/index_files.h"
#include "segment_reader/problem.h"

namespace klf {

// A segment of the load (base offset, `.log` path, `.txnindex` entries) as the cleaner reads it.
struct LoadedSegment : SegmentInfo {
  uint64_t size = 0;  // .log bytes at load
  std::vector<OffsetIndexEntry> offset_index;
};

struct PartitionLog {
  // The partition as loaded (dir, env, tp, snapshot_files, ...); its segments are moved into
  // `segments`, and its producer_state holds the active producers: those not expired at `now`.
  LoadedLog loaded;
  std::string log_dir;                     // parent directory (holds the checkpoint files)
  std::vector<LoadedSegment> segments;     // ascending base offset
  LogSummary summary;                      // parallel to `segments`
  int64_t high_watermark = 0;              // the one the cleaner was given, else the load's (at most the log end)
  std::vector<int64_t> expired_producers;  // removed by the expiration at `now`

  // lastRecordsOfActiveProducers (§7.3).
  LastRecords LastRecordsOfActiveProducers() const;
  // UnifiedLog.collectAbortedTransactions(start, upper) (§7.1).
  std::vector<AbortedTxn> CollectAbortedTransactions(int64_t start, int64_t upper) const;
};

// Loads `partition_dir`. `now` applies producer.id.expiration.ms. `high_watermark`: when unset, the
// replication-offset-checkpoint value capped at the log end offset, else the log end offset.
// Returns false with *error when the directory or a segment cannot be read, or a segment is corrupt
// where the cleaner would read it (problems also go to `sink`).
// Every file is read through `env` (null: Env::Default()), which the log keeps for the cleaner's reads.
bool LoadPartitionLog(const std::string& partition_dir, const CleanerConfig& config, int64_t now,
                      std::optional<int64_t> high_watermark, PartitionLog* out, ProblemSink* sink, std::string* error,
                      Env* env = nullptr);

}  // namespace klf
