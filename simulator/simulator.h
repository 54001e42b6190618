// The incident simulator (`klf simulate`): a partition replicated on N brokers, driven by a timeline
// of produce / transaction / broker down-up / leadership / clock / cleaner events, with every broker's
// log directory written on disk in Kafka's format as it goes (README "klf simulate" documents the
// timeline format).
//
// Replication is modelled as Kafka does it (scenarios.md §2.7, §6): the leader assigns offsets and
// stamps its leader epoch, idempotent/transactional producer fields and sequences; COMMIT/ABORT
// markers are written when a transaction ends; every follower that is up fetches from its own log end
// offset after each event, one leader segment per fetch from the leader's current (possibly compacted)
// log, and appends with the leader's offsets, updating its own producer state and `.txnindex`. A
// broker that is down keeps its log as it was; when it comes back it fetches the compacted tail.
// Each broker's cleaner runs on its own log, at the times the timeline says (compactor/cleaner.h).
//
// Modes:
//   uncoordinated - Kafka's rules: each replica compacts alone.
//   coordinated   - Redpanda's protocol, offline (redpanda-coordinated-compaction.md §2-§4, §8): per
//                   replica MCCO (cleaner checkpoint capped at its log end) and MXFO (first unstable
//                   offset, else log end) are reported whenever the coordinator ticks (before every
//                   clean, at every up and leadership change); MTRO = min MCCO, MXRO = min MXFO over
//                   all replicas, using the last report of a replica that is down, nothing removable
//                   until every replica has reported, both only moving forward. The cleaner then removes
//                   tombstones only below MTRO and markers only below MXRO, on top of Kafka's rules.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "segment_reader/checkpoints.h"
#include "segment_reader/compression.h"
#include "segment_reader/env.h"
#include "simulator/replica_view.h"

namespace klf {

struct ProducerSpec {
  std::string name;
  int64_t producer_id = -1;  // -1: a plain (non-idempotent) producer
  int16_t epoch = -1;
  bool transactional = false;
  std::string transactional_id;
  int32_t coordinator_epoch = 0;
  Compression compression = Compression::kNone;
  // Transactional producers: the client's transaction version (KIP-890), 0, 1 or 2; -1 when the
  // timeline does not say (the simulator's behaviour before the field existed: TV0/1 epochs, and no
  // coordinator log written). Under 2 the coordinator bumps the epoch at every transaction end (the
  // marker carries data epoch + 1, the next transaction starts there with sequence 0) and allocates a
  // new producer id when the data epoch is 32766 (Short.MAX_VALUE - 1).
  int transaction_version = -1;
  int32_t transaction_timeout_ms = 60000;  // the coordinator's TransactionTimeoutMs
};

// The brokers an event names: "broker": N, "brokers": [N, ...], or neither (every broker that is up).
struct BrokerTargets {
  enum class From { kAllUp, kBroker, kBrokers } from = From::kAllUp;
  std::vector<int> ids;  // as written; checked against the cluster when the event runs
};

// One event of a timeline per op, typed when the timeline is parsed (README "klf simulate": the ops
// and their fields).
namespace event {
using Records = std::vector<std::pair<std::optional<std::string>, std::optional<std::string>>>;
struct Note {
  std::string text;
};
struct Advance {
  std::optional<int64_t> to_ms;
  int64_t ms = 0;  // without to_ms: the clock moves this much
};
struct Produce {
  std::string producer;
  Records records;        // [key, value]; a null value is a tombstone
  bool one_batch = true;  // "batch": "single" (default) or "each"
};
struct Traffic {
  std::string producer;
  std::vector<std::string> keys;  // "keys", or key_prefix + key_count
  std::string value_prefix = "v";
  bool until_roll = false;
  int count = 10;
  size_t key_offset = 0;
};
struct Begin {
  std::string producer;
};
struct End {  // commit or abort
  std::string producer;
  bool commit = false;
  bool timeout = false;  // abort only: the coordinator's abort at the transaction's time-out
};
struct Down {
  BrokerTargets brokers;
};
struct Up {
  BrokerTargets brokers;
};
struct Leader {
  BrokerTargets brokers;
};
struct Roll {
  BrokerTargets brokers;
};
struct Clean {
  BrokerTargets brokers;
  bool force = false;
};
}  // namespace event

struct TimelineEvent {
  std::string op;
  int line = 0, column = 0;  // where it starts in the timeline file (0: not read from one)
  std::variant<event::Note, event::Advance, event::Produce, event::Traffic, event::Begin, event::End, event::Down,
               event::Up, event::Leader, event::Roll, event::Clean>
      body;
  // " (produce, line 3, column 5)", as errors name the event ("" when neither is known).
  std::string Where() const;
};

// One event from its JSON object. Returns false with *error naming the field.
bool ParseTimelineEvent(const nlohmann::json& e, TimelineEvent* out, std::string* error);

struct Timeline {
  std::string name;
  std::string description;
  TopicPartition tp{"foo", 0};
  int brokers = 3;
  int leader = 1;
  int64_t start_ms = 1700000000000;
  int64_t record_step_ms = 200;  // the clock advances this much per produced record
  // Topic and broker configs by Kafka's names (segment.bytes, delete.retention.ms, ...).
  std::vector<std::pair<std::string, std::string>> config;
  std::map<std::string, ProducerSpec> producers;
  std::vector<TimelineEvent> events;

  // True when a transactional producer states its transaction_version: the run then also writes the
  // coordinator's `__transaction_state-0` on every broker (simulator.cc, "The coordinator's log").
  bool WritesCoordinatorLog() const;
};

// Parses a timeline file's JSON, its events into types. Returns false with *error naming the field
// (and for an event its index, op, line and column).
bool ParseTimeline(const std::string& json_text, Timeline* out, std::string* error);

enum class CoordinationMode { kUncoordinated, kCoordinated };
const char* CoordinationModeName(CoordinationMode m);  // "uncoordinated", "coordinated"

struct SimulationOptions {
  CoordinationMode mode = CoordinationMode::kUncoordinated;
  std::string out_dir;  // receives broker1/, broker2/, ... (complete or absent)
  bool force = false;   // replace out_dir when it is a previous klf output
  // What the run reads (the timeline file): out_dir must not be, hold or lie inside any of them.
  std::vector<std::string> inputs;
  // Every file the run writes (the brokers' working copies, their cleaner passes, the output) goes
  // through it (tests inject faults).
  Env* env = Env::Default();
};

// The machine-readable facts of an executed event, one type per kind of step (`klf simulate --json`
// prints them as the step's "detail"; cli/simulate.cc names the keys).
namespace facts {
// produce and traffic: the producer's records were appended at [first_offset, last_offset].
struct Produced {
  std::string producer;
  std::optional<int> records;  // traffic only: how many were written
  int64_t first_offset = 0, last_offset = 0;
};
// commit / abort of a transaction that wrote to the partition: its marker.
struct TxnEnded {
  std::string producer;
  int64_t marker_offset = 0;
  bool timeout = false;                    // the coordinator's abort on a transaction time-out
  std::optional<int16_t> next_epoch;       // after a time-out: the fenced client's new epoch
  std::optional<int> transaction_version;  // when the producer states one
  // Set when the producer states a transaction version, or on a time-out.
  std::optional<int64_t> producer_id;
  std::optional<int16_t> data_epoch, marker_epoch;
  std::optional<int64_t> next_producer_id;  // transaction version 2 at the last epoch: the id it moves to
};
// down: a broker shut down (and the leader that took over, if it led).
struct BrokerDown {
  int broker = 0;
  int64_t log_end_offset = 0, last_stable_offset = 0;
  std::optional<int> new_leader;
};
// up: a broker came back and fetched [from_offset, log_end_offset) from the leader.
struct BrokerUp {
  int broker = 0;
  int64_t from_offset = 0, log_end_offset = 0;
  int fetches = 0;
  int64_t bytes = 0;
  int64_t last_stable_offset = 0;
};
struct LeaderElected {
  int broker = 0;
  int32_t leader_epoch = 0;
};
struct Rolled {
  int broker = 0;
  int64_t active_segment_base = 0;
};
// clean: one cleaner pass of a broker (compactor/cleaner.h's decision and counts).
struct Cleaned {
  int broker = 0;
  bool cleaned = false;
  int64_t first_dirty_offset = 0, first_uncleanable_offset = 0;
  double cleanable_ratio = 0;
  std::string reason;
  std::optional<int64_t> cleaner_checkpoint;  // after the pass
  int64_t tombstones_removed = 0, markers_removed = 0;
  // Coordinated mode only: the bounds the pass obeyed and what they held back.
  struct Coordinated {
    int64_t mtro = 0, mxro = 0;
    int64_t tombstones_held = 0, markers_held = 0;
  };
  std::optional<Coordinated> coordinated;
};
}  // namespace facts
using StepFacts = std::variant<std::monostate, facts::Produced, facts::TxnEnded, facts::BrokerDown, facts::BrokerUp,
                               facts::LeaderElected, facts::Rolled, facts::Cleaned>;

// One executed event, for the report.
struct SimStep {
  int step = 0;
  int64_t clock_ms = 0;
  std::string op;
  std::string text;  // one line for humans
  StepFacts detail;  // machine-readable facts of the step (monostate: none)
};

struct CoordinationReport {
  struct Replica {
    int broker = 0;
    std::optional<int64_t> mcco, mxfo;  // last report; nullopt = never reported
  };
  std::vector<Replica> replicas;
  std::optional<int64_t> mtro, mxro;  // nullopt = never computed (nothing removable)
};

struct BrokerSummary {
  int broker = 0;
  bool up = true;
  bool leader = false;
  ReplicaView view;
};

// Where replicas disagree about what they serve (read_committed).
struct DivergenceReport {
  // key -> broker -> value (nullopt = absent) for keys whose values differ.
  std::map<std::string, std::map<int, std::optional<std::string>>> key_values;
  std::map<int, int64_t> last_stable_offsets;  // filled only if they differ
  std::map<int, int64_t> log_end_offsets;      // filled only if they differ
  // Offsets several replicas hold as data, served by some and hidden (as aborted) by others.
  struct Visibility {
    int64_t offset = 0;
    std::vector<int> served_by, hidden_by;
  };
  std::vector<Visibility> visibility;
  bool diverged() const {
    return !key_values.empty() || !last_stable_offsets.empty() || !log_end_offsets.empty() || !visibility.empty();
  }
};

struct SimulationResult {
  std::string timeline;
  CoordinationMode mode = CoordinationMode::kUncoordinated;
  std::string out_dir;
  int64_t end_clock_ms = 0;
  std::vector<SimStep> steps;
  std::vector<BrokerSummary> brokers;
  CoordinationReport coordination;
  DivergenceReport divergence;
};

// Runs `timeline`, writing the broker directories to options.out_dir. Returns false with *error for
// an invalid timeline (the message starts with "timeline", naming the event), a refused out_dir or an
// I/O failure; out_dir is then not created.
bool RunSimulation(const Timeline& timeline, const SimulationOptions& options, SimulationResult* result,
                   std::string* error);

// Compares the views of the brokers that are up (used by RunSimulation; exposed for tests).
DivergenceReport CompareReplicas(const std::vector<BrokerSummary>& brokers);

}  // namespace klf
