#include "diff/incident.h"

#include <algorithm>

#include <fmt/ranges.h>

#include <fmt/format.h>

#include "diff/diff.h"
#include "diff/replica_state.h"
#include "segment_reader/bytes.h"

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

// The segment file holding `offset` on r: its index, or -1.
int64_t SegmentOf(const ReplicaState& r, int64_t offset) {
  auto it = std::lower_bound(r.batches.begin(), r.batches.end(), offset,
                             [](const BatchSpan& b, int64_t o) { return b.last_offset < o; });
  if (it == r.batches.end() || it->base_offset > offset) return -1;
  return it->segment;
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one bound per piece of evidence (the hole, the batches around it, healthy copies' checkpoints), each optional
std::optional<Incident> ReconstructIncident(const std::vector<ReplicaState>& rs, const Finding& f,
                                            const IncidentOptions& options) {
  if (!f.producer_id || f.first_offset < 0) return std::nullopt;
  if (f.kind != FindingKind::kLostAbort && f.kind != FindingKind::kLostCommit &&
      f.kind != FindingKind::kHangingTransaction) {
    return std::nullopt;
  }
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
  int64_t behind_at_least = -1;  // proven: how long an affected replica stayed behind
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
    if (const RecordDigest* a = LastRecordBefore(r, w.hole_from))
      w.before_offset = a->offset, w.before_ms = a->timestamp;
    if (const RecordDigest* b = FirstRecordFrom(r, hole.to)) {
      w.after_offset = b->offset;
      w.after_ms = b->timestamp;
      int64_t seg = SegmentOf(r, b->offset);
      if (seg >= 0 && size_t(seg) < r.segment_files.size()) {
        w.after_file = r.segment_files[seg];
        if (size_t(seg) < r.segment_mtimes_ms.size() && r.segment_mtimes_ms[seg] > 0)
          w.after_file_mtime_ms = r.segment_mtimes_ms[seg];
      }
    }
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
    if (w.before_offset >= 0 && w.after_offset >= 0) {
      s += fmt::format(" (its record before is offset {}, timestamp {}; after, offset {}, timestamp {})",
                       w.before_offset, time(w.before_ms), w.after_offset, time(w.after_ms));
    }
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
    s += ". When it came back is not in the files (segment mtimes are not taken as fetch times: copies and the "
         "cleaner set them)";
    w.sentence = s + ".";
    if (options.delete_retention_ms) behind_at_least = *options.delete_retention_ms;
    incident.windows.push_back(std::move(w));
  }
  if (incident.windows.empty()) return std::nullopt;

  IncidentPrevention dr;
  dr.setting = "delete.retention.ms";
  dr.prevents = true;
  dr.current_ms = options.delete_retention_ms;
  dr.current_from = options.delete_retention_from;
  if (behind_at_least > 0) {
    dr.at_least_ms = behind_at_least;
    dr.sentence = fmt::format(
        "delete.retention.ms longer than the time the replica stayed behind would have kept the {} on the leader until "
        "it fetched it: the topic's {} ms ({}, {}) was not; the outage lasted at least that long, so it must be raised "
        "above {} and above the outage's real length (not in these files)",
        lost, behind_at_least, HumanDuration(behind_at_least), options.delete_retention_from,
        HumanDuration(behind_at_least));
  } else {
    dr.sentence = fmt::format(
        "delete.retention.ms longer than the time the replica stayed behind would have kept the {} on the leader until "
        "it fetched it; that time was at least the topic's current delete.retention.ms (not in the files given)",
        lost);
  }
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

}  // namespace klf
