// klf compact PARTITION_DIR --out DIR [--now MS] [--config KEY=VALUE]... [--only-if-eligible]
//             [--passes N] [--pass-interval-ms MS] [--explain] [--json] [--force]
//
// Runs Kafka's log cleaner offline on a copy of a partition directory (compactor/cleaner.h) and
// prints what a broker would have decided and done (spec cli.md "compact").
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/metadata_log.h"
#include "cli/output.h"
#include "compactor/cleaner.h"
#include "partition/coordination.h"
#include "partition/loaded_log.h"
#include "segment_reader/capture.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/layout.h"
#include "segment_reader/problem.h"
#include "segment_writer/output_guard.h"

namespace klf::cli {
namespace {

struct CompactArgs {
  std::string dir;
  std::string out;
  std::vector<std::string> configs;
  int64_t now = -1;
  bool only_if_eligible = false;
  int passes = 1;
  int64_t pass_interval_ms = 0;
  bool explain = false;
  bool force = false;
  std::string mode = "uncoordinated";
  std::vector<std::string> replicas;
  std::optional<int64_t> high_watermark;
  std::optional<int64_t> first_dirty_offset;
  MetadataLogArgs metadata;
  CommonOptions common;
};

// The keys given with --config: they win over the metadata log's.
std::vector<std::string> ExplicitKeys(const std::vector<std::string>& configs) {
  std::vector<std::string> keys;
  for (const std::string& kv : configs) keys.push_back(kv.substr(0, kv.find('=')));
  return keys;
}

std::optional<std::string> TopicOf(const std::string& partition_dir) {
  std::optional<TopicPartition> tp = ParsePartitionDirName(PartitionDirBaseName(partition_dir));
  if (!tp) return std::nullopt;
  return tp->topic;
}

// A log that cannot be compacted because of damage where klf reads it is a finding in the data
// (exit 1, with the problems; cli.md), not an unreadable input (exit 3): nothing is written either way.
// A file that cannot be read at all is not damage in the data: exit 3.
int FailOnLog(const std::string& error, const CollectingSink& sink, bool json) {
  nlohmann::json fields = {{"out", nullptr}, {"problems", ProblemsJson(sink)}};
  bool unreadable = std::any_of(sink.problems.begin(), sink.problems.end(),
                                [](const Problem& p) { return p.check == std::string_view("file-read"); });
  return Fail("compact", sink.ErrorCount() > 0 && !unreadable ? kExitProblems : kExitUnreadable, error, json, &fields);
}

nlohmann::json PassJson(const PassReport& p, const CompactArgs& a) {
  const CleaningDecision& d = p.decision;
  nlohmann::json j;
  j["now"] = p.now;
  j["partition"] = p.partition;
  j["logStartOffset"] = p.log_start_offset;
  j["logEndOffset"] = p.log_end_offset;
  j["highWatermark"] = p.high_watermark;
  j["lastStableOffset"] = p.last_stable_offset;
  j["activeSegmentBase"] = p.active_segment_base;
  j["activeProducers"] = p.active_producers;
  j["expiredProducers"] = p.expired_producers;
  j["cleanerCheckpoint"] = IntOrNull(p.cleaner_checkpoint_before);
  j["firstDirtyOffset"] = d.offsets.first_dirty_offset;
  j["uncleanableOffset"] = d.offsets.first_uncleanable_dirty_offset;
  j["firstUncleanableOffset"] = d.range.first_uncleanable_offset;
  j["checkpointReset"] = d.offsets.force_update_checkpoint;
  j["cleanBytes"] = d.range.clean_bytes;
  j["cleanableBytes"] = d.range.cleanable_bytes;
  j["cleanableRatio"] = d.range.cleanable_ratio;
  j["maxCompactionDelayMs"] = d.max_compaction_delay_ms;
  j["needCompactionNow"] = d.need_compaction_now;
  j["wouldClean"] = d.selected;
  j["reason"] = d.reason;
  j["cleaned"] = p.cleaned;
  j["cleanedRange"] = p.cleaned ? nlohmann::json::array({d.offsets.first_dirty_offset, p.end_offset}) : nullptr;
  j["endOffset"] = p.cleaned ? nlohmann::json(p.end_offset) : nullptr;
  j["checkpointWritten"] = IntOrNull(p.checkpoint_written);
  j["splitSegment"] = IntOrNull(p.split_segment);
  j["offsetMap"] = {{"slots", p.map_slots},   {"entries", p.map_entries}, {"maxDesiredSize", p.max_desired_map_size},
                    {"filled", p.map_filled}, {"threads", p.map_threads}, {"lookupsAhead", p.lookups_ahead}};
  j["recordsRead"] = p.stats.messages_read;
  j["recordsRetained"] = p.stats.messages_written;
  j["bytesRead"] = p.stats.bytes_read;
  j["bytesWritten"] = p.stats.bytes_written;
  j["invalidRecordsRead"] = p.stats.invalid_messages_read;
  j["mapRecordsRead"] = p.stats.map_messages_read;
  j["mapBytesRead"] = p.stats.map_bytes_read;
  j["tombstonesRemoved"] = p.stats.tombstones_removed;
  j["markersRemoved"] = p.stats.markers_removed;
  if (a.mode == "coordinated") {
    j["tombstonesHeld"] = p.stats.tombstones_held;
    j["markersHeld"] = p.stats.markers_held;
  }
  nlohmann::json segs = nlohmann::json::array();
  for (const auto& s : p.segments)
    segs.push_back(
        {{"baseOffset", s.base_offset}, {"size", s.size}, {"cleaned", s.cleaned}, {"mergedFrom", s.merged_from}});
  j["segments"] = segs;
  if (a.explain) {
    nlohmann::json ex = nlohmann::json::array();
    BytesFormat bf = a.common.bytes_format();
    for (const auto& b : p.explain) {
      nlohmann::json records = nlohmann::json::array();
      for (const auto& r : b.records) {
        records.push_back({{"offset", r.offset},
                           {"key", r.key ? nlohmann::json(FormatBytes(AsBytes(*r.key), bf)) : nullptr},
                           {"tombstone", r.tombstone},
                           {"decision", RecordDecisionName(r.decision)}});
        if (r.control) records.back()["control"] = ControlTypeName(*r.control);  // added: the marker's type
      }
      ex.push_back({{"file", b.file},
                    {"position", b.position},
                    {"baseOffset", b.base_offset},
                    {"lastOffset", b.last_offset},
                    {"isControl", b.is_control},
                    {"producerId", b.producer_id},
                    {"retention", BatchRetentionName(b.retention)},
                    {"rule", BatchReasonName(b.reason)},
                    {"action", b.action},
                    {"deleteHorizonMs", IntOrNull(b.delete_horizon_ms)},
                    {"records", records}});
    }
    j["explain"] = ex;
  }
  return j;
}

// A pass report's text, written batch by batch (--explain lists every record of the pass).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one line per field of a pass report, each printed only when set; flat, no logic
void WritePassText(const PassReport& p, const CompactArgs& a, size_t index, size_t count, Output* o) {
  const CleaningDecision& d = p.decision;
  std::string t;
  auto out = std::back_inserter(t);
  if (count > 1) fmt::format_to(out, "pass {} (now={})\n", index + 1, WithWallClock(p.now));
  std::string producers;
  for (auto pid : p.active_producers) producers += (producers.empty() ? "" : ", ") + std::to_string(pid);
  fmt::format_to(out,
                 "log {} logStartOffset={} logEndOffset={} highWatermark={} lastStableOffset={} "
                 "activeSegmentBase={} activeProducers=[{}] cleanerCheckpoint={}\n",
                 EscapeInvalidUtf8(p.partition), p.log_start_offset, p.log_end_offset, p.high_watermark,
                 p.last_stable_offset, p.active_segment_base, producers, IntOrNone(p.cleaner_checkpoint_before));
  fmt::format_to(out,
                 "cleanable firstDirtyOffset={} uncleanableOffset={} firstUncleanableOffset={} cleanBytes={} "
                 "cleanableBytes={} cleanableRatio={:.4f} maxCompactionDelayMs={} needCompactionNow={} "
                 "wouldClean={} ({})\n",
                 d.offsets.first_dirty_offset, d.offsets.first_uncleanable_dirty_offset,
                 d.range.first_uncleanable_offset, d.range.clean_bytes, d.range.cleanable_bytes,
                 d.range.cleanable_ratio, d.max_compaction_delay_ms, d.need_compaction_now, d.selected, d.reason);
  if (p.cleaned) {
    fmt::format_to(out,
                   "result cleaned endOffset={} messagesRead={} bytesRead={} messagesWritten={} "
                   "bytesWritten={} invalidMessagesRead={} mapMessagesRead={} tombstonesRemoved={} "
                   "markersRemoved={} offsetMap={}/{}{}\n",
                   p.end_offset, p.stats.messages_read, p.stats.bytes_read, p.stats.messages_written,
                   p.stats.bytes_written, p.stats.invalid_messages_read, p.stats.map_messages_read,
                   p.stats.tombstones_removed, p.stats.markers_removed, p.map_entries, p.max_desired_map_size,
                   p.map_filled ? " (full: the round stopped early)" : "");
  } else if (p.split_segment) {
    fmt::format_to(out,
                   "result not cleaned: segment {} overflowed its cleaned segment's 32-bit relative offsets; it "
                   "was split into segments that fit and the round aborted, as Kafka does (run compact again)\n",
                   *p.split_segment);
  } else {
    fmt::format_to(out, "result not cleaned{}\n",
                   a.only_if_eligible ? " (--only-if-eligible: a broker would not pick this log now)" : "");
  }
  if (p.checkpoint_written)
    fmt::format_to(out, "cleaner-offset-checkpoint {}={}\n", EscapeInvalidUtf8(p.partition), *p.checkpoint_written);
  if (a.mode == "coordinated" && p.cleaned)
    fmt::format_to(out, "held back by coordination: tombstones={} markers={}\n", p.stats.tombstones_held,
                   p.stats.markers_held);
  o->Append(t);
  if (!a.explain) return;
  BytesFormat bf = a.common.bytes_format();
  for (const auto& b : p.explain) {
    t.clear();
    fmt::format_to(out, "batch {}@{} offsets {}..{}{} pid={} {} ({}) -> {}", EscapeInvalidUtf8(b.file), b.position,
                   b.base_offset, b.last_offset, b.is_control ? " control" : "", b.producer_id,
                   BatchRetentionName(b.retention), BatchReasonName(b.reason), b.action);
    if (b.delete_horizon_ms) fmt::format_to(out, " deleteHorizonMs={}", WithWallClock(*b.delete_horizon_ms));
    t += '\n';
    for (const auto& r : b.records) {
      if (r.control) {  // a marker: its type, not its key's bytes
        fmt::format_to(out, "  record offset={} {} marker {}\n", r.offset, ControlTypeName(*r.control),
                       RecordDecisionName(r.decision));
        continue;
      }
      fmt::format_to(out, "  record offset={} key={}{} {}\n", r.offset,
                     r.key ? FormatBytes(AsBytes(*r.key), bf) : std::string("null"), r.tombstone ? " (tombstone)" : "",
                     RecordDecisionName(r.decision));
    }
    o->Append(t);
  }
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the command's flag checks and the order of its steps (configs, metadata, passes, output), read top to bottom
int RunCompact(const CompactArgs& a) {
  const bool json = a.common.json;
  if (a.mode != "uncoordinated" && a.mode != "coordinated") {
    return Fail("compact", kExitUsage, "--mode must be uncoordinated or coordinated, not " + a.mode, json);
  }
  if (a.mode == "coordinated" && a.replicas.empty()) {
    return Fail("compact", kExitUsage,
                "--mode coordinated needs every other replica's partition directory (--replica DIR)", json);
  }
  CompactOptions o;
  std::string error;
  for (const std::string& kv : a.configs) {
    if (!o.config.SetFromArg(kv, &error)) return Fail("compact", kExitUsage, error, json);
  }
  // The cluster's configs from the KRaft metadata log, under the --config flags (cli/metadata_log.h):
  // Kafka's defaults, then the metadata log's broker and topic configs, then --config.
  MetadataLog metadata;
  if (!LoadMetadataLog(a.metadata, {a.dir}, &metadata, &error)) return Fail("compact", kExitUnreadable, error, json);
  for (const std::string& w : metadata.warnings) PrintError("compact", w);
  const std::vector<std::string> explicit_keys = ExplicitKeys(a.configs);
  const std::optional<int32_t> broker_id = metadata.get() ? BrokerIdOf(a.dir) : std::nullopt;
  // The configs of a partition's topic: defaults, the metadata log's, then --config (parsed above).
  auto config_for = [&](const std::string& partition_dir, std::vector<ConfigFromMetadata>* used) {
    CleanerConfig c;
    std::vector<ConfigFromMetadata> from =
        ApplyMetadataConfigs(*metadata.get(), TopicOf(partition_dir), broker_id, explicit_keys, &c);
    std::string ignored;
    for (const std::string& kv : a.configs) c.SetFromArg(kv, &ignored);
    if (used) *used = std::move(from);
    return c;
  };
  if (metadata.get()) o.config_for = [&](const std::string& d) { return config_for(d, nullptr); };
  o.now = a.now >= 0 ? a.now : WallClockMs();
  o.only_if_eligible = a.only_if_eligible;
  o.passes = a.passes;
  o.pass_interval_ms = a.pass_interval_ms;
  o.explain = a.explain;
  o.force = a.force;
  o.high_watermark = a.high_watermark;
  o.first_dirty_offset = a.first_dirty_offset;
  if (a.passes < 1) return Fail("compact", kExitUsage, "--passes must be at least 1", json);
  // The output guard (segment_writer/output_guard.h) before any work: every replica is an input too.
  std::vector<std::string> inputs{a.dir};
  inputs.insert(inputs.end(), a.replicas.begin(), a.replicas.end());
  if (!a.metadata.metadata_dir.empty()) inputs.push_back(a.metadata.metadata_dir);
  if (!CheckOutputPath({a.out, OutputKind::kDirectory, inputs, a.force}, nullptr, &error)) {
    return Fail("compact", kExitUsage, error, json);
  }
  CollectingSink sink;
  CompactReport report;
  std::string partition_dir = a.dir;
  nlohmann::json log_dir_json = nullptr;
  if (ClassifyPath(a.dir).kind == PathKind::kLogDir) {
    // A broker log directory: pick the log the cleaner thread would (grabFilthiestCompactedLog).
    LogDirChoice choice;
    if (!ChooseFilthiestLog(a.dir, o, &choice, &sink, &error)) return FailOnLog(error, sink, json);
    log_dir_json = nlohmann::json::array();
    for (size_t i = 0; i < choice.candidates.size(); i++) {
      const auto& c = choice.candidates[i];
      log_dir_json.push_back({{"partitionDir", c.partition_dir},
                              {"cleanableRatio", c.decision.range.cleanable_ratio},
                              {"cleanableBytes", c.decision.range.cleanable_bytes},
                              {"wouldClean", c.decision.selected},
                              {"reason", c.decision.reason},
                              {"chosen", choice.chosen == i}});
      if (!a.common.json)
        PrintText(fmt::format("candidate {} cleanableRatio={:.4f} cleanableBytes={} wouldClean={} ({}){}\n",
                              EscapeInvalidUtf8(c.partition_dir), c.decision.range.cleanable_ratio,
                              c.decision.range.cleanable_bytes, c.decision.selected, c.decision.reason,
                              choice.chosen == i ? " <- chosen" : ""));
    }
    if (!choice.chosen) {
      if (a.common.json)
        PrintJson(nlohmann::json({{"candidates", log_dir_json},
                                  {"cleanedRange", nullptr},
                                  {"metadataLog", MetadataLogJson(metadata.get())}}));
      else
        PrintText(fmt::format("no log to clean in {}\n", EscapeInvalidUtf8(a.dir)));
      return kExitOk;
    }
    partition_dir = choice.candidates[*choice.chosen].partition_dir;
  }
  std::vector<ConfigFromMetadata> metadata_configs;
  if (metadata.get()) {
    o.config = config_for(partition_dir, &metadata_configs);
    o.config_for = nullptr;
    if (!json) {
      PrintText(EscapeInvalidUtf8(
          fmt::format("configs from {}:\n{}", MetadataLogText(*metadata.get()),
                      metadata_configs.empty() ? "  none for this topic or broker\n" : ConfigsText(metadata_configs))));
    }
  } else if (!json && !a.metadata.no_metadata) {
    PrintText("configs: no __cluster_metadata-0 in this log dir: Kafka's defaults and --config only\n");
  }
  // Coordinated mode (simulator/replica_view.h, spec redpanda-coordinated-compaction.md §8): every
  // replica's MCCO/MXFO from its directory; tombstones only below MTRO = min MCCO, markers only below
  // MXRO = min MXFO, on top of Kafka's rules.
  nlohmann::json coordination = nullptr;
  if (a.mode == "coordinated") {
    std::vector<std::string> dirs{partition_dir};
    dirs.insert(dirs.end(), a.replicas.begin(), a.replicas.end());
    coordination = {{"replicas", nlohmann::json::array()}};
    for (const std::string& d : dirs) {
      // A replica that is not there cannot be read at all (exit 3); one that is there but damaged is
      // a finding (exit 1, FailOnLog).
      if (!IsInputDir(d)) {
        return Fail("compact", kExitUnreadable, d + ": not a partition directory", json);
      }
      LoadOptions lo;
      lo.now_ms = o.now;
      lo.producer_id_expiration_ms = o.config.producer_id_expiration_ms;
      LoadedLog v;
      CollectingSink quiet;
      // Damage anywhere in a replica (a batch whose framing or CRC fails) makes its offsets unsure.
      if (!LoadedLog::Open(d, lo, &v, &quiet, &error) ||
          !v.ForEachBatch([](size_t, const BatchView&) { return true; }, &quiet, &error)) {
        return FailOnLog(error, quiet, json);
      }
      if (quiet.ErrorCount() > 0) return FailOnLog(d + ": damaged (see the problems)", quiet, json);
      const CoordinationOffsets c = CoordinationOffsetsOf(v);
      o.max_tombstone_remove_offset = std::min(o.max_tombstone_remove_offset.value_or(c.mcco), c.mcco);
      o.max_tx_end_remove_offset = std::min(o.max_tx_end_remove_offset.value_or(c.mxfo), c.mxfo);
      coordination["replicas"].push_back({{"path", d},
                                          {"logEndOffset", v.log_end_offset},
                                          {"cleanerCheckpoint", IntOrNull(v.cleaner_checkpoint)},
                                          {"mcco", c.mcco},
                                          {"mxfo", c.mxfo}});
      if (!a.common.json)
        PrintText(fmt::format("replica {} logEndOffset={} cleanerCheckpoint={} MCCO={} MXFO={}\n", EscapeInvalidUtf8(d),
                              v.log_end_offset, IntOrNone(v.cleaner_checkpoint), c.mcco, c.mxfo));
    }
    coordination["mtro"] = *o.max_tombstone_remove_offset;
    coordination["mxro"] = *o.max_tx_end_remove_offset;
    if (!a.common.json)
      PrintText(
          fmt::format("coordinated: MTRO={} (tombstones removable below it) MXRO={} (markers removable below it)\n",
                      *o.max_tombstone_remove_offset, *o.max_tx_end_remove_offset));
  }
  bool ok = CompactPartition(partition_dir, a.out, o, &report, &sink, &error);
  for (const Problem& p : sink.problems) {
    if (p.severity == Severity::kInfo && !a.explain) continue;
    std::fprintf(stderr, "klf compact: %s: %s at position %llu: %s\n", SeverityName(p.severity),
                 EscapeInvalidUtf8(p.file).c_str(), static_cast<unsigned long long>(p.position), p.message.c_str());
  }
  if (!ok) return FailOnLog(error, sink, json);
  if (a.common.json) {
    nlohmann::json j;
    j["out"] = report.out_partition_dir;
    if (!coordination.is_null()) j["coordination"] = coordination;
    nlohmann::json passes = nlohmann::json::array();
    int64_t read = 0, retained = 0, bytes_read = 0, bytes_written = 0, tomb = 0, markers = 0;
    std::optional<int64_t> from, to;
    for (const auto& p : report.passes) {
      passes.push_back(PassJson(p, a));
      read += p.stats.messages_read;
      retained += p.stats.messages_written;
      bytes_read += p.stats.bytes_read;
      bytes_written += p.stats.bytes_written;
      tomb += p.stats.tombstones_removed;
      markers += p.stats.markers_removed;
      if (p.cleaned) {
        if (!from) from = p.decision.offsets.first_dirty_offset;
        to = p.end_offset;
      }
    }
    j["cleanedRange"] = from ? nlohmann::json::array({*from, *to}) : nullptr;
    j["recordsRead"] = read;
    j["recordsRetained"] = retained;
    j["bytesRead"] = bytes_read;
    j["bytesWritten"] = bytes_written;
    j["tombstonesRemoved"] = tomb;
    j["markersRemoved"] = markers;
    j["segments"] = report.passes.empty() ? nlohmann::json::array() : passes.back()["segments"];
    j["wouldClean"] = !report.passes.empty() && report.passes[0].decision.selected;
    j["passes"] = passes;
    if (!log_dir_json.is_null()) j["candidates"] = log_dir_json;
    j["problems"] = ProblemsJson(sink);
    j["metadataLog"] = MetadataLogJson(metadata.get());
    j["configsFromMetadataLog"] = ConfigsJson(metadata_configs);
    PrintJson(j);
  } else {
    Output out(1);
    for (size_t i = 0; i < report.passes.size(); i++) WritePassText(report.passes[i], a, i, report.passes.size(), &out);
    out.Append(fmt::format("wrote {}\n", EscapeInvalidUtf8(report.out_partition_dir)));
  }
  return sink.ErrorCount() > 0 ? kExitProblems : kExitOk;
}

}  // namespace

Command AddCompactCommand(CLI::App* parent) {
  auto args = std::make_shared<CompactArgs>();
  CLI::App* app = parent->add_subcommand(
      "compact",
      "Run Kafka's log cleaner offline on a copy of a partition directory: the broker's choice (dirty\n"
      "ratio, lags, checkpoint reset), the offset map, every keep/remove decision, grouping, re-encoding,\n"
      "rebuilt indexes and the new cleaner checkpoint. --out receives <topic>-<partition>/ and the\n"
      "log-dir checkpoint files. The input is never modified.");
  app->add_option("PARTITION_DIR", args->dir,
                  "partition directory <topic>-<partition>, or a broker log directory (the log a cleaner thread "
                  "would pick is cleaned); never modified")
      ->required();
  app->add_option("--out", args->out, "output log directory (complete or absent)")->required();
  app->add_option("--now", args->now, "the clock in ms since the epoch (default: the current time)");
  app->add_option("--config", args->configs,
                  "KEY=VALUE with Kafka's property names: cleanup.policy, delete.retention.ms, "
                  "min.compaction.lag.ms, max.compaction.lag.ms, min.cleanable.dirty.ratio, segment.bytes, "
                  "segment.index.bytes, index.interval.bytes, max.message.bytes, message.timestamp.type, "
                  "log.cleaner.dedupe.buffer.size, log.cleaner.io.buffer.load.factor, log.cleaner.io.buffer.size, "
                  "log.cleaner.threads, message.max.bytes, producer.id.expiration.ms");
  app->add_flag("--only-if-eligible", args->only_if_eligible,
                "one broker pass: clean only if a broker would pick the log now (a checkpoint reset is "
                "still written)");
  app->add_option("--passes", args->passes, "number of cleaning rounds (default 1)");
  app->add_option("--pass-interval-ms", args->pass_interval_ms,
                  "advance the clock by this much before each further pass (default 0)");
  app->add_option("--high-watermark", args->high_watermark,
                  "the high watermark (default: replication-offset-checkpoint capped at the log end)");
  app->add_option("--first-dirty-offset", args->first_dirty_offset,
                  "use this instead of the cleaner-offset-checkpoint for the first pass (reset to the log start "
                  "if outside the log, as Kafka does)");
  app->add_option("--mode", args->mode, "uncoordinated (Kafka's cleaner; default) or coordinated");
  app->add_option("--replica", args->replicas, "other replicas' partition directories (--mode coordinated)");
  app->add_flag("--explain", args->explain, "list every batch and record: kept or removed, and the rule");
  app->add_flag("--force", args->force, "replace an existing --out that a previous klf run wrote");
  AddMetadataLogOptions(app, &args->metadata);
  AddCommonOptions(app, &args->common);
  return {app, [args] { return RunCompact(*args); }};
}

}  // namespace klf::cli
