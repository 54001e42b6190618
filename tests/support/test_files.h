// Small file helpers shared by the tests: a temporary directory removed at the end of a test, whole-file
// reads and writes, a writable copy of a (read-only) fixture directory, and a snapshot of every file
// under a directory (inputs must be byte-identical after a run).
#pragma once

#include <map>
#include <string>

namespace klf::test {

// A fresh directory (`klf-<prefix>-XXXXXX`) under `parent`, by default the system temp dir, removed with
// its contents.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "test", const std::string& parent = "");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A parent for TempDirs of tests that create and remove thousands of small files: /dev/shm when it is a
// writable directory (tmpfs: no journal; on the test VM a damage-corpus run takes 10 s there instead of
// 40 s on the disk), else "" (the system temp dir).
std::string ScratchParent();

// The whole file ("" when it cannot be read).
std::string ReadAll(const std::string& path);
// Replaces the file's contents (created when absent).
void WriteAll(const std::string& path, const std::string& bytes);

// Copies the directory `from` to `to` (recursively) and makes every copied file writable by its owner:
// the fixtures are read-only, a test that damages a copy must be able to write it.
void CopyWritable(const std::string& from, const std::string& to);

// Whether `name` is a Kafka segment file name: 20 decimal digits then ".log". Fixture trees also hold
// other files ending in .log (a timeline's run.log), which are not segments.
bool IsSegmentFileName(const std::string& name);

// Every regular file under `root` (path relative to root) with its contents.
std::map<std::string, std::string> SnapshotFiles(const std::string& root);

}  // namespace klf::test
