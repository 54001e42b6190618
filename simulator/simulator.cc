#include "simulator/simulator.h"

#include "partition/coordination.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <set>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <variant>

#include "compactor/cleaner.h"
#include "compactor/config.h"
#include "segment_writer/batch_builder.h"
#include "segment_writer/file_writer.h"
#include "segment_writer/output_guard.h"
#include "segment_writer/scratch.h"
#include "segment_writer/txn_log_encoder.h"
#include "simulator/replica_log.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace fs = std::filesystem;
using json = nlohmann::json;

const char* CoordinationModeName(CoordinationMode m) {
  return m == CoordinationMode::kCoordinated ? "coordinated" : "uncoordinated";
}

// ---------------------------------------------------------------------------------------------
// Timeline parsing

namespace {

// The last epoch a producer may use (TransactionMetadata.isEpochExhausted: epoch >= Short.MAX_VALUE - 1
// allocates a new producer id; 32767 is left to the coordinator's final bump).
constexpr int16_t kLastProducerEpoch = 32766;

// A field's value as T; a value of another type is an error naming the field.
template <typename T>
T As(const json& v, const char* field) {
  try {
    return v.get<T>();
  } catch (const json::exception& x) {
    const std::string what = x.what();  // "[json.exception.type_error.302] type must be ..."
    const size_t bracket = what.find("] ");
    throw std::invalid_argument(
        fmt::format("\"{}\": {}", field, bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
}

// e[field] as T, or `fallback` when e has no such field.
template <typename T>
T Field(const json& e, const char* field, T fallback) {
  auto it = e.find(field);
  return it == e.end() ? fallback : As<T>(*it, field);
}

std::string Producer(const json& e) { return Field<std::string>(e, "producer", ""); }

// "broker" wins over "brokers"; each may be any JSON value a loop visits ("brokers": 2 is [2]).
BrokerTargets Targets(const json& e) {
  BrokerTargets t;
  if (e.contains("broker")) {
    t.from = BrokerTargets::From::kBroker;
    t.ids.push_back(Field<int>(e, "broker", 0));
  } else if (e.contains("brokers")) {
    t.from = BrokerTargets::From::kBrokers;
    for (const json& v : e.at("brokers")) t.ids.push_back(As<int>(v, "brokers"));
  }
  return t;
}

event::Produce ParseProduce(const json& e) {
  event::Produce p{Producer(e), {}, Field<std::string>(e, "batch", "single") != "each"};
  if (!e.contains("records")) throw std::invalid_argument("produce needs \"records\"");
  for (const json& r : e.at("records")) {
    if (!r.is_array() || r.size() != 2)
      throw std::invalid_argument("records must be [key, value] pairs (value null = tombstone)");
    std::optional<std::string> k, v;
    if (!r[0].is_null()) k = As<std::string>(r[0], "records");
    if (!r[1].is_null()) v = As<std::string>(r[1], "records");
    p.records.emplace_back(k, v);
  }
  return p;
}

event::Traffic ParseTraffic(const json& e) {
  event::Traffic t;
  t.producer = Producer(e);
  if (e.contains("keys")) {
    t.keys = Field<std::vector<std::string>>(e, "keys", {});
  } else {
    const std::string prefix = Field<std::string>(e, "key_prefix", "key-");
    const int n = Field<int>(e, "key_count", 10);
    for (int i = 0; i < n; i++) t.keys.push_back(fmt::format("{}{:02d}", prefix, i));
  }
  if (t.keys.empty()) throw std::invalid_argument("traffic needs at least one key");
  t.value_prefix = Field<std::string>(e, "value_prefix", "v");
  t.until_roll = Field<bool>(e, "until_roll", false);
  t.count = Field<int>(e, "count", t.until_roll ? 100000 : 10);
  t.key_offset = size_t(Field<int>(e, "key_offset", 0));
  return t;
}

using EventBody = decltype(TimelineEvent::body);
// Each op's fields (README "klf simulate"); a parser throws std::invalid_argument naming the field.
const std::map<std::string, EventBody (*)(const json&)> kEventParsers = {
    {"produce", [](const json& e) -> EventBody { return ParseProduce(e); }},
    {"traffic", [](const json& e) -> EventBody { return ParseTraffic(e); }},
    {"begin", [](const json& e) -> EventBody { return event::Begin{Producer(e)}; }},
    {"commit",
     [](const json& e) -> EventBody {
       return event::End{Producer(e), true, false};
     }},
    {"abort",
     [](const json& e) -> EventBody {
       return event::End{Producer(e), false, Field<bool>(e, "timeout", false)};
     }},
    {"down", [](const json& e) -> EventBody { return event::Down{Targets(e)}; }},
    {"up", [](const json& e) -> EventBody { return event::Up{Targets(e)}; }},
    {"leader", [](const json& e) -> EventBody { return event::Leader{Targets(e)}; }},
    {"advance",
     [](const json& e) -> EventBody {
       if (e.contains("to_ms")) return event::Advance{Field<int64_t>(e, "to_ms", 0), 0};
       return event::Advance{std::nullopt, Field<int64_t>(e, "ms", 0)};
     }},
    {"clean",
     [](const json& e) -> EventBody {
       return event::Clean{Targets(e), Field<bool>(e, "force", false)};
     }},
    {"roll", [](const json& e) -> EventBody { return event::Roll{Targets(e)}; }},
    {"note", [](const json& e) -> EventBody { return event::Note{Field<std::string>(e, "text", "")}; }},
};

// Line and column (from 1) of byte `offset` of `text`.
std::pair<int, int> LineColumn(const std::string& text, size_t offset) {
  int line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// The index of the closing quote of the JSON string that starts at text[i].
size_t StringEnd(const std::string& text, size_t i) {
  for (i++; i < text.size() && text[i] != '"'; i++) i += text[i] == '\\' ? 1 : 0;
  return i;
}

// Line and column (from 1) where each element of the top-level object's "events" array starts in
// `text` (JSON already known to be valid, so no string holds a raw newline): one pass, strings skipped
// whole, brackets counted.
std::vector<std::pair<int, int>> EventPositions(const std::string& text) {
  std::vector<std::pair<int, int>> out, current;
  int line = 1;
  size_t line_start = 0;
  std::string_view key;  // the last string at depth 1: the key of the value that follows
  int depth = 0;
  bool in_events = false, expect_element = false;
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if (c == '\n') {
      line++;
      line_start = i + 1;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (expect_element && c != ']') current.emplace_back(line, int(i - line_start) + 1);
    expect_element = false;
    switch (c) {
      case '"': {
        const size_t end = StringEnd(text, i);
        if (depth == 1) key = std::string_view(text).substr(i + 1, end - i - 1);
        i = end;
        break;
      }
      case '{':
      case '[':
        if (++depth == 2 && c == '[' && key == "events") {
          in_events = expect_element = true;
          current.clear();
        }
        break;
      case '}':
      case ']':
        if (depth-- == 2 && in_events) {
          out = current;  // a later "events" key wins, as in the parsed JSON
          in_events = false;
        }
        break;
      case ',': expect_element = in_events && depth == 2; break;
      default: break;
    }
  }
  return out;
}

std::string ConfigValueString(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return v.dump();
}

}  // namespace

std::string TimelineEvent::Where() const {
  const std::string at = line > 0 ? fmt::format("line {}, column {}", line, column) : "";
  if (op.empty() || at.empty()) return op.empty() && at.empty() ? "" : " (" + op + at + ")";
  return " (" + op + ", " + at + ")";
}

// The parser of e's "op"; kEventParsers.end() with *error when there is none.
static auto ParserOf(const json& e, std::string* error) {
  auto parser = e.is_object() && e.contains("op") && e.at("op").is_string()
                    ? kEventParsers.find(e.at("op").get<std::string>())
                    : kEventParsers.end();
  if (parser == kEventParsers.end()) {
    *error = fmt::format(
        "{} (one of produce, traffic, begin, commit, abort, down, up, leader, advance, clean, roll, note)",
        e.is_object() && e.contains("op")
            ? fmt::format("unknown \"op\" {}", e.at("op").dump(-1, ' ', false, json::error_handler_t::replace))
            : "needs \"op\"");
  }
  return parser;
}

bool ParseTimelineEvent(const json& e, TimelineEvent* out, std::string* error) {
  auto parser = ParserOf(e, error);
  if (parser == kEventParsers.end()) return false;
  out->op = parser->first;
  try {
    out->body = parser->second(e);
  } catch (const std::invalid_argument& x) {
    *error = x.what();
    return false;
  }
  return true;
}

bool Timeline::WritesCoordinatorLog() const {
  for (const auto& [name, p] : producers)
    if (p.transactional && p.transaction_version >= 0) return true;
  return false;
}

// One entry of "producers".
static bool ParseProducer(const std::string& name, const json& p, ProducerSpec* s, std::string* error) {
  s->name = name;
  s->transactional = p.value("transactional", false);
  bool idempotent = p.value("idempotent", s->transactional);
  s->producer_id = p.value("producer_id", int64_t(-1));
  if ((idempotent || s->transactional) && s->producer_id < 0) {
    *error = "timeline: producer " + name + ": an idempotent or transactional producer needs producer_id >= 0";
    return false;
  }
  if (!idempotent && !s->transactional) s->producer_id = -1;
  s->epoch = s->producer_id >= 0 ? p.value("epoch", int16_t(0)) : int16_t(-1);
  s->transactional_id = p.value("transactional_id", "");
  s->coordinator_epoch = p.value("coordinator_epoch", 0);
  std::string codec = p.value("compression", "none");
  auto c = CompressionFromName(codec);
  if (!c) {
    *error = "timeline: producer " + name + ": unknown compression " + codec;
    return false;
  }
  s->compression = *c;
  if (p.contains("transaction_version")) {
    const json& tv = p.at("transaction_version");
    if (!s->transactional || !tv.is_number_integer() || tv.get<int64_t>() < 0 || tv.get<int64_t>() > 2) {
      *error =
          "timeline: producer " + name + ": \"transaction_version\" must be 0, 1 or 2, on a transactional producer";
      return false;
    }
    s->transaction_version = tv.get<int>();
  }
  s->transaction_timeout_ms = p.value("transaction_timeout_ms", int32_t(60000));
  if (s->transaction_version == 2 && (s->epoch < 0 || s->epoch > kLastProducerEpoch)) {
    *error =
        fmt::format("timeline: producer {}: epoch must be 0..{} under transaction version 2", name, kLastProducerEpoch);
    return false;
  }
  return true;
}

// The timeline's own fields (ParseTimeline, and RunSimulation for timelines built in code).
static bool CheckTimeline(const Timeline& t, std::string* error) {
  if (t.brokers < 1 || t.brokers > 16) {
    *error = "timeline: brokers must be 1..16";
    return false;
  }
  if (t.leader < 1 || t.leader > t.brokers) {
    *error = "timeline: leader must name a broker 1.." + std::to_string(t.brokers);
    return false;
  }
  if (t.tp.topic.empty() || t.tp.partition < 0) {
    *error = "timeline: topic must be non-empty and partition >= 0";
    return false;
  }
  // The topic becomes a directory name (<topic>-<partition>): Kafka's own rule keeps it one.
  if (!ValidateTopicName(t.tp.topic, error)) {
    *error = "timeline: " + *error;
    return false;
  }
  return true;
}

// The "events" array, each with its line and column in `json_text`.
static bool ParseEvents(const json& events, const std::string& json_text, Timeline* out, std::string* error) {
  const std::vector<std::pair<int, int>> positions = EventPositions(json_text);
  out->events.resize(events.size());
  // Every event's op first: an unknown op is named before the fields of any event.
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < events.size(); i++) {
      TimelineEvent& e = out->events[i];
      if (i < positions.size()) std::tie(e.line, e.column) = positions[i];
      if (pass == 0 ? ParserOf(events[i], error) == kEventParsers.end() : !ParseTimelineEvent(events[i], &e, error)) {
        *error = fmt::format("timeline: event {}{}: {}", i, e.Where(), *error);
        return false;
      }
    }
  }
  return true;
}

bool ParseTimeline(const std::string& json_text, Timeline* out, std::string* error) {
  *out = Timeline{};
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    // Line and column of the byte where parsing stopped (nlohmann counts bytes from 1).
    const auto [line, column] = LineColumn(json_text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    size_t colon = what.rfind(": ");
    *error = fmt::format("timeline: invalid JSON at line {}, column {}: {}", line, column,
                         colon == std::string::npos ? what : what.substr(colon + 2));
    return false;
  }
  if (!j.is_object()) {
    *error = "timeline: not a JSON object";
    return false;
  }
  try {
    out->name = j.value("name", "");
    out->description = j.value("description", "");
    if (j.contains("topic")) out->tp.topic = j.at("topic").get<std::string>();
    if (j.contains("partition")) out->tp.partition = j.at("partition").get<int32_t>();
    out->brokers = j.value("brokers", 3);
    out->leader = j.value("leader", 1);
    out->start_ms = j.value("start_ms", int64_t(1700000000000));
    out->record_step_ms = j.value("record_step_ms", int64_t(200));
    if (!CheckTimeline(*out, error)) return false;
    if (j.contains("config")) {
      for (const auto& [k, v] : j.at("config").items()) out->config.emplace_back(k, ConfigValueString(v));
    }
    if (j.contains("producers")) {
      for (const auto& [name, p] : j.at("producers").items())
        if (!ParseProducer(name, p, &out->producers[name], error)) return false;
    }
    if (!j.contains("events") || !j.at("events").is_array()) {
      *error = "timeline: \"events\" must be an array";
      return false;
    }
    if (!ParseEvents(j.at("events"), json_text, out, error)) return false;
  } catch (const json::exception& e) {
    *error = std::string("timeline: ") + e.what();
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// The cluster

namespace {

struct ProducerRuntime {
  ProducerSpec spec;  // producer_id and epoch: the current ones (transaction version 2 moves them)
  int32_t next_sequence = 0;
  bool in_txn = false;
  bool txn_has_data = false;            // the partition was added to the transaction (a marker is due)
  int64_t txn_start_ms = -1;            // when the partition was added (the coordinator's TransactionStartTimestampMs)
  std::map<std::string, int> versions;  // traffic: writes per key
};

struct Broker {
  int id = 0;
  bool up = true;
  std::unique_ptr<ReplicaLog> log;
  std::unique_ptr<ReplicaLog> txn_log;  // __transaction_state-0, when the timeline writes it
  std::optional<int64_t> mcco, mxfo;    // last report to the coordinator
};

// A deterministic Kafka topic id (22 chars of URL-safe base64) from the topic name.
std::string TopicIdFor(const std::string& topic) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  uint64_t h = 1469598103934665603ull;
  std::string id;
  for (int i = 0; i < 22; i++) {
    for (char c : topic) h = (h ^ uint8_t(c)) * 1099511628211ull;
    h = (h ^ uint64_t(i)) * 1099511628211ull;
    id += kAlphabet[(h >> 20) % 64];
  }
  id[21] = 'A';  // the last character of a 16-byte Uuid in base64 carries 2 bits only
  return id;
}

class Cluster {
 public:
  Cluster(const Timeline& t, const SimulationOptions& o, SimulationResult* r) : t_(t), o_(o), r_(r) {}
  bool Run(const std::string& root, std::string* error);

 private:
  bool Setup(const std::string& root, std::string* error);
  bool SetupCoordinator(const std::string& root, std::string* error);
  bool Apply(const TimelineEvent& e, std::string* error);
  bool Do(const event::Note& x, const std::string& op, std::string* error);
  bool Do(const event::Advance& x, const std::string& op, std::string* error);
  bool Do(const event::Produce& x, const std::string& op, std::string* error);
  bool Do(const event::Traffic& x, const std::string& op, std::string* error);
  bool Do(const event::Begin& x, const std::string& op, std::string* error);
  bool Do(const event::End& x, const std::string& op, std::string* error);
  bool Do(const event::Down& x, const std::string& op, std::string* error);
  bool Do(const event::Up& x, const std::string& op, std::string* error);
  bool Do(const event::Leader& x, const std::string& op, std::string* error);
  bool Do(const event::Roll& x, const std::string& op, std::string* error);
  bool Do(const event::Clean& x, const std::string& op, std::string* error);
  ProducerRuntime* ProducerNamed(const std::string& name, std::string* error);
  void ElectLeader(int id);
  bool Produce(ProducerRuntime& p, const event::Records& records, bool one_batch, std::string* error);
  bool EndTxn(ProducerRuntime& p, ControlType type, bool timeout, facts::TxnEnded* detail, std::string* error);
  bool WriteTxnState(const ProducerRuntime& p, TxnLogStatus status, int64_t producer_id, int16_t epoch,
                     int64_t previous_producer_id, int64_t next_producer_id, std::string* error);
  bool AppendAsLeader(const std::string& chunk, std::string* error);
  using LogOf = std::unique_ptr<ReplicaLog> Broker::*;  // &Broker::log or &Broker::txn_log
  bool Replicate(LogOf log, std::string* error);
  static bool CatchUpLog(const ReplicaLog& from, ReplicaLog& to, int64_t now_ms, int* fetches, int64_t* bytes,
                         std::string* error);
  bool Clean(Broker& b, bool force, facts::Cleaned* detail, std::string* error);
  void Tick();
  void SetClock(int64_t ms);
  std::vector<Broker*> Targets(const BrokerTargets& t, std::string* error);
  Broker& leader() { return brokers_[leader_ - 1]; }
  void Step(const std::string& op, std::string text, StepFacts detail = {});

  const Timeline& t_;
  const SimulationOptions& o_;
  SimulationResult* r_;
  CleanerConfig cleaner_;
  LogConfig log_config_;
  std::vector<Broker> brokers_;
  std::map<std::string, ProducerRuntime> producers_;
  int leader_ = 1;
  int32_t leader_epoch_ = 0;
  int64_t clock_ = 0;
  std::string scratch_;
  std::optional<int64_t> mtro_, mxro_;
  size_t event_index_ = 0;
  // The coordinator (simulator.cc, "The coordinator's log").
  bool coordinator_log_ = false;
  int64_t next_free_producer_id_ = 0;  // the coordinator's ProducerIdManager: ids above every id in use
};

void Cluster::Step(const std::string& op, std::string text, StepFacts detail) {
  SimStep s;
  s.step = int(r_->steps.size()) + 1;
  s.clock_ms = clock_;
  s.op = op;
  s.text = std::move(text);
  s.detail = std::move(detail);
  r_->steps.push_back(std::move(s));
}

bool Cluster::Setup(const std::string& root, std::string* error) {
  cleaner_.compact = true;
  cleaner_.delete_policy = false;
  for (const auto& [k, v] : t_.config) {
    if (!cleaner_.Set(k, v, error)) {
      *error = "timeline: config " + k + ": " + *error;
      return false;
    }
  }
  log_config_.segment_bytes = cleaner_.segment_bytes;
  log_config_.segment_index_bytes = cleaner_.segment_index_bytes;
  log_config_.index_interval_bytes = cleaner_.index_interval_bytes;
  for (const auto& [name, spec] : t_.producers) producers_[name].spec = spec;
  clock_ = t_.start_ms;
  leader_ = t_.leader;
  scratch_ = root + "/.klf-simulate-scratch";
  if (!o_.env->CreateDir(scratch_, error)) return false;
  std::string topic_id = TopicIdFor(t_.tp.topic);
  for (int i = 1; i <= t_.brokers; i++) {
    Broker b;
    b.id = i;
    b.log = ReplicaLog::Create(o_.env, root + "/broker" + std::to_string(i), t_.tp, topic_id, i, log_config_,
                               ProducerStateOptions{cleaner_.producer_id_expiration_ms}, error);
    if (!b.log) return false;
    brokers_.push_back(std::move(b));
  }
  leader().log->AssignLeaderEpoch(leader_epoch_);
  return t_.WritesCoordinatorLog() ? SetupCoordinator(root, error) : true;
}

// ---------------------------------------------------------------------------------------------
// The coordinator's log
//
// A timeline whose transactional producers state their transaction_version also gets the
// transaction coordinator's partition, `__transaction_state-0`, on every broker's log dir: the
// TransactionLog records Kafka's coordinator writes at each state transition of a transactional id
// (segment_writer/txn_log_encoder.h):
//   InitProducerId                 -> Empty          (at the start of the timeline, at the spec's epoch)
//   first data of a transaction    -> Ongoing        (AddPartitionsToTxn, or TV2's implicit add)
//   commit / abort                 -> PrepareCommit / PrepareAbort, then the markers,
//                                     then CompleteCommit / CompleteAbort
// An empty transaction (no data) writes nothing: the client completes it without the coordinator.
//
// It is replicated like any partition, not copied: its leader is the data partition's leader (the
// same broker and leader epoch, so both partitions change leader together); followers that are up
// fetch it after each write, a broker that is down misses the writes and fetches them when it
// returns. So what a broker's copy holds is what that broker could know, and a copy that lacks the
// coordinator's decision is a real possibility diff must cope with. It is compacted in Kafka, but no
// timeline writes enough to make its cleaner run: the simulator never cleans it.
bool Cluster::SetupCoordinator(const std::string& root, std::string* error) {
  coordinator_log_ = true;
  const TopicPartition txn_tp{"__transaction_state", 0};
  if (t_.tp == txn_tp) {
    *error = "timeline: the topic __transaction_state-0 is the coordinator's own partition";
    return false;
  }
  // transaction.state.log.segment.bytes (100 MiB); index interval and index size are Kafka's defaults.
  LogConfig config;
  config.segment_bytes = 100 << 20;
  for (Broker& b : brokers_) {
    b.txn_log = ReplicaLog::Create(o_.env, root + "/broker" + std::to_string(b.id), txn_tp, TopicIdFor(txn_tp.topic),
                                   b.id, config, ProducerStateOptions{cleaner_.producer_id_expiration_ms}, error);
    if (!b.txn_log) return false;
  }
  leader().txn_log->AssignLeaderEpoch(leader_epoch_);
  for (const auto& [name, p] : producers_)
    next_free_producer_id_ = std::max(next_free_producer_id_, p.spec.producer_id + 1);
  for (const auto& [name, p] : producers_) {
    if (!p.spec.transactional || p.spec.transaction_version < 0) continue;
    if (p.spec.transactional_id.empty()) {
      *error = "timeline: producer " + name + ": a transaction_version needs a \"transactional_id\"";
      return false;
    }
    if (!WriteTxnState(p, TxnLogStatus::kEmpty, p.spec.producer_id, p.spec.epoch, p.spec.producer_id, -1, error))
      return false;
  }
  return true;
}

// One TransactionLog record of `p`'s transactional id, appended by the leader and replicated.
// previous_producer_id is what Kafka's TxnTransitMetadata carries: the producer id before the
// transition (the old id on the Complete record of a producer-id rollover, else the current id).
bool Cluster::WriteTxnState(const ProducerRuntime& p, TxnLogStatus status, int64_t producer_id, int16_t epoch,
                            int64_t previous_producer_id, int64_t next_producer_id, std::string* error) {
  TxnLogValue v;
  // TransactionVersion.transactionLogValueVersion: 0 under TV0, 1 (flexible, tagged fields) from TV1.
  v.version = p.spec.transaction_version >= 1 ? 1 : 0;
  v.producer_id = producer_id;
  v.producer_epoch = epoch;
  v.transaction_timeout_ms = p.spec.transaction_timeout_ms;
  v.transaction_status = int8_t(status);
  v.last_update_timestamp_ms = clock_;
  v.start_timestamp_ms = status == TxnLogStatus::kEmpty ? -1 : p.txn_start_ms;
  if (status == TxnLogStatus::kOngoing || status == TxnLogStatus::kPrepareCommit ||
      status == TxnLogStatus::kPrepareAbort) {
    v.partitions = std::vector<TxnLogPartitions>{{t_.tp.topic, {t_.tp.partition}}};
  } else if (status != TxnLogStatus::kEmpty) {
    v.partitions = std::vector<TxnLogPartitions>{};  // Complete*: an empty (not null) list
  }
  if (v.version >= 1) {
    v.previous_producer_id = previous_producer_id;
    v.next_producer_id = next_producer_id;
    v.client_transaction_version = int16_t(p.spec.transaction_version);
  }
  std::string value;
  if (!EncodeTxnLogValue(v, &value, error)) return false;
  TxnLogRecordOptions o;
  o.offset = leader().txn_log->log_end_offset();
  o.partition_leader_epoch = leader_epoch_;
  o.timestamp = clock_;
  std::string chunk;
  BuiltBatch built;
  if (!AppendTxnLogRecord(o, EncodeTxnLogKey(p.spec.transactional_id), value, &chunk, &built, error)) return false;
  if (!leader().txn_log->AppendChunk(chunk, clock_, error)) return false;
  return Replicate(&Broker::txn_log, error);
}

void Cluster::SetClock(int64_t ms) {
  if (ms != clock_) {
    clock_ = ms;
    // producer.id.expiration.check.interval.ms modelled as: checked whenever the clock moves.
    for (Broker& b : brokers_)
      if (b.up) b.log->RemoveExpiredProducers(clock_);
  }
}

// The coordinator's tick (Redpanda's compaction_coordinator, offline): every replica that is up
// reports; MTRO/MXRO are recomputed only once all have reported, and never move backwards.
void Cluster::Tick() {
  if (o_.mode != CoordinationMode::kCoordinated) return;
  for (Broker& b : brokers_) {
    if (!b.up) continue;
    CoordinationOffsets c =
        CoordinationOffsetsOf(b.log->log_start_offset(), b.log->log_end_offset(), b.log->cleaner_checkpoint(),
                              b.log->producer_state().FirstUndecidedOffset());
    b.mcco = c.mcco;
    b.mxfo = c.mxfo;
  }
  std::optional<int64_t> mtro, mxro;
  for (const Broker& b : brokers_) {
    if (!b.mcco) return;  // a replica that never reported freezes removal
    mtro = mtro ? std::min(*mtro, *b.mcco) : *b.mcco;
    mxro = mxro ? std::min(*mxro, *b.mxfo) : *b.mxfo;
  }
  if (!mtro_ || *mtro > *mtro_) mtro_ = mtro;
  if (!mxro_ || *mxro > *mxro_) mxro_ = mxro;
}

bool Cluster::AppendAsLeader(const std::string& chunk, std::string* error) {
  if (!leader().log->AppendChunk(chunk, clock_, error)) return false;
  return Replicate(&Broker::log, error);
}

bool Cluster::CatchUpLog(const ReplicaLog& l, ReplicaLog& f, int64_t now_ms, int* fetches, int64_t* bytes,
                         std::string* error) {
  if (f.log_end_offset() > l.log_end_offset()) {
    *error = fmt::format(
        "{} has log end offset {} beyond the leader's {}: divergent suffixes need leader-epoch truncation, which "
        "the simulator does not model",
        f.dir(), f.log_end_offset(), l.log_end_offset());
    return false;
  }
  for (int guard = 0; guard < 1000000 && f.log_end_offset() < l.log_end_offset(); guard++) {
    std::string chunk;
    if (!l.ReadForFetch(f.log_end_offset(), &chunk, error)) return false;
    if (chunk.empty()) break;
    if (!f.AppendChunk(chunk, now_ms, error)) return false;
    (*fetches)++;
    *bytes += int64_t(chunk.size());
  }
  return true;
}

// Every follower that is up fetches `log` (the data partition or the coordinator's) from the leader:
// every replica that is up is in the ISR and caught up, the high watermark is the leader's log end.
bool Cluster::Replicate(LogOf log, std::string* error) {
  for (Broker& b : brokers_) {
    if (!b.up || b.id == leader_) continue;
    int fetches = 0;
    int64_t bytes = 0;
    if (!CatchUpLog(*(leader().*log), *(b.*log), clock_, &fetches, &bytes, error)) return false;
  }
  const int64_t hw = (leader().*log)->log_end_offset();
  for (Broker& b : brokers_)
    if (b.up) (b.*log)->set_high_watermark(hw);
  return true;
}
// NOLINTNEXTLINE(readability-function-cognitive-complexity): Kafka's produce path checks (epoch, sequence, transaction) in Kafka's order
bool Cluster::Produce(ProducerRuntime& p, const event::Records& records, bool one_batch, std::string* error) {
  if (p.spec.transactional && !p.in_txn) {
    *error = "producer " + p.spec.name + " is transactional: \"begin\" a transaction first";
    return false;
  }
  if (p.spec.transactional && !p.txn_has_data && !records.empty()) {
    // The partition joins the transaction: the coordinator records it (Ongoing) before the data.
    p.txn_start_ms = clock_;
    if (coordinator_log_ && p.spec.transaction_version >= 0 &&
        !WriteTxnState(p, TxnLogStatus::kOngoing, p.spec.producer_id, p.spec.epoch, p.spec.producer_id, -1, error))
      return false;
  }
  size_t i = 0;
  while (i < records.size()) {
    size_t n = one_batch ? records.size() : 1;
    int64_t base = leader().log->log_end_offset();
    std::vector<RecordInput> in;
    for (size_t k = 0; k < n; k++) {
      const auto& [key, value] = records[i + k];
      if (!key) {
        // A compacted topic's leader rejects records without a key (LogValidator).
        *error = "a compacted topic rejects records with a null key";
        return false;
      }
      RecordInput r;
      r.offset = base + int64_t(k);
      r.timestamp = clock_;
      r.key = AsBytes(*key);
      if (value) r.value = AsBytes(*value);
      in.push_back(r);
      SetClock(JavaAdd(clock_, t_.record_step_ms));
    }
    // Timestamps were taken before each step; the batch is appended at the current clock.
    V2BatchOptions bo;
    bo.base_offset = base;
    bo.partition_leader_epoch = leader_epoch_;
    bo.compression = p.spec.compression;
    bo.producer_id = p.spec.producer_id;
    bo.producer_epoch = p.spec.epoch;
    bo.base_sequence = p.spec.producer_id >= 0 ? p.next_sequence : -1;
    bo.is_transactional = p.spec.transactional;
    std::string chunk;
    BuiltBatch built;
    if (!AppendV2Batch(bo, in, &chunk, &built, error)) return false;
    if (p.spec.producer_id >= 0) p.next_sequence = IncrementSequence(p.next_sequence, int32_t(n));
    if (p.spec.transactional) p.txn_has_data = true;
    if (!AppendAsLeader(chunk, error)) return false;
    i += n;
  }
  return true;
}

// The end of a transaction as the coordinator runs it (TransactionCoordinator.endTransaction,
// TransactionMetadata.prepareAbortOrCommit / prepareComplete): PrepareCommit/PrepareAbort, the
// markers, then CompleteCommit/CompleteAbort. Under transaction version 2 the epoch is bumped at the
// prepare step, so the marker carries data epoch + 1 and the producer continues at that epoch with
// sequence 0; when the data epoch is already 32766 the coordinator allocates the next producer id
// (NextProducerId on the prepare record), the marker still goes out as (old id, 32767), and the
// producer continues as (new id, epoch 0).
//
// `timeout`: the coordinator aborts the transaction itself, at its time-out
// (TransactionCoordinator.abortTimedOutTransactions): prepareFenceProducerEpoch bumps the epoch to
// e+1 first, and under transaction version 2 prepareAbortOrCommit bumps it again, so the ABORT carries
// e+1 (TV0/1) or e+2 (TV2). The fenced client then initializes again (InitProducerId: one more bump,
// an Empty record) and continues from sequence 0 at e+2 (TV0/1) or e+3 (TV2).
//
// `detail` gets the producer id and epochs (transaction version stated, or a time-out).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): the coordinator's EndTxn steps (transaction version 0/1 and 2) in Kafka's order
bool Cluster::EndTxn(ProducerRuntime& p, ControlType type, bool timeout, facts::TxnEnded* detail, std::string* error) {
  if (!p.spec.transactional || !p.in_txn) {
    *error = "producer " + p.spec.name + " has no open transaction";
    return false;
  }
  if (timeout && (type != ControlType::kAbort || !p.txn_has_data)) {
    *error = "only the coordinator's abort of a transaction that wrote to the partition (Ongoing) can time out";
    return false;
  }
  p.in_txn = false;
  if (!p.txn_has_data) return true;  // the coordinator writes markers only to partitions in the transaction
  p.txn_has_data = false;
  const bool commit = type == ControlType::kCommit;
  const bool tv2 = p.spec.transaction_version >= 2;
  const bool logged = coordinator_log_ && p.spec.transaction_version >= 0;
  const int64_t producer_id = p.spec.producer_id;
  const int16_t data_epoch = p.spec.epoch;
  int16_t marker_epoch = data_epoch;
  int64_t next_producer_id = -1;
  if (timeout) {
    // The fence, the TV2 bump and the client's new InitProducerId must all fit below 32767.
    const int bumps = tv2 ? 3 : 2;
    if (data_epoch + bumps > kLastProducerEpoch) {
      *error = fmt::format("a time-out at epoch {} would exhaust the producer's epochs (not modelled)", data_epoch);
      return false;
    }
    marker_epoch = int16_t(data_epoch + (tv2 ? 2 : 1));
  } else if (tv2) {
    if (data_epoch >= kLastProducerEpoch) next_producer_id = next_free_producer_id_++;
    marker_epoch = int16_t(data_epoch + 1);
  }
  if (logged && !WriteTxnState(p, commit ? TxnLogStatus::kPrepareCommit : TxnLogStatus::kPrepareAbort, producer_id,
                               marker_epoch, producer_id, next_producer_id, error))
    return false;
  EndTxnMarkerOptions m;
  m.offset = leader().log->log_end_offset();
  m.partition_leader_epoch = leader_epoch_;
  m.producer_id = producer_id;
  m.producer_epoch = marker_epoch;
  m.timestamp = clock_;
  m.type = type;
  m.coordinator_epoch = p.spec.coordinator_epoch;
  std::string chunk;
  BuiltBatch built;
  if (!AppendEndTxnMarker(m, &chunk, &built, error)) return false;
  if (!AppendAsLeader(chunk, error)) return false;
  if (tv2 && !timeout) {
    if (next_producer_id >= 0) {
      p.spec.producer_id = next_producer_id;
      p.spec.epoch = 0;
    } else {
      p.spec.epoch = marker_epoch;
    }
    p.next_sequence = 0;
  }
  const int16_t complete_epoch = timeout ? marker_epoch : p.spec.epoch;
  if (logged && !WriteTxnState(p, commit ? TxnLogStatus::kCompleteCommit : TxnLogStatus::kCompleteAbort,
                               p.spec.producer_id, complete_epoch, producer_id, -1, error))
    return false;
  if (timeout) {
    // The fenced client's InitProducerId (prepareIncrementProducerEpoch): Empty at the next epoch.
    p.spec.epoch = int16_t(marker_epoch + 1);
    p.next_sequence = 0;
    if (logged && !WriteTxnState(p, TxnLogStatus::kEmpty, producer_id, p.spec.epoch, producer_id, -1, error))
      return false;
    detail->timeout = true;
    detail->next_epoch = p.spec.epoch;
  }
  if (p.spec.transaction_version >= 0 || timeout) {
    if (p.spec.transaction_version >= 0) detail->transaction_version = p.spec.transaction_version;
    detail->producer_id = producer_id;
    detail->data_epoch = data_epoch;
    detail->marker_epoch = marker_epoch;
    if (next_producer_id >= 0) detail->next_producer_id = next_producer_id;
  }
  return true;
}

bool Cluster::Clean(Broker& b, bool force, facts::Cleaned* detail, std::string* error) {
  Tick();
  CompactOptions co;
  co.config = cleaner_;
  co.now = clock_;
  co.only_if_eligible = !force;
  if (o_.mode == CoordinationMode::kCoordinated) {
    // Never computed = nothing removable (exclusive bound 0).
    co.max_tombstone_remove_offset = mtro_.value_or(0);
    co.max_tx_end_remove_offset = mxro_.value_or(0);
  }
  CollectingSink sink;
  PassReport pr;
  if (!b.log->Clean(co, scratch_, &pr, &sink, error)) {
    *error = fmt::format("broker {}: cleaning: {}", b.id, *error);
    return false;
  }
  const CleaningDecision& d = pr.decision;
  detail->broker = b.id;
  detail->cleaned = pr.cleaned;
  detail->first_dirty_offset = d.offsets.first_dirty_offset;
  detail->first_uncleanable_offset = d.range.first_uncleanable_offset;
  detail->cleanable_ratio = d.range.cleanable_ratio;
  detail->reason = d.reason;
  detail->cleaner_checkpoint = b.log->cleaner_checkpoint();
  detail->tombstones_removed = pr.stats.tombstones_removed;
  detail->markers_removed = pr.stats.markers_removed;
  if (o_.mode == CoordinationMode::kCoordinated) {
    detail->coordinated = facts::Cleaned::Coordinated{*co.max_tombstone_remove_offset, *co.max_tx_end_remove_offset,
                                                      pr.stats.tombstones_held, pr.stats.markers_held};
  }
  Tick();  // the new checkpoint is reported at once
  return true;
}

std::vector<Broker*> Cluster::Targets(const BrokerTargets& t, std::string* error) {
  std::vector<Broker*> out;
  if (t.from == BrokerTargets::From::kAllUp) {
    for (Broker& b : brokers_)
      if (b.up) out.push_back(&b);
    return out;
  }
  for (int id : t.ids) {
    if (id < 1 || id > int(brokers_.size())) {
      *error = "no broker " + std::to_string(id);
      return {};
    }
    out.push_back(&brokers_[id - 1]);
  }
  return out;
}

ProducerRuntime* Cluster::ProducerNamed(const std::string& name, std::string* error) {
  auto it = producers_.find(name);
  if (it == producers_.end()) {
    *error = "unknown producer \"" + name + "\"";
    return nullptr;
  }
  return &it->second;
}

// A new leader for both partitions (the data partition and the coordinator's), at the next leader epoch.
void Cluster::ElectLeader(int id) {
  leader_ = id;
  leader_epoch_++;
  leader().log->AssignLeaderEpoch(leader_epoch_);
  if (coordinator_log_) leader().txn_log->AssignLeaderEpoch(leader_epoch_);
}

bool Cluster::Apply(const TimelineEvent& e, std::string* error) {
  return std::visit([&](const auto& x) { return Do(x, e.op, error); }, e.body);
}

bool Cluster::Do(const event::Note& x, const std::string& op, std::string* /*error*/) {
  Step(op, x.text);
  return true;
}

bool Cluster::Do(const event::Advance& x, const std::string& op, std::string* error) {
  const int64_t to = x.to_ms ? *x.to_ms : JavaAdd(clock_, x.ms);
  if (to < clock_) {
    *error = "the clock cannot go backwards";
    return false;
  }
  SetClock(to);
  Step(op, fmt::format("clock -> {}", clock_));
  return true;
}

bool Cluster::Do(const event::Produce& x, const std::string& op, std::string* error) {
  ProducerRuntime* p = ProducerNamed(x.producer, error);
  if (p == nullptr) return false;
  int64_t first = leader().log->log_end_offset();
  if (!Produce(*p, x.records, x.one_batch, error)) return false;
  int64_t last = leader().log->log_end_offset() - 1;
  facts::Produced d{p->spec.name, std::nullopt, first, last};
  std::string what;
  for (const auto& [k, v] : x.records) what += (what.empty() ? "" : ", ") + *k + "=" + (v ? *v : "<tombstone>");
  Step(op, fmt::format("{} wrote {} at offsets {}..{} (leader {})", p->spec.name, what, first, last, leader_), d);
  return true;
}

bool Cluster::Do(const event::Traffic& x, const std::string& op, std::string* error) {
  ProducerRuntime* p = ProducerNamed(x.producer, error);
  if (p == nullptr) return false;
  int64_t first = leader().log->log_end_offset();
  int64_t base = leader().log->active_base_offset();
  int written = 0;
  for (; written < x.count; written++) {
    if (x.until_roll && leader().log->active_base_offset() != base) break;
    const std::string& k = x.keys[(x.key_offset + size_t(written)) % x.keys.size()];
    int version = ++p->versions[k];
    if (!Produce(*p, {{k, x.value_prefix + std::to_string(version)}}, true, error)) return false;
  }
  int64_t last = leader().log->log_end_offset() - 1;
  Step(op,
       fmt::format(
           "{} wrote {} keyed records at offsets {}..{}{}", p->spec.name, written, first, last,
           x.until_roll ? fmt::format(" (until the leader rolled to {})", leader().log->active_base_offset()) : ""),
       facts::Produced{p->spec.name, written, first, last});
  return true;
}

bool Cluster::Do(const event::Begin& x, const std::string& op, std::string* error) {
  ProducerRuntime* p = ProducerNamed(x.producer, error);
  if (p == nullptr) return false;
  if (!p->spec.transactional || p->in_txn) {
    *error = "producer " + p->spec.name +
             (p->spec.transactional ? " already has an open transaction" : " is not transactional");
    return false;
  }
  p->in_txn = true;
  p->txn_has_data = false;
  Step(op, p->spec.name + " begins a transaction");
  return true;
}

bool Cluster::Do(const event::End& x, const std::string& op, std::string* error) {
  ProducerRuntime* p = ProducerNamed(x.producer, error);
  if (p == nullptr) return false;
  int64_t at = leader().log->log_end_offset();
  bool had_data = p->txn_has_data;
  facts::TxnEnded d;
  d.producer = p->spec.name;
  d.marker_offset = at;
  if (!EndTxn(*p, x.commit ? ControlType::kCommit : ControlType::kAbort, x.timeout, &d, error)) return false;
  std::string up;
  for (const Broker& b : brokers_)
    if (b.up) up += (up.empty() ? "" : ",") + std::to_string(b.id);
  Step(op,
       had_data ? fmt::format("{} {}s: {} marker at offset {} (on brokers {})", p->spec.name, op,
                              x.commit ? "COMMIT" : (x.timeout ? "ABORT (transaction time-out)" : "ABORT"), at, up)
                : fmt::format("{} {}s an empty transaction (no marker on this partition)", p->spec.name, op),
       had_data ? StepFacts(d) : StepFacts());
  return true;
}

bool Cluster::Do(const event::Down& x, const std::string& op, std::string* error) {
  std::vector<Broker*> bs = Targets(x.brokers, error);
  if (bs.empty() && error->empty()) *error = op + " needs \"broker\"";
  if (bs.empty()) return false;
  for (Broker* b : bs) {
    if (!b->up) {
      *error = fmt::format("broker {} is already down", b->id);
      return false;
    }
    // Controlled shutdown: the active segment, a snapshot at the log end and the checkpoints.
    if (!b->log->Flush(true, clock_, error)) return false;
    if (b->txn_log && !b->txn_log->Flush(true, clock_, error)) return false;
    b->up = false;
    facts::BrokerDown d{b->id, b->log->log_end_offset(), b->log->last_stable_offset(), std::nullopt};
    std::string extra;
    if (b->id == leader_) {
      auto next = std::find_if(brokers_.begin(), brokers_.end(), [](const Broker& c) { return c.up; });
      if (next == brokers_.end()) {
        *error = "every broker is down: no leader can be elected";
        return false;
      }
      ElectLeader(next->id);
      extra = fmt::format("; broker {} becomes leader (epoch {})", leader_, leader_epoch_);
      d.new_leader = leader_;
    }
    Step(op, fmt::format("broker {} shuts down at log end offset {}{}", b->id, b->log->log_end_offset(), extra), d);
  }
  return true;
}

bool Cluster::Do(const event::Up& x, const std::string& op, std::string* error) {
  std::vector<Broker*> bs = Targets(x.brokers, error);
  if (bs.empty() && error->empty()) *error = op + " needs \"broker\"";
  if (bs.empty()) return false;
  for (Broker* b : bs) {
    if (b->up) {
      *error = fmt::format("broker {} is already up", b->id);
      return false;
    }
    b->up = true;
    b->log->RemoveExpiredProducers(clock_);  // a restart reloads producer state at the current time
    int64_t from = b->log->log_end_offset();
    int fetches = 0;
    int64_t bytes = 0;
    if (!CatchUpLog(*leader().log, *b->log, clock_, &fetches, &bytes, error)) return false;
    b->log->set_high_watermark(leader().log->high_watermark());
    if (coordinator_log_) {
      // The coordinator's partition catches up too (not counted in the data fetches above).
      int txn_fetches = 0;
      int64_t txn_bytes = 0;
      if (!CatchUpLog(*leader().txn_log, *b->txn_log, clock_, &txn_fetches, &txn_bytes, error)) return false;
      b->txn_log->set_high_watermark(leader().txn_log->high_watermark());
    }
    Tick();
    Step(op,
         fmt::format("broker {} returns and fetches {}..{} from leader {} ({} fetches, {} bytes)", b->id, from,
                     b->log->log_end_offset(), leader_, fetches, bytes),
         facts::BrokerUp{b->id, from, b->log->log_end_offset(), fetches, bytes, b->log->last_stable_offset()});
  }
  return true;
}

bool Cluster::Do(const event::Leader& x, const std::string& op, std::string* error) {
  std::vector<Broker*> bs = Targets(x.brokers, error);
  if (bs.size() != 1 || x.brokers.from != BrokerTargets::From::kBroker) {
    if (error->empty()) *error = "leader needs \"broker\"";
    return false;
  }
  if (!bs[0]->up) {
    *error = fmt::format("broker {} is down and cannot become leader", bs[0]->id);
    return false;
  }
  ElectLeader(bs[0]->id);
  Tick();
  Step(op, fmt::format("broker {} becomes leader (epoch {})", leader_, leader_epoch_),
       facts::LeaderElected{leader_, leader_epoch_});
  return true;
}

bool Cluster::Do(const event::Roll& x, const std::string& op, std::string* error) {
  std::vector<Broker*> bs = Targets(x.brokers, error);
  if (!error->empty()) return false;
  for (Broker* b : bs) {
    if (!b->up) {
      *error = fmt::format("broker {} is down", b->id);
      return false;
    }
    if (!b->log->Roll(clock_, error)) return false;
    Step(op, fmt::format("broker {} rolls its active segment (new base {})", b->id, b->log->active_base_offset()),
         facts::Rolled{b->id, b->log->active_base_offset()});
  }
  return true;
}

bool Cluster::Do(const event::Clean& x, const std::string& op, std::string* error) {
  std::vector<Broker*> bs = Targets(x.brokers, error);
  if (!error->empty()) return false;
  for (Broker* b : bs) {
    if (!b->up) {
      *error = fmt::format("broker {} is down: its cleaner cannot run", b->id);
      return false;
    }
    facts::Cleaned d;
    if (!Clean(*b, x.force, &d, error)) return false;
    std::string text = fmt::format("broker {} cleaner: ", b->id);
    if (d.cleaned) {
      text +=
          fmt::format("cleaned {}..{}, checkpoint {}, tombstones removed {}, markers removed {}", d.first_dirty_offset,
                      d.first_uncleanable_offset, d.cleaner_checkpoint ? std::to_string(*d.cleaner_checkpoint) : "null",
                      d.tombstones_removed, d.markers_removed);
    } else {
      text += "nothing cleaned (" + d.reason + ")";
    }
    if (d.coordinated)
      text += fmt::format(" [MTRO {} MXRO {}; held back: {} tombstones, {} markers]", d.coordinated->mtro,
                          d.coordinated->mxro, d.coordinated->tombstones_held, d.coordinated->markers_held);
    Step(op, text, d);
  }
  return true;
}

bool Cluster::Run(const std::string& root, std::string* error) {
  if (!Setup(root, error)) return false;
  Tick();
  for (event_index_ = 0; event_index_ < t_.events.size(); event_index_++) {
    const TimelineEvent& e = t_.events[event_index_];
    error->clear();
    if (!Apply(e, error)) {
      *error = fmt::format("timeline event {}{}: {}", event_index_, e.Where(), *error);
      return false;
    }
  }
  // Controlled shutdown of every broker still up: the directories are what is left on disk.
  for (Broker& b : brokers_) {
    if (b.up && !b.log->Flush(true, clock_, error)) return false;
    if (b.up && b.txn_log && !b.txn_log->Flush(true, clock_, error)) return false;
  }
  Tick();
  r_->end_clock_ms = clock_;
  for (const Broker& b : brokers_)
    r_->coordination.replicas.push_back(CoordinationReport::Replica{b.id, b.mcco, b.mxfo});
  r_->coordination.mtro = mtro_;
  r_->coordination.mxro = mxro_;
  for (const Broker& b : brokers_) {
    BrokerSummary s;
    s.broker = b.id;
    s.up = b.up;
    s.leader = b.id == leader_;
    r_->brokers.push_back(std::move(s));
  }
  std::string ignored;
  o_.env->RemoveDirRecursively(scratch_, &ignored);
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one comparison per replica field
DivergenceReport CompareReplicas(const std::vector<BrokerSummary>& all) {
  DivergenceReport d;
  // A broker still down at the end lags (it will catch up when it returns); only replicas that are up
  // and caught up are compared.
  std::vector<BrokerSummary> brokers;
  for (const auto& b : all)
    if (b.up) brokers.push_back(b);
  if (brokers.size() < 2) return d;
  std::set<std::string> keys;
  for (const auto& b : brokers)
    for (const auto& [k, v] : b.view.key_values) keys.insert(k);
  for (const std::string& k : keys) {
    std::map<int, std::optional<std::string>> values;
    std::set<std::optional<std::string>> distinct;
    for (const auto& b : brokers) {
      auto it = b.view.key_values.find(k);
      std::optional<std::string> v = it == b.view.key_values.end() ? std::nullopt : std::optional(it->second);
      values[b.broker] = v;
      distinct.insert(v);
    }
    if (distinct.size() > 1) d.key_values[k] = values;
  }
  std::set<int64_t> lsos, leos;
  for (const auto& b : brokers) {
    lsos.insert(b.view.log.last_stable_offset);
    leos.insert(b.view.log.log_end_offset);
  }
  for (const auto& b : brokers) {
    if (lsos.size() > 1) d.last_stable_offsets[b.broker] = b.view.log.last_stable_offset;
    if (leos.size() > 1) d.log_end_offsets[b.broker] = b.view.log.log_end_offset;
  }
  std::map<int64_t, DivergenceReport::Visibility> vis;
  for (const auto& b : brokers) {
    for (const auto& r : b.view.read_committed) vis[r.offset].served_by.push_back(b.broker);
    for (int64_t o : b.view.hidden_offsets) vis[o].hidden_by.push_back(b.broker);
  }
  for (auto& [offset, v] : vis) {
    if (v.served_by.empty() || v.hidden_by.empty()) continue;
    v.offset = offset;
    d.visibility.push_back(v);
  }
  return d;
}

namespace {

// Copies a directory tree keeping modification times (the cleaner reads segment mtimes).
bool CopyTree(Env* env, const std::string& from, const std::string& to, std::string* error) {
  if (!env->CreateDir(to, error)) return false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(from, ec)) {
    const std::string target = to + "/" + e.path().filename().string();
    if (!(e.is_directory() ? CopyTree(env, e.path().string(), target, error)
                           : env->CopyFile(e.path().string(), target, error)))
      return false;
  }
  if (ec) *error = from + ": " + ec.message();
  return !ec;
}

}  // namespace

bool RunSimulation(const Timeline& timeline, const SimulationOptions& options, SimulationResult* result,
                   std::string* error) {
  *result = SimulationResult{};
  result->timeline = timeline.name;
  result->mode = options.mode;
  // Timelines built in code skip ParseTimeline: checked here too before the topic becomes a path.
  if (!CheckTimeline(timeline, error)) return false;
  StagedDirectory::Options so;
  so.force = options.force;
  so.inputs = options.inputs;
  auto staged = StagedDirectory::Create(options.env, options.out_dir, so, error);
  if (!staged) return false;
  // The brokers live in a scratch directory on tmpfs while the timeline runs: every segment, index
  // and checkpoint write (and every cleaner pass) is written atomically with an fsync, which on a
  // disk costs milliseconds each; the finished directories are then copied into the staged output,
  // flushed once (syncfs) and renamed into place.
  // The tmpfs directory is named klf-simulate-<pid>-XXXXXX and registered as scratch: removed on
  // return, on SIGINT/SIGTERM/SIGHUP, and (after a SIGKILL) by the next run (segment_writer/scratch.h).
  std::string work;
  Env* env = options.env;
  std::string ignored;
  RemoveStaleScratch("/dev/shm", "klf-simulate-");
  if (!env->CreateUniqueDir(ScratchPrefix("/dev/shm/klf-simulate-"), &work, &ignored) &&
      !env->CreateUniqueDir(staged->path() + "/.work-", &work, error))
    return false;
  RegisterScratch(work);
  struct Cleanup {
    Env* env;
    std::string dir;
    ~Cleanup() {
      std::string ignored;
      if (!dir.empty()) env->RemoveDirRecursively(dir, &ignored);
      UnregisterScratch(dir);
    }
  } cleanup{env, work};
  Cluster cluster(timeline, options, result);
  if (!cluster.Run(work, error)) return false;
  for (const auto& b : result->brokers) {
    std::string name = "broker" + std::to_string(b.broker);
    if (!CopyTree(env, work + "/" + name, staged->path() + "/" + name, error)) return false;
  }
  env->RemoveDirRecursively(work, &ignored);
  UnregisterScratch(work);
  cleanup.dir.clear();
  // The brokers' views, loaded from the staging directory before it is committed: a file that cannot
  // be read fails the run and leaves no output.
  CleanerConfig c;
  for (const auto& [k, v] : timeline.config) c.Set(k, v, error);
  error->clear();
  auto partition_dir = [&](const std::string& root, const BrokerSummary& b) {
    return root + "/broker" + std::to_string(b.broker) + "/" + timeline.tp.ToString();
  };
  for (BrokerSummary& b : result->brokers) {
    CollectingSink sink;
    if (!LoadReplicaView(partition_dir(staged->path(), b), result->end_clock_ms, c.producer_id_expiration_ms, &b.view,
                         &sink, error, env))
      return false;
  }
  // One syncfs(2) for the whole output instead of an fsync per file.
  if (!env->SyncFileSystem(staged->path(), error) || !staged->Commit(error)) return false;
  result->out_dir = staged->final_path();
  for (BrokerSummary& b : result->brokers) b.view.path = partition_dir(result->out_dir, b);
  result->divergence = CompareReplicas(result->brokers);
  return true;
}

}  // namespace klf
