#include "compactor/partition_log.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "segment_reader/layout.h"
#include "segment_reader/producer_snapshot.h"
#include "segment_reader/producer_state.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace fs = std::filesystem;

namespace {

// A segment file name: 20 digits, then the suffix (no .cleaned/.swap/.deleted). The digits are
// parsed by ClassifyFileName (layout.h): an offset past INT64_MAX is not an offset.
std::optional<int64_t> OffsetOf(const std::string& name, const std::string& suffix) {
  if (name.size() != 20 + suffix.size() || name.compare(20, suffix.size(), suffix) != 0) return std::nullopt;
  return ClassifyFileName(name).offset;
}

// A name that looks like a segment file (20 digits and a suffix) but whose digits are not an offset.
bool OverflowingSegmentName(const std::string& name) {
  if (name.size() < 21 || name[20] != '.') return false;
  return std::all_of(name.begin(), name.begin() + 20, [](char c) { return c >= '0' && c <= '9'; }) &&
         !ClassifyFileName(name).offset;
}

void Report(ProblemSink* sink, Severity sev, const std::string& file, uint64_t pos, const char* check,
            std::string msg) {
  if (sink) sink->Report(Problem{sev, file, pos, check, std::move(msg)});
}

bool ReadWhole(const std::string& path, uint64_t max, std::string* data, std::string* error) {
  return ReadSmallFile(path, max, data, error);
}

// The partition cannot be compacted while a file of it exists but cannot be read: what it holds is
// unknown. Reports it (check "file-read") and sets *error.
bool Unreadable(const std::string& why, ProblemSink* sink, const std::string& file, std::string* error) {
  std::string_view reason = why;
  if (reason.substr(0, file.size() + 2) == file + ": ") reason.remove_prefix(file.size() + 2);
  Report(sink, Severity::kError, file, 0, "file-read", "cannot be read: " + std::string(reason));
  *error = why + " (a file of the partition that cannot be read: nothing is compacted)";
  return false;
}

// Opens `path` through the input door (file.h) and closes it again: false (reported) when it is there
// but cannot be read.
bool CheckReadable(const std::string& path, ProblemSink* sink, std::string* error) {
  InputFileInfo info;
  std::string why;
  InputFailure failure = InputFailure::kNone;
  int fd = OpenInputFile(path, &info, &why, &failure);
  if (fd >= 0) {
    close(fd);
    return true;
  }
  return failure == InputFailure::kMissing || Unreadable(why, sink, path, error);
}

// One log-dir checkpoint file's value for `tp`; false (reported) when the file is there but cannot be
// read. Absent, damaged or oversized files leave *value alone (reported by ReadOffsetCheckpointFile).
bool ReadCheckpoint(const std::string& path, const TopicPartition& tp, std::optional<int64_t>* value,
                    ProblemSink* sink, std::string* error) {
  std::map<TopicPartition, int64_t> m;
  std::vector<UnreadableFile> unreadable;
  if (ReadOffsetCheckpointFile(path, &m, sink, &unreadable)) {
    if (auto it = m.find(tp); it != m.end()) *value = it->second;
  }
  if (unreadable.empty()) return true;
  *error = unreadable.front().error + " (a file of the partition that cannot be read: nothing is compacted)";
  return false;
}

// Walks a mapped file front to back while unmapping the pages already passed (MADV_DONTNEED on a
// read-only private mapping only drops this process's page-table entries; the page cache keeps the
// bytes), so a header walk over a 1 GiB segment does not leave 1 GiB resident in this process.
class PageDropper {
 public:
  explicit PageDropper(Bytes data) : data_(data) {}
  void Passed(size_t pos) {
    if (pos - dropped_ < kWindow) return;
    uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    uintptr_t begin = (uintptr_t(data_.data()) + dropped_) & ~(page - 1);
    uintptr_t end = (uintptr_t(data_.data()) + pos) & ~(page - 1);
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    dropped_ = pos;
  }

 private:
  static constexpr size_t kWindow = size_t(16) << 20;
  Bytes data_;
  size_t dropped_ = 0;
};

}  // namespace

ChunkReader::~ChunkReader() {
  if (fd_ >= 0) close(fd_);
}

bool ChunkReader::Open(const std::string& path, uint64_t size, std::string* error) {
  if (fd_ >= 0) close(fd_);
  path_ = path;
  size_ = size;
  InputFileInfo info;
  fd_ = OpenInputFile(path, &info, error);
  if (fd_ < 0) return false;
  posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  return true;
}

bool ChunkReader::Read(uint64_t pos, size_t n, Bytes* out, std::string* error) {
  if (pos > size_) pos = size_;
  n = size_t(std::min<uint64_t>(n, size_ - pos));
  if (n > capacity_) {
    buffer_.reset(new uint8_t[n]);
    capacity_ = n;
  }
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd_, buffer_.get() + done, n - done, off_t(pos + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      *error = fmt::format("{}: position {}: {}", path_, pos + done,
                           r < 0 ? std::strerror(errno) : "file is shorter than when the log was loaded");
      return false;
    }
    done += size_t(r);
  }
  *out = Bytes(buffer_.get(), n);
  return true;
}

std::string SegmentFileName(int64_t offset, const char* suffix) {
  return fmt::format("{:020d}{}", offset, suffix);
}

EntryStatus NextEntry(Bytes buf, size_t pos, uint64_t file_position, BatchView* batch, std::string* error) {
  size_t remaining = buf.size() - pos;
  if (remaining < size_t(kLogOverhead)) return EntryStatus::kIncomplete;
  int32_t size = LoadI32(buf.data() + pos + 8);
  if (size < kRecordOverheadV0) {
    *error = fmt::format("record size {} is less than the minimum record overhead (14)", size);
    return EntryStatus::kCorrupt;
  }
  if (remaining < size_t(kHeaderSizeUpToMagic)) return EntryStatus::kIncomplete;
  int8_t magic = int8_t(buf[pos + 16]);
  if (magic < 0 || magic > 2) {
    *error = fmt::format("invalid magic {} (expected 0, 1 or 2)", magic);
    return EntryStatus::kCorrupt;
  }
  if (remaining < size_t(kLogOverhead) + size_t(size)) return EntryStatus::kIncomplete;
  Bytes entry = buf.subspan(pos, size_t(kLogOverhead) + size_t(size));
  if (!ParseBatchHeader(entry, file_position, /*verify_crc=*/false, &batch->header, error)) return EntryStatus::kCorrupt;
  batch->bytes = entry;
  return EntryStatus::kOk;
}

LastRecords PartitionLog::LastRecordsOfActiveProducers() const {
  LastRecords r;
  for (const auto& [pid, entry] : producer_state.producers()) {
    std::optional<int64_t> last_data_offset;
    if (entry.last_data_offset() >= 0) last_data_offset = entry.last_data_offset();
    r[pid] = LastRecord{last_data_offset, entry.producer_epoch};
  }
  return r;
}

std::vector<AbortedTxn> PartitionLog::CollectAbortedTransactions(int64_t start, int64_t upper) const {
  std::vector<AbortedTxn> out;
  // The segment containing `start` (floor); none → nothing.
  size_t first = segments.size();
  for (size_t i = 0; i < segments.size(); i++) {
    if (segments[i].base_offset <= start) first = i;
    else break;
  }
  if (first == segments.size()) return out;
  // Quirk §15.4: the lower filter is the log start offset, not `start`.
  int64_t fetch_offset = summary.log_start_offset;
  for (size_t i = first; i < segments.size(); i++) {
    for (const AbortedTxn& t : segments[i].txn_index) {
      if (t.last_offset >= fetch_offset && t.first_offset < upper) out.push_back(t);
      if (t.last_stable_offset >= upper) return out;
    }
  }
  return out;
}

namespace {

// The broker's producer state as the cleaner sees it (§7.3): ProducerStateManager loaded from the
// newest snapshot at or below the log end offset (a snapshot that does not parse is skipped, as Kafka
// deletes it and tries the next older one), the batches after it replayed, then the producers
// expired at `now` removed. Without a usable snapshot replay starts at the log start offset.
// The state machine is segment_reader's; this only supplies the segments the compactor already
// holds, read without checking CRCs, as rebuildProducerState reads them.
void LoadProducers(PartitionLog* log, const CleanerConfig& config, int64_t now, ProblemSink* sink) {
  ProducerStateManager& state = log->producer_state;
  state = ProducerStateManager(ProducerStateOptions{config.producer_id_expiration_ms});
  int64_t leo = log->summary.log_end_offset;
  std::optional<int64_t> snapshot_offset;
  for (auto it = log->snapshot_files.rbegin(); it != log->snapshot_files.rend(); ++it) {
    if (it->first > leo) continue;
    std::string data, error;
    if (!ReadWhole(it->second, 64u << 20, &data, &error)) {
      Report(sink, Severity::kWarning, it->second, 0, "snapshot-read", error);
      continue;
    }
    ProducerSnapshot snap;
    CollectingSink local;
    if (!ParseProducerSnapshot(it->second, AsBytes(data), it->first, &snap, &local)) {
      for (auto& p : local.problems) if (sink) sink->Report(p);
      continue;
    }
    state.LoadSnapshot(snap, now);
    snapshot_offset = it->first;
    break;
  }
  int64_t replay_from = snapshot_offset.value_or(log->summary.log_start_offset);
  if (!snapshot_offset) state.TruncateFullyAndStartAt(replay_from);
  for (size_t i = 0; i < log->segments.size(); i++) {
    const LoadedSegment& seg = log->segments[i];
    // Only segments that hold offsets >= replay_from matter (usually just the active one).
    if (log->summary.segments[i].next_offset <= replay_from) continue;
    std::string error;
    std::unique_ptr<MappedFile> file = MappedFile::Open(seg.log_path, &error);
    if (!file) {
      Report(sink, Severity::kWarning, seg.log_path, 0, "producer-state", error);
      continue;
    }
    Bytes data = file->data().subspan(0, std::min<uint64_t>(file->size(), seg.size));
    PageDropper dropper(data);
    size_t pos = 0;
    BatchView b;
    while (NextEntry(data, pos, pos, &b, &error) == EntryStatus::kOk) {
      dropper.Passed(pos);
      pos += b.bytes.size();
      if (b.header.last_offset >= replay_from) state.Apply(b, seg.log_path, sink);
    }
  }
  // removeExpiredProducers at `now` (never one with an open transaction).
  std::vector<int64_t> before;
  for (const auto& [pid, entry] : state.producers()) before.push_back(pid);
  state.RemoveExpiredProducers(now);
  for (int64_t pid : before)
    if (!state.Find(pid)) log->expired_producers.push_back(pid);
}

}  // namespace

bool LoadPartitionLog(const std::string& partition_dir, const CleanerConfig& config, int64_t now,
                      std::optional<int64_t> high_watermark, PartitionLog* out, ProblemSink* sink,
                      std::string* error) {
  out->dir = partition_dir;
  fs::path dir(partition_dir);
  std::string name = dir.filename().string();
  if (name.empty()) name = dir.parent_path().filename().string();
  auto tp = ParsePartitionDirName(name);
  if (!tp) {
    *error = partition_dir + ": not a partition directory name (<topic>-<partition>)";
    return false;
  }
  out->tp = *tp;
  out->log_dir = fs::absolute(dir).lexically_normal().parent_path().string();
  if (!out->log_dir.empty() && fs::absolute(dir).lexically_normal().filename().empty())
    out->log_dir = fs::path(out->log_dir).parent_path().string();

  std::error_code ec;
  std::map<int64_t, std::string> logs, txns, indexes, time_indexes;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string n = it->path().filename().string();
    std::string path = it->path().string();
    std::map<int64_t, std::string>* files = nullptr;
    std::optional<int64_t> o;
    if ((o = OffsetOf(n, ".log"))) files = &logs;
    else if ((o = OffsetOf(n, ".txnindex"))) files = &txns;
    else if ((o = OffsetOf(n, ".index"))) files = &indexes;
    else if ((o = OffsetOf(n, ".timeindex"))) files = &time_indexes;
    else if ((o = OffsetOf(n, ".snapshot"))) files = &out->snapshot_files;
    if (files) {
      // Whatever its type: a FIFO, directory or symlink loop named like a segment is a segment that
      // cannot be read, and a log cleaned without it would be wrong (never "absent").
      if (!CheckReadable(path, sink, error)) return false;
      (*files)[*o] = path;
    } else if (OverflowingSegmentName(n)) {
      // LogLoader's Long.parseLong fails on it (a broker would not load the directory): not a segment.
      Report(sink, Severity::kWarning, path, 0, "file-name",
             "the offset in the name is larger than the largest offset (2^63-1); ignored");
    } else if (n.find(".cleaned") != std::string::npos || n.find(".swap") != std::string::npos ||
               n.find(".deleted") != std::string::npos) {
      Report(sink, Severity::kWarning, path, 0, "leftover",
             "leftover of an interrupted clean/swap/delete; ignored (Kafka resolves it at startup, LogLoader)");
    }
  }
  if (ec) {
    *error = partition_dir + ": cannot list directory: " + ec.message();
    return false;
  }
  if (logs.empty()) {
    *error = partition_dir + ": no .log segment";
    return false;
  }

  for (const auto& [base, path] : logs) {
    LoadedSegment seg;
    seg.base_offset = base;
    seg.log_path = path;
    std::unique_ptr<MappedFile> file = MappedFile::Open(path, error);
    if (!file) return false;
    seg.size = file->size();
    seg.mtime_ms = file->mtime_ms();
    SegmentSummary s;
    s.base_offset = base;
    s.size = int64_t(seg.size);
    s.last_modified_ms = seg.mtime_ms;
    s.next_offset = base;
    if (auto it = indexes.find(base); it != indexes.end()) {
      // Read in windows: an active segment's index is preallocated (up to 2 GiB of zeros).
      OffsetIndex oi;
      std::string e2;
      CappedSink capped(sink);  // an index of garbage: every entry a problem
      const bool read = ReadOffsetIndexFile(it->second, base, &capped, &oi, &e2);
      capped.Finish();
      if (read) {
        s.offset_index_bytes = int64_t(oi.file_size / kOffsetIndexEntrySize * kOffsetIndexEntrySize);
        seg.offset_index = std::move(oi.entries);
      }
    }
    // The first batch's maxTimestamp, and readNextOffset: as LogSegment.readNextOffset, the batches
    // from the offset index's last entry to the end of the file (after the first batch, the walk
    // jumps there). Without a usable index entry, or if the entry does not lead to a batch that
    // holds its offset, or the walk from it finds damage, every batch header from the start (which
    // also reports the damage). Read in windows with pread(2) (cheaper here than faulting in the
    // mapping's pages); only an entry larger than a window is looked at through the mapping.
    size_t resume = 0;
    int64_t resume_offset = 0;
    if (!seg.offset_index.empty() && seg.offset_index.back().position > 0 &&
        uint64_t(seg.offset_index.back().position) < seg.size) {
      resume = size_t(seg.offset_index.back().position);
      resume_offset = seg.offset_index.back().offset;
    }
    bool whole_walk = resume == 0, jumped = false, check_resumed = false;
    Bytes data = file->data();
    PageDropper dropper(data);
    ChunkReader reader;
    if (!data.empty() && !reader.Open(path, data.size(), error)) return false;
    constexpr size_t kWindow = size_t(1) << 20;
    Bytes window;
    size_t window_pos = 0;
    bool read_any = false;
    size_t pos = 0;
    BatchView b;
    std::string err;
    bool first = true;
    auto next_entry = [&]() -> EntryStatus {
      bool refill = true;
      if (read_any && pos >= window_pos && pos - window_pos < window.size()) {
        EntryStatus st = NextEntry(window, pos - window_pos, pos, &b, &err);
        if (st != EntryStatus::kIncomplete) return st;
        if (window_pos == pos) {
          if (window.size() < kWindow) return st;  // the file ends inside the entry
          refill = false;
        }
      }
      if (refill) {
        if (pos >= data.size()) return EntryStatus::kIncomplete;
        if (!reader.Read(pos, kWindow, &window, &err)) return EntryStatus::kCorrupt;
        window_pos = pos;
        read_any = true;
        EntryStatus st = NextEntry(window, 0, pos, &b, &err);
        if (st != EntryStatus::kIncomplete || window.size() < kWindow) return st;
      }
      dropper.Passed(pos);
      return NextEntry(data, pos, pos, &b, &err);  // an entry larger than the window
    };
    while (true) {
      EntryStatus st = next_entry();
      bool stale = check_resumed && st == EntryStatus::kOk && b.header.last_offset < resume_offset;
      bool torn = st == EntryStatus::kIncomplete && pos < data.size();
      if (!whole_walk && (st == EntryStatus::kCorrupt || stale || torn)) {
        // Start over from the first batch, reading every header.
        whole_walk = true;
        pos = 0;
        read_any = false;
        first = true;
        check_resumed = false;
        s.next_offset = base;
        continue;
      }
      check_resumed = false;
      if (st == EntryStatus::kIncomplete) {
        if (pos < data.size())
          Report(sink, Severity::kWarning, path, pos, "truncated-tail",
                 fmt::format("{} bytes after the last complete batch are not a whole batch", data.size() - pos));
        break;
      }
      if (st == EntryStatus::kCorrupt) {
        Report(sink, Severity::kError, path, pos, "batch-framing", err);
        *error = fmt::format("{}: position {}: {}", path, pos, err);
        return false;
      }
      if (first) {
        s.first_batch_timestamp = b.header.max_timestamp;
        first = false;
      }
      s.next_offset = JavaAdd(b.header.last_offset, 1);
      pos += b.bytes.size();
      if (!whole_walk && !jumped) {
        jumped = true;
        if (resume > pos) {
          pos = resume;
          read_any = false;
          check_resumed = true;
        }
      }
    }
    if (auto it = time_indexes.find(base); it != time_indexes.end()) {
      TimeIndex ti;
      std::string e2;
      CappedSink capped(sink);
      const bool read = ReadTimeIndexFile(it->second, base, &capped, &ti, &e2);
      capped.Finish();
      if (read) {
        if (!ti.entries.empty()) s.max_timestamp_so_far = ti.entries.back().timestamp;
        s.time_index_bytes = int64_t(ti.file_size / kTimeIndexEntrySize * kTimeIndexEntrySize);
      }
    }
    if (auto it = txns.find(base); it != txns.end()) {
      std::string d, e2;
      if (!ReadWhole(it->second, 64u << 20, &d, &e2)) {
        *error = e2;
        return false;
      }
      seg.txn_index = ParseTxnIndex(it->second, AsBytes(d), sink).entries;
    }
    out->summary.segments.push_back(s);
    out->segments.push_back(std::move(seg));
  }

  // Log-dir checkpoints (FMT §11.2).
  std::optional<int64_t> cleaner_checkpoint, log_start_checkpoint, hw_checkpoint;
  if (!ReadCheckpoint(out->log_dir + "/cleaner-offset-checkpoint", out->tp, &cleaner_checkpoint, sink, error) ||
      !ReadCheckpoint(out->log_dir + "/log-start-offset-checkpoint", out->tp, &log_start_checkpoint, sink, error) ||
      (!high_watermark &&
       !ReadCheckpoint(out->log_dir + "/replication-offset-checkpoint", out->tp, &hw_checkpoint, sink, error)))
    return false;
  if (cleaner_checkpoint) out->summary.cleaner_checkpoint = *cleaner_checkpoint;
  int64_t log_start = out->summary.segments.front().base_offset;
  if (log_start_checkpoint) log_start = std::max(log_start, *log_start_checkpoint);
  out->summary.log_start_offset = log_start;
  out->summary.log_end_offset = out->summary.segments.back().next_offset;
  int64_t leo = out->summary.log_end_offset;
  if (high_watermark) {
    out->high_watermark = std::min(*high_watermark, leo);
  } else {
    out->high_watermark = leo;
    if (hw_checkpoint) out->high_watermark = std::min(*hw_checkpoint, leo);
  }

  LoadProducers(out, config, now, sink);
  // LSO = min(HW, first unstable offset) (§0).
  out->summary.last_stable_offset = out->producer_state.LastStableOffset(out->high_watermark);
  return true;
}

}  // namespace klf
