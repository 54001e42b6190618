// `klf lso [--json] [--now MS] [--replica DIR]... PARTITION_DIR` (spec cli.md "lso"): the last stable
// offset, the open transactions, which one pins the LSO and how the pin lifts. The work is
// diff/lso.h's; this file parses and prints. Exit 1 when an open transaction pins the LSO.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/output.h"
#include "cli/partition_paths.h"
#include "cli/txn_log.h"
#include "diff/replica_state.h"
#include "diff/lso.h"
#include "segment_reader/layout.h"

namespace klf::cli {
namespace {

struct LsoArgs {
  bool json = false;
  std::optional<int64_t> now;
  int64_t producer_id_expiration_ms = 86400000;
  std::string bootstrap = "<broker:9092>";
  std::vector<std::string> replicas;
  std::string dir;
  std::string partition;  // --partition T-P: which partition of the broker log directories given
  TxnLogArgs txn_log;
};

nlohmann::json CoordinatorJson(const CoordinatorView& v, const std::string& advice) {
  nlohmann::json evidence = nlohmann::json::array();
  for (const CoordinatorRecord& r : v.evidence) {
    evidence.push_back({{"file", r.file},
                        {"position", r.position},
                        {"offset", r.offset},
                        {"state", r.state},
                        {"producerEpoch", r.producer_epoch}});
  }
  return {
      {"verdict", CoordinatorVerdictName(v.verdict)},
      {"certain", v.certain},
      {"transactionalId", v.transactional_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.transactional_id)},
      {"why", v.why},
      {"advice", advice},
      {"evidence", evidence}};
}

nlohmann::json TxnJson(const OpenTxn& t) {
  return {{"producerId", t.producer_id},
          {"producerEpoch", t.producer_epoch},
          {"firstOffset", t.first_offset},
          {"lastOffset", t.last_offset},
          {"lastTimestamp", t.last_timestamp}};
}

nlohmann::json ReplicaJson(const LsoReplicaMarker& m) {
  nlohmann::json markers = nlohmann::json::array();
  for (const auto& [offset, type] : m.markers) markers.push_back({{"offset", offset}, {"type", type}});
  return {{"path", m.path},
          {"name", m.label},
          {"state", LsoReplicaMarkerKindName(m.kind)},
          {"decided", m.decided()},
          {"markerOffset", m.offset >= 0 ? nlohmann::json(m.offset) : nlohmann::json(nullptr)},
          {"markerType", m.type.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.type)},
          {"markers", markers}};
}

nlohmann::json LsoTxnJson(const LsoTxn& x, bool replicas_given) {
  nlohmann::json j = TxnJson(x.txn);
  j["pinsLso"] = x.pins;
  j["abortCommand"] = x.abort_command;
  j["producerEpochForAbort"] = x.producer_epoch_for_abort;
  j["coordinatorEpochForAbort"] = x.coordinator_epoch_for_abort;
  j["coordinatorEpochSeen"] = x.coordinator_epoch_seen;
  j["epochsFromThisReplicaOnly"] = !replicas_given;
  j["producerEpochFrom"] = x.producer_epoch_from;
  j["coordinatorEpochFrom"] = x.coordinator_epoch_from;
  j["epochSource"] = nlohmann::json::array();
  for (const LsoEpochSource& s : x.epoch_sources) {
    j["epochSource"].push_back({{"name", s.label},
                                {"path", s.path},
                                {"inProducerState", s.in_producer_state},
                                {"producerEpoch", s.producer_epoch},
                                {"coordinatorEpoch", s.coordinator_epoch}});
  }
  j["decidedOn"] = replicas_given ? nlohmann::json(x.decided_on) : nlohmann::json(nullptr);
  j["replicas"] = nlohmann::json::array();
  for (const LsoReplicaMarker& m : x.replicas) j["replicas"].push_back(ReplicaJson(m));
  j["epochsNote"] = x.epochs_note;
  j["warning"] = x.warning;
  j["verdict"] = x.verdict;
  j["coordinator"] = x.coordinator ? CoordinatorJson(*x.coordinator, x.coordinator_advice) : nlohmann::json(nullptr);
  return j;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the command's flag checks and the order of its steps; a printer
int RunLso(const LsoArgs& given) {
  LsoArgs a = given;
  std::vector<std::string> paths = {a.dir};
  paths.insert(paths.end(), a.replicas.begin(), a.replicas.end());
  std::string error;
  int exit_code = kExitUsage;
  if (!ResolveOnePartition(paths, a.partition, &paths, &error, &exit_code))
    return Fail("lso", exit_code, error, a.json);
  a.dir = paths.front();
  a.replicas.assign(paths.begin() + 1, paths.end());
  ReplicaOptions ro;
  ro.now_ms = a.now;
  ro.producer_id_expiration_ms = a.producer_id_expiration_ms;
  ro.transactions_only = true;  // memory independent of the record count
  ReplicaState target;
  if (!std::filesystem::is_directory(a.dir) || !LoadReplica(a.dir, ro, &target, &error)) {
    return Fail("lso", kExitUnreadable, error.empty() ? a.dir + ": not a partition directory" : error, a.json);
  }
  std::vector<ReplicaState> others(a.replicas.size());
  for (size_t i = 0; i < a.replicas.size(); ++i) {
    if (!std::filesystem::is_directory(a.replicas[i]) || !LoadReplica(a.replicas[i], ro, &others[i], &error)) {
      return Fail("lso", kExitUnreadable, error.empty() ? a.replicas[i] + ": not a partition directory" : error,
                  a.json);
    }
  }
  TxnLog txn_log;
  if (!LoadTxnLog(a.txn_log, paths, &txn_log, &error)) return Fail("lso", kExitUnreadable, error, a.json);
  for (const std::string& w : txn_log.warnings) PrintError("lso", w);
  LsoOptions lo;
  lo.coordinator = txn_log.get();
  lo.now_ms = a.now;
  lo.producer_id_expiration_ms = a.producer_id_expiration_ms;
  lo.bootstrap_server = a.bootstrap;
  lo.wall_clock_times = !a.json;
  LsoReport rep = ExplainLso(target, others, lo);
  if (a.json) {
    nlohmann::json j;
    j["partition"] = rep.partition;
    j["path"] = a.dir;
    j["txnLog"] = txn_log.dirs;
    j["logStartOffset"] = rep.log_start_offset;
    j["highWatermark"] = rep.high_watermark;
    j["lastStableOffset"] = rep.last_stable_offset;
    j["logEndOffset"] = rep.log_end_offset;
    j["openTransactions"] = nlohmann::json::array();
    for (const LsoTxn& x : rep.transactions) j["openTransactions"].push_back(LsoTxnJson(x, rep.replicas_given));
    j["pinnedBy"] = rep.pinned_by ? TxnJson(*rep.pinned_by) : nlohmann::json(nullptr);
    j["replicas"] = nlohmann::json::array();
    for (const LsoReplicaMarker& m : rep.replicas) j["replicas"].push_back(ReplicaJson(m));
    j["explanation"] = rep.explanation;
    j["resolution"] = rep.resolution;
    j["abortCommand"] = rep.abort_command.empty() ? nlohmann::json(nullptr) : nlohmann::json(rep.abort_command);
    std::printf("%s\n", DumpJson(j, 2).c_str());
  } else {
    std::string out = fmt::format(
        "partition {} ({})\n  log start offset   {}\n  high watermark     {}\n"
        "  last stable offset {}{}\n  log end offset     {}\n",
        rep.partition, a.dir, rep.log_start_offset, rep.high_watermark, rep.last_stable_offset,
        rep.pinned() ? "  (PINNED)" : "", rep.log_end_offset);
    if (!txn_log.dirs.empty()) {
      out += fmt::format("  coordinator's log  {} __transaction_state partitions ({}{})\n", txn_log.dirs.size(),
                         txn_log.dirs.front(), txn_log.dirs.size() > 1 ? ", ..." : "");
    }
    if (rep.open_transactions.empty()) out += "  open transactions  none\n";
    for (const OpenTxn& t : rep.open_transactions) {
      out +=
          fmt::format("  open transaction   producer {} epoch {} offsets {}..{} last timestamp {}{}\n", t.producer_id,
                      t.producer_epoch, t.first_offset, t.last_offset, WithWallClock(t.last_timestamp),
                      rep.pinned_by && rep.pinned_by->first_offset == t.first_offset ? "  <- pins the LSO" : "");
    }
    size_t n = rep.transactions.size();
    for (size_t i = 0; i < n; ++i) {
      const LsoTxn& x = rep.transactions[i];
      out += fmt::format("\nopen transaction {} of {}: producer {} epoch {} from offset {}{}\n", i + 1, n,
                         x.txn.producer_id, x.txn.producer_epoch, x.txn.first_offset, x.pins ? " (pins the LSO)" : "");
      out += "  abort: " + x.abort_command + "\n";
      out += "  epochs: " + x.epochs_note + "\n";
      out += "  warning: " + x.warning + "\n";
      out += "  other replicas: " + x.verdict + "\n";
      if (x.coordinator) {
        out += fmt::format("  coordinator: {}{}: {}\n    next: {}\n", CoordinatorVerdictName(x.coordinator->verdict),
                           x.coordinator->certain ? " (certain)" : "", x.coordinator->why, x.coordinator_advice);
      }
    }
    out += "\n" + rep.explanation + "\n\nresolution: " + rep.resolution + "\n";
    std::fputs(EscapeInvalidUtf8(out).c_str(), stdout);
  }
  return rep.pinned() ? kExitProblems : kExitOk;
}

}  // namespace

Command AddLsoCommand(CLI::App* parent) {
  auto args = std::make_shared<LsoArgs>();
  CLI::App* app = parent->add_subcommand("lso", "Explain a partition's last stable offset and what pins it");
  app->footer(
      "Lists every open transaction, the one that pins the LSO, and for each the kafka-transactions.sh abort\n"
      "command in the form that works on any replica (--producer-id/--producer-epoch/--coordinator-epoch,\n"
      "epochs the highest any loaded replica holds), with the warning that an ABORT hides records that\n"
      "committed elsewhere. With --replica, whether the other replicas decided it; if they did, the safe fix\n"
      "is to re-replicate this replica from the leader. An open transaction never expires\n"
      "(producer.id.expiration.ms does not lift it). Exit 1 when pinned, 0 otherwise.");
  app->add_option("PARTITION_DIR", args->dir, "partition directory (never modified)")->required();
  app->add_option("--partition", args->partition,
                  "with broker log directories holding several partitions: the one to work on")
      ->type_name("T-P");
  app->add_option("--replica", args->replicas,
                  "another replica of the partition: whether it decided the transactions, and its epochs")
      ->type_name("DIR");
  app->add_flag("--json", args->json, "print the cli.md JSON object");
  AddTxnLogOptions(app, &args->txn_log);
  app->add_option("--now", args->now, "clock (ms) for producer expiration and idle times; default: newest timestamp")
      ->type_name("MS");
  app->add_option("--producer-id-expiration-ms", args->producer_id_expiration_ms,
                  "producer.id.expiration.ms (default 86400000)");
  app->add_option("--bootstrap-server", args->bootstrap, "broker address printed in the abort command");
  Command c;
  c.app = app;
  c.run = [args] { return RunLso(*args); };
  return c;
}

}  // namespace klf::cli
