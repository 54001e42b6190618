// Text files of partition and log directories (spec kafka-on-disk-format.md §1.1, §11):
// offset checkpoints (cleaner, recovery point, replication, log start), leader-epoch-checkpoint,
// partition.metadata, meta.properties, .kafka_cleanshutdown.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
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
  // Convenience views of the well-known keys (§1.1): version 0 has broker.id, version 1 node.id.
  std::optional<int32_t> version() const;
  std::optional<int32_t> node_id() const;  // node.id (v1) or broker.id (v0)
  std::optional<std::string> cluster_id() const;
  std::optional<std::string> directory_id() const;
};

// `.kafka_cleanshutdown` (§11.5): JSON {"version":0,"brokerEpoch":N}; older brokers wrote it empty.
struct CleanShutdown {
  std::optional<int32_t> version;
  std::optional<int64_t> broker_epoch;  // nullopt for the empty (old) form
};

// Each parser reports problems (file, byte position of the offending line, what was expected) and
// returns false when the file does not parse; what parsed before the problem is kept.
bool ParseOffsetCheckpoint(const std::string& file, std::string_view text, std::vector<OffsetCheckpointEntry>* out,
                           ProblemSink* sink);
bool ParseLeaderEpochCheckpoint(const std::string& file, std::string_view text, std::vector<LeaderEpochEntry>* out,
                                ProblemSink* sink);
bool ParsePartitionMetadata(const std::string& file, std::string_view text, PartitionMetadata* out, ProblemSink* sink);
bool ParseMetaProperties(const std::string& file, std::string_view text, MetaProperties* out, ProblemSink* sink);
bool ParseCleanShutdown(const std::string& file, std::string_view text, CleanShutdown* out, ProblemSink* sink);

// Exact text Kafka writes.
std::string EncodeOffsetCheckpoint(const std::vector<OffsetCheckpointEntry>& entries);
std::string EncodeLeaderEpochCheckpoint(const std::vector<LeaderEpochEntry>& entries);
std::string EncodePartitionMetadata(const PartitionMetadata& m);
std::string EncodeCleanShutdown(int64_t broker_epoch);  // {"version":0,"brokerEpoch":N}

// Kafka Uuid strings (URL-safe base64 of 16 bytes, no padding; Uuid.fromString). False if `s` is not
// one; `out` gets the 16 bytes.
bool DecodeKafkaUuid(std::string_view s, uint8_t out[16]);

}  // namespace klf
