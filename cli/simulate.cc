// klf simulate TIMELINE.json --out DIR [--mode uncoordinated|coordinated] [--json] [--force]
//
// Replays an incident timeline offline (simulator/simulator.h): N brokers replicating one partition,
// each broker's log directory written to DIR/broker<N>/ in Kafka's format, each broker's cleaner
// running on its own log, under Kafka's rules or coordinated ones; then prints what each replica
// would serve (read_committed records, key -> value map, LSO) and where they diverge.
// Exit 0: the replicas agree; 1: they diverged; 2: usage, invalid timeline or refused --out;
// 3: unreadable timeline or a failed write. With --json every failure prints the error object.
#include <cstdio>
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

std::string Quote(const std::optional<std::string>& v) { return v ? "\"" + *v + "\"" : "<absent>"; }

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one text line per timeline event kind; a printer
void PrintText(const SimulationResult& r, const SimulateArgs& a) {
  std::printf("timeline %s (%s): %zu steps, clock %s\n", EscapeInvalidUtf8(r.timeline).c_str(),
              CoordinationModeName(r.mode), r.steps.size(), WithWallClock(r.end_clock_ms).c_str());
  for (const SimStep& s : r.steps)
    std::printf("  %3d %s %-7s %s\n", s.step, WithWallClock(s.clock_ms).c_str(), s.op.c_str(), s.text.c_str());
  std::printf("\n");
  for (const BrokerSummary& b : r.brokers) {
    const ReplicaView& v = b.view;
    std::printf("broker%d%s%s %s\n", b.broker, b.leader ? " (leader)" : "", b.up ? "" : " (down)",
                EscapeInvalidUtf8(v.path).c_str());
    std::printf(
        "  logEndOffset=%lld highWatermark=%lld lastStableOffset=%lld cleanerCheckpoint=%s MCCO=%lld "
        "MXFO=%lld\n",
        (long long)v.log_end_offset, (long long)v.high_watermark, (long long)v.last_stable_offset,
        v.cleaner_checkpoint ? std::to_string(*v.cleaner_checkpoint).c_str() : "none", (long long)v.mcco,
        (long long)v.mxfo);
    std::string open;
    for (const auto& t : v.open_txns)
      open += fmt::format("{}producerId {} from offset {}", open.empty() ? "" : ", ", t.producer_id, t.first_offset);
    std::printf("  open transactions: %s\n", open.empty() ? "none" : open.c_str());
    std::printf("  read_committed: %zu records (of %lld in the log), %zu keys, %zu offsets hidden as aborted\n",
                v.read_committed.size(), (long long)v.records_in_log, v.key_values.size(), v.hidden_offsets.size());
    if (a.verbose) {
      for (const auto& s : v.read_committed)
        std::printf("    %lld %s=%s\n", (long long)s.offset, s.key ? s.key->c_str() : "null",
                    s.value ? s.value->c_str() : "<tombstone>");
    }
  }
  if (r.mode == CoordinationMode::kCoordinated) {
    std::printf("\ncoordination: MTRO=%s MXRO=%s\n",
                r.coordination.mtro ? std::to_string(*r.coordination.mtro).c_str() : "none",
                r.coordination.mxro ? std::to_string(*r.coordination.mxro).c_str() : "none");
  }
  const DivergenceReport& d = r.divergence;
  std::printf("\n");
  for (const auto& [k, m] : d.key_values) {
    std::string per;
    for (const auto& [b, v] : m) per += fmt::format(" broker{}={}", b, Quote(v));
    std::printf("divergence: key \"%s\":%s\n", k.c_str(), per.c_str());
  }
  if (!d.last_stable_offsets.empty()) {
    std::string per;
    for (const auto& [b, o] : d.last_stable_offsets) per += fmt::format(" broker{}={}", b, o);
    std::printf("divergence: lastStableOffset:%s\n", per.c_str());
  }
  if (!d.log_end_offsets.empty()) {
    std::string per;
    for (const auto& [b, o] : d.log_end_offsets) per += fmt::format(" broker{}={}", b, o);
    std::printf("divergence: logEndOffset:%s\n", per.c_str());
  }
  for (const auto& v : d.visibility) {
    std::string served, hidden;
    for (int b : v.served_by) served += fmt::format(" broker{}", b);
    for (int b : v.hidden_by) hidden += fmt::format(" broker{}", b);
    std::printf("divergence: offset %lld served to read_committed by%s, hidden as aborted by%s\n", (long long)v.offset,
                served.c_str(), hidden.c_str());
  }
  std::printf("verdict: %s\n", d.diverged() ? "DIVERGED" : "replicas agree");
  std::printf("wrote %s\n", EscapeInvalidUtf8(r.out_dir).c_str());
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
    std::printf("%s\n", DumpJson(SimulationResultJson(r)).c_str());
  } else {
    PrintText(r, a);
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
  Command c;
  c.app = app;
  c.run = [args] { return RunSimulate(*args); };
  return c;
}

}  // namespace klf::cli
