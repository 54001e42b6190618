// `klf txn describe|find-hanging [--json] PATH...`: the transaction coordinator offline. The work is
// txn/coordinator.h's; this file parses and prints.
//   describe      every transactional id of the `__transaction_state-N` partitions found in the PATHs,
//                 with the history of its records (state, producer id and epoch, partitions);
//   find-hanging  every open transaction of every other partition found in the PATHs, with the
//                 coordinator's verdict on it. Exit 1 when there is one.
//   audit         the coordinator's decisions held against every copy's markers (txn/audit.h). Exit 1
//                 when a copy contradicts the coordinator or lacks a marker.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/output.h"
#include "cli/partition_paths.h"
#include "cli/txn_log.h"
#include "txn/audit.h"
#include "txn/coordinator.h"

namespace klf::cli {
namespace {

struct TxnArgs {
  bool json = false;
  std::vector<std::string> paths;
  std::optional<int64_t> now;
  int64_t producer_id_expiration_ms = 86400000;
  bool same_cluster = false;
  unsigned jobs = 0;  // partitions loaded at once (0: one per core)
};

// What the three commands share: the PATHs' partition directories, the coordinator's
// (`__transaction_state-N`, required unless `coordinator_optional`) and the others, and the coordinator's
// records loaded from the first. False once the run has failed (*exit_code is Fail's).
struct TxnInputs {
  std::vector<std::string> txn_dirs, data_dirs;
  CoordinatorLog log;
  CollectingSink sink;
  LoadOptions options;  // for the data partitions
};
bool LoadInputs(const char* command, const TxnArgs& a, bool coordinator_optional, TxnInputs* in, int* exit_code) {
  ResolvedPaths resolved;
  std::string error;
  if (!ResolvePartitionPaths(a.paths, 1, &resolved, &error, exit_code)) {
    *exit_code = Fail(command, *exit_code, error, a.json);
    return false;
  }
  for (const PartitionCopies& p : resolved.partitions) {
    for (const std::string& d : p.dirs) {
      std::string name = p.name.empty() ? std::filesystem::path(d).lexically_normal().filename().string() : p.name;
      if (name.empty()) name = std::filesystem::path(d).lexically_normal().parent_path().filename().string();
      (IsTransactionStateDirName(name) ? in->txn_dirs : in->data_dirs).push_back(d);
    }
  }
  if (in->txn_dirs.empty() && !coordinator_optional) {
    *exit_code = Fail(command, kExitUsage, "no __transaction_state-N partition directory in the PATHs given", a.json);
    return false;
  }
  if (!LoadCoordinatorLog(in->txn_dirs, &in->log, &in->sink, &error)) {
    *exit_code = Fail(command, kExitUnreadable, error, a.json);
    return false;
  }
  in->log.same_cluster_vouched = a.same_cluster;
  in->options.now_ms = a.now;
  in->options.producer_id_expiration_ms = a.producer_id_expiration_ms;
  return true;
}

nlohmann::json RecordJson(const CoordinatorRecord& r) {
  nlohmann::json j = {
      {"file", EscapeInvalidUtf8(r.file)}, {"position", r.position}, {"offset", r.offset}, {"timestamp", r.timestamp}};
  if (r.tombstone) {
    j["tombstone"] = true;
    return j;
  }
  j["state"] = r.state;
  j["producerId"] = r.producer_id;
  j["producerEpoch"] = r.producer_epoch;
  j["partitions"] = r.partitions;
  j["transactionTimeoutMs"] = r.timeout_ms;
  j["lastUpdateTimestampMs"] = r.last_update_ms;
  j["startTimestampMs"] = r.start_ms;
  if (r.next_producer_id) j["nextProducerId"] = *r.next_producer_id;
  if (r.previous_producer_id) j["previousProducerId"] = *r.previous_producer_id;
  if (r.client_transaction_version) j["clientTransactionVersion"] = *r.client_transaction_version;
  return j;
}

std::string RecordText(const CoordinatorRecord& r) {
  if (r.tombstone) return fmt::format("offset {}: tombstone (the transactional id expired)", r.offset);
  std::string parts;
  for (const std::string& p : r.partitions) parts += (parts.empty() ? "" : ",") + p;
  return fmt::format("offset {}: {} producerId {} epoch {} partitions [{}] lastUpdate {}", r.offset, r.state,
                     r.producer_id, r.producer_epoch, parts, WithWallClock(r.last_update_ms));
}

void PrintProblems(const CollectingSink& sink) {
  for (const Problem& p : sink.problems)
    std::fprintf(stderr, "klf txn: %s: position %llu: %s\n", EscapeInvalidUtf8(p.file).c_str(),
                 (unsigned long long)p.position, p.message.c_str());
}

// What the verdict lets an operator do safely. A manual abort writes an ABORT marker: right only when
// the coordinator aborted the transaction; if it committed, the abort hides committed data.
std::string Advice(const HangingTransaction& h) {
  const CoordinatorView& c = h.coordinator;
  const size_t dash = h.topic_partition.rfind('-');
  std::string abort_cmd = fmt::format(
      "kafka-transactions.sh --bootstrap-server BROKER abort --topic {} --partition {} "
      "--start-offset {}",
      h.topic_partition.substr(0, dash), h.topic_partition.substr(dash + 1), h.first_offset);
  std::string settle = fmt::format(
      "a replica holding a marker of producer {} after offset {} (klf diff), or an older "
      "copy of __transaction_state, settles it",
      h.producer_id, h.last_offset);
  return CoordinatorAdvice(c, abort_cmd, settle);
}

int RunDescribe(const TxnArgs& a) {
  TxnInputs in;
  int exit_code = kExitOk;
  if (!LoadInputs("txn describe", a, /*coordinator_optional=*/false, &in, &exit_code)) return exit_code;
  if (a.json) {
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& [id, h] : in.log.ids) {
      nlohmann::json records = nlohmann::json::array();
      for (const CoordinatorRecord& r : h.records) records.push_back(RecordJson(r));
      ids.push_back(
          {{"transactionalId", EscapeInvalidUtf8(id)}, {"latest", RecordJson(h.latest())}, {"records", records}});
    }
    nlohmann::json j = {{"partitions", in.txn_dirs}, {"transactionalIds", ids}, {"problems", ProblemsJson(in.sink)}};
    PrintJson(j);
  } else {
    PrintProblems(in.sink);
    Output out(1);
    for (const auto& [id, h] : in.log.ids) {
      out.Append(fmt::format("transactionalId {}: {}\n", EscapeInvalidUtf8(id), RecordText(h.latest())));
      for (const CoordinatorRecord& r : h.records) out.Append(fmt::format("  {}\n", RecordText(r)));
    }
    out.Append(fmt::format("{} transactional ids in {} __transaction_state partitions\n", in.log.ids.size(),
                           in.txn_dirs.size()));
  }
  return in.sink.ErrorCount() > 0 ? kExitProblems : kExitOk;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the command's flag checks, its load and one text line per verdict
int RunFindHanging(const TxnArgs& a) {
  TxnInputs in;
  int exit_code = kExitOk;
  if (!LoadInputs("txn find-hanging", a, /*coordinator_optional=*/true, &in, &exit_code)) return exit_code;
  std::vector<std::string> unreadable;
  std::vector<HangingTransaction> hanging =
      FindHangingTransactions(in.data_dirs, in.log, in.options, &in.sink, &unreadable, a.jobs);
  if (a.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const HangingTransaction& h : hanging) {
      nlohmann::json evidence = nlohmann::json::array();
      for (const CoordinatorRecord& r : h.coordinator.evidence) evidence.push_back(RecordJson(r));
      list.push_back({{"partition", h.topic_partition},
                      {"path", EscapeInvalidUtf8(h.partition_dir)},
                      {"producerId", h.producer_id},
                      {"producerEpoch", h.producer_epoch},
                      {"firstOffset", h.first_offset},
                      {"lastOffset", h.last_offset},
                      {"lastTimestamp", h.last_timestamp},
                      {"lastStableOffset", h.last_stable_offset},
                      {"highWatermark", h.high_watermark},
                      {"pinsLso", h.pins_lso},
                      {"next", Advice(h)},
                      {"coordinator",
                       {{"verdict", CoordinatorVerdictName(h.coordinator.verdict)},
                        {"certainty", h.coordinator.certain ? "certain" : "suspected"},
                        {"transactionalId", h.coordinator.transactional_id.empty()
                                                ? nlohmann::json(nullptr)
                                                : nlohmann::json(EscapeInvalidUtf8(h.coordinator.transactional_id))},
                        {"why", h.coordinator.why},
                        {"evidence", evidence}}}});
    }
    nlohmann::json j = {{"coordinatorPartitions", in.txn_dirs},
                        {"partitionsExamined", in.data_dirs.size()},
                        {"hanging", list},
                        {"unreadable", unreadable},
                        {"problems", ProblemsJson(in.sink)}};
    PrintJson(j);
  } else {
    PrintProblems(in.sink);
    Output out(1);
    if (in.txn_dirs.empty())
      out.Append(
          "no __transaction_state partition in the PATHs: the coordinator's verdicts are unknown "
          "(give a broker log dir that holds them)\n");
    for (const HangingTransaction& h : hanging) {
      out.Append(fmt::format(
          "{}: producerId {} epoch {} open from offset {} to {} (last data written at {}){}\n", h.topic_partition,
          h.producer_id, h.producer_epoch, h.first_offset, h.last_offset, WithWallClock(h.last_timestamp),
          h.pins_lso ? fmt::format(", pins the LSO at {} (HW {})", h.last_stable_offset, h.high_watermark) : ""));
      const CoordinatorView& c = h.coordinator;
      std::string verdict = CoordinatorVerdictName(c.verdict);
      if (c.verdict == CoordinatorVerdict::kCommitted || c.verdict == CoordinatorVerdict::kAborted)
        verdict += c.certain ? " (certain)" : " (suspected)";
      out.Append(fmt::format("  coordinator: {}{}\n", verdict,
                             c.transactional_id.empty()
                                 ? ""
                                 : fmt::format(" (transactionalId {})", EscapeInvalidUtf8(c.transactional_id))));
      if (!c.why.empty()) out.Append(fmt::format("  why: {}\n", c.why));
      for (const CoordinatorRecord& r : c.evidence)
        out.Append(fmt::format("  evidence: {}: {}\n", EscapeInvalidUtf8(r.file), RecordText(r)));
      out.Append(fmt::format("  next: {}\n", Advice(h)));
    }
    out.Append(fmt::format("{} hanging transactions in {} partitions\n", hanging.size(), in.data_dirs.size()));
  }
  int code = hanging.empty() ? kExitOk : kExitProblems;
  if (!unreadable.empty()) code = WorseExit(code, kExitUnreadable);
  return code;
}

nlohmann::json FactsJson(const std::vector<AuditFact>& facts) {
  nlohmann::json out = nlohmann::json::array();
  for (const AuditFact& f : facts)
    out.push_back({{"file", EscapeInvalidUtf8(f.file)}, {"position", f.position}, {"fact", f.fact}});
  return out;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the command's flag checks, its load and one text line per finding
int RunAudit(const TxnArgs& a) {
  TxnInputs in;
  int exit_code = kExitOk;
  if (!LoadInputs("txn audit", a, /*coordinator_optional=*/false, &in, &exit_code)) return exit_code;
  AuditReport r = AuditTransactions(in.log, in.data_dirs, in.options, &in.sink, a.jobs);
  if (a.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const AuditFinding& f : r.findings) {
      list.push_back({{"kind", AuditKindName(f.kind)},
                      {"certainty", f.certain ? "certain" : "suspected"},
                      {"partition", f.topic_partition},
                      {"path", EscapeInvalidUtf8(f.partition_dir)},
                      {"transactionalId", EscapeInvalidUtf8(f.transactional_id)},
                      {"producerId", f.producer_id},
                      {"dataEpoch", f.data_epoch},
                      {"markerEpoch", f.marker_epoch},
                      {"coordinatorOutcome", f.committed ? "commit" : "abort"},
                      {"coordinatorRecord", RecordJson(f.decision)},
                      {"facts", FactsJson(f.facts)},
                      {"why", f.why}});
    }
    nlohmann::json j = {{"coordinatorPartitions", in.txn_dirs},
                        {"partitionCopies", r.partition_copies},
                        {"decisions", r.decisions},
                        {"decisionsJudged", r.version2_decisions},
                        {"decisionsNotJudged", r.unjudged_decisions},
                        {"markersChecked", r.markers_checked},
                        {"markersAgree", r.markers_agree},
                        {"findings", list},
                        {"unreadable", r.unreadable},
                        {"otherCluster", r.foreign},
                        {"problems", ProblemsJson(in.sink)}};
    PrintJson(j);
  } else {
    PrintProblems(in.sink);
    Output out(1);
    for (const AuditFinding& f : r.findings) {
      out.Append(fmt::format("{}: {} ({}): producer {}, transactional id '{}', coordinator: {}\n", f.topic_partition,
                             AuditKindName(f.kind), f.certain ? "certain" : "suspected", f.producer_id,
                             EscapeInvalidUtf8(f.transactional_id), f.committed ? "COMMIT" : "ABORT"));
      out.Append(fmt::format("  why: {}\n", f.why));
      out.Append(fmt::format("  coordinator: {}: {}\n", EscapeInvalidUtf8(f.decision.file), RecordText(f.decision)));
      for (const AuditFact& x : f.facts)
        out.Append(fmt::format("  replica: {}: position {}: {}\n", EscapeInvalidUtf8(x.file), x.position, x.fact));
    }
    out.Append(fmt::format(
        "{} decisions of the coordinator ({} judged under transaction version 2, {} not judged: version 0/1 "
        "records cannot be tied to one marker); {} partition copies; {} markers checked, {} agree; {} "
        "findings\n",
        r.decisions, r.version2_decisions, r.unjudged_decisions, r.partition_copies, r.markers_checked, r.markers_agree,
        r.findings.size()));
  }
  int code = r.findings.empty() && r.foreign.empty() ? kExitOk : kExitProblems;
  if (!r.unreadable.empty()) code = WorseExit(code, kExitUnreadable);
  return code;
}

}  // namespace

Command AddTxnCommand(CLI::App* parent) {
  auto args = std::make_shared<TxnArgs>();
  CLI::App* app =
      parent->add_subcommand("txn", "The transaction coordinator offline: __transaction_state and open transactions");
  app->require_subcommand(1);
  CLI::App* describe =
      app->add_subcommand("describe", "Every transactional id of the __transaction_state partitions, with its history");
  CLI::App* hanging =
      app->add_subcommand("find-hanging", "Every open transaction of the partitions, with the coordinator's verdict");
  CLI::App* audit = app->add_subcommand(
      "audit", "The coordinator's decisions held against every partition copy's markers and .txnindex");
  for (CLI::App* sub : {describe, hanging, audit}) {
    sub->add_option("PATH", args->paths, "broker log directories or partition directories (never modified)")
        ->required();
    sub->add_flag("--json", args->json, "print one JSON object");
  }
  for (CLI::App* sub : {hanging, audit}) {
    sub->add_option("--now", args->now, "clock (ms) for producer expiration; default: none expire");
    sub->add_option("--producer-id-expiration-ms", args->producer_id_expiration_ms, "producer.id.expiration.ms");
    sub->add_flag("--same-cluster", args->same_cluster, kSameClusterHelp);
    sub->add_option("--jobs", args->jobs,
                    "partitions loaded at once (default: one per core); the output does not depend on it")
        ->check(CLI::Range(0, 256));
  }
  return {app, [args, describe, hanging, audit]() {
            if (describe->parsed()) return RunDescribe(*args);
            if (hanging->parsed()) return RunFindHanging(*args);
            if (audit->parsed()) return RunAudit(*args);
            return int(kExitUsage);
          }};
}

}  // namespace klf::cli
