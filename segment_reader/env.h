// The one place klf touches the file system for its outputs (LevelDB's Env idea): creating, writing,
// copying, renaming and removing files and directories, and making them durable. Every output goes
// through an Env, so tests can swap in segment_writer's FaultInjectionEnv (the compactor and the
// simulator take one in their options). Env::Default() is the POSIX implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "segment_reader/bytes.h"

namespace klf {

// A file open for appending. Every method returns false with *error ("<path>: <what failed>") on
// failure; after a failure the file is unusable.
//
// Appends may be buffered in memory: Env::Default()'s files keep up to kWritableFileBufferBytes
// (LevelDB's PosixWritableFile buffer), so appending a 10 KiB batch costs a memcpy, not a write(2)
// system call (expensive on the VM klf is measured on, docs/PERFORMANCE.md). Buffered bytes reach the file at Flush,
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
// buffer is one page-aligned write. Not larger: the buffer must stay in the CPU's L2 cache (1 MiB
// here) next to the reader's buffer, or the kernel's copy out of it reads memory again; measured
// (1 GiB, 10 KiB batches, pread input): 256 KiB 0.47 CPU-s, 1 MiB 1.0 CPU-s, unbuffered 0.96.
// Appends of at least this size are written directly (no copy).
inline constexpr size_t kWritableFileBufferBytes = size_t(256) << 10;

// `base` behind a write buffer of `capacity` bytes (what Env::Default()'s files are; FaultInjectionEnv
// puts one above its faults).
std::unique_ptr<WritableFile> NewBufferedWritableFile(std::unique_ptr<WritableFile> base, size_t capacity);

class Env {
 public:
  virtual ~Env() = default;
  // The process-wide POSIX implementation.
  static Env* Default();

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
