// Verification (see verify.h). The recipe, per partition directory:
//
// 1. Scan the directory (layout.h): leftovers of interrupted cleaner/swap/delete operations, orphan
//    index files and unparseable text files are reported by the scan (spec §12, §11).
// 2. Parse every producer snapshot (version, CRC, layout: §10).
// 3. For each segment in base-offset order, walk the `.log` once with LogReader (framing and CRCs,
//    torn and zero-filled tails, §2, §14) and, for every batch with a valid CRC, decode its records
//    (counts, offset deltas, timestamps, control records: §4, §5). In the same pass:
//    - offsets: increasing across batches and segments, the first batch not below the file name's
//      base offset, relative offsets within int32 (§1.3); gaps classified (below the cleaner
//      checkpoint = compaction, normal; elsewhere = fetched from a compacted leader, info);
//    - `.index` entries (sorted by position) against batch positions, `.timeindex` entries (sorted by
//      offset) against the running max timestamp (§8; the index checks of kafka-dump-log
//      --verify-index-only without its false positives, dump-log-segments.md §7.3/§7.4);
//    - producer state rebuilt batch by batch (producer_state.h) and compared with each snapshot when
//      the replay reaches its offset; the `.txnindex` entries Kafka would have written collected.
//    Then `.txnindex` entries are checked against the segment's control batches and the collected
//    aborted transactions (§9).
// 4. Partition-level: leader-epoch-checkpoint against the batches' epochs (§11.3), log-dir
//    checkpoints (cleaner, recovery point, high watermark, log start) against the log (§11.2).
#include "verify/verify.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/index_files.h"
#include "segment_reader/layout.h"
#include "segment_reader/producer_snapshot.h"
#include "partition/producer_state.h"
#include "segment_reader/java_long.h"

namespace klf {

void VerifyStats::Add(const VerifyStats& o) {
  files_checked += o.files_checked;
  bytes_checked += o.bytes_checked;
  batches += o.batches;
  records += o.records;
  errors += o.errors;
  warnings += o.warnings;
  infos += o.infos;
  gaps_below_cleaner_checkpoint += o.gaps_below_cleaner_checkpoint;
  gaps_never_cleaned += o.gaps_never_cleaned;
  if (o.unreadable && !unreadable) {
    unreadable = true;
    unreadable_reason = o.unreadable_reason;
  }
}

namespace {

// Distinct leader epochs remembered per partition (a damaged log could show one per batch).
constexpr size_t kMaxTrackedEpochs = 65536;
// The indexes 0..n-1 in the stable order of `less`. A sound index file is in order already: sorted
// only when it is not (the same order either way).
template <typename Less>
std::vector<uint32_t> StableOrder(size_t n, Less less) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (!std::is_sorted(order.begin(), order.end(), less)) std::stable_sort(order.begin(), order.end(), less);
  return order;
}
// Batches from this size are walked with their CRC (PartitionVerifier::CrcAndWalk); a smaller one is
// still in the cache from its CRC when the walk reads it.
constexpr size_t kEarlyWalkMinBytes = size_t(64) << 10;

// Collects one partition's (or one file's) problems: each reported once, counted by severity.
class CountingSink : public ProblemSink {
 public:
  explicit CountingSink(VerifyStats* stats) : stats_(stats) {}
  void Report(const Problem& p) override {
    std::string key = fmt::format("{}\x1f{}\x1f{}\x1f{}", p.file, p.position, p.check, p.message);
    if (!seen_.insert(std::move(key)).second) return;
    switch (p.severity) {
      case Severity::kError: ++stats_->errors; break;
      case Severity::kWarning: ++stats_->warnings; break;
      case Severity::kInfo: ++stats_->infos; break;
    }
    // A file that is there but cannot be read (a FIFO, a directory or symlink loop named like a segment,
    // no permission), or a directory that cannot be listed: what it holds is unknown, so the verdict
    // cannot be "clean" or only "damaged" (exit 3, README "verify").
    bool cannot_read = p.check == std::string_view("file-read") || p.check == std::string_view("dir-read");
    if (cannot_read && !stats_->unreadable) {
      stats_->unreadable = true;
      stats_->unreadable_reason = p.message.starts_with(p.file) ? p.message : p.file + ": " + p.message;
    }
    problems.push_back(p);
  }
  std::vector<Problem> problems;

 private:
  VerifyStats* stats_;
  std::set<std::string> seen_;
};

// A file mapped for reading, counted in the stats.
std::unique_ptr<MappedFile> OpenCounted(const std::string& path, ProblemSink* sink, VerifyStats* stats, Env* env) {
  std::string error;
  std::unique_ptr<MappedFile> f = MappedFile::Open(path, &error, env);
  if (!f) {
    Report(sink, Severity::kError, path, 0, "file-read", error);
    return nullptr;
  }
  ++stats->files_checked;
  stats->bytes_checked += f->size();
  return f;
}

// A batch file that is not a segment (VerifyBatchFile) opened for streaming, counted in the stats.
// Failing to open it and the problems found while reading it go to `sink`.
std::unique_ptr<LogReader> OpenLogCounted(const std::string& path, ProblemSink* sink, const ReadOptions& options,
                                          VerifyStats* stats) {
  std::string error;
  std::unique_ptr<LogReader> reader = LogReader::Open(path, sink, options, &error);
  if (!reader) {
    Report(sink, Severity::kError, path, 0, "file-read", error);
    return nullptr;
  }
  ++stats->files_checked;
  stats->bytes_checked += reader->file_size();
  return reader;
}

// A control batch of the segment being walked, where it is: what its `.txnindex` is checked against.
// (diff's Marker is the transaction verdicts' marker; this is only a position in a file.)
struct ControlBatchAt {
  int64_t offset = 0;
  int64_t producer_id = 0;
  ControlType type = ControlType::kUnknown;
  uint64_t position = 0;
};

struct SnapshotToCheck {
  int64_t offset = 0;
  std::string path;
  ProducerSnapshot snapshot;
};

// Per-partition context shared by the segment walks.
struct PartitionContext {
  std::optional<int64_t> first_dirty_offset;  // cleaner-offset-checkpoint
  PartitionCheckpoints checkpoints;
  bool have_checkpoints = false;
  const std::vector<LeaderEpochEntry>* leader_epochs = nullptr;
  std::string leader_epoch_file;
};

class PartitionVerifier : public CrcWalker {
 public:
  PartitionVerifier(const VerifyOptions& options, ProblemSink* sink, VerifyStats* stats, PartitionContext ctx)
      : options_(options), sink_(sink), stats_(stats), ctx_(std::move(ctx)), decoder_(options.read) {}

  // Verifies every segment of `log` (listed, LoadedLog::Listed) on its pass and the partition-level
  // consistency.
  void VerifyPartition(const LoadedLog& log);
  // The same in steps, for a caller whose load's pass reads the segments (PartitionCheck):
  // StartPartition, the pass with SegmentSteps and reader_sink(), then FinishPartition.
  void StartPartition(const PartitionDir& dir);
  void FinishPartition(const PartitionDir& dir);
  // What verify does at each step of a pass over `log`'s segments: index files first, every batch,
  // the checks after the last; a segment that cannot be opened or read is a "file-read" problem.
  // `standalone`: a segment given alone (no missing-index warnings).
  LoadedLog::SegmentVisitor SegmentSteps(const LoadedLog& log, bool standalone);
  // The sink for the pass's readers: their problems belong to the segment being walked.
  ProblemSink* reader_sink() { return &reader_sink_; }
  // Verifies the one segment of `log` on its own (a file given by the user): no partition-level checks.
  void VerifyLoneSegment(const LoadedLog& log);
  // A file of v2 batches that is not a segment (KRaft snapshot, bootstrap.checkpoint).
  void VerifyBatchFile(const std::string& path);

 private:
  struct GapSummary {
    uint64_t count = 0;
    uint64_t offsets = 0;
    int64_t first_from = 0, first_to = 0;
    uint64_t first_position = 0;
    bool any_below_checkpoint = false;
  };

  struct SegmentWalk;
  // Passes the readers' problems to the segment being walked.
  class ReaderSink : public ProblemSink {
   public:
    explicit ReaderSink(PartitionVerifier* v) : v_(v) {}
    void Report(const Problem& p) override;

   private:
    PartitionVerifier* v_;
  };
  void LoadSnapshots(const PartitionDir& dir);
  void BeginSegment(const SegmentFiles& seg, bool last_segment, bool standalone);
  void StartWalk(LogReader& reader);
  void WalkBatch(const BatchView& batch);
  void EndSegment(const LogReader& reader);
  void CloseSegment();
  void CheckTimeEntry(uint32_t i, int64_t max_ts);
  void CheckRecords(const std::string& file, const BatchHeader& h, GapSummary* gaps);
  bool DecodeAndCheck(const BatchView& batch, const std::string& file, GapSummary* gaps);
  bool CrcAndWalk(const BatchView& batch, uint32_t* crc) override;
  void Gap(int64_t from, int64_t to_exclusive, uint64_t position, GapSummary* gaps);
  void ApplyProducerState(const std::string& file, const BatchHeader& h, std::vector<AbortedTxn>* expected);
  void CompareSnapshotsBefore(int64_t next_offset, bool at_end);
  void CompareSnapshot(const SnapshotToCheck& s);
  void CheckEpoch(const std::string& file, const BatchHeader& h);
  // Whether a `.log` the listing could not read has its base offset in [from, to): offsets missing
  // there may be in it.
  bool UnreadSegmentIn(int64_t from, int64_t to) const;
  void CheckPartitionLevel(const PartitionDir& dir);

  const VerifyOptions& options_;
  ProblemSink* sink_;
  VerifyStats* stats_;
  PartitionContext ctx_;
  RecordDecoder decoder_;
  std::vector<std::pair<int64_t, int64_t>> holes_;  // CheckRecords: one batch's offset holes
  RecordOffsetWalk walk_;                           // DecodeAndCheck's check-only walk
  std::vector<RecordsProblem> walk_problems_;
  // The check-only walk CrcAndWalk ran while LogReader read the batch (file, position), kept for
  // DecodeAndCheck: whether the records parsed, and the problem(s) the walk reported, not yet passed on.
  struct EarlyWalk {
    bool pending = false;
    const std::string* file = nullptr;
    uint64_t position = 0;
    bool parsed = false;
    CollectingSink problems;
  } early_;
  const std::string* walking_file_ = nullptr;  // the file a segment walk or VerifyBatchFile reads (CrcAndWalk)
  ProducerStateManager producers_;
  std::unique_ptr<SegmentWalk> walk_seg_;  // the segment being walked (BeginSegment to EndSegment)
  ReaderSink reader_sink_{this};
  ProblemSink* outer_sink_ = nullptr;  // sink_ outside the segment's CappedSink

  // Across segments.
  std::optional<int64_t> prev_last_offset_;
  // Bytes after the batch that ended at prev_last_offset_ could not be read (a "file-read" problem): the
  // offsets missing before the next batch may be in them, so that gap is not classified as compaction.
  bool unread_before_ = false;
  std::vector<int64_t> unread_bases_;  // base offsets of the `.log` files the listing could not read, ascending
  std::string prev_file_;
  uint64_t prev_position_ = 0;
  int64_t replay_start_ = 0;
  std::optional<int64_t> log_end_offset_;
  int64_t last_segment_base_ = 0;
  std::vector<SnapshotToCheck> snapshots_;  // ascending offset
  size_t next_snapshot_ = 0;
  int32_t prev_epoch_ = -1;
  std::string prev_epoch_file_;
  uint64_t prev_epoch_position_ = 0;
  std::map<int32_t, int64_t> epoch_first_offset_;
};

void PartitionVerifier::Gap(int64_t from, int64_t to_exclusive, uint64_t position, GapSummary* gaps) {
  if (to_exclusive <= from) return;
  // Kafka's cleaner removes records and whole batches below the first dirty offset (its checkpoint):
  // gaps there are the normal result of compaction.
  if (ctx_.first_dirty_offset && to_exclusive <= *ctx_.first_dirty_offset) {
    ++stats_->gaps_below_cleaner_checkpoint;
    gaps->any_below_checkpoint = true;
    return;
  }
  ++stats_->gaps_never_cleaned;
  if (gaps->count == 0) {
    gaps->first_from = from;
    gaps->first_to = to_exclusive - 1;
    gaps->first_position = position;
  }
  ++gaps->count;
  gaps->offsets += uint64_t(to_exclusive) - uint64_t(from);  // to_exclusive > from: exact in uint64
}

void PartitionVerifier::LoadSnapshots(const PartitionDir& dir) {
  for (const auto& [offset, entry] : dir.producer_snapshots) {
    std::unique_ptr<MappedFile> f = OpenCounted(entry.path, sink_, stats_, options_.read.env);
    if (!f) continue;
    SnapshotToCheck s;
    s.offset = offset;
    s.path = entry.path;
    // Version, CRC and layout problems are errors reported by the parser; such a snapshot is deleted
    // by Kafka at load (and the state rebuilt from an older one or the log), so it is not compared.
    if (!ParseProducerSnapshot(entry.path, f->data(), offset, &s.snapshot, sink_)) continue;
    snapshots_.push_back(std::move(s));
  }
}

void PartitionVerifier::CompareSnapshotsBefore(int64_t next_offset, bool at_end) {
  while (next_snapshot_ < snapshots_.size()) {
    const SnapshotToCheck& s = snapshots_[next_snapshot_];
    // A snapshot at N holds the state of every batch below N: compare once the replay is about to
    // apply a batch at or above N (or reached the end of the log).
    if (!at_end && s.offset > next_offset) return;
    if (at_end && log_end_offset_ && s.offset > *log_end_offset_) {
      Report(sink_, Severity::kWarning, s.path, 0, "snapshot-range",
             fmt::format("producer snapshot at offset {} is above the log end offset {}; Kafka deletes it at load "
                         "(the log it describes is not here)",
                         s.offset, *log_end_offset_));
    } else if (s.offset >= replay_start_) {
      CompareSnapshot(s);
    }
    ++next_snapshot_;
  }
}

// The snapshot against the state rebuilt from the log below its offset. Kafka's state may also hold
// producers whose batches are gone (deleted segments, compaction) and lack producers it expired, so
// only disagreements about batches that are still in the log are reported (warnings: a broker that
// loads this snapshot starts from a producer state the log does not support).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one check per producer snapshot field against the replay (FMT §10)
void PartitionVerifier::CompareSnapshot(const SnapshotToCheck& s) {
  std::map<int64_t, ProducerSnapshotEntry> rebuilt;
  for (const ProducerSnapshotEntry& e : producers_.SnapshotEntries()) rebuilt.emplace(e.producer_id, e);
  auto in_log = [&](int64_t offset) {
    if (offset < replay_start_) return false;
    if (ctx_.first_dirty_offset && offset < *ctx_.first_dirty_offset) return false;  // may be cleaned away
    return true;
  };
  std::set<int64_t> seen;
  for (size_t i = 0; i < s.snapshot.entries.size(); ++i) {
    const ProducerSnapshotEntry& e = s.snapshot.entries[i];
    const uint64_t pos = 10 + 46 * uint64_t(i);
    seen.insert(e.producer_id);
    if (e.last_offset >= s.offset) {
      Report(sink_, Severity::kError, s.path, pos + 16, "producer-snapshot",
             fmt::format("entry {} (producer {}): last batch offset {} is not below the snapshot offset {}; the "
                         "state of a snapshot covers only offsets below it",
                         i, e.producer_id, e.last_offset, s.offset));
      continue;
    }
    auto it = rebuilt.find(e.producer_id);
    if (it == rebuilt.end()) {
      if (e.last_offset >= 0 && in_log(e.last_offset)) {
        Report(sink_, Severity::kWarning, s.path, pos, "producer-snapshot",
               fmt::format("entry {}: producer {} has its last batch at offset {}, but the log below offset {} holds "
                           "no batch of this producer",
                           i, e.producer_id, e.last_offset, s.offset));
      }
      continue;
    }
    const ProducerSnapshotEntry& r = it->second;
    if (r.last_offset != e.last_offset) {
      if (in_log(std::max(r.last_offset, e.last_offset))) {
        Report(sink_, Severity::kWarning, s.path, pos + 16, "producer-snapshot",
               fmt::format("entry {}: producer {} last batch offset {} in the snapshot, {} in the log", i,
                           e.producer_id, e.last_offset, r.last_offset));
      }
      continue;
    }
    std::vector<std::string> diffs;
    if (r.epoch != e.epoch) diffs.push_back(fmt::format("epoch {} (log: {})", e.epoch, r.epoch));
    if (r.last_sequence != e.last_sequence)
      diffs.push_back(fmt::format("lastSequence {} (log: {})", e.last_sequence, r.last_sequence));
    if (r.offset_delta != e.offset_delta)
      diffs.push_back(fmt::format("offsetDelta {} (log: {})", e.offset_delta, r.offset_delta));
    // A producer idle longer than producer.id.expiration.ms is expired and re-registered by its next
    // batch with coordinatorEpoch -1 (ProducerStateManager.removeExpiredProducers); the log cannot
    // tell, so only a snapshot epoch other than -1 is compared.
    if (r.coordinator_epoch != e.coordinator_epoch && e.coordinator_epoch != -1)
      diffs.push_back(fmt::format("coordinatorEpoch {} (log: {})", e.coordinator_epoch, r.coordinator_epoch));
    // The cleaner may remove the first batches of a transaction that was open when the snapshot was
    // taken (data below the first dirty offset of a transaction that ended later); the log then starts
    // that transaction at a later batch, and every snapshot taken before the pass keeps the old start.
    const bool txn_start_cleaned = e.current_txn_first_offset >= 0 && !in_log(e.current_txn_first_offset) &&
                                   r.current_txn_first_offset > e.current_txn_first_offset;
    if (r.current_txn_first_offset != e.current_txn_first_offset && !txn_start_cleaned)
      diffs.push_back(
          fmt::format("currentTxnFirstOffset {} (log: {})", e.current_txn_first_offset, r.current_txn_first_offset));
    if (!diffs.empty()) {
      std::string all;
      for (const std::string& d : diffs) all += (all.empty() ? "" : ", ") + d;
      Report(sink_, Severity::kWarning, s.path, pos, "producer-snapshot",
             fmt::format("entry {}: producer {} differs from the state rebuilt from the log below offset {}: {}", i,
                         e.producer_id, s.offset, all));
    }
  }
  // An open transaction never expires: the snapshot must carry it.
  for (const auto& [pid, r] : rebuilt) {
    if (r.current_txn_first_offset >= 0 && !seen.count(pid)) {
      Report(sink_, Severity::kWarning, s.path, 0, "producer-snapshot",
             fmt::format("producer {} has an open transaction from offset {} in the log below offset {}, but the "
                         "snapshot does not list it (a broker loading it would not know the transaction)",
                         pid, r.current_txn_first_offset, s.offset));
    }
  }
}

void PartitionVerifier::ApplyProducerState(const std::string& file, const BatchHeader& h,
                                           std::vector<AbortedTxn>* expected) {
  // LogSegment.updateProducerState (see ProducerStateManager::Apply), reusing our decoded records.
  if (h.magic >= 2 && h.has_producer_id()) {
    if (h.is_control) {
      if (h.record_count <= 0) {
        producers_.ApplyEmptyControlBatch(h);
      } else if (auto marker = ControlBatchMarker(decoder_.records())) {
        if (IsEndTxnMarker(marker->type)) {
          BatchUpdate u = producers_.ApplyEndTxnMarker(h, *marker, decoder_.records().front().timestamp, file, sink_);
          if (u.aborted_txn) expected->push_back(*u.aborted_txn);
        }
      }
    } else {
      producers_.ApplyDataBatch(h, file, sink_);
    }
  }
  producers_.UpdateMapEndOffset(JavaAdd(h.last_offset, 1));
}

void PartitionVerifier::CheckEpoch(const std::string& file, const BatchHeader& h) {
  if (h.magic < 2 || h.partition_leader_epoch == kNoPartitionLeaderEpoch) return;
  const int32_t epoch = h.partition_leader_epoch;
  if (epoch < 0) {
    // Leader epochs are >= 0; -1 (NO_PARTITION_LEADER_EPOCH) is the only negative value Kafka writes.
    Report(sink_, Severity::kError, file, h.position + 12, "leader-epoch",
           fmt::format("batch at {} (offset {}) has partition leader epoch {}; expected -1 or a value >= 0", h.position,
                       h.base_offset, epoch));
    return;
  }
  // A replica's log holds leader epochs in non-decreasing order: a follower truncates to the
  // leader's epoch boundaries before appending (LeaderEpochFileCache.assign keeps them ascending).
  if (epoch < prev_epoch_) {
    Report(sink_, Severity::kError, file, h.position + 12, "leader-epoch-order",
           fmt::format("batch at {} (offset {}) has partition leader epoch {}, below epoch {} of the earlier batch at "
                       "{}:{}; epochs never go back in one replica's log",
                       h.position, h.base_offset, epoch, prev_epoch_, prev_epoch_file_, prev_epoch_position_));
  }
  if (epoch > prev_epoch_ || (epoch == prev_epoch_ && prev_epoch_file_ != file)) prev_epoch_file_ = file;
  if (epoch >= prev_epoch_) {
    prev_epoch_ = epoch;
    prev_epoch_position_ = h.position;
  }
  if (epoch_first_offset_.size() < kMaxTrackedEpochs || epoch_first_offset_.count(epoch)) {
    epoch_first_offset_.try_emplace(epoch, h.base_offset);
  }
}

void PartitionVerifier::CheckRecords(const std::string& file, const BatchHeader& h, GapSummary* gaps) {
  const std::vector<Record>& records = decoder_.records();
  stats_->records += records.size();
  holes_.clear();
  std::vector<RecordsProblem> problems = CheckBatchRecords(h, records, &holes_);
  // The order the checks meet them in: holes come before any problem that stopped the walk.
  for (const auto& [from, to] : holes_) Gap(from, to, h.position, gaps);
  for (const RecordsProblem& p : problems) Report(sink_, Severity::kError, file, p.position, p.check, p.message);
}

// Decodes `batch` (valid CRC) and, with check_records, runs the record checks. A v2 batch that is no
// control batch needs no record kept (nothing but the checks reads them): it is walked check-only
// (RecordDecoder::Check: the same parse, the same problems, no record stored). Returns whether the
// records parsed.
bool PartitionVerifier::DecodeAndCheck(const BatchView& batch, const std::string& file, GapSummary* gaps) {
  const BatchHeader& bh = batch.header;
  if (!options_.check_records || bh.magic < 2 || bh.is_control) {
    const bool decoded = decoder_.Decode(batch, file, sink_);
    if (decoded && options_.check_records) {
      CheckRecords(file, decoder_.header().base_offset_known ? decoder_.header() : bh, gaps);
    }
    return decoded;
  }
  if (early_.pending && early_.file == &file && early_.position == bh.position) {
    // Walked with the CRC (CrcAndWalk): what it reported, where this walk would have.
    early_.pending = false;
    for (const Problem& p : early_.problems.problems) sink_->Report(p);
    if (!early_.parsed) return false;
  } else {
    holes_.clear();
    walk_.Reset(bh, &holes_);
    if (!decoder_.Check(batch, file, sink_, &walk_)) return false;
  }
  walk_.Finish();
  // As CheckRecords: the records of a batch that parsed (its count), holes, then the problem that
  // stopped the offsets' walk or the timestamp's.
  stats_->records += uint64_t(std::max(bh.record_count, 0));
  walk_problems_.clear();
  AppendOffsetWalkProblems(bh, walk_, &walk_problems_);
  for (const auto& [from, to] : holes_) Gap(from, to, bh.position, gaps);
  for (const RecordsProblem& p : walk_problems_) Report(sink_, Severity::kError, file, p.position, p.check, p.message);
  return true;
}

// LogReader's CrcWalker: the check-only walk DecodeAndCheck would run of a large uncompressed v2 batch,
// run with its CRC (RecordDecoder::CheckWithCrc), its problems held. A batch whose CRC fails is never
// decoded (WalkBatch), so what was held is dropped unseen; one whose CRC holds gets them from
// DecodeAndCheck, right after LogReader's own reports of the batch, as the walk there would report them.
bool PartitionVerifier::CrcAndWalk(const BatchView& batch, uint32_t* crc) {
  const BatchHeader& bh = batch.header;
  early_.pending = false;
  if (walking_file_ == nullptr || !options_.check_records || bh.magic < 2 || bh.is_control || bh.compression_id != 0 ||
      batch.bytes.size() < kEarlyWalkMinBytes) {
    return false;
  }
  early_.problems.problems.clear();
  holes_.clear();
  walk_.Reset(bh, &holes_);
  early_.parsed = decoder_.CheckWithCrc(batch, *walking_file_, &early_.problems, &walk_, crc);
  early_.file = walking_file_;
  early_.position = bh.position;
  early_.pending = true;
  return true;
}

// One segment's walk, from its index files to the checks made after its last batch, on a LoadedLog
// pass (SegmentSteps): BeginSegment, StartWalk on its reader, WalkBatch for every batch, EndSegment.
struct PartitionVerifier::SegmentWalk {
  SegmentWalk(ProblemSink* outer, const SegmentFiles& s, bool last_segment)
      : capped(outer), seg(&s), tail_sink(&capped, last_segment) {}

  // A segment's problems go through a CappedSink: garbage (a 64 MiB index of random entries, a log of
  // damaged batches) would otherwise make millions of them, each kept until the partition is printed.
  CappedSink capped;
  const SegmentFiles* seg;
  SegmentTailSink tail_sink;  // the reader's problems
  OffsetIndex index;
  TimeIndex time_index;
  TxnIndex txn_index;
  std::string index_path, time_path;
  // Offset-index entries by position, time-index entries by offset, for the merge with the batches
  // (the parsers report order).
  std::vector<uint32_t> by_position, by_offset;
  size_t ix = 0, tx = 0;
  int64_t running_max_ts = LLONG_MIN;
  GapSummary gaps;
  std::vector<ControlBatchAt> markers;
  std::vector<AbortedTxn> expected_aborts;
  bool first = true;
  int64_t segment_last = -1;
  bool any_batch = false;
};

void PartitionVerifier::BeginSegment(const SegmentFiles& seg, bool last_segment, bool standalone) {
  walk_seg_ = std::make_unique<SegmentWalk>(sink_, seg, last_segment);
  SegmentWalk& w = *walk_seg_;
  outer_sink_ = sink_;
  sink_ = &w.capped;
  const std::string& log_path = seg.log->path;
  const int64_t base = seg.base_offset;

  // Index files first; their entries are checked during the log walk. The offset and time indexes
  // are read in windows: an active segment's index is preallocated (segment.index.bytes, up to 2 GiB
  // of zeros).
  auto counted = [&](bool ok, const std::string& path, const std::string& error, uint64_t size) {
    if (!ok) return Report(sink_, Severity::kError, path, 0, "file-read", error);
    ++stats_->files_checked;
    stats_->bytes_checked += size;
  };
  if (seg.index) {
    std::string error;
    bool ok = ReadOffsetIndexFile(seg.index->path, base, sink_, &w.index, &error, options_.read.env);
    counted(ok, seg.index->path, error, w.index.file_size);
  } else if (!standalone) {
    Report(sink_, Severity::kWarning, log_path, 0, "missing-index",
           fmt::format("{}.index is missing; Kafka rebuilds it at startup by recovering the segment (LogLoader)",
                       OffsetFileNamePrefix(base)));
  }
  if (seg.time_index) {
    std::string error;
    bool ok = ReadTimeIndexFile(seg.time_index->path, base, sink_, &w.time_index, &error, options_.read.env);
    counted(ok, seg.time_index->path, error, w.time_index.file_size);
  } else if (!standalone) {
    Report(sink_, Severity::kWarning, log_path, 0, "missing-time-index",
           fmt::format("{}.timeindex is missing; Kafka creates it empty (it is not rebuilt unless the segment is "
                       "recovered), so time lookups in this segment scan it from its base offset",
                       OffsetFileNamePrefix(base)));
  }
  if (seg.txn_index) {
    std::unique_ptr<MappedFile> txn_file = OpenCounted(seg.txn_index->path, sink_, stats_, options_.read.env);
    if (txn_file) w.txn_index = ParseTxnIndex(seg.txn_index->path, txn_file->data(), sink_);
  }
  const std::vector<OffsetIndexEntry>& entries = w.index.entries;
  w.by_position =
      StableOrder(entries.size(), [&](uint32_t a, uint32_t b) { return entries[a].position < entries[b].position; });
  const std::vector<TimeIndexEntry>& times = w.time_index.entries;
  w.by_offset = StableOrder(times.size(), [&](uint32_t a, uint32_t b) { return times[a].offset < times[b].offset; });
  w.index_path = seg.index ? seg.index->path : "";
  w.time_path = seg.time_index ? seg.time_index->path : "";
}

void PartitionVerifier::ReaderSink::Report(const Problem& p) { v_->walk_seg_->tail_sink.Report(p); }

void PartitionVerifier::StartWalk(LogReader& reader) {
  walking_file_ = &walk_seg_->seg->log->path;
  reader.SetCrcWalker(this);
}

void PartitionVerifier::CloseSegment() {
  walk_seg_->capped.Finish();
  sink_ = outer_sink_;
  walk_seg_.reset();
}

void PartitionVerifier::CheckTimeEntry(uint32_t i, int64_t max_ts) {
  const SegmentWalk& w = *walk_seg_;
  const TimeIndexEntry& e = w.time_index.entries[i];
  const uint64_t epos = uint64_t(i) * kTimeIndexEntrySize;
  // The entry's timestamp is the largest timestamp of the segment up to the batch holding its
  // offset (§8.1): no batch starting at or below that offset may be needed to exceed it, and it must
  // have been seen there.
  if (max_ts == LLONG_MIN) {
    Report(sink_, Severity::kError, w.time_path, epos + 8, "time-index-offset",
           fmt::format("entry {}: offset {} is below every batch of the segment", i, e.offset));
  } else if (e.timestamp != max_ts) {
    Report(sink_, Severity::kError, w.time_path, epos, "time-index-timestamp",
           fmt::format("entry {} (offset {}): timestamp {} but the largest batch timestamp up to that offset is {}", i,
                       e.offset, e.timestamp, max_ts));
  }
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): every per-batch check of verify in one pass over the segment (FMT §14)
void PartitionVerifier::WalkBatch(const BatchView& batch) {
  SegmentWalk& w = *walk_seg_;
  const std::string& log_path = w.seg->log->path;
  const int64_t base = w.seg->base_offset;
  const bool canonical = w.seg->log->info.canonical_name;
  ++stats_->batches;
  const BatchHeader* h = &batch.header;
  bool decoded = false;
  const bool decode = h->crc_valid && (options_.check_records || !h->base_offset_known || h->is_control);
  if (decode) {
    decoded = DecodeAndCheck(batch, log_path, &w.gaps);
    if (decoder_.header().base_offset_known) h = &decoder_.header();
  }
  const uint64_t pos = h->position;
  const int64_t first_offset = h->base_offset_known ? h->base_offset : h->last_offset;

  // Offsets against the file name and the previous batch (within a file LogReader already reports
  // offsets going back).
  if (w.first && canonical && first_offset < base) {
    Report(sink_, Severity::kError, log_path, pos, "segment-base-offset",
           fmt::format("first batch starts at offset {}, below the segment's base offset {} (its file name)",
                       first_offset, base));
  }
  if (canonical && h->last_offset >= base && uint64_t(h->last_offset) - uint64_t(base) > uint64_t(INT32_MAX)) {
    Report(sink_, Severity::kError, log_path, pos, "offset-overflow",
           fmt::format("batch at {} ends at offset {}, more than 2^31-1 above the base offset {} (Kafka splits such "
                       "a segment: LogSegment.splitOverflowedSegment)",
                       pos, h->last_offset, base));
  }
  if (prev_last_offset_) {
    if (w.first && first_offset <= *prev_last_offset_) {
      Report(sink_, Severity::kError, log_path, pos, "segment-overlap",
             fmt::format("first batch starts at offset {}, not above the last offset {} of the previous segment "
                         "({})",
                         first_offset, *prev_last_offset_, prev_file_));
    } else if (first_offset > *prev_last_offset_ && uint64_t(first_offset) - uint64_t(*prev_last_offset_) > 1 &&
               !unread_before_ && !UnreadSegmentIn(*prev_last_offset_ + 1, first_offset)) {
      Gap(*prev_last_offset_ + 1, first_offset, pos, &w.gaps);  // no overflow: prev < first_offset - 1
    }
  } else if (w.first && canonical && first_offset > base) {
    // The first segment's base offset is the log start (or was, before cleaning/retention).
    Gap(base, first_offset, pos, &w.gaps);
  }
  if (!prev_last_offset_ || h->last_offset > *prev_last_offset_) prev_last_offset_ = h->last_offset;
  unread_before_ = false;
  if (w.first) prev_file_ = log_path;
  prev_position_ = pos;
  w.segment_last = std::max(w.segment_last, h->last_offset);
  w.any_batch = true;
  w.first = false;

  // Offset index: entries at positions before this batch do not start a batch.
  const std::vector<OffsetIndexEntry>& entries = w.index.entries;
  while (w.ix < w.by_position.size() && uint64_t(entries[w.by_position[w.ix]].position) < pos) {
    uint32_t i = w.by_position[w.ix++];
    const OffsetIndexEntry& e = entries[i];
    Report(sink_, Severity::kError, w.index_path, uint64_t(i) * kOffsetIndexEntrySize + 4, "offset-index-position",
           fmt::format("entry {} (offset {}): position {} is not the start of a batch in {}", i, e.offset, e.position,
                       log_path));
  }
  while (w.ix < w.by_position.size() && uint64_t(entries[w.by_position[w.ix]].position) == pos) {
    uint32_t i = w.by_position[w.ix++];
    const OffsetIndexEntry& e = entries[i];
    // The entry maps the last offset of an appended chunk to the chunk's start (§8.3): the batch
    // there starts at or below it. (kafka-dump-log's "lastOffset == entry offset" is a false
    // positive for multi-batch chunks.)
    if (first_offset > e.offset) {
      Report(sink_, Severity::kError, w.index_path, uint64_t(i) * kOffsetIndexEntrySize, "offset-index-offset",
             fmt::format("entry {}: offset {} at position {}, but the batch there starts at offset {}", i, e.offset,
                         e.position, first_offset));
    }
  }
  // Time index: entries whose offset is below this batch's base are complete.
  while (w.tx < w.by_offset.size() && w.time_index.entries[w.by_offset[w.tx]].offset < first_offset) {
    CheckTimeEntry(w.by_offset[w.tx++], w.running_max_ts);
  }
  if (h->magic >= 1 && h->max_timestamp > w.running_max_ts) w.running_max_ts = h->max_timestamp;

  if (h->magic >= 2 && h->is_control && decoded) {
    if (auto c = ControlBatchMarker(decoder_.records()))
      w.markers.push_back(ControlBatchAt{h->base_offset, h->producer_id, c->type, pos});
  }
  // Producer state, epochs and the log end move only with batches Kafka's recovery would keep.
  if (h->crc_valid && (decoded || !decode)) {
    CompareSnapshotsBefore(first_offset, false);
    CheckEpoch(log_path, *h);
    ApplyProducerState(log_path, *h, &w.expected_aborts);
    log_end_offset_ = JavaAdd(h->last_offset, 1);
  }
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the checks made once a segment's batches are all seen: index entries past them, the .txnindex against the markers, the gaps
void PartitionVerifier::EndSegment(const LogReader& reader) {
  SegmentWalk& w = *walk_seg_;
  const std::string& log_path = w.seg->log->path;
  const int64_t base = w.seg->base_offset;
  const bool canonical = w.seg->log->info.canonical_name;
  walking_file_ = nullptr;
  early_.pending = false;
  const bool tail_lost = reader.end() != LogEnd::kEndOfData;
  const uint64_t valid_bytes = reader.valid_bytes();
  if (!reader.read_error().empty()) unread_before_ = true;
  if (!w.any_batch && !log_end_offset_) log_end_offset_ = base;
  if (!w.any_batch && log_end_offset_ && *log_end_offset_ < base) log_end_offset_ = base;

  // Offset-index entries past the last batch.
  const std::vector<OffsetIndexEntry>& entries = w.index.entries;
  for (; w.ix < w.by_position.size(); ++w.ix) {
    uint32_t i = w.by_position[w.ix];
    const OffsetIndexEntry& e = entries[i];
    const uint64_t epos = uint64_t(i) * kOffsetIndexEntrySize + 4;
    if (uint64_t(e.position) >= reader.file_size()) {
      Report(sink_, Severity::kError, w.index_path, epos, "offset-index-position",
             fmt::format("entry {} (offset {}): position {} is past the end of {} ({} bytes)", i, e.offset, e.position,
                         log_path, reader.file_size()));
    } else if (uint64_t(e.position) >= valid_bytes && tail_lost) {
      Report(sink_, Severity::kWarning, w.index_path, epos, "offset-index-position",
             fmt::format("entry {} (offset {}): position {} is in the unreadable tail of {} (valid data ends at {}); "
                         "Kafka's recovery rebuilds the index",
                         i, e.offset, e.position, log_path, valid_bytes));
    } else {
      Report(sink_, Severity::kError, w.index_path, epos, "offset-index-position",
             fmt::format("entry {} (offset {}): position {} is not the start of a batch in {}", i, e.offset, e.position,
                         log_path));
    }
  }
  // Entry offsets within the log.
  for (size_t i = 0; i < entries.size(); ++i) {
    const OffsetIndexEntry& e = entries[i];
    if (e.offset > w.segment_last && uint64_t(e.position) < valid_bytes) {
      Report(
          sink_, tail_lost ? Severity::kWarning : Severity::kError, w.index_path, i * kOffsetIndexEntrySize,
          "offset-index-offset",
          fmt::format("entry {}: offset {} is above the last offset {} of {}", i, e.offset, w.segment_last, log_path));
    }
  }
  for (; w.tx < w.by_offset.size(); ++w.tx) {
    uint32_t i = w.by_offset[w.tx];
    const TimeIndexEntry& e = w.time_index.entries[i];
    if (e.offset > w.segment_last) {
      Report(sink_, tail_lost ? Severity::kWarning : Severity::kError, w.time_path,
             uint64_t(i) * kTimeIndexEntrySize + 8, "time-index-offset",
             fmt::format("entry {}: offset {} is above the last offset {} of {}{}", i, e.offset, w.segment_last,
                         log_path, tail_lost ? " (its data is in the lost tail; recovery rebuilds the index)" : ""));
    } else {
      CheckTimeEntry(i, w.running_max_ts);
    }
  }

  // Transaction index: each entry names an ABORT marker of this segment, and every aborted
  // transaction the log shows is indexed (else read_committed consumers get its data: §9).
  std::vector<ControlBatchAt>& markers = w.markers;
  std::sort(markers.begin(), markers.end(),
            [](const ControlBatchAt& a, const ControlBatchAt& b) { return a.offset < b.offset; });
  std::set<int64_t> indexed;
  const std::string txn_path =
      w.seg->txn_index ? w.seg->txn_index->path : log_path.substr(0, log_path.size() - 4) + ".txnindex";
  for (size_t i = 0; i < w.txn_index.entries.size(); ++i) {
    const AbortedTxn& e = w.txn_index.entries[i];
    const uint64_t epos = i * kTxnIndexEntrySize;
    indexed.insert(e.last_offset);
    if (canonical && e.last_offset < base) {
      Report(sink_, Severity::kError, txn_path, epos + 18, "txn-index-entry",
             fmt::format("entry {}: lastOffset {} is below the segment's base offset {} (Kafka's sanity check fails "
                         "and the segment is recovered)",
                         i, e.last_offset, base));
      continue;
    }
    auto m = std::lower_bound(markers.begin(), markers.end(), e.last_offset,
                              [](const ControlBatchAt& a, int64_t o) { return a.offset < o; });
    if (m == markers.end() || m->offset != e.last_offset) {
      Report(sink_, Severity::kError, txn_path, epos + 18, "txn-index-marker",
             fmt::format("entry {} (producer {}, firstOffset {}): no control batch at lastOffset {} in {}", i,
                         e.producer_id, e.first_offset, e.last_offset, log_path));
      continue;
    }
    if (m->type != ControlType::kAbort) {
      Report(sink_, Severity::kError, txn_path, epos + 18, "txn-index-marker",
             fmt::format("entry {}: the marker at offset {} (position {}) is {}, not ABORT", i, e.last_offset,
                         m->position, ControlTypeName(m->type)));
    } else if (m->producer_id != e.producer_id) {
      Report(sink_, Severity::kError, txn_path, epos + 2, "txn-index-marker",
             fmt::format("entry {}: producer {} but the ABORT marker at offset {} is producer {}'s", i, e.producer_id,
                         e.last_offset, m->producer_id));
    }
    for (const AbortedTxn& x : w.expected_aborts) {
      // The cleaner copies entries as they were, so an older firstOffset is fine; a later one hides
      // aborted data from read_committed consumers.
      if (x.last_offset == e.last_offset && e.first_offset > x.first_offset) {
        Report(sink_, Severity::kError, txn_path, epos + 10, "txn-index-first-offset",
               fmt::format("entry {}: firstOffset {} but producer {}'s aborted transaction starts at offset {}; "
                           "read_committed consumers would get its data in [{}, {})",
                           i, e.first_offset, e.producer_id, x.first_offset, x.first_offset, e.first_offset));
      }
    }
  }
  for (const AbortedTxn& x : w.expected_aborts) {
    if (indexed.count(x.last_offset)) continue;
    auto m = std::lower_bound(markers.begin(), markers.end(), x.last_offset,
                              [](const ControlBatchAt& a, int64_t o) { return a.offset < o; });
    uint64_t mpos = m != markers.end() && m->offset == x.last_offset ? m->position : 0;
    Report(sink_, Severity::kError, log_path, mpos, "txn-index-missing",
           fmt::format("ABORT marker at offset {} (producer {}, transaction data from offset {}) has no entry in {}; "
                       "read_committed consumers would get the aborted data",
                       x.last_offset, x.producer_id, x.first_offset, txn_path));
  }

  const GapSummary& gaps = w.gaps;
  if (gaps.count > 0) {
    Report(sink_, Severity::kInfo, log_path, gaps.first_position, "offset-gap",
           fmt::format("{} offset gap{} ({} offsets) in a range this broker's cleaner never cleaned ({}); first: "
                       "offsets {}..{} missing at the batch at {}. Normal for a follower that fetched from a "
                       "compacted leader; not corruption",
                       gaps.count, gaps.count == 1 ? "" : "s", gaps.offsets,
                       ctx_.first_dirty_offset ? fmt::format("firstDirtyOffset {}", *ctx_.first_dirty_offset)
                                               : std::string("no cleaner checkpoint"),
                       gaps.first_from, gaps.first_to, gaps.first_position));
  }
  last_segment_base_ = base;
  CloseSegment();
}

LoadedLog::SegmentVisitor PartitionVerifier::SegmentSteps(const LoadedLog& log, bool standalone) {
  std::vector<const SegmentFiles*> files;  // the listing's, for each segment of the pass
  for (const SegmentInfo& s : log.segments) files.push_back(&log.scan.segments.at(s.base_offset));
  auto begin = [this, files, standalone](size_t i) { BeginSegment(*files[i], i + 1 == files.size(), standalone); };
  LoadedLog::SegmentVisitor v;
  v.begin = [this, begin](size_t i, LogReader& reader) {
    begin(i);
    ++stats_->files_checked;
    stats_->bytes_checked += reader.file_size();
    StartWalk(reader);
  };
  v.batch = [this](size_t, const BatchView& batch) {
    WalkBatch(batch);
    return LoadedLog::Step::kNext;
  };
  v.end = [this](size_t, const LogReader& reader) { EndSegment(reader); };
  v.unreadable = [this, begin, files](size_t i, const std::string& error) {
    begin(i);
    Report(sink_, Severity::kError, files[i]->log->path, 0, "file-read", error);
    CloseSegment();
    unread_before_ = true;
  };
  return v;
}

void PartitionVerifier::VerifyLoneSegment(const LoadedLog& log) {
  replay_start_ = log.segments.empty() ? 0 : log.segments.front().base_offset;
  std::string error;  // none: every file it cannot read is a problem of the segment (SegmentSteps)
  log.ForEachBatch(SegmentSteps(log, true), reader_sink(), &error, options_.read);
}

void PartitionVerifier::VerifyBatchFile(const std::string& path) {
  std::unique_ptr<LogReader> reader = OpenLogCounted(path, sink_, options_.read, stats_);
  if (!reader) return;
  walking_file_ = &path;
  reader->SetCrcWalker(this);
  BatchView batch;
  GapSummary gaps;
  while (reader->Next(&batch)) {
    ++stats_->batches;
    if (!batch.header.crc_valid || !options_.check_records) continue;
    DecodeAndCheck(batch, path, &gaps);
  }
  walking_file_ = nullptr;
  early_.pending = false;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one check per partition-level file (checkpoints, snapshots, indexes)
void PartitionVerifier::CheckPartitionLevel(const PartitionDir& dir) {
  const int64_t leo = log_end_offset_.value_or(0);
  const int64_t log_start = dir.LogSegments().empty() ? 0 : dir.LogSegments().front()->base_offset;
  // Leader-epoch cache (§11.3): every epoch of the log's batches starts at or before its first batch
  // that consumers can see. After DeleteRecords (or retention) the log start offset moves into a segment,
  // and Kafka truncates the cache from the start (LeaderEpochFileCache.truncateFromStart): the epoch that
  // held the new log start then starts there, above its first batch in the file. That is normal.
  int64_t log_start_offset = log_start;
  if (ctx_.have_checkpoints && ctx_.checkpoints.log_start_offset) {
    log_start_offset = std::max(log_start_offset, *ctx_.checkpoints.log_start_offset);
  }
  if (ctx_.leader_epochs && !ctx_.leader_epochs->empty()) {
    std::map<int32_t, int64_t> cache;
    for (const LeaderEpochEntry& e : *ctx_.leader_epochs) cache[e.epoch] = e.start_offset;
    for (const auto& [epoch, first] : epoch_first_offset_) {
      auto it = cache.find(epoch);
      if (it == cache.end()) {
        // The checkpoint is written after the append (asynchronously in newer brokers), so the
        // newest epoch may be missing after a crash; Kafka re-adds it when recovering the segment.
        Report(sink_, Severity::kInfo, ctx_.leader_epoch_file, 0, "leader-epoch-cache",
               fmt::format("epoch {} (first batch at offset {}) has no entry", epoch, first));
      } else if (it->second > std::max(first, log_start_offset)) {
        Report(sink_, Severity::kWarning, ctx_.leader_epoch_file, 0, "leader-epoch-cache",
               fmt::format("epoch {} starts at offset {} in the checkpoint, but the log has a batch of that epoch at "
                           "offset {}",
                           epoch, it->second, first));
      }
    }
    for (const LeaderEpochEntry& e : *ctx_.leader_epochs) {
      if (log_end_offset_ && e.start_offset > leo) {
        Report(sink_, Severity::kWarning, ctx_.leader_epoch_file, 0, "leader-epoch-cache",
               fmt::format("epoch {} starts at offset {}, above the log end offset {} (Kafka truncates the cache at "
                           "load)",
                           e.epoch, e.start_offset, leo));
      }
    }
  }
  if (!ctx_.have_checkpoints || !log_end_offset_) return;
  const PartitionCheckpoints& c = ctx_.checkpoints;
  const std::string name = dir.tp ? dir.tp->ToString() : dir.name;
  auto file = [&](const char* f) { return c.log_dir + "/" + f; };
  if (c.cleaner_checkpoint) {
    if (*c.cleaner_checkpoint > leo) {
      Report(sink_, Severity::kWarning, file("cleaner-offset-checkpoint"), 0, "cleaner-checkpoint",
             fmt::format("{}: firstDirtyOffset {} is above the log end offset {}; Kafka resets it to the log start",
                         name, *c.cleaner_checkpoint, leo));
    } else if (*c.cleaner_checkpoint < log_start) {
      Report(sink_, Severity::kWarning, file("cleaner-offset-checkpoint"), 0, "cleaner-checkpoint",
             fmt::format("{}: firstDirtyOffset {} is below the log start offset {}; Kafka resets it to the log start",
                         name, *c.cleaner_checkpoint, log_start));
    }
  }
  if (c.recovery_point && *c.recovery_point > leo) {
    Report(sink_, Severity::kWarning, file("recovery-point-offset-checkpoint"), 0, "recovery-point",
           fmt::format("{}: recovery point {} is above the log end offset {} (data flushed once is not here: a "
                       "partial copy or a lost tail)",
                       name, *c.recovery_point, leo));
  }
  if (c.high_watermark && *c.high_watermark > leo) {
    Report(sink_, Severity::kWarning, file("replication-offset-checkpoint"), 0, "high-watermark",
           fmt::format("{}: high watermark {} is above the log end offset {} (committed data is not here: a partial "
                       "copy or a lost tail)",
                       name, *c.high_watermark, leo));
  }
  if (c.log_start_offset && *c.log_start_offset > leo) {
    Report(sink_, Severity::kWarning, file("log-start-offset-checkpoint"), 0, "log-start-offset",
           fmt::format("{}: log start offset {} is above the log end offset {}", name, *c.log_start_offset, leo));
  }
}

void PartitionVerifier::VerifyPartition(const LoadedLog& log) {
  StartPartition(log.scan);
  std::string error;  // none: every file it cannot read is a problem of its segment (SegmentSteps)
  log.ForEachBatch(SegmentSteps(log, false), reader_sink(), &error, options_.read);
  FinishPartition(log.scan);
}

void PartitionVerifier::StartPartition(const PartitionDir& dir) {
  if (dir.leader_epoch_checkpoint_file) {
    ++stats_->files_checked;
    stats_->bytes_checked += dir.leader_epoch_checkpoint_file->size;
  }
  if (dir.partition_metadata_file) {
    ++stats_->files_checked;
    stats_->bytes_checked += dir.partition_metadata_file->size;
  }
  LoadSnapshots(dir);
  for (const UnreadableFile& u : dir.unreadable) {
    const FileName& name = u.file.info;
    if (name.kind == FileKind::kLog && name.offset && name.suffix == FileSuffix::kNone)
      unread_bases_.push_back(*name.offset);
  }
  std::sort(unread_bases_.begin(), unread_bases_.end());
  std::vector<const SegmentFiles*> segments = dir.LogSegments();
  replay_start_ = segments.empty() ? 0 : segments.front()->base_offset;
  producers_.TruncateFullyAndStartAt(replay_start_);
}

bool PartitionVerifier::UnreadSegmentIn(int64_t from, int64_t to) const {
  auto it = std::lower_bound(unread_bases_.begin(), unread_bases_.end(), from);
  return it != unread_bases_.end() && *it < to;
}

void PartitionVerifier::FinishPartition(const PartitionDir& dir) {
  std::vector<const SegmentFiles*> segments = dir.LogSegments();
  if (!log_end_offset_ && !segments.empty()) log_end_offset_ = segments.back()->base_offset;
  CompareSnapshotsBefore(log_end_offset_.value_or(0), true);
  for (const KraftSnapshotFile& k : dir.kraft_snapshots) VerifyBatchFile(k.file.path);
  CheckPartitionLevel(dir);
}

PartitionContext ContextFor(const PartitionDir& dir, const PartitionCheckpoints* checkpoints) {
  PartitionContext ctx;
  if (checkpoints) {
    ctx.checkpoints = *checkpoints;
    ctx.have_checkpoints = true;
    ctx.first_dirty_offset = checkpoints->cleaner_checkpoint;
  }
  if (dir.leader_epochs) {
    ctx.leader_epochs = &*dir.leader_epochs;
    ctx.leader_epoch_file = dir.leader_epoch_checkpoint_file ? dir.leader_epoch_checkpoint_file->path : "";
  }
  return ctx;
}

// A partition's result, kept until it can be forwarded in order.
struct PartitionResult {
  std::vector<Problem> problems;
  VerifyStats stats;
};

// The checkpoint values of one partition from an already scanned log directory.
PartitionCheckpoints CheckpointsFromLogDir(const LogDir& dir, const TopicPartition& tp) {
  PartitionCheckpoints c;
  c.log_dir = dir.path;
  auto pick = [&](const std::optional<std::map<TopicPartition, int64_t>>& m, std::optional<int64_t>* out) {
    if (!m) return;
    auto it = m->find(tp);
    if (it != m->end()) *out = it->second;
  };
  pick(dir.cleaner_offsets, &c.cleaner_checkpoint);
  pick(dir.recovery_points, &c.recovery_point);
  pick(dir.high_watermarks, &c.high_watermark);
  pick(dir.log_start_offsets, &c.log_start_offset);
  return c;
}

// Verifies partition `dir` (taken) of the scanned log directory `log_dir` (its checkpoints come from
// there).
void VerifyOnePartition(const LogDir& log_dir, PartitionDir dir, const VerifyOptions& options, PartitionResult* out) {
  const LoadedLog log = LoadedLog::Listed(std::move(dir), options.read.env);
  std::optional<PartitionCheckpoints> checkpoints;
  if (log.tp) checkpoints = CheckpointsFromLogDir(log_dir, *log.tp);
  CountingSink sink(&out->stats);
  PartitionVerifier v(options, &sink, &out->stats, ContextFor(log.scan, checkpoints ? &*checkpoints : nullptr));
  v.VerifyPartition(log);
  out->problems = std::move(sink.problems);
}

void Forward(const std::vector<Problem>& problems, ProblemSink* sink) {
  for (const Problem& p : problems) sink->Report(p);
}

// Threads verify uses for the partitions of a log dir (and to scan them): --threads, else one per core.
size_t VerifyThreads(const VerifyOptions& options) {
  return options.threads > 0 ? size_t(options.threads) : std::max(1u, std::thread::hardware_concurrency());
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per log dir entry kind (FMT §1.1)
VerifyStats VerifyLogDir(const std::string& path, const VerifyOptions& options, ProblemSink* sink) {
  VerifyStats stats;
  LogDir dir;
  // Each partition is verified on the thread that scanned it, while its files are in the caches, and
  // its result held here, by path, until the scan's problems are out; or, once `held_problems` are
  // held, left for the pool below.
  std::mutex early_mu;
  std::unordered_map<std::string, PartitionResult> early;
  size_t held = 0;
  auto elsewhere = [&](const PartitionDir& p) {
    return options.verified_elsewhere && options.verified_elsewhere(p.path);
  };
  // Takes the partition's listing, leaving it only its path: the pool finds its result by it, or leaves
  // it out.
  auto take_keeping_path = [](PartitionDir* p) {
    PartitionDir taken = std::move(*p);
    *p = PartitionDir();
    p->path = taken.path;
    return taken;
  };
  auto verify_scanned = [&](const LogDir& files, PartitionDir* p) {
    if (elsewhere(*p)) {
      take_keeping_path(p);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(early_mu);
      if (held >= options.held_problems) return;
    }
    PartitionResult r;
    VerifyOnePartition(files, take_keeping_path(p), options, &r);
    std::lock_guard<std::mutex> lock(early_mu);
    held += r.problems.size();
    early.emplace(p->path, std::move(r));
  };
  {
    CountingSink scan_sink(&stats);
    bool ok = ScanLogDir(path, &dir, &scan_sink, VerifyThreads(options), options.read.env, verify_scanned);
    if (!ok) {
      stats.unreadable = true;
      stats.unreadable_reason = path + ": cannot list the log directory";
    }
    for (const DirEntry& e : dir.files) {
      if (e.info.suffix != FileSuffix::kNone || e.info.kind == FileKind::kLock) continue;
      switch (e.info.kind) {
        case FileKind::kCleanerOffsetCheckpoint:
        case FileKind::kRecoveryPointCheckpoint:
        case FileKind::kReplicationOffsetCheckpoint:
        case FileKind::kLogStartOffsetCheckpoint:
        case FileKind::kMetaProperties:
        case FileKind::kCleanShutdown:
          ++stats.files_checked;  // parsed by the scan
          stats.bytes_checked += e.size;
          break;
        default: break;
      }
    }
    if (dir.bootstrap_checkpoint) {
      PartitionVerifier v(options, &scan_sink, &stats, PartitionContext{});
      v.VerifyBatchFile(dir.bootstrap_checkpoint->path);
    }
    Forward(scan_sink.problems, sink);
    if (!ok) return stats;
  }
  // Partitions in parallel: a bounded pool pulls partition indices; results are forwarded in name
  // order as soon as every earlier partition is done, so memory holds only finished-but-unforwarded
  // partitions' problems.
  const size_t n = dir.partitions.size();
  std::vector<PartitionResult> results(n);
  std::vector<char> done(n, 0);
  std::mutex mu;
  size_t forwarded = 0;
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    while (true) {
      size_t i = next.fetch_add(1);
      if (i >= n) return;
      // Verified during the scan? (The map is no longer written: the scan is over.)
      if (auto it = early.find(dir.partitions[i].path); it != early.end()) {
        results[i] = std::move(it->second);
      } else if (!elsewhere(dir.partitions[i])) {
        VerifyOnePartition(dir, std::move(dir.partitions[i]), options, &results[i]);
      }
      // Freed here, on the pool, rather than all at once by the caller when `dir` goes (thousands of
      // maps of file names: a serial tail otherwise).
      dir.partitions[i] = PartitionDir();
      std::lock_guard<std::mutex> lock(mu);
      done[i] = 1;
      while (forwarded < n && done[forwarded]) {
        Forward(results[forwarded].problems, sink);
        stats.Add(results[forwarded].stats);
        results[forwarded] = PartitionResult();
        ++forwarded;
      }
    }
  };
  size_t threads = std::min<size_t>({VerifyThreads(options), 16, std::max<size_t>(n, 1)});
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (std::thread& t : pool) t.join();
  }
  return stats;
}

VerifyStats VerifyPartitionDir(const std::string& path, const VerifyOptions& options, ProblemSink* sink) {
  VerifyStats stats;
  PartitionDir dir;
  CountingSink counting(&stats);
  if (!ScanPartitionDir(path, &dir, &counting, options.read.env)) {
    Forward(counting.problems, sink);
    stats.unreadable = true;
    stats.unreadable_reason = path + ": cannot list the partition directory";
    return stats;
  }
  const LoadedLog log = LoadedLog::Listed(std::move(dir), options.read.env);
  std::optional<PartitionCheckpoints> checkpoints;
  if (log.tp) checkpoints = ReadParentCheckpoints(log.dir, *log.tp, &counting, options.read.env);
  PartitionVerifier v(options, &counting, &stats, ContextFor(log.scan, checkpoints ? &*checkpoints : nullptr));
  v.VerifyPartition(log);
  Forward(counting.problems, sink);
  return stats;
}

std::string DirName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per file kind verify accepts as a PATH
VerifyStats VerifyFile(const PathInfo& info, const VerifyOptions& options, ProblemSink* sink) {
  VerifyStats stats;
  CountingSink counting(&stats);
  const std::string& path = info.path;
  FileName name = info.file;
  auto unreadable = [&](const std::string& why) {
    stats.unreadable = true;
    stats.unreadable_reason = why;
  };
  {
    // The PATH itself first: a FIFO or a directory given by name is not "missing from its segment".
    InputFileInfo file_info;
    std::string error;
    if (!ProbeInputFile(path, &file_info, &error, nullptr, options.read.env)) {  // a real file or a member of a capture
      unreadable(error);
      return stats;
    }
  }
  switch (name.kind) {
    case FileKind::kLog:
    case FileKind::kOffsetIndex:
    case FileKind::kTimeIndex:
    case FileKind::kTxnIndex: {
      if (!name.offset || name.suffix != FileSuffix::kNone) {
        // Not a segment name Kafka would use: check the bytes of a log alone.
        if (name.kind != FileKind::kLog) {
          unreadable(path + ": an index file is verified against its segment's .log; give a file with Kafka's name");
          break;
        }
        PartitionVerifier v(options, &counting, &stats, PartitionContext{});
        v.VerifyBatchFile(path);
        break;
      }
      // The whole segment the file belongs to (its .log and indexes).
      PartitionDir dir;
      NullSink quiet;
      ScanPartitionDir(DirName(path), &dir, &quiet, options.read.env);
      auto it = dir.segments.find(*name.offset);
      if (it == dir.segments.end() || !it->second.log) {
        unreadable(path + ": its segment's .log (" + OffsetFileNamePrefix(*name.offset) + ".log) is missing");
        break;
      }
      LoadedLog log = LoadedLog::Listed(std::move(dir), options.read.env);
      std::erase_if(log.segments, [&](const SegmentInfo& s) { return s.base_offset != *name.offset; });
      std::optional<PartitionCheckpoints> checkpoints;
      if (log.tp) checkpoints = ReadParentCheckpoints(log.dir, *log.tp, &quiet, options.read.env);
      PartitionVerifier v(options, &counting, &stats, ContextFor(log.scan, checkpoints ? &*checkpoints : nullptr));
      v.VerifyLoneSegment(log);
      break;
    }
    case FileKind::kKraftSnapshot:
    case FileKind::kKraftSnapshotPart:
    case FileKind::kBootstrapCheckpoint: {
      PartitionVerifier v(options, &counting, &stats, PartitionContext{});
      v.VerifyBatchFile(path);
      break;
    }
    case FileKind::kProducerSnapshot: {
      std::unique_ptr<MappedFile> f = OpenCounted(path, &counting, &stats, options.read.env);
      if (!f) break;
      ProducerSnapshot snapshot;
      ParseProducerSnapshot(path, f->data(), name.offset.value_or(0), &snapshot, &counting);
      break;
    }
    case FileKind::kLeaderEpochCheckpoint:
    case FileKind::kPartitionMetadata:
    case FileKind::kMetaProperties:
    case FileKind::kCleanShutdown:
    case FileKind::kCleanerOffsetCheckpoint:
    case FileKind::kRecoveryPointCheckpoint:
    case FileKind::kReplicationOffsetCheckpoint:
    case FileKind::kLogStartOffsetCheckpoint: {
      std::string text, error;
      InputFailure failure = InputFailure::kNone;
      if (!ReadSmallFile(path, kMaxMetadataFileBytes, &text, &error, &failure, options.read.env)) {
        if (failure == InputFailure::kTooLarge) {
          Report(&counting, Severity::kError, path, 0, "file-size", error);
        } else {
          unreadable(error);
        }
        break;
      }
      ++stats.files_checked;
      stats.bytes_checked += text.size();
      if (name.kind == FileKind::kLeaderEpochCheckpoint) {
        std::vector<LeaderEpochEntry> e;
        ParseLeaderEpochCheckpoint(path, text, &e, &counting);
      } else if (name.kind == FileKind::kPartitionMetadata) {
        PartitionMetadata m;
        ParsePartitionMetadata(path, text, &m, &counting);
      } else if (name.kind == FileKind::kMetaProperties) {
        MetaProperties m;
        ParseMetaProperties(path, text, &m, &counting);
      } else if (name.kind == FileKind::kCleanShutdown) {
        CleanShutdown c;
        ParseCleanShutdown(path, text, &c, &counting);
      } else {
        std::vector<OffsetCheckpointEntry> e;
        ParseOffsetCheckpoint(path, text, &e, &counting);
      }
      break;
    }
    default: unreadable(path + ": not a file klf verifies (" + FileKindName(name.kind) + ")"); break;
  }
  Forward(counting.problems, sink);
  return stats;
}

}  // namespace

namespace {

// Whether a reader opened with `a` gives the batches and problems one opened with `b` gives (the file
// system they are read through aside).
bool SameReading(const ReadOptions& a, const ReadOptions& b) {
  return a.verify_crc == b.verify_crc && a.max_batch_bytes == b.max_batch_bytes &&
         a.max_decompressed_bytes == b.max_decompressed_bytes && a.max_batch_records == b.max_batch_records &&
         a.resync == b.resync && a.stream_chunk_bytes == b.stream_chunk_bytes;
}

}  // namespace

struct PartitionCheck::Impl {
  VerifyOptions options;
  std::string path;
  PartitionDir dir;
  bool scanned = false;  // dir holds the partition's listing
  std::optional<PartitionCheckpoints> checkpoints;
  VerifyStats stats;
  CountingSink sink{&stats};
  std::unique_ptr<PartitionVerifier> verifier;
  LoadedLog::Rider rider;
  bool offered = false;

  // The partition as listed (by the load, or here) and its checkpoints (the scan's problems and the
  // checkpoints' are the log dir's: VerifyLogDir reports them).
  void Listed(PartitionDir listed) {
    dir = std::move(listed);
    scanned = true;
    NullSink quiet;
    if (dir.tp) checkpoints = ReadParentCheckpoints(dir.path, *dir.tp, &quiet, options.read.env);
  }
  PartitionContext Context(const PartitionDir& listed) const {
    return ContextFor(listed, checkpoints ? &*checkpoints : nullptr);
  }
  // The rider's start: verify from the load's listing, on its reader.
  void Start(const LoadedLog& log) {
    Listed(log.scan);
    verifier = std::make_unique<PartitionVerifier>(options, &sink, &stats, Context(dir));
    verifier->StartPartition(dir);
    rider.visit = verifier->SegmentSteps(log, false);
    rider.sink = verifier->reader_sink();
  }
};

PartitionCheck::PartitionCheck(const std::string& partition_dir, const VerifyOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = options;
  m.options.verified_elsewhere = nullptr;
  m.path = partition_dir;
  if (!SameReading(options.read, ReadOptions())) return;
  m.rider.start = [&m](const LoadedLog& log) { m.Start(log); };  // sets the rider's visit and sink
  m.offered = true;
}

PartitionCheck::~PartitionCheck() = default;

LoadedLog::Rider* PartitionCheck::rider() { return impl_->offered ? &impl_->rider : nullptr; }

VerifyStats PartitionCheck::Finish(ProblemSink* sink) {
  Impl& m = *impl_;
  rode_ = m.offered && m.rider.complete;
  if (rode_) {
    m.verifier->FinishPartition(m.dir);
  } else {
    // Alone: from the load's listing when the pass started, else from a listing of its own.
    if (!m.scanned) {
      NullSink quiet;
      PartitionDir listed;
      if (!ScanPartitionDir(m.path, &listed, &quiet, m.options.read.env)) return VerifyStats();
      m.Listed(std::move(listed));
    }
    m.stats = VerifyStats();
    m.sink = CountingSink(&m.stats);
    const LoadedLog log = LoadedLog::Listed(std::move(m.dir), m.options.read.env);
    PartitionVerifier alone(m.options, &m.sink, &m.stats, m.Context(log.scan));
    alone.VerifyPartition(log);
  }
  Forward(m.sink.problems, sink);
  return m.stats;
}

VerifyStats VerifyPath(const std::string& path, const VerifyOptions& options, ProblemSink* sink) {
  PathInfo info = ClassifyPath(path);
  VerifyStats stats;
  switch (info.kind) {
    case PathKind::kMissing:
      stats.unreadable = true;
      stats.unreadable_reason = path + ": no such file or directory";
      return stats;
    case PathKind::kOtherDir:
      stats.unreadable = true;
      stats.unreadable_reason = path +
                                ": a directory that is neither a partition directory (<topic>-<partition> "
                                "with segments) nor a broker log directory";
      return stats;
    case PathKind::kFile: return VerifyFile(info, options, sink);
    case PathKind::kPartitionDir: return VerifyPartitionDir(path, options, sink);
    case PathKind::kLogDir: return VerifyLogDir(path, options, sink);
  }
  return stats;
}

void AppendOffsetWalkProblems(const BatchHeader& h, const RecordOffsetWalk& walk,
                              std::vector<RecordsProblem>* problems) {
  const uint64_t pos = h.position;
  if (walk.broken()) {
    problems->push_back({pos, "record-offset",
                         fmt::format("record {} of the batch at {} has offset {} (delta {}); expected above {} and "
                                     "at most the batch's last offset {} (lastOffsetDelta {})",
                                     walk.in_order(), pos, walk.bad_offset(), JavaSub(walk.bad_offset(), h.base_offset),
                                     JavaSub(walk.expected(), 1), h.last_offset, h.last_offset_delta)});
    return;
  }
  // LogValidator sets maxTimestamp to the largest record timestamp (CreateTime); the cleaner's
  // rebuilt batches recompute it from the retained records.
  if (walk.in_order() > 0 && h.timestamp_type == TimestampType::kCreateTime &&
      walk.max_timestamp() != h.max_timestamp) {
    problems->push_back({pos + 35, "batch-timestamp",
                         fmt::format("batch at {}: maxTimestamp {} but the largest record timestamp is {}", pos,
                                     h.max_timestamp, walk.max_timestamp())});
  }
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one check per record field of a batch (FMT §5), as kafka-dump-log's deep iteration
std::vector<RecordsProblem> CheckBatchRecords(const BatchHeader& h, const std::vector<Record>& records,
                                              std::vector<std::pair<int64_t, int64_t>>* holes) {
  std::vector<RecordsProblem> problems;
  const uint64_t pos = h.position;
  auto hole = [&](int64_t from, int64_t to) {
    if (holes && to > from) holes->emplace_back(from, to);
  };
  if (h.magic >= 2) {
    // Offsets: strictly increasing deltas within [0, lastOffsetDelta]. The cleaner keeps a v2 batch's
    // base offset and last offset when it removes records (MemoryRecords.filterTo, overrideLastOffset),
    // so holes inside a batch are compaction, classified like gaps between batches.
    RecordOffsetWalk walk;
    walk.Reset(h, holes);
    for (const Record& r : records) {
      walk.Add(r.offset, r.timestamp);
      if (walk.broken()) break;
    }
    walk.Finish();
    AppendOffsetWalkProblems(h, walk, &problems);
    if (walk.broken()) return problems;
    if (h.is_control) {
      bool end_txn = false;
      for (const Record& r : records) {
        ControlRecord c;
        std::string why;
        if (!ParseControlRecord(r, &c, &why)) {
          problems.push_back(
              {pos, "control-record", fmt::format("control batch at {}, record at offset {}: {}", pos, r.offset, why)});
        } else if (IsEndTxnMarker(c.type)) {
          end_txn = true;
        }
      }
      // An end-transaction marker batch holds exactly one record (EndTransactionMarker; the cleaner
      // may leave it empty). KRaft control batches (SNAPSHOT_HEADER, KRAFT_VERSION, ...) hold several.
      if (end_txn && records.size() > 1) {
        problems.push_back(
            {pos + 57, "control-batch",
             fmt::format("transaction marker batch at {} holds {} records; expected one", pos, records.size())});
      }
    }
    return problems;
  }
  // v0/v1: a plain message is its own record; inner messages of a wrapper have increasing offsets
  // ending at the wrapper's offset (AbstractLegacyRecordBatch).
  int64_t prev = LLONG_MIN;
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (r.offset <= prev || r.offset > h.last_offset) {
      problems.push_back(
          {pos, "record-offset",
           fmt::format("inner message {} of the wrapper at {} has offset {}; expected above {} and at "
                       "most the wrapper offset {}",
                       i, pos, r.offset, prev == LLONG_MIN ? JavaSub(h.base_offset, 1) : prev, h.last_offset)});
      return problems;
    }
    if (prev != LLONG_MIN) hole(prev + 1, r.offset);
    prev = r.offset;
  }
  return problems;
}

}  // namespace klf
