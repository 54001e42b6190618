#include "compactor/partition_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "segment_reader/layout.h"
#include "segment_reader/producer_snapshot.h"
#include "partition/producer_state.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace fs = std::filesystem;

ChunkReader::~ChunkReader() {
  if (fd_ >= 0) close(fd_);
}

bool ChunkReader::Open(const std::string& path, uint64_t size, std::string* error) {
  if (fd_ >= 0) close(fd_);
  path_ = path;
  size_ = size;
  InputFileInfo info;
  member_.reset();
  {
    std::string archive, member;
    if (SplitCapturePath(path, &archive, &member)) {
      member_ = OpenInputReader(path, &info, error);
      return member_ != nullptr;
    }
  }
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
  if (member_) {
    if (!member_->Read(pos, n, buffer_.get(), error)) return false;
    *out = Bytes(buffer_.get(), n);
    return true;
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

std::string SegmentFileName(int64_t offset, const char* suffix) { return fmt::format("{:020d}{}", offset, suffix); }

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
  if (!ParseBatchHeader(entry, file_position, /*verify_crc=*/false, &batch->header, error))
    return EntryStatus::kCorrupt;
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
    if (segments[i].base_offset <= start)
      first = i;
    else
      break;
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

// NOLINTNEXTLINE(readability-function-cognitive-complexity): per segment of LoadedLog, LogSegment.readNextOffset (index shortcut, else every header)
bool LoadPartitionLog(const std::string& partition_dir, const CleanerConfig& config, int64_t now,
                      std::optional<int64_t> high_watermark, PartitionLog* out, ProblemSink* sink, std::string* error) {
  out->dir = partition_dir;
  // The partition as a broker loads it (partition/loaded_log.h): segments, checkpoints, producer state.
  LoadOptions lo;
  lo.now_ms = now;
  lo.producer_id_expiration_ms = config.producer_id_expiration_ms;
  LoadedLog log;
  bool unreadable = false;
  if (!LoadedLog::Open(partition_dir, lo, &log, sink, error, &unreadable)) {
    if (unreadable) *error += " (a file of the partition that cannot be read: nothing is compacted)";
    return false;
  }
  fs::path dir(partition_dir);
  if (!log.tp) {
    *error = partition_dir + ": not a partition directory name (<topic>-<partition>)";
    return false;
  }
  out->tp = *log.tp;
  out->log_dir = fs::absolute(dir).lexically_normal().parent_path().string();
  if (!out->log_dir.empty() && fs::absolute(dir).lexically_normal().filename().empty())
    out->log_dir = fs::path(out->log_dir).parent_path().string();
  out->snapshot_files = log.snapshot_files;
  if (log.segments.empty()) {
    *error = partition_dir + ": no .log segment";
    return false;
  }

  for (SegmentInfo& info : log.segments) {
    const int64_t base = info.base_offset;
    const std::string& path = info.log_path;
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
    if (info.offset_index_path) {
      // Read in windows: an active segment's index is preallocated (up to 2 GiB of zeros).
      OffsetIndex oi;
      std::string e2;
      CappedSink capped(sink);  // an index of garbage: every entry a problem
      const bool read = ReadOffsetIndexFile(*info.offset_index_path, base, &capped, &oi, &e2);
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
    size_t released = 0;  // the mapping's pages below this were handed back (ReleaseMappedPages)
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
      // Pages already passed leave this process (the page cache keeps them), so a walk over a 1 GiB
      // segment does not leave 1 GiB resident.
      if (pos - released >= (size_t(16) << 20)) {
        ReleaseMappedPages(data.data() + released, data.data() + pos);
        released = pos;
      }
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
    if (info.time_index_path) {
      TimeIndex ti;
      std::string e2;
      CappedSink capped(sink);
      const bool read = ReadTimeIndexFile(*info.time_index_path, base, &capped, &ti, &e2);
      capped.Finish();
      if (read) {
        if (!ti.entries.empty()) s.max_timestamp_so_far = ti.entries.back().timestamp;
        s.time_index_bytes = int64_t(ti.file_size / kTimeIndexEntrySize * kTimeIndexEntrySize);
      }
    }
    seg.txn_index = std::move(info.txn_index);
    out->summary.segments.push_back(s);
    out->segments.push_back(std::move(seg));
  }

  if (log.cleaner_checkpoint) out->summary.cleaner_checkpoint = *log.cleaner_checkpoint;
  out->summary.log_start_offset = log.log_start_offset;
  out->summary.log_end_offset = out->summary.segments.back().next_offset;
  const int64_t leo = out->summary.log_end_offset;
  out->high_watermark = std::min(high_watermark.value_or(log.high_watermark), leo);

  // The producers the cleaner sees as active (§7.3): the loaded state, less those expired at `now`
  // (removeExpiredProducers runs before every cleaner pass; never a producer with an open transaction).
  out->producer_state = std::move(log.producer_state);
  std::vector<int64_t> before;
  for (const auto& [pid, entry] : out->producer_state.producers()) before.push_back(pid);
  out->producer_state.RemoveExpiredProducers(now);
  for (int64_t pid : before)
    if (!out->producer_state.Find(pid)) out->expired_producers.push_back(pid);
  // LSO = min(HW, first unstable offset) (§0).
  out->summary.last_stable_offset = out->producer_state.LastStableOffset(out->high_watermark);
  return true;
}

}  // namespace klf
