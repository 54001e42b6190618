// klf reindex PARTITION_DIR --out LOG_DIR [--config KEY=VALUE]... [--force] [--json]
//
// Writes a copy of a partition directory whose `.log` files are unchanged and whose `.index`,
// `.timeindex`, `.txnindex`, producer snapshots and leader-epoch-checkpoint are rebuilt as Kafka's
// segment recovery rebuilds them (segment_writer.h ReindexPartition).
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/output.h"
#include "segment_reader/capture.h"
#include "segment_reader/problem.h"
#include "segment_writer/output_guard.h"
#include "segment_writer/segment_writer.h"

namespace klf::cli {
namespace {

struct ReindexArgs {
  std::string dir;
  std::string out;
  std::vector<std::string> configs;
  bool force = false;
  bool json = false;
};

bool ParseInt64(const std::string& s, int64_t* v) {
  try {
    size_t used = 0;
    long long x = std::stoll(s, &used);
    if (used != s.size()) return false;
    *v = x;
    return true;
  } catch (...) {
    return false;
  }
}

// Kafka property names; only those that change what reindex writes.
bool ApplyConfig(const std::string& kv, ReindexOptions* o, std::string* error) {
  auto eq = kv.find('=');
  if (eq == std::string::npos) {
    *error = "--config expects KEY=VALUE, got '" + kv + "'";
    return false;
  }
  std::string key = kv.substr(0, eq);
  int64_t v = 0;
  if (!ParseInt64(kv.substr(eq + 1), &v)) {
    *error = "--config " + key + ": not an integer: '" + kv.substr(eq + 1) + "'";
    return false;
  }
  if (key == "index.interval.bytes" && v >= 0 && v <= INT32_MAX) {
    o->config.index_interval_bytes = int32_t(v);
  } else if (key == "segment.index.bytes" && v >= 24 && v <= INT32_MAX) {
    o->config.segment_index_bytes = int32_t(v);
  } else if (key == "segment.bytes" && v > 0) {
    o->config.segment_bytes = v;
  } else if (key == "producer.id.expiration.ms" && v >= 0) {
    o->producer_state.producer_id_expiration_ms = v;
  } else {
    *error = "--config " + key + "=" + std::to_string(v) +
             ": unknown or out of range (reindex takes index.interval.bytes, segment.index.bytes, "
             "segment.bytes, producer.id.expiration.ms)";
    return false;
  }
  return true;
}

int RunReindex(const ReindexArgs& a) {
  ReindexOptions options;
  options.force = a.force;
  std::string error;
  for (const std::string& kv : a.configs) {
    if (!ApplyConfig(kv, &options, &error)) return Fail("reindex", kExitUsage, error, a.json);
  }
  // The output guard (segment_writer/output_guard.h) before any work: a refused --out (an input, or
  // an existing directory that is not a klf output to replace with --force) is a usage error; an
  // unreadable input is exit 3.
  if (!CheckOutputPath({a.out, OutputKind::kDirectory, {a.dir}, a.force}, nullptr, &error)) {
    return Fail("reindex", kExitUsage, error, a.json);
  }
  if (!IsInputDir(a.dir)) {
    return Fail("reindex", kExitUnreadable, a.dir + ": not a partition directory", a.json);
  }
  CollectingSink sink;
  ReindexResult result;
  if (!ReindexPartition(Env::Default(), a.dir, a.out, options, &result, &sink, &error)) {
    return Fail("reindex", kExitUnreadable, error, a.json);
  }
  if (a.json) {
    nlohmann::json j;
    j["out"] = a.out;
    j["outPartitionDir"] = result.out_partition_dir;
    j["segments"] = result.segments;
    j["batches"] = result.batches;
    j["logEndOffset"] = result.log_end_offset;
    j["filesWritten"] = result.files_written;
    j["problems"] = ProblemsJson(sink);
    PrintJson(j);
  } else {
    for (const Problem& p : sink.problems) {
      std::fprintf(stderr, "klf reindex: %s: %s at position %llu: %s\n", SeverityName(p.severity),
                   EscapeInvalidUtf8(p.file).c_str(), static_cast<unsigned long long>(p.position), p.message.c_str());
    }
    PrintText(fmt::format("wrote {}: {} segments, {} batches, log end offset {}, {} files\n",
                          EscapeInvalidUtf8(result.out_partition_dir), result.segments, result.batches,
                          result.log_end_offset, result.files_written.size()));
  }
  // Exit codes mean the same in every command: errors make it 1, warnings do not.
  for (const Problem& p : sink.problems) {
    if (p.severity == Severity::kError) return kExitProblems;
  }
  return kExitOk;
}

}  // namespace

Command AddReindexCommand(CLI::App* parent) {
  auto args = std::make_shared<ReindexArgs>();
  CLI::App* app = parent->add_subcommand(
      "reindex",
      "Copy a partition directory with .log files unchanged and .index, .timeindex, .txnindex, producer\n"
      "snapshots and leader-epoch-checkpoint rebuilt as Kafka's segment recovery does.");
  app->add_option("PARTITION_DIR", args->dir, "partition directory to read (never modified)")->required();
  app->add_option("--out", args->out,
                  "output log directory: receives <topic>-<partition>/ and its log-dir checkpoints (complete or "
                  "absent)")
      ->required();
  app->add_option("--config", args->configs,
                  "KEY=VALUE: index.interval.bytes (default 4096), segment.index.bytes, segment.bytes, "
                  "producer.id.expiration.ms");
  app->add_flag("--force", args->force, "replace an existing --out that a previous klf run wrote");
  app->add_flag("--json", args->json, "print a JSON summary");
  return {app, [args] { return RunReindex(*args); }};
}

}  // namespace klf::cli
