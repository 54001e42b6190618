// Configuration of one offline cleaner run (spec kafka-log-cleaner.md §1): the topic settings and
// the broker's cleaner settings, with Kafka's defaults, overridden by `--config KEY=VALUE` using
// Kafka's own property names (cli.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace klf {

struct CleanerConfig {
  // Topic configs (LogConfig.java); the broker default key is accepted as well (e.g.
  // `log.cleaner.delete.retention.ms` for `delete.retention.ms`).
  bool compact = false;       // cleanup.policy contains "compact"
  bool delete_policy = true;  // cleanup.policy contains "delete"
  double min_cleanable_ratio = 0.5;
  int64_t min_compaction_lag_ms = 0;
  int64_t max_compaction_lag_ms = INT64_MAX;
  int64_t delete_retention_ms = 86400000;
  int32_t segment_bytes = 1073741824;
  int32_t segment_index_bytes = 10485760;
  int32_t index_interval_bytes = 4096;
  int32_t max_message_bytes = 1048588;  // topic max.message.bytes
  bool preallocate = false;

  // Broker-only configs (CleanerConfig.java, ServerConfigs, TransactionLogConfig).
  int32_t cleaner_threads = 1;
  int64_t dedupe_buffer_size = 134217728;
  double dedupe_buffer_load_factor = 0.9;  // log.cleaner.io.buffer.load.factor
  int32_t io_buffer_size = 524288;
  int32_t broker_message_max_bytes = 1048588;  // message.max.bytes = the cleaner's maxIoBufferSize
  int64_t producer_id_expiration_ms = 86400000;

  // Sets one property by Kafka's name. Returns false with *error for an unknown name or a value
  // that does not parse (Kafka's own ConfigDef would reject it too).
  bool Set(std::string_view key, std::string_view value, std::string* error);
  // Parses "KEY=VALUE".
  bool SetFromArg(std::string_view key_value, std::string* error);

  // Derived per cleaner thread (LogCleaner.CleanerThread, spec §1):
  // offset-map memory = min(dedupe / threads, Int.MAX).
  int32_t OffsetMapMemory() const;
  // read buffer = write buffer = io.buffer.size / threads / 2.
  int32_t IoBufferSizePerBuffer() const;
  int32_t MaxIoBufferSize() const { return broker_message_max_bytes; }
};

}  // namespace klf
