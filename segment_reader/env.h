// The one place klf touches the file system (LevelDB's Env idea), for its inputs and its outputs.
//
// Reads: opening an input (NewReadableFile: regular files only, read-only, never a hang on a FIFO; a
// path into a capture is a member of the archive), reading it by position (ReadableFile::Read, pread
// style), mapping it whole (ReadableFile::Map) and asking whether it can be read (ProbeReadableFile).
// segment_reader/file.h's readers (MappedFile, StreamedFile, ReadSmallFile, OpenInputReader,
// ProbeInputFile) go through an Env given to them, Env::Default() unless told otherwise.
// Writes: creating, writing, copying, renaming and removing files and directories, and making them
// durable. Every output goes through an Env.
// Tests swap in FaultInjectionEnv (tests/support/fault_injection_env.h: a read that fails with EIO at
// a byte position, a file that ends early, a short write, a full disk, a failed fsync, a crash before a
// rename); the loaders (ReadOptions::env, LoadOptions::env), the compactor and the simulator take one in their
// options; salvage, reindex and repair read and write through the one they are given.
// Env::Default() is the POSIX implementation: the system calls of segment_reader/file.cc (open with
// O_NONBLOCK and fstat, pread, mmap of files above kReadSmallFileBytes) and capture.h's members.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "segment_reader/bytes.h"

namespace klf {

// Why an input file could not be used.
enum class InputFailure {
  kNone,
  kMissing,     // no directory entry (ENOENT, ENOTDIR): the caller decides whether absence is normal
  kUnreadable,  // exists but cannot be read: not a regular file, a symlink loop or dangling symlink,
                // no permission, an I/O error. Never the same as absent.
  kTooLarge,    // ReadSmallFile: larger than the cap for its kind (not a file Kafka writes)
};

// What fstat said about an open input.
struct InputFileInfo {
  uint64_t size = 0;
  int64_t mtime_ms = 0;  // modification time in epoch milliseconds
};

// A whole input held read-only in memory without a copy (ReadableFile::Map): an mmap(2) of the file, or
// of the archive around an uncompressed capture member, or a cached member's bytes. `keep` holds them
// (the last copy unmaps them); `mapping` says the bytes are pages of a file mapping, which
// file.h's ReleaseMappedPages may hand back.
struct MappedRegion {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  bool mapping = false;
  std::shared_ptr<const void> keep;
};

// An input open for reading (Env::NewReadableFile). Size and modification time are those at open.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  virtual const std::string& path() const = 0;
  virtual uint64_t size() const = 0;
  virtual int64_t mtime_ms() const = 0;
  // A member of a capture (capture.h) rather than a file of its own: read-rate accounting
  // (read_throttle.h) charges files only.
  virtual bool in_capture() const { return false; }
  // pread(2): reads up to n bytes at `pos` into `out`; *got is the count, below n only where the file
  // ends (0 at or past its end: it may have shrunk since open). False with *error = "<path>: read at byte
  // <position>: <why>" on an I/O error.
  virtual bool Read(uint64_t pos, uint64_t n, uint8_t* out, uint64_t* got, std::string* error) = 0;
  // The whole file in memory without a copy (mmap). False with *error empty when this file is not held
  // that way (a compressed capture member that is not cached; a file with injected faults): the caller
  // reads it with Read. False with *error set on a failure.
  virtual bool Map(MappedRegion* /*region*/, std::string* /*error*/) { return false; }
  // Announces a front-to-back read (posix_fadvise POSIX_FADV_SEQUENTIAL).
  virtual void AdviseSequential() {}
  // The ranges [begin, end) of the file that hold data, ascending: holes of a sparse file (SEEK_DATA,
  // SEEK_HOLE) read as zeros, so a reader looking for the last non-zero byte skips them unread. By
  // default (and where the file system cannot say) the whole file is one range.
  virtual void DataRegions(std::vector<std::pair<uint64_t, uint64_t>>* regions) { regions->assign(1, {0, size()}); }
};

// A file open for appending. Every method returns false with *error ("<path>: <what failed>") on
// failure; after a failure the file is unusable.
//
// Appends may be buffered in memory: Env::Default()'s files keep up to kWritableFileBufferBytes
// (LevelDB's PosixWritableFile buffer), so appending a 10 KiB batch costs a memcpy, not a write(2)
// system call (expensive on some hosts: docs/PERFORMANCE.md). Buffered bytes reach the file at Flush,
// Sync and Close. Hence (1) a write error (a full disk) may be reported by a later Append, Flush, Sync or Close than
// the Append that caused it, and (2) nothing may read the file (open, map, stat its size) before it was flushed or
// closed. A file destroyed without Close loses its buffered bytes, as a killed process would (AtomicFile removes such a
// file anyway).
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual bool Append(Bytes data, std::string* error) = 0;
  // Hands buffered bytes to the file (write(2)); not durable until Sync. Unbuffered files: no-op.
  virtual bool Flush(std::string* /*error*/) { return true; }
  // Flush, then fsync.
  virtual bool Sync(std::string* error) = 0;
  // Flush, then close. The file is closed even when the flush fails.
  virtual bool Close(std::string* error) = 0;
  virtual const std::string& path() const = 0;
};

// Buffer size of Env::Default()'s files (and of FaultInjectionEnv's): 256 KiB, so a 1 GiB segment
// takes ~4,100 write(2) calls instead of one per batch (~99,000 for 10 KiB batches), and a full
// buffer is one page-aligned write. Not larger: the buffer must stay in the CPU's L2 cache next to
// the reader's buffer, or the kernel's copy out of it reads memory again (measured: docs/PERFORMANCE.md,
// "1 MiB buffer ... slower"). Appends of at least this size are written directly (no copy).
inline constexpr size_t kWritableFileBufferBytes = size_t(256) << 10;

// `base` behind a write buffer of `capacity` bytes (what Env::Default()'s files are; FaultInjectionEnv
// puts one above its faults).
std::unique_ptr<WritableFile> NewBufferedWritableFile(std::unique_ptr<WritableFile> base, size_t capacity);

class Env {
 public:
  virtual ~Env() = default;
  // The process-wide POSIX implementation.
  static Env* Default();

  // ---- Reads (inputs: never opened for writing).
  // Opens an input: O_RDONLY|O_NONBLOCK|O_CLOEXEC, then fstat; only a regular file is an input (a
  // FIFO, a device, a socket, a directory, a symlink loop or dangling symlink, no permission: an error
  // naming the file, *failure kUnreadable; no directory entry: kMissing). A path into a capture opens
  // the member. nullptr with *error = "<path>: <why>" and *failure (when not null) on failure.
  // Both read methods are POSIX's (file.h's NewPosixReadableFile, ProbePosixInput) unless overridden.
  virtual std::unique_ptr<ReadableFile> NewReadableFile(const std::string& path, std::string* error,
                                                        InputFailure* failure = nullptr);
  // Whether `path` can be read as an input, as NewReadableFile decides (without reading it: one
  // stat(2) when it is a readable regular file), and its size and mtime.
  virtual bool ProbeReadableFile(const std::string& path, InputFileInfo* info, std::string* error,
                                 InputFailure* failure = nullptr);

  // ---- Writes.

  // Creates (truncating) a file for writing, mode 0644.
  virtual std::unique_ptr<WritableFile> NewWritableFile(const std::string& path, std::string* error) = 0;
  virtual bool RenameFile(const std::string& from, const std::string& to, std::string* error) = 0;
  virtual bool RemoveFile(const std::string& path, std::string* error) = 0;
  // mkdir, mode 0755; fails if it exists.
  virtual bool CreateDir(const std::string& path, std::string* error) = 0;
  // Creates a fresh directory named `prefix` + 6 random characters (mkdtemp); *path receives it.
  virtual bool CreateUniqueDir(const std::string& prefix, std::string* path, std::string* error) = 0;
  // Removes a directory and everything below it (used to discard staging directories).
  virtual bool RemoveDirRecursively(const std::string& path, std::string* error) = 0;
  // fsync of a directory, making renames and creations in it durable.
  virtual bool SyncDir(const std::string& path, std::string* error) = 0;
  // syncfs(2): everything written to the file system holding `path`, in one call.
  virtual bool SyncFileSystem(const std::string& path, std::string* error) = 0;
  // Copies the input file `from` (opened as segment_reader/file.h's OpenInputFile opens inputs: a FIFO or
  // a directory is an error, never a hang) to `to` (created or replaced, mode 0644), with `from`'s
  // modification time. Not durable until synced.
  virtual bool CopyFile(const std::string& from, const std::string& to, std::string* error) = 0;
  virtual bool FileExists(const std::string& path) = 0;
  // Directory exists and holds at least one entry.
  virtual bool IsNonEmptyDir(const std::string& path) = 0;
  // Sets the modification time (ms since epoch); the cleaner gives cleaned segments the mtime of the
  // group's last source segment (cleaner spec §6.2 step 5).
  virtual bool SetMtimeMs(const std::string& path, int64_t mtime_ms, std::string* error) = 0;
};

}  // namespace klf
