// The incident window of a lost marker, a lost tombstone or a divergent record (issue 19),
// reconstructed from what the files show, and the setting that would have prevented it.
//
// Lost marker. A lost_abort, lost_commit or hanging_transaction finding proves that the affected replica never held
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
// Lost tombstone. The affected replica's latest record of key K is a value at offset O that the healthy
// replicas removed: the key's later records (ending with a tombstone) never reached it, and its own
// cleaner did not remove them (that pass would have removed O too). The key's last record leaves a log
// only as a tombstone in a cleaner pass after its delete horizon, at least delete.retention.ms after it
// was written, and the replica fetched that offset only after its source had removed it:
//   * when a healthy replica still holds the tombstone at offset P as the key's latest record, P is the
//     place (the replica's hole around it, the records before and after) and its timestamp Tp the write
//     time: the replica had not fetched offset P until at least Tp + delete.retention.ms;
//   * when none does, the tombstone lies after O and below every healthy replica's cleaner checkpoint
//     (their cleaners removed it); it was written after O (timestamp T_O): the replica had not fetched
//     it, so its log end was below that checkpoint, until at least T_O + delete.retention.ms. The
//     replica's first hole after O is described as a raw fact (the tombstone may lie in another).
// A key's divergent_record (the replica lacks a newer value a healthy replica holds) and an offset's
// (different records at the same offsets) are not explained by any cleaner setting (a value leaves a log
// only when a later record of its key supersedes it; one offset holds one record on every copy): their
// windows state the raw facts only (the hole, the records and leader epochs around it) and name no
// prevention.
// Every window names the replica's producer snapshot files in or at the end of the hole (a broker writes
// one when it rolls a segment and when it shuts down, named by its log end offset then) and its cleaner
// checkpoint, as raw facts.
// When the replica came back is not in the files: a segment's mtime is not taken as its write time
// (copies, restores and the cleaner set mtimes; Kafka's own fixtures carry modelled ones). The segment
// holding the first record after the hole is named with its mtime in the JSON, as a raw fact.
// Prevention (markers and tombstones): delete.retention.ms longer than the time the replica stayed
// behind, which the files show was at least the current delete.retention.ms (when known). For markers,
// producer.id.expiration.ms keeps only the emptied batch left of a marker, which closes nothing on a
// follower, so it is named as not preventing it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "segment_reader/bytes.h"

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
  // Lost tombstones and a key's divergent records: what the replica lacks.
  std::string lost;                      // "tombstone", "newer value", "marker" or "" (an offset's divergence)
  std::optional<int64_t> lost_offset;    // where a healthy replica still holds it
  size_t lost_on = 0;                    // that replica (with lost_offset)
  int64_t lost_ms = -1;                  // its timestamp there
  int64_t key_offset = -1, key_ms = -1;  // the replica's latest record of the key (O, T_O)
  // The tombstone lies in offsets [lost_from, lost_to] (when no replica holds it; lost_to -1: unbounded).
  int64_t lost_from = -1, lost_to = -1;
  bool hole_in_batch = false;  // the replica holds a batch around lost_offset without that record
  // An offset's divergence: the last offset all replicas hold alike before it, and the leader epochs of the
  // differing records on the replica and on the healthy one (first, last), with the latter's timestamps.
  int64_t agreed_offset = -1, agreed_ms = -1;
  int32_t epoch_first = -1, epoch_last = -1, healthy_epoch_first = -1, healthy_epoch_last = -1;
  int64_t healthy_first_ms = -1;
  std::vector<int64_t> snapshots;             // the replica's producer snapshots in [hole_from, hole_to + 1]
  std::optional<int64_t> cleaner_checkpoint;  // the replica's own
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
  bool wall_clock_times = false;           // sentences with ISO-8601 UTC beside epoch ms (WithWallClock)
  BytesFormat bytes = BytesFormat::kText;  // keys in the sentences (--bytes)
};

// nullopt for findings that have no window: missing_range and unrelated_logs, a lost marker where no
// affected replica shows a hole where the marker was, a key finding whose newer record lies nowhere the
// replica lacks.
std::optional<Incident> ReconstructIncident(const std::vector<ReplicaState>& replicas, const Finding& finding,
                                            const IncidentOptions& options);

}  // namespace klf
