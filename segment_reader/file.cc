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

int OpenInputFile(const std::string& path, InputFileInfo* info, std::string* error, InputFailure* failure) {
  InputFailure ignored;
  if (failure == nullptr) failure = &ignored;
  *failure = InputFailure::kNone;
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

std::unique_ptr<MappedFile> MappedFile::Open(const std::string& path, std::string* error) {
  InputFileInfo info;
  int fd = OpenInputFile(path, &info, error);
  if (fd < 0) return nullptr;
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = info.size;
  f->mtime_ms_ = info.mtime_ms;
  ThrottleRead(f->size_);
  if (f->size_ > 0) {
    // mmap of a zero-length file fails with EINVAL, so an empty file keeps data_ == nullptr.
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      *error = ErrnoMessage(path, errno);
      ::close(fd);
      return nullptr;
    }
    f->data_ = static_cast<const uint8_t*>(p);
    std::lock_guard<std::mutex> lock(g_mappings_mu);
    Mappings()[f->data_] = f->size_;
  }
  ::close(fd);  // the mapping keeps the file referenced
  return f;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) {
    {
      std::lock_guard<std::mutex> lock(g_mappings_mu);
      Mappings().erase(data_);
    }
    ::munmap(const_cast<uint8_t*>(data_), size_);
  }
}

std::unique_ptr<StreamedFile> StreamedFile::Open(const std::string& path, std::string* error, uint64_t chunk) {
  InputFileInfo info;
  int fd = OpenInputFile(path, &info, error);
  if (fd < 0) return nullptr;
  std::unique_ptr<StreamedFile> f(new StreamedFile());
  f->path_ = path;
  f->fd_ = fd;
  f->size_ = info.size;
  f->mtime_ms_ = info.mtime_ms;
  f->chunk_ = chunk == 0 ? kDefaultChunk : chunk;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
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
  uint64_t want = std::max(n, chunk_);
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
  if (data_ != nullptr) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_SEQUENTIAL);
}

bool ReadSmallFile(const std::string& path, uint64_t max_bytes, std::string* contents, std::string* error,
                   InputFailure* failure) {
  InputFailure ignored;
  if (failure == nullptr) failure = &ignored;
  InputFileInfo info;
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
  }
  ::close(fd);
  return true;
}

}  // namespace klf
