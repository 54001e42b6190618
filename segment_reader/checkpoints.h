// Text files of partition and log directories (spec kafka-on-disk-format.md §1.1, §11):
// offset checkpoints (cleaner, recovery point, replication, log start), leader-epoch-checkpoint,
// partition.metadata, meta.properties, .kafka_cleanshutdown.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "segment_reader/problem.h"

namespace klf {

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  auto operator<=>(const TopicPartition&) const = default;
  std::string ToString() const;  // "topic-partition"
};

// Parses a partition directory name `<topic>-<partition>` (also with `.<uuid>-future|-delete|-stray`
// suffixes stripped). nullopt if it is not one.
std::optional<TopicPartition> ParsePartitionDirName(const std::string& name);

struct OffsetCheckpointEntry {
  TopicPartition tp;
  int64_t offset = 0;
  bool operator==(const OffsetCheckpointEntry&) const = default;
};

struct LeaderEpochEntry {
  int32_t epoch = 0;
  int64_t start_offset = 0;
  bool operator==(const LeaderEpochEntry&) const = default;
};

struct PartitionMetadata {
  int32_t version = 0;
  std::string topic_id;  // Kafka Uuid string, 22 chars of URL-safe base64
};

struct MetaProperties {
  std::map<std::string, std::string> properties;  // every key=value line
};

// Each parser reports problems (file, byte position of the offending line, what was expected) and
// returns false when the file does not parse; what parsed before the problem is kept.
bool ParseOffsetCheckpoint(const std::string& file, std::string_view text,
                           std::vector<OffsetCheckpointEntry>* out, ProblemSink* sink);
bool ParseLeaderEpochCheckpoint(const std::string& file, std::string_view text,
                                std::vector<LeaderEpochEntry>* out, ProblemSink* sink);
bool ParsePartitionMetadata(const std::string& file, std::string_view text, PartitionMetadata* out,
                            ProblemSink* sink);
bool ParseMetaProperties(const std::string& file, std::string_view text, MetaProperties* out,
                         ProblemSink* sink);

// Exact text Kafka writes.
std::string EncodeOffsetCheckpoint(const std::vector<OffsetCheckpointEntry>& entries);
std::string EncodeLeaderEpochCheckpoint(const std::vector<LeaderEpochEntry>& entries);
std::string EncodePartitionMetadata(const PartitionMetadata& m);

}  // namespace klf
