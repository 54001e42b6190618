// The incident window of a lost marker (issue 19), reconstructed from what the files show, and the
// setting that would have prevented it.
//
// A lost_abort, lost_commit or hanging_transaction finding proves that the affected replica never held
// the marker that closed a transaction of producer P on the leader: the transaction merged (or stayed
// open) there, which its own cleaner cannot cause (a marker is removed only once its transaction has no
// data left, scenarios.md §2). The marker lies after P's last record of the earlier transaction and
// before P's next record on that replica, in offsets the replica does not hold (a hole). Around the hole:
//   * the last record before it (offset A, timestamp T1) and the first after it (offset B, timestamp
//     T2): the marker was appended between them, so written at about [T1, T2] (timestamps are the
//     producers' CreateTime or the broker's clock: "about");
//   * the leader's cleaner removes a marker only in a pass after its delete horizon, which a pass
//     stamps at that pass's time + delete.retention.ms (CLEAN §8, §12): so at least delete.retention.ms
//     after the marker was written. The replica was still behind the hole then (it never fetched the
//     marker): behind from about T1 for at least delete.retention.ms, when that setting is known;
//   * the healthy replicas' cleaner checkpoints past the hole, where they no longer hold the marker: their
//     cleaners cleaned that range.
// When the replica came back is not in the files: a segment's mtime is not taken as its write time
// (copies, restores and the cleaner set mtimes; Kafka's own fixtures carry modelled ones). The segment
// holding the first record after the hole is named with its mtime in the JSON, as a raw fact.
// Prevention: delete.retention.ms longer than the time the replica stayed behind, which the files show
// was at least the current delete.retention.ms (when known). producer.id.expiration.ms keeps only the
// emptied batch left of a marker, which closes nothing on a follower, so it is named as not preventing it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace klf {

struct ReplicaState;
struct Finding;

// One affected replica's window.
struct IncidentWindow {
  size_t replica = 0;                               // index into the replicas
  int64_t hole_from = 0, hole_to = 0;               // offsets the replica does not hold, inclusive
  size_t holes = 1;                                 // how many holes the marker may lie in (the first is described)
  std::optional<int64_t> marker_offset;             // where a healthy replica still holds the marker
  std::string marker_type;                          // "COMMIT", "ABORT" or "" (unknown)
  size_t marker_on = 0;                             // the healthy replica holding it (with marker_offset)
  int64_t before_offset = -1, before_ms = -1;       // last record before the hole, its timestamp (T1)
  int64_t after_offset = -1, after_ms = -1;         // first record after the hole, its timestamp (T2)
  std::string after_file;                           // segment file holding it
  int64_t after_file_mtime_ms = -1;                 // its mtime: B appended (and the marker gone) no later
  std::optional<int64_t> delete_retention_ms;       // when known
  std::optional<int64_t> behind_until_at_least_ms;  // T1 + delete.retention.ms
  std::vector<size_t> cleaned_by;  // healthy replicas whose cleaner checkpoint is past the hole, marker gone
  std::string sentence;
};

struct IncidentPrevention {
  std::string setting;                 // "delete.retention.ms", "producer.id.expiration.ms"
  bool prevents = false;               // a value above at_least_ms would have prevented this finding
  std::optional<int64_t> at_least_ms;  // sufficient value (prevents), from the files
  std::optional<int64_t> current_ms;   // the topic's / cluster's, when known
  std::string current_from;            // where current_ms comes from
  std::string sentence;
};

struct Incident {
  std::vector<IncidentWindow> windows;  // one per affected replica with a hole to show
  std::vector<IncidentPrevention> prevention;
};

struct IncidentOptions {
  std::optional<int64_t> delete_retention_ms;  // the topic's delete.retention.ms, when known
  std::string delete_retention_from;           // "topic config (metadata log)", ...
  std::optional<int64_t> producer_id_expiration_ms;
  std::string producer_id_expiration_from;
  bool wall_clock_times = false;  // sentences with ISO-8601 UTC beside epoch ms (WithWallClock)
};

// nullopt for findings that are not a lost marker (lost_abort, lost_commit, hanging_transaction of a
// producer), or when no affected replica shows a hole where the marker was.
std::optional<Incident> ReconstructIncident(const std::vector<ReplicaState>& replicas, const Finding& finding,
                                            const IncidentOptions& options);

}  // namespace klf
