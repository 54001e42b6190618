#include "segment_reader/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

std::unique_ptr<MappedFile> MappedFile::Open(const std::string& path, std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = ErrnoMessage(path, errno);
    return nullptr;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    *error = ErrnoMessage(path, errno);
    ::close(fd);
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file";
    ::close(fd);
    return nullptr;
  }
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = uint64_t(st.st_size);
  f->mtime_ms_ = int64_t(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
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

bool ReadSmallFile(const std::string& path, uint64_t max_bytes, std::string* contents, std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = ErrnoMessage(path, errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    *error = ErrnoMessage(path, errno);
    ::close(fd);
    return false;
  }
  if (uint64_t(st.st_size) > max_bytes) {
    *error = path + ": file is " + std::to_string(st.st_size) + " bytes, more than the " +
             std::to_string(max_bytes) + "-byte limit for this kind of file";
    ::close(fd);
    return false;
  }
  contents->clear();
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = ErrnoMessage(path, errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    if (contents->size() + size_t(n) > max_bytes) {  // the file grew while we read it
      *error = path + ": file is larger than the " + std::to_string(max_bytes) + "-byte limit";
      ::close(fd);
      return false;
    }
    contents->append(buf, size_t(n));
  }
  ::close(fd);
  return true;
}

}  // namespace klf
