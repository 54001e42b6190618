// Index files of a segment (spec kafka-on-disk-format.md §8, §9).
#include "segment_reader/index_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "segment_reader/capture.h"
#include "segment_reader/file.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace {

// Index files are read in windows of this size (ReadOffsetIndexFile, ReadTimeIndexFile).
constexpr uint64_t kIndexWindowBytes = uint64_t(1) << 20;
// Entries kept of one index (32 MiB of memory): Kafka's default segment.index.bytes (10 MiB) holds
// 1 310 720 offset-index entries; a larger count is garbage or a configuration far off the default.
constexpr uint64_t kMaxIndexEntries = uint64_t(1) << 21;

// Kafka sizes an index by floor(length / entrySize) (AbstractIndex); its sanityCheck rejects a length
// that is not a multiple of the entry size. We keep the whole entries and report the rest.
void CheckLength(const std::string& file, uint64_t size, int entry_size, const char* check, ProblemSink* sink) {
  if (size % entry_size != 0) {
    uint64_t whole = size - size % entry_size;
    Report(sink, Severity::kError, file, whole, check,
           fmt::format("file length {} is not a multiple of the {}-byte entry size: {} trailing bytes "
                       "after {} whole entries",
                       size, entry_size, size - whole, whole / entry_size));
  }
}

// The bytes of an index file: all of them in memory (Parse*), or read with pread(2) in windows
// (Read*File), so that an index of any size costs one window of memory. `in_use_end` is where the
// last non-zero byte ends: everything after it reads as zeros and is never read.
class IndexBytes {
 public:
  explicit IndexBytes(Bytes data) : data_(data), size_(data.size()), in_use_end_(data.size()) {}
  IndexBytes(Bytes data, uint64_t in_use_end) : data_(data), size_(data.size()), in_use_end_(in_use_end) {}
  IndexBytes(ReadableFile* file, uint64_t size, uint64_t in_use_end)
      : file_(file), size_(size), in_use_end_(in_use_end) {}

  uint64_t size() const { return size_; }
  uint64_t in_use_end() const { return in_use_end_; }
  // The n bytes at pos (n <= kIndexWindowBytes), or nullptr when they cannot be read (error()).
  const uint8_t* At(uint64_t pos, size_t n) {
    if (file_ == nullptr) return data_.data() + pos;
    if (pos < window_pos_ || pos + n > window_pos_ + window_size_) {
      // Not zero-filled: read over. No larger than the file (a window never extends past it).
      if (!window_) window_.reset(new uint8_t[std::min<uint64_t>(kIndexWindowBytes, size_)]);
      window_pos_ = pos;
      window_size_ = size_t(std::min<uint64_t>(kIndexWindowBytes, size_ - pos));
      uint64_t got = 0;
      if (!file_->Read(pos, window_size_, window_.get(), &got, &error_)) {
        window_size_ = 0;
        return nullptr;
      }
      if (got < window_size_) {
        error_ = "the file ended at byte " + std::to_string(pos + got) + " while it was read";
        window_size_ = 0;
        return nullptr;
      }
    }
    return window_.get() + (pos - window_pos_);
  }
  const std::string& error() const { return error_; }

 private:
  Bytes data_;
  ReadableFile* file_ = nullptr;
  uint64_t size_ = 0;
  uint64_t in_use_end_ = 0;
  std::unique_ptr<uint8_t[]> window_;
  uint64_t window_pos_ = 0;
  size_t window_size_ = 0;
  std::string error_;
};

// Everything after the first unused slot must be zeros (preallocated space, §8.2). Anything else
// there was written by something other than Kafka's index append. Bytes past in_use_end are zeros.
void CheckUnusedIsZero(const std::string& file, IndexBytes& data, uint64_t first_unused_pos, uint64_t end,
                       const char* check, ProblemSink* sink) {
  end = std::min(end, data.in_use_end());
  for (uint64_t w = first_unused_pos; w < end; w += kIndexWindowBytes) {
    const size_t n = size_t(std::min<uint64_t>(kIndexWindowBytes, end - w));
    const uint8_t* p = data.At(w, n);
    if (p == nullptr) return;
    for (size_t i = 0; i < n; ++i) {
      if (p[i] != 0) {
        Report(sink, Severity::kWarning, file, w + i, check,
               fmt::format("non-zero byte 0x{:02x} in the unused (preallocated) space that starts at "
                           "position {}; expected zeros after the last entry",
                           p[i], first_unused_pos));
        return;
      }
    }
  }
}

// What `.index` and `.timeindex` have in common (§8.1, §8.2): fixed-size entries holding a 4-byte
// relative offset, preallocated zero space after the last entry, and the names of their checks.
struct FixedSizeIndex {
  int entry_size;
  int relative_offset_at;  // where in an entry the relative offset is
  const char* size_check;
  const char* unused_check;
};
constexpr FixedSizeIndex kOffsetIndexLayout{kOffsetIndexEntrySize, 0, "offset-index-size", "offset-index-unused-space"};
constexpr FixedSizeIndex kTimeIndexLayout{kTimeIndexEntrySize, 8, "time-index-size", "time-index-unused-space"};

bool AllZero(const uint8_t* p, int n) {
  for (int i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// Calls on_entry(slot, position, entry bytes) for every entry before the unused space and returns
// the number of unused slots. Zero-tail rule (§8.2, DumpLogSegments): relative offset 0 at slot >= 1
// starts unused space. At slot 0 relative offset 0 can be genuine (the first batch's time-index
// entry; an offset-index entry for the base offset, at a position > 0 since Kafka indexes only after
// index.interval.bytes of data), so there only an all-zero entry is unused space. A slot past
// in_use_end is all zeros without being read: a preallocated 2 GiB index costs nothing.
template <typename OnEntry>
uint64_t ForEachIndexEntry(const std::string& file, IndexBytes& data, const FixedSizeIndex& layout, ProblemSink* sink,
                           OnEntry on_entry) {
  CheckLength(file, data.size(), layout.entry_size, layout.size_check, sink);
  const uint64_t slots = data.size() / layout.entry_size;
  const uint64_t end = slots * layout.entry_size;
  const uint64_t per_window = kIndexWindowBytes / uint64_t(layout.entry_size);
  for (uint64_t i = 0; i < slots;) {
    const uint64_t pos = i * layout.entry_size;
    if (i == kMaxIndexEntries && pos < data.in_use_end()) {
      Report(sink, Severity::kError, file, pos, layout.size_check,
             fmt::format("more than {} entries in use (Kafka's default segment.index.bytes holds {} offset-index "
                         "entries): the entries from position {} on are not read",
                         kMaxIndexEntries, 10485760 / kOffsetIndexEntrySize, pos));
      return 0;
    }
    if (pos >= data.in_use_end()) {  // zeros: slot 0 all zero, or relative offset 0 at slot >= 1
      CheckUnusedIsZero(file, data, pos, end, layout.unused_check, sink);
      return slots - i;
    }
    // A window of whole entries, up to where the zeros start (the slot holding the last non-zero
    // byte included) and the entry bound.
    const uint64_t in_use_slots = (data.in_use_end() + layout.entry_size - 1) / layout.entry_size;
    const uint64_t n = std::min({slots, in_use_slots, kMaxIndexEntries, i + per_window}) - i;
    const uint8_t* w = data.At(pos, size_t(n * layout.entry_size));
    if (w == nullptr) {
      Report(sink, Severity::kError, file, pos, layout.size_check, "cannot read the index: " + data.error());
      return 0;
    }
    for (const uint64_t stop = i + n; i < stop; ++i) {
      const uint64_t at = i * layout.entry_size;
      const uint8_t* p = w + (at - pos);
      int32_t relative = LoadI32(p + layout.relative_offset_at);
      if ((i >= 1 && relative == 0) || (i == 0 && AllZero(p, layout.entry_size))) {
        CheckUnusedIsZero(file, data, at, end, layout.unused_check, sink);
        return slots - i;
      }
      on_entry(i, at, p);
    }
  }
  return 0;
}

// Where the last non-zero byte of the file ends (0: all zeros). Holes read as zeros, so only data
// regions are read (SEEK_DATA/SEEK_HOLE; where unsupported the whole file is one region), each
// backwards in windows from its end: Kafka's preallocated, sparse index of an active segment is
// recognised without reading its zeros.
bool InUseEnd(ReadableFile* file, uint64_t size, uint64_t* in_use_end, std::string* error) {
  std::vector<std::pair<uint64_t, uint64_t>> regions;
  file->DataRegions(&regions);
  // Windows grow from 4 KiB: an index without a zero tail (a closed segment's) has a non-zero byte in
  // its last bytes, and is then read only once more, forwards.
  // Not zero-filled: read over. No larger than the file (a window never extends past it).
  std::unique_ptr<uint8_t[]> window(new uint8_t[std::max<uint64_t>(1, std::min<uint64_t>(kIndexWindowBytes, size))]);
  uint64_t step = 4096;
  for (auto r = regions.rbegin(); r != regions.rend(); ++r) {
    for (uint64_t to = r->second; to > r->first;) {
      const uint64_t from = to - std::min<uint64_t>(step, to - r->first);
      step = std::min<uint64_t>(step * 2, kIndexWindowBytes);
      const size_t n = size_t(to - from);
      uint64_t got = 0;
      if (!file->Read(from, n, window.get(), &got, error)) return false;
      if (got != n) {
        *error = file->path() + ": the file ended at byte " + std::to_string(from + got) + " while it was read";
        return false;
      }
      for (size_t i = n; i > 0; --i) {
        if (window[i - 1] != 0) {
          *in_use_end = from + i;
          return true;
        }
      }
      to = from;
    }
  }
  *in_use_end = 0;
  return true;
}

// Opens an index file for IndexBytes: its size and where its zeros start.
class IndexFile {
 public:
  bool Open(const std::string& path, std::string* error, Env* env) {
    std::string archive, member;
    if (SplitCapturePath(path, &archive, &member)) {
      // A member of a capture (capture.h): its bytes as MappedFile holds them (in place, or in memory).
      mapped_ = MappedFile::Open(path, error, env);
      if (!mapped_) return false;
      size_ = mapped_->size();
      const uint8_t* p = mapped_->data().data();
      in_use_end_ = size_;
      while (in_use_end_ > 0 && p[in_use_end_ - 1] == 0) --in_use_end_;
      return true;
    }
    file_ = (env != nullptr ? env : Env::Default())->NewReadableFile(path, error);
    if (!file_) return false;
    size_ = file_->size();
    if (size_ <= kReadSmallFileBytes) return ReadWhole(error);
    return InUseEnd(file_.get(), size_, &in_use_end_, error);
  }
  IndexBytes Bytes() const {
    if (mapped_) return IndexBytes(mapped_->data(), in_use_end_);
    if (read_whole_) return IndexBytes(klf::Bytes{small_.data(), small_.size()}, in_use_end_);
    return IndexBytes(file_.get(), size_, in_use_end_);
  }

 private:
  // Reads a file of at most kReadSmallFileBytes whole (one pread(2)): a small index costs no
  // SEEK_DATA/SEEK_HOLE and no second read.
  bool ReadWhole(std::string* error) {
    small_.resize(size_t(size_));
    uint64_t got = 0;
    if (!file_->Read(0, size_, small_.data(), &got, error)) return false;
    if (got < size_) {
      *error = file_->path() + ": the file ended at byte " + std::to_string(got) + " while it was read";
      return false;
    }
    in_use_end_ = size_;
    while (in_use_end_ > 0 && small_[in_use_end_ - 1] == 0) --in_use_end_;
    read_whole_ = true;
    return true;
  }

  std::unique_ptr<MappedFile> mapped_;  // a member of a capture
  std::vector<uint8_t> small_;          // a file of at most kReadSmallFileBytes, read whole
  bool read_whole_ = false;
  std::unique_ptr<ReadableFile> file_;
  uint64_t size_ = 0;
  uint64_t in_use_end_ = 0;
};

OffsetIndex ParseOffsetIndexBytes(const std::string& file, IndexBytes& data, int64_t base_offset, ProblemSink* sink) {
  OffsetIndex out;
  out.file_size = data.size();
  out.entries.reserve(size_t(std::min<uint64_t>(data.in_use_end() / kOffsetIndexEntrySize + 1, kMaxIndexEntries)));
  out.unused_slots =
      ForEachIndexEntry(file, data, kOffsetIndexLayout, sink, [&](uint64_t i, uint64_t pos, const uint8_t* p) {
        int32_t relative = LoadI32(p);
        int32_t position = LoadI32(p + 4);
        OffsetIndexEntry e{JavaAdd(base_offset, relative), position};  // baseOffset + relative, as Java wraps it
        if (relative < 0) {
          Report(sink, Severity::kError, file, pos, "offset-index-entry",
                 fmt::format("entry {}: negative relative offset {}; expected 0..2^31-1 above base offset {}", i,
                             relative, base_offset));
        } else if (position < 0) {
          Report(sink, Severity::kError, file, pos + 4, "offset-index-entry",
                 fmt::format("entry {}: negative log position {}", i, position));
        } else if (!out.entries.empty()) {
          const OffsetIndexEntry& last = out.entries.back();
          // OffsetIndex.append rejects an offset not larger than the last one; positions only grow.
          if (e.offset <= last.offset) {
            Report(sink, Severity::kError, file, pos, "offset-index-order",
                   fmt::format("entry {}: offset {} is not greater than the previous entry's offset {}", i, e.offset,
                               last.offset));
          } else if (e.position < last.position) {
            Report(sink, Severity::kError, file, pos + 4, "offset-index-order",
                   fmt::format("entry {}: position {} is smaller than the previous entry's position {}", i, e.position,
                               last.position));
          }
        }
        out.entries.push_back(e);
      });
  return out;
}

TimeIndex ParseTimeIndexBytes(const std::string& file, IndexBytes& data, int64_t base_offset, ProblemSink* sink) {
  TimeIndex out;
  out.file_size = data.size();
  out.entries.reserve(size_t(std::min<uint64_t>(data.in_use_end() / kTimeIndexEntrySize + 1, kMaxIndexEntries)));
  out.unused_slots =
      ForEachIndexEntry(file, data, kTimeIndexLayout, sink, [&](uint64_t i, uint64_t pos, const uint8_t* p) {
        int64_t timestamp = LoadI64(p);
        int32_t relative = LoadI32(p + 8);
        TimeIndexEntry e{timestamp, JavaAdd(base_offset, relative)};  // as Java wraps it
        if (relative < 0) {
          Report(sink, Severity::kError, file, pos + 8, "time-index-entry",
                 fmt::format("entry {}: negative relative offset {}; expected 0..2^31-1 above base offset {}", i,
                             relative, base_offset));
        } else if (!out.entries.empty()) {
          const TimeIndexEntry& last = out.entries.back();
          // TimeIndex.maybeAppend: timestamps strictly increase (equal ones are skipped), offsets never
          // go back.
          if (e.timestamp <= last.timestamp) {
            Report(sink, Severity::kError, file, pos, "time-index-order",
                   fmt::format("entry {}: timestamp {} is not greater than the previous entry's timestamp {}", i,
                               e.timestamp, last.timestamp));
          } else if (e.offset < last.offset) {
            Report(sink, Severity::kError, file, pos + 8, "time-index-order",
                   fmt::format("entry {}: offset {} is smaller than the previous entry's offset {}", i, e.offset,
                               last.offset));
          }
        }
        out.entries.push_back(e);
      });
  return out;
}

}  // namespace

OffsetIndex ParseOffsetIndex(const std::string& file, Bytes data, int64_t base_offset, ProblemSink* sink) {
  IndexBytes bytes(data);
  return ParseOffsetIndexBytes(file, bytes, base_offset, sink);
}

TimeIndex ParseTimeIndex(const std::string& file, Bytes data, int64_t base_offset, ProblemSink* sink) {
  IndexBytes bytes(data);
  return ParseTimeIndexBytes(file, bytes, base_offset, sink);
}

bool ReadOffsetIndexFile(const std::string& path, int64_t base_offset, ProblemSink* sink, OffsetIndex* out,
                         std::string* error, Env* env) {
  IndexFile f;
  if (!f.Open(path, error, env)) return false;
  IndexBytes bytes = f.Bytes();
  *out = ParseOffsetIndexBytes(path, bytes, base_offset, sink);
  return true;
}

bool ReadTimeIndexFile(const std::string& path, int64_t base_offset, ProblemSink* sink, TimeIndex* out,
                       std::string* error, Env* env) {
  IndexFile f;
  if (!f.Open(path, error, env)) return false;
  IndexBytes bytes = f.Bytes();
  *out = ParseTimeIndexBytes(path, bytes, base_offset, sink);
  return true;
}

TxnIndex ParseTxnIndex(const std::string& file, Bytes data, ProblemSink* sink) {
  TxnIndex out;
  out.file_size = data.size();
  const uint64_t count = data.size() / kTxnIndexEntrySize;
  if (data.size() % kTxnIndexEntrySize != 0) {
    // TransactionIndex iterates while a whole entry remains: a partial one is ignored by Kafka.
    uint64_t whole = count * kTxnIndexEntrySize;
    Report(sink, Severity::kWarning, file, whole, "txn-index-size",
           fmt::format("file length {} is not a multiple of the {}-byte entry size: {} trailing bytes "
                       "(a partial entry, ignored as Kafka does)",
                       data.size(), kTxnIndexEntrySize, data.size() - whole));
  }
  out.entries.reserve(size_t(std::min(count, kMaxIndexEntries)));
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t pos = i * kTxnIndexEntrySize;
    const uint8_t* p = data.data() + pos;
    // One entry per aborted transaction of the segment: more than the bound is garbage.
    if (i == kMaxIndexEntries) {
      Report(sink, Severity::kError, file, pos, "txn-index-size",
             fmt::format("more than {} entries: the entries from position {} on are not read", kMaxIndexEntries, pos));
      break;
    }
    // AbortedTxn.version() reads only the first byte (the high byte of the int16): a value > 0 there
    // is "Unexpected aborted transaction version" and Kafka stops reading the index.
    if (int8_t(p[0]) > 0) {
      Report(sink, Severity::kError, file, pos, "txn-index-version",
             fmt::format("entry {}: unexpected aborted transaction version (first byte {}, int16 {}); "
                         "expected 0",
                         i, int8_t(p[0]), LoadI16(p)));
      break;
    }
    AbortedTxn e;
    e.version = LoadI16(p);
    e.producer_id = LoadI64(p + 2);
    e.first_offset = LoadI64(p + 10);
    e.last_offset = LoadI64(p + 18);
    e.last_stable_offset = LoadI64(p + 26);
    if (!out.entries.empty() && e.last_offset <= out.entries.back().last_offset) {
      // TransactionIndex.append requires strictly increasing lastOffset.
      Report(sink, Severity::kError, file, pos + 18, "txn-index-order",
             fmt::format("entry {}: lastOffset {} is not greater than the previous entry's lastOffset {}", i,
                         e.last_offset, out.entries.back().last_offset));
    }
    if (e.first_offset > e.last_offset) {
      Report(sink, Severity::kError, file, pos + 10, "txn-index-entry",
             fmt::format("entry {}: firstOffset {} is after lastOffset {} (the ABORT marker)", i, e.first_offset,
                         e.last_offset));
    }
    out.entries.push_back(e);
  }
  return out;
}

void EncodeOffsetIndexEntry(const OffsetIndexEntry& e, int64_t base_offset, std::string* out) {
  PutBE32(out, uint32_t(int32_t(JavaSub(e.offset, base_offset))));
  PutBE32(out, uint32_t(e.position));
}

void EncodeTimeIndexEntry(const TimeIndexEntry& e, int64_t base_offset, std::string* out) {
  PutBE64(out, uint64_t(e.timestamp));
  PutBE32(out, uint32_t(int32_t(JavaSub(e.offset, base_offset))));
}

void EncodeAbortedTxn(const AbortedTxn& e, std::string* out) {
  PutBE16(out, uint16_t(e.version));
  PutBE64(out, uint64_t(e.producer_id));
  PutBE64(out, uint64_t(e.first_offset));
  PutBE64(out, uint64_t(e.last_offset));
  PutBE64(out, uint64_t(e.last_stable_offset));
}

}  // namespace klf
