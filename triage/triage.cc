#include "triage/triage.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "diff/lso.h"
#include "diff/replica_state.h"
#include "segment_reader/layout.h"
#include "segment_reader/parallel.h"
#include "segment_reader/problem.h"
#include "verify/verify.h"

namespace klf {

const char* TriageStatusName(TriageStatus s) {
  switch (s) {
    case TriageStatus::kDiverged: return "diverged";
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
  static constexpr size_t kMaxLogDirProblems = 100;

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

// The work of one partition: load its copies, diff them, explain each copy's LSO.
// NOLINTNEXTLINE(readability-function-cognitive-complexity): verify, diff and lso of one partition with their error exits; triage's order
void TriageOne(const TriageOptions& options, TriagePartition* p) {
  ReplicaOptions ro;
  ro.now_ms = options.now_ms;
  ro.producer_id_expiration_ms = options.producer_id_expiration_ms;
  LsoOptions lo;
  lo.now_ms = options.now_ms;
  lo.producer_id_expiration_ms = options.producer_id_expiration_ms;
  lo.wall_clock_times = options.wall_clock_times;
  const std::vector<ReplicaState> no_others;

  if (p->copies.size() == 1) {
    ro.transactions_only = true;  // no diff: memory independent of the record count
    ReplicaState r;
    TriageCopy& c = p->copies.front();
    if (!LoadReplica(c.path, ro, &r, &c.error)) return;
    FillCopy(r, ExplainLso(r, no_others, lo), &c);
    return;
  }
  // Every copy that loads takes part in the diff; one that does not is named with its error.
  std::vector<ReplicaState> replicas;
  std::vector<size_t> loaded;  // replicas[i] is copies[loaded[i]]
  std::vector<std::string> dirs;
  for (const TriageCopy& c : p->copies) dirs.push_back(c.path);
  std::string error;
  if (LoadReplicas(dirs, ro, &replicas, &error, /*threads=*/1)) {
    for (size_t i = 0; i < dirs.size(); ++i) loaded.push_back(i);
  } else {
    replicas.clear();
    for (size_t i = 0; i < dirs.size(); ++i) {
      ReplicaState r;
      if (!LoadReplica(dirs[i], ro, &r, &p->copies[i].error)) continue;
      replicas.push_back(std::move(r));
      loaded.push_back(i);
    }
  }
  for (size_t k = 0; k < replicas.size(); ++k) {
    replicas[k].label = p->copies[loaded[k]].broker;
    FillCopy(replicas[k], ExplainLso(replicas[k], no_others, lo), &p->copies[loaded[k]]);
  }
  std::set<std::string> labels;
  for (const ReplicaState& r : replicas) labels.insert(r.label);
  if (labels.size() != replicas.size()) {
    for (ReplicaState& r : replicas) r.label = r.path;
  }
  if (replicas.size() >= 2) {
    DiffOptions diff_options;
    diff_options.wall_clock_times = options.wall_clock_times;
    p->diff = DiffReplicas(replicas, diff_options);
    for (const ReplicaState& r : replicas) p->diff_labels.push_back(r.label);
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
  if (p.pinned()) return TriageStatus::kPinned;
  if (p.damaged()) return TriageStatus::kDamaged;
  if (p.lagging()) return TriageStatus::kLagging;
  if (p.copies.size() == 1) return TriageStatus::kSingleCopy;
  return TriageStatus::kHealthy;
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the capture walk with its per-partition error exits
bool TriageCapture(const std::vector<std::string>& log_dirs, const TriageOptions& options, TriageReport* out,
                   std::string* error) {
  *out = TriageReport();
  out->log_dirs = log_dirs;

  // 1. Scan: every live partition directory of every log directory, grouped by name.
  std::map<std::string, std::vector<TriageCopy>> by_name;
  for (const std::string& path : log_dirs) {
    PathInfo info = ClassifyPath(path);
    if (info.kind != PathKind::kLogDir) {
      *error = fmt::format("{}: not a broker log directory ({}); triage takes the log directories of a capture", path,
                           PathKindName(info.kind));
      return false;
    }
    LogDir dir;
    NullSink quiet;  // verify reports the scan's problems below
    if (!ScanLogDir(info.path, &dir, &quiet)) {
      *error = info.path + ": cannot list the directory";
      return false;
    }
    std::string broker = std::filesystem::path(info.path).filename().string();
    if (dir.meta_properties && dir.meta_properties->node_id()) {
      broker = fmt::format("broker {}", *dir.meta_properties->node_id());
    }
    if (std::find(out->brokers.begin(), out->brokers.end(), broker) == out->brokers.end()) {
      out->brokers.push_back(broker);
    }
    for (const PartitionDir& pd : dir.partitions) {
      if (pd.state != PartitionDirState::kLive) continue;
      TriageCopy c;
      c.log_dir = info.path;
      c.path = pd.path;
      c.broker = broker;
      by_name[pd.name].push_back(std::move(c));
    }
  }
  for (auto& [name, copies] : by_name) {
    TriagePartition p;
    p.name = name;
    p.copies = std::move(copies);
    p.damage.resize(p.copies.size());
    out->partitions.push_back(std::move(p));
  }

  // 2. Verify every log directory; its problems are attributed to the partition copies.
  std::map<std::string, TriageDamage*> by_dir;
  for (TriagePartition& p : out->partitions) {
    for (size_t i = 0; i < p.copies.size(); ++i) by_dir[p.copies[i].path] = &p.damage[i];
  }
  DamageSink sink(by_dir, &out->log_dir_problems);
  VerifyOptions vo;
  vo.threads = int(options.jobs);
  vo.check_records = options.verify_records;
  for (const std::string& path : log_dirs) {
    VerifyStats s = VerifyPath(std::filesystem::path(path).lexically_normal().string(), vo, &sink);
    if (s.unreadable) out->log_dir_problems.push_back(s.unreadable_reason);
  }

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
  }
  std::stable_sort(out->partitions.begin(), out->partitions.end(),
                   [](const TriagePartition& a, const TriagePartition& b) { return a.status < b.status; });
  return true;
}

}  // namespace klf
