// LogReader::Open (pread(2) through a reused buffer, falling back to a mapping when the data turns
// irregular) must be indistinguishable from LogReader over the whole mapped file: the same entries
// with the same bytes, the same problems (severity, position, check, message), the same end and valid
// length. Checked on every .log of the fixtures (bytes klf did not write) and on damaged copies of
// some of them, with buffers far smaller than an entry (growth), of a few entries (refills that
// split entries) and the default.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/file.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

struct Walk {
  std::vector<std::string> entries;  // position, crc_valid and the entry's bytes
  std::vector<std::string> problems;
  LogEnd end = LogEnd::kEndOfData;
  uint64_t valid_bytes = 0;
  uint64_t trailing_bytes = 0;
};

std::string Describe(const BatchView& b) {
  return std::to_string(b.header.position) + (b.header.crc_valid ? " ok " : " bad-crc ") +
         std::string(reinterpret_cast<const char*>(b.bytes.data()), b.bytes.size());
}

void Collect(LogReader* reader, const CollectingSink& sink, Walk* w) {
  BatchView b;
  while (reader->Next(&b)) w->entries.push_back(Describe(b));
  for (const Problem& p : sink.problems) {
    w->problems.push_back(std::string(SeverityName(p.severity)) + " " + p.file + "@" + std::to_string(p.position) +
                          " " + p.check + ": " + p.message);
  }
  w->end = reader->end();
  w->valid_bytes = reader->valid_bytes();
  w->trailing_bytes = reader->trailing_bytes();
}

Walk Mapped(const std::string& path) {
  Walk w;
  std::string error;
  auto file = MappedFile::Open(path, &error);
  EXPECT_TRUE(file) << error;
  if (!file) return w;
  CollectingSink sink;
  LogReader reader(path, file->data(), &sink);
  Collect(&reader, sink, &w);
  return w;
}

Walk Streamed(const std::string& path, uint64_t chunk) {
  Walk w;
  std::string error;
  ReadOptions options;
  options.stream_chunk_bytes = chunk;
  CollectingSink sink;
  auto reader = LogReader::Open(path, &sink, options, &error);
  EXPECT_TRUE(reader) << error;
  if (!reader) return w;
  Collect(reader.get(), sink, &w);
  return w;
}

void ExpectSameWalks(const std::string& path) {
  const Walk want = Mapped(path);
  for (uint64_t chunk : {uint64_t(61), uint64_t(4096), ReadOptions().stream_chunk_bytes}) {
    SCOPED_TRACE(path + " chunk " + std::to_string(chunk));
    const Walk got = Streamed(path, chunk);
    ASSERT_EQ(got.entries.size(), want.entries.size());
    for (size_t i = 0; i < want.entries.size(); ++i) {
      ASSERT_EQ(got.entries[i], want.entries[i]) << "entry " << i;
    }
    EXPECT_EQ(got.problems, want.problems);
    EXPECT_EQ(int(got.end), int(want.end));
    EXPECT_EQ(got.valid_bytes, want.valid_bytes);
    EXPECT_EQ(got.trailing_bytes, want.trailing_bytes);
  }
}

std::vector<std::string> FixtureLogs() {
  std::vector<std::string> logs;
  for (const char* sub : {"kafka-oracle", "kafka-python", "real"}) {
    fs::path root = fs::path(KLF_FIXTURES_DIR) / sub;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (e.is_regular_file() && test::IsSegmentFileName(e.path().filename().string()))
        logs.push_back(e.path().string());
    }
  }
  std::sort(logs.begin(), logs.end());
  return logs;
}

TEST(StreamingReader, EveryFixtureLogReadsAsWhenMapped) {
  std::vector<std::string> logs = FixtureLogs();
  ASSERT_GT(logs.size(), 50u);
  for (const std::string& path : logs) ExpectSameWalks(path);
}

// Damage: flipped bytes (headers and payloads), truncation, a zero-filled tail, a lying length, and
// garbage between entries. Every variant walks the same in both modes, including the point where
// streaming hands over to the mapping.
TEST(StreamingReader, DamagedLogsReadAsWhenMapped) {
  std::vector<std::string> sources;
  for (const std::string& p : FixtureLogs()) {
    uint64_t size = fs::file_size(p);
    if (size > 2000 && size < (4u << 20)) sources.push_back(p);
  }
  ASSERT_GT(sources.size(), 5u);
  test::TempDir dir("streaming");
  std::mt19937_64 rng(20261202);
  int variants = 0;
  for (size_t s = 0; s < sources.size(); s += std::max<size_t>(1, sources.size() / 12)) {
    const std::string original = test::ReadAll(sources[s]);
    auto pick = [&](uint64_t n) { return uint64_t(rng() % n); };
    std::vector<std::string> damaged;
    for (int i = 0; i < 6; ++i) {  // one flipped byte, often in a header (the first 61 bytes of an entry)
      std::string d = original;
      uint64_t at = i < 3 ? pick(std::min<uint64_t>(d.size(), 61)) : pick(d.size());
      d[at] = char(d[at] ^ (1 << pick(8)));
      damaged.push_back(d);
    }
    damaged.push_back(original.substr(0, pick(original.size())));        // truncated
    damaged.push_back(original + std::string(4096 + pick(9000), '\0'));  // zero tail
    damaged.push_back(original + std::string(7, 'x'));                   // short garbage tail
    {
      std::string d = original;  // a lying length in the first entry
      d[8] = char(0x7f);
      damaged.push_back(d);
    }
    {
      std::string d = original;  // garbage inserted in the middle
      d.insert(pick(d.size()), std::string(100 + pick(300), char(0x5a)));
      damaged.push_back(d);
    }
    for (const std::string& d : damaged) {
      std::string path = dir.path() + "/v" + std::to_string(variants++) + ".log";
      test::WriteAll(path, d);
      ExpectSameWalks(path);
    }
  }
  EXPECT_GT(variants, 50);
}

// A file truncated while the reader walks its mapping (after irregular framing made it switch): the walk
// ends with a read error naming the file, and what the zeros past the new end would have looked like (a
// zero tail, bad CRCs) is not reported. Before the guard this killed klf with SIGBUS.
TEST(StreamingReader, FileShrinkingUnderTheMappingIsAReadError) {
  std::string largest;
  for (const std::string& p : FixtureLogs())
    if (largest.empty() || fs::file_size(p) > fs::file_size(largest)) largest = p;
  ASSERT_GT(fs::file_size(largest), uint64_t(256) << 10) << largest;
  test::TempDir dir("shrink");
  const std::string path = dir.path() + "/00000000000000000000.log";
  test::WriteAll(path, std::string(100, char(0x5a)) + test::ReadAll(largest));  // irregular at byte 0
  std::string error;
  CollectingSink sink;
  auto reader = LogReader::Open(path, &sink, ReadOptions(), &error);
  ASSERT_TRUE(reader) << error;
  BatchView b;
  ASSERT_TRUE(reader->Next(&b));  // found past the garbage, through the mapping
  const size_t before = sink.problems.size();
  ASSERT_GT(before, 0u);  // the garbage
  ASSERT_EQ(::truncate(path.c_str(), 8192), 0);
  while (reader->Next(&b)) {
  }
  EXPECT_NE(reader->read_error().find(path), std::string::npos) << reader->read_error();
  EXPECT_NE(reader->read_error().find("shrank while it was read"), std::string::npos) << reader->read_error();
  ASSERT_EQ(sink.problems.size(), before + 1);
  EXPECT_EQ(sink.problems.back().check, std::string("file-read"));
  EXPECT_EQ(sink.problems.back().file, path);
}

// Read in place (PlaceRead chose the mapping instead of pread), the walks are the same, and a file truncated
// under the streamed mapping (no irregular framing involved) is one read error, not a crash.
TEST(StreamingReader, InPlaceReadsWalkTheSameAndSurviveAShrink) {
  SetReadMethodForTesting(ReadMethod::kMap);
  std::vector<std::string> logs = FixtureLogs();
  for (size_t i = 0; i < logs.size(); i += 7) ExpectSameWalks(logs[i]);
  std::string largest;
  for (const std::string& p : logs)
    if (largest.empty() || fs::file_size(p) > fs::file_size(largest)) largest = p;
  test::TempDir dir("shrink-in-place");
  const std::string path = dir.path() + "/00000000000000000000.log";
  test::WriteAll(path, test::ReadAll(largest));
  std::string error;
  auto file = StreamedFile::Open(path, &error);
  ASSERT_TRUE(file) << error;
  EXPECT_NE(file->mapping(), nullptr);
  CollectingSink sink;
  auto reader = LogReader::Open(path, &sink, ReadOptions(), &error);
  ASSERT_TRUE(reader) << error;
  BatchView b;
  ASSERT_TRUE(reader->Next(&b));
  ASSERT_EQ(::truncate(path.c_str(), 8192), 0);
  while (reader->Next(&b)) {
  }
  SetReadMethodForTesting(std::nullopt);
  EXPECT_NE(reader->read_error().find("shrank while it was read"), std::string::npos) << reader->read_error();
  ASSERT_EQ(sink.problems.size(), 1u);
  EXPECT_EQ(sink.problems[0].check, std::string("file-read"));
  EXPECT_EQ(sink.problems[0].file, path);
}

// Unforced, the first large file read front to back is the trial: pread to its middle, the mapping
// after it, and the walk is the one pread alone gives (the switch falls between two fetches); its end
// decides the method. A file below the trial size is read with pread and decides nothing.
TEST(StreamingReader, ReadMethodTrialSwitchesMidFileAndDecides) {
  if (std::getenv("KLF_READ_METHOD") != nullptr) GTEST_SKIP() << "KLF_READ_METHOD forces the method";
  std::vector<std::string> logs = FixtureLogs();
  std::string largest;
  for (const std::string& p : logs)
    if (largest.empty() || fs::file_size(p) > fs::file_size(largest)) largest = p;
  const std::string one = test::ReadAll(largest);
  std::string big;
  while (big.size() < (size_t(4) << 20)) big += one;  // repeated: offsets go back, the framing is sound
  test::TempDir dir("read-trial");
  const std::string path = dir.path() + "/00000000000000000000.log";
  test::WriteAll(path, big);
  SetReadMethodForTesting(ReadMethod::kPread);
  const Walk want = Streamed(path, ReadOptions().stream_chunk_bytes);
  SetReadMethodForTesting(std::nullopt, uint64_t(8) << 20);  // 4 MiB: below the trial size
  Streamed(path, ReadOptions().stream_chunk_bytes);
  EXPECT_FALSE(DecidedReadMethod().has_value());
  SetReadMethodForTesting(std::nullopt, uint64_t(2) << 20);  // now the trial
  std::string error;
  {
    auto file = StreamedFile::Open(path, &error);
    ASSERT_TRUE(file) << error;
    ASSERT_TRUE(file->Fetch(0, 61, &error)) << error;
    EXPECT_EQ(file->mapping(), nullptr);  // pread first
    ASSERT_TRUE(file->Fetch(big.size() / 2 + 1, 1, &error)) << error;
    EXPECT_NE(file->mapping(), nullptr);  // the mapping from the middle on
  }                                       // destroyed before its end: no decision, the next file is the trial
  EXPECT_FALSE(DecidedReadMethod().has_value());
  {
    WindowReader jumpy;  // a jump to the end (as a segment summary's walk from the index's last entry)
    ASSERT_TRUE(jumpy.Open(path, big.size(), &error)) << error;
    Bytes window;
    ASSERT_TRUE(jumpy.Read(0, size_t(1) << 20, &window, &error)) << error;
    ASSERT_TRUE(jumpy.Read(big.size() - (size_t(1) << 20), size_t(1) << 20, &window, &error)) << error;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(window.data()), window.size()),
              big.substr(big.size() - (size_t(1) << 20)));
  }
  EXPECT_FALSE(DecidedReadMethod().has_value());  // read to the end, but not front to back
  const Walk got = Streamed(path, ReadOptions().stream_chunk_bytes);
  EXPECT_TRUE(DecidedReadMethod().has_value());
  SetReadMethodForTesting(std::nullopt);
  ASSERT_EQ(got.entries.size(), want.entries.size());
  for (size_t i = 0; i < want.entries.size(); ++i) ASSERT_EQ(got.entries[i], want.entries[i]) << "entry " << i;
  EXPECT_EQ(got.problems, want.problems);
  EXPECT_EQ(int(got.end), int(want.end));
  EXPECT_EQ(got.valid_bytes, want.valid_bytes);
}

TEST(StreamingReader, OpenErrorsNameThePath) {
  std::string error;
  CollectingSink sink;
  EXPECT_EQ(LogReader::Open("/nonexistent/klf/00000000000000000000.log", &sink, {}, &error), nullptr);
  EXPECT_NE(error.find("/nonexistent/klf/00000000000000000000.log"), std::string::npos) << error;
}

// The buffer is the memory: a 1 MiB chunk reads a multi-megabyte segment without growing.
TEST(StreamingReader, FetchKeepsUnreadBytesAndGrowsOnlyForLargeRequests) {
  test::TempDir dir("streaming");
  std::string data(10000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 7 + 3);
  std::string path = dir.path() + "/f";
  test::WriteAll(path, data);
  std::string error;
  auto f = StreamedFile::Open(path, &error, 100);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->size(), 10000u);
  for (uint64_t pos : {0u, 50u, 90u, 95u, 400u, 401u}) {  // refills keep what is still ahead
    const uint8_t* p = f->Fetch(pos, 20, &error);
    ASSERT_NE(p, nullptr) << error;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(p), 20), data.substr(pos, 20));
  }
  const uint8_t* big = f->Fetch(1000, 5000, &error);  // larger than the chunk
  ASSERT_NE(big, nullptr) << error;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(big), 5000), data.substr(1000, 5000));
  EXPECT_EQ(f->Fetch(9990, 20, &error), nullptr);  // past the end: an error naming the file
  EXPECT_NE(error.find(path), std::string::npos) << error;
}

}  // namespace
}  // namespace klf
