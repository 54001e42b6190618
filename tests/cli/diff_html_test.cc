// The `klf diff --html` page (cli/diff_html.h) on made-up replicas: what real fixtures do not reach
// (hundreds of findings on one replica, offsets near 10^15, hostile labels, an empty partition).
// The rendering itself is checked in headless Chromium by tests/e2e/diff_html_test.py.
#include "cli/diff_html.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <regex>
#include <string>
#include <vector>

namespace klf::cli {
namespace {

const std::string kMarker = "<!-- klf-output 1: test -->\n";

ReplicaState Replica(const std::string& label, int64_t start, int64_t end) {
  ReplicaState r;
  r.path = "/data/" + label + "/foo-0";
  r.label = label;
  r.log_start_offset = start;
  r.log_end_offset = end;
  r.high_watermark = end;
  r.last_stable_offset = end;
  return r;
}

Finding Tombstone(int64_t offset, const std::string& key) {
  Finding f;
  f.kind = FindingKind::kLostTombstone;
  f.has_key = true;
  f.key = key;
  f.first_offset = f.last_offset = offset;
  f.affected = {1};
  f.healthy = {0};
  f.evidence = "made up";
  f.impact = "made up";
  return f;
}

HtmlReportInfo Info() {
  HtmlReportInfo info;
  info.version = "9.9.9";
  info.argv = {"klf", "diff", "--html", "r.html", "/data/a", "/data/b c"};
  info.generated_ms = 1700000000000;
  info.inputs = {"/data/a", "/data/b c"};
  return info;
}

std::vector<int64_t> Ticks(const std::string& page) {
  std::vector<int64_t> ticks;
  static const std::regex tick(R"re(class="tick" x="[^"]*" y="[^"]*">(\d+)<)re");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), tick); it != std::sregex_iterator(); ++it) {
    ticks.push_back(std::stoll((*it)[1].str()));
  }
  return ticks;
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(DiffHtml, OverviewFirstWithVersionCommandLineAndTime) {
  std::vector<ReplicaState> replicas = {Replica("broker1", 0, 100), Replica("broker2", 0, 100)};
  DiffReport report;
  report.findings = {Tombstone(40, "k")};
  const std::string page = DiffHtmlPage({{"foo-0", &replicas, &report}}, Info(), kMarker);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>\n" + kMarker, 0), 0u);
  EXPECT_NE(page.find("<time>2023-11-14T22:13:20Z</time>"), std::string::npos);
  EXPECT_NE(page.find("9.9.9"), std::string::npos);
  const std::string text = std::regex_replace(page, std::regex("<[^>]*>"), "");
  EXPECT_NE(text.find("klf diff --html r.html /data/a '/data/b c'"), std::string::npos);  // shell-quoted
  EXPECT_LT(page.find("Findings by kind"), page.find("<svg class=\"timeline\""));
  EXPECT_EQ(Ticks(page), (std::vector<int64_t>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));
}

TEST(DiffHtml, HundredsOfFindingsOnOneReplicaStayInBoundedLanes) {
  std::vector<ReplicaState> replicas = {Replica("broker1", 0, 100000), Replica("broker2", 0, 100000)};
  DiffReport report;
  for (int i = 0; i < 300; ++i) report.findings.push_back(Tombstone(i * 7, "key-" + std::to_string(i)));
  const std::string page = DiffHtmlPage({{"foo-0", &replicas, &report}}, Info(), kMarker);
  EXPECT_EQ(Count(page, "<tr class=\"finding divergence\""), 300u);  // the table lists them all
  const size_t labels = Count(page, "class=\"flabel");
  EXPECT_GT(labels, 0u);
  EXPECT_LT(labels, 300u);
  EXPECT_NE(page.find(">+" + std::to_string(300 - labels) + " more findings on this replica"), std::string::npos);
}

TEST(DiffHtml, OffsetsNearTenToTheFifteenGetRoundTicks) {
  const int64_t base = 1000000000000000;
  std::vector<ReplicaState> replicas = {Replica("a", base + 3, base + 12345), Replica("b", base + 17, base + 12000)};
  DiffReport report;
  const std::string page = DiffHtmlPage({{"foo-0", &replicas, &report}}, Info(), kMarker);
  std::vector<int64_t> ticks = Ticks(page);
  ASSERT_GE(ticks.size(), 2u);
  const int64_t step = ticks[1] - ticks[0];
  EXPECT_TRUE(step == 1000 || step == 2000 || step == 5000) << step;
  for (size_t i = 1; i < ticks.size(); ++i) EXPECT_EQ(ticks[i] - ticks[i - 1], step);
  for (int64_t t : ticks) {
    EXPECT_EQ(t % step, 0);
    EXPECT_GE(t, base + 3);
    EXPECT_LE(t, base + 12345);
  }
}

TEST(DiffHtml, HostileLabelsAndKeysAreEscapedAndShortened) {
  std::vector<ReplicaState> replicas = {Replica("<script>alert(1)</script>", 0, 10), Replica("b\xff", 0, 10)};
  DiffReport report;
  report.findings = {Tombstone(3, "</text><script>x()</script>" + std::string(100, 'k'))};
  const std::string page = DiffHtmlPage({{"foo-0", &replicas, &report}}, Info(), kMarker);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_EQ(page.find("<script>x()"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("b\\xff"), std::string::npos);  // invalid UTF-8 shown as the text output shows it
  EXPECT_EQ(page.find(std::string(40, 'k') + "<"), std::string::npos);  // the label and the cell shorten the key
}

TEST(DiffHtml, AnEmptyPartitionIsDrawnAsSuch) {
  std::vector<ReplicaState> replicas = {Replica("a", 7, 7), Replica("b", 7, 7)};
  DiffReport report;
  const std::string page = DiffHtmlPage({{"foo-0", &replicas, &report}}, Info(), kMarker);
  EXPECT_EQ(page.find("NaN"), std::string::npos);
  static const std::regex rect_width(R"re(<rect[^>]* width="([-0-9.]+)")re");
  size_t rects = 0;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), rect_width); it != std::sregex_iterator();
       ++it, ++rects) {
    EXPECT_GT(std::stod((*it)[1].str()), 0) << (*it)[0].str();
  }
  EXPECT_GT(rects, 0u);
  EXPECT_EQ(Count(page, "empty: log start = log end = 7"), 2u);
  EXPECT_EQ(Ticks(page), std::vector<int64_t>{7});
}

}  // namespace
}  // namespace klf::cli
