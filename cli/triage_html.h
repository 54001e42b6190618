// The HTML page of `klf triage --html FILE`: an index of the capture meant to be attached to a
// postmortem. An overview (klf's version, the command line, the inputs, the generation time, the
// counts), a ranked table of the partitions that need a look linking to their sections, healthy
// partitions as one count line, then one section per such partition: what triage found there (the text
// lines) and, for a partition with diff findings, the section `klf diff --html` draws for it
// (cli/diff_html.h: same timeline, tables and ids).
//
// Memory: the page needs the replicas of a partition only while its section is drawn; the caller hands
// them over one partition at a time (`sections`), so only one partition's replicas are held at once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli/diff_html.h"
#include "triage/triage.h"

namespace klf::cli {

// The diff section of partition `report.partitions[i]` (drawn by DiffHtmlPartitionSection with the id
// "partition-<i>"), or "" when it has no diff findings to draw.
using TriageSectionFn = std::function<std::string(size_t i)>;

// `lines[i]`: what the text output prints for report.partitions[i] (without the name column's padding).
std::string TriageHtmlPage(const TriageReport& report, const std::vector<std::string>& lines,
                           const HtmlReportInfo& info, const TriageSectionFn& diff_section, const std::string& marker);

}  // namespace klf::cli
