// The output guard (see output_guard.h).
#include "segment_writer/output_guard.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>

#include "segment_reader/bytes.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

// Files only a broker log directory holds (LogManager and ReplicaManager write them at its top).
constexpr const char* kLogDirFiles[] = {"recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                                        "log-start-offset-checkpoint", "cleaner-offset-checkpoint", "meta.properties"};

// Linux gives up after 40 symlinks in one lookup (ELOOP); so do we.
constexpr int kMaxSymlinks = 40;

bool IsBrokerLogDir(const std::string& dir) {
  for (const char* name : kLogDirFiles) {
    struct stat st;
    if (::lstat((dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) return true;
  }
  return false;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsEmptyDir(const std::string& path) {
  std::error_code ec;
  return fs::is_empty(path, ec) && !ec;
}

// An input as the user named it (for messages) and as the guard compares it.
struct GuardedInput {
  std::string shown;
  std::string real;
};

std::vector<GuardedInput> ExpandInputs(const std::vector<std::string>& inputs) {
  std::vector<GuardedInput> out;
  for (const std::string& input : inputs) {
    std::string real = ResolvePath(input);
    out.push_back({input, real});
    if (!IsDirectory(real)) continue;
    // A partition directory's checkpoints live in its parent log dir, which klf reads too.
    std::string parent = fs::path(real).parent_path().string();
    if (parent != real && IsBrokerLogDir(parent)) {
      out.push_back({parent + " (the broker log directory of the input " + input + ")", parent});
    }
  }
  return out;
}

// The output as given, and what it resolves to when that differs.
std::string Shown(const OutputRequest& r, const std::string& real) {
  std::string plain = fs::absolute(r.path).lexically_normal().string();
  while (plain.size() > 1 && plain.back() == '/') plain.pop_back();
  return plain == real ? r.path : r.path + " (resolves to " + real + ")";
}

bool CheckAgainstInputs(const OutputRequest& r, const std::string& real, std::string* error) {
  for (const GuardedInput& in : ExpandInputs(r.inputs)) {
    const char* why = real == in.real                 ? "is the input"
                      : IsSameOrInside(real, in.real) ? "lies inside the input"
                      : IsSameOrInside(in.real, real) ? "would contain the input"
                                                      : nullptr;
    if (why == nullptr) continue;
    *error = Shown(r, real) + ": refusing to write there: the output " + why + " " + in.shown +
             "; klf never writes into, over or around what it reads";
    return false;
  }
  return true;
}

// What is already at the output path: nothing, or something only a klf output (with --force) or an
// empty directory/file may be.
bool CheckExisting(const OutputRequest& r, const std::string& real, CheckedOutput* checked, std::string* error) {
  const std::string shown = Shown(r, real);
  struct stat st;
  if (::stat(real.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      struct stat link;
      if (::lstat(r.path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
        *error = r.path + ": refusing to write there: it is a symlink to " + real + ", which does not exist";
        return false;
      }
      return true;
    }
    *error = shown + ": refusing to write there: " + std::strerror(errno);
    return false;
  }
  checked->exists = true;
  const bool want_dir = r.kind == OutputKind::kDirectory;
  if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    *error = shown + ": refusing to replace it: it exists and is not a " + (want_dir ? "directory" : "regular file") +
             " klf wrote";
    return false;
  }
  if (want_dir ? IsEmptyDir(real) : st.st_size == 0) return true;
  if (!IsKlfOutput(real, r.kind)) {
    *error = shown + ": refusing to replace it: it exists, is not empty and is not a klf output (" +
             (want_dir ? std::string("no ") + kOutputMarkerName + " marker" : std::string("no klf report marker")) +
             "); --force replaces only a previous klf output: remove it yourself or choose another path";
    return false;
  }
  if (!r.force) {
    *error = shown + ": exists and is not empty (a previous klf output: use --force to replace it)";
    return false;
  }
  return true;
}

}  // namespace

std::string ResolvePath(const std::string& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  std::deque<std::string> todo;
  for (const fs::path& c : abs.relative_path()) todo.push_back(c.string());
  fs::path result = "/";
  int links = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      result = result.parent_path();
      continue;
    }
    fs::path next = result / c;
    struct stat st;
    if (::lstat(next.c_str(), &st) == 0 && S_ISLNK(st.st_mode) && links < kMaxSymlinks) {
      fs::path target = fs::read_symlink(next, ec);
      if (!ec) {
        ++links;
        // The target's components replace the link's; a relative target starts at the link's directory.
        std::vector<std::string> parts;
        for (const fs::path& t : target.relative_path()) parts.push_back(t.string());
        todo.insert(todo.begin(), parts.begin(), parts.end());
        if (target.is_absolute()) result = "/";
        continue;
      }
    }
    result = next;
  }
  return result.string();
}

bool IsSameOrInside(const std::string& inner, const std::string& outer) {
  if (inner == outer || outer == "/") return true;
  return inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/';
}

std::vector<std::string> GuardedInputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const GuardedInput& in : ExpandInputs(inputs)) out.push_back(in.real);
  return out;
}

bool IsKlfOutput(const std::string& path, OutputKind kind) {
  std::string head(256, '\0');
  const std::string file = kind == OutputKind::kDirectory ? path + "/" + kOutputMarkerName : path;
  struct stat st;
  if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::ifstream f(file, std::ios::binary);
  f.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(f.gcount()));
  if (kind == OutputKind::kDirectory) return head.starts_with(kOutputMarkerHeader);
  if (head.starts_with(kDigestOutputMagic)) return true;  // a digest (klf digest, digest/digest.h)
  // The HTML marker is the comment right after the doctype, within the first line or two.
  return head.find(kHtmlOutputMarker) != std::string::npos;
}

std::string OutputMarkerContent(std::string_view command) {
  return std::string(kOutputMarkerHeader) + "\nwritten by: klf " + std::string(command) +
         "\nThis directory is a klf output: klf replaces it only when run again with --force. Kafka ignores "
         "this file.\n";
}

bool CheckOutputPath(const OutputRequest& request, CheckedOutput* checked, std::string* error) {
  CheckedOutput ignored;
  if (checked == nullptr) checked = &ignored;
  *checked = CheckedOutput{};
  if (request.path.empty()) {
    *error = "the output path is empty";
    return false;
  }
  const std::string real = ResolvePath(request.path);
  if (!CheckAgainstInputs(request, real, error)) return false;
  if (!CheckExisting(request, real, checked, error)) return false;
  // A symlink named as the output is written through: its target is what gets replaced.
  struct stat link;
  bool is_link = ::lstat(request.path.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
  checked->path = is_link ? real : request.path;
  return true;
}

bool ValidateTopicName(std::string_view topic, std::string* error) {
  const std::string shown = "topic \"" + FormatBytes(AsBytes(topic), BytesFormat::kText) + "\"";
  if (topic.empty() || topic.size() > 249) {
    *error = shown + ": a topic name has 1 to 249 characters (Kafka's Topic.validate)";
    return false;
  }
  if (topic == "." || topic == "..") {
    *error = shown + ": \".\" and \"..\" are not topic names (Kafka's Topic.validate)";
    return false;
  }
  for (char c : topic) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      *error = shown + ": a topic name holds only ASCII letters, digits, '.', '_' and '-' (Kafka's Topic.validate)";
      return false;
    }
  }
  return true;
}

bool ValidatePathComponent(std::string_view name, std::string* error) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos) {
    *error = "\"" + FormatBytes(AsBytes(name), BytesFormat::kText) + "\": not usable as a file name";
    return false;
  }
  return true;
}

}  // namespace klf
