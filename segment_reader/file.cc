#include "segment_reader/file.h"

#include "segment_reader/read_throttle.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

namespace klf {

namespace {
// Live mappings by start address, so ReleaseMappedPages never advises memory it does not own
// (MADV_DONTNEED on anonymous memory would zero it).
std::mutex g_mappings_mu;
std::map<const uint8_t*, uint64_t>& Mappings() {
  static auto* m = new std::map<const uint8_t*, uint64_t>();
  return *m;
}

// GuardMapping's slots, read by the SIGBUS handler: only lock-free atomics (a handler may not take a
// lock the interrupted thread could hold). A slot is claimed through `used`, then published by storing
// `begin` last; the handler looks only at slots whose `begin` is set.
struct GuardSlot {
  std::atomic<bool> used{false};
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> changed{false};
};
constexpr int kGuardSlots = 1024;
GuardSlot g_guard_slots[kGuardSlots];
struct sigaction g_previous_sigbus;
uintptr_t g_page_size = 4096;  // set before the handler is installed (sysconf is not for a handler)

// SIGBUS inside a guarded mapping: zero pages over the rest of it (the file's pages there are gone), and
// the mapping marked changed; the faulting read then goes on, reading zeros. mmap is a plain system call
// here, safe in a handler on Linux.
void OnSigbus(int sig, siginfo_t* info, void* context) {
  const uintptr_t page = g_page_size;
  const uintptr_t at = reinterpret_cast<uintptr_t>(info->si_addr);
  for (GuardSlot& slot : g_guard_slots) {
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || at < begin || at >= slot.end.load(std::memory_order_acquire)) continue;
    const uintptr_t from = at & ~(page - 1);
    const uintptr_t to = (slot.end.load(std::memory_order_acquire) + page - 1) & ~(page - 1);
    void* zeros =
        ::mmap(reinterpret_cast<void*>(from), to - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zeros == MAP_FAILED) break;
    slot.changed.store(true, std::memory_order_release);
    return;
  }
  // Not a guarded input: what the process did before (by default, the faulting read kills it).
  if ((g_previous_sigbus.sa_flags & SA_SIGINFO) != 0 && g_previous_sigbus.sa_sigaction != nullptr) {
    g_previous_sigbus.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN) {
    g_previous_sigbus.sa_handler(sig);
    return;
  }
  ::signal(SIGBUS, SIG_DFL);  // the read faults again on return, and the default action ends the process
}

void InstallSigbusHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_page_size = uintptr_t(::sysconf(_SC_PAGESIZE));
    struct sigaction action {};
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_sigbus);
  });
}

std::mutex g_read_method_mu;
std::optional<ReadMethod> g_read_method;  // decided once per process (PlaceRead)
bool g_forced_any_size = false;           // SetReadMethodForTesting: the method applies to files of every size
bool g_trial_running = false;             // a reader is running the trial
uint64_t g_trial_min_bytes = kReadMethodTrialMinBytes;

// The CPU time of this thread, in seconds (user and system: a page fault and a copy both count).
double ThreadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// KLF_READ_METHOD, read once: pread, map, or unset (measured).
std::optional<ReadMethod> ForcedReadMethod() {
  static const std::optional<ReadMethod> forced = []() -> std::optional<ReadMethod> {
    const char* v = std::getenv("KLF_READ_METHOD");
    if (v == nullptr) return std::nullopt;
    if (std::string(v) == "map") return ReadMethod::kMap;
    if (std::string(v) == "pread") return ReadMethod::kPread;
    return std::nullopt;
  }();
  return forced;
}

// The trial's outcome: CPU seconds of the reading thread and bytes read, each way. Decides the method
// when both halves are long enough to measure; else the next large file tries again.
void FinishTrial(double pread_seconds, uint64_t pread_bytes, double map_seconds, uint64_t map_bytes) {
  std::lock_guard<std::mutex> lock(g_read_method_mu);
  g_trial_running = false;
  if (g_read_method || pread_bytes < g_trial_min_bytes / 4 || map_bytes < g_trial_min_bytes / 4 || pread_seconds <= 0 ||
      map_seconds <= 0)
    return;
  const double pread_per_byte = pread_seconds / double(pread_bytes);
  const double map_per_byte = map_seconds / double(map_bytes);
  g_read_method = map_per_byte < 0.75 * pread_per_byte ? ReadMethod::kMap : ReadMethod::kPread;
  if (std::getenv("KLF_READ_METHOD_LOG") != nullptr) {
    std::fprintf(stderr,
                 "klf: read method %s (CPU per MiB read: pread %.3f ms over %llu MiB, mapped %.3f ms over %llu MiB)\n",
                 ReadMethodName(*g_read_method), pread_per_byte * 1048576e3, (unsigned long long)(pread_bytes >> 20),
                 map_per_byte * 1048576e3, (unsigned long long)(map_bytes >> 20));
  }
}

}  // namespace

ReadPlacement PlaceRead(ReadableFile* file) {
  if (file->in_capture() || file->size() == 0) return ReadPlacement::kPread;
  std::lock_guard<std::mutex> lock(g_read_method_mu);
  if (!g_read_method && ForcedReadMethod()) g_read_method = ForcedReadMethod();
  const bool any_size = g_forced_any_size || ForcedReadMethod().has_value();
  if (g_read_method && (any_size || file->size() >= g_trial_min_bytes))
    return *g_read_method == ReadMethod::kMap ? ReadPlacement::kMap : ReadPlacement::kPread;
  if (g_read_method || file->size() < g_trial_min_bytes || g_trial_running) return ReadPlacement::kPread;
  g_trial_running = true;
  return ReadPlacement::kTrial;
}

ReadTrial::ReadTrial(uint64_t size) : size_(size) {}

bool ReadTrial::Before(uint64_t pos) {
  if (done_) return false;
  if (start_ < 0) {
    start_ = ThreadCpuSeconds();
    thread_ = std::this_thread::get_id();
    from_ = last_pos_ = last_end_ = pos;
  }
  // Only a front-to-back walk measures: a read behind the last one, or past its end (a jump to the
  // offset index's last entry), voids the trial (its byte counts would not be the bytes read).
  if (pos < last_pos_ || pos > last_end_) skipped_ = true;
  last_pos_ = pos;
  if (switched_at_ == 0 && pos >= size_ / 2 && pos > from_) {
    switch_time_ = ThreadCpuSeconds();
    switched_at_ = pos;
    return true;
  }
  return false;
}

void ReadTrial::After(uint64_t end) {
  last_end_ = std::max(last_end_, end);
  if (done_ || end < size_) return;
  Finish(true);
}

void ReadTrial::Finish(bool at_end) {
  if (done_) return;
  done_ = true;
  const bool measured = at_end && !skipped_ && start_ >= 0 && switched_at_ > 0 && thread_ == std::this_thread::get_id();
  if (!measured) return FinishTrial(0, 0, 0, 0);
  const double now = ThreadCpuSeconds();
  FinishTrial(switch_time_ - start_, switched_at_ - from_, now - switch_time_, size_ - switched_at_);
}

ReadTrial::~ReadTrial() { Finish(false); }

std::optional<ReadMethod> DecidedReadMethod() {
  std::lock_guard<std::mutex> lock(g_read_method_mu);
  return g_read_method;
}

const char* ReadMethodName(ReadMethod method) { return method == ReadMethod::kMap ? "map" : "pread"; }

void SetReadMethodForTesting(std::optional<ReadMethod> method, uint64_t trial_min_bytes) {
  std::lock_guard<std::mutex> lock(g_read_method_mu);
  g_read_method = method;
  g_forced_any_size = method.has_value();
  g_trial_min_bytes = trial_min_bytes;
}

int GuardMapping(const uint8_t* begin, uint64_t size) {
  if (begin == nullptr || size == 0) return -1;
  InstallSigbusHandler();
  for (int i = 0; i < kGuardSlots; ++i) {
    GuardSlot& slot = g_guard_slots[i];
    bool expected = false;
    if (!slot.used.compare_exchange_strong(expected, true)) continue;
    slot.changed.store(false, std::memory_order_relaxed);
    slot.end.store(reinterpret_cast<uintptr_t>(begin) + size, std::memory_order_relaxed);
    slot.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
    return i;
  }
  return -1;
}

void UnguardMapping(int slot) {
  if (slot < 0 || slot >= kGuardSlots) return;
  GuardSlot& s = g_guard_slots[slot];
  s.begin.store(0, std::memory_order_release);
  s.end.store(0, std::memory_order_relaxed);
  s.used.store(false, std::memory_order_release);
}

bool GuardedMappingChanged(int slot) {
  return slot >= 0 && slot < kGuardSlots && g_guard_slots[slot].changed.load(std::memory_order_acquire);
}

static std::string ErrnoMessage(const std::string& path, int err) { return path + ": " + std::strerror(err); }

static int64_t MtimeMs(const struct stat& st) {
  return int64_t(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

const char* FileTypeName(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

// Why open(2) failed, in words that name the hostile cases (a loop, a dangling link) plainly.
static std::string OpenFailure(const std::string& path, int err, InputFailure* failure) {
  struct stat lst;
  if (err == ENOENT || err == ENOTDIR) {
    if (::lstat(path.c_str(), &lst) != 0) {
      *failure = InputFailure::kMissing;
      return ErrnoMessage(path, err);
    }
    // The entry is there: a symlink whose target is missing is a file that cannot be read, not an
    // absent one.
    *failure = InputFailure::kUnreadable;
    return path + ": a symbolic link to a missing file";
  }
  *failure = InputFailure::kUnreadable;
  if (err == ELOOP) return path + ": " + std::strerror(err) + " (a symbolic link loop)";
  return ErrnoMessage(path, err);
}

namespace {

// A path into a capture: *stat says what it is. False for a real path.
bool CaptureStat(const std::string& path, InputStat* stat) {
  std::string archive, member;
  if (!SplitCapturePath(path, &archive, &member)) return false;
  *stat = StatInput(path);
  return true;
}

// The member as an input file: false with *error and *failure unless it is a file of a capture.
bool CaptureMemberUsable(const std::string& path, const InputStat& st, std::string* error, InputFailure* failure) {
  switch (st.kind) {
    case InputKind::kFile: *failure = InputFailure::kNone; return true;
    case InputKind::kMissing:
      *failure = InputFailure::kMissing;
      *error = path + ": no such member in the capture";
      return false;
    case InputKind::kDir:
      *failure = InputFailure::kUnreadable;
      *error = path + ": a directory, not a regular file";
      return false;
    default:
      *failure = InputFailure::kUnreadable;
      *error = st.error.empty() ? path + ": cannot be read" : st.error;
      return false;
  }
}

// A member of a capture as an input (capture.h): read through the archive's member reader; mapped in
// place from an uncompressed .tar, or held as the cached bytes of a compressed archive's small member.
class MemberReadableFile : public ReadableFile {
 public:
  MemberReadableFile(std::string path, std::shared_ptr<const Capture> capture, const CaptureMember* member,
                     std::unique_ptr<CaptureMemberReader> reader)
      : path_(std::move(path)), capture_(std::move(capture)), member_(member), reader_(std::move(reader)) {}
  const std::string& path() const override { return path_; }
  uint64_t size() const override { return member_->size; }
  int64_t mtime_ms() const override { return member_->mtime_ms; }
  bool in_capture() const override { return true; }
  bool Read(uint64_t pos, uint64_t n, uint8_t* out, uint64_t* got, std::string* error) override {
    *got = 0;
    if (pos >= member_->size) return true;
    n = std::min(n, member_->size - pos);  // a member does not change size
    if (n > 0 && !reader_->Read(pos, n, out, error)) return false;
    *got = n;
    return true;
  }
  bool Map(MappedRegion* region, std::string* error) override {
    if (member_->cached) {
      region->data = reinterpret_cast<const uint8_t*>(member_->cached->data());
      region->size = member_->size;
      region->mapping = false;
      region->keep = member_->cached;
      return true;
    }
    if (member_->data_offset < 0) return false;  // compressed and not cached: to be read
    // An uncompressed .tar: map the archive's pages that hold the member, read-only, in place.
    int fd = ::open(capture_->archive().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      *error = ErrnoMessage(capture_->archive(), errno);
      return false;
    }
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    const uint64_t start = uint64_t(member_->data_offset) / page * page;
    const uint64_t delta = uint64_t(member_->data_offset) - start;
    const uint64_t len = member_->size + delta;
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, off_t(start));
    ::close(fd);
    if (p == MAP_FAILED) {
      *error = ErrnoMessage(path_, errno);
      return false;
    }
    region->data = static_cast<const uint8_t*>(p) + delta;
    region->size = member_->size;
    region->mapping = true;
    region->keep = std::shared_ptr<const void>(p, [len](const void* q) { ::munmap(const_cast<void*>(q), len); });
    return true;
  }

 private:
  std::string path_;
  std::shared_ptr<const Capture> capture_;
  const CaptureMember* member_;
  std::unique_ptr<CaptureMemberReader> reader_;
};

// Opens a capture member for reading (capture.h); nullptr with *error.
std::unique_ptr<ReadableFile> OpenMember(const std::string& path, std::string* error, InputFailure* failure) {
  std::string archive, name;
  SplitCapturePath(path, &archive, &name);
  std::shared_ptr<const Capture> capture = OpenCapture(archive, error);
  if (!capture) {
    *failure = InputFailure::kUnreadable;
    return nullptr;
  }
  const CaptureMember* m = capture->Find(name);
  InputStat st;
  st.kind = m == nullptr ? InputKind::kMissing : m->is_dir ? InputKind::kDir : InputKind::kFile;
  if (!CaptureMemberUsable(path, st, error, failure)) return nullptr;
  auto reader = OpenCaptureMember(capture, *m, error);
  if (!reader) {
    *failure = InputFailure::kUnreadable;
    return nullptr;
  }
  return std::make_unique<MemberReadableFile>(path, std::move(capture), m, std::move(reader));
}

// A real input opened by OpenInputFile: pread(2), mmap(2) of the whole file.
class PosixReadableFile : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd, const InputFileInfo& info)
      : path_(std::move(path)), fd_(fd), size_(info.size), mtime_ms_(info.mtime_ms) {}
  ~PosixReadableFile() override { ::close(fd_); }
  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }
  int64_t mtime_ms() const override { return mtime_ms_; }
  bool Read(uint64_t pos, uint64_t n, uint8_t* out, uint64_t* got, std::string* error) override {
    uint64_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, out + done, size_t(n - done), off_t(pos + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        *error = path_ + ": read at byte " + std::to_string(pos + done) + ": " + std::strerror(errno);
        *got = done;
        return false;
      }
      if (r == 0) break;  // the end of the file
      done += uint64_t(r);
    }
    *got = done;
    return true;
  }
  bool Map(MappedRegion* region, std::string* error) override {
    if (size_ == 0) return false;  // mmap of a zero-length file fails with EINVAL: nothing to read either
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (p == MAP_FAILED) {
      *error = ErrnoMessage(path_, errno);
      return false;
    }
    const uint64_t len = size_;
    region->data = static_cast<const uint8_t*>(p);
    region->size = size_;
    region->mapping = true;
    region->keep = std::shared_ptr<const void>(p, [len](const void* q) { ::munmap(const_cast<void*>(q), len); });
    return true;
  }
  void AdviseSequential() override { ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL); }
  void DataRegions(std::vector<std::pair<uint64_t, uint64_t>>* regions) override {
    regions->clear();
    for (uint64_t pos = 0; pos < size_;) {
      off_t data = ::lseek(fd_, off_t(pos), SEEK_DATA);
      if (data < 0) {
        if (errno == ENXIO) break;       // no data after pos
        regions->assign(1, {0, size_});  // SEEK_DATA unsupported: all of it is data
        break;
      }
      off_t hole = ::lseek(fd_, data, SEEK_HOLE);
      uint64_t to = hole < 0 ? size_ : std::min<uint64_t>(uint64_t(hole), size_);
      regions->emplace_back(uint64_t(data), to);
      pos = to;
    }
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
  int64_t mtime_ms_;
};

// CaptureMemberReader's exact reads over a ReadableFile (OpenInputReader).
class ExactReader : public CaptureMemberReader {
 public:
  explicit ExactReader(std::unique_ptr<ReadableFile> file) : file_(std::move(file)) {}
  bool Read(uint64_t pos, uint64_t n, uint8_t* out, std::string* error) override {
    uint64_t got = 0;
    if (!file_->Read(pos, n, out, &got, error)) return false;
    if (got < n) {
      *error =
          file_->path() + ": position " + std::to_string(pos + got) + ": file is shorter than when the log was loaded";
      return false;
    }
    return true;
  }

 private:
  std::unique_ptr<ReadableFile> file_;
};

Env* OrDefault(Env* env) { return env != nullptr ? env : Env::Default(); }

}  // namespace

std::unique_ptr<ReadableFile> NewPosixReadableFile(const std::string& path, std::string* error, InputFailure* failure) {
  InputFailure ignored;
  if (failure == nullptr) failure = &ignored;
  std::string archive, member;
  if (SplitCapturePath(path, &archive, &member)) return OpenMember(path, error, failure);
  InputFileInfo info;
  int fd = OpenInputFile(path, &info, error, failure);
  if (fd < 0) return nullptr;
  return std::make_unique<PosixReadableFile>(path, fd, info);
}

std::unique_ptr<CaptureMemberReader> OpenInputReader(const std::string& path, InputFileInfo* info, std::string* error,
                                                     InputFailure* failure, Env* env) {
  std::unique_ptr<ReadableFile> file = OrDefault(env)->NewReadableFile(path, error, failure);
  if (!file) return nullptr;
  info->size = file->size();
  info->mtime_ms = file->mtime_ms();
  file->AdviseSequential();
  return std::make_unique<ExactReader>(std::move(file));
}

bool ProbeInputFile(const std::string& path, InputFileInfo* info, std::string* error, InputFailure* failure, Env* env) {
  return OrDefault(env)->ProbeReadableFile(path, info, error, failure);
}

bool ProbePosixInput(const std::string& path, InputFileInfo* info, std::string* error, InputFailure* failure) {
  static const uid_t kEffectiveUid = ::geteuid();  // a system call each time otherwise
  InputFailure ignored;
  if (failure == nullptr) failure = &ignored;
  InputStat st;
  if (CaptureStat(path, &st)) {
    if (!CaptureMemberUsable(path, st, error, failure)) return false;
    info->size = st.size;
    info->mtime_ms = st.mtime_ms;
    return true;
  }
  // One stat(2) decides the common case, a regular file this process can read, as the open would:
  // the file's owner with its read bit, or faccessat(2)'s answer for anyone else (ACLs included).
  // Anything else (missing, not regular, not readable) is opened as before, so that each failure is
  // named exactly as OpenInputFile names it.
  struct stat rst;
  if (::stat(path.c_str(), &rst) == 0 && S_ISREG(rst.st_mode) &&
      ((rst.st_uid == kEffectiveUid && (rst.st_mode & S_IRUSR) != 0) ||
       ::faccessat(AT_FDCWD, path.c_str(), R_OK, AT_EACCESS) == 0)) {
    *failure = InputFailure::kNone;
    info->size = uint64_t(rst.st_size);
    info->mtime_ms = MtimeMs(rst);
    return true;
  }
  int fd = OpenInputFile(path, info, error, failure);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

int OpenInputFile(const std::string& path, InputFileInfo* info, std::string* error, InputFailure* failure) {
  InputFailure ignored;
  if (failure == nullptr) failure = &ignored;
  *failure = InputFailure::kNone;
  {
    InputStat st;
    if (CaptureStat(path, &st)) {
      if (CaptureMemberUsable(path, st, error, failure)) {
        *error = path + ": a member of a capture, which this reader cannot open; unpack the capture";
        *failure = InputFailure::kUnreadable;
      }
      return -1;
    }
  }
  // O_NONBLOCK: opening a FIFO read-only would otherwise wait for a writer. It changes nothing for a
  // regular file (Linux ignores it for reads and mappings of regular files), the only kind kept.
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    *error = OpenFailure(path, errno, failure);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    *error = ErrnoMessage(path, errno);
    *failure = InputFailure::kUnreadable;
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": " + FileTypeName(st.st_mode) + ", not a regular file";
    *failure = InputFailure::kUnreadable;
    ::close(fd);
    return -1;
  }
  info->size = uint64_t(st.st_size);
  info->mtime_ms = MtimeMs(st);
  return fd;
}

// Reads the whole file into memory (a small file, or one the Env does not map).
bool MappedFile::ReadWhole(ReadableFile* file, std::string* error) {
  std::shared_ptr<uint8_t[]> bytes(new uint8_t[size_]);
  uint64_t got = 0;
  if (!file->Read(0, size_, bytes.get(), &got, error)) return false;
  if (got < size_) {
    *error = path_ + ": the file ended at byte " + std::to_string(got) + " while it was read (it was " +
             std::to_string(size_) + " bytes when opened)";
    return false;
  }
  data_ = bytes.get();
  keep_ = std::shared_ptr<const void>(bytes, bytes.get());
  return true;
}

std::unique_ptr<MappedFile> MappedFile::Open(const std::string& path, std::string* error, Env* env) {
  std::unique_ptr<ReadableFile> file = OrDefault(env)->NewReadableFile(path, error);
  if (!file) return nullptr;
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = file->size();
  f->mtime_ms_ = file->mtime_ms();
  const bool member = file->in_capture();
  if (!member) ThrottleRead(f->size_);
  // An empty file keeps data_ == nullptr.
  if (f->size_ == 0) return f;
  // A small file (a producer snapshot, a checkpoint) is read: one pread(2) instead of mmap(2) and
  // munmap(2).
  if (!member && f->size_ <= kReadSmallFileBytes) return f->ReadWhole(file.get(), error) ? std::move(f) : nullptr;
  MappedRegion region;
  std::string map_error;
  if (file->Map(&region, &map_error)) {
    f->Hold(std::move(region));
    return f;  // the mapping keeps the file referenced; the descriptor is closed with `file`
  }
  if (!map_error.empty()) {
    *error = std::move(map_error);
    return nullptr;
  }
  // A compressed member that is not cached: decompressed whole into memory, under a cap.
  if (member && f->size_ > kMaxCaptureMemberInMemoryBytes) {
    *error = path + ": " + std::to_string(f->size_) + " bytes, more than the " +
             std::to_string(kMaxCaptureMemberInMemoryBytes) +
             " bytes klf holds in memory for a member of a compressed capture; unpack it, or use an "
             "uncompressed .tar, which is read in place";
    return nullptr;
  }
  return f->ReadWhole(file.get(), error) ? std::move(f) : nullptr;
}

void MappedFile::Hold(MappedRegion region) {
  data_ = region.data;
  keep_ = std::move(region.keep);
  mapping_ = region.mapping;
  if (mapping_) {
    guard_ = GuardMapping(data_, size_);
    std::lock_guard<std::mutex> lock(g_mappings_mu);
    Mappings()[data_] = size_;
  }
}

std::unique_ptr<MappedFile> MappedFile::MapOnly(const std::string& path, ReadableFile* file, std::string* error) {
  MappedRegion region;
  if (file->size() == 0 || !file->Map(&region, error)) return nullptr;
  if (!region.mapping) return nullptr;  // bytes an Env holds in memory (a cached capture member): not a mapping
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = file->size();
  f->mtime_ms_ = file->mtime_ms();
  f->Hold(std::move(region));
  return f;
}

MappedFile::~MappedFile() {
  if (mapping_) {
    UnguardMapping(guard_);
    std::lock_guard<std::mutex> lock(g_mappings_mu);
    Mappings().erase(data_);
  }
  // keep_ unmaps or frees the bytes.
}

bool MappedFile::changed() const { return GuardedMappingChanged(guard_); }

bool MappedFile::Unchanged(std::string* error) const {
  if (!changed()) return true;
  *error = path_ + ": the file shrank while it was read (it was " + std::to_string(size_) +
           " bytes when opened; is something writing to it?); what was read from it is not used";
  return false;
}

std::unique_ptr<StreamedFile> StreamedFile::Open(const std::string& path, std::string* error, uint64_t chunk,
                                                 Env* env) {
  std::unique_ptr<ReadableFile> file = OrDefault(env)->NewReadableFile(path, error);
  if (!file) return nullptr;
  std::unique_ptr<StreamedFile> f(new StreamedFile());
  f->path_ = path;
  f->size_ = file->size();
  f->mtime_ms_ = file->mtime_ms();
  f->chunk_ = chunk == 0 ? kDefaultChunk : chunk;
  f->charged_ = !file->in_capture();
  // One read of a small file: no read-ahead to ask for.
  if (f->charged_ && f->size_ > f->chunk_) file->AdviseSequential();
  switch (PlaceRead(file.get())) {
    case ReadPlacement::kMap: {
      std::string map_error;  // a file that cannot be mapped is read with pread
      f->map_ = MappedFile::MapOnly(path, file.get(), &map_error);
      break;
    }
    case ReadPlacement::kTrial: f->trial_ = std::make_unique<ReadTrial>(f->size_); break;
    case ReadPlacement::kPread: break;
  }
  f->file_ = std::move(file);
  return f;
}

namespace {

// A sequential reader reading in place hands back the pages it has passed every this many bytes, so
// resident memory stays within a few windows per reader (the page cache keeps the pages).
constexpr uint64_t kReleaseBehindBytes = uint64_t(8) << 20;

// Hands back the pages of `map` before `pos` once kReleaseBehindBytes have been passed since *released.
void ReleaseBehind(const MappedFile& map, uint64_t pos, uint64_t* released) {
  if (pos - std::min(pos, *released) < kReleaseBehindBytes) return;
  ReleaseMappedPages(map.data().data() + *released, map.data().data() + pos);
  *released = pos;
}

}  // namespace

// Fetch from the mapping: the bytes in place, charged to the read-rate cap as the pread path reads them
// (up to a chunk ahead), the pages passed handed back (kReleaseBehindBytes).
const uint8_t* StreamedFile::FetchMapped(uint64_t pos, uint64_t n, std::string* error) {
  if (map_->changed() || pos > size_ || n > size_ - pos) {
    if (!map_->Unchanged(error)) return nullptr;
    *error = path_ + ": bytes " + std::to_string(pos) + ".." + std::to_string(pos + n) + " are past the end (" +
             std::to_string(size_) + " bytes when opened)";
    return nullptr;
  }
  const uint64_t reach = std::min(size_, pos + std::max(n, chunk_));
  if (reach > charged_to_) {
    ThrottleRead(reach - charged_to_);
    charged_to_ = reach;
  }
  ReleaseBehind(*map_, pos, &released_);
  return map_->data().data() + pos;
}

StreamedFile::~StreamedFile() = default;

const uint8_t* StreamedFile::Fetch(uint64_t pos, uint64_t n, std::string* error) {
  if (trial_ && trial_->Before(pos)) {  // the trial's second half: from the mapping
    std::string map_error;
    map_ = MappedFile::MapOnly(path_, file_.get(), &map_error);
    charged_to_ = buffer_pos_ + buffered_;  // read (and charged) so far
    released_ = pos;
    if (!map_) trial_.reset();  // not mappable after all: no trial, pread on
  }
  const uint8_t* p = map_ ? FetchMapped(pos, n, error) : FetchRead(pos, n, error);
  if (trial_ && p != nullptr) trial_->After(pos + n);
  return p;
}

const uint8_t* StreamedFile::FetchRead(uint64_t pos, uint64_t n, std::string* error) {
  if (pos >= buffer_pos_ && pos + n <= buffer_pos_ + buffered_) return buffer_.get() + (pos - buffer_pos_);
  // Keep what is buffered at or after pos, move it to the front (unless it is there), then read after it.
  uint64_t keep = 0;
  if (pos >= buffer_pos_ && pos < buffer_pos_ + buffered_) {
    keep = buffer_pos_ + buffered_ - pos;
    if (pos != buffer_pos_) std::memmove(buffer_.get(), buffer_.get() + (pos - buffer_pos_), keep);
  }
  // A chunk, but no more than the file holds after pos (a small file gets a small buffer), and at least
  // one byte (the buffer is never null).
  const uint64_t left = size_ > pos ? size_ - pos : 0;
  uint64_t want = std::max({n, std::min(chunk_, left), uint64_t(1)});
  if (want > capacity_) {
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[want]);
    if (keep > 0) std::memcpy(bigger.get(), buffer_.get(), keep);
    buffer_ = std::move(bigger);
    capacity_ = want;
  }
  buffer_pos_ = pos;
  buffered_ = keep;
  // Read a chunk (not past the size seen at open), at least up to pos + n. A piece larger than a chunk
  // is read to its end and no further: a large batch is fetched whole after its header, so the buffer
  // then ends where the next entry starts, whose header read starts the buffer afresh, and the bytes
  // of a large batch are never moved (a megabyte batch would otherwise move the part read ahead).
  const uint64_t fill = std::min(n > chunk_ ? n : chunk_, capacity_);
  uint64_t limit = std::min<uint64_t>(fill, size_ > pos ? size_ - pos : 0);
  if (buffered_ < limit) {
    uint64_t got = 0;
    if (!file_->Read(pos + buffered_, limit - buffered_, buffer_.get() + buffered_, &got, error)) return nullptr;
    if (charged_) ThrottleRead(got);
    buffered_ += got;  // short only where the file ends: it shrank
  }
  if (buffered_ < n) {
    *error = path_ + ": the file ended at byte " + std::to_string(pos + buffered_) + " while reading " +
             std::to_string(n) + " bytes at " + std::to_string(pos) + " (it was " + std::to_string(size_) +
             " bytes when opened; is something writing to it?)";
    return nullptr;
  }
  return buffer_.get();
}

bool WindowReader::Open(const std::string& path, uint64_t size, std::string* error, Env* env) {
  size_ = size;
  std::unique_ptr<ReadableFile> file = OrDefault(env)->NewReadableFile(path, error);
  if (!file) return false;
  const ReadPlacement placement = PlaceRead(file.get());
  if (placement == ReadPlacement::kMap) {
    std::string map_error;  // a file that cannot be mapped is read with pread
    map_ = MappedFile::MapOnly(path, file.get(), &map_error);
    if (map_) return true;
  }
  if (placement == ReadPlacement::kTrial) trial_ = std::make_unique<ReadTrial>(size);
  file->AdviseSequential();
  file_ = file.get();
  input_ = std::make_unique<ExactReader>(std::move(file));
  return true;
}

bool WindowReader::Read(uint64_t pos, size_t n, Bytes* out, std::string* error) {
  pos = std::min(pos, size_);
  n = size_t(std::min<uint64_t>(n, size_ - pos));
  if (trial_ && trial_->Before(pos)) {  // the trial's second half: from the mapping
    std::string map_error;
    map_ = MappedFile::MapOnly(file_->path(), file_, &map_error);
    released_ = pos;
    if (!map_) trial_.reset();  // not mappable after all: no trial, pread on
  }
  if (!ReadWindow(pos, n, out, error)) return false;
  if (trial_) trial_->After(pos + n);
  return true;
}

bool WindowReader::ReadWindow(uint64_t pos, size_t n, Bytes* out, std::string* error) {
  if (map_) {  // in place; the file may have shrunk since the load, or under the mapping
    if (!map_->Unchanged(error)) return false;
    if (pos + n > map_->size()) {
      *error = map_->path() + ": position " + std::to_string(map_->size()) +
               ": file is shorter than when the log was loaded";
      return false;
    }
    ReleaseBehind(*map_, pos, &released_);
    *out = map_->data().subspan(pos, n);
    return true;
  }
  if (n > capacity_) {
    buffer_.reset(new uint8_t[n]);
    capacity_ = n;
  }
  if (!input_->Read(pos, n, buffer_.get(), error)) return false;
  *out = Bytes(buffer_.get(), n);
  return true;
}

void ReleaseMappedPages(const uint8_t* begin, const uint8_t* end) {
  if (begin == nullptr || end <= begin) return;
  std::lock_guard<std::mutex> lock(g_mappings_mu);
  auto& m = Mappings();
  auto it = m.upper_bound(begin);
  if (it == m.begin()) return;
  --it;
  const uint8_t* map_begin = it->first;
  const uint8_t* map_end = map_begin + it->second;
  if (begin >= map_end) return;
  if (end > map_end) end = map_end;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  uintptr_t b = (reinterpret_cast<uintptr_t>(begin) + page - 1) & ~(page - 1);
  uintptr_t e = reinterpret_cast<uintptr_t>(end) & ~(page - 1);
  if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
}

void MappedFile::AdviseSequential() const {
  if (data_ != nullptr && mapping_)
    ::madvise(const_cast<uint8_t*>(data_), size_, MADV_SEQUENTIAL);  // bytes in memory: none
}

bool ReadSmallFile(const std::string& path, uint64_t max_bytes, std::string* contents, std::string* error,
                   InputFailure* failure, Env* env) {
  InputFailure ignored;
  if (failure == nullptr) failure = &ignored;
  std::unique_ptr<ReadableFile> file = OrDefault(env)->NewReadableFile(path, error, failure);
  if (!file) return false;
  const uint64_t size = file->size();
  auto too_large = [&](const std::string& what) {
    *error = path + ": " + what + " bytes, more than the " + std::to_string(max_bytes) +
             "-byte limit for this kind of file (not a file Kafka writes); not read";
    *failure = InputFailure::kTooLarge;
    return false;
  };
  if (size > max_bytes) return too_large(std::to_string(size));
  auto unreadable = [&] {
    *failure = InputFailure::kUnreadable;
    return false;
  };
  uint64_t got = 0;
  if (file->in_capture()) {  // a member does not change size: one read
    contents->assign(size_t(size), '\0');
    if (size > 0 && !file->Read(0, size, reinterpret_cast<uint8_t*>(contents->data()), &got, error))
      return unreadable();
    return true;
  }
  contents->clear();
  contents->reserve(size_t(size));
  uint8_t buf[65536];
  uint64_t pos = 0;
  while (true) {
    // Up to what fstat(2) said is left, then a read that finds the end (or that the file grew).
    const uint64_t want = pos < size ? std::min<uint64_t>(sizeof buf, size - pos) : sizeof buf;
    if (!file->Read(pos, want, buf, &got, error)) return unreadable();
    if (got == 0) break;
    if (contents->size() + got > max_bytes) return too_large("over " + std::to_string(max_bytes));  // it grew
    contents->append(reinterpret_cast<const char*>(buf), size_t(got));
    pos += got;
    // A read that came short of the buffer and holds what fstat(2) said needs no read to see the end.
    if (got < sizeof buf && contents->size() >= size) break;
  }
  if (contents->size() < size) {  // it shrank: what was read is not the file
    *error = path + ": the file ended at byte " + std::to_string(contents->size()) + " while it was read (it was " +
             std::to_string(size) + " bytes when opened)";
    return unreadable();
  }
  return true;
}

}  // namespace klf
