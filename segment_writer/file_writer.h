// Atomic outputs on top of an Env (segment_reader/env.h); tests swap in FaultInjectionEnv
// (tests/support/fault_injection_env.h) to simulate a short write, a full disk, or a crash between a
// write and its rename. Outputs are atomic at two levels:
//   * a file is written to `<name>.tmp`, fsynced, then renamed (WriteFileAtomically, AtomicFile);
//   * a directory is built inside `<out>.tmp-XXXXXX` and renamed to `<out>` only when complete
//     (StagedDirectory), so `<out>` is either complete or absent, never half written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "segment_reader/bytes.h"
#include "segment_reader/env.h"

namespace klf {

// Writes `data` to `path` atomically: `<path>.tmp`, fsync, rename, fsync of the directory (Kafka's
// CheckpointFile protocol, spec §11.1). On failure the temporary file is removed (best effort) and
// `path` is untouched.
bool WriteFileAtomically(Env* env, const std::string& path, std::string_view data, std::string* error);

// WriteFileAtomically for a file the user named (`klf diff --html FILE`): the temporary file is a
// fresh `<path>.tmp-<pid>-XXXXXX` (never an existing file, whatever `<path>.tmp` may be), registered
// as scratch (scratch.h) so a signal removes it too. The caller checked `path` with the output guard.
bool WriteUserFileAtomically(Env* env, const std::string& path, std::string_view data, std::string* error);

// A large file written incrementally under `<path>.tmp` and renamed to `path` by Commit(). If
// Commit() was not called (or failed) the destructor removes the temporary file.
class AtomicFile {
 public:
  static std::unique_ptr<AtomicFile> Create(Env* env, const std::string& path, std::string* error);
  ~AtomicFile();
  bool Append(Bytes data, std::string* error);
  bool Append(std::string_view data, std::string* error) { return Append(AsBytes(data), error); }
  // fsync, close, rename to the final name.
  bool Commit(std::string* error);
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  AtomicFile() = default;
  Env* env_ = nullptr;
  std::string path_;
  std::unique_ptr<WritableFile> file_;
  uint64_t size_ = 0;
  bool committed_ = false;
};

// An output directory built in a sibling staging directory `<out>.tmp-<pid>-XXXXXX` and renamed into
// place by Commit(). Without a successful Commit() the staging directory is removed by the destructor
// (or, on SIGINT/SIGTERM/SIGHUP, by the scratch handler; after a SIGKILL, by the next run into the
// same `out`: scratch.h), so `<out>` never appears half written. Create() first runs the output
// guard (output_guard.h) and writes the klf output marker into the staging directory.
class StagedDirectory {
 public:
  struct Options {
    // Replace an existing non-empty `out` that is a previous klf output (it is renamed aside, the
    // new one renamed in, the old one removed). Without it, an existing non-empty `out` is refused;
    // with it, one that is not a klf output still is.
    bool force = false;
    // Every path the command reads: the output must not be, contain, or lie inside any of them
    // (nor inside a directory input's parent broker log dir).
    std::vector<std::string> inputs;
  };
  static std::unique_ptr<StagedDirectory> Create(Env* env, const std::string& out, const Options& options,
                                                 std::string* error);
  ~StagedDirectory();

  // Where to write the files now (the staging directory).
  const std::string& path() const { return staging_; }
  const std::string& final_path() const { return out_; }
  // fsync the staging directory, rename it to `out`, fsync the parent.
  bool Commit(std::string* error);

 private:
  StagedDirectory() = default;
  Env* env_ = nullptr;
  std::string out_;
  std::string staging_;
  bool force_ = false;
  bool committed_ = false;
};

}  // namespace klf
