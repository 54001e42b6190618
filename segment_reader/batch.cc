#include "segment_reader/batch.h"
#include "segment_reader/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>

#include "segment_reader/crc.h"
#include "segment_reader/java_long.h"

namespace klf {

const char* TimestampTypeName(TimestampType t) {
  switch (t) {
    case TimestampType::kNoTimestampType: return "NoTimestampType";
    case TimestampType::kCreateTime: return "CreateTime";
    case TimestampType::kLogAppendTime: return "LogAppendTime";
  }
  return "NoTimestampType";
}

const char* ControlTypeName(ControlType t) {
  switch (t) {
    case ControlType::kAbort: return "ABORT";
    case ControlType::kCommit: return "COMMIT";
    case ControlType::kLeaderChange: return "LEADER_CHANGE";
    case ControlType::kSnapshotHeader: return "SNAPSHOT_HEADER";
    case ControlType::kSnapshotFooter: return "SNAPSHOT_FOOTER";
    case ControlType::kKRaftVersion: return "KRAFT_VERSION";
    case ControlType::kKRaftVoters: return "KRAFT_VOTERS";
    case ControlType::kUnknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

// Java int arithmetic wraps; so does this (DefaultRecordBatch.incrementSequence).
int32_t IncrementSequence(int32_t sequence, int32_t increment) {
  auto wrap = [](uint32_t v) { return int32_t(v); };
  int32_t limit = wrap(uint32_t(INT32_MAX) - uint32_t(increment));
  if (sequence > limit) {
    return wrap(uint32_t(increment) - uint32_t(wrap(uint32_t(INT32_MAX) - uint32_t(sequence))) - 1u);
  }
  return wrap(uint32_t(sequence) + uint32_t(increment));
}

int32_t BatchHeader::last_sequence() const {
  if (base_sequence == kNoSequence) return kNoSequence;
  return IncrementSequence(base_sequence, last_offset_delta);
}

// ---------------------------------------------------------------------------------------------
// Entry headers (spec §3.1, §4.1).

namespace {

constexpr int kRecordOverheadV1 = 22;
constexpr int kLegacyCrcOffset = 12;  // v0/v1: CRC right after the log overhead
constexpr int kLegacyMagicOffset = 16;
constexpr int kLegacyAttributesOffset = 17;
constexpr int kLegacyTimestampOffset = 18;  // v1 only

std::string Num(int64_t v) { return std::to_string(v); }

}  // namespace

bool ParseBatchHeader(Bytes entry, uint64_t position, bool verify_crc, BatchHeader* h, std::string* error) {
  if (entry.size() < size_t(kHeaderSizeUpToMagic)) {
    *error = "entry shorter than the 17 bytes up to the magic byte";
    return false;
  }
  const uint8_t* p = entry.data();
  int32_t length = LoadI32(p + 8);
  int8_t magic = int8_t(p[16]);
  if (length < kRecordOverheadV0) {
    *error = "size field " + Num(length) + " is below the minimum " + Num(kRecordOverheadV0);
    return false;
  }
  if (entry.size() < size_t(kLogOverhead) + uint32_t(length)) {
    *error =
        "entry of " + Num(int64_t(kLogOverhead) + length) + " bytes but only " + Num(entry.size()) + " bytes available";
    return false;
  }
  *h = BatchHeader();
  h->position = position;
  h->size_in_bytes = uint32_t(kLogOverhead) + uint32_t(length);
  h->magic = magic;
  int64_t offset = LoadI64(p);
  if (magic < 0) {
    *error = "magic byte " + Num(magic) + " is not a known message format (0, 1 or 2)";
    return false;
  }
  if (magic >= 2) {
    // Kafka's file iterator treats every magic >= 2 as a v2 batch (spec §2 rule 4).
    if (h->size_in_bytes < uint32_t(kRecordBatchOverhead)) {
      *error = "batch of " + Num(h->size_in_bytes) + " bytes is smaller than the 61-byte v2 header";
      return false;
    }
    h->base_offset = offset;
    h->partition_leader_epoch = LoadI32(p + 12);
    h->crc = LoadBE32(p + kV2CrcOffset);
    h->attributes = LoadBE16(p + kV2AttributesOffset);
    uint8_t attr = p[22];  // Kafka reads (byte) of the int16: only the low byte counts (spec §4.2)
    h->compression_id = attr & kAttrCompressionMask;
    h->compression = h->compression_id <= 4 ? Compression(h->compression_id) : Compression::kNone;
    h->timestamp_type = (attr & kAttrTimestampType) ? TimestampType::kLogAppendTime : TimestampType::kCreateTime;
    h->is_transactional = attr & kAttrTransactional;
    h->is_control = attr & kAttrControl;
    h->last_offset_delta = LoadI32(p + 23);
    h->base_timestamp = LoadI64(p + 27);
    h->max_timestamp = LoadI64(p + 35);
    if (attr & kAttrDeleteHorizon) h->delete_horizon_ms = h->base_timestamp;
    h->producer_id = LoadI64(p + 43);
    h->producer_epoch = LoadI16(p + 51);
    h->base_sequence = LoadI32(p + 53);
    h->record_count = LoadI32(p + 57);
    h->last_offset = JavaAdd(offset, h->last_offset_delta);
    if (verify_crc) {
      h->crc_valid = Crc32c(entry.subspan(kV2AttributesOffset, h->size_in_bytes - kV2AttributesOffset)) == h->crc;
    }
    return true;
  }
  // v0 / v1 message (spec §3.1).
  if (magic == 1 && length < kRecordOverheadV1) {
    *error = "v1 message size " + Num(length) + " is below the minimum " + Num(kRecordOverheadV1);
    return false;
  }
  h->crc = LoadBE32(p + kLegacyCrcOffset);
  uint8_t attr = p[kLegacyAttributesOffset];
  h->attributes = attr;
  h->compression_id = attr & kAttrCompressionMask;
  h->compression = h->compression_id <= 4 ? Compression(h->compression_id) : Compression::kNone;
  if (magic == 0) {
    h->timestamp_type = TimestampType::kNoTimestampType;
    h->max_timestamp = kNoTimestamp;
  } else {
    h->timestamp_type = (attr & kAttrTimestampType) ? TimestampType::kLogAppendTime : TimestampType::kCreateTime;
    h->max_timestamp = LoadI64(p + kLegacyTimestampOffset);
  }
  h->base_timestamp = kNoTimestamp;
  h->base_offset = offset;
  h->last_offset = offset;
  if (h->compression_id == 0) {
    h->record_count = 1;
  } else {
    h->record_count = -1;  // known once the inner messages are decoded
    h->base_offset_known = false;
  }
  if (verify_crc) {
    h->crc_valid = Crc32(entry.subspan(kLegacyMagicOffset, h->size_in_bytes - kLegacyMagicOffset)) == h->crc;
  }
  return true;
}

EntryStatus NextEntry(Bytes buf, size_t pos, uint64_t file_position, BatchView* batch, std::string* error) {
  size_t remaining = buf.size() - pos;
  if (remaining < size_t(kLogOverhead)) return EntryStatus::kIncomplete;
  int32_t size = LoadI32(buf.data() + pos + 8);
  if (size < kRecordOverheadV0) {
    *error = "record size " + Num(size) + " is less than the minimum record overhead (14)";
    return EntryStatus::kCorrupt;
  }
  if (remaining < size_t(kHeaderSizeUpToMagic)) return EntryStatus::kIncomplete;
  int8_t magic = int8_t(buf[pos + 16]);
  if (magic < 0 || magic > 2) {
    *error = "invalid magic " + Num(magic) + " (expected 0, 1 or 2)";
    return EntryStatus::kCorrupt;
  }
  if (remaining < size_t(kLogOverhead) + size_t(size)) return EntryStatus::kIncomplete;
  Bytes entry = buf.subspan(pos, size_t(kLogOverhead) + size_t(size));
  if (!ParseBatchHeader(entry, file_position, /*verify_crc=*/false, &batch->header, error))
    return EntryStatus::kCorrupt;
  batch->bytes = entry;
  return EntryStatus::kOk;
}

// ---------------------------------------------------------------------------------------------
// LogReader (spec §2, §14).

namespace {

// Bounds the work of one resynchronisation: the bytes CRC-checked while looking for the next valid
// entry. Candidates are first filtered by cheap header plausibility checks.
constexpr uint64_t kResyncCrcBudget = uint64_t(512) << 20;

bool AllZero(const uint8_t* p, size_t n) {
  // Word-at-a-time check; zero tails can be a whole preallocated segment.
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w != 0) return false;
  }
  for (; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

constexpr uint64_t kReleaseStride = 32u << 20;

// AllZero over a long mapped range (a zero tail can be a whole preallocated or sparse segment):
// pages already checked are handed back as it goes, so resident memory stays flat.
bool AllZeroReleasing(const uint8_t* p, uint64_t n) {
  for (uint64_t done = 0; done < n;) {
    const uint64_t k = std::min(n - done, kReleaseStride);
    if (!AllZero(p + done, size_t(k))) return false;
    ReleaseMappedPages(p + done, p + done + k);
    done += k;
  }
  return true;
}

}  // namespace

LogReader::LogReader(std::string file, Bytes data, ProblemSink* sink, ReadOptions options)
    : file_(std::move(file)), data_(data), size_(data.size()), sink_(sink), options_(options) {}

LogReader::~LogReader() {
  if (hole_fd_ >= 0) ::close(hole_fd_);
}

std::unique_ptr<LogReader> LogReader::Open(const std::string& path, ProblemSink* sink, ReadOptions options,
                                           std::string* error) {
  std::unique_ptr<StreamedFile> f = StreamedFile::Open(path, error, options.stream_chunk_bytes, options.env);
  if (!f) return nullptr;
  std::unique_ptr<LogReader> r(new LogReader(path, Bytes(), sink, options));
  r->size_ = f->size();
  r->mtime_ms_ = f->mtime_ms();
  r->stream_ = std::move(f);
  return r;
}

// Streaming mode: the regular case only. An entry whose framing is in order is read into the buffer
// and accepted exactly as the mapped path would; anything else is left to the mapped path.
LogReader::Streamed LogReader::NextStreamed(BatchView* batch) {
  const uint64_t pos = pos_;
  if (pos == size_) return Streamed::kEnd;
  if (size_ - pos < uint64_t(kHeaderSizeUpToMagic) + 1) return Streamed::kIrregular;
  std::string error;
  const uint8_t* p = stream_->Fetch(pos, uint64_t(kHeaderSizeUpToMagic) + 1, &error);
  if (p == nullptr) return Streamed::kIrregular;
  const int32_t size = LoadI32(p + 8);
  const int8_t magic = int8_t(p[16]);
  if (size < kRecordOverheadV0 || uint32_t(size) > options_.max_batch_bytes || magic < 0 || magic > 2) {
    return Streamed::kIrregular;
  }
  const uint64_t total = uint64_t(kLogOverhead) + uint32_t(size);
  if (total > size_ - pos) return Streamed::kIrregular;
  p = stream_->Fetch(pos, total, &error);
  if (p == nullptr) return Streamed::kIrregular;
  Bytes entry(p, total);
  const bool walker = crc_walker_ != nullptr && options_.verify_crc && magic == 2;
  if (!ParseBatchHeader(entry, pos, options_.verify_crc && !walker, &batch->header, &error)) {
    return Streamed::kIrregular;
  }
  if (walker) {  // the CRC ParseBatchHeader would have computed, by the walker or here
    batch->bytes = entry;
    uint32_t crc = 0;
    if (!crc_walker_->CrcAndWalk(*batch, &crc)) crc = Crc32c(entry.subspan(kV2AttributesOffset));
    batch->header.crc_valid = crc == batch->header.crc;
  }
  Accept(entry, batch);
  if (FileShrank()) return Streamed::kEnd;  // the entry may hold zeros where the file's pages were gone
  return Streamed::kEntry;
}

// Leaves streaming mode: maps the file and lets the mapped path go on from pos_.
bool LogReader::SwitchToMapping() {
  std::string error;
  mapped_ = MappedFile::Open(file_, &error, options_.env);
  stream_.reset();
  if (!mapped_) {
    read_error_ = error;
    Report(Severity::kError, pos_, "file-read", std::string(WithoutFile(error, file_)));
    return false;
  }
  data_ = mapped_->data();
  size_ = data_.size();
  released_ = pos_;
  if (pos_ > size_) {  // the file shrank under us
    read_error_ = file_ + ": the file is now " + Num(size_) + " bytes, shorter than the " + Num(pos_) + " already read";
    Report(Severity::kError, pos_, "file-read",
           "the file is now " + Num(size_) + " bytes, shorter than the " + Num(pos_) + " already read");
    return false;
  }
  return true;
}

// Where data resumes at or after `pos` in the mapped file: past a hole of a sparse file (SEEK_DATA), or
// pos itself (in data, or where holes cannot be asked about); the file size when only holes follow.
uint64_t LogReader::NextData(uint64_t pos) {
  if (pos >= size_) return size_;
  if (hole_fd_ == -1) {
    hole_fd_ = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
    if (hole_fd_ < 0) hole_fd_ = -2;
  }
  if (hole_fd_ < 0) return pos;
  off_t data = ::lseek(hole_fd_, off_t(pos), SEEK_DATA);
  if (data < 0) return errno == ENXIO ? size_ : pos;
  return std::min<uint64_t>(uint64_t(data), size_);
}

std::function<uint64_t(uint64_t)> LogReader::NextDataFn() {
  if (!mapped_) return [](uint64_t pos) { return pos; };  // caller's bytes: no file to ask
  return [this](uint64_t pos) { return NextData(pos); };
}

// Whether the mapped data from `pos` to the end is all zeros; holes are not read.
bool LogReader::ZeroFrom(uint64_t pos) {
  const uint64_t from = mapped_ ? std::max(pos, NextData(pos)) : pos;
  return AllZeroReleasing(data_.data() + from, size_ - from);
}

void LogReader::Report(Severity severity, uint64_t position, const char* check, std::string message) {
  if (FileShrank()) return;  // found in the zeros read where the file's pages were gone
  klf::Report(sink_, severity, file_, position, check, std::move(message));
}

bool LogReader::FileShrank() {
  const MappedFile* mapping = stream_ ? stream_->mapping() : mapped_.get();  // one or neither
  if (mapping == nullptr || !mapping->changed()) return false;
  if (read_error_.empty()) {
    mapping->Unchanged(&read_error_);  // "<file>: the file shrank while it was read ..."
    klf::Report(sink_, Severity::kError, file_, pos_, "file-read", std::string(WithoutFile(read_error_, file_)));
  }
  done_ = true;
  end_ = LogEnd::kCorrupt;
  return true;
}

// Scans forward from just after `from` for the next position holding a plausible entry whose CRC is
// valid (cheap header checks first, then the CRC, within a work budget). Its only effect is handing
// back mapped pages it has passed (they fault in again if read).
// `next_data(pos)` is where the file's data resumes at or after pos (past a hole of a sparse file),
// so that holes are passed without touching their pages.
// NOLINTNEXTLINE(readability-function-cognitive-complexity): the resync scan: one case per framing check Kafka's reader makes (FMT §2, §3)
static bool FindNextEntry(Bytes data, uint64_t from, uint32_t max_batch_bytes, uint64_t* found, bool* exhausted,
                          const std::function<uint64_t(uint64_t)>& next_data) {
  const uint8_t* d = data.data();
  uint64_t end = data.size();
  uint64_t budget = kResyncCrcBudget;
  *exhausted = false;
  uint64_t released = from + 1;
  for (uint64_t q = from + 1; q + uint64_t(kLogOverhead + kRecordOverheadV0) <= end; ++q) {
    // A scan can cross gigabytes (a lying length in a sparse file): pages behind it go back.
    if (q - released >= kReleaseStride) {
      ReleaseMappedPages(d + released, d + q);
      released = q;
    }
    int32_t size = LoadI32(d + q + 8);
    if (size == 0) {
      // A run of zeros (a preallocated or sparse tail) is passed 8 bytes at a time: no candidate
      // whose size field lies inside it can be an entry.
      uint64_t nz = std::max(q + 8, next_data(q + 8));
      for (uint64_t w; nz + 8 <= end && (std::memcpy(&w, d + nz, 8), w == 0);) {
        nz += 8;
        if (nz - released >= kReleaseStride) {
          ReleaseMappedPages(d + released, d + nz);
          released = nz;
        }
      }
      if (nz > q + 12) q = std::min(nz, end) - 12;
      continue;
    }
    if (size < kRecordOverheadV0 || uint32_t(size) > max_batch_bytes) continue;
    uint64_t total = uint64_t(kLogOverhead) + uint32_t(size);
    if (q + total > end) continue;
    if (LoadI64(d + q) < 0) continue;
    int8_t magic = int8_t(d[q + 16]);
    bool ok = false;
    if (magic == 2) {
      if (total < uint64_t(kRecordBatchOverhead)) continue;
      uint8_t attr_hi = d[q + 21], attr = d[q + 22];
      if (attr_hi != 0 || (attr & kAttrCompressionMask) > 4 || (attr & 0x80)) continue;
      if (LoadI32(d + q + 23) < 0 || LoadI32(d + q + 57) < 0) continue;
      uint64_t covered = total - kV2AttributesOffset;
      if (covered > budget) {
        *exhausted = true;
        return false;
      }
      budget -= covered;
      ok = Crc32c(Bytes(d + q + kV2AttributesOffset, covered)) == LoadBE32(d + q + kV2CrcOffset);
    } else if (magic == 0 || magic == 1) {
      if (magic == 1 && size < kRecordOverheadV1) continue;
      uint8_t attr = d[q + kLegacyAttributesOffset];
      if ((attr & 0xF0) != 0 || (magic == 0 && (attr & 0x08)) || (attr & kAttrCompressionMask) > 3) continue;
      uint64_t covered = total - kLegacyMagicOffset;
      if (covered > budget) {
        *exhausted = true;
        return false;
      }
      budget -= covered;
      ok = Crc32(Bytes(d + q + kLegacyMagicOffset, covered)) == LoadBE32(d + q + kLegacyCrcOffset);
    }
    if (ok) {
      *found = q;
      return true;
    }
  }
  return false;
}

// After framing corruption at `from`: moves to the next valid entry and reports the skipped bytes,
// or ends the iteration (kCorrupt).
bool LogReader::Resync(uint64_t from) {
  if (!options_.resync) {
    end_ = LogEnd::kCorrupt;
    return false;
  }
  // Scan from inside the previous entry when its CRC failed: a corrupt length field makes the
  // framing break right after that entry, and the real next entry may start inside it.
  uint64_t scan_from = suspect_start_ && *suspect_start_ < from ? *suspect_start_ : from;
  suspect_start_.reset();
  uint64_t q = 0;
  bool exhausted = false;
  if (FindNextEntry(data_, scan_from, options_.max_batch_bytes, &q, &exhausted, NextDataFn())) {
    if (q < from) {
      Report(Severity::kWarning, from, "resync",
             "framing corruption at " + Num(from) +
                 "; the next entry with a plausible header and a valid CRC starts at " + Num(q) +
                 ", inside the previous entry at " + Num(scan_from) +
                 " whose CRC failed (its length field is probably corrupt); resumed there");
    } else {
      Report(Severity::kWarning, from, "resync",
             "skipped " + Num(q - from) + " bytes [" + Num(from) + ", " + Num(q) +
                 ") after framing corruption; resumed at the next entry with a plausible header and a valid CRC at " +
                 Num(q));
    }
    pos_ = q;
    return true;
  }
  Report(Severity::kError, from, "resync",
         "no valid entry found in the " + Num(data_.size() - from) + " bytes after the framing corruption at " +
             Num(from) + (exhausted ? " (search budget exhausted)" : "") + "; they are unreadable");
  end_ = LogEnd::kCorrupt;
  return false;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): FileRecords' batch framing: one case per entry-size check (FMT §2, §3)
bool LogReader::Next(BatchView* batch) {
  if (done_ || FileShrank()) return false;
  if (stream_) {
    switch (NextStreamed(batch)) {
      case Streamed::kEntry: return true;
      case Streamed::kEnd:
        if (FileShrank()) return false;
        done_ = true;
        end_ = LogEnd::kEndOfData;
        return false;
      case Streamed::kIrregular:
        if (FileShrank()) return false;  // zeros where the file's pages were gone, not irregular framing
        if (!SwitchToMapping()) {
          done_ = true;
          end_ = LogEnd::kCorrupt;
          return false;
        }
        break;
    }
  }
  const uint8_t* d = data_.data();
  const uint64_t end = data_.size();
  while (true) {
    uint64_t pos = pos_;
    uint64_t remaining = end - pos;
    // Rule 1: fewer than 18 bytes left is the end of the data (FileLogInputStream.nextBatch).
    if (remaining < uint64_t(kHeaderSizeUpToMagic) + 1) {
      done_ = true;
      if (remaining == 0) {
        end_ = LogEnd::kEndOfData;
      } else if (ZeroFrom(pos)) {
        end_ = LogEnd::kZeroTail;
        Report(Severity::kWarning, pos, "zero-tail",
               "the last " + Num(remaining) +
                   " bytes are zeros (a preallocated segment after an unclean shutdown); "
                   "Kafka's recovery truncates the file at " +
                   Num(pos));
      } else {
        end_ = LogEnd::kTruncatedTail;
        Report(Severity::kWarning, pos, "truncated-tail",
               "the last " + Num(remaining) +
                   " bytes are too short for an entry header (needs 18); "
                   "Kafka ignores them and its recovery truncates the file at " +
                   Num(pos));
      }
      return false;
    }
    int32_t size = LoadI32(d + pos + 8);
    int8_t magic = int8_t(d[pos + 16]);
    // Rule 2: a size below 14 is a CorruptRecordException: a zero tail, or garbage.
    if (size < kRecordOverheadV0) {
      if (ZeroFrom(pos)) {
        done_ = true;
        end_ = LogEnd::kZeroTail;
        Report(Severity::kWarning, pos, "zero-tail",
               "the last " + Num(remaining) +
                   " bytes are zeros (a preallocated segment after an unclean shutdown); "
                   "Kafka's recovery truncates the file at " +
                   Num(pos));
        return false;
      }
      Report(Severity::kError, pos + 8, "batch-size",
             "entry at " + Num(pos) + " has size field " + Num(size) + ", below the minimum " + Num(kRecordOverheadV0) +
                 " (Kafka: CorruptRecordException; recovery truncates here)");
      if (Resync(pos)) continue;
      done_ = true;
      return false;
    }
    if (uint32_t(size) > options_.max_batch_bytes) {
      Report(Severity::kError, pos + 8, "batch-size",
             "entry at " + Num(pos) + " has size field " + Num(size) + ", above the " + Num(options_.max_batch_bytes) +
                 "-byte limit for one entry (a lying length?)");
      if (Resync(pos)) continue;
      done_ = true;
      return false;
    }
    uint64_t total = uint64_t(kLogOverhead) + uint32_t(size);
    // Rule 3: an entry running past the end is a partial write at the tail... unless a valid entry
    // starts inside it, in which case the length field lies.
    if (total > remaining) {
      uint64_t next = 0;
      bool exhausted = false;
      uint64_t scan_from = suspect_start_ && *suspect_start_ < pos ? *suspect_start_ : pos;
      if (options_.resync &&
          FindNextEntry(data_, scan_from, options_.max_batch_bytes, &next, &exhausted, NextDataFn())) {
        Report(Severity::kError, pos + 8, "batch-size",
               "entry at " + Num(pos) + " declares " + Num(total) + " bytes, past the end of the file (" +
                   Num(remaining) + " bytes left), but a valid entry starts at " + Num(next) +
                   ": the length field is corrupt");
        Resync(pos);
        continue;
      }
      done_ = true;
      end_ = LogEnd::kTruncatedTail;
      Report(Severity::kWarning, pos, "truncated-tail",
             "the last entry at " + Num(pos) + " declares " + Num(total) + " bytes but only " + Num(remaining) +
                 " remain (an interrupted write); Kafka stops reading here and its recovery truncates the file at " +
                 Num(pos));
      return false;
    }
    if (magic < 0 || magic > 2) {
      Report(Severity::kError, pos + 16, "unknown-magic",
             "entry at " + Num(pos) + " has magic byte " + Num(magic) + "; known formats are 0, 1 and 2");
      if (Resync(pos)) continue;
      done_ = true;
      return false;
    }
    std::string error;
    if (!ParseBatchHeader(data_.subspan(pos, total), pos, options_.verify_crc, &batch->header, &error)) {
      Report(Severity::kError, pos + 8, "batch-size", "entry at " + Num(pos) + ": " + error);
      if (Resync(pos)) continue;
      done_ = true;
      return false;
    }
    Accept(data_.subspan(pos, total), batch);
    if (FileShrank()) return false;
    // Reading a mapped segment front to back: hand back the pages of entries already passed, so
    // resident memory stays flat whatever the file size (the page cache keeps them).
    if (pos - released_ >= kReleaseStride) {
      ReleaseMappedPages(d + released_, d + pos);
      released_ = pos;
    }
    return true;
  }
}

// An entry with sound framing and a parsed header (batch->header): reports a bad CRC and offsets out
// of order, and moves past it.
void LogReader::Accept(Bytes entry, BatchView* batch) {
  const uint64_t pos = batch->header.position;
  const uint64_t total = entry.size();
  const int8_t magic = batch->header.magic;
  BatchHeader& h = batch->header;
  batch->bytes = entry;
  if (options_.verify_crc && !h.crc_valid) {
    uint32_t computed = magic == 2 ? Crc32c(batch->bytes.subspan(kV2AttributesOffset))
                                   : Crc32(batch->bytes.subspan(kLegacyMagicOffset));
    Report(Severity::kError, pos + (magic == 2 ? kV2CrcOffset : kLegacyCrcOffset), "batch-crc",
           std::string("entry at ") + Num(pos) + ": stored " + (magic == 2 ? "CRC-32C" : "CRC-32") + " " +
               HexEncode(batch->bytes.subspan(magic == 2 ? kV2CrcOffset : kLegacyCrcOffset, 4)) +
               " but the covered bytes give " +
               HexEncode(Bytes(std::array<uint8_t, 4>{uint8_t(computed >> 24), uint8_t(computed >> 16),
                                                      uint8_t(computed >> 8), uint8_t(computed)})));
  }
  if (magic == 2 && h.last_offset_delta < 0) {
    Report(Severity::kError, pos + 23, "offset-order",
           "batch at " + Num(pos) + " has a negative lastOffsetDelta " + Num(h.last_offset_delta));
  }
  int64_t first = magic == 2 ? h.base_offset : h.last_offset;
  if (have_last_offset_ && first <= last_offset_seen_) {
    Report(Severity::kError, pos, "offset-order",
           "entry at " + Num(pos) + " starts at offset " + Num(first) +
               ", not above the previous entry's last offset " + Num(last_offset_seen_));
  }
  if (!have_last_offset_ || h.last_offset > last_offset_seen_) last_offset_seen_ = h.last_offset;
  have_last_offset_ = true;
  if (options_.verify_crc && !h.crc_valid)
    suspect_start_ = pos;
  else
    suspect_start_.reset();
  pos_ = pos + total;
  valid_bytes_ = pos_;
}

// ---------------------------------------------------------------------------------------------
// Record decoding (spec §3.3, §4.4, §5).

namespace {

// Kafka's ByteUtils.readVarint over a raw range, the general case. Returns nullptr on failure (end of
// data or a 5th byte with its continuation bit set).
[[gnu::noinline]] const uint8_t* ReadVarint32Slow(const uint8_t* p, const uint8_t* end, int32_t* out) {
  uint32_t value = 0;
  for (int i = 0; i < 5; ++i) {
    if (p >= end) return nullptr;
    uint8_t b = *p++;
    if (i == 4) {
      if (b & 0x80) return nullptr;
      value |= uint32_t(b) << 28;  // bits above bit 3 fall off, as in Kafka
      break;
    }
    value |= uint32_t(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) break;
  }
  *out = int32_t((value >> 1) ^ (~(value & 1) + 1));
  return p;
}

// Kafka's ByteUtils.readVarlong: at most 10 bytes.
[[gnu::noinline]] const uint8_t* ReadVarint64Slow(const uint8_t* p, const uint8_t* end, int64_t* out) {
  uint64_t value = 0;
  int shift = 0;
  while (true) {
    if (p >= end) return nullptr;
    uint8_t b = *p++;
    value |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
    if (shift > 63) return nullptr;
  }
  *out = int64_t((value >> 1) ^ (~(value & 1) + 1));
  return p;
}

// Kafka's ByteUtils.readVarint (U = uint32_t) and readVarlong (uint64_t), inline for the varints of
// one or two bytes (values in [-8192, 8191]: record lengths, deltas, key and value lengths of ordinary
// records); `slow` (ReadVarint32Slow, ReadVarint64Slow) for the rest.
template <typename U, typename S>
[[gnu::always_inline]] inline const uint8_t* ReadZigZag(const uint8_t* p, const uint8_t* end, S* out,
                                                        const uint8_t* (*slow)(const uint8_t*, const uint8_t*, S*)) {
  if (p < end) [[likely]] {
    const U b0 = p[0];
    if (!(b0 & 0x80)) {
      *out = S((b0 >> 1) ^ (~(b0 & 1) + 1));
      return p + 1;
    }
    if (end - p >= 2) [[likely]] {
      const U b1 = p[1];
      if (!(b1 & 0x80)) {
        const U u = (b0 & 0x7f) | (b1 << 7);
        *out = S((u >> 1) ^ (~(u & 1) + 1));
        return p + 2;
      }
    }
  }
  return slow(p, end, out);
}
[[gnu::always_inline]] inline const uint8_t* ReadVarint32(const uint8_t* p, const uint8_t* end, int32_t* out) {
  return ReadZigZag<uint32_t>(p, end, out, ReadVarint32Slow);
}
[[gnu::always_inline]] inline const uint8_t* ReadVarint64(const uint8_t* p, const uint8_t* end, int64_t* out) {
  return ReadZigZag<uint64_t>(p, end, out, ReadVarint64Slow);
}

// ---- The check-only walk's fast path (RecordDecoder::Check) ----
//
// Most records of a log have varints of one or two bytes (values in [-8192, 8191]), at most a few
// headers, and offsets one after the other. WalkRecords walks such records with no bounds test per
// byte: a record is taken only when it ends at `limit` or before, and every read is less than 8 bytes
// past the last byte the record may take, so the caller gives it 8 readable bytes after `limit` (the
// data itself, or the zeros after a copy of the data's last records: CheckRecordsFast). Positions are
// integers (uintptr_t), so a lying length moves a position, never a pointer, past the data; every such
// position is compared with the record's end before anything is read there. Varints are read without
// zig-zag where only a length or a sign is wanted, and a run of records in order (offsets one after the
// other, none past the batch's last offset) is folded into the offset walk in one step
// (RecordOffsetWalk::AddConsecutive) when the run ends. Anything else (a longer varint, any failed
// check) stops it before that record, having changed nothing for it, and DecodeV2's general parse
// takes the record from its start: it accepts what is sound and reports exactly the problem it reports
// for every record. So the fast path decides only which code parses a record, never a verdict
// (tests/verify/check_walk_test.cc, the batch fuzzer).
//
// Why a record it takes is one the general parse accepts: positions only grow, and a record is taken
// only when, after its last field, the position is exactly the record's end; so every field lies inside
// the record, as ReadVarint32(p, rend) and each length test of the general parse require. The length
// fields are even (not negative) where the general parse refuses a negative value (record length,
// header count, header key length), and a negative key, value or header value length is a null (no
// bytes) in both.

// What the fast path needs of the batch (DecodeV2's header fields).
struct FastBatch {
  int64_t base_offset = 0;
  int64_t base_ts = 0;
  int64_t log_append_ts = 0;  // every record's timestamp when log_append (the batch's max timestamp)
  bool log_append = false;
  // The base offset (and timestamp, when records carry their own) at most 2^62 from zero, so that the
  // sums of the fast path (a delta of 14 bits, a run of them) cannot wrap: runs are folded only then.
  bool runs = false;
};

// A varint of one or two bytes at q, not zig-zag decoded: its raw value in *u; returns where it ends.
// Of a longer varint, bit 7 of its second byte goes to *longer (then *u is not its value, and the
// caller drops the record); q + 2 is returned.
[[gnu::always_inline]] inline uintptr_t Raw2(uintptr_t q, uint32_t* u, uint32_t* longer) {
  const auto* b = reinterpret_cast<const uint8_t*>(q);
  const uint32_t b0 = b[0];
  if (b0 < 0x80) {
    *u = b0;
    return q + 1;
  }
  const uint32_t b1 = b[1];
  *longer |= b1;
  *u = b0 + (b1 << 7) - 0x80;  // (b0 & 0x7f) | (b1 << 7)
  return q + 2;
}
// Zig-zag: the signed value of a raw varint.
[[gnu::always_inline]] inline int32_t ZigZag(uint32_t u) { return int32_t(u >> 1) ^ -int32_t(u & 1); }
// A length field whose negative values mean null (key, value, header value): 0 bytes for those.
[[gnu::always_inline]] inline uint32_t LengthOrNull(uint32_t u) { return (u & 1) != 0 ? 0 : u >> 1; }

// The headers of a record ending at `rend`, from q (at most 2 bytes past rend), `count_raw` the raw
// varint of their count (not 0): returns where they end, or a position past rend when they do not parse
// (a negative count or key length, a length past rend).
[[gnu::always_inline]] inline uintptr_t SkipHeaders(uintptr_t q, uintptr_t rend, uint32_t count_raw, uint32_t* longer) {
  if ((count_raw & 1) != 0) return rend + 1;  // a negative count
  uint32_t u = 0;
  // Each header takes 2 bytes at least, so the loop ends within the record's bytes.
  for (uint32_t headers = count_raw >> 1; q <= rend && headers != 0; --headers) {
    q = Raw2(q, &u, longer);  // header key length, not negative
    if ((u & 1) != 0) return rend + 1;
    q += u >> 1;
    if (q > rend) break;
    q = Raw2(q, &u, longer);  // header value length
    q += LengthOrNull(u);
  }
  return q;
}

// A run's expected offset delta, doubled (the raw varint of that delta), or this: no run.
constexpr uint32_t kNoRun = 0xffffffff;

// Where a run of records in order starts after what `walk` holds: twice the offset delta the next
// record must have to continue it (its raw varint), or kNoRun when no run can start (runs off, the walk
// broken, the expected offset past the batch's last offset `lim` (a delta) or beyond 14 bits).
uint32_t RunStart(const RecordOffsetWalk& walk, const FastBatch& b, int64_t lim) {
  int64_t d = 0;
  if (!b.runs || walk.broken() || __builtin_sub_overflow(walk.expected(), b.base_offset, &d) || d < 0 || d > lim ||
      d > 8192) {
    return kNoRun;
  }
  return uint32_t(2 * d);
}

// A record that does not continue the run: RecordOffsetWalk::Add of it (a hole, an offset out of
// order or past the last offset), then where the next run starts.
[[gnu::noinline]] uint32_t AddOutOfRun(RecordOffsetWalk* walk, const FastBatch& b, int64_t lim, uint32_t off_raw,
                                       uint32_t ts_raw) {
  walk->Add(JavaAdd(b.base_offset, ZigZag(off_raw)),
            b.log_append ? b.log_append_ts : JavaAdd(b.base_ts, ZigZag(ts_raw)));
  return RunStart(*walk, b, lim);
}

// Walks the records from *at while each is in the fast path's reach (see above), at most `count`; *at
// ends before the first record it cannot take. Returns the number of records walked.
template <bool kLogAppend>
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one folded check per record field (FMT §5)
[[gnu::noinline]] int32_t WalkRecords(const uint8_t** at, uintptr_t limit, int32_t count, const FastBatch& b,
                                      RecordOffsetWalk* walk) {
  // The batch's last offset as a delta from its base offset, clamped to what a run can reach.
  int64_t lim = 0;
  if (__builtin_sub_overflow(walk->last_offset(), b.base_offset, &lim)) lim = walk->last_offset() < 0 ? -1 : 1 << 20;
  lim = std::clamp<int64_t>(lim, -1, 1 << 20);
  const uint32_t lim2 = lim < 0 ? 0 : uint32_t(2 * lim);  // a raw delta in the run is at most this
  uint32_t next2 = RunStart(*walk, b, lim);
  uint32_t run = 0;                  // records in the run not yet given to the walk
  int32_t run_ts_delta = INT32_MIN;  // the largest timestamp delta among them
  uintptr_t p = reinterpret_cast<uintptr_t>(*at);
  int32_t i = 0;
  for (; i < count; ++i) {
    uint32_t longer = 0, u = 0;
    uintptr_t q = Raw2(p, &u, &longer);
    const uintptr_t rend = q + (u >> 1);
    if ((u & 1) != 0 || rend > limit) break;
    q = Raw2(q + 1, &u, &longer);  // past the attributes byte
    const uint32_t ts_raw = u;
    q = Raw2(q, &u, &longer);
    const uint32_t off_raw = u;
    q = Raw2(q, &u, &longer);  // key length
    q += LengthOrNull(u);
    if (q > rend) break;
    q = Raw2(q, &u, &longer);  // value length
    q += LengthOrNull(u);
    if (q > rend) break;
    q = Raw2(q, &u, &longer);  // header count
    if (u != 0) q = SkipHeaders(q, rend, u, &longer);
    if (q != rend || (longer & 0x80) != 0) break;
    if (off_raw == next2 && off_raw <= lim2) [[likely]] {
      next2 = off_raw + 2;
      ++run;
      if constexpr (!kLogAppend) run_ts_delta = std::max(run_ts_delta, ZigZag(ts_raw));
    } else {
      if (run != 0) {
        walk->AddConsecutive(run, kLogAppend ? b.log_append_ts : b.base_ts + run_ts_delta);
        run = 0;
        run_ts_delta = INT32_MIN;
      }
      next2 = AddOutOfRun(walk, b, lim, off_raw, ts_raw);
    }
    p = rend;
  }
  if (run != 0) walk->AddConsecutive(run, kLogAppend ? b.log_append_ts : b.base_ts + run_ts_delta);
  *at = reinterpret_cast<const uint8_t*>(p);
  return i;
}

// WalkRecords over [*at, end), in place: a record is taken when 8 bytes of the data follow it.
int32_t WalkInPlace(const uint8_t** at, const uint8_t* end, int32_t count, const FastBatch& b, RecordOffsetWalk* walk) {
  const uintptr_t e = reinterpret_cast<uintptr_t>(end);
  if (count <= 0 || e - reinterpret_cast<uintptr_t>(*at) < 16) return 0;
  return b.log_append ? WalkRecords<true>(at, e - 8, count, b, walk) : WalkRecords<false>(at, e - 8, count, b, walk);
}

// Up to this many bytes at the end of the data are walked in a copy followed by zeros (a batch's
// last record, which no 8 bytes of the data follow).
constexpr size_t kTailBytes = 1024;

// Walks the records in [*at, end) as far as the fast path takes them (WalkRecords, in place and then
// over a copy of the last kTailBytes or fewer). *at and the return as WalkRecords'.
int32_t CheckRecordsFast(const uint8_t** at, const uint8_t* end, int32_t count, const FastBatch& b,
                         RecordOffsetWalk* walk) {
  const int32_t walked = WalkInPlace(at, end, count, b, walk);
  const size_t left = size_t(end - *at);
  if (walked == count || left == 0 || left > kTailBytes) return walked;
  std::array<uint8_t, kTailBytes + 8> tail;
  std::memcpy(tail.data(), *at, left);
  std::memset(tail.data() + left, 0, 8);
  const uint8_t* t = tail.data();
  const uintptr_t limit = reinterpret_cast<uintptr_t>(tail.data() + left);
  const int32_t more = b.log_append ? WalkRecords<true>(&t, limit, count - walked, b, walk)
                                    : WalkRecords<false>(&t, limit, count - walked, b, walk);
  *at += t - tail.data();
  return walked + more;
}

// The fast path with the batch's CRC-32C (*crc over [.., *done)) kept a piece ahead of the walk: each
// round extends the CRC to kCrcPieceBytes past *at (not past `end`, the end of the covered bytes) and
// walks the records that end inside what the CRC has read, so the walk reads bytes the CRC just brought
// into the cache. Stops where CheckRecordsFast would with the whole data (a record it does not take,
// or after `count`), or at a record longer than a piece, which the general parse then takes. Its
// stopping early never changes a verdict (see above).
int32_t CheckRecordsAhead(const uint8_t** at, const uint8_t* end, int32_t count, const FastBatch& b,
                          RecordOffsetWalk* walk, uint32_t* crc, const uint8_t** done) {
  int32_t walked = 0;
  constexpr int64_t kPiece = int64_t(RecordDecoder::kCrcPieceBytes);
  while (true) {
    const uint8_t* target = end - *at > kPiece ? *at + kPiece : end;
    if (*done < target) {
      *crc = Crc32cExtend(*crc, Bytes(*done, size_t(target - *done)));
      *done = target;
    }
    const uint8_t* before = *at;
    walked += *done == end ? CheckRecordsFast(at, end, count - walked, b, walk)
                           : WalkInPlace(at, *done, count - walked, b, walk);
    if (walked == count || *done == end || *at == before) return walked;
  }
}

void ReportTo(ProblemSink* sink, const std::string& file, uint64_t position, const char* check, std::string message) {
  Report(sink, Severity::kError, file, position, check, std::move(message));
}

}  // namespace

// The header bytes were checked by DecodeV2; a parse failure here cannot happen, and would only end
// the iteration early.
void RecordHeaders::iterator::LoadSlow() {
  current_ = RecordHeader();
  int32_t key_len = 0, value_len = 0;
  const uint8_t* p = ReadVarint32(p_, end_, &key_len);
  if (p == nullptr || key_len < 0 || int64_t(key_len) > end_ - p) {
    left_ = 0;
    return;
  }
  current_.key = Bytes(p, size_t(key_len));
  p = ReadVarint32(p + key_len, end_, &value_len);
  if (p == nullptr || int64_t(value_len) > end_ - p) {
    left_ = 0;
    return;
  }
  if (value_len >= 0) {
    current_.value = Bytes(p, size_t(value_len));
    p += value_len;
  }
  next_ = p;
}

RecordDecoder::RecordDecoder(ReadOptions options) : options_(options) {}

bool RecordDecoder::Start(const BatchView& batch, const std::string& file, ProblemSink* sink) {
  header_ = batch.header;
  records_.clear();
  data_ = Bytes();
  if (batch.bytes.size() < size_t(kHeaderSizeUpToMagic) || batch.bytes.size() < header_.size_in_bytes) {
    ReportTo(sink, file, header_.position, "batch-size", "entry bytes shorter than its header says");
    return false;
  }
  return true;
}

bool RecordDecoder::Decode(const BatchView& batch, const std::string& file, ProblemSink* sink) {
  if (!Start(batch, file, sink)) return false;
  if (header_.magic >= 2) return DecodeV2<V2Mode::kFull>(batch, file, sink, nullptr);
  return DecodeLegacy(batch, file, sink);
}

bool RecordDecoder::DecodeKeys(const BatchView& batch, const std::string& file, ProblemSink* sink) {
  if (!Start(batch, file, sink)) return false;
  if (header_.magic >= 2) return DecodeV2<V2Mode::kKeysOnly>(batch, file, sink, nullptr);
  return DecodeLegacy(batch, file, sink);
}

void RecordDecoder::CopyRecords(const RecordDecoder& from, std::span<const uint32_t> which) {
  header_ = from.header_;
  records_.clear();
  decompressed_.clear();
  // A v2 records section holds its records back to back, each size_in_bytes long (its length varint
  // included; DecodeV2 checks that every record ends where its length says): a record's place in it
  // is the sum of the sizes before it.
  size_t total = 0;
  for (uint32_t j : which) total += from.records_[j].size_in_bytes;
  decompressed_.reserve(total);  // no reallocation below: the pointers taken stay valid
  const uint8_t* to = reinterpret_cast<const uint8_t*>(decompressed_.data());
  // A view into `record` as a view into its copy at `copied_at`.
  auto moved = [to](Bytes b, const uint8_t* record, size_t copied_at) {
    return Bytes(to + copied_at + (b.data() - record), b.size());
  };
  size_t next = 0, at = 0;
  for (size_t j = 0; j < from.records_.size() && next < which.size(); j++) {
    const Record& r = from.records_[j];
    const uint8_t* record = from.data_.data() + at;
    at += r.size_in_bytes;
    if (j != which[next]) continue;
    next++;
    const size_t copied_at = decompressed_.size();
    decompressed_.append(reinterpret_cast<const char*>(record), r.size_in_bytes);
    Record& c = records_.emplace_back(r);
    if (c.key) c.key = moved(*c.key, record, copied_at);
    if (c.value) c.value = moved(*c.value, record, copied_at);
    c.headers_at = uint32_t(copied_at + (r.headers_at - (at - r.size_in_bytes)));
  }
  data_ = AsBytes(decompressed_);
}

bool RecordDecoder::Check(const BatchView& batch, const std::string& file, ProblemSink* sink, RecordOffsetWalk* walk) {
  if (!Start(batch, file, sink)) return false;
  if (header_.magic >= 2) return DecodeV2<V2Mode::kCheckOnly>(batch, file, sink, walk);
  return DecodeLegacy(batch, file, sink);  // not for v0/v1 (see batch.h): decoded whole
}

struct RecordDecoder::CrcAhead {
  uint32_t crc = 0;
  const uint8_t* done = nullptr;  // the CRC covers the bytes up to here
};

bool RecordDecoder::CheckWithCrc(const BatchView& batch, const std::string& file, ProblemSink* sink,
                                 RecordOffsetWalk* walk, uint32_t* crc) {
  const Bytes covered =
      batch.bytes.size() > size_t(kV2AttributesOffset) ? batch.bytes.subspan(kV2AttributesOffset) : Bytes();
  const bool ahead = batch.header.compression_id == 0 && batch.bytes.size() >= size_t(kRecordBatchOverhead) &&
                     batch.bytes.size() == batch.header.size_in_bytes;
  CrcAhead state;
  state.done = covered.data();
  if (ahead) {  // the header's covered bytes now, the records' with the walk
    state.crc = Crc32c(covered.first(kRecordBatchOverhead - kV2AttributesOffset));
    state.done += kRecordBatchOverhead - kV2AttributesOffset;
  } else {
    state.crc = Crc32c(covered);
    state.done += covered.size();
  }
  crc_ahead_ = ahead ? &state : nullptr;
  const bool ok = Check(batch, file, sink, walk);
  crc_ahead_ = nullptr;
  const uint8_t* cend = covered.data() + covered.size();
  if (state.done < cend) state.crc = Crc32cExtend(state.crc, Bytes(state.done, size_t(cend - state.done)));
  *crc = state.crc;
  header_.crc_valid = state.crc == header_.crc;
  return ok;
}

// kFull stores every record; kKeysOnly stores records without value and headers (skipped unparsed);
// kCheckOnly parses every field as kFull does but stores nothing: offsets and timestamps go to `walk`.
template <RecordDecoder::V2Mode kMode>
// NOLINTNEXTLINE(readability-function-cognitive-complexity): DefaultRecord.readFrom: one check per record field, in the format's order (FMT §5)
bool RecordDecoder::DecodeV2(const BatchView& batch, const std::string& file, ProblemSink* sink,
                             RecordOffsetWalk* walk) {
  constexpr bool kKeysOnly = kMode == V2Mode::kKeysOnly;
  constexpr bool kStore = kMode != V2Mode::kCheckOnly;
  const BatchHeader& h = header_;
  const uint64_t pos = h.position;
  if (h.record_count < 0) {
    ReportTo(sink, file, pos + 57, "record-count",
             "batch at " + Num(pos) + " declares a negative record count " + Num(h.record_count) +
                 " (Kafka: InvalidRecordException)");
    return false;
  }
  if (h.record_count == 0) return true;  // the records section is not read at all (spec §4.4)
  if (h.compression_id > 4) {
    ReportTo(sink, file, pos + 22, "unknown-codec",
             "batch at " + Num(pos) + " has compression id " + Num(h.compression_id) +
                 " in its attributes (Kafka: Unknown compression type id)");
    return false;
  }
  Bytes section = batch.bytes.subspan(kRecordBatchOverhead, h.size_in_bytes - kRecordBatchOverhead);
  Bytes data = section;
  bool compressed = h.compression != Compression::kNone;
  if (compressed) {
    std::string error;
    if (!Decompress(h.compression, section, 2, options_.max_decompressed_bytes, &decompressed_, &error)) {
      ReportTo(sink, file, pos + kRecordBatchOverhead, "decompress",
               "batch at " + Num(pos) + ": cannot decompress the " + CompressionName(h.compression) +
                   " records section: " + error);
      return false;
    }
    data = AsBytes(decompressed_);
  }
  data_ = data;
  // Where a failure in `data` is in the file: exact when uncompressed; the start of the compressed
  // section otherwise (the message then gives the offset inside the decompressed data).
  auto where = [&](const uint8_t* at) -> uint64_t {
    return compressed ? pos + kRecordBatchOverhead : pos + kRecordBatchOverhead + uint64_t(at - data.data());
  };
  auto inside = [&](const uint8_t* at) -> std::string {
    return compressed ? " (decompressed byte " + Num(at - data.data()) + ")" : "";
  };

  const uint8_t* p = data.data();
  const uint8_t* end = p + data.size();
  const int32_t count = h.record_count;
  // Every record takes at least 7 bytes, so the count of an honest batch is bounded by the data.
  size_t plausible = std::min<size_t>(size_t(count), data.size() / 7 + 1);
  if (plausible > options_.max_batch_records) {
    ReportTo(sink, file, pos + 57, "record-budget",
             "batch at " + Num(pos) + " declares " + Num(count) + " records in " + Num(data.size()) +
                 (compressed ? " decompressed" : "") + " bytes, more than the " + Num(options_.max_batch_records) +
                 " records klf decodes of one batch; its records are not read");
    return false;
  }
  if (kStore && records_.capacity() < plausible) records_.reserve(plausible);
  const bool log_append = h.timestamp_type == TimestampType::kLogAppendTime;
  const int64_t base_offset = h.base_offset;
  const int64_t base_ts = h.base_timestamp;
  const int32_t base_seq = h.base_sequence;
  FastBatch fast;
  if constexpr (!kStore) {
    constexpr int64_t kFar = int64_t(1) << 62;
    fast.base_offset = base_offset;
    fast.base_ts = base_ts;
    fast.log_append = log_append;
    fast.log_append_ts = h.max_timestamp;
    fast.runs = base_offset >= -kFar && base_offset <= kFar && (log_append || (base_ts >= -kFar && base_ts <= kFar));
  }

  for (int32_t i = 0; i < count; ++i) {
    if constexpr (!kStore) {
      if (crc_ahead_ != nullptr) {
        i += CheckRecordsAhead(&p, end, count - i, fast, walk, &crc_ahead_->crc, &crc_ahead_->done);
      } else {
        i += CheckRecordsFast(&p, end, count - i, fast, walk);
      }
      if (i == count) break;
    }
    const uint8_t* start = p;
    if (p >= end) {
      ReportTo(sink, file, where(p), "record-count",
               "batch at " + Num(pos) + " declares " + Num(count) + " records but its data ends after " + Num(i) +
                   " (premature EOF)" + inside(p));
      return false;
    }
    int32_t length;
    p = ReadVarint32(p, end, &length);
    if (p == nullptr) {
      ReportTo(sink, file, where(start), "record-parse",
               "record " + Num(i) + " of the batch at " + Num(pos) + ": malformed length varint" + inside(start));
      return false;
    }
    if (length < 0 || int64_t(length) > end - p) {
      ReportTo(sink, file, where(start), "record-parse",
               "record " + Num(i) + " of the batch at " + Num(pos) + ": invalid record size: expected " + Num(length) +
                   " bytes in record payload, but only " + Num(end - p) + " remain" + inside(start));
      return false;
    }
    const uint8_t* body = p;
    const uint8_t* rend = p + length;
    const char* why = nullptr;
    const uint8_t* fail_at = p;
    // Filled in place: no per-record temporaries (the vector keeps its capacity across batches).
    // A check-only walk stores nothing.
    Record* r = nullptr;
    if constexpr (kStore) r = &records_.emplace_back();
    int64_t ts_delta = 0;
    int32_t offset_delta = 0, key_len = 0, value_len = 0, header_count = 0;
    do {
      if (p >= rend) {
        why = "missing attributes";
        break;
      }
      if constexpr (kStore) r->attributes = int8_t(*p);
      ++p;
      fail_at = p;
      if (!(p = ReadVarint64(p, rend, &ts_delta))) {
        why = "malformed timestampDelta varlong";
        break;
      }
      fail_at = p;
      if (!(p = ReadVarint32(p, rend, &offset_delta))) {
        why = "malformed offsetDelta varint";
        break;
      }
      fail_at = p;
      if (!(p = ReadVarint32(p, rend, &key_len))) {
        why = "malformed key length varint";
        break;
      }
      if (key_len >= 0) {
        if (int64_t(key_len) > rend - p) {
          why = "key length past the end of the record";
          break;
        }
        if constexpr (kStore) r->key = Bytes(p, size_t(key_len));
        p += key_len;
      }
      if constexpr (kKeysOnly) {
        p = rend;  // value and headers skipped unparsed
        break;
      }
      fail_at = p;
      if (!(p = ReadVarint32(p, rend, &value_len))) {
        why = "malformed value length varint";
        break;
      }
      if (value_len >= 0) {
        if (int64_t(value_len) > rend - p) {
          why = "value length past the end of the record";
          break;
        }
        if constexpr (kStore) r->value = Bytes(p, size_t(value_len));
        p += value_len;
      }
      fail_at = p;
      if (!(p = ReadVarint32(p, rend, &header_count))) {
        why = "malformed header count varint";
        break;
      }
      if (header_count < 0) {
        why = "negative number of record headers";
        break;
      }
      // Each header takes at least two bytes (its key and value length varints): a count the record
      // cannot hold is refused here, before any work proportional to it.
      if (int64_t(header_count) > (rend - p) / 2) {
        why = "more record headers than the bytes left in the record can hold (2 bytes each at least)";
        break;
      }
      if constexpr (kStore) {
        r->headers_at = uint32_t(p - data.data());
        r->header_count = uint32_t(header_count);
      }
      // Checked here, not stored: RecordHeaders parses them again when a reader asks.
      for (int32_t k = 0; k < header_count; ++k) {
        fail_at = p;
        int32_t hk_len, hv_len;
        if (!(p = ReadVarint32(p, rend, &hk_len))) {
          why = "malformed header key length varint";
          break;
        }
        if (hk_len < 0) {
          why = "negative header key length";
          break;
        }
        if (int64_t(hk_len) > rend - p) {
          why = "header key past the end of the record";
          break;
        }
        p += hk_len;
        fail_at = p;
        if (!(p = ReadVarint32(p, rend, &hv_len))) {
          why = "malformed header value length varint";
          break;
        }
        if (hv_len >= 0) {
          if (int64_t(hv_len) > rend - p) {
            why = "header value past the end of the record";
            break;
          }
          p += hv_len;
        }
      }
      if (why != nullptr) break;
      fail_at = p;
      if (p != rend) {
        why = "record body longer than its fields (Kafka: invalid record size)";
        break;
      }
    } while (false);
    if (why != nullptr) {
      if (kStore) records_.pop_back();
      ReportTo(sink, file, where(fail_at), "record-parse",
               "record " + Num(i) + " of the batch at " + Num(pos) + " (body of " + Num(length) + " bytes at " +
                   (compressed ? "decompressed byte " + Num(body - data.data()) : "file byte " + Num(where(body))) +
                   "): " + why + inside(fail_at));
      return false;
    }
    if constexpr (kStore) {
      r->offset = JavaAdd(base_offset, offset_delta);
      r->timestamp = log_append ? h.max_timestamp : JavaAdd(base_ts, ts_delta);
      r->sequence = base_seq == kNoSequence ? kNoSequence : IncrementSequence(base_seq, offset_delta);
      r->magic = 2;
      r->size_in_bytes = uint32_t(rend - start);
    } else {
      walk->Add(JavaAdd(base_offset, offset_delta), log_append ? h.max_timestamp : JavaAdd(base_ts, ts_delta));
    }
  }
  if (p != end) {
    ReportTo(sink, file, where(p), "record-count",
             "batch at " + Num(pos) + ": incorrect declared batch size, records still remaining in file: " +
                 Num(end - p) + " bytes after the declared " + Num(count) + " records" + inside(p));
    return false;
  }
  return true;
}

namespace {

struct LegacyMessage {
  int8_t magic = 0;
  uint8_t attributes = 0;
  uint32_t crc = 0;
  bool crc_valid = false;
  int64_t timestamp = kNoTimestamp;
  std::optional<Bytes> key;
  std::optional<Bytes> value;
  size_t value_field = 0;  // offset of the value length field inside the message
};

// Parses a v0/v1 message body (from its CRC field, `size` bytes). Returns nullptr or why it fails;
// *fail_at is the offset inside `m` of the failing field.
const char* ParseLegacyMessage(Bytes m, LegacyMessage* out, size_t* fail_at) {
  *fail_at = 4;
  if (m.size() < size_t(kRecordOverheadV0)) return "message shorter than the 14-byte minimum";
  out->crc = LoadBE32(m.data());
  out->magic = int8_t(m[4]);
  out->attributes = m[5];
  if (out->magic != 0 && out->magic != 1) return "message magic is neither 0 nor 1";
  out->crc_valid = Crc32(m.subspan(4)) == out->crc;
  size_t p = 6;
  if (out->magic == 1) {
    if (m.size() < size_t(kRecordOverheadV1)) return "v1 message shorter than the 22-byte minimum";
    out->timestamp = LoadI64(m.data() + 6);
    p = 14;
  }
  *fail_at = p;
  int32_t klen = LoadI32(m.data() + p);
  p += 4;
  if (klen >= 0) {
    if (size_t(klen) > m.size() - p) return "key length past the end of the message";
    out->key = m.subspan(p, size_t(klen));
    p += size_t(klen);
  }
  *fail_at = p;
  out->value_field = p;
  if (m.size() - p < 4) return "message ends before its value length";
  int32_t vlen = LoadI32(m.data() + p);
  p += 4;
  if (vlen >= 0) {
    if (size_t(vlen) > m.size() - p) return "value length past the end of the message";
    out->value = m.subspan(p, size_t(vlen));
  }
  return nullptr;
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): LegacyRecord / the wrapper's inner messages: one check per field (FMT §3.3, §4.4)
bool RecordDecoder::DecodeLegacy(const BatchView& batch, const std::string& file, ProblemSink* sink) {
  BatchHeader& h = header_;
  const uint64_t pos = h.position;
  const int wrapper_magic = h.magic;
  LegacyMessage w;
  size_t fail_at = 0;
  Bytes body = batch.bytes.subspan(kLogOverhead, h.size_in_bytes - kLogOverhead);
  if (const char* why = ParseLegacyMessage(body, &w, &fail_at)) {
    ReportTo(sink, file, pos + kLogOverhead + fail_at, "record-parse", "message at " + Num(pos) + ": " + why);
    return false;
  }
  if (h.compression_id >= 4) {
    ReportTo(sink, file, pos + kLegacyAttributesOffset, "unknown-codec",
             "message at " + Num(pos) + " (magic " + Num(wrapper_magic) + ") has compression id " +
                 Num(h.compression_id) +
                 (h.compression_id == 4 ? " (zstd), which is illegal before magic 2" : ", which is not a codec"));
    return false;
  }
  if (h.compression_id == 0) {
    Record r;
    r.offset = h.base_offset;
    r.timestamp = wrapper_magic == 0 ? kNoTimestamp : w.timestamp;
    r.key = w.key;
    r.value = w.value;
    r.magic = int8_t(wrapper_magic);
    r.legacy_crc = w.crc;
    r.legacy_crc_valid = w.crc_valid;
    r.size_in_bytes = h.size_in_bytes;
    records_.push_back(r);
    return true;
  }
  // A compressed wrapper: its value is an inner message set (spec §3.3).
  const uint64_t value_pos = pos + kLogOverhead + w.value_field;
  if (!w.value) {
    ReportTo(sink, file, value_pos, "legacy-wrapper",
             "compressed wrapper message at " + Num(pos) + " has a null value (no inner messages)");
    return false;
  }
  std::string error;
  if (!Decompress(h.compression, *w.value, wrapper_magic, options_.max_decompressed_bytes, &decompressed_, &error)) {
    ReportTo(sink, file, value_pos + 4, "decompress",
             "wrapper message at " + Num(pos) + ": cannot decompress the " + CompressionName(h.compression) +
                 " inner message set: " + error);
    return false;
  }
  Bytes data = AsBytes(decompressed_);
  size_t p = 0;
  size_t plausible = std::min<size_t>(data.size() / (kLogOverhead + kRecordOverheadV0) + 1, options_.max_batch_records);
  if (records_.capacity() < plausible) records_.reserve(plausible);
  const bool log_append = wrapper_magic == 1 && h.timestamp_type == TimestampType::kLogAppendTime;
  while (p < data.size()) {
    auto fail = [&](size_t at, const std::string& why) {
      ReportTo(sink, file, value_pos + 4, "legacy-wrapper",
               "wrapper message at " + Num(pos) + ", inner message " + Num(records_.size()) + " (decompressed byte " +
                   Num(at) + "): " + why);
      return false;
    };
    if (data.size() - p < size_t(kLogOverhead)) return fail(p, "truncated inner entry header");
    int64_t inner_offset = LoadI64(data.data() + p);
    int32_t size = LoadI32(data.data() + p + 8);
    if (size < kRecordOverheadV0) return fail(p + 8, "inner message size " + Num(size) + " below the minimum 14");
    if (size_t(size) > data.size() - p - kLogOverhead) {
      return fail(p + 8, "inner message of " + Num(size) + " bytes runs past the end of the inner message set");
    }
    LegacyMessage m;
    size_t at = 0;
    if (const char* why = ParseLegacyMessage(data.subspan(p + kLogOverhead, size_t(size)), &m, &at)) {
      return fail(p + kLogOverhead + at, why);
    }
    if ((m.attributes & kAttrCompressionMask) != 0) {
      return fail(p + kLogOverhead + 5, "inner messages must not be compressed (nested compression)");
    }
    Record r;
    r.offset = inner_offset;  // made absolute below
    // KAFKA-4298: an inner magic different from the wrapper's is accepted; a v0 inner message has
    // no timestamp. A LogAppendTime wrapper stamps its own timestamp on every v1 inner record.
    if (m.magic == 0)
      r.timestamp = kNoTimestamp;
    else
      r.timestamp = log_append ? w.timestamp : m.timestamp;
    r.key = m.key;
    r.value = m.value;
    r.magic = m.magic;
    r.legacy_crc = m.crc;
    r.legacy_crc_valid = m.crc_valid;
    r.size_in_bytes = uint32_t(kLogOverhead) + uint32_t(size);
    if (!m.crc_valid) {
      ReportTo(sink, file, value_pos + 4, "record-crc",
               "wrapper message at " + Num(pos) + ", inner message " + Num(records_.size()) + " (decompressed byte " +
                   Num(p) + "): stored CRC-32 does not match its bytes");
    }
    records_.push_back(r);
    p += kLogOverhead + size_t(size);
    if (records_.size() >= options_.max_batch_records && p < data.size()) {
      ReportTo(sink, file, value_pos + 4, "record-budget",
               "wrapper message at " + Num(pos) + " holds more than the " + Num(options_.max_batch_records) +
                   " inner messages klf decodes of one batch; the rest are not read");
      records_.clear();
      return false;
    }
  }
  if (records_.empty()) {
    ReportTo(sink, file, value_pos + 4, "legacy-wrapper",
             "compressed wrapper message at " + Num(pos) + " holds no inner messages");
    return false;
  }
  // Offsets (AbstractLegacyRecordBatch.DeepRecordsIterator): v1 inner offsets are relative to the
  // wrapper's, whose offset is that of the last inner message; v0 inner offsets are absolute.
  if (wrapper_magic == 1) {
    int64_t wrapper_offset = h.last_offset;
    int64_t last_inner = records_.back().offset;
    int64_t absolute_base = 0;
    if (wrapper_offset != 0) {  // some librdkafka versions write 0: inner offsets then stand as they are
      if (wrapper_offset < last_inner) {
        ReportTo(sink, file, pos, "legacy-wrapper",
                 "wrapper message at " + Num(pos) + ": wrapper offset " + Num(wrapper_offset) +
                     " is less than the last inner message offset " + Num(last_inner) +
                     " and it is not zero (Kafka: InvalidRecordException)");
        records_.clear();
        return false;
      }
      absolute_base = JavaSub(wrapper_offset, last_inner);  // Java long arithmetic wraps
    }
    for (Record& r : records_) r.offset = JavaAdd(absolute_base, r.offset);
  }
  h.base_offset = records_.front().offset;
  h.base_offset_known = true;
  h.record_count = int32_t(records_.size());
  return true;
}

bool ParseControlRecord(const Record& record, ControlRecord* control, std::string* error) {
  *control = ControlRecord();
  if (!record.key || record.key->size() < 4) {
    *error = record.key ? "control record key of " + Num(record.key->size()) + " bytes, needs at least 4"
                        : "control record has a null key";
    return false;
  }
  const uint8_t* k = record.key->data();
  control->key_version = LoadI16(k);
  if (control->key_version < 0) {
    *error = "invalid version " + Num(control->key_version) + " found for control record key";
    return false;
  }
  control->raw_type = LoadI16(k + 2);
  control->type =
      control->raw_type >= 0 && control->raw_type <= 6 ? ControlType(control->raw_type) : ControlType::kUnknown;
  if (IsEndTxnMarker(control->type)) {
    // EndTransactionMarker.deserializeValue
    if (!record.value || record.value->size() < 6) {
      *error = record.value
                   ? "end transaction marker value of " + Num(record.value->size()) + " bytes, needs at least 6"
                   : "end transaction marker has a null value";
      return false;
    }
    control->value_version = LoadI16(record.value->data());
    if (control->value_version < 0) {
      *error = "invalid version " + Num(control->value_version) + " found for end transaction marker";
      return false;
    }
    control->coordinator_epoch = LoadI32(record.value->data() + 2);
  }
  return true;
}

std::optional<ControlRecord> ControlBatchMarker(const std::vector<Record>& records, std::string* error) {
  std::string why;
  ControlRecord c;
  if (records.empty()) {
    why = "control batch has no record";
  } else if (ParseControlRecord(records.front(), &c, &why)) {
    return c;
  }
  if (error) *error = std::move(why);
  return std::nullopt;
}

void SegmentTailSink::Report(const Problem& p) {
  if (!last_segment_ && (p.check == "zero-tail" || p.check == "truncated-tail")) {
    Problem q = p;
    q.severity = Severity::kError;
    q.message +=
        " (this is not the last segment: a rolled segment is never torn, and recovery would also "
        "delete every later segment)";
    inner_->Report(q);
    return;
  }
  inner_->Report(p);
}

}  // namespace klf
