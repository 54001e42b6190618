#include "diff/incident.h"

#include <algorithm>
#include <functional>

#include <fmt/ranges.h>

#include <fmt/format.h>

#include "diff/diff.h"
#include "diff/replica_state.h"
#include "segment_reader/bytes.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace {

// The record of `r` at the greatest offset below `offset` with a timestamp, or nullptr.
const RecordDigest* LastRecordBefore(const ReplicaState& r, int64_t offset) {
  auto it = std::lower_bound(r.records.begin(), r.records.end(), offset,
                             [](const RecordDigest& d, int64_t o) { return d.offset < o; });
  while (it != r.records.begin()) {
    --it;
    if (it->timestamp >= 0) return &*it;
  }
  return nullptr;
}

const RecordDigest* FirstRecordFrom(const ReplicaState& r, int64_t offset) {
  auto it = std::lower_bound(r.records.begin(), r.records.end(), offset,
                             [](const RecordDigest& d, int64_t o) { return d.offset < o; });
  for (; it != r.records.end(); ++it) {
    if (it->timestamp >= 0) return &*it;
  }
  return nullptr;
}

// P's next record (data or control) on r after `after`, or r's log end.
int64_t NextOfProducer(const ReplicaState& r, int64_t producer_id, int64_t after) {
  auto it = std::upper_bound(r.records.begin(), r.records.end(), after,
                             [](int64_t o, const RecordDigest& d) { return o < d.offset; });
  for (; it != r.records.end(); ++it) {
    if (it->producer_id == producer_id) return it->offset;
  }
  return r.log_end_offset;
}

std::string Names(const std::vector<ReplicaState>& rs, const std::vector<size_t>& idx) {
  std::string s;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] >= rs.size()) continue;
    if (!s.empty()) s += i + 1 == idx.size() ? " and " : ", ";
    s += rs[idx[i]].label;
  }
  return s;
}

// The segment file holding `offset` on r: its index, or -1.
int64_t SegmentOf(const ReplicaState& r, int64_t offset) {
  auto it = std::lower_bound(r.batches.begin(), r.batches.end(), offset,
                             [](const BatchSpan& b, int64_t o) { return b.last_offset < o; });
  if (it == r.batches.end() || it->base_offset > offset) return -1;
  return it->segment;
}

// The records around w's hole on r (the last before, the first after, its segment file and mtime), the
// producer snapshots in or at the end of the hole and r's cleaner checkpoint: the raw facts of a window.
void FillAround(const ReplicaState& r, IncidentWindow* w) {
  w->cleaner_checkpoint = r.cleaner_checkpoint;
  if (w->hole_from < 0) return;
  if (const RecordDigest* a = LastRecordBefore(r, w->hole_from))
    w->before_offset = a->offset, w->before_ms = a->timestamp;
  if (const RecordDigest* b = FirstRecordFrom(r, w->hole_to + 1)) {
    w->after_offset = b->offset;
    w->after_ms = b->timestamp;
    int64_t seg = SegmentOf(r, b->offset);
    if (seg >= 0 && size_t(seg) < r.segment_files.size()) {
      w->after_file = r.segment_files[seg];
      if (size_t(seg) < r.segment_mtimes_ms.size() && r.segment_mtimes_ms[seg] > 0)
        w->after_file_mtime_ms = r.segment_mtimes_ms[seg];
    }
  }
  for (int64_t o : r.snapshot_offsets) {
    if (o >= w->hole_from && o <= w->hole_to + 1) w->snapshots.push_back(o);
  }
}

using TimeText = std::function<std::string(int64_t)>;

std::string AroundText(const IncidentWindow& w, const TimeText& time) {
  if (w.before_offset < 0 || w.after_offset < 0) return "";
  return fmt::format(" (its record before is offset {}, timestamp {}; after, offset {}, timestamp {})", w.before_offset,
                     time(w.before_ms), w.after_offset, time(w.after_ms));
}

std::string SnapshotText(const ReplicaState& r, const IncidentWindow& w) {
  if (w.snapshots.empty()) return "";
  return fmt::format(
      "; {} holds a producer snapshot at offset {} (a broker writes one when it rolls a segment and when it shuts "
      "down, named by its log end offset then)",
      r.label, fmt::join(w.snapshots, ", "));
}

std::string CleanedText(const std::vector<ReplicaState>& rs, const IncidentWindow& w, const char* what) {
  if (w.cleaned_by.empty()) return "";
  std::vector<std::string> names;
  for (size_t h : w.cleaned_by)
    names.push_back(fmt::format("{} (cleaner checkpoint {})", rs[h].label, *rs[h].cleaner_checkpoint));
  return fmt::format("; the cleaners of {} have cleaned past it and no longer hold the {}", fmt::join(names, ", "),
                     what);
}

constexpr const char* kNotBack =
    ". When it came back is not in the files (segment mtimes are not taken as fetch times: copies and the cleaner set "
    "them)";

// delete.retention.ms longer than the outage: it would have kept the lost record on the leader until the replica
// fetched it; the files show that the outage lasted at least the current value (when known).
IncidentPrevention DeleteRetentionPrevention(const IncidentOptions& options, const char* lost) {
  IncidentPrevention dr;
  dr.setting = "delete.retention.ms";
  dr.prevents = true;
  dr.current_ms = options.delete_retention_ms;
  dr.current_from = options.delete_retention_from;
  if (options.delete_retention_ms && *options.delete_retention_ms > 0) {
    const int64_t at_least = *options.delete_retention_ms;
    dr.at_least_ms = at_least;
    dr.sentence = fmt::format(
        "delete.retention.ms longer than the time the replica stayed behind would have kept the {} on the leader until "
        "it fetched it: the topic's {} ms ({}, {}) was not; the outage lasted at least that long, so it must be raised "
        "above {} and above the outage's real length (not in these files)",
        lost, at_least, HumanDuration(at_least), options.delete_retention_from, HumanDuration(at_least));
  } else {
    dr.sentence = fmt::format(
        "delete.retention.ms longer than the time the replica stayed behind would have kept the {} on the leader until "
        "it fetched it; that time was at least the topic's current delete.retention.ms (not in the files given)",
        lost);
  }
  return dr;
}

// The window of a lost marker (lost_abort, lost_commit, hanging_transaction).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one bound per piece of evidence (the hole, the batches around it, healthy copies' checkpoints), each optional
std::optional<Incident> MarkerIncident(const std::vector<ReplicaState>& rs, const Finding& f,
                                       const IncidentOptions& options) {
  if (!f.producer_id || f.first_offset < 0) return std::nullopt;
  auto time = [&](int64_t ms) { return options.wall_clock_times ? WithWallClock(ms) : std::to_string(ms); };
  const int64_t pid = *f.producer_id;
  // The marker follows P's last record of the earlier transaction: the records at stake of a merge, the
  // open transaction's last data offset of a hanging one.
  int64_t after = f.kind == FindingKind::kHangingTransaction || f.records_at_stake.empty()
                      ? f.last_offset
                      : *std::max_element(f.records_at_stake.begin(), f.records_at_stake.end());
  if (f.kind != FindingKind::kHangingTransaction && f.records_at_stake.empty()) after = f.first_offset;
  const char* lost = f.kind == FindingKind::kLostAbort    ? "ABORT"
                     : f.kind == FindingKind::kLostCommit ? "COMMIT"
                                                          : "marker";
  Incident incident;
  for (size_t i : f.affected) {
    if (i >= rs.size()) continue;
    const ReplicaState& r = rs[i];
    const int64_t before_next = NextOfProducer(r, pid, after);
    // The holes of r between P's last record of the earlier transaction and its next record.
    std::vector<OffsetGap> holes;
    for (const OffsetGap* g = r.GapAtOrAfter(after + 1); g != nullptr && g->from < before_next;
         g = r.GapAtOrAfter(g->to)) {
      if (g->to > after + 1) holes.push_back(*g);
      if (g->to <= g->from) break;
    }
    if (holes.empty()) continue;
    IncidentWindow w;
    w.replica = i;
    w.holes = holes.size();
    // A healthy replica that still holds the marker says which hole.
    for (size_t h : f.healthy) {
      if (h >= rs.size()) continue;
      const Marker* m = rs[h].NextMarker(pid, after);
      // Only the marker that was lost: its type (any for a hanging transaction), inside one of the holes.
      const bool type_ok = m != nullptr && (f.kind == FindingKind::kLostAbort ? m->type == MarkerType::kAbort
                                            : f.kind == FindingKind::kLostCommit
                                                ? m->type == MarkerType::kCommit
                                                : m->type == MarkerType::kCommit || m->type == MarkerType::kAbort);
      const bool in_hole = m != nullptr && std::any_of(holes.begin(), holes.end(), [&](const OffsetGap& g) {
                             return g.from <= m->offset && m->offset < g.to;
                           });
      if (type_ok && in_hole && m->offset < before_next) {
        w.marker_offset = m->offset;
        w.marker_type = MarkerTypeName(m->type);
        w.marker_on = h;
        break;
      }
    }
    OffsetGap hole = holes.front();
    if (w.marker_offset) {
      for (const OffsetGap& g : holes) {
        if (g.from <= *w.marker_offset && *w.marker_offset < g.to) hole = g, w.holes = 1;
      }
    }
    w.hole_from = std::max(hole.from, after + 1);
    w.hole_to = hole.to - 1;
    w.lost = "marker";
    FillAround(r, &w);
    w.delete_retention_ms = options.delete_retention_ms;
    if (w.before_ms >= 0 && options.delete_retention_ms)
      w.behind_until_at_least_ms = w.before_ms + *options.delete_retention_ms;
    // The healthy replicas' cleaner checkpoints past the hole: their cleaners have cleaned that range.
    for (size_t h : f.healthy) {
      if (h < rs.size() && rs[h].cleaner_checkpoint && *rs[h].cleaner_checkpoint > w.hole_to &&
          !rs[h].NextMarker(pid, after)) {
        w.cleaned_by.push_back(h);
      }
    }

    std::string s = fmt::format(
        "{} never fetched the {} of producer {} that closed its transaction after offset {}: it holds no offset from "
        "{} to {}",
        r.label, lost, pid, after, w.hole_from, w.hole_to);
    s += AroundText(w, time);
    if (w.marker_offset) {
      s += fmt::format(", where {} still holds the {} at offset {}", rs[w.marker_on].label, w.marker_type,
                       *w.marker_offset);
    } else if (w.holes > 1) {
      s +=
          fmt::format(" (the first of {} holes of {} before producer {}'s next record; the marker lies in one of them)",
                      w.holes, r.label, pid);
    }
    if (w.before_ms >= 0 && w.after_ms >= 0)
      s += fmt::format(": the marker was written between about {} and {}", time(w.before_ms), time(w.after_ms));
    s += ". The leader's cleaner removes a marker only after its delete horizon, at least delete.retention.ms after it "
         "was written, and " +
         r.label + " was still behind it then";
    if (w.behind_until_at_least_ms) {
      s += fmt::format(
          " (delete.retention.ms {} ms = {}, {}): {} fetched nothing past offset {} for at least {}, "
          "until at least {}",
          *options.delete_retention_ms, HumanDuration(*options.delete_retention_ms), options.delete_retention_from,
          r.label, w.hole_from - 1, HumanDuration(*options.delete_retention_ms), time(*w.behind_until_at_least_ms));
    } else {
      s += fmt::format(
          ": {} fetched nothing past offset {} for at least the topic's delete.retention.ms (not in the "
          "files given: --metadata-log or --delete-retention-ms names it)",
          r.label, w.hole_from - 1);
    }
    if (!w.cleaned_by.empty()) {
      std::vector<std::string> names;
      for (size_t h : w.cleaned_by)
        names.push_back(fmt::format("{} (cleaner checkpoint {})", rs[h].label, *rs[h].cleaner_checkpoint));
      s += fmt::format("; the cleaners of {} have cleaned past the hole and no longer hold the marker",
                       fmt::format("{}", fmt::join(names, ", ")));
    }
    s += SnapshotText(r, w);
    s += kNotBack;
    w.sentence = s + ".";
    incident.windows.push_back(std::move(w));
  }
  if (incident.windows.empty()) return std::nullopt;

  IncidentPrevention dr = DeleteRetentionPrevention(options, lost);
  incident.prevention.push_back(dr);
  IncidentPrevention pe;
  pe.setting = "producer.id.expiration.ms";
  pe.prevents = false;
  pe.current_ms = options.producer_id_expiration_ms;
  pe.current_from = options.producer_id_expiration_from;
  pe.sentence =
      "producer.id.expiration.ms would not have prevented it: it keeps only the emptied batch left of a marker (the "
      "producer's last batch), which closes no transaction on a follower that fetches it";
  incident.prevention.push_back(pe);
  return incident;
}

std::string KeyText(const Finding& f, BytesFormat format) {
  if (!f.has_key) return "";
  return " " + (f.key ? FormatBytes(AsBytes(*f.key), format) : std::string("null"));
}

// Where the record the replica lacks lies: its hole around the healthy copy's offset, or (a tombstone no replica
// holds) the range after the key's record and below the healthy cleaners' checkpoints, with the first hole there.
void LocateKeyLoss(const std::vector<ReplicaState>& rs, const Finding& f, IncidentWindow* w) {
  const ReplicaState& r = rs[w->replica];
  if (f.last_offset > f.first_offset) {
    for (size_t h : f.healthy) {
      if (h >= rs.size()) continue;
      int64_t i = rs[h].FindRecord(f.last_offset);
      if (i < 0) continue;
      w->lost_offset = f.last_offset;
      w->lost_on = h;
      w->lost_ms = rs[h].records[size_t(i)].timestamp;
      break;
    }
  }
  if (w->lost_offset) {
    const int64_t p = *w->lost_offset;
    const OffsetGap* g = r.GapAtOrAfter(p);
    if (g != nullptr && g->from <= p && p < g->to) {
      w->hole_from = g->from, w->hole_to = g->to - 1;
    } else {
      w->hole_from = w->hole_to = p;
      w->hole_in_batch = r.HoldsOffset(p);
    }
    return;
  }
  w->lost_from = JavaAdd(f.first_offset, 1);
  for (size_t h : f.healthy) {
    if (h < rs.size() && rs[h].cleaner_checkpoint && *rs[h].cleaner_checkpoint > f.first_offset &&
        (w->lost_to < 0 || *rs[h].cleaner_checkpoint - 1 < w->lost_to)) {
      w->lost_to = *rs[h].cleaner_checkpoint - 1;
    }
  }
  const OffsetGap* g = r.GapAtOrAfter(w->lost_from);
  if (g != nullptr && (w->lost_to < 0 || g->from <= w->lost_to)) {
    w->hole_from = std::max(g->from, w->lost_from);
    w->hole_to = g->to - 1;
  }
}

// The window of a key's finding: a lost tombstone, or a newer value the replica lacks.
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one clause per fact, each optional (the healthy copy, the hole, the setting)
std::optional<Incident> KeyIncident(const std::vector<ReplicaState>& rs, const Finding& f,
                                    const IncidentOptions& options) {
  if (!f.by_key || f.first_offset < 0 || f.affected.empty() || f.affected.front() >= rs.size()) return std::nullopt;
  auto time = [&](int64_t ms) { return options.wall_clock_times ? WithWallClock(ms) : std::to_string(ms); };
  const bool tombstone = f.kind == FindingKind::kLostTombstone;
  const std::string key = KeyText(f, options.bytes);
  IncidentWindow w;
  w.replica = f.affected.front();
  const ReplicaState& r = rs[w.replica];
  w.key_offset = f.first_offset;
  if (int64_t i = r.FindRecord(f.first_offset); i >= 0) w.key_ms = r.records[size_t(i)].timestamp;
  w.lost = tombstone ? "tombstone" : "newer value";
  LocateKeyLoss(rs, f, &w);
  if (!tombstone && !w.lost_offset) return std::nullopt;
  FillAround(r, &w);
  const int64_t past = w.lost_offset ? *w.lost_offset : w.hole_to >= 0 ? w.hole_to : w.lost_from;
  for (size_t h : f.healthy) {
    if (h < rs.size() && rs[h].cleaner_checkpoint && *rs[h].cleaner_checkpoint > past &&
        !(w.lost_offset && rs[h].FindRecord(*w.lost_offset) >= 0)) {
      w.cleaned_by.push_back(h);
    }
  }
  std::string s;
  if (w.lost_offset) {
    s = fmt::format("{} never fetched the {} of key{} that {} holds at offset {} (written at about {})", r.label,
                    w.lost, key, rs[w.lost_on].label, *w.lost_offset, time(w.lost_ms));
    if (w.hole_in_batch) {
      s += fmt::format(
          ": {} holds the batch around offset {} without that record, so it fetched that batch after a "
          "cleaner had removed the record",
          r.label, *w.lost_offset);
    } else {
      s += fmt::format(": it holds no offset from {} to {}", w.hole_from, w.hole_to);
    }
  } else {
    s = fmt::format(
        "{} never fetched the tombstone that deleted key{} after its offset {} (timestamp {}): {} hold no record of "
        "the key, so it lies after offset {}",
        r.label, key, w.key_offset, time(w.key_ms), Names(rs, f.healthy), w.key_offset);
    if (w.lost_to >= 0) {
      s += fmt::format(" and below offset {} (their cleaners removed it, and a cleaner works below its checkpoint)",
                       w.lost_to + 1);
    }
    if (w.hole_from >= 0) {
      s += fmt::format("; the first offsets {} does not hold after {} are {} to {}, where it may lie", r.label,
                       w.key_offset, w.hole_from, w.hole_to);
    }
  }
  s += AroundText(w, time);
  if (tombstone) {
    const int64_t written = w.lost_offset ? w.lost_ms : w.key_ms;
    s += fmt::format(
        ". A tombstone that is its key's last record leaves a log only in a cleaner pass after its delete horizon, at "
        "least delete.retention.ms after it was written ({} {}), and {}'s source had removed it before {} fetched its "
        "offset",
        w.lost_offset ? "at about" : "after about", time(written), r.label, r.label);
    const std::string where = w.lost_offset ? fmt::format("offset {}", *w.lost_offset)
                              : w.lost_to >= 0
                                  ? fmt::format("the tombstone's offset (its log end was at most {})", w.lost_to)
                                  : std::string("the tombstone's offset");
    if (options.delete_retention_ms && written >= 0) {
      w.delete_retention_ms = options.delete_retention_ms;
      w.behind_until_at_least_ms = written + *options.delete_retention_ms;
      s += fmt::format(" (delete.retention.ms {} ms = {}, {}): {} had not fetched {} until at least {}",
                       *options.delete_retention_ms, HumanDuration(*options.delete_retention_ms),
                       options.delete_retention_from, r.label, where, time(*w.behind_until_at_least_ms));
    } else {
      w.delete_retention_ms = options.delete_retention_ms;
      s += fmt::format(
          ": {} had not fetched {} for at least the topic's delete.retention.ms after it was written (not in the "
          "files given: --metadata-log or --delete-retention-ms names it)",
          r.label, where);
    }
    s += CleanedText(rs, w, "tombstone");
  } else {
    s += fmt::format(
        ". A value leaves a log only when a later record of its key supersedes it, and no replica holds a later one: "
        "what removed it from {}'s source is not in the files (a truncation, an unclean leader election or a lost "
        "file), and no cleaner setting explains it",
        r.label);
  }
  s += SnapshotText(r, w);
  s += kNotBack;
  w.sentence = s + ".";
  Incident incident;
  incident.windows.push_back(std::move(w));
  if (tombstone) incident.prevention.push_back(DeleteRetentionPrevention(options, "tombstone"));
  return incident;
}

// Leader epochs (first, last) and the first timestamp of r's records in [from, to].
void EpochsOf(const ReplicaState& r, int64_t from, int64_t to, int32_t* first, int32_t* last, int64_t* first_ms) {
  auto it = std::lower_bound(r.records.begin(), r.records.end(), from,
                             [](const RecordDigest& d, int64_t o) { return d.offset < o; });
  for (; it != r.records.end() && it->offset <= to; ++it) {
    if (*first < 0) *first = it->leader_epoch, *first_ms = it->timestamp;
    *last = it->leader_epoch;
  }
}

std::string EpochText(int32_t first, int32_t last) {
  return first == last ? fmt::format("leader epoch {}", first) : fmt::format("leader epochs {} to {}", first, last);
}

// The window of an offset's divergence (different records at the same offsets): raw facts only.
std::optional<Incident> DivergenceIncident(const std::vector<ReplicaState>& rs, const Finding& f,
                                           const IncidentOptions& options) {
  if (f.by_key || f.first_offset < 0 || f.healthy.empty() || f.healthy.front() >= rs.size()) return std::nullopt;
  auto time = [&](int64_t ms) { return options.wall_clock_times ? WithWallClock(ms) : std::to_string(ms); };
  const ReplicaState& h = rs[f.healthy.front()];
  Incident incident;
  for (size_t a : f.affected) {
    if (a >= rs.size()) continue;
    const ReplicaState& r = rs[a];
    IncidentWindow w;
    w.replica = a;
    w.cleaner_checkpoint = r.cleaner_checkpoint;
    w.lost_from = f.first_offset;
    w.lost_to = f.last_offset;
    EpochsOf(r, f.first_offset, f.last_offset, &w.epoch_first, &w.epoch_last, &w.after_ms);
    EpochsOf(h, f.first_offset, f.last_offset, &w.healthy_epoch_first, &w.healthy_epoch_last, &w.healthy_first_ms);
    if (w.epoch_first < 0 || w.healthy_epoch_first < 0) continue;
    w.after_offset = f.first_offset;
    // The last offset before the divergence where both hold the same record.
    auto it = std::lower_bound(r.records.begin(), r.records.end(), f.first_offset,
                               [](const RecordDigest& d, int64_t o) { return d.offset < o; });
    for (int steps = 0; it != r.records.begin() && steps < 100000; ++steps) {
      --it;
      int64_t j = h.FindRecord(it->offset);
      if (j >= 0 && h.records[size_t(j)].content == it->content) {
        w.agreed_offset = it->offset, w.agreed_ms = it->timestamp;
        break;
      }
    }
    std::string s = fmt::format(
        "offsets {} to {} hold records on {} written under {} (the first at about {}) and on {} under {} (the first "
        "at about {})",
        f.first_offset, f.last_offset, r.label, EpochText(w.epoch_first, w.epoch_last), time(w.after_ms), h.label,
        EpochText(w.healthy_epoch_first, w.healthy_epoch_last), time(w.healthy_first_ms));
    if (w.agreed_offset >= 0) {
      s += fmt::format("; the last offset before them that both hold alike is {} (timestamp {})", w.agreed_offset,
                       time(w.agreed_ms));
    } else {
      s += "; they hold no record alike before them";
    }
    s += w.epoch_first != w.healthy_epoch_first || w.epoch_last != w.healthy_epoch_last
             ? ": two leaders wrote these offsets"
             : ": under the same leader epoch, which replication never does (a copy's files were altered or restored)";
    s += ". Which broker led when, and whether an election was unclean, are not in these files (the metadata log's "
         "partition records name leaders and ISRs); no cleaner setting explains it";
    w.sentence = s + ".";
    incident.windows.push_back(std::move(w));
  }
  if (incident.windows.empty()) return std::nullopt;
  return incident;
}

}  // namespace

std::optional<Incident> ReconstructIncident(const std::vector<ReplicaState>& rs, const Finding& f,
                                            const IncidentOptions& options) {
  switch (f.kind) {
    case FindingKind::kLostAbort:
    case FindingKind::kLostCommit:
    case FindingKind::kHangingTransaction: return MarkerIncident(rs, f, options);
    case FindingKind::kLostTombstone: return KeyIncident(rs, f, options);
    case FindingKind::kDivergentRecord:
      return f.by_key ? KeyIncident(rs, f, options) : DivergenceIncident(rs, f, options);
    case FindingKind::kMissingRange:
    case FindingKind::kUnrelatedLogs: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace klf
