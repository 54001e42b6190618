// The KRaft metadata log (`__cluster_metadata-0`), replayed offline as a broker's metadata loader
// replays it: the latest readable `.checkpoint` snapshot first, then the log's records from the
// snapshot's end offset on (a snapshot `<end>-<epoch>.checkpoint` holds the image of offsets below
// `end`). Without a snapshot the log is replayed from offset 0; a log that starts later and has no
// snapshot to start from is refused, since the image before its start is unknown.
//
// What is kept (Kafka's MetadataDelta / TopicsDelta / ConfigurationsDelta rules):
//   - TopicRecord: a topic name and its id; RemoveTopicRecord: the topic and its configs are gone;
//   - ConfigRecord: resource type TOPIC (2) or BROKER (4) (name "" = the cluster-wide default, else a
//     broker id); a null value deletes the key;
//   - PartitionRecord replaces a partition's registration; PartitionChangeRecord merges into it as
//     PartitionRegistration.merge does: a field left null (isr, replicas) or at -2 (leader) is
//     unchanged; a leader field that is set bumps the leader epoch; every change bumps the partition
//     epoch;
//   - a metadata transaction (KIP-868: BeginTransaction ... EndTransaction) takes effect at its end;
//     AbortTransaction drops it (the records still appear in no history).
// Every partition registration change is kept with the record's offset, timestamp, file and batch
// position, so a reader can say when a replica left or rejoined the ISR and who led.
//
// What is not known offline: whether the log's last records were committed by the raft quorum (the
// high watermark of `__cluster_metadata` is not on disk); they are replayed like the others.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "segment_reader/env.h"
#include "segment_reader/problem.h"

namespace klf {

// Where a metadata record is.
struct MetadataSource {
  std::string file;        // the segment or snapshot file
  uint64_t position = 0;   // the batch's byte position in it
  int64_t offset = -1;     // the record's offset (in a snapshot: its offset inside the snapshot)
  int64_t timestamp = -1;  // the record's timestamp (the raft leader's clock at append)
  bool from_snapshot = false;
};

struct PartitionRegistration {
  std::vector<int32_t> replicas, isr;
  int32_t leader = -1;  // -1: no leader
  int32_t leader_epoch = 0;
  int32_t partition_epoch = 0;
};

// One change of a partition's registration.
struct PartitionEvent {
  MetadataSource at;
  // "created" (PartitionRecord of a new partition), "snapshot" (its registration in the snapshot the
  // replay started from: the state at the snapshot's end offset, not when it changed), "replaced"
  // (PartitionRecord over an existing one), "changed" (PartitionChangeRecord).
  std::string kind;
  PartitionRegistration after;
  std::vector<int32_t> left_isr, joined_isr;  // against the registration before
  bool leader_changed = false;
};

struct TopicImage {
  std::string name;
  std::string topic_id;  // Kafka's Uuid string
  MetadataSource created;
  std::map<int32_t, PartitionRegistration> partitions;
  std::map<int32_t, std::vector<PartitionEvent>> history;  // by partition, in replay order
};

struct ConfigValue {
  std::string value;
  MetadataSource at;
};
using ConfigMap = std::map<std::string, ConfigValue>;

struct RemovedTopic {
  std::string name, topic_id;
  MetadataSource at;
};

struct ClusterMetadata {
  std::string dir;
  // The snapshot the replay started from, when one was used.
  std::string snapshot_file;
  std::optional<int64_t> snapshot_end_offset;
  int32_t snapshot_epoch = -1;
  int64_t log_start_offset = 0;  // the first offset the log's segments hold
  int64_t next_offset = 0;       // one past the last record replayed
  int64_t records_replayed = 0;

  std::map<std::string, TopicImage> topics;      // by topic id
  std::map<std::string, std::string> topic_ids;  // name -> id (live topics)
  std::vector<RemovedTopic> removed_topics;
  std::map<std::string, ConfigMap> topic_configs;   // by topic name
  std::map<std::string, ConfigMap> broker_configs;  // by resource name ("" = cluster default, else broker id)

  const TopicImage* TopicByName(const std::string& name) const;
  // The topic's configs (empty when it has none).
  const ConfigMap& TopicConfigs(const std::string& name) const;
};

// Replays the `__cluster_metadata-0` directory `dir` (never modified). Records that do not decode are
// reported (file, position, reason) and skipped; a snapshot that cannot be read is reported and an
// older one (or the log from 0) is used when that covers the log. Returns false with *error (naming
// the file) when a segment the image needs (after the snapshot) cannot be opened or read to its end,
// or when no snapshot and no log from offset 0 exist; a segment read only for the history before the
// snapshot is left out when it cannot be read (its problem reported). Files are read through `env`
// (null: Env::Default()).
bool LoadClusterMetadata(const std::string& dir, ClusterMetadata* out, ProblemSink* sink, std::string* error,
                         Env* env = nullptr);

// `__cluster_metadata-0` directories among `paths`: a PATH that is one, and those held by a PATH that
// is a log directory. Sorted, each once.
std::vector<std::string> FindClusterMetadataDirs(const std::vector<std::string>& paths);

// "2024-12-31T22:00:00.000Z" for epoch milliseconds (UTC); "-" for a negative time.
std::string IsoUtc(int64_t epoch_ms);

}  // namespace klf
