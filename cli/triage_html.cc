#include "cli/triage_html.h"

#include <fmt/format.h>

namespace klf::cli {
namespace {

std::string StatusCell(TriageStatus s) {
  return fmt::format(R"(<td class="status {0}">{0}</td>)", TriageStatusName(s));
}

// The findings of one partition for the ranked table: each diff finding's kind (with its certainty), the
// pinned copies, the damaged copies, the lagging ones.
std::string FindingsCell(const TriagePartition& p) {
  std::vector<std::string> parts;
  if (p.diff) {
    for (const Finding& f : p.diff->findings) {
      parts.push_back(fmt::format(R"(<span class="nowrap {}">{}{}</span>)", IsDivergence(f.kind) ? "divergence" : "lag",
                                  FindingKindName(f.kind),
                                  f.certainty == FindingCertainty::kSuspected ? " (suspected)" : ""));
    }
  }
  for (size_t i = 0; i < p.copies.size(); ++i) {
    const TriageCopy& c = p.copies[i];
    if (!c.pinned_by.empty()) parts.push_back(fmt::format("LSO pinned on {}", HtmlEscape(c.broker)));
    if (!c.loaded) parts.push_back(fmt::format("{} cannot be read", HtmlEscape(c.broker)));
    if (c.loaded && p.damage[i].errors > 0) {
      parts.push_back(fmt::format("{} damaged ({} error{})", HtmlEscape(c.broker), p.damage[i].errors,
                                  p.damage[i].errors == 1 ? "" : "s"));
    }
    if (c.lag > 0) parts.push_back(fmt::format("{} {} behind", HtmlEscape(c.broker), c.lag));
  }
  return parts.empty() ? "" : fmt::format("{}", fmt::join(parts, ", "));
}

std::string Overview(const TriageReport& r, const HtmlReportInfo& info) {
  const TriageCounts& n = r.counts;
  std::string s;
  size_t need = 0;
  for (const TriagePartition& p : r.partitions) {
    need +=
        p.status == TriageStatus::kDiverged || p.status == TriageStatus::kPinned || p.status == TriageStatus::kDamaged;
  }
  if (need > 0) {
    s += fmt::format(
        R"(<p class="verdict divergence">{} of {} partitions need a look: {} diverged, {} pinned, {} damaged.</p>)",
        need, n.partitions, n.diverged, n.pinned, n.damaged);
  } else {
    s +=
        fmt::format(R"(<p class="verdict ok">Nothing diverged, pinned or damaged in {} partitions.</p>)", n.partitions);
  }
  s += HtmlOverviewHead(info);
  std::vector<std::string> brokers;
  for (const std::string& b : r.brokers) brokers.push_back(HtmlEscape(b));
  s += fmt::format("<tr><th>brokers</th><td>{}</td></tr>", fmt::join(brokers, ", "));
  s += fmt::format(
      R"(<tr><th>counts</th><td class="counts">{} partitions: {} compared, {} single-copy; {} diverged, {} pinned, {} damaged, {} lagging, {} healthy{}</td></tr>)",
      n.partitions, n.compared, n.single_copy, n.diverged, n.pinned, n.damaged, n.lagging, n.healthy,
      n.unreadable ? fmt::format("; {} with a copy that cannot be read", n.unreadable) : "");
  s += fmt::format("<tr><th>exit code</th><td>{} ({})</td></tr>", info.exit_code,
                   info.exit_code == 0   ? "nothing diverged, pinned or damaged"
                   : info.exit_code == 1 ? "a partition diverged, is pinned or damaged"
                   : info.exit_code == 3 ? "a copy could not be read"
                                         : "usage error");
  s += "</table>";
  for (const std::string& e : r.log_dir_problems)
    s += fmt::format(R"(<p class="unreadable">log dir: {}</p>)", HtmlEscape(e));
  return s;
}

}  // namespace

std::string TriageHtmlPage(const TriageReport& report, const std::vector<std::string>& lines,
                           const HtmlReportInfo& info, const TriageSectionFn& diff_section, const std::string& marker) {
  std::string body = "<h1>klf triage: capture report</h1>" + Overview(report, info);
  // The ranked table: every partition with a finding, in triage's order (diverged, pinned, damaged,
  // lagging), each linking to its section; single copies with nothing found and healthy partitions are
  // one line each.
  body +=
      "<h2>Partitions that need a look</h2><table class=\"ranked\"><tr><th>#</th><th>partition</th><th>status</th>"
      "<th>copies</th><th>findings</th></tr>";
  std::string sections;
  size_t rank = 0, healthy = 0;
  std::vector<std::string> single;
  for (size_t i = 0; i < report.partitions.size(); ++i) {
    const TriagePartition& p = report.partitions[i];
    if (p.status == TriageStatus::kHealthy) {
      ++healthy;
      continue;
    }
    if (p.status == TriageStatus::kSingleCopy) {  // nothing found: named in one line below the table
      single.push_back(HtmlEscape(p.name) + " (" + HtmlEscape(p.copies.front().broker) + ")");
      continue;
    }
    std::vector<std::string> brokers;
    for (const TriageCopy& c : p.copies) brokers.push_back(HtmlEscape(c.broker));
    body += fmt::format(
        R"(<tr class="triage-row" data-partition="{}"><td>{}</td><td><a href="#triage-{}">{}</a></td>{}<td>{}</td><td>{}</td></tr>)",
        HtmlEscape(p.name), ++rank, i, HtmlEscape(p.name), StatusCell(p.status), fmt::join(brokers, ", "),
        FindingsCell(p));
    sections += fmt::format(R"(<section class="triage" id="triage-{}"><h2>{} <span class="status {}">{}</span></h2>)",
                            i, HtmlEscape(p.name), TriageStatusName(p.status), TriageStatusName(p.status));
    if (i < lines.size() && !lines[i].empty()) sections += "<pre class=\"lines\">" + HtmlEscape(lines[i]) + "</pre>";
    sections += diff_section(i) + "</section>";
  }
  if (rank == 0) body += R"(<tr><td colspan="5" class="ok">None.</td></tr>)";
  body += "</table>";
  if (!single.empty()) {
    body += fmt::format(
        R"(<div class="single">Held by one broker only (nothing to compare, nothing found): {} partition{}: <details><summary>names</summary>{}</details></div>)",
        single.size(), single.size() == 1 ? "" : "s", fmt::join(single, ", "));
  }
  body += fmt::format(R"(<p class="healthy">Healthy: {} partition{} (held by two or more brokers, nothing found).</p>)",
                      healthy, healthy == 1 ? "" : "s");
  body += sections;
  const TriageCounts& n = report.counts;
  const std::string title = fmt::format("klf triage: {} partitions, {} diverged, {} pinned, {} damaged", n.partitions,
                                        n.diverged, n.pinned, n.damaged);
  constexpr const char* kTriageStyle = R"(<style>
td.status,span.status{font-weight:bold}.status.diverged{color:#1d4ed8}.status.pinned{color:#c026d3}
.status.damaged{color:#b52b27}.status.lagging,.status.single_copy{color:#6b7280}
pre.lines{white-space:pre-wrap;background:#f6f6f6;padding:6px 8px;font-size:12px}
section.triage{border-top:2px solid #ddd;margin-top:22px}span.divergence{color:#1d4ed8;font-weight:bold}
span.lag{color:#6b7280}
</style>)";
  return HtmlPageShell(title, info.version, body, marker, kTriageStyle);
}

}  // namespace klf::cli
