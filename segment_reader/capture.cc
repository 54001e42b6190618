// Captures read in place or streamed with libarchive (capture.h). The rule "a member name never
// escapes the archive" lives in CheckMemberName / CaptureBuilder::Build below.
#include "segment_reader/capture.h"

#include <fcntl.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <archive.h>
#include <archive_entry.h>

namespace klf {
namespace fs = std::filesystem;

namespace {

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  }
  return s;
}

// Bytes of a member name as printable text: control bytes, backslashes, quotes and non-ASCII bytes
// as \xNN, so a hostile name cannot rewrite the terminal or hide in the message.
[[maybe_unused]] std::string Escaped(const std::string& name) {  // unused without libarchive
  std::string out;
  for (unsigned char c : name) {
    if (c < 0x20 || c >= 0x7f || c == '\\' || c == '"') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += char(c);
    }
  }
  return out;
}

// Splits a path into components, dropping empty ones and ".".
std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string c = path.substr(i, j - i);
    if (!c.empty() && c != ".") out.push_back(std::move(c));
    i = j + 1;
  }
  return out;
}

std::string JoinComponents(const std::vector<std::string>& parts, size_t from = 0) {
  std::string out;
  for (size_t i = from; i < parts.size(); ++i) {
    if (!out.empty()) out += '/';
    out += parts[i];
  }
  return out;
}

int64_t MtimeMs(const struct stat& st) { return int64_t(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000; }

}  // namespace

bool HasCaptureExtension(const std::string& name) {
  std::string n = Lower(name);
  for (const char* ext : {".tar", ".tar.gz", ".tgz", ".tar.zst", ".tzst", ".zip"}) {
    if (n.ends_with(ext) && n.size() > std::strlen(ext)) return true;
  }
  return false;
}

namespace {

// Whether `path` has ".tar", ".tgz", ".tzst" or ".zip" in it, in any case: a path without one names no
// archive. Every file a command opens asks this, so it allocates nothing.
bool MayNameCapture(std::string_view path) {
  auto starts_caseless = [](std::string_view s, std::string_view lower_prefix) {
    if (s.size() < lower_prefix.size()) return false;
    for (size_t i = 0; i < lower_prefix.size(); ++i) {
      char c = s[i];
      if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
      if (c != lower_prefix[i]) return false;
    }
    return true;
  };
  for (size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.', dot + 1)) {
    std::string_view rest = path.substr(dot + 1);
    for (std::string_view ext : {"tar", "tgz", "tzst", "zip"}) {
      if (starts_caseless(rest, ext)) return true;
    }
  }
  return false;
}

}  // namespace

bool SplitCapturePath(const std::string& path, std::string* archive, std::string* member) {
  if (!MayNameCapture(path)) return false;  // most paths
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string component = path.substr(i, j - i);
    if (HasCaptureExtension(component)) {
      std::string prefix = path.substr(0, j);
      struct stat st;
      if (::stat(prefix.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        *archive = prefix;
        *member = j < path.size() ? JoinComponents(Components(path.substr(j + 1))) : std::string();
        return true;
      }
    }
    i = j + 1;
  }
  return false;
}

std::string CaptureMemberPath(const Capture& capture, const CaptureMember& member) {
  return member.name.empty() ? capture.archive() : capture.archive() + "/" + member.name;
}

const CaptureMember* Capture::Find(const std::string& name) const {
  auto it = std::lower_bound(members_.begin(), members_.end(), name,
                             [](const CaptureMember& m, const std::string& n) { return m.name < n; });
  if (it == members_.end() || it->name != name) return nullptr;
  return &*it;
}

std::vector<const CaptureMember*> Capture::Children(const std::string& dir) const {
  std::vector<const CaptureMember*> out;
  const std::string prefix = dir.empty() ? std::string() : dir + "/";
  // Members are sorted by name, so a directory's descendants follow its prefix. '/' sorts before
  // most name bytes but after '-' and '.', so scan the whole prefix range rather than stop early.
  auto it = std::lower_bound(members_.begin(), members_.end(), prefix,
                             [](const CaptureMember& m, const std::string& n) { return m.name < n; });
  for (; it != members_.end() && it->name.starts_with(prefix); ++it) {
    if (it->name.size() == prefix.size()) continue;  // the directory itself (root: "")
    if (it->name.find('/', prefix.size()) != std::string::npos) continue;
    out.push_back(&*it);
  }
  return out;
}

namespace {

std::atomic<uint64_t> g_cache_used{0};
std::atomic<uint64_t> g_cache_member_max{kCaptureCacheMemberBytes};

struct ArchiveCloser {
  void operator()(struct archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveCloser>;

// The formats and filters of a capture: tar (every variant libarchive knows) and zip; gzip, zstd and
// none. Nothing else is tried, so a file that is not one of them is "not a capture".
ArchivePtr NewReader() {
  ArchivePtr a(archive_read_new());
  if (!a) return a;
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  archive_read_support_format_zip(a.get());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_zstd(a.get());
  archive_read_support_filter_none(a.get());
  return a;
}

std::string ArchiveError(struct archive* a) {
  const char* s = archive_error_string(a);
  return s ? s : "unknown libarchive error";
}

// Opens `path` with libarchive. The archive is opened through OpenInputFile's rules: a regular file,
// read-only (libarchive opens it O_RDONLY).
ArchivePtr OpenReader(const std::string& path, std::string* error) {
  ArchivePtr a = NewReader();
  if (!a) {
    *error = path + ": out of memory";
    return a;
  }
  if (archive_read_open_filename(a.get(), path.c_str(), 256 << 10) != ARCHIVE_OK) {
    *error = path + ": not a readable .tar, .tar.gz, .tar.zst or .zip archive: " + ArchiveError(a.get());
    a.reset();
  }
  return a;
}

// Why a member name is refused, or "" when it is a plain relative name. `components` receives it.
std::string CheckMemberName(const std::string& raw, std::vector<std::string>* components) {
  if (raw.empty()) return "an empty member name";
  if (raw.size() > 4096) return "a member name over 4096 bytes";
  for (unsigned char c : raw) {
    if (c < 0x20 || c == 0x7f) return "a member name with control bytes";
    if (c == '\\') return "a member name with a backslash (a Windows path?)";
  }
  if (raw[0] == '/') return "an absolute member name (it would escape the archive)";
  *components = Components(raw);
  for (const std::string& c : *components) {
    if (c == "..") return "a member name with a '..' component (it would escape the archive)";
  }
  return "";
}

const char* EntryTypeName(mode_t type) {
  switch (type) {
    case AE_IFLNK: return "a symbolic link";
    case AE_IFCHR: return "a character device";
    case AE_IFBLK: return "a block device";
    case AE_IFIFO: return "a FIFO";
    case AE_IFSOCK: return "a socket";
    default: return "a special file";
  }
}

bool IsSmallCacheable(const CaptureMember& m) { return !m.is_dir && m.size <= g_cache_member_max.load(); }

}  // namespace

void SetCaptureCacheMemberBytesForTesting(uint64_t bytes) { g_cache_member_max = bytes; }

class CaptureBuilder {
 public:
  static std::shared_ptr<const Capture> Build(const std::string& archive, std::string* error);
};

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the archive's one indexing pass: one refusal per kind of hostile member, named as it is met
std::shared_ptr<const Capture> CaptureBuilder::Build(const std::string& archive, std::string* error) {
  struct stat st;
  {
    int fd = ::open(archive.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      *error = archive + ": " + std::strerror(errno);
      return nullptr;
    }
    int rc = ::fstat(fd, &st);
    ::close(fd);
    if (rc != 0 || !S_ISREG(st.st_mode)) {
      *error = archive + ": not a regular file";
      return nullptr;
    }
  }
  ArchivePtr a = OpenReader(archive, error);
  if (!a) return nullptr;
  auto capture = std::make_shared<Capture>();
  capture->archive_ = archive;
  capture->archive_size_ = uint64_t(st.st_size);
  std::map<std::string, CaptureMember> by_name;
  by_name[""] = CaptureMember{"", true, 0, MtimeMs(st), 0, -1, nullptr};
  std::map<std::string, uint64_t> explicit_names;  // members named by a header, for duplicates
  bool in_place = false;
  int64_t expected_next_header = -1;  // in-place tar: where the header after the last member starts
  CaptureMember* last_in_place = nullptr;
  auto refuse = [&](const std::string& raw, uint64_t pos, const std::string& why) {
    *error = fmt::format("{}: member \"{}\" (header at byte {}): {}; the capture is refused", archive, Escaped(raw),
                         pos, why);
    return nullptr;
  };
  uint64_t ordinal = 0;
  for (;; ++ordinal) {
    struct archive_entry* e = nullptr;
    int r = archive_read_next_header(a.get(), &e);
    const int64_t header_pos = archive_read_header_position(a.get());
    if (last_in_place != nullptr && header_pos != expected_next_header) {
      // The member's bytes are not where a plain tar keeps them: read it through libarchive.
      last_in_place->data_offset = -1;
    }
    last_in_place = nullptr;
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      *error = fmt::format("{}: not a readable archive after member {} (near byte {}): {}", archive, ordinal,
                           std::max<int64_t>(header_pos, 0), ArchiveError(a.get()));
      return nullptr;
    }
    if (ordinal == 0) {
      in_place = archive_filter_count(a.get()) == 1 && archive_filter_code(a.get(), 0) == ARCHIVE_FILTER_NONE &&
                 (archive_format(a.get()) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_TAR;
      capture->in_place_ = in_place;
    }
    if (ordinal >= kMaxCaptureMembers)
      return refuse("", uint64_t(header_pos), fmt::format("more than {} members", kMaxCaptureMembers));
    const char* name_c = archive_entry_pathname(e);
    std::string raw = name_c ? name_c : "";
    const uint64_t pos = uint64_t(std::max<int64_t>(header_pos, 0));
    std::vector<std::string> parts;
    std::string why = CheckMemberName(raw, &parts);
    if (!why.empty()) return refuse(raw, pos, why);
    if (archive_entry_hardlink(e) != nullptr)
      return refuse(raw, pos, fmt::format("a hard link to \"{}\"", Escaped(archive_entry_hardlink(e))));
    const mode_t type = archive_entry_filetype(e);
    if (type == AE_IFLNK) {
      const char* target = archive_entry_symlink(e);
      return refuse(raw, pos, fmt::format("a symbolic link to \"{}\"", Escaped(target ? target : "")));
    }
    if (type != AE_IFREG && type != AE_IFDIR) return refuse(raw, pos, EntryTypeName(type));
    if (archive_entry_sparse_count(e) > 0) return refuse(raw, pos, "a sparse member");
    if (archive_entry_is_encrypted(e)) return refuse(raw, pos, "an encrypted member");
    std::string name = JoinComponents(parts);
    if (name.empty()) {
      if (type == AE_IFDIR) continue;  // "./": the root itself
      return refuse(raw, pos, "a file named like the archive's root");
    }
    if (!explicit_names.emplace(name, pos).second)
      return refuse(raw, pos, fmt::format("a second member named \"{}\"", Escaped(name)));
    // Every parent is a directory: implied when not listed, refused when a file holds that name.
    for (size_t k = 1; k < parts.size(); ++k) {
      std::string parent = JoinComponents(std::vector<std::string>(parts.begin(), parts.begin() + long(k)));
      auto it = by_name.find(parent);
      if (it == by_name.end()) {
        by_name[parent] = CaptureMember{parent, true, 0, 0, ordinal, -1, nullptr};
      } else if (!it->second.is_dir) {
        return refuse(raw, pos, fmt::format("a member below \"{}\", which is a file", Escaped(parent)));
      }
    }
    CaptureMember m;
    m.name = name;
    m.is_dir = type == AE_IFDIR;
    m.ordinal = ordinal;
    m.mtime_ms = int64_t(archive_entry_mtime(e)) * 1000 + archive_entry_mtime_nsec(e) / 1000000;
    if (!m.is_dir) {
      if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0)
        return refuse(raw, pos, "a member whose size the archive does not record");
      m.size = uint64_t(archive_entry_size(e));
    }
    if (auto it = by_name.find(name); it != by_name.end()) {
      // Implied as a directory by an earlier member.
      if (!m.is_dir) return refuse(raw, pos, fmt::format("a file named like the directory \"{}\"", Escaped(name)));
      it->second.mtime_ms = m.mtime_ms;
      continue;
    }
    if (!m.is_dir && in_place) {
      const int64_t data = archive_filter_bytes(a.get(), -1);
      if (data >= 0 && uint64_t(data) + m.size <= capture->archive_size_) {
        m.data_offset = data;
        expected_next_header = data + int64_t((m.size + 511) / 512 * 512);
      }
    } else if (!m.is_dir && IsSmallCacheable(m)) {
      uint64_t used = g_cache_used.fetch_add(m.size);
      if (used + m.size <= kCaptureCacheBudgetBytes) {
        auto bytes = std::make_shared<std::string>();
        bytes->resize(size_t(m.size));
        size_t got = 0;
        while (got < m.size) {
          la_ssize_t n = archive_read_data(a.get(), bytes->data() + got, size_t(m.size - got));
          if (n < 0) {
            *error = fmt::format("{}: member \"{}\": cannot read byte {}: {}", archive, Escaped(name), got,
                                 ArchiveError(a.get()));
            return nullptr;
          }
          if (n == 0) break;
          got += size_t(n);
        }
        if (got != m.size) {
          *error = fmt::format("{}: member \"{}\": the archive ends at byte {} of its {} bytes", archive, Escaped(name),
                               got, m.size);
          return nullptr;
        }
        m.cached = std::move(bytes);
      } else {
        g_cache_used.fetch_sub(m.size);
      }
    }
    by_name[name] = std::move(m);
    if (by_name[name].data_offset >= 0) last_in_place = &by_name[name];
  }
  capture->members_.reserve(by_name.size());
  for (auto& [name, m] : by_name) capture->members_.push_back(std::move(m));
  return capture;
}

std::shared_ptr<const Capture> OpenCapture(const std::string& archive, std::string* error) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::pair<std::shared_ptr<const Capture>, std::string>>();
  std::lock_guard<std::mutex> lock(mu);  // one index pass per archive, even with several threads
  auto it = cache->find(archive);
  if (it == cache->end()) {
    std::string why;
    std::shared_ptr<const Capture> c = CaptureBuilder::Build(archive, &why);
    it = cache->emplace(archive, std::make_pair(c, why)).first;
  }
  if (!it->second.first) *error = it->second.second;
  return it->second.first;
}

namespace {

// In place: pread of the archive file.
class InPlaceReader : public CaptureMemberReader {
 public:
  InPlaceReader(std::string path, int fd, uint64_t offset, uint64_t size)
      : path_(std::move(path)), fd_(fd), offset_(offset), size_(size) {}
  ~InPlaceReader() override { ::close(fd_); }
  bool Read(uint64_t pos, uint64_t n, uint8_t* out, std::string* error) override {
    if (pos > size_ || n > size_ - pos) {
      *error = fmt::format("{}: read of {} bytes at byte {} is past its end ({} bytes)", path_, n, pos, size_);
      return false;
    }
    uint64_t done = 0;
    while (done < n) {
      ssize_t got = ::pread(fd_, out + done, n - done, off_t(offset_ + pos + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        *error = fmt::format("{}: read at byte {}: {}", path_, pos + done,
                             got < 0 ? std::strerror(errno) : "the archive is shorter than when it was indexed");
        return false;
      }
      done += uint64_t(got);
    }
    return true;
  }

 private:
  std::string path_;
  int fd_;
  uint64_t offset_;
  uint64_t size_;
};

// Open libarchive streams left by readers that are done, each positioned at the header of the member it
// read (its ordinal). A reader that needs a later member takes the one nearest before it and reads on
// from there, instead of decompressing the archive again from its start: members requested in archive
// order (the segments of a partition, then the next partition's) cost one decompression in all, not one
// per member. At most kMaxParkedStreams are kept (each holds its decompressor's window); the one
// furthest back goes first.
constexpr size_t kMaxParkedStreams = 4;
struct ParkedStream {
  std::string archive;
  uint64_t ordinal = 0;
  ArchivePtr a;
};
std::mutex g_parked_mu;
std::vector<ParkedStream> g_parked;

void Park(const std::string& archive, uint64_t ordinal, ArchivePtr a) {
  std::lock_guard<std::mutex> lock(g_parked_mu);
  g_parked.push_back({archive, ordinal, std::move(a)});
  if (g_parked.size() > kMaxParkedStreams) {
    auto oldest = std::min_element(g_parked.begin(), g_parked.end(),
                                   [](const ParkedStream& x, const ParkedStream& y) { return x.ordinal < y.ordinal; });
    g_parked.erase(oldest);
  }
}

// The parked stream of `archive` nearest before member `ordinal` (its ordinal in *at), or null.
ArchivePtr Unpark(const std::string& archive, uint64_t ordinal, uint64_t* at) {
  std::lock_guard<std::mutex> lock(g_parked_mu);
  auto best = g_parked.end();
  for (auto it = g_parked.begin(); it != g_parked.end(); ++it) {
    if (it->archive == archive && it->ordinal < ordinal && (best == g_parked.end() || it->ordinal > best->ordinal))
      best = it;
  }
  if (best == g_parked.end()) return nullptr;
  *at = best->ordinal;
  ArchivePtr a = std::move(best->a);
  g_parked.erase(best);
  return a;
}

// Streamed through libarchive: a forward cursor, re-opened when a read goes backwards (from a parked
// stream before it when there is one, else from the archive's start).
class StreamReader : public CaptureMemberReader {
 public:
  StreamReader(std::shared_ptr<const Capture> capture, const CaptureMember& member)
      : capture_(std::move(capture)), member_(member), path_(CaptureMemberPath(*capture_, member)) {}
  ~StreamReader() override {
    if (a_) Park(capture_->archive(), member_.ordinal, std::move(a_));
  }
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;
  bool Read(uint64_t pos, uint64_t n, uint8_t* out, std::string* error) override {
    if (pos > member_.size || n > member_.size - pos) {
      *error = fmt::format("{}: read of {} bytes at byte {} is past its end ({} bytes)", path_, n, pos, member_.size);
      return false;
    }
    if (!a_ || pos < cursor_) {
      if (!Rewind(error)) return false;
    }
    // Skip forward to pos.
    uint8_t scratch[65536];
    while (cursor_ < pos) {
      size_t want = size_t(std::min<uint64_t>(sizeof scratch, pos - cursor_));
      if (!ReadData(scratch, want, error)) return false;
    }
    return ReadData(out, size_t(n), error);
  }

 private:
  bool ReadData(uint8_t* out, size_t n, std::string* error) {
    size_t done = 0;
    while (done < n) {
      la_ssize_t got = archive_read_data(a_.get(), out + done, n - done);
      if (got <= 0) {
        *error = fmt::format("{}: read at byte {}: {}", path_, cursor_,
                             got < 0 ? ArchiveError(a_.get()) : std::string("the member ends early"));
        a_.reset();
        return false;
      }
      done += size_t(got);
      cursor_ += uint64_t(got);
    }
    return true;
  }
  bool Rewind(std::string* error) {
    if (a_) Park(capture_->archive(), member_.ordinal, std::move(a_));
    cursor_ = 0;
    uint64_t first = 0;  // the ordinal of the next header the stream reads
    uint64_t at = 0;
    a_ = Unpark(capture_->archive(), member_.ordinal, &at);
    if (a_) {
      first = at + 1;
    } else {
      a_ = OpenReader(capture_->archive(), error);
      if (!a_) return false;
    }
    for (uint64_t i = first;; ++i) {
      struct archive_entry* e = nullptr;
      int r = archive_read_next_header(a_.get(), &e);
      if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
        *error = fmt::format("{}: the member is no longer in the archive (changed since it was indexed?): {}", path_,
                             r == ARCHIVE_EOF ? std::string("end of archive") : ArchiveError(a_.get()));
        a_.reset();
        return false;
      }
      if (i == member_.ordinal) return true;
    }
  }

  std::shared_ptr<const Capture> capture_;
  const CaptureMember& member_;
  std::string path_;
  ArchivePtr a_;
  uint64_t cursor_ = 0;
};

class CachedReader : public CaptureMemberReader {
 public:
  CachedReader(std::shared_ptr<const Capture> capture, const CaptureMember& member)
      : capture_(std::move(capture)), member_(member) {}
  bool Read(uint64_t pos, uint64_t n, uint8_t* out, std::string* error) override {
    const std::string& b = *member_.cached;
    if (pos > b.size() || n > b.size() - pos) {
      *error = fmt::format("{}: read of {} bytes at byte {} is past its end ({} bytes)",
                           CaptureMemberPath(*capture_, member_), n, pos, b.size());
      return false;
    }
    std::memcpy(out, b.data() + pos, size_t(n));
    return true;
  }

 private:
  std::shared_ptr<const Capture> capture_;
  const CaptureMember& member_;
};

}  // namespace

std::unique_ptr<CaptureMemberReader> OpenCaptureMember(const std::shared_ptr<const Capture>& capture,
                                                       const CaptureMember& member, std::string* error) {
  if (member.cached) return std::make_unique<CachedReader>(capture, member);
  if (member.data_offset >= 0) {
    int fd = ::open(capture->archive().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      *error = capture->archive() + ": " + std::strerror(errno);
      return nullptr;
    }
    return std::make_unique<InPlaceReader>(CaptureMemberPath(*capture, member), fd, uint64_t(member.data_offset),
                                           member.size);
  }
  return std::make_unique<StreamReader>(capture, member);
}

// ---------------------------------------------------------------------------------------------

namespace {

// The capture and member a path names; *stat set when the path runs through an archive.
bool CaptureLookup(const std::string& path, std::shared_ptr<const Capture>* capture, const CaptureMember** member,
                   InputStat* stat) {
  std::string archive, name;
  if (!SplitCapturePath(path, &archive, &name)) return false;
  std::string error;
  *capture = OpenCapture(archive, &error);
  *member = nullptr;
  if (!*capture) {
    stat->kind = InputKind::kUnreadable;
    stat->error = error;
    return true;
  }
  *member = (*capture)->Find(name);
  if (*member == nullptr) {
    stat->kind = InputKind::kMissing;
    return true;
  }
  stat->kind = (*member)->is_dir ? InputKind::kDir : InputKind::kFile;
  stat->size = (*member)->size;
  stat->mtime_ms = (*member)->mtime_ms;
  return true;
}

}  // namespace

InputStat StatInput(const std::string& path) {
  InputStat out;
  std::shared_ptr<const Capture> capture;
  const CaptureMember* member = nullptr;
  if (CaptureLookup(path, &capture, &member, &out)) return out;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      struct stat lst;
      if (::lstat(path.c_str(), &lst) == 0) {
        out.kind = InputKind::kOther;  // a dangling symlink
        return out;
      }
      out.kind = InputKind::kMissing;
      return out;
    }
    out.kind = InputKind::kUnreadable;
    out.error = path + ": " + std::strerror(errno);
    return out;
  }
  out.size = uint64_t(st.st_size);
  out.mtime_ms = MtimeMs(st);
  out.kind = S_ISDIR(st.st_mode) ? InputKind::kDir : S_ISREG(st.st_mode) ? InputKind::kFile : InputKind::kOther;
  return out;
}

bool ListInputDir(const std::string& path, std::vector<InputDirEntry>* out, std::string* error) {
  return ListInputDir(path, out, error, [](std::string_view) { return true; });
}

namespace {

// One entry of a real directory: its kind from d_type, a stat(2) only for the size asked for and for
// what d_type does not settle (symbolic links are followed, as std::filesystem's is_directory does).
InputDirEntry DirEntryOf(const std::string& dir, const struct dirent& d,
                         const std::function<bool(std::string_view)>& size_wanted) {
  InputDirEntry e;
  e.name = d.d_name;
  if (d.d_type == DT_DIR) {
    e.kind = InputKind::kDir;
    return e;
  }
  const bool want_size = size_wanted(e.name);
  if (d.d_type == DT_REG && !want_size) {
    e.kind = InputKind::kFile;
    return e;
  }
  if (d.d_type != DT_REG && d.d_type != DT_LNK && d.d_type != DT_UNKNOWN) return e;  // kOther
  struct stat st;
  if (::stat((dir + "/" + e.name).c_str(), &st) != 0) return e;
  if (S_ISDIR(st.st_mode)) {
    e.kind = InputKind::kDir;
  } else if (S_ISREG(st.st_mode)) {
    e.kind = InputKind::kFile;
    if (want_size) e.size = uint64_t(st.st_size);
  }
  return e;
}

bool ListRealDir(const std::string& path, std::vector<InputDirEntry>* out, std::string* error,
                 const std::function<bool(std::string_view)>& size_wanted) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    *error = std::strerror(errno);
    return false;
  }
  while (true) {
    errno = 0;
    const struct dirent* d = ::readdir(dir);
    if (d == nullptr) break;
    std::string_view name = d->d_name;
    if (name != "." && name != "..") out->push_back(DirEntryOf(path, *d, size_wanted));
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) {
    *error = std::strerror(err);
    return false;
  }
  return true;
}

}  // namespace

bool ListInputDir(const std::string& path, std::vector<InputDirEntry>* out, std::string* error,
                  const std::function<bool(std::string_view)>& size_wanted) {
  out->clear();
  InputStat st;
  std::shared_ptr<const Capture> capture;
  const CaptureMember* member = nullptr;
  if (!CaptureLookup(path, &capture, &member, &st)) return ListRealDir(path, out, error, size_wanted);
  if (st.kind == InputKind::kUnreadable) {
    *error = st.error;
    return false;
  }
  if (st.kind != InputKind::kDir) {
    *error = path + (st.kind == InputKind::kMissing ? ": no such member in the capture" : ": not a directory");
    return false;
  }
  for (const CaptureMember* c : capture->Children(member->name)) {
    size_t slash = c->name.rfind('/');
    InputDirEntry e;
    e.name = slash == std::string::npos ? c->name : c->name.substr(slash + 1);
    e.kind = c->is_dir ? InputKind::kDir : InputKind::kFile;
    e.size = c->size;
    out->push_back(std::move(e));
  }
  return true;
}

}  // namespace klf
