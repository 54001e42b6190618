// `klf repair --replica DIR... --target DIR --out DIR [--dry-run] [--json] [--force] [--now MS]
// [--assume PID@FIRST=commit|abort]... [--txn-log DIR]... [--no-txn-log] [--rebuild-from DIR]` and
// `klf repair --salvage DIR --out DIR` (spec cli.md "repair"). The work is repair/repair.h's and salvage/salvage.h's;
// this file parses, prints the plan and the result. Exit: 0 the copy was written and diff finds no divergence left
// (salvage: the input had no damage); 1 problems (findings to repair in a dry run, an unrepairable or undecided
// ("left") finding or a divergence left, salvage dropped something); 2 usage; 3 an input cannot be read or the copy
// cannot be written.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/output.h"
#include "cli/partition_paths.h"
#include "cli/txn_log.h"
#include "repair/repair.h"
#include "salvage/salvage.h"
#include "segment_reader/capture.h"
#include "segment_reader/bytes.h"
#include "segment_reader/layout.h"
#include "segment_writer/output_guard.h"

namespace klf::cli {
namespace {

struct RepairArgs {
  std::vector<std::string> replicas;
  std::string target;
  std::string partition;  // --partition T-P: which partition of the broker log directories given
  std::string salvage;
  std::string out;
  bool dry_run = false;
  bool json = false;
  bool force = false;
  std::optional<int64_t> now;
  std::vector<std::string> configs;
  std::vector<std::string> assume;
  TxnLogArgs txn_log;
  std::string rebuild_from;
  uint64_t memory_budget_mib = 2048;
};

bool ApplyConfig(const std::string& kv, LogConfig* config, int64_t* expiration, std::string* error) {
  auto eq = kv.find('=');
  long long v = 0;
  try {
    size_t used = 0;
    if (eq == std::string::npos) throw 0;
    v = std::stoll(kv.substr(eq + 1), &used);
    if (used != kv.size() - eq - 1) throw 0;
  } catch (...) {
    *error = "--config expects KEY=INTEGER, got '" + kv + "'";
    return false;
  }
  std::string key = kv.substr(0, eq);
  if (key == "index.interval.bytes" && v >= 0 && v <= INT32_MAX) {
    config->index_interval_bytes = int32_t(v);
  } else if (key == "segment.index.bytes" && v >= 24 && v <= INT32_MAX) {
    config->segment_index_bytes = int32_t(v);
  } else if (key == "producer.id.expiration.ms" && v >= 0) {
    *expiration = v;
  } else {
    *error = "--config " + kv +
             ": unknown or out of range (repair takes index.interval.bytes, segment.index.bytes, "
             "producer.id.expiration.ms)";
    return false;
  }
  return true;
}

std::string KeyText(const Finding& f) {
  if (!f.has_key) return "";
  return f.key ? FormatBytes(AsBytes(*f.key), BytesFormat::kText) : "null";
}

nlohmann::json FindingJson(const Finding& f, const std::vector<std::string>& labels) {
  nlohmann::json affected = nlohmann::json::array(), healthy = nlohmann::json::array();
  for (size_t i : f.affected) affected.push_back(i < labels.size() ? labels[i] : std::to_string(i));
  for (size_t i : f.healthy) healthy.push_back(i < labels.size() ? labels[i] : std::to_string(i));
  return {{"kind", FindingKindName(f.kind)},
          {"key", f.has_key && f.key ? nlohmann::json(KeyText(f)) : nlohmann::json(nullptr)},
          {"offsets",
           f.first_offset >= 0 ? nlohmann::json::array({f.first_offset, f.last_offset}) : nlohmann::json::array()},
          {"producerId", IntOrNull(f.producer_id)},
          {"producerEpoch", IntOrNull(f.producer_epoch)},
          {"affectedReplicas", affected},
          {"healthyReplicas", healthy},
          {"evidence", f.evidence}};
}

nlohmann::json ActionJson(const RepairAction& a) {
  nlohmann::json j = {{"action", RepairActionKindName(a.kind)},
                      {"finding", FindingKindName(a.finding)},
                      {"offset", a.offset},
                      {"reason", a.reason},
                      {"certainty", a.certainty == Certainty::kNone ? nlohmann::json(nullptr)
                                                                    : nlohmann::json(CertaintyName(a.certainty))}};
  if (!a.proof.empty()) j["proof"] = a.proof;
  if (a.kind == RepairActionKind::kLeft) {
    j["producerId"] = a.producer_id;
    j["producerEpoch"] = a.producer_epoch;
    j["recordsAtStake"] = a.records_at_stake;
    j["assume"] = {a.assume_key + "=commit", a.assume_key + "=abort"};
  }
  if (a.kind == RepairActionKind::kInsertMarker) {
    j["marker"] = {{"type", ControlTypeName(a.marker_type)},
                   {"producerId", a.producer_id},
                   {"producerEpoch", a.producer_epoch},
                   {"coordinatorEpoch", a.coordinator_epoch},
                   {"timestamp", a.timestamp},
                   {"partitionLeaderEpoch", a.partition_leader_epoch},
                   {"replacesEmptyBatch", a.replaces_empty_batch},
                   {"window", {a.window_after, a.window_before}}};
  }
  if (a.kind == RepairActionKind::kRemoveRecords) j["removedOffsets"] = a.removed_offsets;
  if (a.kind == RepairActionKind::kCopyBatch) {
    j["source"] = {{"file", a.source_file}, {"position", a.source_position}, {"lastOffset", a.source_last_offset}};
  }
  return j;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the command's flag checks and the order of its steps
int RunSalvage(const RepairArgs& a, const LogConfig& config, int64_t expiration) {
  if (!IsInputDir(a.salvage)) {
    return Fail("repair", kExitUnreadable, a.salvage + ": not a partition directory", a.json);
  }
  SalvageOptions so;
  so.config = config;
  so.producer_id_expiration_ms = expiration;
  so.force = a.force;
  SalvageResult r;
  std::string error;
  if (!SalvagePartition(Env::Default(), a.salvage, a.out, so, &r, &error)) {
    return Fail("repair", kExitUnreadable, error, a.json);
  }
  if (a.json) {
    nlohmann::json j;
    j["out"] = r.out_partition_dir;
    j["segmentsKept"] = r.segments_kept;
    j["batchesKept"] = r.batches_kept;
    j["logEndOffset"] = r.log_end_offset;
    j["dropped"] = nlohmann::json::array();
    for (const SalvageDrop& d : r.dropped) {
      j["dropped"].push_back({{"file", d.file},
                              {"position", d.position},
                              {"bytes", d.bytes},
                              {"batches", d.batches},
                              {"firstOffset", IntOrNull(d.first_offset)},
                              {"lastOffset", IntOrNull(d.last_offset)},
                              {"wholeSegment", d.whole_segment},
                              {"unreadable", d.unreadable},
                              {"reason", d.reason}});
    }
    j["unreadable"] = r.unreadable;
    PrintJson(j, 2);
  } else {
    std::string out = fmt::format("salvaged {} -> {}: {} segments, {} batches kept, log end offset {}\n", a.salvage,
                                  r.out_partition_dir, r.segments_kept, r.batches_kept, r.log_end_offset);
    if (r.dropped.empty() && r.unreadable.empty()) out += "nothing dropped: every batch is valid\n";
    for (const std::string& u : r.unreadable) out += "cannot read " + u + "\n";
    for (const SalvageDrop& d : r.dropped) {
      if (d.unreadable) {
        out += fmt::format("dropped {} (offsets {}..{}): {}\n", d.file, *d.first_offset,
                           d.last_offset ? std::to_string(*d.last_offset) : "its end", d.reason);
        continue;
      }
      out += fmt::format("dropped {} bytes of {} from position {}{}: {}\n", d.bytes, d.file, d.position,
                         d.first_offset ? fmt::format(" ({} framed batches, offsets {}..{})", d.batches,
                                                      *d.first_offset, *d.last_offset)
                                        : " (no batch could be framed there)",
                         d.reason);
    }
    PrintText(EscapeInvalidUtf8(out));
  }
  return r.dropped.empty() && r.unreadable.empty() ? kExitOk : kExitProblems;
}

int RunResolved(const RepairArgs& a, RepairOptions options);
int RunRebuild(const RepairArgs& a, const RepairOptions& options);

nlohmann::json ChangesJson(const RepairResult& r) {
  nlohmann::json keys = nlohmann::json::array();
  for (const auto& [from, to] : r.keys_changed) {
    keys.push_back({{"latestBefore", from < 0 ? nlohmann::json(nullptr) : nlohmann::json(from)},
                    {"latestAfter", to < 0 ? nlohmann::json(nullptr) : nlohmann::json(to)}});
  }
  return {{"becameVisible", r.became_visible},
          {"becameVisibleCount", r.became_visible_count},
          {"becameHidden", r.became_hidden},
          {"becameHiddenCount", r.became_hidden_count},
          {"keysChanged", keys},
          {"keysChangedCount", r.keys_changed_count}};
}

std::string OffsetsText(const std::vector<int64_t>& v, size_t count) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 20; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  if (count > 20) s += fmt::format(",... ({} in all)", count);
  return s;
}

std::string ChangesText(const RepairResult& r) {
  std::string out = "for read_committed consumers of the copy (against the target): ";
  if (!r.became_visible_count && !r.became_hidden_count && !r.keys_changed_count) return out + "nothing changed\n";
  out += fmt::format(
      "{} record(s) became visible{}, {} became hidden{}, {} key(s) changed their latest value", r.became_visible_count,
      r.became_visible_count ? " (offsets " + OffsetsText(r.became_visible, r.became_visible_count) + ")" : "",
      r.became_hidden_count,
      r.became_hidden_count ? " (offsets " + OffsetsText(r.became_hidden, r.became_hidden_count) + ")" : "",
      r.keys_changed_count);
  for (size_t i = 0; i < r.keys_changed.size() && i < 20; ++i) {
    auto [from, to] = r.keys_changed[i];
    out += fmt::format("{} {}->{}", i ? "," : ":", from < 0 ? "none" : std::to_string(from),
                       to < 0 ? "none" : std::to_string(to));
  }
  if (r.keys_changed_count > 20) out += ",...";
  if (r.keys_changed_count) out += " (offset of the key's latest record before->after)";
  return out + "\n";
}

// The written copy in --json ("result"); a rebuilt copy has no markers inserted or records removed.
nlohmann::json ResultJson(const RepairResult& result, bool rebuilt) {
  nlohmann::json rem = nlohmann::json::array();
  for (const Finding& f : result.remaining) rem.push_back(FindingJson(f, result.remaining_labels));
  nlohmann::json j = {{"out", result.out_partition_dir},
                      {"segments", result.segments},
                      {"batchesWritten", result.batches_written},
                      {"batchesCopied", result.batches_copied},
                      {"logEndOffset", result.log_end_offset},
                      {"lastStableOffset", result.last_stable_offset},
                      {"remainingDivergences", rem},
                      {"consumerChanges", ChangesJson(result)}};
  if (!rebuilt) {
    j["markersInserted"] = result.markers_inserted;
    j["recordsRemoved"] = result.records_removed;
  }
  return j;
}

std::string RemainingText(const RepairResult& result) {
  std::string out;
  for (const Finding& f : result.remaining) {
    out += fmt::format("still divergent: {} offsets {}..{}: {}\n", FindingKindName(f.kind), f.first_offset,
                       f.last_offset, f.evidence);
  }
  return out;
}

// "repaired" when every step answering the finding writes something (with its certainty), else "left: ...".
std::string FindingStatus(const RepairPlan& plan, size_t i) {
  std::string status;
  for (const RepairAction& x : plan.actions) {
    if (x.finding_index != int(i)) continue;
    if (x.kind == RepairActionKind::kLeft) return "left (outcome unknown)";
    if (x.kind == RepairActionKind::kUnrepairable) return "left (unrepairable)";
    status = fmt::format("repaired ({})", CertaintyName(x.certainty));
  }
  // Several findings may share one step (duplicates are dropped): the step kept answers them all.
  return status.empty() ? "see the step of an equal finding" : status;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the command's flag checks and the order of its steps
int RunRepair(const RepairArgs& a) {
  RepairOptions options;
  options.now_ms = a.now;
  options.force = a.force;
  options.memory_budget_bytes = a.memory_budget_mib << 20;
  std::string error;
  for (const std::string& kv : a.configs) {
    if (!ApplyConfig(kv, &options.config, &options.producer_id_expiration_ms, &error)) {
      return Fail("repair", kExitUsage, error, a.json);
    }
  }
  for (const std::string& x : a.assume) {
    RepairAssumption r;
    if (!ParseRepairAssumption(x, &r, &error)) return Fail("repair", kExitUsage, error, a.json);
    options.assumptions.push_back(r);
  }
  if (!a.rebuild_from.empty() && !options.assumptions.empty()) {
    return Fail("repair", kExitUsage, "--rebuild-from judges no transaction: it takes no --assume", a.json);
  }
  if (!a.salvage.empty()) {
    if (!a.target.empty() || !a.replicas.empty() || !a.rebuild_from.empty()) {
      return Fail("repair", kExitUsage, "--salvage takes no --target, --replica or --rebuild-from", a.json);
    }
  } else if (!a.rebuild_from.empty()) {
    if (a.target.empty()) return Fail("repair", kExitUsage, "--rebuild-from needs --target", a.json);
  } else if (a.target.empty() || a.replicas.empty()) {
    return Fail("repair", kExitUsage, "--target and at least one --replica are required (or --salvage DIR)", a.json);
  }
  if (a.out.empty() && !(a.dry_run && a.salvage.empty())) {
    return Fail("repair", kExitUsage, "--out is required (unless --dry-run)", a.json);
  }
  // The output guard (segment_writer/output_guard.h) before any work: --out must stay clear of the
  // target, every --replica and --salvage (and their broker log dirs), and replaces only a previous
  // klf output (--force). A dry run writes nothing.
  if (!a.out.empty() && !a.dry_run) {
    std::vector<std::string> inputs = a.replicas;
    for (const std::string* p : {&a.target, &a.salvage, &a.rebuild_from}) {
      if (!p->empty()) inputs.push_back(*p);
    }
    inputs.insert(inputs.end(), a.txn_log.dirs.begin(), a.txn_log.dirs.end());
    if (!CheckOutputPath({a.out, OutputKind::kDirectory, inputs, a.force}, nullptr, &error)) {
      return Fail("repair", kExitUsage, error, a.json);
    }
  }
  if (!a.salvage.empty()) return RunSalvage(a, options.config, options.producer_id_expiration_ms);

  RepairArgs resolved = a;
  if (!resolved.rebuild_from.empty()) resolved.replicas.push_back(resolved.rebuild_from);
  std::vector<std::string> paths = {resolved.target};
  paths.insert(paths.end(), resolved.replicas.begin(), resolved.replicas.end());
  int exit_code = kExitUsage;
  if (!ResolveOnePartition(paths, a.partition, &paths, &error, &exit_code))
    return Fail("repair", exit_code, error, a.json);
  resolved.target = paths.front();
  resolved.replicas.assign(paths.begin() + 1, paths.end());
  if (!resolved.rebuild_from.empty()) {
    resolved.rebuild_from = resolved.replicas.back();
    resolved.replicas.pop_back();
  }
  return RunResolved(resolved, options);
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the command's steps (plan, guard the outputs, write, print) with their error exits
int RunResolved(const RepairArgs& a, RepairOptions options) {
  std::string error;
  for (const std::string& d : a.replicas) {
    if (!IsInputDir(d)) {
      return Fail("repair", kExitUnreadable, d + ": not a partition directory", a.json);
    }
  }
  if (!IsInputDir(a.target)) {
    return Fail("repair", kExitUnreadable, a.target + ": not a partition directory", a.json);
  }
  if (!a.rebuild_from.empty()) return RunRebuild(a, options);
  // The coordinator's records (--txn-log, or found in the replicas' log dirs) prove what no replica does.
  std::vector<std::string> paths = a.replicas;
  paths.push_back(a.target);
  TxnLog txn_log;
  if (!LoadTxnLog(a.txn_log, paths, &txn_log, &error)) return Fail("repair", kExitUnreadable, error, a.json);
  for (const std::string& w : txn_log.warnings) PrintError("repair", w);
  options.coordinator = txn_log.get();
  RepairPlan plan;
  if (!PlanRepair(a.replicas, a.target, options, &plan, &error)) return Fail("repair", kExitUnreadable, error, a.json);
  if (!plan.unmatched_assumptions.empty()) {
    return Fail("repair", kExitUsage,
                fmt::format("--assume {}: no undecided transaction of the target has that producer id and first "
                            "offset (a \"left\" step of the plan names the PID@FIRST_OFFSET to use)",
                            fmt::join(plan.unmatched_assumptions, ", ")),
                a.json);
  }
  RepairResult result;
  bool wrote = false;
  if (!a.dry_run) {
    if (!WriteRepairedCopy(Env::Default(), plan, a.out, options, &result, &error)) {
      return Fail("repair", kExitUnreadable, error, a.json);
    }
    wrote = true;
  }
  int exit = kExitOk;
  if (a.dry_run) exit = plan.findings.empty() ? kExitOk : kExitProblems;
  if (plan.HasUnrepairable() || (wrote && !result.remaining.empty())) exit = kExitProblems;

  if (a.json) {
    nlohmann::json j;
    j["partition"] = plan.partition;
    j["target"] = plan.target;
    j["healthyReplicas"] = plan.healthy;
    j["txnLog"] = txn_log.dirs;
    j["dryRun"] = a.dry_run;
    j["findings"] = nlohmann::json::array();
    for (size_t i = 0; i < plan.findings.size(); ++i) {
      nlohmann::json fj = FindingJson(plan.findings[i], plan.replica_labels);
      fj["status"] = FindingStatus(plan, i);
      j["findings"].push_back(fj);
    }
    j["plan"] = nlohmann::json::array();
    for (const RepairAction& x : plan.actions) j["plan"].push_back(ActionJson(x));
    if (wrote) j["result"] = ResultJson(result, /*rebuilt=*/false);
    PrintJson(j, 2);
    return exit;
  }
  std::string out =
      fmt::format("partition {}: target {}, healthy {}\n", plan.partition, plan.target, fmt::join(plan.healthy, ", "));
  if (!txn_log.dirs.empty()) out += "coordinator's records: " + TxnLogDirsText(txn_log) + "\n";
  if (plan.findings.empty())
    out += "no divergence of the target: nothing to repair (the copy is the target, reindexed)\n";
  for (size_t i = 0; i < plan.findings.size(); ++i) {
    const Finding& f = plan.findings[i];
    std::string head = FindingKindName(f.kind);
    out += fmt::format("finding  {}{}{} offsets {}..{}: {}\n", head,
                       f.producer_id ? fmt::format(" producer {}", *f.producer_id) : "",
                       f.has_key ? " key " + KeyText(f) : "", f.first_offset, f.last_offset, FindingStatus(plan, i));
  }
  if (!plan.actions.empty()) out += "plan:\n";
  int n = 0;
  for (const RepairAction& x : plan.actions) {
    out +=
        fmt::format("  {}. {}{}: {}\n", ++n, RepairActionKindName(x.kind),
                    x.certainty == Certainty::kNone ? "" : fmt::format(" ({})", CertaintyName(x.certainty)), x.reason);
  }
  size_t left = std::count_if(plan.actions.begin(), plan.actions.end(),
                              [](const RepairAction& x) { return x.kind == RepairActionKind::kLeft; });
  if (left) {
    out += fmt::format(
        "{} transaction(s) left undecided: their outcome is not proven by the files; decide each with "
        "--assume PID@FIRST_OFFSET=commit|abort, or use --rebuild-from DIR (exit 1)\n",
        left);
  }
  if (a.dry_run) {
    out += "dry run: nothing written\n";
  } else {
    out += fmt::format(
        "wrote {}: {} segments, {} batches ({} markers inserted, {} batches copied, {} records removed), "
        "log end offset {}, last stable offset {}\n",
        result.out_partition_dir, result.segments, result.batches_written, result.markers_inserted,
        result.batches_copied, result.records_removed, result.log_end_offset, result.last_stable_offset);
    out += ChangesText(result);
    if (result.remaining.empty()) out += "diff of the copy against the healthy replicas: no divergence\n";
    out += RemainingText(result);
  }
  PrintText(EscapeInvalidUtf8(out));
  return exit;
}

int RunRebuild(const RepairArgs& a, const RepairOptions& options) {
  std::string error;
  if (!IsInputDir(a.rebuild_from)) {
    return Fail("repair", kExitUnreadable, a.rebuild_from + ": not a partition directory", a.json);
  }
  if (a.dry_run) {
    std::string msg = fmt::format(
        "dry run: would rebuild {} from {} (every batch of {} from its log start, byte for "
        "byte); nothing written",
        a.target, a.rebuild_from, a.rebuild_from);
    if (a.json) {
      PrintJson(nlohmann::json{{"target", a.target}, {"rebuildFrom", a.rebuild_from}, {"dryRun", true}}, 2);
    } else {
      PrintText(msg + "\n");
    }
    return kExitOk;
  }
  RepairResult result;
  if (!WriteRebuiltCopy(Env::Default(), a.rebuild_from, a.target, a.replicas, a.out, options, &result, &error)) {
    return Fail("repair", kExitUnreadable, error, a.json);
  }
  int exit = result.remaining.empty() ? kExitOk : kExitProblems;
  if (a.json) {
    nlohmann::json j;
    j["target"] = a.target;
    j["rebuildFrom"] = a.rebuild_from;
    j["healthyReplicas"] = a.replicas;
    j["dryRun"] = false;
    j["plan"] = nlohmann::json::array({{{"action", "rebuild"},
                                        {"certainty", "certain"},
                                        {"reason",
                                         "the target is written as a follower holds the partition after "
                                         "re-fetching the whole log from " +
                                             a.rebuild_from}}});
    j["result"] = ResultJson(result, /*rebuilt=*/true);
    PrintJson(j, 2);
    return exit;
  }
  std::string out = fmt::format(
      "rebuilt {} from {} -> {}: {} segments, {} batches copied byte for byte, log end offset {}, last stable offset "
      "{} (certain: no transaction outcome is judged, the copy is what a follower re-fetching from {} holds)\n",
      a.target, a.rebuild_from, result.out_partition_dir, result.segments, result.batches_copied, result.log_end_offset,
      result.last_stable_offset, a.rebuild_from);
  out += ChangesText(result);
  if (result.remaining.empty()) {
    out += fmt::format("diff of the copy against {}{}: no divergence\n", a.rebuild_from,
                       a.replicas.empty() ? "" : " and the other replicas");
  }
  out += RemainingText(result);
  PrintText(EscapeInvalidUtf8(out));
  return exit;
}

}  // namespace

Command AddRepairCommand(CLI::App* parent) {
  auto args = std::make_shared<RepairArgs>();
  CLI::App* app = parent->add_subcommand(
      "repair", "Write a repaired copy of a diverged replica that agrees with the healthy ones (or --salvage)");
  app->footer(
      "Lost ABORT/COMMIT markers and hanging transactions get a marker only when the files prove the\n"
      "outcome (or --assume decides it), at a free offset inside the transaction's window; an undecided\n"
      "transaction is left alone and listed (exit 1). --rebuild-from DIR writes the target as a follower\n"
      "re-fetching the whole log from DIR. Stale values of deleted keys are removed; indexes,\n"
      ".txnindex, producer snapshots and leader-epoch-checkpoint are rebuilt; the copy is diffed again.\n"
      "--salvage DIR truncates a damaged partition at its first invalid batch and deletes later segments,\n"
      "as Kafka's recovery does, and reports what was dropped. Inputs are never modified.\n"
      "Exit: 0 repaired (nothing left) / salvage found no damage; 1 findings (dry run), unrepairable or\n"
      "left-over divergence, salvage dropped data; 2 usage; 3 unreadable input.");
  app->add_option("--partition", args->partition,
                  "with broker log directories holding several partitions: the one to work on")
      ->type_name("T-P");
  app->add_option("--replica", args->replicas, "a healthy replica's partition directory (repeat)")->type_name("DIR");
  app->add_option("--target", args->target, "the diverged replica's partition directory")->type_name("DIR");
  app->add_option("--salvage", args->salvage, "a damaged partition directory to salvage")->type_name("DIR");
  app->add_option("--out", args->out,
                  "output log directory: receives <topic>-<partition>/ and its checkpoint files (complete or absent)")
      ->type_name("DIR");
  app->add_flag("--dry-run", args->dry_run, "print the plan, write nothing");
  app->add_flag("--json", args->json, "print the findings, plan and result as JSON");
  app->add_flag("--force", args->force, "replace an existing --out that a previous klf run wrote");
  app->add_option("--now", args->now, "clock (ms) for producer expiration when loading snapshots")->type_name("MS");
  app->add_option("--memory-budget", args->memory_budget_mib,
                  "memory for the per-record state of the replicas held at once (MiB; about 100 bytes per record; "
                  "a replica that needs more is reported, exit 3)")
      ->type_name("MIB")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 40))
      ->capture_default_str();
  app->add_option("--assume", args->assume,
                  "PRODUCER_ID@FIRST_OFFSET=commit|abort: decide an undecided transaction (a \"left\" step names "
                  "it); the step is marked assumed (repeat)")
      ->type_name("PID@FIRST=OUTCOME");
  AddTxnLogOptions(app, &args->txn_log);
  app->add_option("--rebuild-from", args->rebuild_from,
                  "write the target as a follower holds it after re-fetching the whole log from this replica "
                  "(no verdict needed; --replica optional, diffed after)")
      ->type_name("DIR");
  app->add_option("--config", args->configs,
                  "KEY=VALUE: index.interval.bytes (default 4096), segment.index.bytes, producer.id.expiration.ms");
  return {app, [args] { return RunRepair(*args); }};
}

}  // namespace klf::cli
