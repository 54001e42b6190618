// The cluster's own records as input for compact and diff: one set of options and loaders, so the
// commands take them alike (metadata/).
//   --metadata-log DIR   a `__cluster_metadata-0` directory, or a log dir holding one;
//   --no-metadata-log    do not look for one;
//   neither              the `__cluster_metadata-0` of the PATHs' own log dirs (a PATH that is a log
//                        dir, or the parent of a PATH that is a partition dir), when there is one; of
//                        several copies (one per broker) the one replayed furthest is used.
//   --offsets-log DIR    (diff) a `__consumer_offsets-N` directory or a log dir holding some
//                        (repeatable); --no-offsets-log; neither: those of the PATHs' log dirs.
// A log given explicitly that cannot be used is an error; one found on its own that cannot be used is a
// warning, and the command goes on without it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compactor/config.h"
#include "metadata/cluster_metadata.h"
#include "metadata/committed_offsets.h"

namespace CLI {
class App;
}

namespace klf::cli {

struct MetadataLogArgs {
  std::string metadata_dir;
  bool no_metadata = false;
  std::vector<std::string> offsets_dirs;
  bool no_offsets = false;
};
void AddMetadataLogOptions(CLI::App* sub, MetadataLogArgs* args);
void AddOffsetsLogOptions(CLI::App* sub, MetadataLogArgs* args);

struct MetadataLog {
  std::unique_ptr<ClusterMetadata> image;  // null: none used
  std::vector<std::string> warnings;       // problems of the records, or why a found log was not used
  const ClusterMetadata* get() const { return image.get(); }
};

// `paths`: the PATHs as given. False with *error only when an explicit --metadata-log cannot be used.
bool LoadMetadataLog(const MetadataLogArgs& args, const std::vector<std::string>& paths, MetadataLog* out,
                     std::string* error);

struct OffsetsLog {
  std::unique_ptr<CommittedOffsets> offsets;  // null: none found (or --no-offsets-log)
  std::vector<std::string> warnings;
  const CommittedOffsets* get() const { return offsets.get(); }
};
bool LoadOffsetsLog(const MetadataLogArgs& args, const std::vector<std::string>& paths, OffsetsLog* out,
                    std::string* error);

// One config the metadata log set, and whether a flag overrode it.
struct ConfigFromMetadata {
  std::string key, value;
  std::string scope;  // "topic <name>", "cluster default", "broker <id>"
  MetadataSource at;
  bool overridden = false;  // an explicit flag (--config ...) set the key too
  std::string ignored;      // why it was not applied (a value Kafka's ConfigDef would refuse)
};

// Applies to `config` what the metadata log holds for `topic` (nullopt: broker-level only) in Kafka's
// order: the cluster-wide default broker configs, those of `broker_id`, then the topic's own. Only keys
// CleanerConfig knows; `explicit_keys` (the --config keys) are marked overridden and not applied.
std::vector<ConfigFromMetadata> ApplyMetadataConfigs(const ClusterMetadata& m, const std::optional<std::string>& topic,
                                                     std::optional<int32_t> broker_id,
                                                     const std::vector<std::string>& explicit_keys,
                                                     CleanerConfig* config);

// The broker id (meta.properties node.id / broker.id) of the log dir holding `partition_dir`, or of
// `path` itself when it is a log dir.
std::optional<int32_t> BrokerIdOf(const std::string& path);

nlohmann::json MetadataLogJson(const ClusterMetadata* m);  // {"dir", "snapshot", "nextOffset"} or null
nlohmann::json ConfigsJson(const std::vector<ConfigFromMetadata>& configs);
// One line per config, indented.
std::string ConfigsText(const std::vector<ConfigFromMetadata>& configs);
// "__cluster_metadata DIR (snapshot F, replayed to offset N)"
std::string MetadataLogText(const ClusterMetadata& m);

// A partition's leader/ISR history from the metadata log: {"topicId", "current": {...}, "events": [{"offset",
// "timestamp", "time", "kind", "leader", "leaderEpoch", "isr", "replicas", "leftIsr", "joinedIsr",
// "leaderChanged", "file", "position", "fromSnapshot"}]}; null when the log has no such topic/partition.
nlohmann::json HistoryJson(const ClusterMetadata& m, const std::string& topic, int32_t partition);
// The same as lines (times as ISO-8601 UTC beside epoch ms), each starting with `indent`; a line saying
// so when the log does not know the topic or partition.
std::string HistoryText(const ClusterMetadata& m, const std::string& topic, int32_t partition,
                        const std::string& indent);

}  // namespace klf::cli
