// The write buffer of Env::Default()'s files and of FaultInjectionEnv's (file_writer.h): when bytes
// reach the file, how many writes a run makes, and where a fault that strikes buffered bytes is
// reported.
#include "segment_writer/file_writer.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "segment_reader/layout.h"
#include "segment_writer/segment_writer.h"
#include "tests/segment_writer/test_util.h"
#include "tests/support/fault_injection_env.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using writer_test::ListDir;
using writer_test::Oracle;
using writer_test::ReadFile;
using writer_test::TempDir;

constexpr size_t K = kWritableFileBufferBytes;

// Distinct bytes per (seed, index), so a misplaced or repeated chunk shows in the file's contents.
std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char((i * 131 + size_t(seed) * 7919 + i / 251) & 0xff);
  return s;
}

// Compares contents without printing megabytes on failure.
::testing::AssertionResult SameBytes(const std::string& actual, const std::string& expected) {
  if (actual == expected) return ::testing::AssertionSuccess();
  size_t i = 0;
  while (i < actual.size() && i < expected.size() && actual[i] == expected[i]) ++i;
  return ::testing::AssertionFailure() << "sizes " << actual.size() << " vs expected " << expected.size()
                                       << ", first difference at byte " << i;
}

int64_t SizeOnDisk(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : -1;
}

// Appends through a FaultInjectionEnv (which buffers as Env::Default() does) and counts the writes
// that leave the buffer.
struct Counted {
  TempDir tmp;
  FaultInjectionEnv env{Env::Default()};
  std::string path = tmp.path() + "/f";
  std::unique_ptr<WritableFile> file;
  std::string written;  // what the file must hold after Close
  std::string error;

  Counted() { file = env.NewWritableFile(path, &error); }
  bool Append(size_t n) {
    std::string data = Pattern(n, int(written.size() % 97));
    written += data;
    return file->Append(AsBytes(data), &error);
  }
};

TEST(WriteBuffer, SmallAppendsReachTheFileAtFlushSyncAndClose) {
  TempDir tmp;
  std::string path = tmp.path() + "/small";
  std::string error;
  auto f = Env::Default()->NewWritableFile(path, &error);
  ASSERT_TRUE(f) << error;
  std::string a = Pattern(100, 1), b = Pattern(4000, 2), c = Pattern(7, 3);
  ASSERT_TRUE(f->Append(AsBytes(a), &error)) << error;
  EXPECT_EQ(SizeOnDisk(path), 0) << "a small append is buffered, not written";
  ASSERT_TRUE(f->Flush(&error)) << error;
  EXPECT_EQ(SizeOnDisk(path), 100);
  ASSERT_TRUE(f->Append(AsBytes(b), &error)) << error;
  EXPECT_EQ(SizeOnDisk(path), 100);
  ASSERT_TRUE(f->Sync(&error)) << error;
  EXPECT_EQ(SizeOnDisk(path), 4100);
  ASSERT_TRUE(f->Append(AsBytes(c), &error)) << error;
  ASSERT_TRUE(f->Close(&error)) << error;
  EXPECT_TRUE(SameBytes(ReadFile(path), a + b + c));
}

TEST(WriteBuffer, ManySmallAppendsAreOneWritePerFullBuffer) {
  Counted t;
  ASSERT_TRUE(t.file) << t.error;
  // 10 KiB batches, as a segment of uncompressed batches appends them one at a time.
  const size_t n = 3 * K / 10240 + 5;
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(t.Append(10240)) << t.error;
  EXPECT_EQ(t.env.write_calls(), n * 10240 / K) << "only full buffers are written before Close";
  EXPECT_EQ(t.env.bytes_written(), n * 10240 / K * K);
  EXPECT_EQ(SizeOnDisk(t.path), int64_t(n * 10240 / K * K));
  ASSERT_TRUE(t.file->Close(&t.error)) << t.error;
  EXPECT_EQ(t.env.write_calls(), n * 10240 / K + 1);
  EXPECT_EQ(t.env.bytes_written(), n * 10240);
  EXPECT_TRUE(SameBytes(ReadFile(t.path), t.written));
}

TEST(WriteBuffer, BoundarySizes) {
  {
    SCOPED_TRACE("K-1 then 1: the append that fills the buffer writes it");
    Counted t;
    ASSERT_TRUE(t.Append(K - 1));
    EXPECT_EQ(t.env.write_calls(), 0u);
    ASSERT_TRUE(t.Append(1));
    EXPECT_EQ(t.env.write_calls(), 1u);
    EXPECT_EQ(t.env.bytes_written(), K);
    ASSERT_TRUE(t.file->Close(&t.error)) << t.error;
    EXPECT_EQ(t.env.write_calls(), 1u) << "nothing was left to write at Close";
    EXPECT_TRUE(SameBytes(ReadFile(t.path), t.written));
  }
  {
    SCOPED_TRACE("exactly K into an empty buffer: written directly");
    Counted t;
    ASSERT_TRUE(t.Append(K));
    EXPECT_EQ(t.env.write_calls(), 1u);
    ASSERT_TRUE(t.file->Close(&t.error)) << t.error;
    EXPECT_EQ(t.env.write_calls(), 1u);
    EXPECT_TRUE(SameBytes(ReadFile(t.path), t.written));
  }
  {
    SCOPED_TRACE("K-1 then 2: one full buffer, one byte left for Close");
    Counted t;
    ASSERT_TRUE(t.Append(K - 1));
    ASSERT_TRUE(t.Append(2));
    EXPECT_EQ(t.env.write_calls(), 1u);
    EXPECT_EQ(t.env.bytes_written(), K);
    ASSERT_TRUE(t.file->Close(&t.error)) << t.error;
    EXPECT_EQ(t.env.write_calls(), 2u);
    EXPECT_EQ(t.env.bytes_written(), K + 1);
    EXPECT_TRUE(SameBytes(ReadFile(t.path), t.written));
  }
  {
    SCOPED_TRACE("K-1 then K-1: the second append tops the buffer up and leaves K-2 buffered");
    Counted t;
    ASSERT_TRUE(t.Append(K - 1));
    ASSERT_TRUE(t.Append(K - 1));
    EXPECT_EQ(t.env.write_calls(), 1u);
    EXPECT_EQ(t.env.bytes_written(), K);
    ASSERT_TRUE(t.file->Close(&t.error)) << t.error;
    EXPECT_EQ(t.env.bytes_written(), 2 * K - 2);
    EXPECT_TRUE(SameBytes(ReadFile(t.path), t.written));
  }
  {
    SCOPED_TRACE("empty appends write nothing");
    Counted t;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(t.Append(0));
    ASSERT_TRUE(t.file->Close(&t.error)) << t.error;
    EXPECT_EQ(t.env.write_calls(), 0u);
    EXPECT_EQ(SizeOnDisk(t.path), 0);
  }
}

TEST(WriteBuffer, LargeAppendIsWrittenDirectlyAfterTheBufferedBytes) {
  Counted t;
  ASSERT_TRUE(t.Append(10));
  ASSERT_TRUE(t.Append(3 * K + 5));
  // The 10 buffered bytes first, then the large append in one write (no copy through the buffer).
  EXPECT_EQ(t.env.write_calls(), 2u);
  EXPECT_EQ(t.env.bytes_written(), 3 * K + 15);
  ASSERT_TRUE(t.Append(20));
  ASSERT_TRUE(t.Append(2 * K));
  EXPECT_EQ(t.env.write_calls(), 4u);
  ASSERT_TRUE(t.Append(30));
  ASSERT_TRUE(t.file->Sync(&t.error)) << t.error;
  EXPECT_EQ(t.env.write_calls(), 5u);
  ASSERT_TRUE(t.file->Close(&t.error)) << t.error;
  EXPECT_EQ(t.env.write_calls(), 5u);
  EXPECT_TRUE(SameBytes(ReadFile(t.path), t.written));
}

// A full disk while bytes are buffered: the Appends that only buffered succeed; the flush that
// writes them reports ENOSPC naming the file, exactly the bytes that fit reached it, and the file
// stays failed.
TEST(WriteBuffer, FullDiskStrikesWhenTheBufferIsWritten) {
  Counted t;
  t.env.FailAfterBytes(700);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(t.Append(100)) << "buffered, nothing written yet";
  EXPECT_EQ(t.env.write_calls(), 0u);
  EXPECT_FALSE(t.file->Sync(&t.error));
  EXPECT_EQ(t.error, t.path + ": write: No space left on device (simulated)");
  EXPECT_EQ(SizeOnDisk(t.path), 700);
  EXPECT_TRUE(SameBytes(ReadFile(t.path), t.written.substr(0, 700)));
  std::string again;
  EXPECT_FALSE(t.Append(1));
  EXPECT_EQ(t.error, t.path + ": write: No space left on device (simulated)") << "the first error is kept";
  EXPECT_FALSE(t.file->Close(&again));
  EXPECT_EQ(again, t.error);
}

TEST(WriteBuffer, FullDiskDuringAFullBufferIsReportedByTheAppendThatFilledIt) {
  Counted t;
  t.env.FailAfterBytes(K + 100);
  ASSERT_TRUE(t.Append(K - 1));
  ASSERT_TRUE(t.Append(10));  // writes the full buffer (K bytes fit), 9 bytes buffered
  EXPECT_EQ(t.env.bytes_written(), K);
  EXPECT_FALSE(t.Append(2 * K));  // flushes 9, then the direct write gets 91 of 2K bytes
  EXPECT_NE(t.error.find("No space left on device"), std::string::npos) << t.error;
  EXPECT_EQ(t.env.bytes_written(), K + 100);
  EXPECT_TRUE(SameBytes(ReadFile(t.path), t.written.substr(0, K + 100)));
}

TEST(WriteBuffer, ShortWriteAtCloseFailsTheClose) {
  Counted t;
  t.env.FailShortWrite("/f");
  ASSERT_TRUE(t.Append(1000));
  EXPECT_FALSE(t.file->Close(&t.error));
  EXPECT_EQ(t.error, t.path + ": short write (simulated)");
  EXPECT_EQ(SizeOnDisk(t.path), 500);
}

// The real kernel error through Env::Default(): /dev/full fails every write with ENOSPC.
TEST(WriteBuffer, DevFullReportsEnospcAtFlushForBufferedBytes) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  std::string error;
  auto f = Env::Default()->NewWritableFile("/dev/full", &error);
  ASSERT_TRUE(f) << error;
  std::string data = Pattern(100, 5);
  EXPECT_TRUE(f->Append(AsBytes(data), &error)) << "buffered: the kernel has not seen it yet";
  EXPECT_FALSE(f->Flush(&error));
  EXPECT_EQ(error, "/dev/full: write: No space left on device");
  error.clear();
  EXPECT_FALSE(f->Close(&error));
  EXPECT_EQ(error, "/dev/full: write: No space left on device");

  auto g = Env::Default()->NewWritableFile("/dev/full", &error);
  ASSERT_TRUE(g) << error;
  std::string big = Pattern(K, 6);
  EXPECT_FALSE(g->Append(AsBytes(big), &error)) << "a large append is written at once";
  EXPECT_EQ(error, "/dev/full: write: No space left on device");
}

// An AtomicFile that is not committed leaves nothing, buffered bytes included; a committed one holds
// every byte (Commit = Sync + Close + rename).
TEST(WriteBuffer, AtomicFileCommitWritesBufferedBytes) {
  TempDir tmp;
  std::string path = tmp.path() + "/00000000000000000000.log";
  std::string error;
  std::string all;
  {
    auto f = AtomicFile::Create(Env::Default(), path, &error);
    ASSERT_TRUE(f) << error;
    ASSERT_TRUE(f->Append(std::string_view("abc"), &error));
  }
  EXPECT_TRUE(ListDir(tmp.path()).empty());
  auto f = AtomicFile::Create(Env::Default(), path, &error);
  ASSERT_TRUE(f) << error;
  for (int i = 0; i < 100; ++i) {
    std::string chunk = Pattern(size_t(i) * 997 % 20000, i);
    all += chunk;
    ASSERT_TRUE(f->Append(chunk, &error)) << error;
  }
  EXPECT_EQ(f->size(), all.size());
  ASSERT_TRUE(f->Commit(&error)) << error;
  EXPECT_TRUE(SameBytes(ReadFile(path), all));
}

// Reindex through the buffer: each file is written in ceil(size / K) writes (its bytes in full
// buffers, then the rest at Close) — not one write per batch or index entry — and the files equal
// Kafka's (as Reindex.UncleanedOracleDirsAreReproducedByteForByte checks for every uncleaned fixture).
TEST(WriteBuffer, ReindexWritesEachFileInFullBuffers) {
  std::string in = Oracle() + "/a-keyed/keyed-none-0";
  TempDir tmp;
  std::string out = tmp.path() + "/out";
  FaultInjectionEnv env(Env::Default());
  ReindexOptions o;
  o.config.index_interval_bytes = 128;
  ReindexResult result;
  CollectingSink sink;
  std::string error;
  ASSERT_TRUE(ReindexPartition(&env, in, out, o, &result, &sink, &error)) << error;
  ASSERT_GT(result.batches, 10);
  uint64_t expected_writes = 0, bytes = 0, marker_writes = 0;
  for (const auto& e : fs::recursive_directory_iterator(out)) {
    if (!e.is_regular_file()) continue;
    uint64_t size = e.file_size();
    expected_writes += (size + K - 1) / K;
    bytes += size;
    std::string name = e.path().filename().string();
    // Beside the partition directory: klf's output marker (output_guard.h) and the log-dir checkpoints.
    if (e.path().parent_path() == fs::path(out)) marker_writes += (size + K - 1) / K;
    if (name.ends_with(".log") || name.ends_with(".index") || name.ends_with(".timeindex")) {
      EXPECT_TRUE(SameBytes(ReadFile(e.path().string()), ReadFile(in + "/" + name))) << name;
    }
  }
  EXPECT_EQ(env.write_calls(), expected_writes);
  EXPECT_EQ(env.bytes_written(), bytes);
  EXPECT_LT(env.write_calls() - marker_writes, uint64_t(result.batches));
}

}  // namespace
}  // namespace klf
