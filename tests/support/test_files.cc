#include "tests/support/test_files.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace klf::test {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& prefix, const std::string& parent) {
  fs::path dir = parent.empty() ? fs::temp_directory_path() : fs::path(parent);
  std::string tmpl = (dir / ("klf-" + prefix + "-XXXXXX")).string();
  if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ScratchParent() {
  static const std::string parent = [] {
    std::error_code ec;
    return fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK | X_OK) == 0 ? std::string("/dev/shm")
                                                                                    : std::string();
  }();
  return parent;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

void CopyWritable(const std::string& from, const std::string& to) {
  fs::copy(from, to, fs::copy_options::recursive);
  fs::permissions(to, fs::perms::owner_all, fs::perm_options::add);
  for (auto& e : fs::recursive_directory_iterator(to)) {
    fs::permissions(e.path(), e.is_directory() ? fs::perms::owner_all : fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::add);
  }
}

std::map<std::string, std::string> SnapshotFiles(const std::string& root) {
  std::map<std::string, std::string> out;
  for (auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out[fs::relative(e.path(), root).string()] = ReadAll(e.path().string());
  }
  return out;
}

bool IsSegmentFileName(const std::string& name) {
  if (name.size() != 24 || name.compare(20, 4, ".log") != 0) return false;
  for (size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

}  // namespace klf::test
