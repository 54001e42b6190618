// The metadata log replay (cluster_metadata.h). Kafka sources followed: MetadataLoader and
// MetadataBatchLoader (snapshot first, then the log; metadata transactions), MetadataDelta.replay
// (RemoveTopicRecord also removes the topic's configs), TopicsDelta / PartitionRegistration.merge,
// ConfigurationsDelta / ConfigurationDelta (a null value deletes the key).
#include "metadata/cluster_metadata.h"

#include <algorithm>
#include <ctime>
#include <functional>
#include <memory>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "partition/loaded_log.h"
#include "segment_reader/batch.h"
#include "segment_reader/internal_topics.h"
#include "segment_reader/java_long.h"
#include "segment_reader/layout.h"

namespace klf {
namespace {

constexpr int kTopicResource = 2;
constexpr int kBrokerResource = 4;
constexpr int32_t kNoLeaderChange = -2;

std::vector<int32_t> Ints(const OrderedJson& a) {
  std::vector<int32_t> v;
  for (const OrderedJson& x : a) v.push_back(x.get<int32_t>());
  return v;
}

std::vector<int32_t> Minus(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out;
  for (int32_t x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  return out;
}

// One decoded metadata record and where it is.
struct Item {
  OrderedJson json;  // {"type", "apiKey", "version", "value"}
  MetadataSource at;
};

class Replayer {
 public:
  Replayer(ClusterMetadata* image, ProblemSink* sink) : m_(image), sink_(sink) {}

  void Apply(Item item) {
    const std::string& type = item.json.at("type").get_ref<const std::string&>();
    if (type == "BEGIN_TRANSACTION_RECORD") {
      in_txn_ = true;
      pending_.clear();
      return;
    }
    if (type == "END_TRANSACTION_RECORD") {
      in_txn_ = false;
      std::vector<Item> txn = std::move(pending_);
      pending_.clear();
      for (const Item& p : txn) Replay(p);
      return;
    }
    if (type == "ABORT_TRANSACTION_RECORD") {
      in_txn_ = false;
      pending_.clear();
      return;
    }
    if (in_txn_) {
      pending_.push_back(std::move(item));
      return;
    }
    Replay(item);
  }

  size_t pending() const { return pending_.size(); }

 private:
  // A record whose fields are not what its schema promises (never expected of a record that decoded, but
  // a hostile one must not end the replay) is reported and skipped.
  void Replay(const Item& item) {
    try {
      ReplayRecord(item);
    } catch (const std::exception& e) {
      Report(sink_, Severity::kError, item.at.file, item.at.position, "cluster-metadata",
             fmt::format("record at offset {} could not be replayed: {}", item.at.offset, e.what()));
    }
  }

  // NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per metadata record type the image keeps (MetadataDelta.replay's switch)
  void ReplayRecord(const Item& item) {
    const std::string& type = item.json.at("type").get_ref<const std::string&>();
    const OrderedJson& v = item.json.at("value");
    m_->records_replayed++;
    if (type == "TOPIC_RECORD") {
      TopicImage& t = m_->topics[v.at("topicId").get<std::string>()];
      t.name = v.at("name").get<std::string>();
      t.topic_id = v.at("topicId").get<std::string>();
      t.created = item.at;
      m_->topic_ids[t.name] = t.topic_id;
    } else if (type == "REMOVE_TOPIC_RECORD") {
      auto it = m_->topics.find(v.at("topicId").get<std::string>());
      if (it == m_->topics.end()) return;
      m_->removed_topics.push_back({it->second.name, it->second.topic_id, item.at});
      m_->topic_configs.erase(it->second.name);
      auto id = m_->topic_ids.find(it->second.name);
      if (id != m_->topic_ids.end() && id->second == it->first) m_->topic_ids.erase(id);
      m_->topics.erase(it);
    } else if (type == "CONFIG_RECORD") {
      const int resource = v.at("resourceType").get<int>();
      ConfigMap* configs = resource == kTopicResource    ? &m_->topic_configs[v.at("resourceName").get<std::string>()]
                           : resource == kBrokerResource ? &m_->broker_configs[v.at("resourceName").get<std::string>()]
                                                         : nullptr;
      if (configs == nullptr) return;
      const std::string name = v.at("name").get<std::string>();
      const OrderedJson& value = v.at("value");
      if (value.is_null()) {
        configs->erase(name);
      } else {
        (*configs)[name] = ConfigValue{value.get<std::string>(), item.at};
      }
    } else if (type == "PARTITION_RECORD") {
      auto it = m_->topics.find(v.at("topicId").get<std::string>());
      if (it == m_->topics.end()) return;  // a partition of an unknown topic: nothing to attach it to
      const int32_t id = v.at("partitionId").get<int32_t>();
      PartitionRegistration r;
      r.replicas = Ints(v.at("replicas"));
      r.isr = Ints(v.at("isr"));
      r.leader = v.at("leader").get<int32_t>();
      r.leader_epoch = v.at("leaderEpoch").get<int32_t>();
      r.partition_epoch = v.at("partitionEpoch").get<int32_t>();
      auto prev = it->second.partitions.find(id);
      PartitionEvent e;
      e.at = item.at;
      e.kind = item.at.from_snapshot ? "snapshot" : prev == it->second.partitions.end() ? "created" : "replaced";
      if (prev != it->second.partitions.end()) {
        e.left_isr = Minus(prev->second.isr, r.isr);
        e.joined_isr = Minus(r.isr, prev->second.isr);
        e.leader_changed = prev->second.leader != r.leader;
      }
      e.after = r;
      it->second.partitions[id] = r;
      it->second.history[id].push_back(std::move(e));
    } else if (type == "PARTITION_CHANGE_RECORD") {
      auto it = m_->topics.find(v.at("topicId").get<std::string>());
      if (it == m_->topics.end()) return;
      const int32_t id = v.at("partitionId").get<int32_t>();
      auto prev = it->second.partitions.find(id);
      if (prev == it->second.partitions.end()) return;  // Kafka fails the delta: no such partition
      PartitionRegistration r = prev->second;
      if (auto isr = v.find("isr"); isr != v.end() && !isr->is_null()) r.isr = Ints(*isr);
      if (auto reps = v.find("replicas"); reps != v.end() && !reps->is_null()) r.replicas = Ints(*reps);
      const int32_t leader = v.value("leader", kNoLeaderChange);
      if (leader != kNoLeaderChange) {
        r.leader = leader;
        r.leader_epoch = prev->second.leader_epoch + 1;
      }
      r.partition_epoch = prev->second.partition_epoch + 1;
      PartitionEvent e;
      e.at = item.at;
      e.kind = "changed";
      e.left_isr = Minus(prev->second.isr, r.isr);
      e.joined_isr = Minus(r.isr, prev->second.isr);
      e.leader_changed = prev->second.leader != r.leader;
      e.after = r;
      prev->second = r;
      it->second.history[id].push_back(std::move(e));
    }
  }

  ClusterMetadata* m_;
  ProblemSink* sink_;
  bool in_txn_ = false;
  std::vector<Item> pending_;
};

// Every metadata record of batch `b` of `file` with offset in [from, to), in order. Control batches
// (raft's LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters) change no image. Returns false
// when the batch starts at or after `to`: nothing after it is wanted. Problems of the bytes go to `sink`.
bool BatchRecords(const BatchView& b, const std::string& file, bool snapshot, int64_t from, int64_t to,
                  RecordDecoder* decoder, const std::function<void(Item)>& visit, ProblemSink* sink) {
  if (b.header.is_control || b.header.last_offset < from) return true;
  if (b.header.base_offset >= to) return false;
  if (!b.header.crc_valid) return true;  // reported by the reader; its records are not evidence
  if (!decoder->Decode(b, file, sink)) return true;
  for (const Record& rec : decoder->records()) {
    if (rec.offset < from || rec.offset >= to) continue;
    DecodedRecord d;
    std::string why;
    if (!DecodeInternalRecord(TopicDecoder::kClusterMetadata, rec, &d, &why)) {
      Report(sink, Severity::kError, file, b.header.position, "cluster-metadata",
             fmt::format("record at offset {} is not a metadata record: {}", rec.offset, why));
      continue;
    }
    Item item;
    item.json = std::move(d.json);
    item.at = MetadataSource{file, b.header.position, rec.offset, rec.timestamp, snapshot};
    visit(std::move(item));
  }
  return true;
}

// The records of a snapshot file (BatchRecords). Returns false with *error when it cannot be opened.
bool ReadSnapshotRecords(const std::string& file, Env* env, const std::function<void(Item)>& visit, ProblemSink* sink,
                         std::string* error) {
  ReadOptions read;
  read.env = env;
  std::unique_ptr<LogReader> reader = LogReader::Open(file, sink, read, error);
  if (!reader) return false;
  RecordDecoder decoder;
  BatchView b;
  while (reader->Next(&b) && BatchRecords(b, file, true, 0, INT64_MAX, &decoder, visit, sink)) {
  }
  return true;
}

// The records of the log's segments with offset in [from, to), on the log's pass (segments wholly
// before `from` are not read). A segment that cannot be opened, or read to its end, fails the pass
// with *error (what follows is unknown, not absent), unless `skip_unreadable`: then it is left out
// (its problems reported).
bool ReadLogRecords(const LoadedLog& log, int64_t from, int64_t to, bool skip_unreadable,
                    const std::function<void(Item)>& visit, ProblemSink* sink, std::string* error) {
  RecordDecoder decoder;
  LoadedLog::SegmentVisitor v;
  v.before = [&](size_t i) {
    if (log.segments[i].base_offset >= to) return LoadedLog::Step::kStop;
    const bool before_from = i + 1 < log.segments.size() && log.segments[i + 1].base_offset <= from;
    return before_from ? LoadedLog::Step::kNextSegment : LoadedLog::Step::kNext;
  };
  v.batch = [&](size_t i, const BatchView& b) {
    const bool more = BatchRecords(b, log.segments[i].log_path, false, from, to, &decoder, visit, sink);
    return more ? LoadedLog::Step::kNext : LoadedLog::Step::kStop;
  };
  if (skip_unreadable) v.unreadable = [](size_t, const std::string&) {};
  return log.ForEachBatch(v, sink, error);
}

// Applies `item`, reporting a record whose fields are not what its schema promises (never expected
// of a record that decoded, but a hostile one must not end the replay).
void ApplyChecked(Replayer* r, Item item, ProblemSink* sink) {
  const MetadataSource at = item.at;
  try {
    r->Apply(std::move(item));
  } catch (const std::exception& e) {
    Report(sink, Severity::kError, at.file, at.position, "cluster-metadata",
           fmt::format("record at offset {} could not be replayed: {}", at.offset, e.what()));
  }
}

// Passes each problem on once: the log before the snapshot and the log after it are read in two passes
// over the same segments.
class OnceSink : public ProblemSink {
 public:
  explicit OnceSink(ProblemSink* next) : next_(next) {}
  void Report(const Problem& p) override {
    if (seen_.insert({p.file, p.position, p.check, p.message}).second && next_ != nullptr) next_->Report(p);
  }

 private:
  ProblemSink* next_;
  std::set<std::tuple<std::string, uint64_t, std::string, std::string>> seen_;
};

}  // namespace

const TopicImage* ClusterMetadata::TopicByName(const std::string& name) const {
  auto id = topic_ids.find(name);
  if (id == topic_ids.end()) return nullptr;
  auto it = topics.find(id->second);
  return it == topics.end() ? nullptr : &it->second;
}

const ConfigMap& ClusterMetadata::TopicConfigs(const std::string& name) const {
  static const ConfigMap kEmpty;
  auto it = topic_configs.find(name);
  return it == topic_configs.end() ? kEmpty : it->second;
}

namespace {

// The snapshot to start from: the latest that reads cleanly and reaches the log's start. Its records
// go to *items, its file, end offset and epoch to *out.
void ChooseSnapshot(const LoadedLog& log, ClusterMetadata* out, std::vector<Item>* items, ProblemSink* sink) {
  for (auto it = log.kraft_snapshots.rbegin(); it != log.kraft_snapshots.rend(); ++it) {
    if (it->end_offset < out->log_start_offset) break;  // older ones leave a gap before the log
    CollectingSink problems;
    std::vector<Item> read;
    std::string snapshot_error;
    bool ok = ReadSnapshotRecords(
        it->file.path, log.env, [&](Item i) { read.push_back(std::move(i)); }, &problems, &snapshot_error);
    for (const Problem& p : problems.problems) sink->Report(p);
    if (!ok || problems.ErrorCount() > 0) {
      Report(sink, Severity::kWarning, it->file.path, 0, "cluster-metadata-snapshot",
             ok ? "the snapshot has damaged records: an older snapshot or the log is used instead"
                : snapshot_error + ": an older snapshot or the log is used instead");
      continue;
    }
    *items = std::move(read);
    out->snapshot_file = it->file.path;
    out->snapshot_end_offset = it->end_offset;
    out->snapshot_epoch = it->epoch;
    return;
  }
}

// What the log before the snapshot says, when it still holds it: the partitions' events and where each
// config value was set (topic, broker), which the snapshot compresses away.
struct EarlyHistory {
  std::map<std::pair<std::string, int32_t>, std::vector<PartitionEvent>> partitions;
  std::map<std::string, ConfigMap> configs[2];  // topic, broker
};

EarlyHistory ReplayBeforeSnapshot(const LoadedLog& log, int64_t from, ProblemSink* sink) {
  EarlyHistory early;
  ClusterMetadata scratch;
  Replayer side(&scratch, sink);
  std::string ignored;  // a segment that cannot be read fails the replay after the snapshot, or is not needed
  ReadLogRecords(
      log, 0, from, true, [&](Item i) { ApplyChecked(&side, std::move(i), sink); }, sink, &ignored);
  for (const auto& [id, t] : scratch.topics)
    for (const auto& [p, events] : t.history) early.partitions[{id, p}] = events;
  early.configs[0] = std::move(scratch.topic_configs);
  early.configs[1] = std::move(scratch.broker_configs);
  return early;
}

// A config the snapshot holds with the value the log before it set: that record says when it was set.
void MergeEarlyConfigs(const EarlyHistory& early, ClusterMetadata* out) {
  for (int kind = 0; kind < 2; ++kind) {
    for (auto& [name, configs] : kind == 0 ? out->topic_configs : out->broker_configs) {
      auto e = early.configs[kind].find(name);
      if (e == early.configs[kind].end()) continue;
      for (auto& [key, v] : configs) {
        auto x = e->second.find(key);
        if (v.at.from_snapshot && x != e->second.end() && x->second.value == v.value) v.at = x->second.at;
      }
    }
  }
}

void MergeEarlyEvents(const EarlyHistory& early, ClusterMetadata* out) {
  for (auto& [id, t] : out->topics) {
    for (auto& [p, events] : t.history) {
      auto e = early.partitions.find({id, p});
      if (e == early.partitions.end() || e->second.empty()) continue;
      // The snapshot's own entry only restates what the log before it shows.
      std::vector<PartitionEvent> merged = e->second;
      for (PartitionEvent& x : events)
        if (x.kind != "snapshot") merged.push_back(std::move(x));
      events = std::move(merged);
    }
  }
}

}  // namespace

bool LoadClusterMetadata(const std::string& dir, ClusterMetadata* out, ProblemSink* caller_sink, std::string* error,
                         Env* env) {
  OnceSink once(caller_sink);
  ProblemSink* sink = &once;
  *out = ClusterMetadata();
  out->dir = dir;
  LoadedLog log;
  LoadOptions options;
  options.segments_only = true;  // the records are replayed below
  options.env = env;
  if (!LoadedLog::Open(dir, options, &log, sink, error)) return false;
  const std::vector<SegmentInfo>& segments = log.segments;
  // KafkaMetadataLog: the log starts at its first segment (LogManager's log-start checkpoint does not
  // hold the metadata log).
  out->log_start_offset = segments.empty() ? 0 : segments.front().base_offset;

  std::vector<Item> snapshot_items;
  ChooseSnapshot(log, out, &snapshot_items, sink);
  const int64_t from = out->snapshot_end_offset.value_or(0);
  if (!out->snapshot_end_offset && out->log_start_offset > 0) {
    *error = fmt::format(
        "{}: the log starts at offset {} and no readable snapshot (<end offset>-<epoch>.checkpoint) reaches it: "
        "the metadata before offset {} is unknown",
        dir, out->log_start_offset, out->log_start_offset);
    return false;
  }
  EarlyHistory early;
  if (out->snapshot_end_offset && out->log_start_offset == 0 && !segments.empty())
    early = ReplayBeforeSnapshot(log, from, sink);

  Replayer replayer(out, sink);
  for (Item& i : snapshot_items) ApplyChecked(&replayer, std::move(i), sink);
  out->next_offset = from;
  auto apply = [&](Item item) {
    out->next_offset = std::max(out->next_offset, JavaAdd(item.at.offset, 1));
    ApplyChecked(&replayer, std::move(item), sink);
  };
  if (!ReadLogRecords(log, from, INT64_MAX, false, apply, sink, error)) return false;
  if (replayer.pending() > 0) {
    Report(sink, Severity::kInfo, dir, 0, "cluster-metadata-transaction",
           fmt::format("a metadata transaction is open at the log end: its {} records are not applied",
                       replayer.pending()));
  }
  MergeEarlyConfigs(early, out);
  MergeEarlyEvents(early, out);
  return true;
}

std::vector<std::string> FindClusterMetadataDirs(const std::vector<std::string>& paths) {
  return FindTopicPartitionDirs(paths, "__cluster_metadata");
}

std::string IsoUtc(int64_t epoch_ms) {
  if (epoch_ms < 0) return "-";
  std::time_t seconds = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) return "-";
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, int(epoch_ms % 1000));
}

}  // namespace klf
