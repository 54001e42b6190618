// The HTML report of `klf diff --html FILE` (spec cli.md "diff"): one self-contained page (inline CSS,
// SVG and a few lines of JS, nothing fetched from the network) meant to be attached to a postmortem.
//
// It opens with an overview (partitions compared, findings by kind and certainty, replicas, klf's
// version, the command line, the inputs and the generation time), then one section per partition: the
// replicas side by side on an offset timeline (with a time axis from the batches' timestamps), the
// findings marked on the affected replicas, the replicas' offsets and the findings' evidence. The
// findings are diff/diff.h's; this file only lays them out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diff/diff.h"
#include "segment_reader/bytes.h"

namespace klf::cli {

// One compared partition: its replicas, as loaded, and what diff found.
struct HtmlPartition {
  std::string name;  // the partition as the JSON names it ("foo-0")
  const std::vector<ReplicaState>* replicas = nullptr;
  const DiffReport* report = nullptr;
};

struct HtmlReportInfo {
  std::string version;              // klf's
  std::vector<std::string> argv;    // the command line
  int64_t generated_ms = 0;         // wall clock, ms since the epoch
  std::vector<std::string> inputs;  // REPLICA_DIRs as given
  // Other inputs read beside them: {"coordinator's records", {DIR...}}, ...
  std::vector<std::pair<std::string, std::vector<std::string>>> other_inputs;
  std::vector<std::string> unreadable;  // partitions that could not be read: the error of each
  int exit_code = 0;
  BytesFormat format = BytesFormat::kText;
};

// This run's header of a page: klf's version and command line (CurrentInvocation), the wall clock now,
// the inputs as given and the exit code.
HtmlReportInfo HtmlReportInfoNow(std::vector<std::string> inputs, int exit_code);

// One partition as the page shows it, drawn while its replicas are loaded: its section's summary line and
// body (timeline, legend, replicas, findings; element ids "partition-<pi>", "finding-p<pi>-f<fi>"), and
// what the overview needs of it. Holds nothing of the replicas' per-record state, so a page over many
// partitions can be drawn one partition at a time and assembled once their replicas are released.
struct HtmlPartitionDrawn {
  std::string name;
  DiffReport report;
  size_t replica_count = 0;
  std::vector<std::string> labels;       // the replicas', in order
  int64_t offset_lo = 0, offset_hi = 0;  // lowest log start and highest log end offset of the replicas
  std::string summary, body;
};
HtmlPartitionDrawn DrawHtmlPartition(const HtmlPartition& partition, size_t pi, BytesFormat format);

// The page. Starts with "<!DOCTYPE html>\n" and then `marker` (the output guard's comment line). The
// partitions' `pi` are their indices in `partitions`.
std::string DiffHtmlPage(const std::vector<HtmlPartitionDrawn>& partitions, const HtmlReportInfo& info,
                         const std::string& marker);
// The same from the partitions with their replicas loaded (each drawn with its index as pi).
std::string DiffHtmlPage(const std::vector<HtmlPartition>& partitions, const HtmlReportInfo& info,
                         const std::string& marker);

// The pieces other pages (klf triage --html) are built from, so that a partition looks the same on every
// klf page:
//   - one partition's section as DiffHtmlPage draws it (timeline, legend, replicas, findings), with the
//     element id "partition-<pi>" and the finding ids "finding-p<pi>-f<fi>";
//   - the page around a body: doctype, marker, head (title, the same style), the SVG patterns the
//     sections use, and the highlight script.
std::string DiffHtmlPartitionSection(const HtmlPartition& partition, size_t pi, BytesFormat format);
std::string HtmlPageShell(const std::string& title, const std::string& version, const std::string& body,
                          const std::string& marker, const std::string& extra_style = "");
// Text for a page: HTML-escaped, invalid UTF-8 shown as \xNN.
std::string HtmlEscape(std::string_view raw);
// The overview table's opening and first rows, which both pages share: generated (ISO-8601 UTC), klf
// version, the command line (each argument as a POSIX shell would need it quoted), the inputs.
std::string HtmlOverviewHead(const HtmlReportInfo& info);

}  // namespace klf::cli
