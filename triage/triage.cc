#include "triage/triage.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "diff/lso.h"
#include "diff/replica_state.h"
#include "digest/digest.h"
#include "segment_reader/java_long.h"
#include "segment_reader/layout.h"
#include "segment_reader/parallel.h"
#include "segment_reader/problem.h"
#include "verify/verify.h"

namespace klf {

const char* TriageStatusName(TriageStatus s) {
  switch (s) {
    case TriageStatus::kDiverged: return "diverged";
    case TriageStatus::kUndecided: return "undecided";
    case TriageStatus::kPinned: return "pinned";
    case TriageStatus::kDamaged: return "damaged";
    case TriageStatus::kLagging: return "lagging";
    case TriageStatus::kSingleCopy: return "single_copy";
    case TriageStatus::kHealthy: return "healthy";
  }
  return "healthy";
}

bool TriagePartition::diverged() const { return diff && diff->HasDivergence(); }
bool TriagePartition::pinned() const {
  return std::any_of(copies.begin(), copies.end(), [](const TriageCopy& c) { return !c.pinned_by.empty(); });
}
bool TriagePartition::damaged() const {
  for (size_t i = 0; i < copies.size(); ++i) {
    if (!copies[i].loaded || damage[i].errors > 0) return true;
  }
  return false;
}
bool TriagePartition::lagging() const {
  return std::any_of(copies.begin(), copies.end(), [](const TriageCopy& c) { return c.lag > 0; });
}

namespace {

// Errors of log-dir files kept for the report, in all.
constexpr size_t kMaxLogDirProblems = 100;

// Attributes verify's problems to the partition copy whose directory holds the file. VerifyPath
// forwards problems from one thread at a time, so no lock is needed.
class DamageSink : public ProblemSink {
 public:
  DamageSink(std::map<std::string, TriageDamage*> by_dir, std::vector<std::string>* log_dir_problems)
      : by_dir_(std::move(by_dir)), log_dir_problems_(log_dir_problems) {}

  void Report(const Problem& p) override {
    if (p.severity == Severity::kInfo) return;
    TriageDamage* d = Find(p.file);
    if (d == nullptr) {
      // A log-dir file (a checkpoint, meta.properties) or a directory that is not a partition.
      if (p.severity == Severity::kError && log_dir_problems_->size() < kMaxLogDirProblems) {
        log_dir_problems_->push_back(Describe(p));
      }
      return;
    }
    if (p.severity == Severity::kError) {
      if (d->errors++ == 0) d->first_error = Describe(p);
    } else {
      ++d->warnings;
    }
  }

 private:
  static std::string Describe(const Problem& p) {
    return fmt::format("{}:{} {}: {}", p.file, p.position, p.check, p.message);
  }
  TriageDamage* Find(const std::string& file) {
    auto it = by_dir_.find(file);
    if (it == by_dir_.end()) it = by_dir_.find(std::filesystem::path(file).parent_path().string());
    return it == by_dir_.end() ? nullptr : it->second;
  }

  std::map<std::string, TriageDamage*> by_dir_;
  std::vector<std::string>* log_dir_problems_;
};

}  // namespace

CheckCopy::CheckCopy(const TriageCopy& copy, const TriageOptions& options)
    : path_(copy.path), check_(copy.path, [&] {
        VerifyOptions vo;
        vo.check_records = options.verify_records;
        return vo;
      }()) {}

void CheckCopy::Finish(TriageDamage* damage) {
  // The copy's problems, attributed as in the log dir's pass: to the copy when the file is in its
  // directory, else to its log dir.
  DamageSink sink({{path_, damage}}, &damage->other_files);
  VerifyStats s = check_.Finish(&sink);
  if (s.unreadable) damage->unreadable = s.unreadable_reason;
}

namespace {

void AppendCapped(const std::vector<std::string>& from, std::vector<std::string>* out) {
  for (const std::string& p : from)
    if (out->size() < kMaxLogDirProblems) out->push_back(p);
}

// What the checks of log dir `dir`'s copies found for it: their errors outside their directories
// (appended to *out, by partition name) and the first file one could not read (returned).
std::string AppendCopiesFindings(const TriageReport& report, const std::string& dir, std::vector<std::string>* out) {
  std::string unreadable;
  for (const TriagePartition& p : report.partitions) {
    for (size_t i = 0; i < p.copies.size(); ++i) {
      if (p.copies[i].source || p.copies[i].log_dir != dir) continue;
      AppendCapped(p.damage[i].other_files, out);
      if (unreadable.empty()) unreadable = p.damage[i].unreadable;
    }
  }
  return unreadable;
}

// The log dirs' problems after those already in *list: with_copies adds what the copies' checks found.
void AppendLogDirProblems(const TriageReport& report, bool with_copies, std::vector<std::string>* list) {
  for (const LogDirVerify& v : report.log_dir_verify) {
    AppendCapped(v.problems, list);
    const std::string copies = with_copies ? AppendCopiesFindings(report, v.log_dir, list) : std::string();
    const std::string& unreadable = v.unreadable.empty() ? copies : v.unreadable;
    if (!unreadable.empty()) list->push_back(unreadable);
  }
}

}  // namespace

std::vector<std::string> LogDirPassProblems(const TriageReport& report) {
  std::vector<std::string> out = report.log_dir_problems;
  AppendLogDirProblems(report, /*with_copies=*/false, &out);
  return out;
}

void FinishLogDirProblems(TriageReport* report) {
  AppendLogDirProblems(*report, /*with_copies=*/true, &report->log_dir_problems);
  report->log_dir_verify.clear();
}

namespace {

std::string PinnedSentence(const LsoReport& r) {
  if (!r.pinned()) return "";
  const OpenTxn& t = *r.pinned_by;
  return fmt::format("LSO {} pinned below the high watermark {} by producer {} epoch {} (open from offset {})",
                     r.last_stable_offset, r.high_watermark, t.producer_id, t.producer_epoch, t.first_offset);
}

void FillCopy(const ReplicaState& r, const LsoReport& lso, TriageCopy* c) {
  c->loaded = true;
  c->log_start_offset = r.log_start_offset;
  c->log_end_offset = r.log_end_offset;
  c->high_watermark = r.high_watermark;
  c->last_stable_offset = r.last_stable_offset;
  c->pinned_by = PinnedSentence(lso);
}

// A copy's state from its digest (why not, in *error).
bool DigestState(const TriageCopy& c, ReplicaState* r, std::string* error) {
  DigestCopy& dc = c.source->copies[c.source_copy];
  if (!dc.loaded) {
    *error = dc.error;
    return false;
  }
  if (!DecodeDigestState(*c.source, &dc, error)) return false;
  *r = std::move(dc.state);
  dc.state_decoded = false;
  return true;
}

// Every copy that loads takes part in the diff; one that does not is named with its error (errors[i]
// for copies[i]). A copy from a digest is decoded from it. Returns whether any copy came from a digest.
// checks[i] (when given and not null) rides on copies[i]'s load.
bool LoadCopiesForDiff(const TriagePartition& p, const ReplicaOptions& ro, std::vector<ReplicaState>* replicas,
                       std::vector<size_t>* loaded, std::vector<std::string>* errors,
                       std::vector<std::unique_ptr<CheckCopy>>* checks = nullptr) {
  const size_t n = p.copies.size();
  bool any_digest = false;
  for (const TriageCopy& c : p.copies) any_digest = any_digest || c.source != nullptr;
  errors->assign(n, "");
  replicas->clear();
  replicas->reserve(n);              // the reference below points into it
  std::vector<size_t> reference_at;  // the first directory loaded is the others' reference (LoadReplicas)
  for (size_t i = 0; i < n; ++i) {
    ReplicaState r;
    const TriageCopy& c = p.copies[i];
    if (c.source) {
      if (!DigestState(c, &r, &(*errors)[i])) continue;
    } else {
      ReplicaOptions with = ro;
      if (!reference_at.empty()) with.reference = &(*replicas)[reference_at.front()];
      if (checks && (*checks)[i]) with.rider = (*checks)[i]->rider();
      if (!LoadReplica(c.path, with, &r, &(*errors)[i])) continue;
      reference_at.push_back(replicas->size());
    }
    replicas->push_back(std::move(r));
    loaded->push_back(i);
  }
  return any_digest;
}

// The replicas are named by broker; by path when two copies have the same broker.
void LabelReplicas(const TriagePartition& p, const std::vector<size_t>& loaded, std::vector<ReplicaState>* replicas) {
  for (size_t k = 0; k < replicas->size(); ++k) (*replicas)[k].label = p.copies[loaded[k]].broker;
  std::set<std::string> labels;
  for (const ReplicaState& r : *replicas) labels.insert(r.label);
  if (labels.size() != replicas->size()) {
    for (ReplicaState& r : *replicas) r.label = r.path;
  }
}

ReplicaOptions ReplicaOptionsOf(const TriageOptions& options) {
  ReplicaOptions ro;
  ro.now_ms = options.now_ms;
  ro.producer_id_expiration_ms = options.producer_id_expiration_ms;
  return ro;
}

// A CheckCopy for each copy read from its directory (null for one from a digest).
std::vector<std::unique_ptr<CheckCopy>> ChecksFor(const TriagePartition& p, const TriageOptions& options) {
  std::vector<std::unique_ptr<CheckCopy>> checks(p.copies.size());
  for (size_t i = 0; i < p.copies.size(); ++i) {
    if (!p.copies[i].source) checks[i] = std::make_unique<CheckCopy>(p.copies[i], options);
  }
  return checks;
}

void FinishChecks(std::vector<std::unique_ptr<CheckCopy>>* checks, TriagePartition* p) {
  for (size_t i = 0; i < checks->size(); ++i)
    if ((*checks)[i]) (*checks)[i]->Finish(&p->damage[i]);
}

// The work of one partition: load its copies, diff them, explain each copy's LSO.
void TriageOne(const TriageOptions& options, TriagePartition* p) {
  ReplicaOptions ro = ReplicaOptionsOf(options);
  LsoOptions lo;
  lo.now_ms = options.now_ms;
  lo.producer_id_expiration_ms = options.producer_id_expiration_ms;
  lo.wall_clock_times = options.wall_clock_times;
  const std::vector<ReplicaState> no_others;

  // Verify rides on each directory copy's load (CheckCopy): the copy is read once.
  std::vector<std::unique_ptr<CheckCopy>> checks = ChecksFor(*p, options);
  auto finish_checks = [&] { FinishChecks(&checks, p); };
  if (p->copies.size() == 1) {
    ro.transactions_only = true;  // no diff: memory independent of the record count
    ReplicaState r;
    TriageCopy& c = p->copies.front();
    if (checks[0]) ro.rider = checks[0]->rider();
    const bool ok = c.source ? DigestState(c, &r, &c.error) : LoadReplica(c.path, ro, &r, &c.error);
    finish_checks();
    if (ok) FillCopy(r, ExplainLso(r, no_others, lo), &c);
    return;
  }
  std::vector<ReplicaState> replicas;
  std::vector<size_t> loaded;  // replicas[i] is copies[loaded[i]]
  std::vector<std::string> errors;
  const bool any_digest = LoadCopiesForDiff(*p, ro, &replicas, &loaded, &errors, &checks);
  finish_checks();
  for (size_t i = 0; i < errors.size(); ++i) p->copies[i].error = errors[i];
  LabelReplicas(*p, loaded, &replicas);
  for (size_t k = 0; k < replicas.size(); ++k) {
    FillCopy(replicas[k], ExplainLso(replicas[k], no_others, lo), &p->copies[loaded[k]]);
  }
  if (replicas.size() >= 2 && any_digest &&
      !RestoreElidedRecords(&replicas, &p->undecided, &p->undecided_first, &p->undecided_last)) {
    p->diff_copies = loaded;
  } else if (replicas.size() >= 2) {
    DiffOptions diff_options;
    diff_options.wall_clock_times = options.wall_clock_times;
    p->diff = DiffReplicas(replicas, diff_options);
    for (const ReplicaState& r : replicas) p->diff_labels.push_back(r.label);
    p->diff_copies = loaded;
  }
  int64_t max_end = 0;
  for (const TriageCopy& c : p->copies) {
    if (c.loaded) max_end = std::max(max_end, c.log_end_offset);
  }
  for (TriageCopy& c : p->copies) {
    if (c.loaded) c.lag = max_end - c.log_end_offset;
  }
}

TriageStatus StatusOf(const TriagePartition& p) {
  if (p.diverged()) return TriageStatus::kDiverged;
  if (!p.undecided.empty()) return TriageStatus::kUndecided;
  if (p.pinned()) return TriageStatus::kPinned;
  if (p.damaged()) return TriageStatus::kDamaged;
  if (p.lagging()) return TriageStatus::kLagging;
  if (p.copies.size() == 1) return TriageStatus::kSingleCopy;
  return TriageStatus::kHealthy;
}

}  // namespace

namespace {

// Step 1 for one log directory: its live partition directories, grouped by name.
bool ScanOne(const std::string& path, TriageReport* out, std::map<std::string, std::vector<TriageCopy>>* by_name,
             std::string* error) {
  PathInfo info = ClassifyPath(path);
  if (info.kind != PathKind::kLogDir) {
    *error = fmt::format(
        "{}: not a broker log directory ({}) nor a klf digest; triage takes the log directories of a capture, or "
        "digests of them",
        path, PathKindName(info.kind));
    return false;
  }
  // Listed, not scanned: verify scans every partition below and TriageOne loads the ones it compares.
  std::vector<LivePartitionDir> live;
  std::string why;
  if (!ListLivePartitionDirs(info.path, &live, &why)) {
    *error = info.path + ": cannot list the directory";
    return false;
  }
  std::string broker = std::filesystem::path(info.path).filename().string();
  std::optional<MetaProperties> meta = ReadLogDirMetaProperties(info.path);
  if (meta && meta->node_id()) broker = fmt::format("broker {}", *meta->node_id());
  if (std::find(out->brokers.begin(), out->brokers.end(), broker) == out->brokers.end()) {
    out->brokers.push_back(broker);
  }
  out->log_dir_brokers.push_back(broker);
  for (LivePartitionDir& pd : live) {
    TriageCopy c;
    c.log_dir = info.path;
    c.path = std::move(pd.path);
    c.broker = broker;
    (*by_name)[pd.name].push_back(std::move(c));
  }
  return true;
}

// Step 1 for one digest: its copies, its log dirs' brokers and problems (verify ran where it was made).
bool AddDigest(const std::string& path, const TriageOptions& options, TriageReport* out,
               std::map<std::string, std::vector<TriageCopy>>* by_name, std::map<std::string, size_t>* from_digest,
               std::string* error) {
  auto file = std::make_shared<DigestFile>();
  if (!ReadDigestFile(path, file.get(), error, /*keep_states=*/false)) {
    out->input_unreadable = true;
    return false;
  }
  const DigestCapture& cap = file->capture;
  std::string other;
  if (cap.now_ms != options.now_ms) {
    other = fmt::format("--now {}", cap.now_ms ? std::to_string(*cap.now_ms) : "unset");
  } else if (cap.producer_id_expiration_ms != options.producer_id_expiration_ms) {
    other = fmt::format("--producer-id-expiration-ms {}", cap.producer_id_expiration_ms);
  } else if (cap.verify_records != options.verify_records) {
    other = cap.verify_records ? "full record verification" : "--headers-only";
  }
  if (!other.empty()) {
    *error = fmt::format("{}: this digest was made with {}: run klf triage with the same options (or digest again)",
                         path, other);
    return false;
  }
  out->digests.push_back(path);
  for (size_t i = 0; i < cap.log_dirs.size(); ++i) {
    out->log_dirs.push_back(cap.log_dirs[i]);
    const std::string& broker = cap.brokers[i];
    if (std::find(out->brokers.begin(), out->brokers.end(), broker) == out->brokers.end()) {
      out->brokers.push_back(broker);
    }
  }
  for (const std::string& p : cap.log_dir_problems) out->log_dir_problems.push_back(p);
  for (size_t i = 0; i < file->copies.size(); ++i) {
    const DigestCopy& dc = file->copies[i];
    TriageCopy c;
    c.log_dir = dc.log_dir;
    c.path = dc.path;
    c.broker = dc.broker;
    c.digest = path;
    c.files = dc.files;
    c.source = file;
    c.source_copy = i;
    (*from_digest)[dc.path] = i;
    (*by_name)[dc.partition].push_back(std::move(c));
  }
  return true;
}

void GroupPartitions(std::map<std::string, std::vector<TriageCopy>>* by_name, TriageReport* out) {
  for (auto& [name, copies] : *by_name) {
    TriagePartition p;
    p.name = name;
    p.copies = std::move(copies);
    p.damage.resize(p.copies.size());
    for (size_t i = 0; i < p.copies.size(); ++i) {
      const TriageCopy& c = p.copies[i];
      if (c.source) {
        const DigestDamage& d = c.source->copies[c.source_copy].damage;
        p.damage[i].errors = d.errors;
        p.damage[i].warnings = d.warnings;
        p.damage[i].first_error = d.first_error;
      }
    }
    out->partitions.push_back(std::move(p));
  }
}

// Step 2: verify every log directory given, but for its partitions' copies (CheckCopy verifies each on
// the pass that loads it); the problems its scan finds in a copy's directory are the copy's.
void VerifyDirs(const std::vector<std::string>& log_dirs, const TriageOptions& options, TriageReport* out) {
  std::map<std::string, TriageDamage*> by_dir;
  for (TriagePartition& p : out->partitions) {
    for (size_t i = 0; i < p.copies.size(); ++i) {
      if (!p.copies[i].source) by_dir[p.copies[i].path] = &p.damage[i];
    }
  }
  VerifyOptions vo;
  vo.threads = int(options.jobs);
  vo.check_records = options.verify_records;
  vo.verified_elsewhere = [&](const std::string& dir) { return by_dir.count(dir) > 0; };
  for (const std::string& path : log_dirs) {
    LogDirVerify& v = out->log_dir_verify.emplace_back();
    v.log_dir = ClassifyPath(path).path;  // as the copies name it (ScanOne)
    DamageSink sink(by_dir, &v.problems);
    VerifyStats s = VerifyPath(v.log_dir, vo, &sink);
    if (s.unreadable) v.unreadable = s.unreadable_reason;
  }
}

}  // namespace

namespace {

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the files of each copy that hold an offset range, by copy kind (directory or digest)
std::vector<std::string> FetchFor(const TriagePartition& p, const std::set<size_t>& named, int64_t first,
                                  int64_t last) {
  std::vector<std::string> out;
  for (size_t k : named) {
    if (k >= p.diff_copies.size()) continue;
    const TriageCopy& c = p.copies[p.diff_copies[k]];
    if (!c.source) continue;
    // Segments in base-offset order (their names); segment s holds [base_s, base_{s+1}).
    std::vector<std::pair<int64_t, const DigestFileInfo*>> logs;
    for (const DigestFileInfo& file : c.files) {
      std::filesystem::path name(file.name);
      if (name.extension() != ".log") continue;
      std::string stem = name.stem().string();
      int64_t base = 0;  // 20 digits that overflow an offset name no segment (a warning of verify's)
      if (stem.size() != 20 || stem.find_first_not_of("0123456789") != std::string::npos ||
          std::from_chars(stem.data(), stem.data() + stem.size(), base).ec != std::errc())
        continue;
      logs.emplace_back(base, &file);
    }
    std::sort(logs.begin(), logs.end());
    for (size_t s = 0; s < logs.size(); ++s) {
      int64_t from = logs[s].first;
      int64_t to = s + 1 < logs.size() ? logs[s + 1].first - 1 : JavaSub(c.log_end_offset, 1);
      if (first >= 0 && (to < first || from > last)) continue;
      const std::string& host = c.source->capture.host;
      out.push_back(fmt::format("{}{}: {}/{} (offsets {}..{}, {} bytes)", c.broker, host.empty() ? "" : " on " + host,
                                c.path, logs[s].second->name, from, std::max(from, to), logs[s].second->size));
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> FilesToFetch(const TriagePartition& p, const Finding& f) {
  std::set<size_t> named;
  for (size_t i : f.affected) named.insert(i);
  for (size_t i : f.healthy) named.insert(i);
  return FetchFor(p, named, f.first_offset, f.last_offset);
}

std::vector<std::string> FilesToFetch(const TriagePartition& p) {
  std::set<size_t> named;
  for (size_t i = 0; i < p.diff_copies.size(); ++i) named.insert(i);
  return FetchFor(p, named, p.undecided_first, p.undecided_last);
}

bool TriageScan(const std::vector<std::string>& log_dirs, const TriageOptions& options, TriageReport* out,
                std::string* error) {
  *out = TriageReport();
  out->log_dirs = log_dirs;
  std::map<std::string, std::vector<TriageCopy>> by_name;
  for (const std::string& path : log_dirs) {
    if (!ScanOne(path, out, &by_name, error)) return false;
  }
  GroupPartitions(&by_name, out);
  VerifyDirs(log_dirs, options, out);
  return true;
}

bool TriageCapture(const std::vector<std::string>& inputs, const TriageOptions& options, TriageReport* out,
                   std::string* error) {
  *out = TriageReport();
  // A file that starts like a digest but cannot be read whole is refused (never taken for a directory).

  // 1. Scan: every live partition directory of every log directory, and every copy of every digest,
  // grouped by name.
  std::map<std::string, std::vector<TriageCopy>> by_name;
  std::map<std::string, size_t> from_digest;
  std::vector<std::string> log_dirs;
  for (const std::string& path : inputs) {
    if (LooksLikeDigest(path)) {
      if (!AddDigest(path, options, out, &by_name, &from_digest, error)) return false;
    } else {
      out->log_dirs.push_back(path);
      log_dirs.push_back(path);
      if (!ScanOne(path, out, &by_name, error)) return false;
    }
  }
  GroupPartitions(&by_name, out);

  // 2. Verify every log directory; its problems are attributed to the partition copies. (A digest holds
  // the verify results of the host that made it.)
  VerifyDirs(log_dirs, options, out);

  // 3. Diff, LSO and lag, a partition per worker at a time.
  const size_t total = out->partitions.size();
  std::mutex progress_mu;
  size_t done = 0;
  ParallelFor(total, options.jobs, [&](size_t i) {
    TriageOne(options, &out->partitions[i]);
    if (options.progress) {
      std::lock_guard<std::mutex> lock(progress_mu);
      options.progress(++done, total);
    }
  });

  FinishLogDirProblems(out);

  // 4. Rank and count.
  TriageCounts& n = out->counts;
  for (TriagePartition& p : out->partitions) {
    p.status = StatusOf(p);
    ++n.partitions;
    size_t loaded = 0;
    for (const TriageCopy& c : p.copies) loaded += c.loaded;
    if (loaded >= 2) ++n.compared;
    if (p.copies.size() == 1) ++n.single_copy;
    if (loaded < p.copies.size()) ++n.unreadable;
    n.diverged += p.diverged();
    n.pinned += p.pinned();
    n.damaged += p.damaged();
    n.lagging += p.lagging();
    n.healthy += p.status == TriageStatus::kHealthy;
    n.undecided += !p.undecided.empty();
  }
  std::stable_sort(out->partitions.begin(), out->partitions.end(),
                   [](const TriagePartition& a, const TriagePartition& b) { return a.status < b.status; });
  return true;
}

bool TriageReloadForDiff(const TriagePartition& p, const TriageOptions& options, std::vector<ReplicaState>* replicas,
                         DiffReport* report) {
  replicas->clear();
  if (p.copies.size() < 2) return false;
  std::vector<size_t> loaded;
  std::vector<std::string> errors;
  const bool any_digest = LoadCopiesForDiff(p, ReplicaOptionsOf(options), replicas, &loaded, &errors);
  if (replicas->size() < 2) return false;
  LabelReplicas(p, loaded, replicas);
  std::string why;
  int64_t first = -1, last = -1;
  if (any_digest && !RestoreElidedRecords(replicas, &why, &first, &last)) return false;
  DiffOptions diff_options;
  diff_options.wall_clock_times = options.wall_clock_times;
  *report = DiffReplicas(*replicas, diff_options);
  return true;
}

}  // namespace klf
