// Progress of a long run on stderr, only when stderr is a terminal and stdout is not (stdout stays
// data only; when stdout is the terminal, the output scrolling by is the progress).
//
// Nothing is shown during the first second, so short runs print nothing at all; afterwards one line
// is rewritten in place at most four times a second and erased when the run ends.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace klf::cli {

class Progress {
 public:
  // `total_bytes` is the input size the run will read (0 when unknown).
  Progress(std::string label, uint64_t total_bytes);
  ~Progress();  // erases the line if one was shown

  // Cheap enough to call per batch: looks at the clock only every 256 calls.
  void Update(uint64_t done_bytes, const std::string& current) {
    if (!enabled_ || (++calls_ & 255) != 0) return;
    Show(done_bytes, current);
  }
  void Finish();

 private:
  void Show(uint64_t done_bytes, const std::string& current);

  std::string label_;
  uint64_t total_ = 0;
  bool enabled_ = false;
  bool shown_ = false;
  uint64_t calls_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

// Progress counted in items (partitions) rather than bytes, for commands that work a partition at a
// time on several threads: Done() may be called from any thread. Same rules as Progress: stderr a
// terminal and stdout not, nothing in the first second, at most four lines a second, erased at the end.
class CountProgress {
 public:
  CountProgress(std::string label, size_t total);
  ~CountProgress();
  void Done(const std::string& current);  // one more item finished; `current` names it

 private:
  std::string label_;
  size_t total_ = 0, done_ = 0;
  bool enabled_ = false, shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
  std::mutex mu_;
};

}  // namespace klf::cli
