// Every .log segment and KRaft .checkpoint snapshot copied from real brokers (fixtures/real, see its
// PROVENANCE.md) decodes completely, every batch and every record, with no error-severity problem; and
// per source our totals equal those of the independent walker recorded in PROVENANCE.md.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "segment_reader/batch.h"
#include "segment_reader/file.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string RealDir() { return std::string(KLF_FIXTURES_DIR) + "/real"; }

struct Totals {
  int64_t logs = 0, log_bytes = 0, batches = 0, records = 0, txn = 0, ctl = 0, commit = 0, abort = 0, tomb = 0,
          idem = 0, hdr = 0, crc_err = 0;
  std::map<std::string, int64_t> magic, codec, ts_type;
};

std::string Render(const std::map<std::string, int64_t>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ",") + k + ":" + std::to_string(v);
  return s;
}

// "lz4:3881,none:5" -> sorted map rendering, so the order of the walker's list does not matter.
std::string Normalize(const std::string& s) {
  std::map<std::string, int64_t> m;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto colon = item.rfind(':');
    m[item.substr(0, colon)] = std::stoll(item.substr(colon + 1));
  }
  return Render(m);
}

bool IsDataFile(const fs::path& p) { return p.extension() == ".log" || p.extension() == ".checkpoint"; }

void DecodeFile(const fs::path& path, Totals* t) {
  std::string error;
  auto file = MappedFile::Open(path.string(), &error);
  ASSERT_TRUE(file) << error;
  t->logs++;
  t->log_bytes += int64_t(file->size());
  CollectingSink sink;
  LogReader reader(path.string(), file->data(), &sink);
  RecordDecoder decoder;
  BatchView view;
  while (reader.Next(&view)) {
    EXPECT_TRUE(decoder.Decode(view, path.string(), &sink));
    const BatchHeader& h = decoder.header();
    t->batches++;
    t->magic[std::to_string(h.magic)]++;
    t->codec[CompressionName(h.compression)]++;
    if (h.timestamp_type != TimestampType::kNoTimestampType) t->ts_type[TimestampTypeName(h.timestamp_type)]++;
    if (h.is_transactional) t->txn++;
    if (h.is_control) t->ctl++;
    if (h.has_producer_id() && !h.is_transactional) t->idem++;
    if (!h.crc_valid) t->crc_err++;
    for (const Record& r : decoder.records()) {
      t->records++;
      if (!r.value) t->tomb++;
      if (r.header_count > 0) t->hdr++;
      if (h.is_control) {
        ControlRecord c;
        if (ParseControlRecord(r, &c, &error)) {
          t->commit += c.type == ControlType::kCommit;
          t->abort += c.type == ControlType::kAbort;
        }
      }
    }
  }
  EXPECT_EQ(reader.end(), LogEnd::kEndOfData) << path;
  for (const Problem& p : sink.problems) {
    if (p.severity == Severity::kError)
      ADD_FAILURE() << p.file << " @" << p.position << " " << p.check << ": " << p.message;
  }
}

// Source sections of PROVENANCE.md: "## owner/name" ... "- aggregate walker result: `{json}`".
std::map<std::string, json> WalkerResults() {
  std::ifstream in(RealDir() + "/PROVENANCE.md");
  std::map<std::string, json> out;
  std::string line, source;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) source = line.substr(3);
    auto at = line.find("aggregate walker result: `");
    if (at != std::string::npos && !source.empty()) {
      std::string js = line.substr(at + 26);
      js = js.substr(0, js.rfind('`'));
      std::string dir = source;
      dir.replace(dir.find('/'), 1, "__");
      out[dir] = json::parse(js);
    }
  }
  return out;
}

TEST(RealFixturesTest, EverySourceDecodesCleanlyAndMatchesTheWalker) {
  auto walker = WalkerResults();
  ASSERT_EQ(walker.size(), 15u);
  for (const auto& [dir, expected] : walker) {
    SCOPED_TRACE(dir);
    fs::path root = fs::path(RealDir()) / dir;
    ASSERT_TRUE(fs::is_directory(root));
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (e.is_regular_file() && IsDataFile(e.path())) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    Totals t;
    for (const auto& f : files) DecodeFile(f, &t);
    EXPECT_EQ(t.logs, expected["logs"].get<int64_t>());
    EXPECT_EQ(t.log_bytes, expected["log_bytes"].get<int64_t>());
    EXPECT_EQ(t.batches, expected["batches"].get<int64_t>());
    EXPECT_EQ(t.records, expected["records"].get<int64_t>());
    EXPECT_EQ(Render(t.magic), Normalize(expected["magic"]));
    EXPECT_EQ(Render(t.codec), Normalize(expected["codec"]));
    EXPECT_EQ(Render(t.ts_type), Normalize(expected["ts_type"]));
    EXPECT_EQ(t.txn, expected["txn"].get<int64_t>());
    EXPECT_EQ(t.ctl, expected["ctl"].get<int64_t>());
    EXPECT_EQ(t.commit, expected["commit"].get<int64_t>());
    EXPECT_EQ(t.abort, expected["abort"].get<int64_t>());
    EXPECT_EQ(t.tomb, expected["tomb"].get<int64_t>());
    EXPECT_EQ(t.idem, expected["idem"].get<int64_t>());
    EXPECT_EQ(t.hdr, expected["hdr"].get<int64_t>());
    EXPECT_EQ(t.crc_err, 0);
    EXPECT_EQ(expected["crc_err"].get<int64_t>(), 0);
  }
}

}  // namespace
}  // namespace klf
