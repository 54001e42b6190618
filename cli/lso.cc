// `klf lso [--json] [--now MS] [--replica DIR]... PARTITION_DIR` (spec cli.md "lso"): the last stable
// offset, the open transactions, which one pins the LSO and how the pin lifts. The work is
// diff/lso.h's; this file parses and prints. Exit 1 when an open transaction pins the LSO.
// Given a broker log directory holding several partitions (and no --partition): every one of them, each
// with its copies in the --replica log directories, then the counts (--only-findings, --jobs, progress on
// a terminal, as klf diff over log dirs).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/output.h"
#include "cli/partition_paths.h"
#include "cli/progress.h"
#include "cli/txn_log.h"
#include "diff/replica_state.h"
#include "diff/lso.h"
#include "segment_reader/capture.h"
#include "segment_reader/layout.h"
#include "segment_reader/parallel.h"

namespace klf::cli {
namespace {

struct LsoArgs {
  bool json = false;
  std::optional<int64_t> now;
  int64_t producer_id_expiration_ms = 86400000;
  std::string bootstrap = "<broker:9092>";
  std::vector<std::string> replicas;
  std::string dir;
  std::string partition;       // --partition T-P: which partition of the broker log directories given
  bool only_findings = false;  // log dirs: print only the pinned partitions
  unsigned jobs = 0;           // log dirs: partitions loaded at once (0: one per core)
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

nlohmann::json ReplicaJson(const LsoWitness& m) {
  nlohmann::json markers = nlohmann::json::array();
  for (const Marker& x : m.markers) markers.push_back({{"offset", x.offset}, {"type", MarkerTypeName(x.type)}});
  return {{"path", m.path},
          {"name", m.label},
          {"state", LsoWitnessKindName(m.kind)},
          {"decided", m.decided()},
          {"markerOffset", m.first ? nlohmann::json(m.first->offset) : nlohmann::json(nullptr)},
          {"markerType", m.first ? nlohmann::json(MarkerTypeName(m.first->type)) : nlohmann::json(nullptr)},
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
  for (const LsoWitness& m : x.replicas) j["replicas"].push_back(ReplicaJson(m));
  j["epochsNote"] = x.epochs_note;
  j["warning"] = x.warning;
  j["verdict"] = x.verdict;
  j["coordinator"] = x.coordinator ? CoordinatorJson(*x.coordinator, x.coordinator_advice) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json SingleJson(const LsoReport& rep, const std::string& dir, const TxnLog& txn_log) {
  nlohmann::json j;
  j["partition"] = rep.partition;
  j["path"] = dir;
  j["txnLog"] = txn_log.dirs;
  j["logStartOffset"] = rep.log_start_offset;
  j["highWatermark"] = rep.high_watermark;
  j["lastStableOffset"] = rep.last_stable_offset;
  j["logEndOffset"] = rep.log_end_offset;
  j["openTransactions"] = nlohmann::json::array();
  for (const LsoTxn& x : rep.transactions) j["openTransactions"].push_back(LsoTxnJson(x, rep.replicas_given));
  j["pinnedBy"] = rep.pinned_by ? TxnJson(*rep.pinned_by) : nlohmann::json(nullptr);
  j["replicas"] = nlohmann::json::array();
  for (const LsoWitness& m : rep.replicas) j["replicas"].push_back(ReplicaJson(m));
  j["explanation"] = rep.explanation;
  j["resolution"] = rep.resolution;
  j["abortCommand"] = rep.abort_command.empty() ? nlohmann::json(nullptr) : nlohmann::json(rep.abort_command);
  return j;
}

std::string SingleText(const LsoReport& rep, const std::string& dir, const TxnLog& txn_log) {
  std::string out = fmt::format(
      "partition {} ({})\n  log start offset   {}\n  high watermark     {}\n"
      "  last stable offset {}{}\n  log end offset     {}\n",
      rep.partition, dir, rep.log_start_offset, rep.high_watermark, rep.last_stable_offset,
      rep.pinned() ? "  (PINNED)" : "", rep.log_end_offset);
  if (!txn_log.dirs.empty()) out += "  coordinator's log  " + TxnLogDirsText(txn_log) + "\n";
  if (rep.open_transactions.empty()) out += "  open transactions  none\n";
  for (const OpenTxn& t : rep.open_transactions) {
    out += fmt::format("  open transaction   producer {} epoch {} offsets {}..{} last timestamp {}{}\n", t.producer_id,
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
  return out;
}

// Loads a partition's copy under `dir` and the other replicas.
// How both forms explain: the coordinator's records, the clock, the abort command's bootstrap server.
LsoOptions LsoOptionsOf(const LsoArgs& a, const TxnLog& txn_log) {
  LsoOptions lo;
  lo.coordinator = txn_log.get();
  lo.now_ms = a.now;
  lo.producer_id_expiration_ms = a.producer_id_expiration_ms;
  lo.bootstrap_server = a.bootstrap;
  lo.wall_clock_times = !a.json;
  return lo;
}

bool LoadCopies(const std::string& dir, const std::vector<std::string>& replicas, const ReplicaOptions& ro,
                ReplicaState* target, std::vector<ReplicaState>* others, std::string* error) {
  if (!IsInputDir(dir) || !LoadReplica(dir, ro, target, error)) {
    if (error->empty()) *error = dir + ": not a partition directory";
    return false;
  }
  others->resize(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (!IsInputDir(replicas[i]) || !LoadReplica(replicas[i], ro, &(*others)[i], error)) {
      if (error->empty()) *error = replicas[i] + ": not a partition directory";
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Over broker log directories: every live partition of PARTITION_DIR's log directory, each with the
// copies the --replica log directories hold of it.

struct LsoPartition {
  std::string name, dir;
  bool loaded = false;
  std::string error;
  LsoReport report;
  bool decided_elsewhere() const {
    return report.pinned() && std::any_of(report.transactions.begin(), report.transactions.end(),
                                          [](const LsoTxn& x) { return x.pins && !x.decided_on.empty(); });
  }
};

struct LsoCounts {
  size_t partitions = 0, pinned = 0, decided_elsewhere = 0, healthy = 0, unreadable = 0;
};

LsoCounts CountLso(const std::vector<LsoPartition>& parts) {
  LsoCounts c;
  for (const LsoPartition& p : parts) {
    ++c.partitions;
    if (!p.loaded) {
      ++c.unreadable;
    } else if (p.report.pinned()) {
      ++c.pinned;
      if (p.decided_elsewhere()) ++c.decided_elsewhere;
    } else {
      ++c.healthy;
    }
  }
  return c;
}

// One line for a partition whose LSO is not pinned.
std::string UnpinnedLine(const LsoPartition& p) {
  const LsoReport& r = p.report;
  std::string open = r.open_transactions.empty()
                         ? "no open transaction"
                         : fmt::format("{} open transaction{}, none below the high watermark",
                                       r.open_transactions.size(), r.open_transactions.size() == 1 ? "" : "s");
  return fmt::format("partition {} ({}): last stable offset {} = high watermark, {}\n", r.partition, p.dir,
                     r.last_stable_offset, open);
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the log-dir form's steps (resolve, load on the pool, count, print text or JSON), each with its error exit
int RunLsoLogDirs(const LsoArgs& a, const ResolvedPaths& resolved, const std::vector<std::string>& paths,
                  const ReplicaOptions& ro) {
  std::vector<const PartitionCopies*> held;  // the partitions PARTITION_DIR's log directory holds
  for (const PartitionCopies& p : resolved.partitions) {
    if (!p.from.empty() && p.from.front() == 0) held.push_back(&p);
  }
  std::string error;
  TxnLog txn_log;
  if (!LoadTxnLog(a.txn_log, paths, &txn_log, &error)) return Fail("lso", kExitUnreadable, error, a.json);
  for (const std::string& w : txn_log.warnings) PrintError("lso", w);
  const LsoOptions lo = LsoOptionsOf(a, txn_log);

  // Loaded on `jobs` workers, each partition into its own slot (transactions only: memory independent of
  // the record count), reported in name order.
  const size_t total = held.size();
  std::vector<LsoPartition> parts(total);
  {
    CountProgress progress("klf lso", total);
    ParallelFor(total, ResolveJobs(a.jobs, total), [&](size_t i) {
      const PartitionCopies& c = *held[i];
      LsoPartition& p = parts[i];
      p.name = c.name;
      p.dir = c.dirs.front();
      std::vector<std::string> others(c.dirs.begin() + 1, c.dirs.end());
      ReplicaState target;
      std::vector<ReplicaState> copies;
      p.loaded = LoadCopies(p.dir, others, ro, &target, &copies, &p.error);
      if (p.loaded) p.report = ExplainLso(target, copies, lo);
      progress.Done(c.name);
    });
  }
  const LsoCounts counts = CountLso(parts);
  int exit_code = counts.pinned > 0 ? kExitProblems : kExitOk;
  std::vector<std::string> unreadable;
  for (const LsoPartition& p : parts) {
    if (p.loaded) continue;
    PrintError("lso", p.error);
    unreadable.push_back(p.error);
    exit_code = kExitUnreadable;
  }
  Output out(1);
  if (a.json) {
    nlohmann::json j;
    j["logDirs"] = paths;
    j["txnLog"] = txn_log.dirs;
    j["counts"] = {{"partitions", counts.partitions},
                   {"pinned", counts.pinned},
                   {"decidedElsewhere", counts.decided_elsewhere},
                   {"healthy", counts.healthy},
                   {"unreadable", counts.unreadable}};
    j["onlyFindings"] = a.only_findings;
    j["findings"] = nlohmann::json::array();
    j["partitions"] = nlohmann::json::array();
    j["unreadable"] = nlohmann::json::array();
    for (const LsoPartition& p : parts) {
      if (!p.loaded) {
        j["unreadable"].push_back({{"partition", p.name}, {"path", p.dir}, {"error", p.error}});
        continue;
      }
      const LsoReport& r = p.report;
      if (r.pinned()) {
        nlohmann::json decided = nullptr;
        for (const LsoTxn& x : r.transactions) {
          if (x.pins && r.replicas_given) decided = x.decided_on;
        }
        j["findings"].push_back({{"partition", r.partition},
                                 {"path", p.dir},
                                 {"kind", "pinned_lso"},
                                 {"lastStableOffset", r.last_stable_offset},
                                 {"highWatermark", r.high_watermark},
                                 {"pinnedBy", TxnJson(*r.pinned_by)},
                                 {"decidedOn", decided},
                                 {"abortCommand", r.abort_command},
                                 {"resolution", r.resolution}});
      }
      if (!a.only_findings || r.pinned()) j["partitions"].push_back(SingleJson(r, p.dir, txn_log));
    }
    if (!unreadable.empty()) AddErrorFields(&j, "lso", exit_code, unreadable.front());
    WriteJson(&out, j, 2);
    out.Append("\n");
  } else {
    std::string text;
    if (!txn_log.dirs.empty()) text += "coordinator's records: " + TxnLogDirsText(txn_log) + "\n\n";
    // The pinned partitions in full, first; then one line per partition whose LSO is not pinned.
    for (const LsoPartition& p : parts) {
      if (p.loaded && p.report.pinned()) text += SingleText(p.report, p.dir, txn_log) + "\n";
    }
    for (const LsoPartition& p : parts) {
      if (!p.loaded) text += fmt::format("partition {} ({}): cannot be read: {}\n", p.name, p.dir, p.error);
    }
    if (!a.only_findings) {
      for (const LsoPartition& p : parts) {
        if (p.loaded && !p.report.pinned()) text += UnpinnedLine(p);
      }
    }
    text += fmt::format(
        "{} partitions: {} pinned ({} decided on another replica: a lost marker), {} not pinned, {} unreadable\n",
        counts.partitions, counts.pinned, counts.decided_elsewhere, counts.healthy, counts.unreadable);
    if (a.only_findings && counts.healthy > 0)
      text += fmt::format("({} partition{} not pinned not shown: --only-findings)\n", counts.healthy,
                          counts.healthy == 1 ? "" : "s");
    out.Append(EscapeInvalidUtf8(text));
  }
  out.Flush();
  if (out.failed()) return kExitUnreadable;
  return exit_code;
}

int RunLso(const LsoArgs& given) {
  LsoArgs a = given;
  std::vector<std::string> paths = {a.dir};
  paths.insert(paths.end(), a.replicas.begin(), a.replicas.end());
  std::string error;
  int exit_code = kExitUsage;
  ReplicaOptions ro;
  ro.now_ms = a.now;
  ro.producer_id_expiration_ms = a.producer_id_expiration_ms;
  ro.transactions_only = true;  // memory independent of the record count
  // PARTITION_DIR a broker log directory holding several partitions, none picked: every one of them.
  if (a.partition.empty() && ClassifyPath(a.dir).kind == PathKind::kLogDir) {
    ResolvedPaths all;
    if (!ResolvePartitionPaths(paths, 1, &all, &error, &exit_code)) return Fail("lso", exit_code, error, a.json);
    size_t held = std::count_if(all.partitions.begin(), all.partitions.end(),
                                [](const PartitionCopies& p) { return !p.from.empty() && p.from.front() == 0; });
    if (held >= 2) return RunLsoLogDirs(a, all, paths, ro);
  }
  if (!ResolveOnePartition(paths, a.partition, &paths, &error, &exit_code))
    return Fail("lso", exit_code, error, a.json);
  a.dir = paths.front();
  a.replicas.assign(paths.begin() + 1, paths.end());
  ReplicaState target;
  std::vector<ReplicaState> others;
  if (!LoadCopies(a.dir, a.replicas, ro, &target, &others, &error)) return Fail("lso", kExitUnreadable, error, a.json);
  TxnLog txn_log;
  if (!LoadTxnLog(a.txn_log, paths, &txn_log, &error)) return Fail("lso", kExitUnreadable, error, a.json);
  for (const std::string& w : txn_log.warnings) PrintError("lso", w);
  const LsoOptions lo = LsoOptionsOf(a, txn_log);
  LsoReport rep = ExplainLso(target, others, lo);
  if (a.json) {
    PrintJson(SingleJson(rep, a.dir, txn_log), 2);
  } else {
    PrintText(EscapeInvalidUtf8(SingleText(rep, a.dir, txn_log)));
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
  app->add_flag("--only-findings", args->only_findings,
                "Over a log dir: print only the pinned partitions (JSON: `partitions` holds only those; `counts` "
                "still counts all)");
  app->add_option("--jobs", args->jobs, "Over a log dir: partitions loaded at once (default: one per core)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  AddTxnLogOptions(app, &args->txn_log);
  app->add_option("--now", args->now, "clock (ms) for producer expiration and idle times; default: newest timestamp")
      ->type_name("MS");
  app->add_option("--producer-id-expiration-ms", args->producer_id_expiration_ms,
                  "producer.id.expiration.ms (default 86400000)");
  app->add_option("--bootstrap-server", args->bootstrap, "broker address printed in the abort command");
  return {app, [args] { return RunLso(*args); }};
}

}  // namespace klf::cli
