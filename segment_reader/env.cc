// Env::Default(): POSIX files and directories (see env.h); its reads are segment_reader/file.cc's.
#include "segment_reader/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "segment_reader/file.h"

namespace klf {
namespace {

std::string ErrnoMessage(const std::string& path, const char* what, int err) {
  return path + ": " + what + ": " + std::strerror(err);
}

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  bool Append(Bytes data, std::string* error) override {
    const uint8_t* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        *error = ErrnoMessage(path_, "write", errno);
        return false;
      }
      p += n;
      left -= size_t(n);
    }
    return true;
  }
  bool Sync(std::string* error) override {
    if (::fsync(fd_) != 0) {
      *error = ErrnoMessage(path_, "fsync", errno);
      return false;
    }
    return true;
  }
  bool Close(std::string* error) override {
    int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) {
      *error = ErrnoMessage(path_, "close", errno);
      return false;
    }
    return true;
  }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
};

// The write buffer in front of a file (LevelDB's PosixWritableFile keeps one too): small appends are
// copied into the buffer, which is written out as soon as it is full, so with small appends every
// write but the last is exactly `capacity` bytes; an append of at least `capacity` bytes is written
// directly, after the buffered bytes. The first failure is kept: the file is unusable afterwards and
// every later call reports that failure.
class BufferedWritableFile : public WritableFile {
 public:
  BufferedWritableFile(std::unique_ptr<WritableFile> base, size_t capacity)
      : base_(std::move(base)), capacity_(capacity) {}

  bool Append(Bytes data, std::string* error) override {
    if (Failed(error)) return false;
    if (data.size() >= capacity_) return Flush(error) && Write(data, error);
    const size_t room = capacity_ - used_;
    if (data.size() < room) return Copy(data);
    // Top the buffer up and write it whole; the rest (shorter than a buffer) starts the next one.
    Copy(data.first(room));
    return WriteBuffer(error) && Copy(data.subspan(room));
  }
  bool Flush(std::string* error) override {
    if (Failed(error)) return false;
    return used_ == 0 || WriteBuffer(error);
  }
  bool Sync(std::string* error) override {
    if (!Flush(error)) return false;
    return Check(base_->Sync(error), error);
  }
  bool Close(std::string* error) override {
    bool flushed = Flush(error);
    buffer_.reset();
    std::string close_error;
    bool closed = base_->Close(&close_error);
    if (!flushed) return false;  // the first error is the one worth reporting
    if (!closed) *error = close_error;
    return Check(closed, error);
  }
  const std::string& path() const override { return base_->path(); }

 private:
  bool Failed(std::string* error) const {
    if (failed_) *error = first_error_;
    return failed_;
  }
  bool Check(bool ok, std::string* error) {
    if (!ok && !failed_) {
      failed_ = true;
      first_error_ = *error;
    }
    return ok;
  }
  bool Copy(Bytes data) {
    if (data.empty()) return true;
    // Allocated on first use and not zero-filled: a file that is closed untouched, or written only
    // by large appends, never pays for it.
    if (!buffer_) buffer_.reset(new uint8_t[capacity_]);
    std::memcpy(buffer_.get() + used_, data.data(), data.size());
    used_ += data.size();
    return true;
  }
  bool WriteBuffer(std::string* error) {
    size_t n = used_;
    used_ = 0;
    return Write(Bytes(buffer_.get(), n), error);
  }
  bool Write(Bytes data, std::string* error) { return Check(base_->Append(data, error), error); }

  std::unique_ptr<WritableFile> base_;
  const size_t capacity_;
  std::unique_ptr<uint8_t[]> buffer_;
  size_t used_ = 0;
  bool failed_ = false;
  std::string first_error_;
};

class PosixEnv : public Env {
 public:
  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path, std::string* error) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      *error = ErrnoMessage(path, "open for writing", errno);
      return nullptr;
    }
    return std::make_unique<BufferedWritableFile>(std::make_unique<PosixWritableFile>(path, fd),
                                                  kWritableFileBufferBytes);
  }
  bool RenameFile(const std::string& from, const std::string& to, std::string* error) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      *error = ErrnoMessage(from, ("rename to " + to).c_str(), errno);
      return false;
    }
    return true;
  }
  bool RemoveFile(const std::string& path, std::string* error) override {
    if (::unlink(path.c_str()) != 0) {
      *error = ErrnoMessage(path, "unlink", errno);
      return false;
    }
    return true;
  }
  bool CreateDir(const std::string& path, std::string* error) override {
    if (::mkdir(path.c_str(), 0755) != 0) {
      *error = ErrnoMessage(path, "mkdir", errno);
      return false;
    }
    return true;
  }
  bool CreateUniqueDir(const std::string& prefix, std::string* path, std::string* error) override {
    std::string tmpl = prefix + "XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      *error = ErrnoMessage(tmpl, "mkdtemp", errno);
      return false;
    }
    // mkdtemp creates mode 0700; a partition directory is normally 0755.
    ::chmod(tmpl.c_str(), 0755);
    *path = tmpl;
    return true;
  }
  bool RemoveDirRecursively(const std::string& path, std::string* error) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) {
      *error = path + ": remove: " + ec.message();
      return false;
    }
    return true;
  }
  bool SyncDir(const std::string& path, std::string* error) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      *error = ErrnoMessage(path, "open directory", errno);
      return false;
    }
    bool ok = ::fsync(fd) == 0;
    int err = errno;
    ::close(fd);
    if (!ok) *error = ErrnoMessage(path, "fsync directory", err);
    return ok;
  }
  bool SyncFileSystem(const std::string& path, std::string* error) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || ::syncfs(fd) != 0) {
      *error = ErrnoMessage(path, "syncfs", errno);
      if (fd >= 0) ::close(fd);
      return false;
    }
    ::close(fd);
    return true;
  }
  bool CopyFile(const std::string& from, const std::string& to, std::string* error) override {
    // Through the input door first: a FIFO, directory or symlink loop is an error naming the file.
    InputFileInfo info;
    int fd = OpenInputFile(from, &info, error);
    if (fd < 0) return false;
    ::close(fd);
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);  // copy_file_range(2) in the kernel
    if (!ec)
      fs::permissions(
          to, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read, ec);
    if (!ec) fs::last_write_time(to, fs::last_write_time(from, ec), ec);
    if (ec) *error = from + " -> " + to + ": " + ec.message();
    return !ec;
  }
  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }
  bool IsNonEmptyDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return false;
    bool non_empty = false;
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
        non_empty = true;
        break;
      }
    }
    ::closedir(d);
    return non_empty;
  }
  bool SetMtimeMs(const std::string& path, int64_t mtime_ms, std::string* error) override {
    timespec times[2];
    times[0].tv_sec = 0;
    times[0].tv_nsec = UTIME_OMIT;
    times[1].tv_sec = mtime_ms / 1000;
    times[1].tv_nsec = (mtime_ms % 1000) * 1000000;
    if (::utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) {
      *error = ErrnoMessage(path, "utimensat", errno);
      return false;
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<WritableFile> NewBufferedWritableFile(std::unique_ptr<WritableFile> base, size_t capacity) {
  return std::make_unique<BufferedWritableFile>(std::move(base), capacity);
}

std::unique_ptr<ReadableFile> Env::NewReadableFile(const std::string& path, std::string* error, InputFailure* failure) {
  return NewPosixReadableFile(path, error, failure);
}

bool Env::ProbeReadableFile(const std::string& path, InputFileInfo* info, std::string* error, InputFailure* failure) {
  return ProbePosixInput(path, info, error, failure);
}

Env* Env::Default() {
  static PosixEnv env;
  return &env;
}

}  // namespace klf
