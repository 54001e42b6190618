// Read-only access to input files: the readers every command opens data it did not write with.
//
// The readers below read through an Env (segment_reader/env.h; Env::Default() when none is given, the
// POSIX one described here), so tests can inject read faults (tests/support/fault_injection_env.h).
// Env::Default() opens every real input with OpenInputFile: O_RDONLY|O_NONBLOCK|O_CLOEXEC, then fstat before any read.
// Only regular files are inputs. A FIFO, a device, a socket, a directory, a symlink loop or a file
// without read permission is an error naming the file -- never a hang (opening a FIFO without
// O_NONBLOCK waits for a writer; reading it waits for data), never "absent". Symlinks to regular files
// are followed: copies of broker data often use them. On top of it: MappedFile maps a file read-only
// (PROT_READ, MAP_PRIVATE) for random access; StreamedFile reads it front to back with pread(2) into one
// reused buffer, which is the faster of the two for a sequential walk on machines where page faults are
// expensive (docs/PERFORMANCE.md); ReadSmallFile reads a metadata file whole under a size cap. Input
// files are never opened for writing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "segment_reader/bytes.h"
#include "segment_reader/capture.h"
#include "segment_reader/env.h"

namespace klf {

// Opens `path` for reading as described above and returns the descriptor (the caller closes it), or
// -1 with *error = "<path>: <why>" and *failure set (when not null). POSIX only: Env::Default()'s
// NewReadableFile uses it; a reader that takes an Env opens its input through the Env instead.
// A path into a capture (segment_reader/capture.h) has no descriptor of its own: it is an error
// ("a member of a capture") -- read it with MappedFile, StreamedFile or ReadSmallFile.
int OpenInputFile(const std::string& path, InputFileInfo* info, std::string* error, InputFailure* failure = nullptr);

// Whether `path` can be read as an input, as OpenInputFile decides (then closes it), for real paths
// and members of captures alike (Env::ProbeReadableFile; env null: Env::Default()).
bool ProbeInputFile(const std::string& path, InputFileInfo* info, std::string* error, InputFailure* failure = nullptr,
                    Env* env = nullptr);

// Env::Default()'s read side (env.cc forwards to these): an input as OpenInputFile opens it, or a
// capture member; ProbeInputFile's question without an Env.
std::unique_ptr<ReadableFile> NewPosixReadableFile(const std::string& path, std::string* error, InputFailure* failure);
bool ProbePosixInput(const std::string& path, InputFileInfo* info, std::string* error, InputFailure* failure);

// "a FIFO", "a directory", "a character device", ... for a st_mode that is not a regular file.
const char* FileTypeName(mode_t mode);

// Size caps of ReadSmallFile for the metadata files (checkpoints, properties, producer snapshots):
// each is far above what Kafka writes (a checkpoint line per partition of the broker, a snapshot
// entry per producer) and far below what would hurt to read whole.
constexpr uint64_t kMaxMetadataFileBytes = uint64_t(64) << 20;

// Up to this size MappedFile reads a file into memory (one pread(2)) instead of mapping it (mmap(2)
// and munmap(2)), and an index file is read whole (segment_reader/index_files.cc): producer
// snapshots, checkpoints and the indexes of small segments cost fewer system calls.
constexpr uint64_t kReadSmallFileBytes = uint64_t(64) << 10;

// How the sequential readers (StreamedFile, WindowReader, the compactor's look-ahead) take the bytes of
// a file: copied into a reused buffer with pread(2), or read in place from a guarded read-only mapping
// (no copy: each page is faulted in, and the pages passed are handed back). Hosts differ on which costs
// less (docs/PERFORMANCE.md "Machine": on one a mapped page cost 2.5 us more than a copied one, on
// another the mapped walk took half the time), so it is measured on the host, on the work itself: the
// first file of at least kReadMethodTrialMinBytes a process reads front to back is the trial, read with
// pread up to its middle and from a mapping after it; the CPU time of the reading thread per byte (the
// reader's own work on the bytes included) decides for the rest of the process: the mapping when it
// was at least 25% cheaper, else pread (on the host of docs/PERFORMANCE.md the halves differ by 5-30%
// with the command and the run, whole commands by -11% to +8%: pread, which no shrinking file can take
// away, unless the mapping clearly wins). Smaller files, members of captures, and everything read
// before the decision: pread. KLF_READ_METHOD=pread or =map sets the method instead, for files of every size
// (benchmarks; a run of the tests through the mapped path; a host where the trial misleads);
// KLF_READ_METHOD_LOG=1 prints the decision and its two costs on stderr.
enum class ReadMethod { kPread, kMap };
constexpr uint64_t kReadMethodTrialMinBytes = uint64_t(16) << 20;
enum class ReadPlacement { kPread, kMap, kTrial };
// How to read `file` (open) front to back.
ReadPlacement PlaceRead(ReadableFile* file);
// The trial's timing, kept by the reader that got ReadPlacement::kTrial: Before(pos) ahead of each read
// (true: switch to the mapping now), After(end) after it; the result counts when the file was read front
// to back to its end on one thread, else (a jump, or destroyed early) the next large file is the trial.
class ReadTrial {
 public:
  explicit ReadTrial(uint64_t size);
  ~ReadTrial();
  ReadTrial(const ReadTrial&) = delete;
  ReadTrial& operator=(const ReadTrial&) = delete;
  bool Before(uint64_t pos);
  void After(uint64_t end);

 private:
  void Finish(bool at_end);  // at_end: the file was read to its end
  uint64_t size_;
  uint64_t from_ = 0;
  uint64_t switched_at_ = 0;
  uint64_t last_pos_ = 0;  // the last read's position and the furthest end read
  uint64_t last_end_ = 0;
  bool skipped_ = false;  // not read front to back: no measurement
  double start_ = -1;
  double switch_time_ = 0;
  std::thread::id thread_;
  bool done_ = false;
};
// The method decided so far (nullopt: none yet).
std::optional<ReadMethod> DecidedReadMethod();
const char* ReadMethodName(ReadMethod method);
// Tests: every later PlaceRead follows `method` for files of every size (nullopt: undecided again, the
// trial taken on the first file of at least `trial_min_bytes`).
void SetReadMethodForTesting(std::optional<ReadMethod> method, uint64_t trial_min_bytes = kReadMethodTrialMinBytes);

// Each of the three readers below also reads a member of a capture (segment_reader/capture.h) when
// `path` runs through an archive: MappedFile maps it in place from an uncompressed .tar, or holds it in
// memory (a cached small member, or one read whole up to kMaxCaptureMemberInMemoryBytes); StreamedFile
// preads it in place or streams it; ReadSmallFile reads it under the same cap as a file's.
class MappedFile {
 public:
  // Opens `path` read-only through `env` (null: Env::Default()). On failure returns nullptr and sets
  // *error ("<path>: <strerror>"; a read error names the byte position). A file the Env does not map
  // (ReadableFile::Map) is read whole into memory.
  static std::unique_ptr<MappedFile> Open(const std::string& path, std::string* error, Env* env = nullptr);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  Bytes data() const { return {data_, size_}; }
  uint64_t size() const { return size_; }
  // Modification time in epoch milliseconds (the cleaner uses it for legacy tombstones).
  int64_t mtime_ms() const { return mtime_ms_; }
  // Tells the kernel the file will be read front to back (readahead; pages dropped behind).
  void AdviseSequential() const;
  // Whether the file shrank under the mapping while it was read: a read past its new end found no page.
  // Such a read does not crash (no SIGBUS reaches the process: GuardMapping below); it reads zeros,
  // which are not the file's content, so a reader that finds this true must not use what it read.
  bool changed() const;
  // True while !changed(); else false with *error naming the file and what happened.
  bool Unchanged(std::string* error) const;
  // `file` (already open as `path`) mapped, guarded and registered for ReleaseMappedPages; nullptr
  // when it is empty or its Env does not map it (*error set only on a failure of mmap itself).
  static std::unique_ptr<MappedFile> MapOnly(const std::string& path, ReadableFile* file, std::string* error);

 private:
  MappedFile() = default;
  bool ReadWhole(ReadableFile* file, std::string* error);
  void Hold(MappedRegion region);  // a mapping: guarded and registered
  std::string path_;
  int guard_ = -1;        // its GuardedMapping slot, or -1
  bool mapping_ = false;  // data_ is a file mapping, in the registry of ReleaseMappedPages (else bytes in memory)
  std::shared_ptr<const void> keep_;  // holds the bytes: the mapping (unmapped with it) or memory
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  int64_t mtime_ms_ = 0;
};

// Sequential reading of a file with pread(2) into one reused buffer: the other way in, for code
// that handles one piece at a time front to back. On machines where mapping a page costs more than
// copying it (docs/PERFORMANCE.md measures such a host) it is the faster one, and resident memory is the
// buffer whatever the file size.
class StreamedFile {
 public:
  static constexpr uint64_t kDefaultChunk = uint64_t(1) << 20;
  // Opens `path` read-only through `env` (null: Env::Default()). On failure returns nullptr and sets
  // *error ("<path>: <strerror>").
  static std::unique_ptr<StreamedFile> Open(const std::string& path, std::string* error, uint64_t chunk = kDefaultChunk,
                                            Env* env = nullptr);
  ~StreamedFile();
  StreamedFile(const StreamedFile&) = delete;
  StreamedFile& operator=(const StreamedFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }  // at open
  int64_t mtime_ms() const { return mtime_ms_; }

  // Makes bytes [pos, pos + n) of the file available and returns a pointer to them, valid until the
  // next Fetch. Reads ahead a chunk at a time; bytes already buffered at or after `pos` are kept, so
  // a front-to-back walk reads every byte once. The buffer grows to n when n exceeds the chunk (the
  // caller bounds n). Returns nullptr and sets *error on an I/O error or when the file ends first
  // (it shrank since Open).
  const uint8_t* Fetch(uint64_t pos, uint64_t n, std::string* error);
  // The mapping the file is read in place from (PlaceRead), or null: its MappedFile::changed says whether
  // the file shrank under it (what was fetched since may be zeros, not the file).
  const MappedFile* mapping() const { return map_.get(); }

 private:
  StreamedFile() = default;
  const uint8_t* FetchMapped(uint64_t pos, uint64_t n, std::string* error);
  const uint8_t* FetchRead(uint64_t pos, uint64_t n, std::string* error);
  std::string path_;
  std::unique_ptr<ReadableFile> file_;
  bool charged_ = false;  // reads count against the read-rate cap (a file, not a capture member)
  uint64_t size_ = 0;
  int64_t mtime_ms_ = 0;
  uint64_t chunk_ = kDefaultChunk;
  std::unique_ptr<uint8_t[]> buffer_;
  uint64_t capacity_ = 0;
  uint64_t buffer_pos_ = 0;           // file position of buffer_[0]
  uint64_t buffered_ = 0;             // valid bytes in buffer_
  std::unique_ptr<MappedFile> map_;   // when read in place
  std::unique_ptr<ReadTrial> trial_;  // when this file is the read-method trial (pread, then the mapping)
  uint64_t charged_to_ = 0;           // mapped: bytes charged to the read-rate cap, as pread would have read them
  uint64_t released_ = 0;             // mapped: pages before this position were handed back
};

// Random access to an input (real file or capture member) for readers that pread by position, through
// `env` (null: Env::Default(), where a real file is opened by OpenInputFile and read with pread(2) and a
// capture member is read as capture.h describes). Read is exact: a file that ends first is an error
// naming the position. nullptr with *error (and *failure) as OpenInputFile.
std::unique_ptr<CaptureMemberReader> OpenInputReader(const std::string& path, InputFileInfo* info, std::string* error,
                                                     InputFailure* failure = nullptr, Env* env = nullptr);

// Windows of an input read by position into one reused buffer (Kafka's FileRecords.readInto, as the
// log cleaner reads a segment): OpenInputReader's pread(2) for a real file, the capture's reader for
// a member. No mapping is kept: mapping a page can cost more than copying it (docs/PERFORMANCE.md),
// and mapped pages would count in resident memory, which the cleaner keeps near its buffers.
class WindowReader {
 public:
  // Opens `path` read-only through `env` (null: Env::Default()); `size` is the length seen when the
  // log was loaded.
  bool Open(const std::string& path, uint64_t size, std::string* error, Env* env = nullptr);
  // Bytes [pos, pos + min(n, size - pos)), valid until the next Read. An error if the file is
  // shorter than `size` (it changed underneath us).
  bool Read(uint64_t pos, size_t n, Bytes* out, std::string* error);
  uint64_t size() const { return size_; }

 private:
  bool ReadWindow(uint64_t pos, size_t n, Bytes* out, std::string* error);
  std::unique_ptr<CaptureMemberReader> input_;
  uint64_t size_ = 0;
  std::unique_ptr<uint8_t[]> buffer_;
  size_t capacity_ = 0;
  ReadableFile* file_ = nullptr;      // read through input_ (which owns it); mapped at the trial's switch
  std::unique_ptr<MappedFile> map_;   // when read in place (PlaceRead)
  std::unique_ptr<ReadTrial> trial_;  // when this file is the read-method trial
  uint64_t released_ = 0;
};

// A read-only mapping of an input that may shrink while it is read. A page of a file mapping that lies
// wholly past the file's end (another process truncated it: a follower truncating its log, a preallocated
// segment trimmed at roll) raises SIGBUS when read, which would kill klf. A guarded mapping is answered
// instead: the first such fault maps zero pages over the rest of the mapping and marks it changed
// (GuardedMappingChanged), and the read goes on. A fault outside every guarded mapping takes the
// process's previous SIGBUS disposition. GuardMapping installs the handler on first use and returns a
// slot, or -1 when all slots are taken (the mapping is then unguarded, as it was before).
int GuardMapping(const uint8_t* begin, uint64_t size);
void UnguardMapping(int slot);
bool GuardedMappingChanged(int slot);

// Unmaps from this process the whole pages of [begin, end) that lie inside a live MappedFile's
// mapping (madvise MADV_DONTNEED). The page cache keeps them and a later access maps them back with
// the same bytes, so views into them stay valid; it only keeps resident memory flat while a large
// file is read front to back. Memory that is not part of a MappedFile is left alone.
void ReleaseMappedPages(const uint8_t* begin, const uint8_t* end);

// Reads a whole small file (checkpoints, properties, snapshots) through `env` (null: Env::Default(),
// which opens it with OpenInputFile) with a size cap, checked with fstat before any byte is read (and
// again while reading, in case the file grows; a file that ends before that size is unreadable).
// Returns false and sets *error ("<path>: <why>") and
// *failure (when not null) when it is missing, cannot be read or is larger than `max_bytes`.
bool ReadSmallFile(const std::string& path, uint64_t max_bytes, std::string* contents, std::string* error,
                   InputFailure* failure = nullptr, Env* env = nullptr);

}  // namespace klf
