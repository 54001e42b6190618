// `klf digest LOG_DIR... --out FILE [--resume] [--io-rate BYTES_PER_S] [--jobs N] [--force] [--json]`:
// the read of a capture, run on the broker host where the data lives; `klf triage FILE...` judges the
// digests centrally (digest/digest.h, docs/SCALE.md).
//
// It runs what triage runs on a log directory (scan, verify, LoadReplica of every partition copy, verify
// riding on each copy's load so that the copy is read once) and writes, instead of findings, each copy's
// state as a section of the digest, and the log dirs' problems last. Read-only. The process
// lowers its own CPU priority (nice 19) and IO priority (idle class) first, best effort, and --io-rate
// caps its read rate. Sections go to `FILE.partial` as each partition is done; the finished file is
// renamed to FILE. --resume continues a `FILE.partial` left by an interrupted run: the partitions it
// holds are not loaded again (verify still reads them: what they add to the log dirs' problems is not in
// their sections).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/output.h"
#include "diff/replica_state.h"
#include "digest/digest.h"
#include "segment_reader/crc.h"
#include "segment_reader/parallel.h"
#include "segment_reader/read_throttle.h"
#include "segment_writer/output_guard.h"
#include "triage/triage.h"

namespace klf::cli {
namespace {

struct DigestArgs {
  std::vector<std::string> log_dirs;
  std::string out;
  bool resume = false;
  bool force = false;
  bool json = false;
  bool headers_only = false;
  bool keep_priority = false;
  uint64_t io_rate = 0;
  unsigned jobs = 1;
  std::optional<int64_t> now;
  int64_t producer_id_expiration_ms = 86400000;
};

// Best effort: nice 19 and the idle IO class (ioprio_set has no glibc wrapper). What it managed, as text.
std::string LowerPriority() {
  std::vector<std::string> done;
  errno = 0;
  if (::setpriority(PRIO_PROCESS, 0, 19) == 0) done.push_back("nice 19");
#ifdef SYS_ioprio_set
  constexpr int kWhoProcess = 1, kClassIdle = 3, kClassShift = 13;
  if (::syscall(SYS_ioprio_set, kWhoProcess, 0, kClassIdle << kClassShift) == 0) done.push_back("idle IO class");
#endif
  return done.empty() ? "unchanged" : fmt::format("{}", fmt::join(done, ", "));
}

// Every file of a partition directory: name, size, mtime (what triage names to fetch).
std::vector<DigestFileInfo> ListFiles(const std::string& dir) {
  std::vector<DigestFileInfo> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    struct stat st;
    if (::lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    DigestFileInfo f;
    f.name = e.path().filename().string();
    f.size = uint64_t(st.st_size);
    f.mtime_ms = int64_t(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
    files.push_back(std::move(f));
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return files;
}

// The partial digest: appended to section by section, fsynced and renamed at the end.
class PartialFile {
 public:
  ~PartialFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool Open(const std::string& path, uint64_t keep, uint32_t crc, std::string* error) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0 || ::ftruncate(fd_, off_t(keep)) != 0 || ::lseek(fd_, off_t(keep), SEEK_SET) < 0) {
      *error = fmt::format("{}: {}", path, std::strerror(errno));
      return false;
    }
    size_ = keep;
    crc_ = crc;
    return true;
  }
  bool Append(std::string_view data, std::string* error) {
    std::lock_guard<std::mutex> lock(mu_);
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        *error = fmt::format("{}: write at byte {}: {}", path_, size_, std::strerror(errno));
        return false;
      }
      p += n;
      left -= size_t(n);
      size_ += uint64_t(n);
    }
    crc_ = Crc32cExtend(crc_, AsBytes(data));
    return true;
  }
  // Trailer, fsync, rename to `final_path`, fsync of the directory.
  bool Finish(uint64_t sections, const std::string& final_path, std::string* error) {
    if (!Append(DigestTrailer(sections, crc_), error)) return false;
    if (::fsync(fd_) != 0) {
      *error = fmt::format("{}: fsync: {}", path_, std::strerror(errno));
      return false;
    }
    ::close(fd_);
    fd_ = -1;
    if (::rename(path_.c_str(), final_path.c_str()) != 0) {
      *error = fmt::format("{}: rename to {}: {}", path_, final_path, std::strerror(errno));
      return false;
    }
    std::string dir = std::filesystem::path(final_path).parent_path().string();
    int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    return true;
  }
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint32_t crc_ = 0;
  std::mutex mu_;
};

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the command's flag checks and its steps (guard, priority, scan, verify, each copy, rename), each with its error exit
int RunDigest(const DigestArgs& a) {
  const std::string command = "digest";
  auto start = std::chrono::steady_clock::now();
  std::string error;
  CheckedOutput out_path;
  if (!CheckOutputPath({a.out, OutputKind::kFile, a.log_dirs, a.force}, &out_path, &error)) {
    return Fail(command, kExitUsage, error, a.json);
  }
  const std::string partial = out_path.path + ".partial";
  if (!CheckOutputPath({partial, OutputKind::kFile, a.log_dirs, true}, nullptr, &error)) {
    return Fail(command, kExitUsage, error, a.json);
  }
  std::string priority = a.keep_priority ? "unchanged (--keep-priority)" : LowerPriority();
  SetReadRateLimit(a.io_rate);

  // Scan and verify the log dirs (what triage does), then the copies one partition at a time.
  TriageOptions options;
  options.jobs = a.jobs;
  options.now_ms = a.now;
  options.producer_id_expiration_ms = a.producer_id_expiration_ms;
  options.verify_records = !a.headers_only;
  TriageReport scan;
  if (!TriageScan(a.log_dirs, options, &scan, &error)) return Fail(command, kExitUsage, error, a.json);

  DigestCapture cap;
  cap.klf_version = CurrentInvocation().version;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) cap.host = host;
  cap.created_ms = WallClockMs();
  cap.log_dirs = scan.log_dirs;
  cap.brokers = scan.log_dir_brokers;
  cap.log_dir_problems = LogDirPassProblems(scan);  // the whole list closes the file
  cap.now_ms = options.now_ms;
  cap.producer_id_expiration_ms = options.producer_id_expiration_ms;
  cap.verify_records = options.verify_records;

  // --resume: the complete sections of FILE.partial are kept (same log dirs and options only).
  PartialFile file;
  std::set<std::string> done;  // copy paths already in the partial digest
  uint64_t sections = 0, resumed = 0;
  uint64_t keep = 0;
  uint32_t crc = 0;
  if (a.resume && std::filesystem::exists(partial)) {
    DigestFile prev;
    if (!ReadPartialDigest(partial, &prev, &keep, &crc, &error)) return Fail(command, kExitUsage, error, a.json);
    const DigestCapture& p = prev.capture;
    if (keep > kDigestHeaderSize) {
      if (p.log_dirs != cap.log_dirs || p.now_ms != cap.now_ms ||
          p.producer_id_expiration_ms != cap.producer_id_expiration_ms || p.verify_records != cap.verify_records) {
        return Fail(command, kExitUsage,
                    fmt::format("{}: was started with other log dirs or options; --resume continues the same run "
                                "(remove it to start again)",
                                partial),
                    a.json);
      }
      sections = 1 + prev.copies.size();
      for (const DigestCopy& c : prev.copies) done.insert(c.path);
      resumed = prev.copies.size();
    }
  }
  if (keep <= kDigestHeaderSize) {
    keep = 0;
    crc = 0;
  }
  if (!file.Open(partial, keep, crc, &error)) return Fail(command, kExitUnreadable, error, a.json);
  if (keep == 0) {
    if (!file.Append(DigestFileHeader(), &error) ||
        !file.Append(DigestSection(kDigestSectionCapture, EncodeDigestCapture(cap)), &error)) {
      return Fail(command, kExitUnreadable, error, a.json);
    }
    sections = 1;
  }

  ReplicaOptions ro;
  ro.now_ms = options.now_ms;
  ro.producer_id_expiration_ms = options.producer_id_expiration_ms;
  ro.key_view = false;  // not written: triage builds it from the records
  std::mutex mu;
  std::string write_error;
  uint64_t data_bytes = 0, copies = 0, unreadable = 0;
  ParallelFor(scan.partitions.size(), a.jobs, [&](size_t i) {
    TriagePartition& p = scan.partitions[i];
    std::string sections_of_partition;
    uint64_t n = 0, bytes = 0, bad = 0;
    for (size_t k = 0; k < p.copies.size(); ++k) {
      const TriageCopy& tc = p.copies[k];
      DigestCopy c;
      c.files = ListFiles(tc.path);
      for (const DigestFileInfo& f : c.files) bytes += f.size;
      // verify rides on the copy's load: the copy is read once. (A copy the resumed run holds is
      // verified alone: what it adds to the log dir's problems is not in its section.)
      CheckCopy check(tc, options);
      if (done.count(tc.path)) {
        check.Finish(&p.damage[k]);
        continue;
      }
      c.partition = p.name;
      c.log_dir = tc.log_dir;
      c.path = tc.path;
      c.broker = tc.broker;
      ReplicaOptions with = ro;
      with.rider = check.rider();
      c.loaded = LoadReplica(tc.path, with, &c.state, &c.error);
      check.Finish(&p.damage[k]);
      c.damage = DigestDamage{p.damage[k].errors, p.damage[k].warnings, p.damage[k].first_error};
      if (!c.loaded) {
        c.state = ReplicaState();
        ++bad;
      }
      sections_of_partition += DigestSection(kDigestSectionCopy, EncodeDigestCopy(c));
      ++n;
    }
    std::lock_guard<std::mutex> lock(mu);
    data_bytes += bytes;
    copies += n;
    unreadable += bad;
    if (n > 0 && write_error.empty()) {
      if (file.Append(sections_of_partition, &write_error)) sections += n;
    }
  });
  if (!write_error.empty()) return Fail(command, kExitUnreadable, write_error, a.json);
  FinishLogDirProblems(&scan);
  if (!file.Append(DigestSection(kDigestSectionLogDirProblems, EncodeLogDirProblems(scan.log_dir_problems)), &error))
    return Fail(command, kExitUnreadable, error, a.json);
  ++sections;
  if (!file.Finish(sections, out_path.path, &error)) return Fail(command, kExitUnreadable, error, a.json);

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  uint64_t size = file.size();
  Output out(1);
  if (a.json) {
    nlohmann::json j = {{"digest", out_path.path},
                        {"logDirs", scan.log_dirs},
                        {"brokers", scan.log_dir_brokers},
                        {"partitions", scan.partitions.size()},
                        {"copies", copies + resumed},
                        {"resumedCopies", resumed},
                        {"unreadableCopies", unreadable},
                        {"dataBytes", data_bytes},
                        {"digestBytes", size},
                        {"bytesRead", BytesThrottled()},
                        {"seconds", seconds},
                        {"ioRate", a.io_rate},
                        {"priority", priority},
                        {"format", fmt::format("{}.{}", kDigestMajor, kDigestMinor)}};
    WriteJson(&out, j);
    out.Append("\n");
  } else {
    out.Append(fmt::format(
        "klf digest: {} ({} bytes, {:.2f}% of {} bytes of data) from {} log dir{}, {} partitions, {} copies{}; read {} "
        "bytes in {:.1f} s; priority {}\n",
        out_path.path, size, data_bytes ? 100.0 * double(size) / double(data_bytes) : 0.0, data_bytes,
        scan.log_dirs.size(), scan.log_dirs.size() == 1 ? "" : "s", scan.partitions.size(), copies + resumed,
        resumed ? fmt::format(" ({} from the resumed run)", resumed) : "", BytesThrottled(), seconds, priority));
  }
  return kExitOk;
}

}  // namespace

Command AddDigestCommand(CLI::App* parent) {
  auto args = std::make_shared<DigestArgs>();
  CLI::App* app =
      parent->add_subcommand("digest", "Summarize a broker's log dirs for klf triage (run where the data lives)");
  app->footer(
      "Reads every partition copy of the LOG_DIRs (read-only, at low CPU and IO priority) and writes what klf\n"
      "triage needs to judge them into one versioned, checksummed file: klf triage FILE... (digests of several\n"
      "brokers, or digests and log dirs mixed) gives the same findings as klf triage over the directories.\n"
      "The file is written as FILE.partial and renamed when complete; --resume continues an interrupted run.\n"
      "Exit 0 when the digest was written (problems in the data are triage's to report), 2 usage, 3 a file\n"
      "could not be written.");
  app->add_option("LOG_DIR", args->log_dirs, "broker log directories (never modified)")->required()->type_name("DIR");
  app->add_option("--out", args->out, "the digest file to write")->required()->type_name("FILE");
  app->add_flag("--resume", args->resume, "continue FILE.partial left by an interrupted run");
  app->add_flag("--force", args->force, "replace an existing FILE that a previous klf digest wrote");
  app->add_option("--io-rate", args->io_rate, "cap on the read rate, bytes per second (default: none)")
      ->type_name("BYTES_PER_S");
  app->add_flag("--keep-priority", args->keep_priority, "do not lower the process's CPU and IO priority");
  app->add_option("--jobs", args->jobs, "partitions read at once (default 1)")->check(CLI::Range(1, 256));
  app->add_option("--now", args->now, "clock (ms) for producer expiration; triage must be run with the same")
      ->type_name("MS");
  app->add_option("--producer-id-expiration-ms", args->producer_id_expiration_ms,
                  "producer.id.expiration.ms (default 86400000; triage must be run with the same)");
  app->add_flag("--headers-only", args->headers_only, "verify only framing, CRCs and batch headers (faster)");
  app->add_flag("--json", args->json, "the summary as one JSON object");
  return {app, [args] { return RunDigest(*args); }};
}

}  // namespace klf::cli
