#include "segment_reader/file.h"

#include "segment_reader/read_throttle.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

namespace klf {

namespace {
// Live mappings by start address, so ReleaseMappedPages never advises memory it does not own
// (MADV_DONTNEED on anonymous memory would zero it).
std::mutex g_mappings_mu;
std::map<const uint8_t*, uint64_t>& Mappings() {
  static auto* m = new std::map<const uint8_t*, uint64_t>();
  return *m;
}
}  // namespace

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

// Opens a capture member for reading (capture.h); nullptr with *error.
std::unique_ptr<CaptureMemberReader> OpenMemberReader(const std::string& path, InputFileInfo* info, std::string* error,
                                                      InputFailure* failure, const CaptureMember** member_out = nullptr,
                                                      std::shared_ptr<const Capture>* capture_out = nullptr) {
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
  info->size = m->size;
  info->mtime_ms = m->mtime_ms;
  if (member_out) *member_out = m;
  if (capture_out) *capture_out = capture;
  auto reader = OpenCaptureMember(capture, *m, error);
  if (!reader) *failure = InputFailure::kUnreadable;
  return reader;
}

}  // namespace

namespace {

class FileReader : public CaptureMemberReader {
 public:
  FileReader(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~FileReader() override { ::close(fd_); }
  bool Read(uint64_t pos, uint64_t n, uint8_t* out, std::string* error) override {
    uint64_t done = 0;
    while (done < n) {
      ssize_t got = ::pread(fd_, out + done, n - done, off_t(pos + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        *error = path_ + ": position " + std::to_string(pos + done) + ": " +
                 (got < 0 ? std::strerror(errno) : "file is shorter than when the log was loaded");
        return false;
      }
      done += uint64_t(got);
    }
    return true;
  }

 private:
  std::string path_;
  int fd_;
};

}  // namespace

std::unique_ptr<CaptureMemberReader> OpenInputReader(const std::string& path, InputFileInfo* info, std::string* error,
                                                     InputFailure* failure) {
  InputFailure ignored;
  if (failure == nullptr) failure = &ignored;
  std::string archive, member;
  if (SplitCapturePath(path, &archive, &member)) return OpenMemberReader(path, info, error, failure);
  int fd = OpenInputFile(path, info, error, failure);
  if (fd < 0) return nullptr;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::make_unique<FileReader>(path, fd);
}

bool ProbeInputFile(const std::string& path, InputFileInfo* info, std::string* error, InputFailure* failure) {
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

std::unique_ptr<MappedFile> MappedFile::OpenMember(const std::string& path, std::string* error) {
  InputFileInfo info;
  InputFailure failure;
  const CaptureMember* m = nullptr;
  std::shared_ptr<const Capture> capture;
  std::unique_ptr<CaptureMemberReader> reader = OpenMemberReader(path, &info, error, &failure, &m, &capture);
  if (!reader) return nullptr;
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = info.size;
  f->mtime_ms_ = info.mtime_ms;
  if (f->size_ == 0) return f;
  if (m->cached) {
    f->keep_ = m->cached;
    f->data_ = reinterpret_cast<const uint8_t*>(m->cached->data());
    return f;
  }
  if (m->data_offset >= 0) {
    // An uncompressed .tar: map the archive's pages that hold the member, read-only, in place.
    int fd = ::open(capture->archive().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      *error = ErrnoMessage(capture->archive(), errno);
      return nullptr;
    }
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    const uint64_t start = uint64_t(m->data_offset) / page * page;
    const uint64_t delta = uint64_t(m->data_offset) - start;
    void* p = ::mmap(nullptr, f->size_ + delta, PROT_READ, MAP_PRIVATE, fd, off_t(start));
    ::close(fd);
    if (p == MAP_FAILED) {
      *error = ErrnoMessage(path, errno);
      return nullptr;
    }
    f->map_base_ = p;
    f->map_len_ = f->size_ + delta;
    f->data_ = static_cast<const uint8_t*>(p) + delta;
    std::lock_guard<std::mutex> lock(g_mappings_mu);
    Mappings()[f->data_] = f->size_;
    return f;
  }
  // A compressed member that is not cached: decompressed whole into memory, under a cap.
  if (f->size_ > kMaxCaptureMemberInMemoryBytes) {
    *error = path + ": " + std::to_string(f->size_) + " bytes, more than the " +
             std::to_string(kMaxCaptureMemberInMemoryBytes) +
             " bytes klf holds in memory for a member of a compressed capture; unpack it, or use an "
             "uncompressed .tar, which is read in place";
    return nullptr;
  }
  auto bytes = std::shared_ptr<uint8_t[]>(new uint8_t[f->size_]);
  if (!reader->Read(0, f->size_, bytes.get(), error)) return nullptr;
  f->data_ = bytes.get();
  f->keep_ = std::shared_ptr<const void>(bytes, bytes.get());
  return f;
}

std::unique_ptr<MappedFile> MappedFile::Open(const std::string& path, std::string* error) {
  {
    std::string archive, member;
    if (SplitCapturePath(path, &archive, &member)) return OpenMember(path, error);
  }
  InputFileInfo info;
  int fd = OpenInputFile(path, &info, error);
  if (fd < 0) return nullptr;
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = info.size;
  f->mtime_ms_ = info.mtime_ms;
  ThrottleRead(f->size_);
  if (f->size_ > 0 && f->size_ <= kReadSmallFileBytes) {
    // A small file (a producer snapshot, a checkpoint) is read: one pread(2) instead of mmap(2) and
    // munmap(2).
    auto bytes = std::make_shared<std::vector<uint8_t>>(size_t(f->size_));
    uint64_t done = 0;
    while (done < f->size_) {
      ssize_t got = ::pread(fd, bytes->data() + done, size_t(f->size_ - done), off_t(done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        *error = got < 0 ? ErrnoMessage(path, errno) : path + ": the file shrank while it was read";
        ::close(fd);
        return nullptr;
      }
      done += uint64_t(got);
    }
    f->data_ = bytes->data();
    f->keep_ = std::move(bytes);
  } else if (f->size_ > 0) {
    // mmap of a zero-length file fails with EINVAL, so an empty file keeps data_ == nullptr.
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      *error = ErrnoMessage(path, errno);
      ::close(fd);
      return nullptr;
    }
    f->data_ = static_cast<const uint8_t*>(p);
    f->map_base_ = p;
    f->map_len_ = f->size_;
    std::lock_guard<std::mutex> lock(g_mappings_mu);
    Mappings()[f->data_] = f->size_;
  }
  ::close(fd);  // the mapping keeps the file referenced
  return f;
}

MappedFile::~MappedFile() {
  if (map_base_ != nullptr) {
    {
      std::lock_guard<std::mutex> lock(g_mappings_mu);
      Mappings().erase(data_);
    }
    ::munmap(map_base_, map_len_);
  }
}

std::unique_ptr<StreamedFile> StreamedFile::Open(const std::string& path, std::string* error, uint64_t chunk) {
  InputFileInfo info;
  {
    std::string archive, member;
    if (SplitCapturePath(path, &archive, &member)) {
      InputFailure failure;
      std::unique_ptr<CaptureMemberReader> reader = OpenMemberReader(path, &info, error, &failure);
      if (!reader) return nullptr;
      std::unique_ptr<StreamedFile> f(new StreamedFile());
      f->path_ = path;
      f->member_ = std::move(reader);
      f->size_ = info.size;
      f->mtime_ms_ = info.mtime_ms;
      f->chunk_ = chunk == 0 ? kDefaultChunk : chunk;
      return f;
    }
  }
  int fd = OpenInputFile(path, &info, error);
  if (fd < 0) return nullptr;
  std::unique_ptr<StreamedFile> f(new StreamedFile());
  f->path_ = path;
  f->fd_ = fd;
  f->size_ = info.size;
  f->mtime_ms_ = info.mtime_ms;
  f->chunk_ = chunk == 0 ? kDefaultChunk : chunk;
  if (f->size_ > f->chunk_) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // one read: no read-ahead to ask for
  return f;
}

StreamedFile::~StreamedFile() {
  if (fd_ >= 0) ::close(fd_);
}

const uint8_t* StreamedFile::Fetch(uint64_t pos, uint64_t n, std::string* error) {
  if (pos >= buffer_pos_ && pos + n <= buffer_pos_ + buffered_) return buffer_.get() + (pos - buffer_pos_);
  // Keep what is buffered at or after pos, move it to the front, then read after it.
  uint64_t keep = 0;
  if (pos >= buffer_pos_ && pos < buffer_pos_ + buffered_) {
    keep = buffer_pos_ + buffered_ - pos;
    std::memmove(buffer_.get(), buffer_.get() + (pos - buffer_pos_), keep);
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
  // Read to fill the buffer (not past the size seen at open), at least up to pos + n.
  uint64_t limit = std::min<uint64_t>(capacity_, size_ > pos ? size_ - pos : 0);
  if (member_ && buffered_ < limit) {
    // A capture member: exactly the bytes wanted (it does not shrink; the reader names errors).
    if (!member_->Read(pos + buffered_, limit - buffered_, buffer_.get() + buffered_, error)) return nullptr;
    buffered_ = limit;
  }
  while (buffered_ < limit) {
    ssize_t got = ::pread(fd_, buffer_.get() + buffered_, limit - buffered_, off_t(pos + buffered_));
    if (got < 0) {
      if (errno == EINTR) continue;
      *error = path_ + ": read at byte " + std::to_string(pos + buffered_) + ": " + std::strerror(errno);
      return nullptr;
    }
    if (got == 0) break;  // the file shrank
    ThrottleRead(uint64_t(got));
    buffered_ += uint64_t(got);
  }
  if (buffered_ < n) {
    *error = path_ + ": the file ended at byte " + std::to_string(pos + buffered_) + " while reading " +
             std::to_string(n) + " bytes at " + std::to_string(pos) + " (it was " + std::to_string(size_) +
             " bytes when opened; is something writing to it?)";
    return nullptr;
  }
  return buffer_.get();
}

bool WindowReader::Open(const std::string& path, uint64_t size, std::string* error) {
  size_ = size;
  InputFileInfo info;
  input_ = OpenInputReader(path, &info, error);
  return input_ != nullptr;
}

bool WindowReader::Read(uint64_t pos, size_t n, Bytes* out, std::string* error) {
  pos = std::min(pos, size_);
  n = size_t(std::min<uint64_t>(n, size_ - pos));
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
  if (data_ != nullptr && !keep_)
    ::madvise(const_cast<uint8_t*>(data_), size_, MADV_SEQUENTIAL);  // bytes in memory: none
}

bool ReadSmallFile(const std::string& path, uint64_t max_bytes, std::string* contents, std::string* error,
                   InputFailure* failure) {
  InputFailure ignored;
  if (failure == nullptr) failure = &ignored;
  InputFileInfo info;
  {
    std::string archive, member;
    if (SplitCapturePath(path, &archive, &member)) {
      std::unique_ptr<CaptureMemberReader> reader = OpenMemberReader(path, &info, error, failure);
      if (!reader) return false;
      if (info.size > max_bytes) {
        *error = path + ": " + std::to_string(info.size) + " bytes, more than the " + std::to_string(max_bytes) +
                 "-byte limit for this kind of file (not a file Kafka writes); not read";
        *failure = InputFailure::kTooLarge;
        return false;
      }
      contents->assign(size_t(info.size), '\0');
      if (info.size > 0 && !reader->Read(0, info.size, reinterpret_cast<uint8_t*>(contents->data()), error)) {
        *failure = InputFailure::kUnreadable;
        return false;
      }
      return true;
    }
  }
  int fd = OpenInputFile(path, &info, error, failure);
  if (fd < 0) return false;
  auto too_large = [&](const std::string& size) {
    *error = path + ": " + size + " bytes, more than the " + std::to_string(max_bytes) +
             "-byte limit for this kind of file (not a file Kafka writes); not read";
    *failure = InputFailure::kTooLarge;
    ::close(fd);
    return false;
  };
  if (info.size > max_bytes) return too_large(std::to_string(info.size));
  contents->clear();
  contents->reserve(size_t(info.size));
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = ErrnoMessage(path, errno);
      *failure = InputFailure::kUnreadable;
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    if (contents->size() + size_t(n) > max_bytes) return too_large("over " + std::to_string(max_bytes));  // it grew
    contents->append(buf, size_t(n));
    // A regular file's read(2) returns less than asked only at its end: a file that holds what
    // fstat(2) said and came short of the buffer needs no read(2) to see the end.
    if (size_t(n) < sizeof buf && contents->size() >= info.size) break;
  }
  ::close(fd);
  return true;
}

}  // namespace klf
