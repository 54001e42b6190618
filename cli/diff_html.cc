// The HTML report of `klf diff --html` (cli/diff_html.h). Layout only: every fact on the page comes
// from diff/diff.h (the findings) and diff/replica_state.h (the replicas as loaded).
//
// The timelines are SVG laid out here, not in the browser: every text is set in a monospaced font
// (DejaVu Sans Mono's advance is 0.602 em), so its width is known from its length and labels can be
// stacked into lanes that never overlap, in any browser and with scripts off.
#include "cli/diff_html.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"

#include <fmt/format.h>

#include "cli/metadata_log.h"
#include "cli/output.h"
#include "metadata/cluster_metadata.h"
#include "segment_reader/java_long.h"

namespace klf::cli {
namespace {

// ---------------------------------------------------------------------------------------------
// Text

// HTML-escaped, invalid UTF-8 (a path is bytes) shown as \xNN as the text output shows it.
std::string Esc(std::string_view raw) {
  const std::string s = EscapeInvalidUtf8(raw);
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// A path (or an argument) that may wrap after a '/', never inside a name: each name is a nowrap span.
std::string EscPath(std::string_view raw) {
  const std::string s = Esc(raw);
  std::string o;
  size_t from = 0;
  while (from <= s.size()) {
    size_t slash = s.find('/', from);
    const std::string part = s.substr(from, slash == std::string::npos ? std::string::npos : slash - from);
    if (!part.empty()) o += "<span class=\"nw\">" + part + "</span>";
    if (slash == std::string::npos) break;
    o += part.empty() ? "/" : "/<wbr>";  // never a lone leading '/' at a line's end
    from = slash + 1;
  }
  return o;
}

// Display columns of valid UTF-8 in a monospaced font: East Asian wide characters take two.
size_t Columns(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    n += len >= 3 ? 2 : 1;  // conservative: anything from U+0800 up may be wide
    i += len;
  }
  return n;
}

// At most `max` columns of s (valid UTF-8), "…" marking what was cut: the end is kept (paths) or the start.
std::string Shorten(const std::string& raw, size_t max, bool keep_end) {
  const std::string s = EscapeInvalidUtf8(raw);
  if (Columns(s) <= max || max < 2) return s;
  std::vector<size_t> starts;  // code point boundaries
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  starts.push_back(s.size());
  if (keep_end) {
    for (size_t k = 0; k < starts.size(); ++k) {
      std::string tail = s.substr(starts[k]);
      if (Columns(tail) + 1 <= max) return "\u2026" + tail;
    }
    return "\u2026";
  }
  for (size_t k = starts.size(); k-- > 0;) {
    std::string head = s.substr(0, starts[k]);
    if (Columns(head) + 1 <= max) return head + "\u2026";
  }
  return "\u2026";
}

// The width of a monospaced SVG text of `font` px (a little over DejaVu Sans Mono's 0.602 em).
double TextWidth(std::string_view valid_utf8, double font) { return double(Columns(valid_utf8)) * font * 0.62; }

// ISO-8601 UTC, milliseconds only when there are any.
std::string Iso(int64_t ms) {
  std::string s = IsoUtc(ms);
  if (s.size() > 5 && s.compare(s.size() - 5, 5, ".000Z") == 0) s = s.substr(0, s.size() - 5) + "Z";
  return s;
}

// One argument as a POSIX shell would need it quoted.
std::string ShellQuote(const std::string& a) {
  if (!a.empty() && a.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,@%+-") ==
                        std::string::npos) {
    return a;
  }
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string KeyText(const Finding& f, BytesFormat format) {
  if (!f.has_key) return "";
  return f.key ? FormatBytes(AsBytes(*f.key), format) : "null";
}

std::string OffsetsOf(const Finding& f) {
  if (f.first_offset < 0) return "";
  return f.first_offset == f.last_offset ? std::to_string(f.first_offset)
                                         : fmt::format("{}..{}", f.first_offset, f.last_offset);
}

std::string FindingId(size_t partition, size_t finding) { return fmt::format("p{}-f{}", partition, finding); }

// ---------------------------------------------------------------------------------------------
// Colours (one place: the timeline and its legend use the same)

constexpr const char* kFill[] = {"", "#7fb77e", "#f0a04b", "#8a7fd1", "#d9534f"};  // by column class
constexpr const char* kFillName[] = {"", "data", "transactional data", "control batch", "aborted data"};
constexpr const char* kDivergenceColor = "#1d4ed8";  // finding bands and labels: blue, unlike any data
constexpr const char* kLagColor = "#6b7280";
constexpr const char* kLogEndColor = "#111";
constexpr const char* kHighWatermarkColor = "#6b7280";
constexpr const char* kPinnedLsoColor = "#c026d3";  // magenta, dashed: not the red of aborted data

// The patterns the finding bands are filled with (ids are the page's: one definition serves every SVG).
constexpr const char* kPatternDefs =
    R"(<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>)"
    R"~(<pattern id="hatch-divergence" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">)~"
    R"(<rect width="6" height="6" fill="#1d4ed8" fill-opacity="0.12"/><line x1="0" y1="0" x2="0" y2="6" stroke="#1d4ed8" stroke-width="2.5"/></pattern>)"
    R"~(<pattern id="hatch-lag" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">)~"
    R"(<rect width="6" height="6" fill="#6b7280" fill-opacity="0.10"/><line x1="0" y1="0" x2="0" y2="6" stroke="#6b7280" stroke-width="2"/></pattern>)"
    R"(</defs></svg>)";

std::string Legend(bool any_lso, bool any_hw) {
  auto box = [](const std::string& fill, const std::string& stroke, const char* name) {
    return fmt::format(
        R"(<span class="key"><svg width="22" height="12" aria-hidden="true"><rect x="1" y="1" width="20" height="10" fill="{}" stroke="{}"/></svg>{}</span>)",
        fill, stroke, name);
  };
  auto line = [](const char* color, const char* dash, const char* name) {
    return fmt::format(
        R"(<span class="key"><svg width="12" height="14" aria-hidden="true"><line x1="6" x2="6" y1="0" y2="14" stroke="{}" stroke-width="2"{}/></svg>{}</span>)",
        color, *dash ? fmt::format(R"( stroke-dasharray="{}")", dash) : "", name);
  };
  std::string s = R"(<div class="legend">)";
  for (int c = 1; c <= 4; ++c) s += box(kFill[c], kFill[c], kFillName[c]);
  s += box("url(#hatch-divergence)", kDivergenceColor, "finding (divergence) on the affected replica");
  s += box("url(#hatch-lag)", kLagColor, "finding (lag: missing_range)");
  s += line(kLogEndColor, "", "log end");
  if (any_hw) s += line(kHighWatermarkColor, "3 2", "high watermark (below log end)");
  if (any_lso) s += line(kPinnedLsoColor, "4 2", "last stable offset, pinned");
  return s + "</div>";
}

// ---------------------------------------------------------------------------------------------
// The timeline

constexpr double kSvgWidth = 1320, kX0 = 178, kPlotWidth = 1070;  // the plot ends at 1248
constexpr double kBar = 18, kLane = 13, kRowGap = 12, kTop = 8;
constexpr double kLabelFont = 12, kSmallFont = 10;

struct Scale {
  int64_t lo = 0, hi = 1;
  bool empty = false;  // every replica's log start = log end
  double X(int64_t o) const { return kX0 + double(std::clamp(o, lo, hi) - lo) / double(hi - lo) * kPlotWidth; }
};

// Offset ticks on round numbers, 1-2-5 steps, spaced for their labels.
std::vector<int64_t> OffsetTicks(const Scale& s) {
  if (s.empty) return {s.lo};
  const int64_t span = s.hi - s.lo;
  const double label = TextWidth(std::to_string(std::max(std::abs(s.lo), std::abs(s.hi))), kSmallFont) + 14;
  int64_t step = 0;
  for (int64_t decade = 1; step == 0; decade *= 10) {
    for (int64_t m : {1, 2, 5}) {
      const int64_t candidate = decade * m;
      if (double(span) / double(candidate) <= 12 && double(candidate) / double(span) * kPlotWidth >= label) {
        step = candidate;
        break;
      }
    }
    if (decade > INT64_MAX / 100) step = step ? step : span;  // offsets near 2^63: one tick per end
  }
  std::vector<int64_t> ticks;
  int64_t t = s.lo % step == 0 ? s.lo : (s.lo / step + 1) * step;
  for (; t <= s.hi; t = JavaAdd(t, step)) {
    ticks.push_back(t);
    if (t > s.hi - step) break;
  }
  return ticks;
}

// The first record at or after `offset` (below `before`) with a timestamp, over every replica: {offset, ms}.
std::optional<std::pair<int64_t, int64_t>> TimestampNear(const std::vector<ReplicaState>& replicas, int64_t offset,
                                                         int64_t before) {
  std::optional<std::pair<int64_t, int64_t>> best;
  for (const ReplicaState& r : replicas) {
    auto it = std::lower_bound(r.records.begin(), r.records.end(), offset,
                               [](const RecordDigest& d, int64_t o) { return d.offset < o; });
    for (int n = 0; it != r.records.end() && it->offset < before && n < 64; ++it, ++n) {
      if (it->timestamp < 0) continue;
      if (!best || it->offset < best->first) best = std::make_pair(it->offset, it->timestamp);
      break;
    }
  }
  return best;
}

// A last stable offset held below the high watermark (or the log end) by an open transaction.
bool LsoPinned(const ReplicaState& r) {
  return r.last_stable_offset < r.high_watermark || (!r.open_txns.empty() && r.last_stable_offset < r.log_end_offset);
}

// One replica's bar: batches bucketed into pixel columns so the page stays small for any log size.
// NOLINTNEXTLINE(readability-function-cognitive-complexity): HTML for one replica's bar: one branch per segment and marker kind; a printer
std::string ReplicaBar(const ReplicaState& r, const Scale& sc, double y) {
  std::string s;
  const double x_start = sc.X(r.log_start_offset), x_end = sc.X(r.log_end_offset);
  // The offsets this replica holds; the rest of the domain is a thin line.
  s += fmt::format(R"(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#e5e5e5"/>)", kX0, kX0 + kPlotWidth,
                   y + kBar / 2, y + kBar / 2);
  if (x_end - x_start >= 0.5) {
    s += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.0f}" fill="#f1f1f1"/>)", x_start, y,
                     x_end - x_start, kBar);
  }
  if (!sc.empty) {
    const int columns = int(kPlotWidth);
    // Column class, by priority: 4 aborted data, 3 control, 2 transactional, 1 data, 0 nothing.
    std::vector<int> col(columns, 0);
    const double span = double(sc.hi - sc.lo);
    auto column = [&](int64_t o) {
      return std::clamp(int(double(std::clamp(o, sc.lo, sc.hi) - sc.lo) / span * columns), 0, columns - 1);
    };
    auto fill = [&](int64_t first, int64_t last, int cls) {
      const int64_t end_offset = JavaAdd(last, 1);
      // Each offset covers its whole share of the width (a one-offset batch is at least a pixel).
      const int end = std::max(column(first), column(end_offset) - (end_offset < sc.hi ? 1 : 0));
      for (int c = column(first); c <= end; ++c) col[c] = std::max(col[c], cls);
    };
    for (const BatchSpan& b : r.batches) fill(b.base_offset, b.last_offset, b.control ? 3 : b.transactional ? 2 : 1);
    for (const RecordDigest& d : r.records) {
      if (!d.control && d.transactional && d.fate == TxnFate::kAborted) fill(d.offset, d.offset, 4);
    }
    for (int c = 0; c < columns;) {
      int e = c;
      while (e < columns && col[e] == col[c]) ++e;
      if (col[c] != 0) {
        const int64_t from = sc.lo + int64_t(double(c) / columns * span);
        const int64_t to = sc.lo + int64_t(double(e) / columns * span) - 1;
        s += fmt::format(
            R"(<rect x="{:.1f}" y="{:.1f}" width="{}" height="{:.0f}" fill="{}"><title>{}: {}, offsets ~{}..{}</title></rect>)",
            kX0 + c, y, e - c, kBar, kFill[col[c]], Esc(r.label), kFillName[col[c]], from, std::max(from, to));
      }
      c = e;
    }
  }
  if (r.log_start_offset == r.log_end_offset) {
    const std::string note = fmt::format("empty: log start = log end = {}", r.log_end_offset);
    const double w = TextWidth(note, kSmallFont);
    const double x = x_end + 6 + w <= kX0 + kPlotWidth ? x_end + 6 : x_end - 6 - w;
    s += fmt::format(R"(<text class="note" x="{:.1f}" y="{:.1f}">{}</text>)", x, y + kBar / 2 + 3.5, note);
  }
  return s;
}

// Log end, high watermark and a pinned last stable offset: drawn over the finding bands.
std::string ReplicaMarks(const ReplicaState& r, const Scale& sc, double y) {
  std::string s;
  auto mark = [&](int64_t o, const char* color, const char* dash, const std::string& what) {
    const double x = sc.X(o);
    s += fmt::format(
        R"(<line class="mark" x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="{3}" stroke-width="2"{4}><title>{5}: {6} {7}</title></line>)",
        x, y - 3, y + kBar + 3, color, *dash ? fmt::format(R"( stroke-dasharray="{}")", dash) : "", Esc(r.label), what,
        o);
  };
  if (r.high_watermark < r.log_end_offset) mark(r.high_watermark, kHighWatermarkColor, "3 2", "high watermark");
  if (LsoPinned(r))
    mark(r.last_stable_offset, kPinnedLsoColor, "4 2", "last stable offset (pinned by an open transaction)");
  mark(r.log_end_offset, kLogEndColor, "", "log end offset");
  return s;
}

// At most this many lanes of labels under a bar; the findings beyond are counted in the last one.
constexpr size_t kMaxLanes = 8;

struct PlacedLabel {
  enum Kind { kFinding, kLso, kMore } kind = kFinding;
  size_t finding = 0;  // kFinding: index into the report's findings
  double x = 0, width = 0;
  size_t lane = 0;
  std::string text;
};

// The labels under one replica's bar: a pinned LSO's first, then each finding's under the start of its
// band, in the first lane where it does not touch a label already placed (lanes stack downwards),
// shifted left at the plot's end. Past kMaxLanes, one last label counts the findings left out (the
// findings table lists them all).
std::vector<PlacedLabel> PlaceLabels(const std::vector<ReplicaState>& replicas, const DiffReport& report,
                                     size_t replica, const Scale& sc, BytesFormat format, size_t* lanes) {
  std::vector<PlacedLabel> labels;
  for (size_t fi = 0; fi < report.findings.size(); ++fi) {
    const Finding& f = report.findings[fi];
    if (std::find(f.affected.begin(), f.affected.end(), replica) == f.affected.end()) continue;
    PlacedLabel l;
    l.finding = fi;
    l.text = fmt::format("#{} {}", fi + 1, FindingKindName(f.kind));
    if (f.has_key) l.text += " " + Shorten(KeyText(f, format), 24, false);
    if (f.first_offset < 0) l.text += " (the whole log)";  // unrelated_logs: no band, the label alone
    l.width = TextWidth(l.text, kSmallFont);
    l.x = std::min(f.first_offset < 0 ? kX0 : sc.X(f.first_offset), kX0 + kPlotWidth - l.width);
    labels.push_back(std::move(l));
  }
  const ReplicaState& r = replicas[replica];
  if (LsoPinned(r)) {
    PlacedLabel l;
    l.kind = PlacedLabel::kLso;
    l.text = fmt::format("LSO {} pinned", r.last_stable_offset);
    l.width = TextWidth(l.text, kSmallFont);
    l.x = std::min(sc.X(r.last_stable_offset), kX0 + kPlotWidth - l.width);
    labels.push_back(std::move(l));
  }
  std::stable_sort(labels.begin(), labels.end(), [](const PlacedLabel& a, const PlacedLabel& b) {
    if ((a.kind == PlacedLabel::kLso) != (b.kind == PlacedLabel::kLso)) return a.kind == PlacedLabel::kLso;
    return a.x < b.x;
  });
  std::vector<double> lane_right;
  std::vector<PlacedLabel> placed;
  size_t left_out = 0;
  for (PlacedLabel& l : labels) {
    l.lane = lane_right.size();
    for (size_t k = 0; k < lane_right.size(); ++k) {
      if (lane_right[k] + 8 <= l.x) {
        l.lane = k;
        break;
      }
    }
    if (l.lane + 1 >= kMaxLanes) {
      ++left_out;
      continue;
    }
    if (l.lane == lane_right.size()) lane_right.push_back(0);
    lane_right[l.lane] = l.x + l.width;
    placed.push_back(std::move(l));
  }
  if (left_out > 0) {
    PlacedLabel l;
    l.kind = PlacedLabel::kMore;
    l.text =
        fmt::format("+{} more finding{} on this replica: see the findings table", left_out, left_out == 1 ? "" : "s");
    l.width = TextWidth(l.text, kSmallFont);
    l.x = kX0;
    l.lane = lane_right.size();
    lane_right.push_back(l.x + l.width);
    placed.push_back(std::move(l));
  }
  *lanes = lane_right.size();
  return placed;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): HTML timeline: one branch per event kind; a printer
std::string Timeline(const std::vector<ReplicaState>& replicas, const DiffReport& report, size_t pi, const Scale& sc,
                     BytesFormat format) {
  std::string rows, bands, marks, labels;
  double y = kTop;
  std::vector<double> row_y(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaState& r = replicas[i];
    row_y[i] = y;
    const std::string name = Shorten(r.label, size_t((kX0 - 12) / (kLabelFont * 0.62)), true);
    rows += fmt::format(R"(<text class="rlabel" x="4" y="{:.1f}">{}<title>{}</title></text>)", y + kBar / 2 + 4,
                        Esc(name), Esc(r.path));
    rows += ReplicaBar(r, sc, y);
    size_t lanes = 0;
    marks += ReplicaMarks(r, sc, y);
    for (const PlacedLabel& l : PlaceLabels(replicas, report, i, sc, format, &lanes)) {
      const double baseline = y + kBar + 4 + kLane * double(l.lane + 1) - 3;
      if (l.kind == PlacedLabel::kLso) {
        labels += fmt::format(
            R"(<text class="mlabel lso" x="{:.1f}" y="{:.1f}">{}<title>{}: last stable offset {} (high watermark {}, log end {}) held by an open transaction: read_committed consumers stop there</title></text>)",
            l.x, baseline, l.text, Esc(r.label), r.last_stable_offset, r.high_watermark, r.log_end_offset);
        continue;
      }
      if (l.kind == PlacedLabel::kMore) {
        labels +=
            fmt::format(R"(<a href="#findings-p{}"><text class="mlabel more" x="{:.1f}" y="{:.1f}">{}</text></a>)", pi,
                        l.x, baseline, l.text);
        continue;
      }
      const Finding& f = report.findings[l.finding];
      const std::string id = FindingId(pi, l.finding);
      labels += fmt::format(
          R"(<a href="#finding-{0}"><text class="flabel {1}" data-finding="{0}" x="{2:.1f}" y="{3:.1f}">{4}<title>{5} offsets {6} on {7}: {8}</title></text></a>)",
          id, IsDivergence(f.kind) ? "divergence" : "lag", l.x, baseline, Esc(l.text), FindingKindName(f.kind),
          OffsetsOf(f), Esc(r.label), Esc(f.evidence));
    }
    y += kBar + (lanes ? 4 + kLane * double(lanes) : 0) + kRowGap;
  }
  // Findings as hatched bands over the affected replicas' rows.
  for (size_t fi = 0; fi < report.findings.size(); ++fi) {
    const Finding& f = report.findings[fi];
    if (f.first_offset < 0) continue;
    const double x1 = sc.X(f.first_offset), x2 = sc.X(JavaAdd(f.last_offset, 1));
    const bool divergence = IsDivergence(f.kind);
    for (size_t a : f.affected) {
      if (a >= row_y.size()) continue;
      bands += fmt::format(
          R"~(<rect class="finding-band" data-finding="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.0f}" fill="url(#hatch-{})" stroke="{}" stroke-width="1.5"><title>#{} {} offsets {}: {}</title></rect>)~",
          FindingId(pi, fi), std::min(x1, kX0 + kPlotWidth - 3), row_y[a] - 3, std::max(3.0, x2 - x1), kBar + 6,
          divergence ? "divergence" : "lag", divergence ? kDivergenceColor : kLagColor, fi + 1, FindingKindName(f.kind),
          OffsetsOf(f), Esc(f.evidence));
    }
  }
  // The offset axis, then the batches' timestamps at some of its ticks.
  const double axis = y;
  std::string axes = fmt::format(R"(<line x1="{:.0f}" x2="{:.0f}" y1="{:.1f}" y2="{:.1f}" stroke="#999"/>)", kX0,
                                 kX0 + kPlotWidth, axis, axis);
  axes += fmt::format(R"(<text class="caption" x="4" y="{:.1f}">offset</text>)", axis + 14);
  const std::vector<int64_t> ticks = OffsetTicks(sc);
  for (int64_t t : ticks) {
    const double x = sc.X(t);
    axes += fmt::format(
        R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1:.0f}" y2="{2:.1f}" stroke="#e3e3e3"/><line x1="{0:.1f}" x2="{0:.1f}" y1="{2:.1f}" y2="{3:.1f}" stroke="#999"/><text class="tick" x="{0:.1f}" y="{4:.1f}">{5}</text>)",
        x, kTop - 4, axis, axis + 4, axis + 14, t);
  }
  double height = axis + 22;
  if (!sc.empty) {
    std::string times;
    double last_right = 70;  // right of the caption
    for (size_t k = 0; k < ticks.size(); ++k) {
      const int64_t next = k + 1 < ticks.size() ? ticks[k + 1] : sc.hi;
      std::optional<std::pair<int64_t, int64_t>> at = TimestampNear(replicas, ticks[k], std::max(next, ticks[k] + 1));
      if (!at) continue;
      const std::string when = Iso(at->second);
      if (when == "-") continue;
      const double w = TextWidth(when, kSmallFont);
      const double x = sc.X(ticks[k]);
      const double left = std::clamp(x - w / 2, 72.0, kSvgWidth - 2 - w);
      if (left < last_right + 12) continue;
      last_right = left + w;
      times += fmt::format(
          R"(<text class="ttick" x="{:.1f}" y="{:.1f}">{}<title>offset {}: timestamp {} ms of the first record at or after offset {}</title></text>)",
          left, axis + 30, when, at->first, at->second, ticks[k]);
    }
    if (!times.empty()) {
      axes += fmt::format(R"(<text class="caption" x="4" y="{:.1f}">time (UTC)</text>)", axis + 30) + times;
      height = axis + 38;
    }
  }
  return fmt::format(
             R"(<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" role="img">)",
             kSvgWidth, height, kSvgWidth, height) +
         axes + rows + bands + marks + labels + "</svg>";
}

// ---------------------------------------------------------------------------------------------
// Tables

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one HTML row per report fact, each written only when present
std::string HtmlFacts(const std::vector<ReplicaState>& replicas, const Finding& f) {
  std::string s;
  if (!f.facts.empty()) {
    s += "<ul class=\"facts\">";
    for (const TxnFact& x : f.facts) {
      const std::string who = x.replica == kCoordinatorWitness ? "coordinator"
                              : x.replica < replicas.size()    ? replicas[x.replica].label
                                                               : "?";
      std::string where;
      if (!x.file.empty()) {
        where = fmt::format(" <code>{}{}</code>", Esc(std::filesystem::path(x.file).filename().string()),
                            x.position >= 0 ? fmt::format(" @{}", x.position) : "");
      }
      s += fmt::format("<li>{}: {}{}</li>", Esc(who), Esc(x.fact), where);
    }
    s += "</ul>";
  }
  if (!f.records_at_stake.empty()) {
    std::string list;
    for (size_t i = 0; i < f.records_at_stake.size(); ++i)
      list += (i ? ", " : "") + std::to_string(f.records_at_stake[i]);
    if (f.records_at_stake.size() <= 24) {
      s += fmt::format(R"(<div class="at-stake">records at stake: {}</div>)", list);
    } else {
      s += fmt::format(
          R"(<details class="at-stake"><summary>records at stake: {} (offsets {}..{})</summary>{}</details>)",
          f.records_at_stake.size(), f.records_at_stake.front(), f.records_at_stake.back(), list);
    }
  }
  if (!f.settle_with.empty()) s += fmt::format(R"(<div class="settle">settle with: {}</div>)", Esc(f.settle_with));
  return s;
}

std::string ReplicaTable(const std::vector<ReplicaState>& replicas) {
  std::string s =
      "<table class=\"replicas\"><tr><th>replica</th><th>broker</th><th>path</th><th>log start</th><th>log end</th>"
      "<th>HW</th><th>LSO</th><th>cleaner checkpoint</th><th>read_committed records</th><th>open transactions</th>"
      "<th>problems while loading</th></tr>";
  for (const ReplicaState& r : replicas) {
    std::vector<std::string> open;
    for (const OpenTxn& t : r.open_txns) {
      open.push_back(fmt::format("producer {} epoch {} from {}", t.producer_id, t.producer_epoch, t.first_offset));
    }
    const size_t errors =
        std::count_if(r.notes.begin(), r.notes.end(), [](const Problem& p) { return p.severity == Severity::kError; });
    const std::optional<int32_t>& broker = r.node_id;  // the log dir's meta.properties, read by the load
    s += fmt::format(
        "<tr><td class=\"nowrap\">{}</td><td>{}</td><td><code class=\"path\">{}</code></td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        Esc(r.label), broker ? std::to_string(*broker) : "", EscPath(r.path), r.log_start_offset, r.log_end_offset,
        r.high_watermark, r.last_stable_offset, IntOrNone(r.cleaner_checkpoint), r.ReadCommittedCount(),
        open.empty() ? "none" : Esc(fmt::format("{}", fmt::join(open, "; "))),
        errors ? fmt::format("{} (run <code>klf verify</code>)", errors) : "none");
  }
  return s + "</table>";
}

// A finding's incident window and prevention settings (diff/incident.h), under its evidence.
std::string IncidentHtml(const Finding& f) {
  if (!f.incident) return "";
  std::string s = R"(<div class="incident"><b>incident window:</b><ul>)";
  for (const IncidentWindow& w : f.incident->windows) s += "<li>" + Esc(w.sentence) + "</li>";
  if (f.incident->prevention.empty()) return s + "</ul></div>";
  s += "</ul><b>prevention:</b><ul>";
  for (const IncidentPrevention& p : f.incident->prevention) s += "<li>" + Esc(p.sentence) + "</li>";
  return s + "</ul></div>";
}

std::string FindingsTable(const HtmlPartition& p, size_t pi, BytesFormat format) {
  const DiffReport& report = *p.report;
  const std::vector<ReplicaState>& replicas = *p.replicas;
  if (report.findings.empty()) {
    return R"(<p class="ok">No findings: every replica serves consumers the same latest value of every key (counts may differ where one replica has compacted further).</p>)";
  }
  std::string s =
      fmt::format("<table class=\"findings\" id=\"findings-p{}\">", pi) +
      "<tr><th>#</th><th>kind</th><th>certainty</th><th>offsets</th><th>key</th>"
      "<th>producer</th><th>affected</th><th>healthy</th><th>outcome</th><th>evidence</th><th>impact</th></tr>";
  for (size_t fi = 0; fi < report.findings.size(); ++fi) {
    const Finding& f = report.findings[fi];
    std::vector<std::string> a, h;
    for (size_t i : f.affected) a.push_back(Esc(replicas[i].label));
    for (size_t i : f.healthy) h.push_back(Esc(replicas[i].label));
    const std::string key = KeyText(f, format);
    const std::string id = FindingId(pi, fi);
    s += fmt::format(
        R"(<tr class="finding {}" data-finding="{}" id="finding-{}" data-partition="{}" data-kind="{}" data-offsets="{}"><td>{}</td><td class="kind">{}</td><td class="certainty">{}</td><td class="nowrap">{}</td><td><code class="key" title="{}">{}</code></td><td class="nowrap">{}</td><td>{}</td><td>{}</td><td class="outcome">{}</td><td>{}{}</td><td>{}</td></tr>)",
        IsDivergence(f.kind) ? "divergence" : "lag", id, id, Esc(p.name), FindingKindName(f.kind), OffsetsOf(f), fi + 1,
        FindingKindName(f.kind), FindingCertaintyName(f.certainty), OffsetsOf(f), Esc(key),
        Esc(Shorten(key, 40, false)),
        f.producer_id ? fmt::format("{} (epoch {})", *f.producer_id, f.producer_epoch.value_or(-1)) : "",
        fmt::join(a, ", "), fmt::join(h, ", "), f.outcome ? TxnOutcomeName(*f.outcome) : "", Esc(f.evidence),
        HtmlFacts(replicas, f) + IncidentHtml(f), Esc(f.impact));
  }
  return s + "</table>";
}

struct Range {
  int64_t lo = 0, hi = 0;
};
Range OffsetRange(const std::vector<ReplicaState>& replicas) {
  Range r{INT64_MAX, INT64_MIN};
  for (const ReplicaState& x : replicas) {
    r.lo = std::min(r.lo, x.log_start_offset);
    r.hi = std::max(r.hi, x.log_end_offset);
  }
  if (replicas.empty()) r = {0, 0};
  return r;
}

std::string FindingsSummary(const DiffReport& report) {
  size_t divergences = 0, lag = 0;
  for (const Finding& f : report.findings) (IsDivergence(f.kind) ? divergences : lag)++;
  if (report.findings.empty()) return "no findings";
  std::vector<std::string> parts;
  if (divergences) parts.push_back(fmt::format("{} divergence{}", divergences, divergences == 1 ? "" : "s"));
  if (lag) parts.push_back(fmt::format("{} lag/retention finding{}", lag, lag == 1 ? "" : "s"));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// A partition's section without its wrapper (which depends on the page: open or collapsed), and what the
// overview needs of its replicas: drawn while the replicas are loaded.
HtmlPartitionDrawn Draw(const HtmlPartition& p, size_t pi, BytesFormat format) {
  const std::vector<ReplicaState>& replicas = *p.replicas;
  const Range range = OffsetRange(replicas);
  HtmlPartitionDrawn d;
  d.name = p.name;
  d.report = *p.report;
  d.replica_count = replicas.size();
  for (const ReplicaState& r : replicas) d.labels.push_back(r.label);
  d.offset_lo = range.lo;
  d.offset_hi = range.hi;
  Scale sc;
  sc.lo = range.lo;
  sc.hi = range.hi;
  if (sc.hi <= sc.lo) sc.empty = true, sc.hi = JavaAdd(sc.lo, 1);
  int64_t first_ts = -1, last_ts = -1;
  bool any_lso = false, any_hw = false;
  for (const ReplicaState& r : replicas) {
    for (const RecordDigest& rd : r.records) {
      if (rd.timestamp >= 0 && (first_ts < 0 || rd.timestamp < first_ts)) first_ts = rd.timestamp;
    }
    last_ts = std::max(last_ts, r.max_timestamp);
    any_hw |= r.high_watermark < r.log_end_offset;
    any_lso |= LsoPinned(r);
  }
  d.summary = fmt::format("{} replicas · offsets {}", replicas.size(),
                          sc.empty ? fmt::format("none (log start = log end = {})", range.lo)
                                   : fmt::format("{}..{}", range.lo, range.hi - 1));
  if (first_ts >= 0 && last_ts >= 0)
    d.summary += fmt::format(" · batch timestamps {} to {}", Iso(first_ts), Iso(last_ts));
  d.summary += " · " + FindingsSummary(*p.report);
  d.body = Timeline(replicas, *p.report, pi, sc, format) + Legend(any_lso, any_hw) + "<h3>Replicas</h3>" +
           ReplicaTable(replicas) + "<h3>Findings</h3>" + FindingsTable(p, pi, format);
  return d;
}

std::string PartitionSection(const HtmlPartitionDrawn& d, size_t pi, bool collapsed) {
  if (collapsed) {
    return fmt::format(
        R"(<details class="partition" id="partition-{}"><summary><span class="pname">{}</span> <span class="summary">{}</span></summary>{}</details>)",
        pi, Esc(d.name), d.summary, d.body);
  }
  return fmt::format(R"(<section class="partition" id="partition-{}"><h2>{}</h2><p class="summary">{}</p>{}</section>)",
                     pi, Esc(d.name), d.summary, d.body);
}

// ---------------------------------------------------------------------------------------------
// The overview

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the HTML overview: one section per finding kind; a printer
std::string Overview(const std::vector<HtmlPartitionDrawn>& partitions, const std::vector<size_t>& order,
                     const HtmlReportInfo& info) {
  size_t divergences = 0, lag = 0, with_findings = 0;
  // kind -> {certain, suspected, partitions}
  struct Count {
    size_t certain = 0, suspected = 0;
    std::vector<size_t> partitions;
  };
  std::map<std::string, Count> by_kind;
  std::set<std::string> labels;
  size_t min_replicas = SIZE_MAX, max_replicas = 0;
  for (size_t pi = 0; pi < partitions.size(); ++pi) {
    const HtmlPartitionDrawn& p = partitions[pi];
    if (!p.report.findings.empty()) ++with_findings;
    min_replicas = std::min(min_replicas, p.replica_count);
    max_replicas = std::max(max_replicas, p.replica_count);
    labels.insert(p.labels.begin(), p.labels.end());
    for (const Finding& f : p.report.findings) {
      (IsDivergence(f.kind) ? divergences : lag)++;
      Count& c = by_kind[FindingKindName(f.kind)];
      (f.certainty == FindingCertainty::kCertain ? c.certain : c.suspected)++;
      if (c.partitions.empty() || c.partitions.back() != pi) c.partitions.push_back(pi);
    }
  }
  std::string s;
  if (divergences) {
    s += fmt::format(
        R"(<p class="verdict divergence">Divergence: {} finding{} that consumers of different replicas see differently, in {} of {} partition{}.</p>)",
        divergences, divergences == 1 ? "" : "s", with_findings, partitions.size(), partitions.size() == 1 ? "" : "s");
  } else if (lag) {
    s += fmt::format(
        R"(<p class="verdict lag">No divergence: {} lag/retention finding{} (missing_range) in {} of {} partition{}.</p>)",
        lag, lag == 1 ? "" : "s", with_findings, partitions.size(), partitions.size() == 1 ? "" : "s");
  } else {
    s += fmt::format(R"(<p class="verdict ok">No findings in {} partition{}: the replicas agree.</p>)",
                     partitions.size(), partitions.size() == 1 ? "" : "s");
  }
  s += HtmlOverviewHead(info);
  for (const auto& [what, dirs] : info.other_inputs) {
    std::string list;
    for (const std::string& d : dirs) list += fmt::format("<li><code class=\"path\">{}</code></li>", EscPath(d));
    s += dirs.size() <= 4 ? fmt::format("<tr><th>{}</th><td><ul class=\"inputs\">{}</ul></td></tr>", Esc(what), list)
                          : fmt::format(
                                "<tr><th>{}</th><td><details><summary>{} directories</summary><ul "
                                "class=\"inputs\">{}</ul></details></td></tr>",
                                Esc(what), dirs.size(), list);
  }
  s += fmt::format("<tr><th>partitions compared</th><td>{} ({} with findings{})</td></tr>", partitions.size(),
                   with_findings,
                   info.unreadable.empty() ? "" : fmt::format("; {} could not be read", info.unreadable.size()));
  std::vector<std::string> names;
  for (const std::string& l : labels) names.push_back(Esc(l));
  s += fmt::format(
      "<tr><th>replicas</th><td>{} per partition: {}</td></tr>",
      min_replicas == max_replicas ? std::to_string(max_replicas) : fmt::format("{} to {}", min_replicas, max_replicas),
      fmt::join(names, ", "));
  s += fmt::format("<tr><th>exit code</th><td>{} ({})</td></tr>", info.exit_code,
                   info.exit_code == 0   ? "no divergence"
                   : info.exit_code == 1 ? "divergence or damage found"
                   : info.exit_code == 3 ? "a replica could not be read"
                                         : "usage error");
  s += "</table>";
  for (const std::string& e : info.unreadable)
    s += fmt::format(R"(<p class="unreadable">could not be read: {}</p>)", Esc(e));

  // Findings by kind and certainty.
  s += "<h2>Findings by kind</h2>";
  if (by_kind.empty()) {
    s += R"(<p class="ok">None.</p>)";
  } else {
    s +=
        R"(<table class="by-kind"><tr><th>kind</th><th>divergence</th><th>certain</th><th>suspected</th><th>total</th><th>partitions</th></tr>)";
    size_t certain = 0, suspected = 0;
    for (const auto& [kind, c] : by_kind) {
      std::vector<std::string> links, more;
      for (size_t pi : c.partitions) {
        (links.size() < 8 ? links : more)
            .push_back(fmt::format(R"(<a href="#partition-{}">{}</a>)", pi, Esc(partitions[pi].name)));
      }
      if (!more.empty()) {
        links.push_back(
            fmt::format("<details><summary>and {} more</summary>{}</details>", more.size(), fmt::join(more, ", ")));
      }
      const bool divergence = kind != "missing_range";
      s += fmt::format(
          R"(<tr class="{}"><td class="kind">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>)",
          divergence ? "divergence" : "lag", kind, divergence ? "yes" : "no (lag)", c.certain, c.suspected,
          c.certain + c.suspected, fmt::join(links, ", "));
      certain += c.certain;
      suspected += c.suspected;
    }
    s += fmt::format("<tr class=\"total\"><td>all</td><td></td><td>{}</td><td>{}</td><td>{}</td><td></td></tr></table>",
                     certain, suspected, certain + suspected);
  }

  // Every partition, those with findings first.
  s += "<h2>Partitions</h2><table class=\"partitions\"><tr><th>partition</th><th>replicas</th><th>offsets</th>"
       "<th>findings</th></tr>";
  for (size_t pi : order) {
    const HtmlPartitionDrawn& p = partitions[pi];
    const Range range{p.offset_lo, p.offset_hi};
    std::vector<std::string> links;
    for (size_t fi = 0; fi < p.report.findings.size(); ++fi) {
      const Finding& f = p.report.findings[fi];
      links.push_back(fmt::format(R"(<a class="nowrap {}" href="#finding-{}">#{} {}</a>)",
                                  IsDivergence(f.kind) ? "divergence" : "lag", FindingId(pi, fi), fi + 1,
                                  FindingKindName(f.kind)));
    }
    s += fmt::format(
        R"(<tr><td><a href="#partition-{}">{}</a></td><td>{}</td><td class="nowrap">{}</td><td>{}</td></tr>)", pi,
        Esc(p.name), p.replica_count,
        range.hi > range.lo ? fmt::format("{}..{}", range.lo, range.hi - 1) : fmt::format("empty (at {})", range.lo),
        links.empty() ? "none" : fmt::format("{}", fmt::join(links, " ")));
  }
  return s + "</table>";
}

constexpr const char* kStyle = R"(<style>
body{font:14px/1.4 system-ui,sans-serif;margin:20px;color:#222}
h1{font-size:21px;margin-bottom:6px}h2{font-size:17px;margin-top:26px}h3{font-size:15px;margin:14px 0 4px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}
table.overview th{background:#f6f6f6;white-space:nowrap}
ul.inputs{margin:0;padding-left:18px}
.nw{white-space:nowrap}
code.key,.nowrap{white-space:nowrap}
.verdict{font-weight:bold;padding:6px 10px;border-left:5px solid}
.verdict.divergence{border-color:#1d4ed8;background:#eef2ff}.verdict.lag{border-color:#6b7280;background:#f3f4f6}
.verdict.ok{border-color:#2d7a2d;background:#eefaee}.unreadable{color:#b52b27}
tr.divergence td.kind,a.divergence{color:#1d4ed8;font-weight:bold}tr.lag td.kind,a.lag{color:#6b7280}
tr.finding.hl{background:#fff3cd}.finding-band.hl{stroke-width:3}.flabel.hl{text-decoration:underline}
svg.timeline{display:block;margin:6px 0}
svg.timeline text{font-family:"DejaVu Sans Mono",monospace;font-size:10px;fill:#444}
svg.timeline text.rlabel{font-size:12px;font-weight:bold;fill:#222}
svg.timeline text.tick{text-anchor:middle}
svg.timeline text.flabel.divergence{fill:#1d4ed8}svg.timeline text.lso{fill:#c026d3}svg.timeline text.flabel.lag{fill:#6b7280}
.legend{font-size:12px;color:#333}.legend .key{display:inline-block;margin-right:14px;white-space:nowrap}
.legend svg{vertical-align:middle;margin-right:4px}
details.partition{margin:6px 0}details.partition>summary{cursor:pointer;font-weight:bold}
details.partition .summary{font-weight:normal;color:#555}p.summary{color:#555;margin:0 0 4px}
.ok{color:#2d7a2d;font-weight:bold}
</style>)";

constexpr const char* kScript = R"(<script>
document.querySelectorAll('[data-finding]').forEach(function(el){
  function set(on){document.querySelectorAll('[data-finding="'+el.dataset.finding+'"]').forEach(function(x){x.classList.toggle('hl',on);});}
  el.addEventListener('mouseenter',function(){set(true);});el.addEventListener('mouseleave',function(){set(false);});
});
</script>)";

}  // namespace

std::string DiffHtmlPage(const std::vector<HtmlPartitionDrawn>& partitions, const HtmlReportInfo& info,
                         const std::string& marker) {
  // Partitions with divergences first, then lag, then the healthy ones (collapsed when there are many).
  std::vector<size_t> order(partitions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rank = [&](size_t i) {
    const DiffReport& r = partitions[i].report;
    return r.HasDivergence() ? 0 : r.findings.empty() ? 2 : 1;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rank(a) < rank(b); });
  std::string body = "<h1>klf diff: replica comparison report</h1>" + Overview(partitions, order, info);
  const bool collapse_healthy = partitions.size() > 3;
  std::string healthy_sections;
  size_t healthy = 0;
  for (size_t pi : order) {
    const bool none = partitions[pi].report.findings.empty();
    if (none && collapse_healthy) {
      ++healthy;
      healthy_sections += PartitionSection(partitions[pi], pi, true);
    } else {
      body += PartitionSection(partitions[pi], pi, false);
    }
  }
  if (healthy > 0) {
    body +=
        fmt::format(
            R"(<h2>Partitions without findings ({})</h2><p class="summary">Collapsed: open one to see its timeline.</p>)",
            healthy) +
        healthy_sections;
  }
  // The tab (and a saved file's) title: what was compared and the verdict.
  size_t divergences = 0;
  for (const HtmlPartitionDrawn& p : partitions) {
    divergences += std::count_if(p.report.findings.begin(), p.report.findings.end(),
                                 [](const Finding& f) { return IsDivergence(f.kind); });
  }
  const std::string title = fmt::format(
      "klf diff: {}, {}",
      partitions.size() == 1 ? partitions.front().name : fmt::format("{} partitions", partitions.size()),
      divergences ? fmt::format("{} divergence{}", divergences, divergences == 1 ? "" : "s") : "no divergence");
  return HtmlPageShell(title, info.version, body, marker);
}

std::string HtmlPageShell(const std::string& title, const std::string& version, const std::string& body,
                          const std::string& marker, const std::string& extra_style) {
  return "<!DOCTYPE html>\n" + marker +
         R"(<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="klf )" + Esc(version) +
         R"("><title>)" + Esc(title) + "</title>" + kStyle + extra_style + "</head><body>\n" + kPatternDefs + body +
         kScript + "</body></html>\n";
}

std::string DiffHtmlPage(const std::vector<HtmlPartition>& partitions, const HtmlReportInfo& info,
                         const std::string& marker) {
  std::vector<HtmlPartitionDrawn> drawn;
  for (size_t pi = 0; pi < partitions.size(); ++pi) drawn.push_back(Draw(partitions[pi], pi, info.format));
  return DiffHtmlPage(drawn, info, marker);
}

HtmlPartitionDrawn DrawHtmlPartition(const HtmlPartition& partition, size_t pi, BytesFormat format) {
  return Draw(partition, pi, format);
}

std::string DiffHtmlPartitionSection(const HtmlPartition& partition, size_t pi, BytesFormat format) {
  return PartitionSection(Draw(partition, pi, format), pi, false);
}

std::string HtmlEscape(std::string_view raw) { return Esc(raw); }

std::string HtmlOverviewHead(const HtmlReportInfo& info) {
  std::vector<std::string> args;
  for (const std::string& a : info.argv) args.push_back(EscPath(ShellQuote(a)));
  std::string inputs;
  for (const std::string& in : info.inputs)
    inputs += fmt::format("<li><code class=\"path\">{}</code></li>", EscPath(in));
  return fmt::format(
      "<table class=\"overview\"><tr><th>generated</th><td><time>{}</time></td></tr><tr><th>klf version</th><td>{}"
      "</td></tr><tr><th>command line</th><td><code class=\"cmdline\">{}</code></td></tr><tr><th>inputs</th><td><ul "
      "class=\"inputs\">{}</ul></td></tr>",
      Iso(info.generated_ms), Esc(info.version), fmt::join(args, " "), inputs);
}

HtmlReportInfo HtmlReportInfoNow(std::vector<std::string> inputs, int exit_code) {
  HtmlReportInfo info;
  info.version = CurrentInvocation().version;
  info.argv = CurrentInvocation().argv;
  info.generated_ms = WallClockMs();
  info.inputs = std::move(inputs);
  info.exit_code = exit_code;
  return info;
}

}  // namespace klf::cli
