// libFuzzer target: the commands as a whole, not only the decoders (issue "Hostile input and hostile
// paths"). Each input is unpacked into up to three brokers' copies of one partition (segments, indexes,
// snapshots, checkpoints, under any file name the input spells), and klf's own subcommands run on them
// in-process exactly as the binary parses and runs them: dump, verify, compact, reindex, diff, lso,
// repair and repair --salvage. A run must end with a documented exit code (0-3), never a crash, a
// sanitizer report or a hang, and no input file may change.
//
// Input format (scripts/cli_fuzz_seeds.py writes the seeds from the fixtures):
//   byte 0        which commands run: bits 0-2 and 3-5 pick two of the eight, bit 6 --json, bit 7 --bytes hex
//   bytes 1-8     --now (little-endian int64: any value, extremes included)
//   then entries  [replica u8][name length u8][name][data length u16 LE][data]
// Replica 0's files are copied to replicas 1 and 2 before their own entries replace or add files, so the
// replicas differ only where the input says. Names keep [A-Za-z0-9._-] (other bytes become '_'); log-dir
// checkpoint names go beside the partition directory, every other name inside it.
//
// Run with -close_fd_mask=3: the commands print to stdout and stderr, libFuzzer keeps its own stderr.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace {

namespace fs = std::filesystem;

using Files = std::map<std::string, std::string>;

constexpr int kReplicas = 3;

bool IsLogDirFile(const std::string& name) {
  return name == "recovery-point-offset-checkpoint" || name == "replication-offset-checkpoint" ||
         name == "log-start-offset-checkpoint" || name == "cleaner-offset-checkpoint" || name == "meta.properties";
}

std::string CleanName(const uint8_t* p, size_t n) {
  std::string name;
  for (size_t i = 0; i < n; ++i) {
    char c = char(p[i]);
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    name += ok ? c : '_';
  }
  if (name.empty() || name == "." || name == ".." || name == "foo-0") return "";
  return name;
}

struct Input {
  uint8_t commands = 0;
  int64_t now = 0;
  Files files[kReplicas];
};

Input Parse(const uint8_t* data, size_t size) {
  Input in;
  if (size >= 1) in.commands = data[0];
  if (size >= 9) std::memcpy(&in.now, data + 1, 8);
  std::vector<std::pair<int, std::pair<std::string, std::string>>> entries;
  size_t p = 9;
  while (p + 2 <= size) {
    int replica = data[p] % kReplicas;
    size_t name_len = data[p + 1];
    p += 2;
    if (p + name_len + 2 > size) break;
    std::string name = CleanName(data + p, name_len);
    p += name_len;
    size_t len = size_t(data[p]) | size_t(data[p + 1]) << 8;
    p += 2;
    len = std::min(len, size - p);
    if (!name.empty()) entries.push_back({replica, {name, std::string(reinterpret_cast<const char*>(data + p), len)}});
    p += len;
  }
  for (const auto& [replica, file] : entries) {
    if (replica == 0) in.files[0][file.first] = file.second;
  }
  for (int r = 1; r < kReplicas; ++r) in.files[r] = in.files[0];
  for (const auto& [replica, file] : entries) {
    if (replica != 0) in.files[replica][file.first] = file.second;
  }
  return in;
}

// A scratch tree on tmpfs, one per process, emptied before every input.
const std::string& Root() {
  static const std::string root = [] {
    std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
    std::string r = base + "/klf-cli-fuzz-" + std::to_string(getpid());
    fs::remove_all(r);
    fs::create_directories(r);
    return r;
  }();
  return root;
}

void RemoveRoot() {
  std::error_code ec;
  fs::remove_all(Root(), ec);
}

std::string BrokerDir(int r) { return Root() + "/b" + std::to_string(r); }
std::string PartitionDir(int r) { return BrokerDir(r) + "/foo-0"; }

std::string PathOf(int r, const std::string& name) {
  return (IsLogDirFile(name) ? BrokerDir(r) : PartitionDir(r)) + "/" + name;
}

// The files of every replica, with plain system calls (this runs twice per input: std::filesystem and
// iostreams cost more than the commands on small inputs under ASan). The directories stay from one input
// to the next; only their files go.
void RemoveFiles(const std::string& dir, const std::string& keep = "") {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename() == keep) continue;
    if (e.is_directory(ec) && !e.is_symlink(ec)) {
      fs::remove_all(e.path(), ec);
    } else {
      ::unlink(e.path().c_str());
    }
  }
}

void WriteFile(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) abort();
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) abort();
    done += size_t(n);
  }
  ::close(fd);
}

void WriteTree(const Input& in) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(Root(), ec)) {
    if (e.path().filename().string()[0] != 'b') fs::remove_all(e.path(), ec);
  }
  for (int r = 0; r < kReplicas; ++r) {
    fs::create_directories(PartitionDir(r));
    RemoveFiles(BrokerDir(r), "foo-0");  // the broker dir's files and any directory but the partition's
    RemoveFiles(PartitionDir(r));
    for (const auto& [name, bytes] : in.files[r]) WriteFile(PathOf(r, name), bytes);
  }
}

// Whether `path` is a regular file holding exactly `bytes`.
bool SameFile(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  std::string got;
  bool same = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && uint64_t(st.st_size) == bytes.size();
  if (same) {
    got.resize(bytes.size() + 1);  // one more: a file that grew since fstat is not the same
    size_t done = 0;
    for (ssize_t n; (n = ::read(fd, got.data() + done, got.size() - done)) > 0;) done += size_t(n);
    same = done == bytes.size() && std::memcmp(got.data(), bytes.data(), done) == 0;
  }
  ::close(fd);
  return same;
}

// Every input file is as written, and no file appeared in an input directory.
void CheckInputsUnchanged(const Input& in) {
  for (int r = 0; r < kReplicas; ++r) {
    size_t present = 0;
    for (const std::string& dir : {BrokerDir(r), PartitionDir(r)}) {
      for (const auto& e : fs::directory_iterator(dir)) present += e.is_regular_file();
    }
    if (present != in.files[r].size()) abort();
    for (const auto& [name, bytes] : in.files[r]) {
      if (!SameFile(PathOf(r, name), bytes)) abort();
    }
  }
}

// One subcommand, parsed and run as main.cc does it. Only that subcommand is added to the parser: the
// others' options would be built for nothing (CLI11 builds every option object; under ASan that cost
// more than some of the commands), and a command line names one subcommand, so it parses the same.
int RunCommand(std::vector<std::string> args) {
  CLI::App app{"klf", "klf"};
  app.require_subcommand(1);
  klf::cli::Command (*const add)(CLI::App*) = args[0] == "dump"      ? klf::cli::AddDumpCommand
                                              : args[0] == "reindex" ? klf::cli::AddReindexCommand
                                              : args[0] == "compact" ? klf::cli::AddCompactCommand
                                              : args[0] == "verify"  ? klf::cli::AddVerifyCommand
                                              : args[0] == "diff"    ? klf::cli::AddDiffCommand
                                              : args[0] == "repair"  ? klf::cli::AddRepairCommand
                                              : args[0] == "lso"     ? klf::cli::AddLsoCommand
                                                                     : nullptr;
  if (add == nullptr) abort();
  const klf::cli::Command command = add(&app);
  args.insert(args.begin(), "klf");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(int(argv.size()), const_cast<char**>(argv.data()));
  } catch (const CLI::ParseError&) {
    abort();  // the harness builds only valid command lines
  }
  if (!command.app->parsed()) abort();
  return command.run();
}

std::vector<std::string> CommandLine(int which, const Input& in) {
  const std::string out = Root() + "/out";
  const std::string now = std::to_string(in.now);
  switch (which) {
    case 0: return {"dump", "--records", PartitionDir(0)};
    case 1: return {"verify", "--threads", "1", BrokerDir(0)};
    case 2: return {"compact", PartitionDir(0), "--out", out, "--now", now};
    case 3: return {"reindex", PartitionDir(0), "--out", out};
    case 4: return {"diff", "--jobs", "1", PartitionDir(0), PartitionDir(1), PartitionDir(2)};
    case 5: return {"lso", PartitionDir(0), "--replica", PartitionDir(1), "--now", now};
    case 6:
      return {"repair", "--replica", PartitionDir(1), "--replica", PartitionDir(2), "--target", PartitionDir(0),
              "--out",  out,         "--now",         now};
    default: return {"repair", "--salvage", PartitionDir(0), "--out", out};
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Root();
  std::atexit(RemoveRoot);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in = Parse(data, size);
  WriteTree(in);
  for (int which : {in.commands & 7, (in.commands >> 3) & 7}) {
    std::vector<std::string> args = CommandLine(which, in);
    if (in.commands & 0x40) args.insert(args.begin() + 1, "--json");
    if ((in.commands & 0x80) && which == 0) args.insert(args.begin() + 1, {"--bytes", "hex"});
    int rc = RunCommand(args);
    if (rc < 0 || rc > 3) abort();
    CheckInputsUnchanged(in);
    std::error_code ec;
    fs::remove_all(Root() + "/out", ec);
  }
  return 0;
}
