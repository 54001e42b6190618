// LoadedLog::Open (loaded_log.h). Kafka sources followed: LogLoader (log start offset, segments),
// UnifiedLog.updateHighWatermarkMetadata (the high watermark's clamp), rebuildProducerState (the
// snapshot plus the log after it), LocalLog.collectAbortedTransactions (every .txnindex entry).
#include "partition/loaded_log.h"

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "segment_reader/file.h"
#include "segment_reader/java_long.h"
#include "segment_reader/layout.h"

namespace klf {
namespace {

// Problems of a step, held so the load can look at them before passing them on.
void Forward(const CollectingSink& from, ProblemSink* to) {
  if (to)
    for (const Problem& p : from.problems) to->Report(p);
}

bool Fail(std::string why, bool unreadable, std::string* error, bool* unreadable_file) {
  *error = std::move(why);
  if (unreadable_file) *unreadable_file = unreadable;
  return false;
}

std::string ParentDir(const std::string& partition_dir) {
  std::string parent = std::filesystem::path(partition_dir).lexically_normal().parent_path().string();
  return parent.empty() ? "." : parent;
}

// The log dir's checkpoints (§11.2) and the broker's identity (meta.properties). False with *error
// when one of them exists but cannot be read.
bool ReadLogDirFiles(const std::string& partition_dir, LoadedLog* log, ProblemSink* sink, std::string* error) {
  if (log->tp) {
    PartitionCheckpoints cp = ReadParentCheckpoints(partition_dir, *log->tp, sink, log->env);
    if (!cp.unreadable.empty()) {
      *error = cp.unreadable.front().error;
      return false;
    }
    log->cleaner_checkpoint = cp.cleaner_checkpoint;
    log->high_watermark_checkpoint = cp.high_watermark;
    if (cp.log_start_offset) log->log_start_offset = *cp.log_start_offset;
  }
  // meta.properties is verify's to judge; here it only names the broker.
  std::string unreadable;
  std::optional<MetaProperties> mp = ReadLogDirMetaProperties(ParentDir(partition_dir), log->env, &unreadable);
  if (!unreadable.empty()) {
    *error = unreadable;
    return false;
  }
  if (mp) {
    log->cluster_id = mp->cluster_id();
    log->node_id = mp->node_id();
  }
  return true;
}

// The aborted transactions the fetch path returns: every segment's .txnindex, by first offset.
bool ReadTxnIndexes(const PartitionDir& dir, LoadedLog* log, ProblemSink* sink, std::string* error) {
  std::vector<std::pair<AbortedTxn, LoadedLog::FilePosition>> all;  // sorted by first offset below
  for (const auto& [base, seg] : dir.segments) {
    if (!seg.txn_index) continue;
    auto file = MappedFile::Open(seg.txn_index->path, error, log->env);
    if (!file) return false;
    CappedSink capped(sink);  // a .txnindex of garbage: every entry a problem
    TxnIndex idx = ParseTxnIndex(seg.txn_index->path, file->data(), &capped);
    capped.Finish();
    for (size_t i = 0; i < idx.entries.size(); ++i)
      all.emplace_back(idx.entries[i], LoadedLog::FilePosition{seg.txn_index->path, uint64_t(i) * kTxnIndexEntrySize});
    for (SegmentInfo& s : log->segments)
      if (s.base_offset == base) s.txn_index = std::move(idx.entries);
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.first.first_offset < b.first.first_offset; });
  for (auto& [entry, source] : all) {
    log->aborted_txns.push_back(entry);
    log->aborted_txn_sources.push_back(std::move(source));
  }
  return true;
}

// The producer state at the log end (the latest valid snapshot plus the log after it), then the high
// watermark: the checkpoint's (the log end without one, as on a single-replica leader), clamped into
// [log start, log end] as Kafka clamps it on load. False with *error; *unreadable when a file cannot
// be read.
bool LoadProducerStateAtEnd(const LoadOptions& options, LoadedLog* log, ProblemSink* sink, std::string* error,
                            bool* unreadable) {
  CollectingSink ps_sink;
  ProducerStateLoadResult load;
  const int64_t now = options.now_ms.value_or(0);
  if (!LoadProducerState(*log, now, &log->producer_state, &load, &ps_sink, log->log_start_offset)) {
    for (const Problem& p : ps_sink.problems) {
      if (p.check == std::string_view("file-read")) {
        *error = p.file + ": " + p.message;
        *unreadable = true;
        return false;
      }
    }
    *error = log->dir + ": cannot load producer state";
    return false;
  }
  Forward(ps_sink, sink);
  if (options.remove_expired_producers && options.now_ms) log->producer_state.RemoveExpiredProducers(now);
  log->snapshot_offset = load.snapshot_offset;
  log->log_end_offset = load.log_end_offset;

  log->high_watermark = log->high_watermark_checkpoint.value_or(log->log_end_offset);
  if (log->high_watermark > log->log_end_offset) {
    Report(sink, Severity::kWarning, ParentDir(log->dir) + "/replication-offset-checkpoint", 0, "high-watermark",
           "high watermark " + std::to_string(log->high_watermark) + " is above the log end offset " +
               std::to_string(log->log_end_offset) + "; capped as Kafka does");
    log->high_watermark = log->log_end_offset;
  }
  if (log->high_watermark < log->log_start_offset) log->high_watermark = log->log_start_offset;
  log->first_unstable_offset = log->producer_state.FirstUndecidedOffset();
  log->last_stable_offset = log->producer_state.LastStableOffset(log->high_watermark);
  return true;
}

// What log->scan (the partition's listing) gives: whose it is, the segments, the snapshot files.
void TakeListing(LoadedLog* log) {
  const PartitionDir& dir = log->scan;
  log->tp = dir.tp;
  if (dir.partition_metadata) log->topic_id = dir.partition_metadata->topic_id;
  for (const SegmentFiles* s : dir.LogSegments()) {
    SegmentInfo seg;
    seg.base_offset = s->base_offset;
    seg.log_path = s->log->path;
    if (s->index) seg.offset_index_path = s->index->path;
    if (s->time_index) seg.time_index_path = s->time_index->path;
    log->segments.push_back(std::move(seg));
  }
  for (const auto& [offset, file] : dir.producer_snapshots) log->snapshot_files[offset] = file.path;
  log->kraft_snapshots = dir.kraft_snapshots;
}

}  // namespace

LoadedLog LoadedLog::Listed(PartitionDir listing, Env* env) {
  LoadedLog log;
  log.dir = listing.path;
  log.env = env;
  log.scan = std::move(listing);
  TakeListing(&log);
  return log;
}

bool LoadedLog::Open(const std::string& partition_dir, const LoadOptions& options, LoadedLog* out, ProblemSink* sink,
                     std::string* error, bool* unreadable_file) {
  LoadedLog& log = *out;
  log = LoadedLog();
  log.dir = partition_dir;
  log.env = options.env;
  log.producer_state = ProducerStateManager(ProducerStateOptions{options.producer_id_expiration_ms});
  if (unreadable_file) *unreadable_file = false;

  CollectingSink scan_sink;
  PartitionDir& dir = log.scan;  // kept: a rider verifies from this listing (LoadedLog::Rider::start)
  if (!ScanPartitionDir(partition_dir, &dir, &scan_sink, options.env)) {
    // The scan's problem names the directory in its file, not in its message.
    std::string why = scan_sink.problems.empty()
                          ? partition_dir + ": cannot list the directory"
                          : scan_sink.problems.front().file + ": " + scan_sink.problems.front().message;
    return Fail(why, false, error, unreadable_file);
  }
  Forward(scan_sink, sink);
  if (!dir.unreadable.empty()) return Fail(dir.unreadable.front().error, true, error, unreadable_file);
  if (dir.LogSegments().empty() && dir.segments.empty() && !dir.tp) {
    return Fail(partition_dir + ": not a partition directory (no segments, name is not <topic>-<partition>)", false,
                error, unreadable_file);
  }
  TakeListing(&log);

  std::string why;
  if (!ReadLogDirFiles(partition_dir, &log, sink, &why)) return Fail(why, true, error, unreadable_file);
  // LogLoader: the log start offset is the checkpoint's, but never below the first segment.
  if (!log.segments.empty()) log.log_start_offset = std::max(log.log_start_offset, log.segments.front().base_offset);
  if (options.segments_only) return true;

  if (!ReadTxnIndexes(dir, &log, sink, &why)) return Fail(why, true, error, unreadable_file);
  bool unreadable = false;
  if (!LoadProducerStateAtEnd(options, &log, sink, &why, &unreadable))
    return Fail(why, unreadable, error, unreadable_file);
  return true;
}

bool LoadedLog::ForEachBatch(const BatchVisitor& visit, ProblemSink* sink, std::string* error, ReadOptions read) const {
  SegmentVisitor v;
  v.batch = [&](size_t segment, const BatchView& b) { return visit(segment, b) ? Step::kNext : Step::kStop; };
  return ForEachBatch(v, sink, error, read);
}

namespace {

// The readers' problems: to the pass's sink while the pass reads the segment, always to the rider's.
class RiderSink : public ProblemSink {
 public:
  RiderSink(ProblemSink* pass, ProblemSink* rider) : pass_(pass), rider_(rider) {}
  void Report(const Problem& p) override {
    if (pass_reads && pass_) pass_->Report(p);
    if (rider_) rider_->Report(p);
  }
  void DropRider() { rider_ = nullptr; }
  bool pass_reads = true;

 private:
  ProblemSink* pass_;
  ProblemSink* rider_;
};

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the pass's ways into and out of a segment, each also for a rider reading on
bool LoadedLog::ForEachBatch(const SegmentVisitor& visit, ProblemSink* sink, std::string* error, ReadOptions read,
                             Rider* rider) const {
  if (read.env == nullptr) read.env = env;
  if (rider) {
    rider->complete = false;
    if (rider->start) rider->start(*this);
  }
  RiderSink tee(sink, rider ? rider->sink : nullptr);
  ProblemSink* reader_sink = rider ? static_cast<ProblemSink*>(&tee) : sink;
  auto drop_rider = [&] {  // it misses a segment: incomplete
    rider = nullptr;
    tee.DropRider();
  };
  bool pass_on = true;  // the pass's visitor has not stopped
  for (size_t i = 0; i < segments.size() && (pass_on || rider); ++i) {
    bool pass_reads = pass_on;  // the pass reads this segment (on)
    if (pass_on && visit.before) {
      const Step step = visit.before(i);
      pass_reads = step == Step::kNext;
      pass_on = step != Step::kStop;
      if (!pass_reads && !rider) continue;
    }
    const bool pass_opens = pass_reads;
    tee.pass_reads = pass_reads;
    std::string open_error;
    std::unique_ptr<LogReader> reader = LogReader::Open(segments[i].log_path, reader_sink, read, &open_error);
    if (!reader) {
      if (rider) drop_rider();
      if (!pass_reads) continue;
      if (!visit.unreadable) {
        *error = std::move(open_error);
        return false;
      }
      visit.unreadable(i, open_error);
      continue;
    }
    if (pass_reads && visit.begin) visit.begin(i, *reader);
    if (rider && rider->visit.begin) rider->visit.begin(i, *reader);
    bool pass_read_error = false;
    BatchView b;
    while ((pass_reads || rider) && reader->Next(&b)) {
      if (rider) rider->visit.batch(i, b);
      if (!pass_reads) continue;
      Step step = visit.batch(i, b);
      if (step == Step::kNext) continue;
      // The pass leaves the segment here: what it saw of the reads is what it would have seen alone.
      pass_reads = tee.pass_reads = false;
      pass_read_error = !reader->read_error().empty();
      if (step == Step::kStop) pass_on = false;
    }
    if (pass_reads) pass_read_error = !reader->read_error().empty();
    // The rest of the segment is unknown, not absent: the pass fails rather than end early, unless its
    // visitor judges unreadable files itself (the reader reported the error).
    if (pass_on && pass_read_error && !visit.unreadable) {
      *error = reader->read_error();
      return false;
    }
    if (pass_opens && pass_on && visit.end) visit.end(i, *reader);
    if (rider && !reader->read_error().empty()) drop_rider();  // the rest is unknown to the rider too
    if (rider && rider->visit.end) rider->visit.end(i, *reader);
  }
  if (rider) rider->complete = true;
  return true;
}

namespace {

// The batch headers of one `.log` front to back, in 1 MiB windows read with WindowReader (cheaper
// here than faulting in the mapping's pages); only an entry larger than a window is looked at
// through the mapping, whose pages already passed are handed back (ReleaseMappedPages) so a walk
// over a 1 GiB segment does not leave 1 GiB resident.
class HeaderWalk {
 public:
  explicit HeaderWalk(const MappedFile& file) : data_(file.data()) {}
  bool Open(const std::string& path, std::string* error, Env* env) {
    return data_.empty() || reader_.Open(path, data_.size(), error, env);
  }
  // The entry at `pos` (NextEntry's statuses; *err for kCorrupt).
  EntryStatus Next(size_t pos, BatchView* b, std::string* err) {
    constexpr size_t kWindow = size_t(1) << 20;
    bool refill = true;
    if (read_any_ && pos >= window_pos_ && pos - window_pos_ < window_.size()) {
      EntryStatus st = NextEntry(window_, pos - window_pos_, pos, b, err);
      if (st != EntryStatus::kIncomplete) return st;
      if (window_pos_ == pos) {
        if (window_.size() < kWindow) return st;  // the file ends inside the entry
        refill = false;
      }
    }
    if (refill) {
      if (pos >= data_.size()) return EntryStatus::kIncomplete;
      if (!reader_.Read(pos, kWindow, &window_, err)) return EntryStatus::kCorrupt;
      window_pos_ = pos;
      read_any_ = true;
      EntryStatus st = NextEntry(window_, 0, pos, b, err);
      if (st != EntryStatus::kIncomplete || window_.size() < kWindow) return st;
    }
    if (pos - released_ >= (size_t(16) << 20)) {
      ReleaseMappedPages(data_.data() + released_, data_.data() + pos);
      released_ = pos;
    }
    return NextEntry(data_, pos, pos, b, err);  // an entry larger than the window
  }
  // The next Next reads a fresh window (after a jump or a restart).
  void Forget() { read_any_ = false; }

 private:
  Bytes data_;
  WindowReader reader_;
  Bytes window_;
  size_t window_pos_ = 0;
  bool read_any_ = false;
  size_t released_ = 0;
};

// LogSegment.readNextOffset and the first batch's max timestamp into *s; `resume`/`resume_offset`:
// the offset index's last entry (0: none usable).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): readNextOffset's shortcut with its three ways back to the whole walk
bool WalkHeaders(const std::string& path, const MappedFile& file, size_t resume, int64_t resume_offset,
                 SegmentSummary* s, ProblemSink* sink, std::string* error, Env* env) {
  const uint64_t size = file.size();
  HeaderWalk walk(file);
  if (!walk.Open(path, error, env)) return false;
  bool whole_walk = resume == 0, jumped = false, check_resumed = false, first = true;
  size_t pos = 0;
  BatchView b;
  std::string err;
  while (true) {
    EntryStatus st = walk.Next(pos, &b, &err);
    bool stale = check_resumed && st == EntryStatus::kOk && b.header.last_offset < resume_offset;
    bool torn = st == EntryStatus::kIncomplete && pos < size;
    if (!whole_walk && (st == EntryStatus::kCorrupt || stale || torn)) {
      // Start over from the first batch, reading every header.
      whole_walk = true;
      pos = 0;
      walk.Forget();
      first = true;
      check_resumed = false;
      s->next_offset = s->base_offset;
      continue;
    }
    check_resumed = false;
    if (st == EntryStatus::kIncomplete) {
      if (pos < size)
        Report(sink, Severity::kWarning, path, pos, "truncated-tail",
               std::to_string(size - pos) + " bytes after the last complete batch are not a whole batch");
      return true;
    }
    if (st == EntryStatus::kCorrupt) {
      Report(sink, Severity::kError, path, pos, "batch-framing", err);
      *error = path + ": position " + std::to_string(pos) + ": " + err;
      return false;
    }
    if (first) {
      s->first_batch_timestamp = b.header.max_timestamp;
      first = false;
    }
    s->next_offset = JavaAdd(b.header.last_offset, 1);
    pos += b.bytes.size();
    if (!whole_walk && !jumped) {
      jumped = true;
      if (resume > pos) {
        pos = resume;
        walk.Forget();
        check_resumed = true;
      }
    }
  }
}

}  // namespace

bool SummarizeSegment(const SegmentInfo& segment, SegmentSummary* s, std::vector<OffsetIndexEntry>* offset_index,
                      ProblemSink* sink, std::string* error, Env* env) {
  const int64_t base = segment.base_offset;
  std::unique_ptr<MappedFile> file = MappedFile::Open(segment.log_path, error, env);
  if (!file) return false;
  *s = SegmentSummary{};
  s->base_offset = base;
  s->size = int64_t(file->size());
  s->last_modified_ms = file->mtime_ms();
  s->next_offset = base;
  std::vector<OffsetIndexEntry> entries;
  if (segment.offset_index_path) {
    // Read in windows: an active segment's index is preallocated (up to 2 GiB of zeros).
    OffsetIndex oi;
    CappedSink capped(sink);  // an index of garbage: every entry a problem
    const bool read = ReadOffsetIndexFile(*segment.offset_index_path, base, &capped, &oi, error, env);
    capped.Finish();
    if (!read) return false;  // it exists but cannot be read: unknown, not absent
    s->offset_index_bytes = int64_t(oi.file_size / kOffsetIndexEntrySize * kOffsetIndexEntrySize);
    entries = std::move(oi.entries);
  }
  size_t resume = 0;
  int64_t resume_offset = 0;
  if (!entries.empty() && entries.back().position > 0 && uint64_t(entries.back().position) < file->size()) {
    resume = size_t(entries.back().position);
    resume_offset = entries.back().offset;
  }
  if (!WalkHeaders(segment.log_path, *file, resume, resume_offset, s, sink, error, env)) return false;
  if (!file->Unchanged(error)) return false;
  if (segment.time_index_path) {
    TimeIndex ti;
    CappedSink capped(sink);
    const bool read = ReadTimeIndexFile(*segment.time_index_path, base, &capped, &ti, error, env);
    capped.Finish();
    if (!read) return false;
    if (!ti.entries.empty()) s->max_timestamp_so_far = ti.entries.back().timestamp;
    s->time_index_bytes = int64_t(ti.file_size / kTimeIndexEntrySize * kTimeIndexEntrySize);
  }
  if (offset_index) *offset_index = std::move(entries);
  return true;
}

}  // namespace klf
