// klf simulate TIMELINE.json --out DIR [--mode uncoordinated|coordinated] [--json] [--force]
//
// Replays an incident timeline offline (simulator/simulator.h): N brokers replicating one partition,
// each broker's log directory written to DIR/broker<N>/ in Kafka's format, each broker's cleaner
// running on its own log, under Kafka's rules or coordinated ones; then prints what each replica
// would serve (read_committed records, key -> value map, LSO) and where they diverge.
// Exit 0: the replicas agree; 1: they diverged; 2: usage, invalid timeline or refused --out;
// 3: unreadable timeline or a failed write. With --json every failure prints the error object.
#include <iterator>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/output.h"
#include "segment_reader/file.h"
#include "segment_writer/output_guard.h"
#include "simulator/simulator.h"

namespace klf::cli {
namespace {

struct SimulateArgs {
  std::string timeline;
  std::string out;
  std::string mode = "uncoordinated";
  bool force = false;
  bool verbose = false;
  CommonOptions common;
};

using nlohmann::json;

// A step's facts as its "detail" object (keys as cli.md's simulate document names them).
json StepFactsJson(const StepFacts& facts) {
  struct ToJson {
    json operator()(std::monostate) const { return json::object(); }
    json operator()(const facts::Produced& f) const {
      json j = {{"producer", f.producer}, {"firstOffset", f.first_offset}, {"lastOffset", f.last_offset}};
      if (f.records) j["records"] = *f.records;
      return j;
    }
    json operator()(const facts::TxnEnded& f) const {
      json j = {{"producer", f.producer}, {"markerOffset", f.marker_offset}};
      if (f.timeout) j["timeout"] = true;
      if (f.next_epoch) j["nextEpoch"] = *f.next_epoch;
      if (f.transaction_version) j["transactionVersion"] = *f.transaction_version;
      if (f.producer_id) j["producerId"] = *f.producer_id;
      if (f.data_epoch) j["dataEpoch"] = *f.data_epoch;
      if (f.marker_epoch) j["markerEpoch"] = *f.marker_epoch;
      if (f.next_producer_id) j["nextProducerId"] = *f.next_producer_id;
      return j;
    }
    json operator()(const facts::BrokerDown& f) const {
      json j = {{"broker", f.broker}, {"logEndOffset", f.log_end_offset}, {"lastStableOffset", f.last_stable_offset}};
      if (f.new_leader) j["newLeader"] = *f.new_leader;
      return j;
    }
    json operator()(const facts::BrokerUp& f) const {
      return {{"broker", f.broker},
              {"fromOffset", f.from_offset},
              {"logEndOffset", f.log_end_offset},
              {"fetches", f.fetches},
              {"bytes", f.bytes},
              {"lastStableOffset", f.last_stable_offset}};
    }
    json operator()(const facts::LeaderElected& f) const {
      return {{"broker", f.broker}, {"leaderEpoch", f.leader_epoch}};
    }
    json operator()(const facts::Rolled& f) const {
      return {{"broker", f.broker}, {"activeSegmentBase", f.active_segment_base}};
    }
    json operator()(const facts::Cleaned& f) const {
      json j = {{"broker", f.broker},
                {"cleaned", f.cleaned},
                {"firstDirtyOffset", f.first_dirty_offset},
                {"firstUncleanableOffset", f.first_uncleanable_offset},
                {"cleanableRatio", f.cleanable_ratio},
                {"reason", f.reason},
                {"cleanerCheckpoint", IntOrNull(f.cleaner_checkpoint)},
                {"tombstonesRemoved", f.tombstones_removed},
                {"markersRemoved", f.markers_removed}};
      if (f.coordinated) {
        j["mtro"] = f.coordinated->mtro;
        j["mxro"] = f.coordinated->mxro;
        j["tombstonesHeld"] = f.coordinated->tombstones_held;
        j["markersHeld"] = f.coordinated->markers_held;
      }
      return j;
    }
  };
  return std::visit(ToJson{}, facts);
}

json ReplicaJson(const BrokerSummary& b) {
  const ReplicaView& v = b.view;
  json rc = json::array();
  for (const ServedRecord& s : v.read_committed)
    rc.push_back({{"offset", s.offset},
                  {"key", s.key ? json(*s.key) : json(nullptr)},
                  {"value", s.value ? json(*s.value) : json(nullptr)},
                  {"producerId", s.producer_id},
                  {"transactional", s.transactional},
                  {"timestamp", s.timestamp}});
  json open = json::array();
  for (const auto& [first, t] : v.log.producer_state.ongoing_txns())
    open.push_back({{"producerId", t.producer_id}, {"firstOffset", first}});
  json aborted = json::array();
  for (const AbortedTxn& t : v.log.aborted_txns)
    aborted.push_back({{"producerId", t.producer_id}, {"firstOffset", t.first_offset}, {"lastOffset", t.last_offset}});
  return {{"broker", b.broker},
          {"up", b.up},
          {"leader", b.leader},
          {"path", v.path},
          {"logStartOffset", v.log.log_start_offset},
          {"logEndOffset", v.log.log_end_offset},
          {"highWatermark", v.log.high_watermark},
          {"lastStableOffset", v.log.last_stable_offset},
          {"cleanerCheckpoint", IntOrNull(v.log.cleaner_checkpoint)},
          {"mcco", v.coordination.mcco},
          {"mxfo", v.coordination.mxfo},
          {"openTransactions", open},
          {"abortedTransactions", aborted},
          {"recordsInLog", v.records_in_log},
          {"readCommitted", rc},
          {"hiddenOffsets", v.hidden_offsets},
          {"keyValues", v.key_values}};
}

json DivergenceJson(const DivergenceReport& d) {
  json dj;
  dj["diverged"] = d.diverged();
  json kv = json::object();
  for (const auto& [k, m] : d.key_values) {
    json per = json::object();
    for (const auto& [b, v] : m) per["broker" + std::to_string(b)] = v ? json(*v) : json(nullptr);
    kv[k] = per;
  }
  dj["keyValues"] = kv;
  json lso = json::object();
  for (const auto& [b, o] : d.last_stable_offsets) lso["broker" + std::to_string(b)] = o;
  dj["lastStableOffsets"] = lso;
  json leo = json::object();
  for (const auto& [b, o] : d.log_end_offsets) leo["broker" + std::to_string(b)] = o;
  dj["logEndOffsets"] = leo;
  json vis = json::array();
  for (const auto& v : d.visibility)
    vis.push_back({{"offset", v.offset}, {"servedBy", v.served_by}, {"hiddenBy", v.hidden_by}});
  dj["visibility"] = vis;
  return dj;
}

// The `klf simulate --json` document.
json SimulationResultJson(const SimulationResult& r) {
  json j;
  j["timeline"] = r.timeline;
  j["mode"] = CoordinationModeName(r.mode);
  j["out"] = r.out_dir;
  j["endClockMs"] = r.end_clock_ms;
  json steps = json::array();
  for (const SimStep& s : r.steps)
    steps.push_back({{"step", s.step},
                     {"clockMs", s.clock_ms},
                     {"op", s.op},
                     {"text", s.text},
                     {"detail", StepFactsJson(s.detail)}});
  j["steps"] = steps;
  json replicas = json::array();
  for (const BrokerSummary& b : r.brokers) replicas.push_back(ReplicaJson(b));
  j["replicas"] = replicas;
  json coord = json::object();
  coord["mtro"] = IntOrNull(r.coordination.mtro);
  coord["mxro"] = IntOrNull(r.coordination.mxro);
  json reports = json::array();
  for (const auto& c : r.coordination.replicas)
    reports.push_back({{"broker", c.broker}, {"mcco", IntOrNull(c.mcco)}, {"mxfo", IntOrNull(c.mxfo)}});
  coord["replicas"] = reports;
  j["coordination"] = coord;
  j["divergence"] = DivergenceJson(r.divergence);
  return j;
}

std::string Quote(const std::optional<std::string>& v) { return v ? "\"" + *v + "\"" : "<absent>"; }

// The text report, written broker by broker (--verbose lists every record a broker serves).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one text line per timeline event kind; a printer
void WriteText(const SimulationResult& r, const SimulateArgs& a, Output* o) {
  std::string t;
  auto out = std::back_inserter(t);
  fmt::format_to(out, "timeline {} ({}): {} steps, clock {}\n", EscapeInvalidUtf8(r.timeline),
                 CoordinationModeName(r.mode), r.steps.size(), WithWallClock(r.end_clock_ms));
  for (const SimStep& s : r.steps)
    fmt::format_to(out, "  {:3} {} {:<7} {}\n", s.step, WithWallClock(s.clock_ms), s.op, s.text);
  t += '\n';
  for (const BrokerSummary& b : r.brokers) {
    const ReplicaView& v = b.view;
    fmt::format_to(out, "broker{}{}{} {}\n", b.broker, b.leader ? " (leader)" : "", b.up ? "" : " (down)",
                   EscapeInvalidUtf8(v.path));
    fmt::format_to(out,
                   "  logEndOffset={} highWatermark={} lastStableOffset={} cleanerCheckpoint={} MCCO={} "
                   "MXFO={}\n",
                   v.log.log_end_offset, v.log.high_watermark, v.log.last_stable_offset,
                   IntOrNone(v.log.cleaner_checkpoint), v.coordination.mcco, v.coordination.mxfo);
    std::string open;
    for (const auto& [first, txn] : v.log.producer_state.ongoing_txns())
      open += fmt::format("{}producerId {} from offset {}", open.empty() ? "" : ", ", txn.producer_id, first);
    fmt::format_to(out, "  open transactions: {}\n", open.empty() ? "none" : open);
    fmt::format_to(out, "  read_committed: {} records (of {} in the log), {} keys, {} offsets hidden as aborted\n",
                   v.read_committed.size(), v.records_in_log, v.key_values.size(), v.hidden_offsets.size());
    if (a.verbose) {
      for (const auto& s : v.read_committed)
        fmt::format_to(out, "    {} {}={}\n", s.offset, s.key ? *s.key : "null", s.value ? *s.value : "<tombstone>");
    }
    o->Append(t);
    t.clear();
  }
  if (r.mode == CoordinationMode::kCoordinated) {
    fmt::format_to(out, "\ncoordination: MTRO={} MXRO={}\n", IntOrNone(r.coordination.mtro),
                   IntOrNone(r.coordination.mxro));
  }
  const DivergenceReport& d = r.divergence;
  t += '\n';
  for (const auto& [k, m] : d.key_values) {
    std::string per;
    for (const auto& [b, v] : m) per += fmt::format(" broker{}={}", b, Quote(v));
    fmt::format_to(out, "divergence: key \"{}\":{}\n", k, per);
  }
  if (!d.last_stable_offsets.empty()) {
    std::string per;
    for (const auto& [b, off] : d.last_stable_offsets) per += fmt::format(" broker{}={}", b, off);
    fmt::format_to(out, "divergence: lastStableOffset:{}\n", per);
  }
  if (!d.log_end_offsets.empty()) {
    std::string per;
    for (const auto& [b, off] : d.log_end_offsets) per += fmt::format(" broker{}={}", b, off);
    fmt::format_to(out, "divergence: logEndOffset:{}\n", per);
  }
  for (const auto& v : d.visibility) {
    std::string served, hidden;
    for (int b : v.served_by) served += fmt::format(" broker{}", b);
    for (int b : v.hidden_by) hidden += fmt::format(" broker{}", b);
    fmt::format_to(out, "divergence: offset {} served to read_committed by{}, hidden as aborted by{}\n", v.offset,
                   served, hidden);
  }
  fmt::format_to(out, "verdict: {}\n", d.diverged() ? "DIVERGED" : "replicas agree");
  fmt::format_to(out, "wrote {}\n", EscapeInvalidUtf8(r.out_dir));
  o->Append(t);
}

int RunSimulate(const SimulateArgs& a) {
  const bool json = a.common.json;
  SimulationOptions o;
  if (a.mode == "coordinated") {
    o.mode = CoordinationMode::kCoordinated;
  } else if (a.mode != "uncoordinated") {
    return Fail("simulate", kExitUsage, "--mode must be uncoordinated or coordinated, not " + a.mode, json);
  }
  o.out_dir = a.out;
  o.force = a.force;
  o.inputs = {a.timeline};
  std::string text, error;
  // The output guard (segment_writer/output_guard.h) before anything is read or written: --out must
  // not hold the timeline, and replaces only a previous klf output.
  if (!CheckOutputPath({a.out, OutputKind::kDirectory, o.inputs, a.force}, nullptr, &error)) {
    return Fail("simulate", kExitUsage, error, json);
  }
  if (!ReadSmallFile(a.timeline, 16u << 20, &text, &error)) return Fail("simulate", kExitUnreadable, error, json);
  Timeline t;
  if (!ParseTimeline(text, &t, &error)) return Fail("simulate", kExitUsage, a.timeline + ": " + error, json);
  if (t.name.empty()) {
    t.name = a.timeline.substr(a.timeline.find_last_of('/') + 1);
    if (t.name.size() > 5 && t.name.ends_with(".json")) t.name.resize(t.name.size() - 5);
  }
  SimulationResult r;
  if (!RunSimulation(t, o, &r, &error)) {
    // Exit 1 means "diverged" only: an invalid event is a usage error, anything else a failed write.
    return Fail("simulate", error.starts_with("timeline") ? kExitUsage : kExitUnreadable, a.timeline + ": " + error,
                json);
  }
  if (a.common.json) {
    PrintJson(SimulationResultJson(r));
  } else {
    Output out(1);
    WriteText(r, a, &out);
  }
  return r.divergence.diverged() ? kExitProblems : kExitOk;
}

}  // namespace

Command AddSimulateCommand(CLI::App* parent) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* app = parent->add_subcommand(
      "simulate",
      "Replay an incident timeline offline: N brokers replicate one partition (produce, transactions,\n"
      "brokers down/up, leadership, clock, each broker's cleaner), writing every broker's log directory\n"
      "in Kafka's format under --out (broker1/, broker2/, ...). Prints what each replica would serve\n"
      "(read_committed records, key -> value map, last stable offset) and where they diverge.\n"
      "Exit 0: replicas agree; 1: they diverged; 2: usage, invalid timeline or refused --out; 3: unreadable\n"
      "timeline or failed write.");
  app->add_option("TIMELINE", args->timeline, "timeline JSON file (format: README.md, klf simulate)")->required();
  app->add_option("--out", args->out, "output directory for the broker log directories (complete or absent)")
      ->required();
  app->add_option("--mode", args->mode,
                  "uncoordinated (Kafka: each replica compacts alone; default) or coordinated (tombstones only "
                  "below MTRO, markers only below MXRO)");
  app->add_flag("--force", args->force, "replace an existing --out that a previous klf run wrote");
  app->add_flag("--records", args->verbose, "text output: list every read_committed record of every replica");
  AddCommonOptions(app, &args->common, false);
  return {app, [args] { return RunSimulate(*args); }};
}

}  // namespace klf::cli
