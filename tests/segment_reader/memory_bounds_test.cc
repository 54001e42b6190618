// Memory bounded by design (issue 15): counts and lengths read from a file are checked against what
// the bytes around them can hold before anything is allocated; headers are never materialised;
// indexes are read in windows and a preallocated zero tail is not read at all.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/crc.h"
#include "segment_reader/index_files.h"

namespace klf {
namespace {

// A v2 batch (uncompressed, no producer) holding `count` records whose bytes are `records`.
std::string V2Batch(int64_t base_offset, int32_t count, const std::string& records) {
  std::string after_crc;
  PutBE16(&after_crc, 0);                                    // attributes
  PutBE32(&after_crc, uint32_t(count > 0 ? count - 1 : 0));  // lastOffsetDelta
  PutBE64(&after_crc, 1700000000000);                        // baseTimestamp
  PutBE64(&after_crc, 1700000000000);                        // maxTimestamp
  PutBE64(&after_crc, uint64_t(-1));                         // producerId
  PutBE16(&after_crc, uint16_t(-1));                         // producerEpoch
  PutBE32(&after_crc, uint32_t(-1));                         // baseSequence
  PutBE32(&after_crc, uint32_t(count));
  after_crc += records;
  std::string out;
  PutBE64(&out, uint64_t(base_offset));
  PutBE32(&out, uint32_t(4 + 1 + 4 + after_crc.size()));
  PutBE32(&out, 0);  // partitionLeaderEpoch
  out.push_back(2);  // magic
  PutBE32(&out, Crc32c(AsBytes(after_crc)));
  return out + after_crc;
}

// One record: null key, empty value, `header_count` as declared followed by `headers` bytes.
std::string Record(int32_t offset_delta, int32_t header_count, const std::string& headers) {
  std::string body;
  body.push_back(0);    // attributes
  PutVarint(&body, 0);  // timestampDelta (a one-byte varlong)
  PutVarint(&body, offset_delta);
  PutVarint(&body, -1);  // null key
  PutVarint(&body, 0);   // empty value
  PutVarint(&body, header_count);
  body += headers;
  std::string out;
  PutVarint(&out, int32_t(body.size()));
  return out + body;
}

bool DecodeOne(const std::string& bytes, RecordDecoder* decoder, CollectingSink* sink) {
  LogReader reader("x.log", AsBytes(bytes), sink);
  BatchView batch;
  if (!reader.Next(&batch)) return false;
  return decoder->Decode(batch, "x.log", sink);
}

TEST(MemoryBoundsTest, HeadersAreParsedOnIterationNotStored) {
  constexpr int32_t kHeaders = 1000000;
  std::string headers;
  for (int32_t i = 0; i < kHeaders; ++i) headers += i % 2 ? std::string("\x02k\x01", 3) : std::string("\x00\x02v", 3);
  const std::string bytes = V2Batch(0, 1, Record(0, kHeaders, headers));
  RecordDecoder decoder;
  CollectingSink sink;
  ASSERT_TRUE(DecodeOne(bytes, &decoder, &sink)) << sink.problems.at(0).message;
  ASSERT_EQ(decoder.records().size(), 1u);
  const RecordHeaders hs = decoder.headers(decoder.records()[0]);
  EXPECT_EQ(hs.size(), uint32_t(kHeaders));
  int32_t n = 0;
  for (const RecordHeader& h : hs) {
    if (n % 2) {
      EXPECT_EQ(AsStringView(h.key), "k");
      EXPECT_FALSE(h.value.has_value());
    } else {
      EXPECT_TRUE(h.key.empty());
      ASSERT_TRUE(h.value.has_value());
      EXPECT_EQ(AsStringView(*h.value), "v");
    }
    ++n;
  }
  EXPECT_EQ(n, kHeaders);
}

// Each header takes two bytes at least: a count the rest of the record cannot hold is refused before
// any work proportional to it (the record declared 131 M headers).
TEST(MemoryBoundsTest, HeaderCountAboveWhatTheRecordCanHold) {
  // 3 headers declared, 5 bytes left: 2 would fit.
  const std::string bytes = V2Batch(0, 1, Record(0, 3, std::string("\x00\x01\x00\x01\x00", 5)));
  RecordDecoder decoder;
  CollectingSink sink;
  EXPECT_FALSE(DecodeOne(bytes, &decoder, &sink));
  ASSERT_EQ(sink.problems.size(), 1u);
  EXPECT_EQ(sink.problems[0].check, "record-parse");
  EXPECT_NE(sink.problems[0].message.find("more record headers than the bytes left"), std::string::npos);
  EXPECT_EQ(sink.problems[0].file, "x.log");
  // Exactly as many as the bytes hold decodes.
  const std::string ok = V2Batch(0, 1, Record(0, 2, std::string("\x00\x01\x00\x01", 4)));
  CollectingSink ok_sink;
  EXPECT_TRUE(DecodeOne(ok, &decoder, &ok_sink));
}

TEST(MemoryBoundsTest, RecordCountAboveTheBudgetIsReportedNotAllocated) {
  std::string records;
  for (int i = 0; i < 11; ++i) records += Record(i, 0, "");
  const std::string bytes = V2Batch(0, 11, records);
  ReadOptions options;
  options.max_batch_records = 10;
  RecordDecoder decoder(options);
  CollectingSink sink;
  EXPECT_FALSE(DecodeOne(bytes, &decoder, &sink));
  ASSERT_EQ(sink.problems.size(), 1u);
  EXPECT_EQ(sink.problems[0].check, "record-budget");
  EXPECT_EQ(sink.problems[0].position, 57u);  // the record count field
  EXPECT_TRUE(decoder.records().empty());
  // The same batch within the budget decodes; a count its bytes cannot hold stays a record-count error.
  options.max_batch_records = 11;
  RecordDecoder fits(options);
  CollectingSink fits_sink;
  EXPECT_TRUE(DecodeOne(bytes, &fits, &fits_sink));
  EXPECT_EQ(fits.records().size(), 11u);
  const std::string lying = V2Batch(0, 2000000000, records);
  RecordDecoder standard;
  CollectingSink lying_sink;
  EXPECT_FALSE(DecodeOne(lying, &standard, &lying_sink));
  ASSERT_EQ(lying_sink.problems.size(), 1u);
  EXPECT_EQ(lying_sink.problems[0].check, "record-count");
}

class SparseFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("klf-index-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Writes `head` then extends the file to `size` bytes with a hole (sparse zeros).
  std::string Write(const std::string& name, const std::string& head, uint64_t size) {
    std::string path = (dir_ / name).string();
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(head.data(), 1, head.size(), f);
    std::fclose(f);
    if (size > head.size()) std::filesystem::resize_file(path, size);
    return path;
  }
  std::filesystem::path dir_;
};

std::string OffsetEntries(int n, int64_t base = 0) {
  std::string out;
  for (int i = 1; i <= n; ++i) EncodeOffsetIndexEntry({base + i, i * 100}, base, &out);
  return out;
}

// Kafka preallocates an active segment's index (segment.index.bytes, up to 2 GiB) as a sparse file:
// its zeros are recognised without being read.
TEST_F(SparseFileTest, SparsePreallocatedTwoGiBIsNotRead) {
  const std::string path = Write("00000000000000000000.index", OffsetEntries(3), uint64_t(2) << 30);
  const auto t0 = std::chrono::steady_clock::now();
  OffsetIndex index;
  CollectingSink sink;
  std::string error;
  ASSERT_TRUE(ReadOffsetIndexFile(path, 0, &sink, &index, &error)) << error;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_TRUE(sink.problems.empty());
  ASSERT_EQ(index.entries.size(), 3u);
  EXPECT_EQ(index.entries[2], (OffsetIndexEntry{3, 300}));
  EXPECT_EQ(index.file_size, uint64_t(2) << 30);
  EXPECT_EQ(index.unused_slots, (uint64_t(2) << 30) / 8 - 3);

  const std::string zeros = Write("00000000000000000000.timeindex", "", (uint64_t(2) << 30) + 1);
  TimeIndex time_index;
  ASSERT_TRUE(ReadTimeIndexFile(zeros, 0, &sink, &time_index, &error)) << error;
  EXPECT_TRUE(time_index.entries.empty());
  ASSERT_EQ(sink.problems.size(), 1u);  // the length is not a multiple of 12
  EXPECT_EQ(sink.problems[0].check, "time-index-size");
}

// Read in windows, the file gives exactly what parsing its bytes gives: entries across window
// boundaries, and a stray byte deep in the unused space.
TEST_F(SparseFileTest, WindowedReadEqualsParse) {
  std::string bytes = OffsetEntries(300000);  // 2.4 MB: three windows
  bytes += std::string(size_t(3) << 20, '\0');
  bytes[bytes.size() - 12345] = 7;
  const std::string path = Write("00000000000000000000.index", bytes, bytes.size());
  CollectingSink parsed_sink, read_sink;
  OffsetIndex parsed = ParseOffsetIndex(path, AsBytes(bytes), 0, &parsed_sink);
  OffsetIndex read;
  std::string error;
  ASSERT_TRUE(ReadOffsetIndexFile(path, 0, &read_sink, &read, &error)) << error;
  EXPECT_EQ(read.entries, parsed.entries);
  EXPECT_EQ(read.unused_slots, parsed.unused_slots);
  ASSERT_EQ(read_sink.problems.size(), 1u);
  ASSERT_EQ(parsed_sink.problems.size(), 1u);
  EXPECT_EQ(read_sink.problems[0].position, bytes.size() - 12345);
  EXPECT_EQ(read_sink.problems[0].message, parsed_sink.problems[0].message);
}

// Garbage makes every entry a problem: a CappedSink lists the first 1000 of each check of a file,
// then counts the rest.
TEST_F(SparseFileTest, GarbageEntriesAreReportedUpToACap) {
  std::string bytes;
  for (int i = 0; i < 5000; ++i) EncodeOffsetIndexEntry({1000 - i, i}, -100000, &bytes);  // offsets go down
  CollectingSink sink;
  CappedSink capped(&sink);
  OffsetIndex index = ParseOffsetIndex("x.index", AsBytes(bytes), -100000, &capped);
  capped.Finish();
  EXPECT_EQ(index.entries.size(), 5000u);
  ASSERT_EQ(sink.problems.size(), 1001u);
  EXPECT_EQ(sink.problems.back().check, "offset-index-order");
  EXPECT_EQ(sink.problems.back().message.find("3999 more problems"), 0u);
  EXPECT_EQ(sink.problems.back().position, 1001u * 8);
}

TEST_F(SparseFileTest, MoreEntriesThanTheBoundAreNotRead) {
  const int n = (1 << 21) + 5;
  const std::string path = Write("00000000000000000000.index", OffsetEntries(n), 0);
  OffsetIndex index;
  CollectingSink sink;
  std::string error;
  ASSERT_TRUE(ReadOffsetIndexFile(path, 0, &sink, &index, &error)) << error;
  EXPECT_EQ(index.entries.size(), size_t(1) << 21);
  ASSERT_EQ(sink.problems.size(), 1u);
  EXPECT_EQ(sink.problems[0].check, "offset-index-size");
  EXPECT_EQ(sink.problems[0].position, uint64_t(1) << 24);
}

// The .txnindex holds one entry per aborted transaction: a file with more entries than the bound is
// garbage, and its entries past the bound are not kept.
TEST(MemoryBoundsTest, TxnIndexEntriesAreBounded) {
  std::string bytes;
  for (int i = 0; i < (1 << 21) + 3; ++i) EncodeAbortedTxn({0, 7, 2 * int64_t(i), 2 * int64_t(i) + 1, 0}, &bytes);
  CollectingSink sink;
  TxnIndex index = ParseTxnIndex("x.txnindex", AsBytes(bytes), &sink);
  EXPECT_EQ(index.entries.size(), size_t(1) << 21);
  ASSERT_EQ(sink.problems.size(), 1u);
  EXPECT_EQ(sink.problems[0].check, "txn-index-size");
  EXPECT_EQ(sink.problems[0].position, (uint64_t(1) << 21) * kTxnIndexEntrySize);
}

// A length claim past the end of a sparse file, and a zero tail of a sparse file: resynchronisation
// and the zero-tail check pass the zeros without keeping their pages.
TEST_F(SparseFileTest, LyingLengthInASparseLogEndsAsATruncatedTail) {
  std::string log = V2Batch(0, 1, Record(0, 0, ""));
  std::string claim;
  PutBE64(&claim, 1);
  PutBE32(&claim, 0x7ffffff0);
  claim += std::string(4, '\0');  // partitionLeaderEpoch
  claim.push_back(2);             // magic
  const std::string path = Write("00000000000000000000.log", log + claim, (uint64_t(1) << 30) + 4096);
  CollectingSink sink;
  std::string error;
  std::unique_ptr<LogReader> reader = LogReader::Open(path, &sink, ReadOptions(), &error);
  ASSERT_TRUE(reader) << error;
  BatchView batch;
  ASSERT_TRUE(reader->Next(&batch));
  EXPECT_FALSE(reader->Next(&batch));
  ASSERT_FALSE(sink.problems.empty());
  EXPECT_EQ(sink.problems[0].check, "batch-size");
  EXPECT_EQ(sink.problems[0].position, log.size() + 8);
  EXPECT_EQ(sink.problems[0].file, path);
}

}  // namespace
}  // namespace klf
