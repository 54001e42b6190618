// MappedFile and ReleaseMappedPages: released pages read back the same bytes, resident memory
// drops, and memory that is not a mapping is never touched.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "segment_reader/file.h"

namespace klf {
namespace {

// Resident pages of the range, from mincore.
size_t ResidentPages(const uint8_t* begin, size_t size) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  uintptr_t b = reinterpret_cast<uintptr_t>(begin) & ~(page - 1);
  size_t len = reinterpret_cast<uintptr_t>(begin) + size - b;
  std::vector<unsigned char> vec((len + page - 1) / page);
  if (::mincore(reinterpret_cast<void*>(b), len, vec.data()) != 0) return 0;
  size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

class MappedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() / ("klf-mapped-" + std::to_string(::getpid()));
    std::ofstream out(path_, std::ios::binary);
    for (size_t i = 0; i < kSize; ++i) out.put(char(i * 7 + 3));
  }
  void TearDown() override { std::filesystem::remove(path_); }
  static constexpr size_t kSize = 8u << 20;
  std::filesystem::path path_;
};

TEST_F(MappedFileTest, ReleasedPagesReadBackTheSameBytes) {
  std::string error;
  auto f = MappedFile::Open(path_.string(), &error);
  ASSERT_NE(f, nullptr) << error;
  ASSERT_EQ(f->size(), kSize);
  uint64_t sum = 0;
  for (uint8_t b : f->data()) sum += b;
  ReleaseMappedPages(f->data().data(), f->data().data() + kSize);
  // mincore reports page-cache residency for file mappings, so it cannot show the unmapping; what
  // matters for callers is that every byte reads back the same afterwards.
  uint64_t sum2 = 0;
  for (size_t i = 0; i < kSize; ++i) {
    ASSERT_EQ(f->data()[i], uint8_t(i * 7 + 3)) << "byte " << i;
    sum2 += f->data()[i];
  }
  EXPECT_EQ(sum, sum2);
}

TEST_F(MappedFileTest, MemoryOutsideMappingsIsLeftAlone) {
  std::vector<uint8_t> heap(1u << 20, 0xAB);
  ReleaseMappedPages(heap.data(), heap.data() + heap.size());
  for (uint8_t b : heap) ASSERT_EQ(b, 0xAB);
  // Also after a mapping was opened and closed at some other address.
  std::string error;
  {
    auto f = MappedFile::Open(path_.string(), &error);
    ASSERT_NE(f, nullptr);
  }
  ReleaseMappedPages(heap.data(), heap.data() + heap.size());
  for (uint8_t b : heap) ASSERT_EQ(b, 0xAB);
  EXPECT_GT(ResidentPages(heap.data(), heap.size()), 0u);
}

TEST_F(MappedFileTest, OpenErrorsNameThePath) {
  std::string error;
  EXPECT_EQ(MappedFile::Open("/nonexistent/klf/file.log", &error), nullptr);
  EXPECT_NE(error.find("/nonexistent/klf/file.log"), std::string::npos);
  EXPECT_EQ(MappedFile::Open("/tmp", &error), nullptr);
  EXPECT_NE(error.find("not a regular file"), std::string::npos);
}

// A file truncated under its mapping (a follower truncating its log while klf digests the broker): the
// pages past the new end read as zeros instead of killing the process with SIGBUS, and the mapping says
// so, naming the file.
TEST_F(MappedFileTest, ShrinkingUnderTheMappingIsReportedNotACrash) {
  std::string error;
  auto f = MappedFile::Open(path_.string(), &error);
  ASSERT_NE(f, nullptr) << error;
  EXPECT_FALSE(f->changed());
  EXPECT_TRUE(f->Unchanged(&error));
  ASSERT_EQ(::truncate(path_.c_str(), 1 << 20), 0);
  EXPECT_EQ(f->data()[1000], uint8_t(1000 * 7 + 3));  // below the new end: the file's bytes
  uint64_t past = 0;
  for (size_t i = 2u << 20; i < kSize; i += 4096) past += f->data()[i];  // past it: no page
  EXPECT_EQ(past, 0u);
  EXPECT_TRUE(f->changed());
  EXPECT_FALSE(f->Unchanged(&error));
  EXPECT_NE(error.find(path_.string()), std::string::npos) << error;
  EXPECT_NE(error.find("shrank while it was read"), std::string::npos) << error;
  // A mapping opened after the change is a new one, of the file as it is now.
  auto again = MappedFile::Open(path_.string(), &error);
  ASSERT_NE(again, nullptr) << error;
  EXPECT_EQ(again->size(), 1u << 20);
  EXPECT_FALSE(again->changed());
}

// The handler answers only klf's own input mappings: any other SIGBUS still ends the process.
TEST_F(MappedFileTest, ForeignSigbusStillKills) {
  std::string error;
  auto guarded = MappedFile::Open(path_.string(), &error);  // installs the handler
  ASSERT_NE(guarded, nullptr) << error;
  EXPECT_DEATH(
      {
        int fd = ::open(path_.c_str(), O_RDONLY);
        auto* p = static_cast<volatile uint8_t*>(::mmap(nullptr, kSize, PROT_READ, MAP_PRIVATE, fd, 0));
        if (::truncate(path_.c_str(), 4096) != 0) std::abort();
        std::fprintf(stderr, "%d\n", int(p[kSize - 1]));
      },
      "");
}

}  // namespace
}  // namespace klf
