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

namespace klf {
namespace fs = std::filesystem;

namespace {

// A segment file name: 20 digits, then the suffix (no .cleaned/.swap/.deleted).
std::optional<int64_t> OffsetOf(const std::string& name, const std::string& suffix) {
  if (name.size() != 20 + suffix.size() || name.compare(20, suffix.size(), suffix) != 0) return std::nullopt;
  int64_t v = 0;
  for (int i = 0; i < 20; i++) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

void Report(ProblemSink* sink, Severity sev, const std::string& file, uint64_t pos, const char* check,
            std::string msg) {
  if (sink) sink->Report(Problem{sev, file, pos, check, std::move(msg)});
}

bool ReadWhole(const std::string& path, uint64_t max, std::string* data, std::string* error) {
  return ReadSmallFile(path, max, data, error);
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
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
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
  for (const auto& [pid, p] : producers) r[pid] = LastRecord{p.last_data_offset, p.epoch};
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

// currentTimeMs - lastTimestamp as Java's long arithmetic computes it (wrapping).
int64_t IdleFor(int64_t now, int64_t last_timestamp) { return int64_t(uint64_t(now) - uint64_t(last_timestamp)); }

// ProducerStateManager as far as the cleaner needs it (§7.3): load the newest usable snapshot, replay
// the batches after it, then remove producers expired at `now`.
// TODO(compactor): switch to segment_reader/producer_state.h (LoadProducerState) once it lands; this
// keeps the compactor independent of it meanwhile.
void LoadProducers(PartitionLog* log, const CleanerConfig& config, int64_t now, ProblemSink* sink) {
  int64_t leo = log->summary.log_end_offset;
  int64_t snapshot_offset = -1;
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
      continue;  // Kafka deletes a bad snapshot and tries the next older one
    }
    for (const auto& e : snap.entries) {
      bool open = e.current_txn_first_offset >= 0;
      if (!open && IdleFor(now, e.timestamp) >= config.producer_id_expiration_ms) continue;  // expired at load
      ActiveProducer p;
      p.epoch = e.epoch;
      if (e.last_offset >= 0) p.last_data_offset = e.last_offset;
      p.last_timestamp = e.timestamp;
      if (open) p.current_txn_first_offset = e.current_txn_first_offset;
      log->producers[e.producer_id] = p;
    }
    snapshot_offset = it->first;
    break;
  }
  int64_t replay_from = snapshot_offset >= 0 ? snapshot_offset : log->summary.log_start_offset;
  RecordDecoder decoder;
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
      const BatchHeader& h = b.header;
      if (h.last_offset < replay_from || h.magic < 2 || h.producer_id < 0) continue;
      ActiveProducer& p = log->producers[h.producer_id];
      if (!h.is_control) {
        if (h.producer_epoch != p.epoch) {
          p.last_data_offset.reset();
          p.epoch = h.producer_epoch;
        }
        p.last_data_offset = h.last_offset;
        p.last_timestamp = h.max_timestamp;
        if (h.is_transactional && !p.current_txn_first_offset) p.current_txn_first_offset = h.base_offset;
        continue;
      }
      if (h.record_count == 0) continue;  // an empty control batch changes nothing
      if (!decoder.Decode(b, seg.log_path, sink) || decoder.records().empty()) continue;
      const Record& r = decoder.records()[0];
      ControlRecord marker;
      std::string cerr;
      if (!ParseControlRecord(r, &marker, &cerr)) continue;
      if (marker.type != ControlType::kAbort && marker.type != ControlType::kCommit) continue;
      p.current_txn_first_offset.reset();
      if (h.producer_epoch != p.epoch) {
        p.last_data_offset.reset();
        p.epoch = h.producer_epoch;
      }
      p.last_timestamp = r.timestamp;
    }
  }
  // removeExpiredProducers at `now` (never one with an open transaction).
  for (auto it = log->producers.begin(); it != log->producers.end();) {
    if (!it->second.current_txn_first_offset && IdleFor(now, it->second.last_timestamp) >= config.producer_id_expiration_ms) {
      log->expired_producers.push_back(it->first);
      it = log->producers.erase(it);
    } else {
      ++it;
    }
  }
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
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    std::string n = e.path().filename().string();
    if (auto o = OffsetOf(n, ".log")) logs[*o] = e.path().string();
    else if (auto o = OffsetOf(n, ".txnindex")) txns[*o] = e.path().string();
    else if (auto o = OffsetOf(n, ".index")) indexes[*o] = e.path().string();
    else if (auto o = OffsetOf(n, ".timeindex")) time_indexes[*o] = e.path().string();
    else if (auto o = OffsetOf(n, ".snapshot")) out->snapshot_files[*o] = e.path().string();
    else if (n.find(".cleaned") != std::string::npos || n.find(".swap") != std::string::npos ||
             n.find(".deleted") != std::string::npos)
      Report(sink, Severity::kWarning, e.path().string(), 0, "leftover",
             "leftover of an interrupted clean/swap/delete; ignored (Kafka resolves it at startup, FMT §12)");
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
      std::string d, e2;
      if (ReadWhole(it->second, 64u << 20, &d, &e2)) {
        OffsetIndex oi = ParseOffsetIndex(it->second, AsBytes(d), base, sink);
        seg.offset_index = oi.entries;
        s.offset_index_bytes = int64_t(d.size() / kOffsetIndexEntrySize * kOffsetIndexEntrySize);
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
      s.next_offset = b.header.last_offset + 1;
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
      std::string d, e2;
      if (ReadWhole(it->second, 64u << 20, &d, &e2)) {
        TimeIndex ti = ParseTimeIndex(it->second, AsBytes(d), base, sink);
        if (!ti.entries.empty()) s.max_timestamp_so_far = ti.entries.back().timestamp;
        s.time_index_bytes = int64_t(d.size() / kTimeIndexEntrySize * kTimeIndexEntrySize);
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
  std::map<TopicPartition, int64_t> m;
  if (ReadOffsetCheckpointFile(out->log_dir + "/cleaner-offset-checkpoint", &m, sink)) {
    if (auto it = m.find(out->tp); it != m.end()) out->summary.cleaner_checkpoint = it->second;
  }
  int64_t log_start = out->summary.segments.front().base_offset;
  m.clear();
  if (ReadOffsetCheckpointFile(out->log_dir + "/log-start-offset-checkpoint", &m, sink)) {
    if (auto it = m.find(out->tp); it != m.end()) log_start = std::max(log_start, it->second);
  }
  out->summary.log_start_offset = log_start;
  out->summary.log_end_offset = out->summary.segments.back().next_offset;
  int64_t leo = out->summary.log_end_offset;
  if (high_watermark) {
    out->high_watermark = std::min(*high_watermark, leo);
  } else {
    out->high_watermark = leo;
    m.clear();
    if (ReadOffsetCheckpointFile(out->log_dir + "/replication-offset-checkpoint", &m, sink)) {
      if (auto it = m.find(out->tp); it != m.end()) out->high_watermark = std::min(it->second, leo);
    }
  }

  LoadProducers(out, config, now, sink);
  // LSO = min(HW, first unstable offset) (§0).
  int64_t lso = out->high_watermark;
  for (const auto& [pid, p] : out->producers)
    if (p.current_txn_first_offset) lso = std::min(lso, *p.current_txn_first_offset);
  out->summary.last_stable_offset = lso;
  return true;
}

}  // namespace klf
