// Batches and records of a `.log` file (spec kafka-on-disk-format.md §2-§6).
//
// A BatchView is a view over the bytes of one entry of a `.log` file, as Kafka's DefaultRecordBatch is
// a view over a ByteBuffer: nothing is copied, records are decoded only on request, and a batch that is
// kept is written back by copying `bytes`. A BatchView is valid as long as the bytes it was read from
// (the MappedFile, or the buffer given to LogReader) are alive; from a streaming LogReader (Open),
// until its next Next().
//
// An "entry" is a v2 record batch, or a v0/v1 message: a plain message is its own one-record batch; a
// compressed wrapper message is one batch whose records are its inner messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "segment_reader/bytes.h"
#include "segment_reader/compression.h"
#include "segment_reader/java_long.h"
#include "segment_reader/problem.h"

namespace klf {

class Env;
class MappedFile;
class StreamedFile;

// Constants of the format (spec §15).
constexpr int kLogOverhead = 12;
constexpr int kHeaderSizeUpToMagic = 17;
constexpr int kRecordOverheadV0 = 14;
constexpr int kRecordBatchOverhead = 61;  // v2 header
constexpr int kV2CrcOffset = 17;
constexpr int kV2AttributesOffset = 21;
constexpr int64_t kNoTimestamp = -1;
constexpr int64_t kNoProducerId = -1;
constexpr int16_t kNoProducerEpoch = -1;
constexpr int32_t kNoSequence = -1;
constexpr int32_t kNoPartitionLeaderEpoch = -1;

// v2 attribute bits (spec §4.2).
constexpr uint16_t kAttrCompressionMask = 0x07;
constexpr uint16_t kAttrTimestampType = 0x08;
constexpr uint16_t kAttrTransactional = 0x10;
constexpr uint16_t kAttrControl = 0x20;
constexpr uint16_t kAttrDeleteHorizon = 0x40;

enum class TimestampType { kNoTimestampType = -1, kCreateTime = 0, kLogAppendTime = 1 };
// "NoTimestampType", "CreateTime", "LogAppendTime" (Kafka's names).
const char* TimestampTypeName(TimestampType t);

// Kafka's DefaultRecordBatch.incrementSequence: wraps to 0 after INT32_MAX.
int32_t IncrementSequence(int32_t sequence, int32_t increment);

// The header fields of one entry, decoded without touching its records.
struct BatchHeader {
  uint64_t position = 0;    // byte position of the entry in its file
  int64_t base_offset = 0;  // see `base_offset_known`
  int64_t last_offset = 0;
  uint32_t size_in_bytes = 0;  // whole entry: 12 + the length field
  int8_t magic = 2;
  uint32_t crc = 0;         // as stored
  bool crc_valid = false;   // computed over the covered bytes (v2: CRC-32C; v0/v1: CRC-32)
  uint16_t attributes = 0;  // v2: the int16 field; v0/v1: the attributes byte
  Compression compression = Compression::kNone;
  // Attribute bits 0-2 as stored. Ids 5-7 name no codec (then `compression` is kNone) and zstd (4) is
  // illegal for v0/v1: RecordDecoder reports both as "unknown-codec".
  uint8_t compression_id = 0;
  TimestampType timestamp_type = TimestampType::kCreateTime;
  int64_t base_timestamp = kNoTimestamp;  // v2 field (holds the delete horizon when that bit is set)
  int64_t max_timestamp = kNoTimestamp;   // v2 field; v1: the message timestamp; v0: -1
  std::optional<int64_t> delete_horizon_ms;
  int32_t partition_leader_epoch = kNoPartitionLeaderEpoch;
  int64_t producer_id = kNoProducerId;
  int16_t producer_epoch = kNoProducerEpoch;
  int32_t base_sequence = kNoSequence;
  int32_t last_offset_delta = 0;
  bool is_transactional = false;
  bool is_control = false;
  // v2: the header's count. v0/v1 plain message: 1. v0/v1 compressed wrapper: -1 until its inner
  // messages are decoded (RecordDecoder fills it, and base_offset, in its own copy of the header).
  int32_t record_count = 0;
  // False only for a v0/v1 compressed wrapper whose inner messages have not been decoded: until
  // then base_offset is the wrapper's (last) offset.
  bool base_offset_known = true;

  int64_t next_offset() const { return JavaAdd(last_offset, 1); }
  bool has_producer_id() const { return producer_id > kNoProducerId; }
  int32_t last_sequence() const;  // -1 when base_sequence is -1
};

struct BatchView {
  BatchHeader header;
  Bytes bytes;  // the whole entry (12 + length bytes)
};

// Parses the header of the entry at the start of `entry` (which must hold the whole entry) and
// computes its CRC when `verify_crc`. Returns false with *error when the header is malformed (size
// below the minimum for its magic). Used by LogReader; exposed for tests, fuzzers and the writer.
bool ParseBatchHeader(Bytes entry, uint64_t position, bool verify_crc, BatchHeader* header, std::string* error);

// Kafka's in-memory batch iteration over a read buffer (ByteBufferLogInputStream, FMT §2), as the log
// cleaner frames the buffer it read: the entry at `pos` of `buf` (`file_position`: where `buf[pos]` is
// in the file). kIncomplete when the buffer ends inside it; kCorrupt (with *error) for a size below
// 14, a magic outside 0..2 or a header that does not parse. No CRC check, no resynchronisation, no
// size cap (LogReader's rules are a reader's, not the cleaner's).
enum class EntryStatus { kOk, kIncomplete, kCorrupt };
EntryStatus NextEntry(Bytes buf, size_t pos, uint64_t file_position, BatchView* batch, std::string* error);

struct ReadOptions {
  bool verify_crc = true;
  // Upper bound on one entry's size. Kafka has none on disk; ours keeps a lying length field from
  // making us trust gigabytes: larger entries are reported as corrupt.
  uint32_t max_batch_bytes = 64u << 20;
  size_t max_decompressed_bytes = kDefaultMaxDecompressedBytes;
  // Upper bound on the records of one batch that RecordDecoder decodes (each takes a 96-byte Record;
  // 2^20 of them, 96 MiB). A count the batch's bytes cannot hold (7 bytes per record at least) is
  // corruption; a plausible count above this bound is reported as "record-budget", never allocated.
  // Kafka's producers write far fewer: a 1 MiB batch holds at most 150 000 uncompressed records.
  uint32_t max_batch_records = uint32_t(1) << 20;
  // After framing corruption, scan forward for the next entry whose header and CRC are valid and
  // resume there (reporting the skipped bytes). When false, iteration stops at the corruption.
  bool resync = true;
  // Streaming readers (LogReader::Open): bytes read per pread(2) into the reused buffer; small enough
  // to stay in L2 while it is walked (docs/PERFORMANCE.md has the measurement).
  uint64_t stream_chunk_bytes = uint64_t(256) << 10;
  // What LogReader::Open reads the file through (segment_reader/env.h); null: Env::Default().
  Env* env = nullptr;
};

// Why LogReader::Next returned false.
enum class LogEnd {
  kEndOfData,      // clean end: fewer than 18 bytes left, all of them accounted for (0 bytes)
  kTruncatedTail,  // a final entry runs past the end of the file (an interrupted write)
  kZeroTail,       // the rest of the file is zeros (a preallocated segment after a crash)
  kCorrupt,        // framing corruption with no resynchronisation possible (or resync off)
};

// LogReader calls a torn or zero-filled tail ("truncated-tail", "zero-tail") a warning: routine for the
// active (last) segment after an unclean shutdown. Anywhere else it is damage: segments are trimmed when
// rolled, and Kafka's recovery would truncate there and delete every later segment. Wrap the sink of a
// segment that is not the last in one of these (verify, dump).
class SegmentTailSink : public ProblemSink {
 public:
  SegmentTailSink(ProblemSink* inner, bool last_segment) : inner_(inner), last_segment_(last_segment) {}
  void Report(const Problem& p) override;

 private:
  ProblemSink* inner_;
  bool last_segment_;
};

// A caller that walks the records of every v2 batch right after reading it (verify) can compute the
// batch's CRC-32C in the same pass (RecordDecoder::CheckWithCrc: the CRC runs a piece ahead of the
// walk, so the walk reads each piece from the cache the CRC just filled, where a megabyte batch CRC'd
// whole is read again from a lower cache level). LogReader's streamed path offers it each v2 entry
// whose framing is sound and whose header parsed, before the CRC is known (header.crc_valid unset).
// CrcAndWalk returns false to decline (the reader then computes the CRC itself), or true with the
// CRC-32C of the covered bytes (attributes to the end) in *crc. The walk's outcome is the walker's to
// hold until the caller gets the batch from Next: it reports nothing meanwhile, so a batch whose CRC
// fails is reported exactly as before (batch-crc; its records are not read).
class CrcWalker {
 public:
  virtual ~CrcWalker() = default;
  virtual bool CrcAndWalk(const BatchView& batch, uint32_t* crc) = 0;
};

// Iterates the entries of one `.log` file (Kafka's FileLogInputStream rules, spec §2) and reports
// every framing problem to the sink: size field below 14, entry past the end of the file, zero-filled
// tail, bad CRC, a size above max_batch_bytes, offsets going backwards. Entries with a bad CRC are
// still returned (with crc_valid == false), so callers can show them.
class LogReader {
 public:
  // `data` must outlive the reader and every BatchView it returns. `file` names it in problems.
  LogReader(std::string file, Bytes data, ProblemSink* sink, ReadOptions options = {});
  // Reads the `.log` at `path` front to back with pread(2) through one reused buffer (StreamedFile)
  // instead of a mapping: faster where mapping pages is expensive, and memory is the buffer plus the
  // largest entry. A BatchView it returns is valid only until the next Next(). When the data turns
  // irregular (a size field out of range, an entry past the end, an unknown magic, a tail to
  // classify), the reader maps the file and continues from there with the mapped-mode rules, so
  // every problem is found and reported exactly as LogReader over the whole file reports it.
  // Returns nullptr and sets *error if the file cannot be opened.
  static std::unique_ptr<LogReader> Open(const std::string& path, ProblemSink* sink, ReadOptions options,
                                         std::string* error);
  ~LogReader();
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  // The next entry, or false at the end of the data (then end() says why).
  bool Next(BatchView* batch);
  // Hands the CRC of the entries the streamed path reads to `walker` (not owned; null, the default:
  // the reader computes every CRC). The mapped path always computes CRCs itself.
  void SetCrcWalker(CrcWalker* walker) { crc_walker_ = walker; }

  LogEnd end() const { return end_; }
  // Byte position just past the last entry returned (Kafka recovery would truncate here if the rest
  // is invalid).
  uint64_t valid_bytes() const { return valid_bytes_; }
  // Bytes at the end that are not part of any complete entry (truncated or zero tail, corruption).
  uint64_t trailing_bytes() const { return size_ - valid_bytes_; }
  const std::string& file() const { return file_; }
  uint64_t file_size() const { return size_; }
  // The file's modification time at open (ms since the epoch; 0 for a reader over bytes, not a file).
  int64_t file_mtime_ms() const { return mtime_ms_; }
  // Non-empty when the reader stopped because the file could not be read (an I/O error, or it shrank):
  // "<path>: <why>", naming the byte position. Also reported to the sink (check "file-read"). The data
  // after it is unknown, not absent.
  const std::string& read_error() const { return read_error_; }

 private:
  enum class Streamed { kEntry, kEnd, kIrregular };
  Streamed NextStreamed(BatchView* batch);
  bool SwitchToMapping();
  void Accept(Bytes entry, BatchView* batch);
  bool Resync(uint64_t from);
  uint64_t NextData(uint64_t pos);
  std::function<uint64_t(uint64_t)> NextDataFn();
  bool ZeroFrom(uint64_t pos);
  void Report(Severity severity, uint64_t position, const char* check, std::string message);
  // The mapped file shrank under the reader (MappedFile::changed): reports it once as a read error and
  // ends the reading; what was read from the zeros is not reported.
  bool FileShrank();

  std::string file_;
  Bytes data_;
  uint64_t size_ = 0;
  std::unique_ptr<StreamedFile> stream_;  // streaming mode until the data turns irregular
  int64_t mtime_ms_ = 0;
  std::unique_ptr<MappedFile> mapped_;  // the mapping a streaming reader falls back to
  CrcWalker* crc_walker_ = nullptr;     // SetCrcWalker
  int hole_fd_ = -1;                    // for SEEK_DATA over a mapped sparse file (-2: unavailable)
  ProblemSink* sink_;
  ReadOptions options_;
  uint64_t pos_ = 0;
  uint64_t released_ = 0;  // pages below this position were handed back (ReleaseMappedPages)
  uint64_t valid_bytes_ = 0;
  int64_t last_offset_seen_ = -1;
  bool have_last_offset_ = false;
  bool done_ = false;
  // Start of the last entry returned if its CRC failed: when framing breaks right after it, its
  // length field was probably what was corrupt, so resynchronisation scans from inside it.
  std::optional<uint64_t> suspect_start_;
  LogEnd end_ = LogEnd::kEndOfData;
  std::string read_error_;
};

// One record header (v2 only).
struct RecordHeader {
  Bytes key;
  std::optional<Bytes> value;  // nullopt = null
};

// The headers of one decoded record, parsed again on iteration from the record's bytes (which
// RecordDecoder has already checked): a record may declare millions of headers (each takes only two
// bytes), so they are never materialised. Iteration yields RecordHeader values viewing the bytes.
class RecordHeaders {
 public:
  RecordHeaders() = default;
  RecordHeaders(const uint8_t* begin, const uint8_t* end, uint32_t count) : begin_(begin), end_(end), count_(count) {}

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = RecordHeader;
    using difference_type = std::ptrdiff_t;
    using pointer = const RecordHeader*;
    using reference = const RecordHeader&;
    iterator() = default;
    iterator(const uint8_t* p, const uint8_t* end, uint32_t left) : p_(p), end_(end), left_(left) { Load(); }
    const RecordHeader& operator*() const { return current_; }
    const RecordHeader* operator->() const { return &current_; }
    iterator& operator++() {
      p_ = next_;
      --left_;
      Load();
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const iterator& o) const { return left_ == o.left_; }

   private:
    // Parses the header at p_ (when left_ > 0) into current_ and next_. Inline for the common case
    // (key and value lengths below 64: one-byte varints), LoadSlow otherwise.
    void Load() {
      if (left_ == 0) return;
      if (end_ - p_ >= 2 && !(p_[0] & 0x80)) {
        const int32_t key_len = int32_t(p_[0] >> 1) ^ -int32_t(p_[0] & 1);
        const uint8_t* v = p_ + 1 + key_len;
        if (key_len >= 0 && v < end_ && !(*v & 0x80)) {
          const int32_t value_len = int32_t(*v >> 1) ^ -int32_t(*v & 1);
          if (value_len < 0) {
            current_ = RecordHeader{Bytes(p_ + 1, size_t(key_len)), std::nullopt};
            next_ = v + 1;
            return;
          }
          if (value_len <= end_ - v - 1) {
            current_ = RecordHeader{Bytes(p_ + 1, size_t(key_len)), Bytes(v + 1, size_t(value_len))};
            next_ = v + 1 + value_len;
            return;
          }
        }
      }
      LoadSlow();
    }
    void LoadSlow();
    const uint8_t* p_ = nullptr;
    const uint8_t* end_ = nullptr;
    const uint8_t* next_ = nullptr;
    uint32_t left_ = 0;
    RecordHeader current_;
  };

  iterator begin() const { return iterator(begin_, end_, count_); }
  iterator end() const { return iterator(); }
  uint32_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

 private:
  const uint8_t* begin_ = nullptr;
  const uint8_t* end_ = nullptr;
  uint32_t count_ = 0;
};

// One record. Key, value and header bytes point into the batch or into the RecordDecoder's buffers.
struct Record {
  int64_t offset = 0;
  int64_t timestamp = kNoTimestamp;
  int8_t attributes = 0;
  int32_t sequence = kNoSequence;  // v2: incrementSequence(baseSequence, offsetDelta) or -1
  std::optional<Bytes> key;        // nullopt = null key
  std::optional<Bytes> value;      // nullopt = null value (tombstone)
  uint32_t headers_at = 0;         // where the first header starts in the decoded records section
  uint32_t header_count = 0;
  // v0/v1 only: the message's own magic, stored CRC and its validity (inner messages of a wrapper
  // have their own CRCs).
  int8_t magic = 2;
  uint32_t legacy_crc = 0;
  bool legacy_crc_valid = true;
  uint32_t size_in_bytes = 0;  // encoded size of the record (v2: incl. its length varint)
};

enum class ControlType : int16_t {
  kAbort = 0,
  kCommit = 1,
  kLeaderChange = 2,
  kSnapshotHeader = 3,
  kSnapshotFooter = 4,
  kKRaftVersion = 5,
  kKRaftVoters = 6,
  kUnknown = -1
};
// "ABORT", "COMMIT", "LEADER_CHANGE", ..., "UNKNOWN".
const char* ControlTypeName(ControlType t);

struct ControlRecord {
  ControlType type = ControlType::kUnknown;
  int16_t raw_type = -1;  // the type as stored
  int16_t key_version = 0;
  int16_t value_version = 0;       // ABORT/COMMIT only
  int32_t coordinator_epoch = -1;  // ABORT/COMMIT only
};

// Parses the key (and for ABORT/COMMIT the value) of a record of a control batch. Returns false
// with *error if the key is shorter than 4 bytes, or an end-transaction value shorter than 6.
bool ParseControlRecord(const Record& record, ControlRecord* control, std::string* error);

// The one rule for a control batch's marker type: Kafka reads a control batch by its first record
// (ControlRecordType.parse of the key; EndTransactionMarker.deserialize for ABORT / COMMIT), and every
// reader here (producer state, consumers, verify, the cleaner, diff, the audit) goes through this.
// `records` are the batch's decoded records. nullopt when there is none or the first does not parse
// (then *error, when given, says why).
std::optional<ControlRecord> ControlBatchMarker(const std::vector<Record>& records, std::string* error = nullptr);
// ABORT or COMMIT: the marker ends a transaction.
inline bool IsEndTxnMarker(ControlType t) { return t == ControlType::kAbort || t == ControlType::kCommit; }

// The offsets and timestamps of one v2 batch's records, folded in record order: offsets strictly
// increasing within [base offset, last offset], the holes between them (the cleaner keeps a batch's
// base and last offset when it removes records), the largest record timestamp. verify's
// CheckBatchRecords feeds it decoded records; RecordDecoder::Check feeds it straight from the bytes,
// with no record materialised. Once a record breaks the order, the later ones are ignored.
class RecordOffsetWalk {
 public:
  // Starts a batch. Holes go to `holes` (when not null) as [from, to), in order.
  void Reset(const BatchHeader& h, std::vector<std::pair<int64_t, int64_t>>* holes) {
    *this = RecordOffsetWalk();
    base_offset_ = h.base_offset;
    last_offset_ = h.last_offset;
    expect_ = h.base_offset;
    holes_ = holes;
  }
  [[gnu::always_inline]] void Add(int64_t offset, int64_t timestamp) {
    if (broken_) return;
    if (offset < expect_ || offset > last_offset_) {
      broken_ = true;
      bad_offset_ = offset;
      return;
    }
    if (offset > expect_ && holes_ != nullptr) holes_->emplace_back(expect_, offset);
    expect_ = JavaAdd(offset, 1);
    if (timestamp > max_timestamp_) max_timestamp_ = timestamp;
    ++in_order_;
  }
  // `n` (> 0) records that follow the last one added at the offsets expected() .. expected() + n - 1,
  // none past last_offset(), the largest of their timestamps `max_timestamp`, on a walk that is not
  // broken: what n calls of Add make of them (no hole, none breaks the order), in one step. For
  // RecordDecoder::Check's fast path, which folds a run of records in order this way.
  [[gnu::always_inline]] void AddConsecutive(uint32_t n, int64_t max_timestamp) {
    expect_ = JavaAdd(expect_, n);
    in_order_ += n;
    if (max_timestamp > max_timestamp_) max_timestamp_ = max_timestamp;
  }
  // After the last record: the hole from the last record up to the batch's last offset.
  void Finish() {
    if (broken_ || in_order_ == 0 || holes_ == nullptr) return;
    const int64_t to = JavaAdd(last_offset_, 1);
    if (to > expect_) holes_->emplace_back(expect_, to);
  }

  bool broken() const { return broken_; }
  // Records in order before the first that broke it (all of them when !broken()).
  uint32_t in_order() const { return in_order_; }
  // The offset of the record that broke the order, and the lowest offset it could have had.
  int64_t bad_offset() const { return bad_offset_; }
  int64_t expected() const { return expect_; }
  int64_t last_offset() const { return last_offset_; }
  int64_t max_timestamp() const { return max_timestamp_; }

 private:
  int64_t base_offset_ = 0;
  int64_t last_offset_ = 0;
  int64_t expect_ = 0;
  int64_t max_timestamp_ = INT64_MIN;
  int64_t bad_offset_ = 0;
  uint32_t in_order_ = 0;
  bool broken_ = false;
  std::vector<std::pair<int64_t, int64_t>>* holes_ = nullptr;
};

// Decodes the records of one batch: decompression with a size cap, v2 records with varints and
// headers, v0/v1 inner messages of compressed wrappers with their offset rules (spec §3.3, §4.4, §5).
// Buffers are reused across calls, so decoding many batches allocates only when a batch is larger
// than any before it.
class RecordDecoder {
 public:
  explicit RecordDecoder(ReadOptions options = {});

  // Decodes every record of `batch`. On failure reports one problem (file, the byte position of the
  // failing field where known, else of the batch) and returns false; the records decoded before the
  // failure stay available. Records, headers and `header()` are valid until the next call.
  bool Decode(const BatchView& batch, const std::string& file, ProblemSink* sink);
  // As Decode, but of a v2 record only its offset, timestamp, sequence and key: the value and the
  // headers are skipped by the record's length, unparsed (records carry no value or headers; a record
  // damaged only there is not noticed). For readers that need keys alone, like the cleaner's offset
  // map (a value or headers are no part of it). v0/v1 batches are decoded whole.
  bool DecodeKeys(const BatchView& batch, const std::string& file, ProblemSink* sink);
  // A check-only walk of a v2 batch (`batch.header.magic` >= 2): every length, count and field of every
  // record parsed and checked as Decode does, with the same problem on failure, but no record is
  // stored (records() stays empty): each record's offset and timestamp go to `walk`, which the caller
  // has Reset for this batch. Returns what Decode returns. For checkers like verify.
  bool Check(const BatchView& batch, const std::string& file, ProblemSink* sink, RecordOffsetWalk* walk);
  // Check, plus the CRC-32C of the batch's covered bytes (from the attributes to the end) in *crc,
  // with header().crc_valid set from it. Of an uncompressed batch the CRC is computed a piece
  // (kCrcPieceBytes) ahead of the walk, and finished over the rest after it (whatever the walk found);
  // of a compressed one, whole before it. The walk reports and returns exactly what Check does: the
  // caller decides from *crc whether to use it (LogReader's CrcWalker).
  bool CheckWithCrc(const BatchView& batch, const std::string& file, ProblemSink* sink, RecordOffsetWalk* walk,
                    uint32_t* crc);
  // Half of a 32 KiB L1 data cache: callgrind's simulation of one (docs/PERFORMANCE.md) finds no more
  // cache misses in the walk at 4-16 KiB, and fewer CRC calls with larger pieces.
  static constexpr uint64_t kCrcPieceBytes = uint64_t(16) << 10;

  const std::vector<Record>& records() const { return records_; }
  // The headers of a record of the last Decode (none after DecodeKeys, none for v0/v1).
  RecordHeaders headers(const Record& r) const {
    if (r.header_count == 0) return RecordHeaders();
    return RecordHeaders(data_.data() + r.headers_at, data_.data() + data_.size(), r.header_count);
  }
  // The batch header completed by decoding (base_offset and record_count of legacy wrappers).
  const BatchHeader& header() const { return header_; }

  // Makes this decoder hold some of the records `from` decoded last (a v2 batch, decoded whole by
  // Decode): those at the indices `which` (ascending), each with its encoded bytes copied into this
  // decoder's own buffer, so that records(), headers() and header() give what `from` gives for them.
  // For handing part of a decoded batch to another thread without the rest of it.
  void CopyRecords(const RecordDecoder& from, std::span<const uint32_t> which);

 private:
  bool Start(const BatchView& batch, const std::string& file, ProblemSink* sink);
  enum class V2Mode { kFull, kKeysOnly, kCheckOnly };
  template <V2Mode kMode>
  bool DecodeV2(const BatchView& batch, const std::string& file, ProblemSink* sink, RecordOffsetWalk* walk);
  struct CrcAhead;  // CheckWithCrc's CRC state, used by DecodeV2's walk
  CrcAhead* crc_ahead_ = nullptr;
  bool DecodeLegacy(const BatchView& batch, const std::string& file, ProblemSink* sink);

  ReadOptions options_;
  BatchHeader header_;
  std::string decompressed_;
  Bytes data_;  // the records section of the last v2 batch decoded (the batch's or decompressed_)
  std::vector<Record> records_;
};

}  // namespace klf
