// Captures: `.tar`, `.tar.gz`/`.tgz`, `.tar.zst`/`.tzst` and `.zip` archives of broker log
// directories, read as they arrive (issue 19), never unpacked to disk.
//
// A path that runs through an archive -- `cap.tar.zst`, `cap.tar.zst/broker1`,
// `cap.tar.zst/broker1/foo-0/00000000000000000000.log` -- names the archive's root or a member, and
// every reader of klf (file.h: MappedFile, StreamedFile, ReadSmallFile, StatInput; layout.h's
// listings) takes it where it takes a real path. Printed paths keep that form, so findings read
// `cap.tar.zst/broker1/foo-0/...`.
//
// Opening an archive makes ONE pass over its headers (OpenCapture, cached per process) that
//   - refuses the whole archive, naming the member, when a member name could escape it or is not a
//     plain file or directory: an absolute name, a `..` component, a symbolic link, a hard link, a
//     device, a FIFO, a socket, a sparse or encrypted member, a name given twice (or a file that is
//     also a directory), a name with control bytes or a backslash (printed escaped), a name over
//     4096 bytes, more than kMaxCaptureMembers members;
//   - builds a virtual directory tree (name, size, mtime, type) from the names (`./` and repeated
//     slashes dropped; directories implied by member names exist);
//   - for an uncompressed `.tar`, records where each member's bytes start in the archive file, so a
//     member is read in place (mmap or pread of the archive at that offset: nothing is copied);
//   - for a compressed archive, keeps the bytes of small members (at most kCaptureCacheMemberBytes
//     each, kCaptureCacheBudgetBytes for the whole process) in memory: checkpoints, snapshots,
//     indexes, meta.properties and the segments of a small capture are then read without a second
//     decompression.
// A compressed member that is not cached is streamed: libarchive decompresses the archive from its
// start to the member, then forward; a reader that goes backwards re-opens it. A reader that needs a
// member whole (MappedFile) gets it in memory up to kMaxCaptureMemberInMemoryBytes; a larger one is
// an error naming the member ("unpack it, or use an uncompressed .tar, which is read in place").
// A reader that is done leaves its stream open (a few are kept), and a reader of a later member reads
// on from the nearest one before it, so members read in archive order cost one decompression; a member
// that lies before every kept stream re-decompresses the archive's prefix. For repeated runs over a big
// compressed capture, decompress it once (`zstd -d cap.tar.zst` gives `cap.tar`, read in place).
//
// Nothing of an archive is ever written anywhere. Every build, the static `make package` one included,
// reads captures.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace klf {

constexpr uint64_t kMaxCaptureMembers = 1000000;
constexpr uint64_t kCaptureCacheMemberBytes = uint64_t(16) << 20;
constexpr uint64_t kCaptureCacheBudgetBytes = uint64_t(256) << 20;
constexpr uint64_t kMaxCaptureMemberInMemoryBytes = uint64_t(1) << 30;

// Tests: the largest member cached from now on (kCaptureCacheMemberBytes by default; 0 caches none,
// so that every compressed member is streamed).
void SetCaptureCacheMemberBytesForTesting(uint64_t bytes);

// A file name that is an archive klf reads: ends with .tar, .tar.gz, .tgz, .tar.zst, .tzst or .zip
// (any case).
bool HasCaptureExtension(const std::string& name);

// Splits `path` at the first component that is a regular file with a capture extension:
// *archive = the path up to it, *member = the rest normalised ("" for the archive's root). False when
// no component is one (a real path).
bool SplitCapturePath(const std::string& path, std::string* archive, std::string* member);

struct CaptureMember {
  std::string name;  // normalised relative path: "broker1/foo-0/00000000000000000000.log"
  bool is_dir = false;
  uint64_t size = 0;
  int64_t mtime_ms = 0;
  uint64_t ordinal = 0;                       // position among the archive's headers (streaming finds it by it)
  int64_t data_offset = -1;                   // uncompressed .tar: where its bytes start in the archive file
  std::shared_ptr<const std::string> cached;  // compressed archives: the bytes of a small member
};

class Capture {
 public:
  const std::string& archive() const { return archive_; }
  bool in_place() const { return in_place_; }  // uncompressed tar: members read at data_offset
  // The member (file or directory) named `name` (normalised), or nullptr. "" is the root.
  const CaptureMember* Find(const std::string& name) const;
  // The names of the direct children of directory `dir` ("" for the root), sorted.
  std::vector<const CaptureMember*> Children(const std::string& dir) const;
  const std::vector<CaptureMember>& members() const { return members_; }

 private:
  friend class CaptureBuilder;
  std::string archive_;
  uint64_t archive_size_ = 0;
  bool in_place_ = false;
  std::vector<CaptureMember> members_;  // sorted by name; [0] is the root directory ("")
};

// Opens (once per process; later calls share it) and indexes the archive at `archive`. nullptr and
// *error = "<archive>: <why>" (naming the member and its byte position when a member is at fault).
std::shared_ptr<const Capture> OpenCapture(const std::string& archive, std::string* error);

// Reads a member's bytes front to back; Read at a position before the last one re-opens the archive.
// For in-place members it is a pread of the archive file.
class CaptureMemberReader {
 public:
  virtual ~CaptureMemberReader() = default;
  // Reads exactly n bytes at member position pos into out. False with *error naming the archive,
  // the member and the position.
  virtual bool Read(uint64_t pos, uint64_t n, uint8_t* out, std::string* error) = 0;
};
std::unique_ptr<CaptureMemberReader> OpenCaptureMember(const std::shared_ptr<const Capture>& capture,
                                                       const CaptureMember& member, std::string* error);

// "cap.tar.zst/broker1/foo-0/x.log" for error messages.
std::string CaptureMemberPath(const Capture& capture, const CaptureMember& member);

// ---------------------------------------------------------------------------------------------
// File-system questions that work on real paths and on paths into captures alike.

enum class InputKind { kMissing, kFile, kDir, kOther, kUnreadable };

struct InputStat {
  InputKind kind = InputKind::kMissing;
  uint64_t size = 0;
  int64_t mtime_ms = 0;
  std::string error;  // kUnreadable: "<path>: <why>" (a refused archive, for one)
};
// Follows symlinks (as std::filesystem::status does). A refused or unreadable archive on the path is
// kUnreadable with the archive's error.
InputStat StatInput(const std::string& path);

struct InputDirEntry {
  std::string name;
  InputKind kind = InputKind::kOther;  // kFile, kDir or kOther (a FIFO, device, socket, broken link)
  uint64_t size = 0;
};
// The entries of directory `path` (real or in a capture), unsorted. False with *error when it cannot
// be listed.
bool ListInputDir(const std::string& path, std::vector<InputDirEntry>* out, std::string* error);
// The same, looking up the sizes of only the regular files whose name `size_wanted` accepts (a
// stat(2) each in a real directory); the others are listed with size 0.
bool ListInputDir(const std::string& path, std::vector<InputDirEntry>* out, std::string* error,
                  const std::function<bool(std::string_view)>& size_wanted);

inline bool IsInputDir(const std::string& path) { return StatInput(path).kind == InputKind::kDir; }

}  // namespace klf
