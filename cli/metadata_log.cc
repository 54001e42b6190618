#include "cli/metadata_log.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/partition_paths.h"
#include "segment_reader/capture.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/layout.h"

namespace klf::cli {

namespace fs = std::filesystem;

void AddMetadataLogOptions(CLI::App* sub, MetadataLogArgs* args) {
  sub->add_option("--metadata-log", args->metadata_dir,
                  "a __cluster_metadata-0 directory, or a log dir holding one: topic and broker configs (and, for "
                  "diff, each partition's leader/ISR history) from the KRaft metadata log (default: the one in the "
                  "PATHs' own log dirs)")
      ->type_name("DIR");
  sub->add_flag("--no-metadata-log", args->no_metadata, "do not read the KRaft metadata log");
}

void AddOffsetsLogOptions(CLI::App* sub, MetadataLogArgs* args) {
  sub->add_option("--offsets-log", args->offsets_dirs,
                  "a __consumer_offsets-N directory, or a log dir holding some: which consumer groups committed "
                  "past each divergence (repeatable; default: those of the PATHs' own log dirs)")
      ->type_name("DIR")
      ->allow_extra_args(false);  // one DIR per --offsets-log: the PATHs that follow are not taken
  sub->add_flag("--no-offsets-log", args->no_offsets, "do not read __consumer_offsets");
}

bool LoadMetadataLog(const MetadataLogArgs& args, const std::vector<std::string>& paths, MetadataLog* out,
                     std::string* error) {
  if (args.no_metadata) return true;
  const bool explicit_dir = !args.metadata_dir.empty();
  std::vector<std::string> dirs =
      FindClusterMetadataDirs(explicit_dir ? std::vector<std::string>{args.metadata_dir} : CandidateLogDirs(paths));
  if (dirs.empty()) {
    if (explicit_dir) {
      *error = "--metadata-log " + args.metadata_dir + ": no __cluster_metadata-0 directory there";
      return false;
    }
    return true;
  }
  // Copies from several brokers (or controllers): the one replayed furthest.
  for (const std::string& dir : dirs) {
    auto m = std::make_unique<ClusterMetadata>();
    CollectingSink sink;
    std::string load_error;
    if (!LoadClusterMetadata(dir, m.get(), &sink, &load_error)) {
      if (explicit_dir) {
        *error = "--metadata-log: " + load_error;
        return false;
      }
      out->warnings.push_back("the metadata log was not used: " + load_error);
      continue;
    }
    std::vector<std::string> problems;
    for (const Problem& p : sink.problems) {
      if (p.severity == Severity::kInfo) continue;
      problems.push_back(fmt::format("{}: position {}: {}", p.file, p.position, p.message));
    }
    if (!out->image || m->next_offset > out->image->next_offset) {
      out->image = std::move(m);
      out->warnings.insert(out->warnings.end(), problems.begin(), problems.end());
    }
  }
  return true;
}

bool LoadOffsetsLog(const MetadataLogArgs& args, const std::vector<std::string>& paths, OffsetsLog* out,
                    std::string* error) {
  if (args.no_offsets) return true;
  const bool explicit_dirs = !args.offsets_dirs.empty();
  std::vector<std::string> dirs = FindConsumerOffsetsDirs(explicit_dirs ? args.offsets_dirs : CandidateLogDirs(paths));
  if (dirs.empty()) {
    if (explicit_dirs) {
      *error = "--offsets-log " + args.offsets_dirs.front() + ": no __consumer_offsets-N partition directory there";
      return false;
    }
    return true;
  }
  auto offsets = std::make_unique<CommittedOffsets>();
  CollectingSink sink;
  std::string load_error;
  if (!LoadCommittedOffsets(dirs, offsets.get(), &sink, &load_error)) {
    if (explicit_dirs) {
      *error = "--offsets-log: " + load_error;
      return false;
    }
    out->warnings.push_back("__consumer_offsets was not used: " + load_error);
    return true;
  }
  for (const Problem& p : sink.problems) {
    if (p.severity == Severity::kInfo) continue;
    out->warnings.push_back(fmt::format("{}: position {}: {}", p.file, p.position, p.message));
  }
  out->offsets = std::move(offsets);
  return true;
}

namespace {

// Topic-level property names (LogConfig) and broker-level ones (the "log." defaults and the broker's
// own settings) are kept apart: a broker config record never sets a topic key, nor the reverse.
bool IsBrokerKey(const std::string& key) {
  return key.starts_with("log.") || key == "message.max.bytes" || key == "producer.id.expiration.ms" ||
         key == "producer.id.expiration.check.interval.ms";
}

}  // namespace

std::vector<ConfigFromMetadata> ApplyMetadataConfigs(const ClusterMetadata& m, const std::optional<std::string>& topic,
                                                     std::optional<int32_t> broker_id,
                                                     const std::vector<std::string>& explicit_keys,
                                                     CleanerConfig* config) {
  std::vector<ConfigFromMetadata> out;
  auto apply = [&](const ConfigMap& configs, const std::string& scope, bool broker_level) {
    for (const auto& [key, v] : configs) {
      if (IsBrokerKey(key) != broker_level) continue;
      CleanerConfig probe = *config;
      std::string why;
      if (!probe.Set(key, v.value, &why)) {
        if (why.find("unknown") != std::string::npos) continue;  // a config the cleaner does not use
        if (why.starts_with("--config ")) why = why.substr(9);
        out.push_back({key, v.value, scope, v.at, false, why});
        continue;
      }
      ConfigFromMetadata c{key, v.value, scope, v.at, false, ""};
      if (std::find(explicit_keys.begin(), explicit_keys.end(), key) != explicit_keys.end()) {
        c.overridden = true;
      } else {
        *config = probe;
      }
      out.push_back(std::move(c));
    }
  };
  if (auto it = m.broker_configs.find(""); it != m.broker_configs.end()) apply(it->second, "cluster default", true);
  if (broker_id) {
    if (auto it = m.broker_configs.find(std::to_string(*broker_id)); it != m.broker_configs.end())
      apply(it->second, "broker " + std::to_string(*broker_id), true);
  }
  if (topic) apply(m.TopicConfigs(*topic), "topic " + *topic, false);
  return out;
}

std::optional<int32_t> BrokerIdOf(const std::string& path) {
  for (const std::string& dir : {path, fs::path(path).lexically_normal().parent_path().string()}) {
    if (std::optional<MetaProperties> props = ReadLogDirMetaProperties(dir)) return props->node_id();
  }
  return std::nullopt;
}

nlohmann::json MetadataLogJson(const ClusterMetadata* m) {
  if (m == nullptr) return nullptr;
  return {{"dir", m->dir},
          {"snapshot", m->snapshot_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(m->snapshot_file)},
          {"nextOffset", m->next_offset}};
}

nlohmann::json ConfigsJson(const std::vector<ConfigFromMetadata>& configs) {
  nlohmann::json a = nlohmann::json::array();
  for (const ConfigFromMetadata& c : configs) {
    a.push_back({{"key", c.key},
                 {"value", c.value},
                 {"scope", c.scope},
                 {"offset", c.at.offset},
                 {"timestamp", c.at.timestamp},
                 {"file", c.at.file},
                 {"position", c.at.position},
                 {"fromSnapshot", c.at.from_snapshot},
                 {"applied", !c.overridden && c.ignored.empty()},
                 {"overriddenBy", c.overridden ? nlohmann::json("flag") : nlohmann::json(nullptr)},
                 {"ignored", c.ignored.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.ignored)}});
  }
  return a;
}

std::string MetadataLogText(const ClusterMetadata& m) {
  return fmt::format("__cluster_metadata {} ({}replayed to offset {})", m.dir,
                     m.snapshot_file.empty() ? "" : "snapshot " + fs::path(m.snapshot_file).filename().string() + ", ",
                     m.next_offset);
}

std::string ConfigsText(const std::vector<ConfigFromMetadata>& configs) {
  std::string s;
  for (const ConfigFromMetadata& c : configs) {
    std::string where = c.at.from_snapshot
                            ? fmt::format("snapshot {}", fs::path(c.at.file).filename().string())
                            : fmt::format("offset {}, {} ({})", c.at.offset, IsoUtc(c.at.timestamp), c.at.timestamp);
    s += fmt::format("  {}={}  [{}; {}]{}\n", c.key, c.value, c.scope, where,
                     c.overridden         ? "  overridden by the command line"
                     : !c.ignored.empty() ? "  not used: " + c.ignored
                                          : "");
  }
  return s;
}

namespace {

nlohmann::json RegistrationJson(const PartitionRegistration& r) {
  return {{"leader", r.leader},
          {"leaderEpoch", r.leader_epoch},
          {"partitionEpoch", r.partition_epoch},
          {"isr", r.isr},
          {"replicas", r.replicas}};
}

std::string Brokers(const std::vector<int32_t>& ids) { return fmt::format("[{}]", fmt::join(ids, ",")); }

std::string Leader(int32_t id) { return id < 0 ? std::string("none") : "broker " + std::to_string(id); }

const std::vector<PartitionEvent>* EventsOf(const ClusterMetadata& m, const std::string& topic, int32_t partition,
                                            const TopicImage** topic_image) {
  const TopicImage* t = m.TopicByName(topic);
  if (t == nullptr) return nullptr;
  auto it = t->history.find(partition);
  if (it == t->history.end()) return nullptr;
  *topic_image = t;
  return &it->second;
}

}  // namespace

nlohmann::json HistoryJson(const ClusterMetadata& m, const std::string& topic, int32_t partition) {
  const TopicImage* t = nullptr;
  const std::vector<PartitionEvent>* events = EventsOf(m, topic, partition, &t);
  if (events == nullptr) return nullptr;
  nlohmann::json a = nlohmann::json::array();
  for (const PartitionEvent& e : *events) {
    nlohmann::json j = RegistrationJson(e.after);
    j["offset"] = e.at.offset;
    j["timestamp"] = e.at.timestamp;
    j["time"] = IsoUtc(e.at.timestamp);
    j["kind"] = e.kind;
    j["leftIsr"] = e.left_isr;
    j["joinedIsr"] = e.joined_isr;
    j["leaderChanged"] = e.leader_changed;
    j["file"] = e.at.file;
    j["position"] = e.at.position;
    j["fromSnapshot"] = e.at.from_snapshot;
    a.push_back(std::move(j));
  }
  return {{"topicId", t->topic_id}, {"current", RegistrationJson(t->partitions.at(partition))}, {"events", a}};
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one text line per partition event kind (created, changed, snapshot); a printer
std::string HistoryText(const ClusterMetadata& m, const std::string& topic, int32_t partition,
                        const std::string& indent) {
  const TopicImage* t = nullptr;
  const std::vector<PartitionEvent>* events = EventsOf(m, topic, partition, &t);
  if (events == nullptr) {
    return fmt::format("{}leader/ISR history: the metadata log has no live topic {} partition {}\n", indent, topic,
                       partition);
  }
  std::string s = fmt::format("{}leader/ISR history (__cluster_metadata, topic id {}):\n", indent, t->topic_id);
  std::set<int32_t> left_before;
  const PartitionRegistration* prev = nullptr;
  const size_t n = events->size();
  for (size_t i = 0; i < n; ++i) {
    const PartitionEvent& e = (*events)[i];
    std::vector<std::string> what;
    if (e.kind == "snapshot") {
      what.push_back(fmt::format("as of snapshot {} (when it changed is not in the files)",
                                 fs::path(e.at.file).filename().string()));
    } else if (e.kind == "created") {
      what.push_back(fmt::format("created with replicas {}", Brokers(e.after.replicas)));
    }
    for (int32_t b : e.left_isr) {
      what.push_back(fmt::format("broker {} left the ISR", b));
      left_before.insert(b);
    }
    for (int32_t b : e.joined_isr) {
      what.push_back(fmt::format("broker {} {} the ISR", b, left_before.count(b) ? "rejoined" : "joined"));
    }
    if (e.leader_changed && prev != nullptr) {
      what.push_back(fmt::format("leader {} -> {}", Leader(prev->leader), Leader(e.after.leader)));
    } else if (prev != nullptr && e.after.leader_epoch != prev->leader_epoch) {
      what.push_back(fmt::format("leader epoch {} -> {}", prev->leader_epoch, e.after.leader_epoch));
    }
    if (what.empty()) what.push_back(e.kind == "changed" ? "changed" : e.kind);
    // A long history keeps its first and last changes on screen; --json has every one.
    if (n > 40 && i == 5) {
      s += fmt::format("{}  ... {} changes (see --json) ...\n", indent, n - 35);
    }
    if (n <= 40 || i < 5 || i >= n - 30) {
      const std::string where = e.at.from_snapshot ? std::string("snapshot") : fmt::format("offset {}", e.at.offset);
      s += fmt::format("{}  {}  {} ({}): {}; leader {} (epoch {}), ISR {}\n", indent, where, IsoUtc(e.at.timestamp),
                       e.at.timestamp, fmt::join(what, ", "), Leader(e.after.leader), e.after.leader_epoch,
                       Brokers(e.after.isr));
    }
    prev = &e.after;
  }
  return s;
}

}  // namespace klf::cli
