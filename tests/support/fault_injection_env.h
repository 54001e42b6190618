// An Env that forwards to another and fails on command: the read faults (EIO from a byte position, a
// file that ends early, a file that cannot be opened) and write faults (a short write, a full disk, a
// crash between a write and its rename, a failing fsync) the tests inject under every command that
// reads or writes through an Env (segment_reader/env.h). Test code: the product never links it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "segment_reader/env.h"

namespace klf {

// Reads: a fault is set on the files whose path ends with a suffix ("" matches every file). A file
// with a fault is never mapped (ReadableFile::Map says "read it"), so readers that map take its bytes
// through Read, where the fault strikes: as a failing disk, or a file truncated after it was opened.
//
// Writes: its files buffer appends as Env::Default()'s do (kWritableFileBufferBytes), and the faults below
// strike the buffered writes where write(2) would fail: when a full buffer or a large append is
// written out, or at Flush/Sync/Close. So a fault can surface after the Append that caused it, as a
// real full disk does.
class FaultInjectionEnv : public Env {
 public:
  explicit FaultInjectionEnv(Env* base) : base_(base) {}

  // Reads of the file whose path ends with `suffix` fail with EIO from byte `at` on: a read that ends
  // before `at` succeeds, one that reaches it returns the bytes before it and then fails, naming the
  // file and byte `at` ("<path>: read at byte <at>: Input/output error (simulated)").
  void FailRead(std::string suffix, uint64_t at = 0) { read_faults_.push_back({std::move(suffix), at, false}); }
  // The file whose path ends with `suffix` ends at byte `at` while it is read: its size at open is
  // the whole file's, but reads find the end at `at` (it shrank after it was opened).
  void ShrinkFile(std::string suffix, uint64_t at) { read_faults_.push_back({std::move(suffix), at, true}); }
  // Opening (or probing) the file whose path ends with `suffix` fails: the file exists and cannot be
  // read ("<path>: Permission denied (simulated)", InputFailure::kUnreadable).
  void FailOpen(std::string suffix) { open_fault_suffixes_.push_back(std::move(suffix)); }
  // Inputs opened and ReadableFile::Read calls made through this Env: proof that a reader uses it.
  uint64_t files_opened() const { return files_opened_.load(); }
  uint64_t read_calls() const { return read_calls_.load(); }

  // A write of the file whose path ends with `suffix` (empty: any file) writes only half of its
  // data and fails with "short write".
  void FailShortWrite(std::string suffix) {
    short_write_suffix_ = std::move(suffix);
    short_write_ = true;
  }
  // After `bytes` more bytes have been written in total, writes fail with ENOSPC.
  void FailAfterBytes(uint64_t bytes) {
    bytes_left_ = bytes;
    limit_bytes_ = true;
  }
  // Simulates a crash: after `n` more successful renames every operation fails, and nothing is
  // cleaned up (destructors of StagedDirectory/AtomicFile see a dead Env and leave files as they are,
  // as a killed process would).
  void CrashAfterRenames(int n) {
    renames_left_ = n;
    crash_on_rename_ = true;
  }
  bool crashed() const { return crashed_; }
  // Every fsync from now on (a file's Sync, SyncDir, SyncFileSystem) fails with EIO.
  void FailSync() { fail_sync_ = true; }
  // Writes that reached the base Env's files (after buffering), and their bytes: what write(2)
  // calls a run would make.
  uint64_t write_calls() const { return write_calls_; }
  uint64_t bytes_written() const { return bytes_written_; }

  std::unique_ptr<ReadableFile> NewReadableFile(const std::string& path, std::string* error,
                                                InputFailure* failure = nullptr) override;
  bool ProbeReadableFile(const std::string& path, InputFileInfo* info, std::string* error,
                         InputFailure* failure = nullptr) override;
  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path, std::string* error) override;
  bool RenameFile(const std::string& from, const std::string& to, std::string* error) override;
  bool RemoveFile(const std::string& path, std::string* error) override;
  bool CreateDir(const std::string& path, std::string* error) override;
  bool CreateUniqueDir(const std::string& prefix, std::string* path, std::string* error) override;
  bool RemoveDirRecursively(const std::string& path, std::string* error) override;
  bool SyncDir(const std::string& path, std::string* error) override;
  bool SyncFileSystem(const std::string& path, std::string* error) override;
  // The copy is charged as one write of the file's size (a short write or ENOSPC leaves what fitted).
  // A read fault on `from` fails the copy as the read would (nothing is written).
  bool CopyFile(const std::string& from, const std::string& to, std::string* error) override;
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  bool IsNonEmptyDir(const std::string& path) override { return base_->IsNonEmptyDir(path); }
  bool SetMtimeMs(const std::string& path, int64_t mtime_ms, std::string* error) override;

  // Internal (used by the wrapped files).
  bool Crashed(std::string* error);
  bool SyncFails(const std::string& path, std::string* error);
  bool ChargeWrite(const std::string& path, size_t* n, std::string* error);
  void CountRead() { ++read_calls_; }

  struct ReadFault {
    std::string suffix;
    uint64_t at = 0;
    bool shrink = false;  // the file ends at `at` (else: EIO from `at` on)
  };

 private:
  const ReadFault* FindReadFault(const std::string& path) const;
  bool OpenFails(const std::string& path, std::string* error, InputFailure* failure);
  bool ChargeBytes(const std::string& path, size_t* n, std::string* error);

  Env* base_;
  std::string short_write_suffix_;
  bool short_write_ = false;
  uint64_t bytes_left_ = 0;
  bool limit_bytes_ = false;
  int renames_left_ = 0;
  bool crash_on_rename_ = false;
  bool crashed_ = false;
  bool fail_sync_ = false;
  uint64_t write_calls_ = 0;
  uint64_t bytes_written_ = 0;
  std::vector<ReadFault> read_faults_;
  std::vector<std::string> open_fault_suffixes_;
  std::atomic<uint64_t> files_opened_{0};
  std::atomic<uint64_t> read_calls_{0};
};

}  // namespace klf
