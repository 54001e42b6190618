#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace klf::cli {

Progress::Progress(std::string label, uint64_t total_bytes)
    // When stdout is the same terminal, the output itself shows progress and a line rewritten with
    // \r would garble it: only a redirected stdout gets a progress line.
    : label_(std::move(label)), total_(total_bytes), enabled_(isatty(2) == 1 && isatty(1) == 0) {
  start_ = last_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { Finish(); }

void Progress::Finish() {
  if (shown_) std::fputs("\r\033[K", stderr);
  shown_ = false;
  enabled_ = false;
}

void Progress::Show(uint64_t done, const std::string& current) {
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  shown_ = true;
  double mib = double(done) / (1 << 20);
  double secs = std::chrono::duration<double>(now - start_).count();
  // The partition directory and the file (`foo-0/00000000000000000000.log`): the line must fit a
  // terminal, and must say which partition is being read.
  size_t slash = current.find_last_of('/');
  if (slash != std::string::npos && slash > 0) slash = current.find_last_of('/', slash - 1);
  std::string name = slash == std::string::npos ? current : current.substr(slash + 1);
  if (total_ > 0) {
    std::fprintf(stderr, "\r\033[K%s: %.0f of %.0f MiB (%.0f%%, %.0f MiB/s) %s", label_.c_str(), mib,
                 double(total_) / (1 << 20), 100.0 * double(done) / double(total_), mib / secs, name.c_str());
  } else {
    std::fprintf(stderr, "\r\033[K%s: %.0f MiB (%.0f MiB/s) %s", label_.c_str(), mib, mib / secs, name.c_str());
  }
  std::fflush(stderr);
}

CountProgress::CountProgress(std::string label, size_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(2) == 1 && isatty(1) == 0) {
  start_ = last_ = std::chrono::steady_clock::now();
}

CountProgress::~CountProgress() {
  if (shown_) std::fputs("\r\033[K", stderr);
}

void CountProgress::Done(const std::string& current) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  shown_ = true;
  std::fprintf(stderr, "\r\033[K%s: %zu of %zu partitions (%s)", label_.c_str(), done_, total_, current.c_str());
  std::fflush(stderr);
}

}  // namespace klf::cli
