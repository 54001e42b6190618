// A partition directory loaded the way the log cleaner sees it (spec kafka-log-cleaner.md §0, §7.1,
// §7.3, §13 steps 1-2): its segments (read-only), their summaries, transaction indexes, the
// log-dir checkpoint values, and the producer state that decides which producers are active.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compactor/cleanable.h"
#include "compactor/config.h"
#include "compactor/retention.h"
#include "segment_reader/batch.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/index_files.h"
#include "segment_reader/problem.h"
#include "partition/loaded_log.h"
#include "partition/producer_state.h"

namespace klf {

struct LoadedSegment {
  int64_t base_offset = 0;
  std::string log_path;
  uint64_t size = 0;                  // .log bytes at load
  int64_t mtime_ms = 0;               // .log modification time
  std::vector<AbortedTxn> txn_index;  // .txnindex entries (empty if absent)
  std::vector<OffsetIndexEntry> offset_index;
};

struct PartitionLog {
  std::string dir;
  Env* env = nullptr;   // what its files are read through (CompactOptions::env; null: Env::Default())
  std::string log_dir;  // parent directory (holds the checkpoint files)
  TopicPartition tp;
  std::vector<LoadedSegment> segments;            // ascending base offset
  LogSummary summary;                             // parallel to `segments`
  std::map<int64_t, std::string> snapshot_files;  // offset -> path
  int64_t high_watermark = 0;
  ProducerStateManager producer_state;     // after expiration at `now`: the active producers
  std::vector<int64_t> expired_producers;  // removed by that expiration

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
