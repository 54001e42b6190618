// `klf diff [--json] [--html FILE] [--bytes ...] [--now MS] REPLICA_DIR REPLICA_DIR...` (spec cli.md "diff").
//
// Each REPLICA_DIR is a copy of one partition from a different broker; given broker log directories
// instead, every partition present in at least two of them is diffed. The work is diff/diff.h's; this
// file prints it: readable text, the JSON of cli.md, and a self-contained HTML report (cli/diff_html.h:
// inline CSS, SVG and a few lines of JS, nothing fetched from the network) with an overview and the
// replicas side by side on an offset timeline, the findings marked.
// Exit: 1 when any finding is a divergence (missing_range alone is lag, exit 0), 3 when a replica
// cannot be read, 2 on usage errors.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/diff_html.h"
#include "cli/metadata_log.h"
#include "cli/output.h"
#include "cli/partition_paths.h"
#include "cli/progress.h"
#include "cli/txn_log.h"
#include "diff/diff.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/layout.h"
#include "segment_reader/parallel.h"
#include "segment_writer/file_writer.h"
#include "segment_writer/output_guard.h"

namespace klf::cli {
namespace {

struct DiffArgs {
  CommonOptions common;
  std::string html;
  bool force = false;
  std::optional<int64_t> now;
  int64_t producer_id_expiration_ms = 86400000;
  int64_t transaction_max_timeout_ms = 900000;
  std::optional<int64_t> delete_retention_ms;  // --delete-retention-ms: the topic's, for the incident window
  uint64_t memory_budget_mib = 2048;
  bool only_findings = false;  // log dirs: print only the partitions with a finding
  unsigned jobs = 0;           // partitions loaded and diffed at once (0: one per core)
  std::vector<std::string> paths;
  TxnLogArgs txn_log;
  MetadataLogArgs metadata;
  // Set from the command line when the flag was given: it wins over the metadata log.
  bool explicit_producer_id_expiration = false, explicit_transaction_max_timeout = false;
};

// The cluster's own records beside the replicas (cli/metadata_log.h): the metadata log and the groups'
// committed offsets.
struct ClusterRecords {
  const ClusterMetadata* metadata = nullptr;
  const CommittedOffsets* offsets = nullptr;
};

std::optional<TopicPartition> TopicPartitionOf(const std::string& name) { return ParsePartitionDirName(name); }

// The groups that read past a divergence: from the first record whose visibility or value is in
// question (the records at stake, else the finding's first offset).
int64_t FirstAffected(const Finding& f) {
  if (!f.records_at_stake.empty()) return *std::min_element(f.records_at_stake.begin(), f.records_at_stake.end());
  return f.first_offset;
}

// delete.retention.ms of `topic` as the metadata log has it: the topic's own config, else the cluster-wide
// dynamic default log.cleaner.delete.retention.ms. Nothing when neither is there (a broker's
// server.properties may still set it: the files do not say).
void RetentionOf(const ClusterMetadata& m, const std::string& topic, std::optional<int64_t>* ms, std::string* from) {
  auto parse = [](const std::string& v) -> std::optional<int64_t> {
    try {
      size_t used = 0;
      int64_t x = std::stoll(v, &used);
      if (used == v.size() && x >= 0) return x;
    } catch (const std::exception&) {
    }
    return std::nullopt;
  };
  const ConfigMap& tc = m.TopicConfigs(topic);
  if (auto it = tc.find("delete.retention.ms"); it != tc.end()) {
    if ((*ms = parse(it->second.value))) *from = "topic config " + topic + " in the metadata log";
    return;
  }
  auto d = m.broker_configs.find("");
  if (d == m.broker_configs.end()) return;
  if (auto it = d->second.find("log.cleaner.delete.retention.ms"); it != d->second.end()) {
    if ((*ms = parse(it->second.value))) *from = "cluster default log.cleaner.delete.retention.ms in the metadata log";
  }
}

bool HasBlastRadius(const Finding& f) {
  return IsDivergence(f.kind) && f.kind != FindingKind::kUnrelatedLogs && f.first_offset >= 0;
}

// One partition while its replicas are loaded (between loading and printing, on one worker).
struct PartitionDiff {
  std::string name;
  bool loaded = false;
  std::string error;  // when not loaded
  std::vector<ReplicaState> replicas;
  DiffReport report;
  // With both --json and --html: the report again with wall-clock times in its sentences, for the page
  // (JSON keeps the raw numbers).
  std::optional<DiffReport> html_report;
};

// What printing needs of one partition once its replicas are released: the report, and the partition
// as each requested output prints it (text, JSON, the page's section), made while the replicas were
// loaded. Over many partitions, only these are kept: memory grows with the largest partition times
// --jobs, not with the number of partitions.
struct PartitionResult {
  std::string name;
  DiffReport report;
  bool damaged = false;                    // a replica has a damaged segment (exit 1)
  std::string text;                        // text output: PrintText, invalid UTF-8 escaped
  nlohmann::json json;                     // --json: ReportJson
  std::optional<HtmlPartitionDrawn> html;  // --html
};

// A log-dir diff's counts: partitions compared, with a divergence, with lag only, and healthy.
struct DiffCounts {
  size_t compared = 0, diverged = 0, lagging = 0, healthy = 0;
};

bool HasFinding(const PartitionResult& d) { return !d.report.findings.empty(); }

DiffCounts CountPartitions(const std::vector<PartitionResult>& diffs) {
  DiffCounts c;
  for (const PartitionResult& d : diffs) {
    ++c.compared;
    const bool diverged = std::any_of(d.report.findings.begin(), d.report.findings.end(),
                                      [](const Finding& f) { return IsDivergence(f.kind); });
    if (diverged) {
      ++c.diverged;
    } else if (HasFinding(d)) {
      ++c.lagging;
    } else {
      ++c.healthy;
    }
  }
  return c;
}

std::string CountsText(const DiffCounts& c) {
  return fmt::format("{} partitions compared: {} diverged, {} with lag or missing ranges only, {} healthy\n",
                     c.compared, c.diverged, c.lagging, c.healthy);
}

nlohmann::json BytesJson(const std::optional<std::string>& b, BytesFormat format) {
  if (!b) return nullptr;
  return FormatBytes(AsBytes(*b), format);
}

std::string TextBytes(const std::optional<std::string>& b, BytesFormat format) {
  return b ? FormatBytes(AsBytes(*b), format) : "null";
}

nlohmann::json FactsJson(const PartitionDiff& d, const Finding& f) {
  nlohmann::json facts = nlohmann::json::array();
  for (const TxnFact& x : f.facts) {
    facts.push_back({{"replica", x.replica == kCoordinatorWitness ? "coordinator"
                                 : x.replica < d.replicas.size()  ? d.replicas[x.replica].path
                                                                  : ""},
                     {"file", x.file.empty() ? nullptr : nlohmann::json(x.file)},
                     {"position", x.position >= 0 ? nlohmann::json(x.position) : nullptr},
                     {"fact", x.fact}});
  }
  return facts;
}

std::string Basename(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string OffsetsText(const std::vector<int64_t>& offsets) {
  std::string s;
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (i) s += ", ";
    if (i == 20 && offsets.size() > 24) {
      s += fmt::format("... ({} more), {}", offsets.size() - 21, offsets.back());
      break;
    }
    s += std::to_string(offsets[i]);
  }
  return s;
}

bool IsTransactionFinding(const Finding& f) {
  return f.kind == FindingKind::kLostAbort || f.kind == FindingKind::kLostCommit ||
         f.kind == FindingKind::kHangingTransaction;
}

nlohmann::json MsJson(int64_t v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }
nlohmann::json TextJson(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

// A window's facts of lost tombstones and divergent records, and the raw ones of every window (snapshots,
// cleaner checkpoint).
nlohmann::json WindowFactsJson(const PartitionDiff& d, const IncidentWindow& w) {
  nlohmann::json epochs = nullptr;
  if (w.epoch_first >= 0) {
    epochs = {{"replica", {w.epoch_first, w.epoch_last}},
              {"healthy", {w.healthy_epoch_first, w.healthy_epoch_last}},
              {"healthyFirstTimestamp", MsJson(w.healthy_first_ms)}};
  }
  return {{"lost", TextJson(w.lost)},
          {"lostOffset", IntOrNull(w.lost_offset)},
          {"lostOn", w.lost_offset ? nlohmann::json(d.replicas[w.lost_on].path) : nlohmann::json(nullptr)},
          {"lostTimestamp", MsJson(w.lost_ms)},
          {"lostRange", w.lost_from >= 0 ? nlohmann::json({w.lost_from, MsJson(w.lost_to)}) : nlohmann::json(nullptr)},
          {"holeInBatch", w.hole_in_batch},
          {"keyRecord", w.key_offset >= 0 ? nlohmann::json({{"offset", w.key_offset}, {"timestamp", MsJson(w.key_ms)}})
                                          : nlohmann::json(nullptr)},
          {"lastAgreed", w.agreed_offset >= 0
                             ? nlohmann::json({{"offset", w.agreed_offset}, {"timestamp", MsJson(w.agreed_ms)}})
                             : nlohmann::json(nullptr)},
          {"leaderEpochs", epochs},
          {"snapshotOffsets", w.snapshots},
          {"cleanerCheckpoint", IntOrNull(w.cleaner_checkpoint)}};
}

nlohmann::json WindowJson(const PartitionDiff& d, const IncidentWindow& w) {
  const ReplicaState& r = d.replicas[w.replica];
  nlohmann::json cleaned = nlohmann::json::array();
  for (size_t h : w.cleaned_by) {
    cleaned.push_back({{"replica", d.replicas[h].path}, {"cleanerCheckpoint", *d.replicas[h].cleaner_checkpoint}});
  }
  nlohmann::json j = {
      {"replica", r.path},
      {"name", r.label},
      {"hole", w.hole_from >= 0 ? nlohmann::json({w.hole_from, w.hole_to}) : nlohmann::json(nullptr)},
      {"holesBeforeNextRecord", w.holes},
      {"markerOffset", IntOrNull(w.marker_offset)},
      {"markerOn", w.marker_offset ? nlohmann::json(d.replicas[w.marker_on].path) : nlohmann::json(nullptr)},
      {"markerType", TextJson(w.marker_type)},
      {"lastBefore", {{"offset", MsJson(w.before_offset)}, {"timestamp", MsJson(w.before_ms)}}},
      {"firstAfter",
       {{"offset", MsJson(w.after_offset)},
        {"timestamp", MsJson(w.after_ms)},
        {"file", TextJson(w.after_file)},
        {"fileMtimeMs", MsJson(w.after_file_mtime_ms)}}},
      {"fromMs", MsJson(w.before_ms)},
      {"behindUntilAtLeastMs", IntOrNull(w.behind_until_at_least_ms)},
      {"deleteRetentionMs", IntOrNull(w.delete_retention_ms)},
      {"cleanedPastBy", cleaned},
      {"sentence", w.sentence}};
  j.update(WindowFactsJson(d, w));
  return j;
}

// The incident window of a lost marker, a lost tombstone or a divergent record and the prevention settings
// (diff/incident.h): additive fields `incidentWindow` (one object per affected replica) and `prevention`.
nlohmann::json IncidentJson(const PartitionDiff& d, const Incident& incident) {
  nlohmann::json windows = nlohmann::json::array();
  for (const IncidentWindow& w : incident.windows) windows.push_back(WindowJson(d, w));
  nlohmann::json prevention = nlohmann::json::array();
  for (const IncidentPrevention& p : incident.prevention) {
    prevention.push_back({{"setting", p.setting},
                          {"prevents", p.prevents},
                          {"atLeastMs", IntOrNull(p.at_least_ms)},
                          {"currentMs", IntOrNull(p.current_ms)},
                          {"currentFrom", p.current_ms ? nlohmann::json(p.current_from) : nlohmann::json(nullptr)},
                          {"sentence", p.sentence}});
  }
  return {{"incidentWindow", windows}, {"prevention", prevention}};
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one JSON key per report field, each written only when present
nlohmann::json ReportJson(const PartitionDiff& d, BytesFormat format, const ClusterRecords& cluster) {
  nlohmann::json j;
  j["partition"] = d.report.partition.empty() ? d.name : d.report.partition;
  const std::optional<TopicPartition> tp = TopicPartitionOf(j["partition"].get<std::string>());
  j["replicas"] = nlohmann::json::array();
  for (const ReplicaState& r : d.replicas) {
    nlohmann::json open = nlohmann::json::array();
    for (const OpenTxn& t : r.open_txns) {
      open.push_back({{"producerId", t.producer_id},
                      {"producerEpoch", t.producer_epoch},
                      {"firstOffset", t.first_offset},
                      {"lastOffset", t.last_offset},
                      {"lastTimestamp", t.last_timestamp}});
    }
    j["replicas"].push_back({{"path", r.path},
                             {"name", r.label},
                             {"logStartOffset", r.log_start_offset},
                             {"logEndOffset", r.log_end_offset},
                             {"highWatermark", r.high_watermark},
                             {"highWatermarkFromCheckpoint", r.high_watermark_from_checkpoint},
                             {"lastStableOffset", r.last_stable_offset},
                             {"cleanerCheckpoint", IntOrNull(r.cleaner_checkpoint)},
                             {"openTransactions", open},
                             {"readCommittedRecords", r.ReadCommittedCount()},
                             {"readUncommittedRecords", r.ReadUncommittedCount()},
                             {"liveKeys", std::count_if(r.key_view.begin(), r.key_view.end(),
                                                        [](const auto& kv) { return !kv.second.tombstone; })},
                             {"notes", r.notes.size()}});
    j["replicas"].back()["brokerId"] = IntOrNull(r.node_id);  // the log dir's meta.properties, read by the load
  }
  j["findings"] = nlohmann::json::array();
  for (const Finding& f : d.report.findings) {
    nlohmann::json affected = nlohmann::json::array(), healthy = nlohmann::json::array();
    for (size_t i : f.affected) affected.push_back(d.replicas[i].path);
    for (size_t i : f.healthy) healthy.push_back(d.replicas[i].path);
    nlohmann::json fj = {{"kind", FindingKindName(f.kind)},
                         {"divergence", IsDivergence(f.kind)},
                         {"key", f.has_key ? BytesJson(f.key, format) : nullptr},
                         {"value", f.has_key ? BytesJson(f.value, format) : nullptr},
                         {"offsets", f.first_offset >= 0 ? nlohmann::json::array({f.first_offset, f.last_offset})
                                                         : nlohmann::json::array()},
                         {"producerId", IntOrNull(f.producer_id)},
                         {"producerEpoch", IntOrNull(f.producer_epoch)},
                         {"affectedReplicas", affected},
                         {"healthyReplicas", healthy},
                         {"evidence", f.evidence},
                         {"impact", f.impact},
                         {"certainty", FindingCertaintyName(f.certainty)},
                         {"outcome", f.outcome ? nlohmann::json(TxnOutcomeName(*f.outcome)) : nullptr},
                         {"facts", FactsJson(d, f)},
                         {"recordsAtStake", f.records_at_stake},
                         {"settleWith", f.settle_with.empty() ? nullptr : nlohmann::json(f.settle_with)}};
    // The groups that consumed the affected records: null when no __consumer_offsets was read.
    if (HasBlastRadius(f) && cluster.offsets != nullptr && tp) {
      nlohmann::json groups = nlohmann::json::array();
      for (const GroupExposure& g : GroupsPast(*cluster.offsets, tp->topic, tp->partition, FirstAffected(f))) {
        groups.push_back({{"group", g.committed.group},
                          {"committedOffset", g.committed.offset},
                          {"rewindTo", g.rewind_to},
                          {"commitTimestamp", g.committed.commit_timestamp},
                          {"file", g.committed.file},
                          {"position", g.committed.position},
                          {"recordOffset", g.committed.record_offset}});
      }
      fj["consumerGroups"] = groups;
    } else {
      fj["consumerGroups"] = nullptr;
    }
    if (f.incident) fj.update(IncidentJson(d, *f.incident));
    j["findings"].push_back(fj);
  }
  j["leaderIsrHistory"] = cluster.metadata != nullptr && tp && tp->topic != "__cluster_metadata"
                              ? HistoryJson(*cluster.metadata, tp->topic, tp->partition)
                              : nullptr;
  return j;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one text section per finding kind, in the order of the report; a printer
void PrintText(const PartitionDiff& d, BytesFormat format, const ClusterRecords& cluster, Output* out) {
  const std::optional<TopicPartition> tp = TopicPartitionOf(d.report.partition.empty() ? d.name : d.report.partition);
  out->Append(fmt::format("partition {}: {} replicas\n", d.report.partition.empty() ? d.name : d.report.partition,
                          d.replicas.size()));
  for (const ReplicaState& r : d.replicas) {
    out->Append(
        fmt::format("  {:<10} log {}..{}  HW {}{}  LSO {}  cleaner checkpoint {}  read_committed {} records  {}\n",
                    r.label, r.log_start_offset, r.log_end_offset, r.high_watermark,
                    r.high_watermark_from_checkpoint ? "" : " (no checkpoint)", r.last_stable_offset,
                    IntOrNone(r.cleaner_checkpoint), r.ReadCommittedCount(), r.path));
    for (const OpenTxn& t : r.open_txns) {
      out->Append(fmt::format("             open transaction: producer {} epoch {} from offset {}\n", t.producer_id,
                              t.producer_epoch, t.first_offset));
    }
    size_t errors =
        std::count_if(r.notes.begin(), r.notes.end(), [](const Problem& p) { return p.severity == Severity::kError; });
    if (errors > 0) {
      out->Append(fmt::format("             {} problem{} while loading (first: {}:{} {}); run klf verify {}\n", errors,
                              errors == 1 ? "" : "s", r.notes.front().file, r.notes.front().position,
                              r.notes.front().message, r.path));
    }
  }
  if (cluster.metadata != nullptr && tp && tp->topic != "__cluster_metadata") {
    out->Append(HistoryText(*cluster.metadata, tp->topic, tp->partition, "  "));
    // The history speaks of broker ids; the replicas' own log dirs say which is which.
    std::vector<std::string> ids;
    for (const ReplicaState& r : d.replicas) {
      if (r.node_id) ids.push_back(fmt::format("{} is broker {}", r.label, *r.node_id));
    }
    if (!ids.empty()) out->Append(fmt::format("    ({}: meta.properties)\n", fmt::join(ids, ", ")));
    // A replica of another incarnation of the topic (deleted and created again) is not described by it.
    const TopicImage* t = cluster.metadata->TopicByName(tp->topic);
    for (const ReplicaState& r : d.replicas) {
      if (t != nullptr && r.topic_id && *r.topic_id != t->topic_id) {
        out->Append(
            fmt::format("    note: {} belongs to topic id {} (partition.metadata), not {}: the history above "
                        "is of another topic of that name\n",
                        r.label, *r.topic_id, t->topic_id));
      }
    }
  }
  size_t divergences = 0, lag = 0;
  for (const Finding& f : d.report.findings) {
    (IsDivergence(f.kind) ? divergences : lag)++;
    std::string head = FindingKindName(f.kind);
    std::transform(head.begin(), head.end(), head.begin(), ::toupper);
    std::vector<std::string> parts;
    if (f.producer_id)
      parts.push_back(fmt::format("producer {} epoch {}", *f.producer_id, f.producer_epoch.value_or(-1)));
    if (f.first_offset >= 0) {
      parts.push_back(f.first_offset == f.last_offset ? fmt::format("offset {}", f.first_offset)
                                                      : fmt::format("offsets {}..{}", f.first_offset, f.last_offset));
    }
    if (f.has_key) parts.push_back("key " + TextBytes(f.key, format));
    out->Append(fmt::format("\n{}  {}\n", head, fmt::join(parts, ", ")));
    std::vector<std::string> a, h;
    for (size_t i : f.affected) a.push_back(d.replicas[i].label);
    for (size_t i : f.healthy) h.push_back(d.replicas[i].label);
    out->Append(fmt::format("  affected: {}", fmt::join(a, ", ")));
    if (!h.empty()) out->Append(fmt::format("   healthy: {}", fmt::join(h, ", ")));
    out->Append(fmt::format("\n  evidence: {}\n  impact:   {}\n", f.evidence, f.impact));
    if (IsTransactionFinding(f)) {
      out->Append(fmt::format("  certainty: {}   outcome: {}\n", FindingCertaintyName(f.certainty),
                              f.outcome ? TxnOutcomeName(*f.outcome) : "unknown"));
      if (!f.records_at_stake.empty())
        out->Append(fmt::format("  records at stake: {}\n", OffsetsText(f.records_at_stake)));
      if (!f.settle_with.empty()) out->Append(fmt::format("  settle with: {}\n", f.settle_with));
    }
    for (const TxnFact& x : f.facts) {
      out->Append(fmt::format("  fact: {}{}\n", x.fact,
                              x.file.empty() ? ""
                                             : fmt::format(" [{}{}]", Basename(x.file),
                                                           x.position >= 0 ? fmt::format(" @{}", x.position) : "")));
    }
    if (f.incident) {
      for (const IncidentWindow& w : f.incident->windows)
        out->Append(fmt::format("  incident window: {}\n", w.sentence));
      for (const IncidentPrevention& p : f.incident->prevention)
        out->Append(fmt::format("  prevention: {}\n", p.sentence));
    }
    if (HasBlastRadius(f) && cluster.offsets != nullptr && tp) {
      const int64_t from = FirstAffected(f);
      std::vector<GroupExposure> groups = GroupsPast(*cluster.offsets, tp->topic, tp->partition, from);
      if (groups.empty()) {
        out->Append(fmt::format("  consumer groups: none has committed past offset {} ({} with offsets on {})\n", from,
                                cluster.offsets->ForPartition(tp->topic, tp->partition).size(),
                                tp->topic + "-" + std::to_string(tp->partition)));
      }
      for (const GroupExposure& g : groups) {
        out->Append(fmt::format(
            "  consumer group {}: committed offset {} (record {} of {}, committed {} = {}) is past offset {}: rewind "
            "to {}\n",
            g.committed.group, g.committed.offset, g.committed.record_offset,
            std::filesystem::path(g.committed.file).parent_path().filename().string(),
            IsoUtc(g.committed.commit_timestamp), g.committed.commit_timestamp, from, g.rewind_to));
      }
    }
  }
  if (d.report.findings.empty()) {
    out->Append(
        "\nno findings: every replica serves consumers the same latest value of every key (counts may differ where one "
        "replica has compacted further)\n");
  } else {
    out->Append(fmt::format("\n{} divergence{}, {} lag/retention finding{}\n", divergences, divergences == 1 ? "" : "s",
                            lag, lag == 1 ? "" : "s"));
  }
}

// ---------------------------------------------------------------------------------------------
// HTML: the page is cli/diff_html.h's; this gathers what it shows.

// The page's section of one partition, drawn while its replicas are loaded; `pi` is its index among the
// partitions that could be read.
HtmlPartitionDrawn DrawPartition(const PartitionDiff& d, size_t pi, BytesFormat format) {
  // With --json the page's sentences still carry wall-clock times (html_report).
  const DiffReport& report = d.html_report ? *d.html_report : d.report;
  return DrawHtmlPartition({report.partition.empty() ? d.name : report.partition, &d.replicas, &report}, pi, format);
}

std::string HtmlReport(const DiffArgs& args, const std::vector<HtmlPartitionDrawn>& partitions, const TxnLog& txn_log,
                       const MetadataLog& metadata, const OffsetsLog& offsets,
                       const std::vector<std::string>& load_errors, int exit_code) {
  HtmlReportInfo info = HtmlReportInfoNow(args.paths, exit_code);
  if (!txn_log.dirs.empty()) info.other_inputs.emplace_back("coordinator's records", txn_log.dirs);
  if (metadata.get()) {
    info.other_inputs.push_back({"metadata log", {MetadataLogText(*metadata.get())}});
  }
  if (offsets.get()) info.other_inputs.emplace_back("consumer offsets", offsets.get()->partition_dirs);
  info.unreadable = load_errors;
  info.format = args.common.bytes_format();
  // The marker comment tells a later `klf diff --html FILE --force` that FILE is a report it may
  // replace (segment_writer/output_guard.h); nothing else is ever replaced.
  const std::string marker =
      std::string(kHtmlOutputMarker) + ": written by klf diff; klf diff --html --force may replace this file -->\n";
  return DiffHtmlPage(partitions, info, marker);
}

// ---------------------------------------------------------------------------------------------

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the command's flag checks and the order of its steps (captures, paths, metadata, diff, lso, groups, output)
int Run(const DiffArgs& given) {
  const bool json = given.common.json;
  DiffArgs args = given;
  {
    // Captures (segment_reader/capture.h): an archive alone stands for the log directories it holds.
    std::string capture_error;
    if (!PrepareCapturePaths(&args.paths, /*expand_roots=*/true, &capture_error))
      return Fail("diff", kExitUnreadable, capture_error, json);
    if (args.paths.size() < 2)
      return Fail("diff", kExitUsage,
                  "REPLICA_DIR: at least 2 required (two replicas, or a capture holding several broker log dirs)",
                  json);
  }
  BytesFormat format = args.common.bytes_format();
  // The output guard (segment_writer/output_guard.h) before any work: the report must not be, hold or
  // lie inside a replica (or its broker log dir), and replaces only a previous klf report (--force).
  CheckedOutput html;
  std::string guard_error;
  std::vector<std::string> inputs = args.paths;
  inputs.insert(inputs.end(), args.txn_log.dirs.begin(), args.txn_log.dirs.end());
  inputs.insert(inputs.end(), args.metadata.offsets_dirs.begin(), args.metadata.offsets_dirs.end());
  if (!args.metadata.metadata_dir.empty()) inputs.push_back(args.metadata.metadata_dir);
  if (!args.html.empty() && !CheckOutputPath({args.html, OutputKind::kFile, inputs, args.force}, &html, &guard_error)) {
    return Fail("diff", kExitUsage, guard_error, json);
  }
  ReplicaOptions options;
  options.now_ms = args.now;
  options.producer_id_expiration_ms = args.producer_id_expiration_ms;

  // Which partitions to compare: every one held by two of the PATHs (cli/partition_paths.h).
  ResolvedPaths resolved;
  std::string resolve_error;
  int resolve_exit = kExitUsage;
  if (!ResolvePartitionPaths(args.paths, 2, &resolved, &resolve_error, &resolve_exit)) {
    return Fail("diff", resolve_exit, resolve_error, json);
  }

  TxnLog txn_log;
  std::string txn_log_error;
  if (!LoadTxnLog(args.txn_log, args.paths, &txn_log, &txn_log_error)) {
    return Fail("diff", kExitUnreadable, txn_log_error, json);
  }
  for (const std::string& w : txn_log.warnings) PrintError("diff", w);

  // The KRaft metadata log and __consumer_offsets beside the replicas (cli/metadata_log.h).
  MetadataLog metadata;
  OffsetsLog offsets;
  std::string cluster_error;
  if (!LoadMetadataLog(args.metadata, args.paths, &metadata, &cluster_error) ||
      !LoadOffsetsLog(args.metadata, args.paths, &offsets, &cluster_error)) {
    return Fail("diff", kExitUnreadable, cluster_error, json);
  }
  for (const std::string& w : metadata.warnings) PrintError("diff", w);
  for (const std::string& w : offsets.warnings) PrintError("diff", w);
  const ClusterRecords cluster{metadata.get(), offsets.get()};
  // The brokers' producer.id.expiration.ms and transaction.max.timeout.ms: the cluster-wide dynamic
  // defaults of the metadata log (the replicas are on several brokers: per-broker values are not used),
  // under the flags.
  std::vector<ConfigFromMetadata> metadata_configs;
  int64_t producer_id_expiration_ms = args.producer_id_expiration_ms;
  int64_t transaction_max_timeout_ms = args.transaction_max_timeout_ms;
  if (metadata.get()) {
    auto defaults = metadata.get()->broker_configs.find("");
    if (defaults != metadata.get()->broker_configs.end()) {
      for (const auto& [key, v] : defaults->second) {
        if (key != "producer.id.expiration.ms" && key != "transaction.max.timeout.ms") continue;
        ConfigFromMetadata c{key, v.value, "cluster default", v.at, false, ""};
        int64_t value = 0;
        try {
          size_t used = 0;
          value = std::stoll(v.value, &used);
          if (used != v.value.size() || value <= 0) throw std::invalid_argument("not a positive number");
        } catch (const std::exception&) {
          c.ignored = "expected a positive number of milliseconds";
        }
        const bool flag = key == "producer.id.expiration.ms" ? args.explicit_producer_id_expiration
                                                             : args.explicit_transaction_max_timeout;
        if (c.ignored.empty() && flag) c.overridden = true;
        if (c.ignored.empty() && !flag) {
          (key == "producer.id.expiration.ms" ? producer_id_expiration_ms : transaction_max_timeout_ms) = value;
        }
        metadata_configs.push_back(std::move(c));
      }
    }
  }
  options.producer_id_expiration_ms = producer_id_expiration_ms;

  // Partitions are loaded and diffed on `jobs` workers and finished in name order, whatever the order they
  // load in (OrderedParallelFor): each is printed into its PartitionResult (text, JSON, the page's
  // section) and its replicas are released before its worker loads another, so at most `jobs`
  // partitions' replicas are in memory at once. The memory budget is shared by the partitions in flight.
  const size_t total = resolved.partitions.size();
  const unsigned jobs = ResolveJobs(args.jobs, total);
  auto diff_one = [&](size_t i) {
    const auto& [name, dirs, from] = resolved.partitions[i];
    auto d = std::make_unique<PartitionDiff>();
    d->name = name;
    ReplicaOptions ro = options;
    // Each replica's share of the budget for its per-record state (64 + 32 bytes per record).
    ro.max_state_bytes = (args.memory_budget_mib << 20) / jobs / std::max<size_t>(dirs.size(), 1);
    // The first replica is the others' reference: batches they hold byte for byte are not digested again.
    // Its replicas load on threads of their own only when the partitions do not already share the cores
    // (a thread per partition of a log dir costs its creation and competes with the other workers).
    if (!LoadReplicas(dirs, ro, &d->replicas, &d->error, jobs > 1 ? 1 : 0)) return d;
    // Labels must tell replicas apart (two log dirs named alike): fall back to paths.
    std::set<std::string> labels;
    for (const ReplicaState& r : d->replicas) labels.insert(r.label);
    if (labels.size() != d->replicas.size()) {
      for (ReplicaState& r : d->replicas) r.label = r.path;
    }
    DiffOptions diff_options;
    diff_options.transaction_max_timeout_ms = transaction_max_timeout_ms;
    diff_options.coordinator = txn_log.get();
    diff_options.wall_clock_times = !json;
    diff_options.bytes = format;  // keys and values in the sentences follow --bytes
    // The incident window's settings (diff/incident.h): delete.retention.ms of the topic as the metadata
    // log has it (the topic's config, else the cluster-wide log.cleaner.delete.retention.ms), and the
    // brokers' producer.id.expiration.ms in force.
    if (args.delete_retention_ms) {
      diff_options.delete_retention_ms = args.delete_retention_ms;
      diff_options.delete_retention_from = "--delete-retention-ms";
    }
    if (metadata.get() && !d->replicas.empty() && d->replicas.front().tp) {
      if (!args.delete_retention_ms) {
        RetentionOf(*metadata.get(), d->replicas.front().tp->topic, &diff_options.delete_retention_ms,
                    &diff_options.delete_retention_from);
      }
      diff_options.producer_id_expiration_ms = producer_id_expiration_ms;
      diff_options.producer_id_expiration_from =
          args.explicit_producer_id_expiration ? "--producer-id-expiration-ms" : "the metadata log or Kafka's default";
    }
    d->report = DiffReplicas(d->replicas, diff_options);
    if (json && !args.html.empty()) {
      diff_options.wall_clock_times = true;
      d->html_report = DiffReplicas(d->replicas, diff_options);
    }
    d->loaded = true;
    return d;
  };
  // Prints a loaded partition into its result (on one thread at a time, in name order): what every
  // requested output needs of its replicas. `pi`: its index among the partitions that could be read.
  auto print_one = [&](const PartitionDiff& d, size_t pi, PartitionResult* result) {
    result->name = d.name;
    // A damaged segment is corruption (cli.md: exit 1), even though its offsets are only "missing".
    for (const ReplicaState& r : d.replicas) result->damaged = result->damaged || !r.damaged.empty();
    if (json) {
      result->json = ReportJson(d, format, cluster);
    } else {
      std::string text;  // paths are bytes: printed as --bytes text prints them
      {
        Output capture(&text);
        PrintText(d, format, cluster, &capture);
      }
      result->text = EscapeInvalidUtf8(text);
    }
    if (!args.html.empty()) result->html = DrawPartition(d, pi, format);
  };

  std::vector<PartitionResult> diffs;
  std::vector<std::string> load_errors;
  int exit_code = kExitOk;
  {  // the progress line is erased before anything else is printed
    CountProgress progress("klf diff", total);
    OrderedParallelFor(
        total, jobs,
        [&](size_t i) {
          auto loaded = diff_one(i);
          progress.Done(resolved.partitions[i].name);
          return loaded;
        },
        [&](size_t, std::unique_ptr<PartitionDiff> d) {
          if (!d->loaded) {
            load_errors.push_back(d->error);
            exit_code = kExitUnreadable;
            return;
          }
          PartitionResult result;
          print_one(*d, diffs.size(), &result);
          result.report = std::move(d->report);
          d.reset();  // the replicas, before this worker loads the next partition
          if (result.report.HasDivergence() || result.damaged) exit_code = WorseExit(exit_code, kExitProblems);
          diffs.push_back(std::move(result));
        });
  }
  for (const std::string& e : load_errors) PrintError("diff", e);

  if (diffs.empty()) {
    std::string message = load_errors.empty() ? "no replica could be read" : load_errors.front();
    if (json) PrintErrorJson("diff", kExitUnreadable, message);  // stderr has it already
    return kExitUnreadable;
  }
  // The report is written before stdout: when it fails, stdout holds only the error object.
  if (!args.html.empty()) {
    std::vector<HtmlPartitionDrawn> partitions;
    for (PartitionResult& d : diffs) partitions.push_back(std::move(*d.html));
    std::string error;
    if (!WriteUserFileAtomically(Env::Default(), html.path,
                                 HtmlReport(args, partitions, txn_log, metadata, offsets, load_errors, exit_code),
                                 &error)) {
      return Fail("diff", kExitUnreadable, error, json);
    }
  }
  Output out(1);
  if (args.common.json) {
    nlohmann::json j;
    nlohmann::json offsets_dirs = nlohmann::json::array();
    if (offsets.get()) offsets_dirs = offsets.get()->partition_dirs;
    if (!resolved.any_log_dir && diffs.size() == 1) {
      j = std::move(diffs.front().json);
      j["txnLog"] = txn_log.dirs;
      j["metadataLog"] = MetadataLogJson(metadata.get());
      j["configsFromMetadataLog"] = ConfigsJson(metadata_configs);
      j["offsetsLog"] = offsets_dirs;
    } else {
      j["txnLog"] = txn_log.dirs;
      j["metadataLog"] = MetadataLogJson(metadata.get());
      j["configsFromMetadataLog"] = ConfigsJson(metadata_configs);
      j["offsetsLog"] = offsets_dirs;
      j["logDirs"] = args.paths;
      j["partitions"] = nlohmann::json::array();
      j["findings"] = nlohmann::json::array();
      const DiffCounts counts = CountPartitions(diffs);
      j["counts"] = {{"compared", counts.compared},
                     {"diverged", counts.diverged},
                     {"lagging", counts.lagging},
                     {"healthy", counts.healthy}};
      j["onlyFindings"] = args.only_findings;
      for (PartitionResult& d : diffs) {
        nlohmann::json& pj = d.json;
        for (auto f : pj["findings"]) {
          f["partition"] = pj["partition"];
          j["findings"].push_back(f);
        }
        if (!args.only_findings || HasFinding(d)) j["partitions"].push_back(std::move(pj));
      }
      // Partitions that could not be read: the report carries the error object's fields too.
      if (!load_errors.empty()) {
        AddErrorFields(&j, "diff", exit_code, load_errors.front());
      }
    }
    WriteJson(&out, j, 1);
    out.Append('\n');
  } else {
    if (!txn_log.dirs.empty())
      out.Append(EscapeInvalidUtf8("coordinator's records: " + TxnLogDirsText(txn_log) + "\n\n"));
    std::string head;
    if (metadata.get()) {
      head += fmt::format("metadata log: {}\n", MetadataLogText(*metadata.get()));
      if (!metadata_configs.empty()) head += "configs from it:\n" + ConfigsText(metadata_configs);
    } else if (!args.metadata.no_metadata) {
      head +=
          "metadata log: no __cluster_metadata-0 found beside the replicas (give --metadata-log DIR): no leader/ISR "
          "history\n";
    }
    if (offsets.get()) {
      head += fmt::format("consumer offsets: {} __consumer_offsets partition{} ({}{}), {} committed offsets\n",
                          offsets.get()->partition_dirs.size(), offsets.get()->partition_dirs.size() == 1 ? "" : "s",
                          offsets.get()->partition_dirs.front(),
                          offsets.get()->partition_dirs.size() > 1 ? ", ..." : "", offsets.get()->offsets.size());
    } else if (!args.metadata.no_offsets) {
      head +=
          "consumer offsets: no __consumer_offsets found beside the replicas (give --offsets-log DIR): the groups "
          "that read diverged records cannot be named\n";
    }
    if (!head.empty()) out.Append(EscapeInvalidUtf8(head + "\n"));
    bool first = true;
    for (size_t i = 0; i < diffs.size(); ++i) {
      if (args.only_findings && !HasFinding(diffs[i])) continue;
      if (!first) out.Append("\n");
      first = false;
      out.Append(diffs[i].text);
    }
    if (resolved.any_log_dir || diffs.size() > 1) {
      const DiffCounts counts = CountPartitions(diffs);
      out.Append(std::string(first ? "" : "\n") + CountsText(counts));
      if (args.only_findings && counts.healthy > 0)
        out.Append(fmt::format("({} healthy partitions not shown: --only-findings)\n", counts.healthy));
    }
  }
  out.Flush();
  if (out.failed()) return kExitUnreadable;
  return exit_code;
}

}  // namespace

Command AddDiffCommand(CLI::App* parent) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* app = parent->add_subcommand(
      "diff", "Compare replicas of a partition: name every divergence consumers can see, with its evidence");
  app->footer(
      "Each REPLICA_DIR is a copy of the same partition from a different broker (or give broker log\n"
      "directories: every partition present in two or more of them is compared). Per replica: producer\n"
      "state as a broker loads it, open transactions, aborted ranges, last stable offset, high watermark\n"
      "(replication-offset-checkpoint), and what read_committed / read_uncommitted consumers get. Across\n"
      "replicas: lost_tombstone, lost_abort, lost_commit, hanging_transaction, divergent_record (each a\n"
      "divergence, exit 1) and missing_range (lag or retention, not a divergence). Different compaction\n"
      "progress is not a divergence. --html writes a self-contained page with an offset timeline.");
  AddCommonOptions(app, &args->common);
  app->add_option("--html", args->html,
                  "Also write a self-contained HTML report to FILE (never over an input; an existing FILE only "
                  "with --force, and only if klf wrote it)")
      ->type_name("FILE");
  app->add_flag("--force", args->force, "replace an existing --html FILE that a previous klf diff wrote");
  app->add_option("--jobs", args->jobs, "Partitions loaded and diffed at once (default: one per core)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  app->add_flag("--only-findings", args->only_findings,
                "Over log dirs: print only the partitions with a finding (JSON: `partitions` holds only those; "
                "`counts` still counts all)");
  app->add_option("--now", args->now, "Clock for producer expiration when loading snapshots (ms)")->type_name("MS");
  app->add_option(
         "--memory-budget", args->memory_budget_mib,
         "Memory for the replicas' per-record state, shared by the replicas of the partitions diffed at once (MiB; "
         "about 100 bytes per record; a partition that needs more is reported, exit 3)")
      ->type_name("MIB")
      ->capture_default_str();
  app->add_option("--producer-id-expiration-ms", args->producer_id_expiration_ms,
                  "producer.id.expiration.ms used when loading producer snapshots (default 86400000)");
  app->add_option("--transaction-max-timeout-ms", args->transaction_max_timeout_ms,
                  "The brokers' transaction.max.timeout.ms (default Kafka's 900000): a transaction open longer at one "
                  "epoch raises a suspected merge")
      ->type_name("MS")
      ->check(CLI::PositiveNumber);
  app->add_option("--delete-retention-ms", args->delete_retention_ms,
                  "The topic's delete.retention.ms, for a lost marker's incident window (default: the metadata log's "
                  "topic config or cluster default; over it when given)")
      ->type_name("MS")
      ->check(CLI::NonNegativeNumber);
  AddTxnLogOptions(app, &args->txn_log);
  AddMetadataLogOptions(app, &args->metadata);
  AddOffsetsLogOptions(app, &args->metadata);
  // One PATH is enough when it is a capture holding the brokers' log dirs (Run checks for two after
  // expanding captures, segment_reader/capture.h).
  app->add_option("REPLICA_DIR", args->paths,
                  "Partition directories (one per broker), broker log directories, or a capture holding them")
      ->required()
      ->expected(1, -1)
      ->type_name("DIR");
  return {app, [args, app]() {
            args->explicit_producer_id_expiration = app->count("--producer-id-expiration-ms") > 0;
            args->explicit_transaction_max_timeout = app->count("--transaction-max-timeout-ms") > 0;
            return Run(*args);
          }};
}

}  // namespace klf::cli
