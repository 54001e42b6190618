// `klf lso [--json] [--now MS] [--replica DIR]... PARTITION_DIR` (spec cli.md "lso"): the last stable
// offset, the open transactions, which one pins the LSO and how the pin lifts. The work is
// repair/lso.h's; this file parses and prints. Exit 1 when an open transaction pins the LSO.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/output.h"
#include "diff/replica_state.h"
#include "repair/lso.h"
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
};

nlohmann::json TxnJson(const OpenTxn& t) {
  return {{"producerId", t.producer_id},  {"producerEpoch", t.producer_epoch}, {"firstOffset", t.first_offset},
          {"lastOffset", t.last_offset}, {"lastTimestamp", t.last_timestamp}};
}

// cli.md: a PATH may also be a broker log directory; one holding a single live partition names it.
std::string PartitionOf(const std::string& path) {
  if (ClassifyPath(path).kind != PathKind::kLogDir) return path;
  LogDir dir;
  NullSink quiet;
  if (!ScanLogDir(path, &dir, &quiet)) return path;
  std::vector<std::string> live;
  for (const PartitionDir& pd : dir.partitions) {
    if (pd.state == PartitionDirState::kLive) live.push_back(pd.path);
  }
  return live.size() == 1 ? live.front() : path;
}

int RunLso(const LsoArgs& given) {
  LsoArgs a = given;
  a.dir = PartitionOf(a.dir);
  for (std::string& r : a.replicas) r = PartitionOf(r);
  ReplicaOptions ro;
  ro.now_ms = a.now;
  ro.producer_id_expiration_ms = a.producer_id_expiration_ms;
  std::string error;
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
  LsoOptions lo;
  lo.now_ms = a.now;
  lo.producer_id_expiration_ms = a.producer_id_expiration_ms;
  lo.bootstrap_server = a.bootstrap;
  LsoReport rep = ExplainLso(target, others, lo);
  if (a.json) {
    nlohmann::json j;
    j["partition"] = rep.partition;
    j["path"] = a.dir;
    j["logStartOffset"] = rep.log_start_offset;
    j["highWatermark"] = rep.high_watermark;
    j["lastStableOffset"] = rep.last_stable_offset;
    j["logEndOffset"] = rep.log_end_offset;
    j["openTransactions"] = nlohmann::json::array();
    for (const OpenTxn& t : rep.open_transactions) j["openTransactions"].push_back(TxnJson(t));
    j["pinnedBy"] = rep.pinned_by ? TxnJson(*rep.pinned_by) : nlohmann::json(nullptr);
    j["replicas"] = nlohmann::json::array();
    for (const LsoReplicaMarker& m : rep.replicas) {
      j["replicas"].push_back({{"path", m.path},
                               {"name", m.label},
                               {"state", LsoReplicaMarkerKindName(m.kind)},
                               {"markerOffset", m.offset >= 0 ? nlohmann::json(m.offset) : nlohmann::json(nullptr)},
                               {"markerType", m.type.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.type)}});
    }
    j["explanation"] = rep.explanation;
    j["resolution"] = rep.resolution;
    j["abortCommand"] = rep.abort_command.empty() ? nlohmann::json(nullptr) : nlohmann::json(rep.abort_command);
    std::printf("%s\n", DumpJson(j, 2).c_str());
  } else {
    std::string out = fmt::format("partition {} ({})\n  log start offset   {}\n  high watermark     {}\n"
                                  "  last stable offset {}{}\n  log end offset     {}\n",
                                  rep.partition, a.dir, rep.log_start_offset, rep.high_watermark, rep.last_stable_offset,
                                  rep.pinned() ? "  (PINNED)" : "", rep.log_end_offset);
    if (rep.open_transactions.empty()) out += "  open transactions  none\n";
    for (const OpenTxn& t : rep.open_transactions) {
      out += fmt::format("  open transaction   producer {} epoch {} offsets {}..{} last timestamp {}{}\n", t.producer_id,
                         t.producer_epoch, t.first_offset, t.last_offset, t.last_timestamp,
                         rep.pinned_by && rep.pinned_by->first_offset == t.first_offset ? "  <- pins the LSO" : "");
    }
    out += "\n" + rep.explanation + "\n\nresolution: " + rep.resolution + "\n";
    if (!rep.abort_command.empty()) out += "\n  " + rep.abort_command + "\n";
    std::fputs(EscapeInvalidUtf8(out).c_str(), stdout);
  }
  return rep.pinned() ? kExitProblems : kExitOk;
}

}  // namespace

Command AddLsoCommand(CLI::App* parent) {
  auto args = std::make_shared<LsoArgs>();
  CLI::App* app = parent->add_subcommand("lso", "Explain a partition's last stable offset and what pins it");
  app->footer(
      "Lists the open transactions, the one that pins the LSO, whether the other replicas (--replica) hold\n"
      "its marker, and the exact kafka-transactions.sh abort command that lifts the pin. An open transaction\n"
      "never expires (producer.id.expiration.ms does not lift it). Exit 1 when pinned, 0 otherwise.");
  app->add_option("PARTITION_DIR", args->dir, "partition directory (never modified)")->required();
  app->add_option("--replica", args->replicas, "another replica of the partition, to look for the marker")
      ->type_name("DIR");
  app->add_flag("--json", args->json, "print the cli.md JSON object");
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
