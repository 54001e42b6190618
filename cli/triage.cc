// `klf triage [--json] [--html FILE [--force]] [--jobs N] [--now MS] [--producer-id-expiration-ms N] [--headers-only]
// LOG_DIR...`:
// one screen for a whole capture (triage/triage.h does the work; this file parses and prints).
//
// Text: a count line, then one line per partition that needs a look, most urgent first (diverged, pinned
// LSO, damaged, lagging), the partitions held by one broker only, and healthy partitions as one count.
// Each line ends with the klf command that shows the details. Exit 1 when any partition diverged, is
// pinned or damaged; 3 when a copy could not be read; 0 otherwise (lag and single copies are not
// problems).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/partition_paths.h"
#include "cli/output.h"
#include "cli/triage_html.h"
#include "segment_reader/env.h"
#include "segment_writer/file_writer.h"
#include "segment_writer/output_guard.h"
#include "triage/triage.h"

namespace klf::cli {
namespace {

struct TriageArgs {
  bool json = false;
  unsigned jobs = 0;
  std::optional<int64_t> now;
  int64_t producer_id_expiration_ms = 86400000;
  bool headers_only = false;
  std::string html;  // --html FILE
  bool force = false;
  std::vector<std::string> log_dirs;
};

std::string Quote(const std::string& path) {
  return path.find_first_of(" '\"$\\") == std::string::npos ? path : "'" + path + "'";
}

std::string CopyPaths(const TriagePartition& p) {
  std::string s;
  for (const TriageCopy& c : p.copies) s += " " + Quote(EscapeInvalidUtf8(c.path));
  return s;
}

nlohmann::json CopyJson(const TriagePartition& p, size_t i) {
  const TriageCopy& c = p.copies[i];
  const TriageDamage& d = p.damage[i];
  nlohmann::json j = {{"logDir", c.log_dir},
                      {"path", c.path},
                      {"broker", c.broker},
                      {"loaded", c.loaded},
                      {"errors", d.errors},
                      {"warnings", d.warnings},
                      {"firstError", d.first_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.first_error)}};
  if (!c.digest.empty()) j["digest"] = c.digest;  // only for a copy read from a digest
  if (!c.loaded) {
    j["error"] = c.error;
    return j;
  }
  j["logStartOffset"] = c.log_start_offset;
  j["logEndOffset"] = c.log_end_offset;
  j["highWatermark"] = c.high_watermark;
  j["lastStableOffset"] = c.last_stable_offset;
  j["pinnedBy"] = c.pinned_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.pinned_by);
  j["lag"] = c.lag;
  return j;
}

nlohmann::json PartitionJson(const TriagePartition& p) {
  nlohmann::json j = {{"partition", p.name}, {"status", TriageStatusName(p.status)}};
  j["diverged"] = p.diverged();
  j["pinned"] = p.pinned();
  j["damaged"] = p.damaged();
  j["lagging"] = p.lagging();
  j["copies"] = nlohmann::json::array();
  for (size_t i = 0; i < p.copies.size(); ++i) j["copies"].push_back(CopyJson(p, i));
  if (!p.undecided.empty()) {  // only with digests
    j["undecided"] = {{"why", p.undecided},
                      {"offsets", nlohmann::json::array({p.undecided_first, p.undecided_last})},
                      {"fetch", FilesToFetch(p)}};
  }
  j["findings"] = nlohmann::json::array();
  if (p.diff) {
    for (const Finding& f : p.diff->findings) {
      nlohmann::json affected = nlohmann::json::array(), healthy = nlohmann::json::array();
      for (size_t i : f.affected) affected.push_back(p.diff_labels[i]);
      for (size_t i : f.healthy) healthy.push_back(p.diff_labels[i]);
      j["findings"].push_back({{"kind", FindingKindName(f.kind)},
                               {"divergence", IsDivergence(f.kind)},
                               {"offsets", f.first_offset >= 0 ? nlohmann::json::array({f.first_offset, f.last_offset})
                                                               : nlohmann::json::array()},
                               {"producerId", IntOrNull(f.producer_id)},
                               {"affectedReplicas", affected},
                               {"healthyReplicas", healthy},
                               {"evidence", f.evidence},
                               {"impact", f.impact},
                               {"certainty", FindingCertaintyName(f.certainty)},
                               {"outcome", f.outcome ? nlohmann::json(TxnOutcomeName(*f.outcome)) : nullptr}});
      // Copies read from digests: the files (and offsets) to fetch for klf diff to show the bytes.
      std::vector<std::string> fetch = FilesToFetch(p, f);
      if (!fetch.empty()) j["findings"].back()["fetch"] = fetch;
    }
  }
  return j;
}

// What the text output prints for one partition (its DIVERGED, PINNED, DAMAGED and LAGGING lines).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one text section per triage finding kind; a printer
std::string PartitionText(const TriagePartition& p) {
  std::string out;
  const std::string name = EscapeInvalidUtf8(p.name);
  if (p.diverged()) {
    for (const Finding& f : p.diff->findings) {
      if (!IsDivergence(f.kind)) continue;
      std::string affected;
      for (size_t i : f.affected) affected += (affected.empty() ? "" : ",") + p.diff_labels[i];
      out += fmt::format("DIVERGED  {}  {}{} on {}{}: {}\n", name, FindingKindName(f.kind),
                         f.certainty == FindingCertainty::kSuspected ? " (suspected)" : "", affected,
                         f.first_offset >= 0 ? fmt::format(" (offsets {}..{})", f.first_offset, f.last_offset) : "",
                         f.impact);
    }
    std::vector<std::string> fetch;
    for (const Finding& f : p.diff->findings) {
      if (!IsDivergence(f.kind)) continue;
      for (std::string& x : FilesToFetch(p, f)) {
        if (std::find(fetch.begin(), fetch.end(), x) == fetch.end()) fetch.push_back(std::move(x));
      }
    }
    for (const std::string& x : fetch) out += "          fetch " + EscapeInvalidUtf8(x) + "\n";
    out += fmt::format("          details: klf diff{}{}\n", CopyPaths(p),
                       fetch.empty() ? "" : "  (on copies of the fetched partition directories)");
  }
  if (!p.undecided.empty()) {
    out += fmt::format("UNDECIDED {}  {}\n", name, p.undecided);
    for (const std::string& x : FilesToFetch(p)) out += "          fetch " + EscapeInvalidUtf8(x) + "\n";
    out += "          then: klf diff on copies of the fetched partition directories\n";
  }
  for (const TriageCopy& c : p.copies) {
    if (!c.pinned_by.empty()) {
      out += fmt::format("PINNED    {}  {}: {}\n          details: klf lso {}\n", name, c.broker, c.pinned_by,
                         Quote(EscapeInvalidUtf8(c.path)));
    }
  }
  for (size_t i = 0; i < p.copies.size(); ++i) {
    const TriageCopy& c = p.copies[i];
    if (!c.loaded) {
      out += fmt::format("DAMAGED   {}  {}: cannot be read: {}\n", name, c.broker, EscapeInvalidUtf8(c.error));
    } else if (p.damage[i].errors > 0) {
      out += fmt::format("DAMAGED   {}  {}: {} error{} (first: {})\n          details: klf verify {}\n", name, c.broker,
                         p.damage[i].errors, p.damage[i].errors == 1 ? "" : "s",
                         EscapeInvalidUtf8(p.damage[i].first_error), Quote(EscapeInvalidUtf8(c.path)));
    }
  }
  if (p.lagging()) {
    for (const TriageCopy& c : p.copies) {
      if (c.lag > 0) {
        out += fmt::format("LAGGING   {}  {}: log end offset {}, {} behind the furthest copy\n", name, c.broker,
                           c.log_end_offset, c.lag);
      }
    }
  }
  return out;
}

void PrintText(const TriageReport& r, Output* out) {
  const TriageCounts& n = r.counts;
  out->Append(fmt::format(
      "klf triage: {} log dir{} ({} broker{}), {} partitions: {} compared, {} single-copy; {} diverged, {} pinned, "
      "{} damaged, {} lagging, {} healthy{}\n",
      r.log_dirs.size(), r.log_dirs.size() == 1 ? "" : "s", r.brokers.size(), r.brokers.size() == 1 ? "" : "s",
      n.partitions, n.compared, n.single_copy, n.diverged, n.pinned, n.damaged, n.lagging, n.healthy,
      n.undecided ? fmt::format(", {} undecided (digests cannot settle them: fetch the files named)", n.undecided)
                  : ""));
  std::vector<std::string> single;
  for (const TriagePartition& p : r.partitions) {
    out->Append(PartitionText(p));
    if (p.copies.size() == 1) single.push_back(EscapeInvalidUtf8(p.name) + " (" + p.copies.front().broker + ")");
  }
  if (!single.empty()) {
    out->Append(
        fmt::format("SINGLE    {} partition{} held by one broker only:", single.size(), single.size() == 1 ? "" : "s"));
    for (const std::string& s : single) out->Append(" " + s);
    out->Append("\n");
  }
  for (const std::string& e : r.log_dir_problems) out->Append("LOG DIR   " + EscapeInvalidUtf8(e) + "\n");
  out->Append(fmt::format("healthy   {} partition{} (held by two or more brokers, nothing found)\n", n.healthy,
                          n.healthy == 1 ? "" : "s"));
}

// The page (cli/triage_html.h). Each partition with diff findings is loaded and diffed again, one at a
// time, while its section is drawn (triage keeps no replica), with wall-clock times in the sentences.
std::string HtmlReport(const TriageArgs& a, const TriageOptions& options, const TriageReport& report, int exit_code) {
  std::vector<std::string> lines;
  for (const TriagePartition& p : report.partitions) lines.push_back(PartitionText(p));
  HtmlReportInfo info = HtmlReportInfoNow(a.log_dirs, exit_code);
  TriageOptions reload = options;
  reload.wall_clock_times = true;
  auto section = [&](size_t i) -> std::string {
    const TriagePartition& p = report.partitions[i];
    if (!p.diff || p.diff->findings.empty()) return "";
    std::vector<ReplicaState> replicas;
    DiffReport diff;
    if (!TriageReloadForDiff(p, reload, &replicas, &diff)) return "";
    return DiffHtmlPartitionSection({p.name, &replicas, &diff}, i, BytesFormat::kText);
  };
  const std::string marker =
      std::string(kHtmlOutputMarker) + ": written by klf triage; klf triage --html --force may replace this file -->\n";
  return TriageHtmlPage(report, lines, info, section, marker);
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the command's flag checks and the order of its steps (guard, captures, triage, text, JSON, page)
int RunTriage(const TriageArgs& a) {
  TriageOptions options;
  options.jobs = a.jobs;
  options.now_ms = a.now;
  options.producer_id_expiration_ms = a.producer_id_expiration_ms;
  options.verify_records = !a.headers_only;
  options.wall_clock_times = !a.json;
  const bool show_progress = isatty(2) == 1 && isatty(1) == 0;
  if (show_progress) {
    options.progress = [](size_t done, size_t total) {
      std::fprintf(stderr, "\r\033[Kklf triage: %zu of %zu partitions", done, total);
      std::fflush(stderr);
    };
  }
  // The output guard before any work (segment_writer/output_guard.h): the page is never, holds or lies
  // inside an input, and replaces only a previous klf report (--force).
  CheckedOutput html;
  std::string guard_error;
  if (!a.html.empty() && !CheckOutputPath({a.html, OutputKind::kFile, a.log_dirs, a.force}, &html, &guard_error)) {
    return Fail("triage", kExitUsage, guard_error, a.json);
  }
  TriageReport report;
  std::string error;
  std::vector<std::string> log_dirs = a.log_dirs;
  if (!PrepareCapturePaths(&log_dirs, /*expand_roots=*/true, &error))
    return Fail("triage", kExitUnreadable, error, a.json);
  if (!TriageCapture(log_dirs, options, &report, &error)) {
    return Fail("triage", report.input_unreadable ? kExitUnreadable : kExitUsage, error, a.json);
  }
  if (show_progress) std::fputs("\r\033[K", stderr);

  int exit_code = kExitOk;
  for (const TriagePartition& p : report.partitions) {
    if (p.diverged() || p.pinned() || p.damaged() || !p.undecided.empty()) exit_code = kExitProblems;
  }
  if (!report.log_dir_problems.empty()) exit_code = WorseExit(exit_code, kExitProblems);
  if (report.counts.unreadable > 0) exit_code = kExitUnreadable;

  // The page is written before stdout: when it fails, stdout holds only the error object.
  if (!a.html.empty()) {
    std::string write_error;
    if (!WriteUserFileAtomically(Env::Default(), html.path, HtmlReport(a, options, report, exit_code), &write_error)) {
      return Fail("triage", kExitUnreadable, write_error, a.json);
    }
  }
  Output out(1);
  if (a.json) {
    const TriageCounts& n = report.counts;
    nlohmann::json j;
    j["logDirs"] = report.log_dirs;
    if (!report.digests.empty()) j["digests"] = report.digests;
    j["brokers"] = report.brokers;
    j["counts"] = {{"partitions", n.partitions}, {"compared", n.compared}, {"singleCopy", n.single_copy},
                   {"diverged", n.diverged},     {"pinned", n.pinned},     {"damaged", n.damaged},
                   {"lagging", n.lagging},       {"healthy", n.healthy},   {"unreadable", n.unreadable}};
    if (!report.digests.empty()) j["counts"]["undecided"] = n.undecided;  // only with digests
    j["partitions"] = nlohmann::json::array();
    j["singleCopy"] = nlohmann::json::array();
    for (const TriagePartition& p : report.partitions) {
      if (p.copies.size() == 1) j["singleCopy"].push_back(p.name);
      if (p.status != TriageStatus::kHealthy) j["partitions"].push_back(PartitionJson(p));
    }
    j["logDirProblems"] = report.log_dir_problems;
    WriteJson(&out, j);
    out.Append("\n");
  } else {
    PrintText(report, &out);
  }
  return exit_code;
}

}  // namespace

Command AddTriageCommand(CLI::App* parent) {
  auto args = std::make_shared<TriageArgs>();
  CLI::App* app = parent->add_subcommand("triage", "One screen for a whole capture: where to look first");
  app->footer(
      "Runs verify on every log directory, diffs every partition held by two or more brokers, explains every\n"
      "copy's last stable offset (an offline find-hanging) and compares log end offsets, then ranks what it\n"
      "found: divergences, pinned LSOs, damage, lag; partitions held by one broker are listed; healthy ones are\n"
      "counted. Each line names the klf command that shows the details. LOG_DIRs are the log directories of\n"
      "several brokers, or several disks of one broker (JBOD: brokers are told apart by meta.properties), or\n"
      "digests of them (klf digest, made on each broker host): the same findings; where a finding would quote\n"
      "bytes a digest does not hold, it names the files and offsets to fetch from which broker for klf diff.\n"
      "Exit 1 when a partition diverged, is pinned or damaged; 3 when a copy cannot be read.");
  app->add_option("LOG_DIR", args->log_dirs,
                  "broker log directories, captures holding them, or digests of them (klf digest); never modified")
      ->required()
      ->type_name("DIR|DIGEST");
  app->add_flag("--json", args->json, "the same findings and the counts as one JSON object");
  app->add_option("--jobs", args->jobs, "partitions processed at once (default: one per core)")
      ->check(CLI::Range(0, 256));
  app->add_option("--now", args->now, "clock (ms) for producer expiration; default: each log's newest timestamp")
      ->type_name("MS");
  app->add_option("--producer-id-expiration-ms", args->producer_id_expiration_ms,
                  "producer.id.expiration.ms (default 86400000)");
  app->add_flag("--headers-only", args->headers_only, "verify only framing, CRCs and batch headers (faster)");
  app->add_option("--html", args->html,
                  "Also write a self-contained HTML index of the capture to FILE: the ranked partitions, each with "
                  "its klf diff --html section (never over an input; an existing FILE only with --force, and only if "
                  "klf wrote it)")
      ->type_name("FILE");
  app->add_flag("--force", args->force, "replace an existing --html FILE that a previous klf command wrote");
  return {app, [args] { return RunTriage(*args); }};
}

}  // namespace klf::cli
