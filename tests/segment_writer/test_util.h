// Small helpers shared by the segment_writer tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "segment_reader/bytes.h"

namespace klf::writer_test {

inline std::string Fixtures() { return KLF_FIXTURES_DIR; }
inline std::string Oracle() { return Fixtures() + "/kafka-oracle"; }

// Bytes from a spec hex dump: every pair of hex digits, ignoring spaces, newlines, "0000:" prefixes.
inline std::string FromHexDump(const std::string& dump) {
  std::string out;
  std::istringstream lines(dump);
  std::string line;
  while (std::getline(lines, line)) {
    auto colon = line.find(':');
    if (colon != std::string::npos) line = line.substr(colon + 1);
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      if (w.size() != 2) break;  // start of the commentary
      out.push_back(char(std::stoi(w, nullptr, 16)));
    }
  }
  return out;
}

inline std::string Hex(std::string_view s) { return HexEncode(AsBytes(s)); }

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

// A fresh temporary directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "klf-writer-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The names in `dir`, sorted, without klf's output marker (.klf-output, output_guard.h): outputs are
// compared with Kafka's directories, which do not have it.
inline std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename() != ".klf-output") names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace klf::writer_test
