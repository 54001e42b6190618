// Scratch registry and its signal handler (see scratch.h).
#include "segment_writer/scratch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace klf {
namespace {

// A slot is read by the signal handler, so it holds a fixed buffer and an atomic state instead of a
// std::string behind a mutex: 0 free, 1 being changed, 2 registered, 3 being removed by the handler.
struct Slot {
  std::atomic<int> state{0};
  char path[PATH_MAX];
};
Slot g_slots[kMaxScratchPaths];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

void OnSignal(int sig) {
  const int saved_errno = errno;  // a handler leaves errno as it found it (the removal sets it)
  for (Slot& s : g_slots) {
    int registered = 2;
    if (s.state.compare_exchange_strong(registered, 3)) RemoveTreeSignalSafe(s.path);
  }
  // Die of the signal as if klf had no handler, so the caller sees "killed by SIGTERM".
  ::signal(sig, SIG_DFL);
  ::raise(sig);
  errno = saved_errno;
}

void InstallHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    for (int sig : kSignals) sigaddset(&sa.sa_mask, sig);  // one cleanup at a time
    for (int sig : kSignals) {
      struct sigaction old {};
      // A signal the caller ignores (nohup ignores SIGHUP) stays ignored.
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) ::sigaction(sig, &sa, nullptr);
    }
  });
}

// getdents64's record (not every libc declares struct dirent64).
struct Dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

void RemoveAt(int dirfd, const char* name, int depth) {
  if (::unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return;  // a file, a symlink, or gone
  if (depth >= 32) return;
  int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buf[2048];
  // Entries removed while listing may shift the listing: list again until nothing is left (a few
  // passes at most; an entry that cannot be removed ends it).
  for (int pass = 0; pass < 4; ++pass) {
    bool any = false;
    ::lseek(fd, 0, SEEK_SET);
    for (long n; (n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;) {
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const Dirent64*>(buf + off);
        off += d->d_reclen;
        if (std::strcmp(d->d_name, ".") == 0 || std::strcmp(d->d_name, "..") == 0) continue;
        RemoveAt(fd, d->d_name, depth + 1);
        any = true;
      }
    }
    if (!any) break;
  }
  ::close(fd);
  ::unlinkat(dirfd, name, AT_REMOVEDIR);
}

// "<pid>-XXXXXX" (mkdtemp's six characters): the pid, or 0 when `rest` has another shape.
pid_t ScratchOwner(const std::string& rest) {
  size_t dash = rest.find('-');
  if (dash == 0 || dash == std::string::npos || dash > 9 || rest.size() != dash + 7) return 0;
  pid_t pid = 0;
  for (size_t i = 0; i < dash; ++i) {
    if (rest[i] < '0' || rest[i] > '9') return 0;
    pid = pid * 10 + (rest[i] - '0');
  }
  for (size_t i = dash + 1; i < rest.size(); ++i) {
    char c = rest[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return 0;
  }
  return pid;
}

}  // namespace

void RegisterScratch(const std::string& path) {
  if (path.size() >= PATH_MAX) return;
  InstallHandlers();
  for (Slot& s : g_slots) {
    int free = 0;
    if (!s.state.compare_exchange_strong(free, 1)) continue;
    std::memcpy(s.path, path.c_str(), path.size() + 1);
    s.state.store(2);
    return;
  }
}

void UnregisterScratch(const std::string& path) {
  for (Slot& s : g_slots) {
    int registered = 2;
    if (s.state.load() != 2 || path != s.path) continue;
    if (s.state.compare_exchange_strong(registered, 1)) s.state.store(0);
    return;
  }
}

std::string ScratchPrefix(const std::string& prefix) { return prefix + std::to_string(::getpid()) + "-"; }

void RemoveStaleScratch(const std::string& dir, const std::string& name_prefix) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir.empty() ? "." : dir, ec)) {
    std::string name = e.path().filename().string();
    if (!name.starts_with(name_prefix)) continue;
    pid_t pid = ScratchOwner(name.substr(name_prefix.size()));
    struct stat st;
    if (pid <= 0 || pid == ::getpid() || ::lstat(e.path().c_str(), &st) != 0 || st.st_uid != ::getuid()) continue;
    // Only a dead owner's scratch: a live pid may be another klf run still writing it.
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    std::filesystem::remove_all(e.path(), ignored);
  }
}

void RemoveTreeSignalSafe(const char* path) { RemoveAt(AT_FDCWD, path, 0); }

}  // namespace klf
