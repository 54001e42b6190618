// OpenInputFile, the one door for input files (segment_reader/file.h): only regular files get
// through; a FIFO, a directory, a device, a symlink loop, a dangling symlink or a file without read
// permission is an error naming the file, returned at once (never a hang), and told apart from a
// missing file. ReadSmallFile refuses a file over its cap before reading a byte of it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "segment_reader/file.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("klf-input-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "regular") << "0 1\n";
  }
  void TearDown() override {
    fs::permissions(dir_ / "regular", fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  std::string Path(const char* name) const { return (dir_ / name).string(); }

  // Opens `path` and expects it refused as kUnreadable with the path and `why` in the message.
  void ExpectUnreadable(const std::string& path, const std::string& why) {
    InputFileInfo info;
    std::string error;
    InputFailure failure = InputFailure::kNone;
    int fd = OpenInputFile(path, &info, &error, &failure);
    EXPECT_EQ(fd, -1);
    if (fd >= 0) ::close(fd);
    EXPECT_EQ(failure, InputFailure::kUnreadable) << error;
    EXPECT_NE(error.find(path), std::string::npos) << error;
    EXPECT_NE(error.find(why), std::string::npos) << error;
    // The other ways in say the same, and so does ReadSmallFile.
    std::string e2;
    EXPECT_EQ(MappedFile::Open(path, &e2), nullptr);
    EXPECT_EQ(e2, error);
    std::string e3;
    EXPECT_EQ(StreamedFile::Open(path, &e3), nullptr);
    EXPECT_EQ(e3, error);
    std::string contents, e4;
    InputFailure f4 = InputFailure::kNone;
    EXPECT_FALSE(ReadSmallFile(path, 1 << 20, &contents, &e4, &f4));
    EXPECT_EQ(f4, InputFailure::kUnreadable);
    EXPECT_EQ(e4, error);
  }

  fs::path dir_;
};

TEST_F(InputFileTest, RegularFileAndSymlinkToItOpen) {
  fs::create_symlink("regular", dir_ / "link");
  for (const char* name : {"regular", "link"}) {
    InputFileInfo info;
    std::string error;
    InputFailure failure = InputFailure::kUnreadable;
    int fd = OpenInputFile(Path(name), &info, &error, &failure);
    ASSERT_GE(fd, 0) << error;
    EXPECT_EQ(failure, InputFailure::kNone);
    EXPECT_EQ(info.size, 4u);
    EXPECT_GT(info.mtime_ms, 0);
    char buf[8];
    EXPECT_EQ(::read(fd, buf, sizeof buf), 4);  // O_NONBLOCK changes nothing for a regular file
    ::close(fd);
    std::string contents;
    EXPECT_TRUE(ReadSmallFile(Path(name), 4, &contents, &error)) << error;
    EXPECT_EQ(contents, "0 1\n");
  }
}

TEST_F(InputFileTest, FifoIsRefusedAtOnce) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0644), 0);
  auto start = std::chrono::steady_clock::now();
  ExpectUnreadable(Path("fifo"), "a FIFO, not a regular file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(InputFileTest, DirectoryIsRefused) {
  fs::create_directory(dir_ / "00000000000000000000.log");
  ExpectUnreadable(Path("00000000000000000000.log"), "a directory, not a regular file");
}

TEST_F(InputFileTest, CharacterDeviceIsRefused) { ExpectUnreadable("/dev/null", "a character device"); }

TEST_F(InputFileTest, SymlinkLoopIsRefused) {
  fs::create_symlink("loop", dir_ / "loop");
  ExpectUnreadable(Path("loop"), "symbolic link loop");
  fs::create_symlink("b", dir_ / "a");
  fs::create_symlink("a", dir_ / "b");
  ExpectUnreadable(Path("a"), "symbolic link loop");
}

TEST_F(InputFileTest, DanglingSymlinkIsUnreadableNotMissing) {
  fs::create_symlink("nowhere", dir_ / "dangling");
  ExpectUnreadable(Path("dangling"), "a symbolic link to a missing file");
}

TEST_F(InputFileTest, MissingFileIsMissing) {
  for (const std::string& path : {Path("absent"), Path("regular") + "/below-a-file"}) {
    InputFileInfo info;
    std::string error;
    InputFailure failure = InputFailure::kNone;
    EXPECT_EQ(OpenInputFile(path, &info, &error, &failure), -1);
    EXPECT_EQ(failure, InputFailure::kMissing) << path;
    EXPECT_NE(error.find(path), std::string::npos) << error;
    std::string contents;
    failure = InputFailure::kNone;
    EXPECT_FALSE(ReadSmallFile(path, 100, &contents, &error, &failure));
    EXPECT_EQ(failure, InputFailure::kMissing);
  }
}

TEST_F(InputFileTest, NoReadPermissionIsUnreadable) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "running as root: permissions do not stop root (the e2e test covers "
                    "this case as another user when it can)";
  fs::permissions(dir_ / "regular", fs::perms::none);
  ExpectUnreadable(Path("regular"), "Permission denied");
}

TEST_F(InputFileTest, SmallFileOverTheCapIsNotRead) {
  // A sparse 250 MiB file: refused from its size alone, so the test reads nothing and stays fast.
  const std::string path = Path("replication-offset-checkpoint");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t(250) << 20), 0);
  ::close(fd);
  std::string contents = "left alone", error;
  InputFailure failure = InputFailure::kNone;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(ReadSmallFile(path, kMaxMetadataFileBytes, &contents, &error, &failure));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(failure, InputFailure::kTooLarge);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("262144000 bytes"), std::string::npos) << error;
  EXPECT_EQ(contents, "left alone");
  // At the cap exactly it is read.
  EXPECT_TRUE(ReadSmallFile(Path("regular"), 4, &contents, &error, &failure)) << error;
  EXPECT_FALSE(ReadSmallFile(Path("regular"), 3, &contents, &error, &failure));
  EXPECT_EQ(failure, InputFailure::kTooLarge);
}

TEST(FileTypeNameTest, NamesEveryKind) {
  EXPECT_STREQ(FileTypeName(S_IFIFO), "a FIFO");
  EXPECT_STREQ(FileTypeName(S_IFDIR), "a directory");
  EXPECT_STREQ(FileTypeName(S_IFCHR), "a character device");
  EXPECT_STREQ(FileTypeName(S_IFBLK), "a block device");
  EXPECT_STREQ(FileTypeName(S_IFSOCK), "a socket");
  EXPECT_STREQ(FileTypeName(S_IFREG), "a regular file");
}

}  // namespace
}  // namespace klf
