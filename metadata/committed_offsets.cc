// Committed offsets (committed_offsets.h). Kafka sources followed: GroupCoordinatorRecordSerde (key =
// record type + key message, value = version + value message, tombstone = null value),
// OffsetMetadataManager.replay (OffsetCommit records; pending transactional offsets per producer id,
// applied by replayEndTransactionMarker on COMMIT and dropped on ABORT).
#include "metadata/committed_offsets.h"

#include <algorithm>

#include <fmt/format.h>

#include "partition/loaded_log.h"
#include "segment_reader/batch.h"
#include "segment_reader/internal_topics.h"
#include "segment_reader/layout.h"

namespace klf {
namespace {

using GroupKey = std::tuple<std::string, std::string, int32_t>;

// One record of a `__consumer_offsets` partition that can change a committed offset.
struct Event {
  enum Kind { kCommit, kTombstone, kCommitMarker, kAbortMarker, kOther } kind = kOther;
  GroupKey key;
  CommittedOffset value;  // kCommit
  int64_t producer_id = -1;
  bool transactional = false;
};

bool SameEvent(const Event& a, const Event& b) {
  return a.kind == b.kind && a.key == b.key && a.producer_id == b.producer_id && a.value.offset == b.value.offset;
}

// The event of one record of a `__consumer_offsets` batch. False when the record is reported (not a
// record of the topic, or a commit without its fields) and left out.
bool ToEvent(const BatchHeader& h, const Record& rec, const std::string& file, Event* e, ProblemSink* sink) {
  e->producer_id = h.producer_id;
  e->transactional = h.is_transactional;
  std::string why;
  if (h.is_control) {
    ControlRecord c;
    if (!ParseControlRecord(rec, &c, &why)) {
      Report(sink, Severity::kError, file, h.position, "consumer-offsets",
             fmt::format("control record at offset {}: {}", rec.offset, why));
      return false;
    }
    if (c.type == ControlType::kCommit) e->kind = Event::kCommitMarker;
    if (c.type == ControlType::kAbort) e->kind = Event::kAbortMarker;
    return true;
  }
  DecodedRecord d;
  if (!DecodeInternalRecord(TopicDecoder::kOffsets, rec, &d, &why)) {
    Report(sink, Severity::kError, file, h.position, "consumer-offsets",
           fmt::format("record at offset {} is not a __consumer_offsets record: {}", rec.offset, why));
    return false;
  }
  const int type = d.json.value("recordType", -1);
  if (type != 0 && type != 1) return true;
  try {
    const OrderedJson& k = d.json.at("key");
    e->key = {k.at("group").get<std::string>(), k.at("topic").get<std::string>(), k.at("partition").get<int32_t>()};
    const OrderedJson& v = d.json.at("value");
    if (v.is_null()) {
      e->kind = Event::kTombstone;
      return true;
    }
    e->kind = Event::kCommit;
    CommittedOffset& c = e->value;
    std::tie(c.group, c.topic, c.partition) = e->key;
    c.offset = v.at("offset").get<int64_t>();
    if (auto le = v.find("leaderEpoch"); le != v.end() && le->get<int32_t>() >= 0) c.leader_epoch = le->get<int32_t>();
    c.commit_timestamp = v.value("commitTimestamp", int64_t(-1));
    c.file = file;
    c.position = h.position;
    c.record_offset = rec.offset;
    c.transactional = h.is_transactional;
  } catch (const std::exception& x) {
    Report(sink, Severity::kError, file, h.position, "consumer-offsets",
           fmt::format("record at offset {}: an OffsetCommit record without its fields: {}", rec.offset, x.what()));
    return false;
  }
  return true;
}

// One copy of a `__consumer_offsets-N` partition: its events by offset.
bool ReadCopy(const std::string& dir, std::map<int64_t, Event>* by_offset, ProblemSink* sink, std::string* error) {
  LoadedLog log;
  LoadOptions options;
  options.segments_only = true;  // the records are read one by one below
  if (!LoadedLog::Open(dir, options, &log, sink, error)) return false;
  RecordDecoder decoder;
  auto visit = [&](size_t segment, const BatchView& b) {
    const std::string& file = log.segments[segment].log_path;
    // Damage is reported by the reader.
    if (!b.header.crc_valid || b.header.last_offset < log.log_start_offset || !decoder.Decode(b, file, sink))
      return true;
    const BatchHeader& h = decoder.header();
    for (const Record& rec : decoder.records()) {
      Event e;
      if (rec.offset < log.log_start_offset || !ToEvent(h, rec, file, &e, sink)) continue;
      auto [it, inserted] = by_offset->try_emplace(rec.offset, e);
      if (!inserted && !SameEvent(it->second, e)) {
        Report(sink, Severity::kError, file, h.position, "consumer-offsets-copies",
               fmt::format("offset {} holds another record than another copy of this partition (the copies "
                           "diverge); the first copy's record is used",
                           rec.offset));
      }
    }
    return true;
  };
  return log.ForEachBatch(visit, sink, error);
}

}  // namespace

std::vector<CommittedOffset> CommittedOffsets::ForPartition(const std::string& topic, int32_t partition) const {
  std::vector<CommittedOffset> out;
  for (const auto& [key, c] : offsets)
    if (std::get<1>(key) == topic && std::get<2>(key) == partition) out.push_back(c);
  return out;
}

std::vector<GroupExposure> GroupsPast(const CommittedOffsets& offsets, const std::string& topic, int32_t partition,
                                      int64_t first_affected) {
  std::vector<GroupExposure> out;
  for (CommittedOffset& c : offsets.ForPartition(topic, partition)) {
    if (c.offset > first_affected) out.push_back({std::move(c), first_affected});
  }
  return out;
}

namespace {

// One partition's events replayed in offset order, as the coordinator loads its partition
// (OffsetMetadataManager.replay, replayEndTransactionMarker).
void Replay(const std::map<int64_t, Event>& by_offset, CommittedOffsets* out) {
  std::map<int64_t, std::map<GroupKey, Event>> pending;  // producer id -> its transactional commits
  auto apply = [&](const GroupKey& key, const Event& e) {
    if (e.kind == Event::kCommit) {
      out->offsets[key] = e.value;
    } else {
      out->offsets.erase(key);
    }
  };
  for (const auto& [offset, e] : by_offset) {
    switch (e.kind) {
      case Event::kCommit:
      case Event::kTombstone:
        if (e.transactional) {
          pending[e.producer_id][e.key] = e;
          break;
        }
        apply(e.key, e);
        // A tombstone also removes the key's pending transactional offsets (replay of a null value).
        if (e.kind == Event::kTombstone)
          for (auto& [pid, p] : pending) p.erase(e.key);
        break;
      case Event::kCommitMarker:
        if (auto it = pending.find(e.producer_id); it != pending.end()) {
          for (const auto& [key, p] : it->second) apply(key, p);
          pending.erase(it);
        }
        break;
      case Event::kAbortMarker: pending.erase(e.producer_id); break;
      case Event::kOther: break;
    }
  }
  for (const auto& [pid, p] : pending) out->pending_transactional += int64_t(p.size());
}

}  // namespace

bool LoadCommittedOffsets(const std::vector<std::string>& dirs, CommittedOffsets* out, ProblemSink* sink,
                          std::string* error) {
  *out = CommittedOffsets();
  std::map<std::string, std::vector<std::string>> copies;
  for (const std::string& dir : dirs) copies[PartitionDirBaseName(dir)].push_back(dir);
  for (const auto& [name, group] : copies) {
    std::map<int64_t, Event> by_offset;
    for (const std::string& dir : group) {
      if (!ReadCopy(dir, &by_offset, sink, error)) return false;
      out->partition_dirs.push_back(dir);
    }
    Replay(by_offset, out);
  }
  return true;
}

std::vector<std::string> FindConsumerOffsetsDirs(const std::vector<std::string>& paths) {
  return FindTopicPartitionDirs(paths, "__consumer_offsets");
}

}  // namespace klf
