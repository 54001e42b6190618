#include "digest/digest.h"

#include <sys/stat.h>

#include <cstring>
#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "segment_reader/compression.h"
#include "segment_reader/crc.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace {

// ---------------------------------------------------------------------------------------------
// Encoding.

class Out {
 public:
  void U8(uint8_t v) { s_.push_back(char(v)); }
  void Fixed(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) s_.push_back(char((v >> (8 * i)) & 0xff));
  }
  void Var(uint64_t v) {
    while (v >= 0x80) {
      s_.push_back(char((v & 0x7f) | 0x80));
      v >>= 7;
    }
    s_.push_back(char(v));
  }
  void Zig(int64_t v) { Var((uint64_t(v) << 1) ^ uint64_t(v >> 63)); }
  void Str(std::string_view v) {
    Var(v.size());
    s_.append(v);
  }
  void Raw(const void* p, size_t n) { s_.append(static_cast<const char*>(p), n); }
  void OptZig(const std::optional<int64_t>& v) {
    U8(v.has_value());
    if (v) Zig(*v);
  }
  void OptStr(const std::optional<std::string>& v) {
    U8(v.has_value());
    if (v) Str(*v);
  }
  std::string Take() { return std::move(s_); }

 private:
  std::string s_;
};

// Decoding: every read is bounds-checked; a count is checked against the bytes left (each element takes
// at least one byte), so no hostile count allocates more than the payload's size.
class In {
 public:
  explicit In(std::string_view s) : s_(s) {}
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t pos() const { return pos_; }
  size_t left() const { return s_.size() - pos_; }
  void Fail(const std::string& what) {
    if (error_.empty()) error_ = fmt::format("payload byte {}: {}", pos_, what);
  }
  uint8_t U8() {
    if (!ok() || left() < 1) return Fail("expected a byte, the section ends"), 0;
    return uint8_t(s_[pos_++]);
  }
  bool Bool() {
    uint8_t b = U8();
    if (b > 1) Fail(fmt::format("expected a flag (0 or 1), found {}", b));
    return b == 1;
  }
  uint64_t Fixed(int bytes) {
    if (!ok() || left() < size_t(bytes)) return Fail(fmt::format("expected {} bytes, the section ends", bytes)), 0;
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(s_[pos_ + i])) << (8 * i);
    pos_ += bytes;
    return v;
  }
  uint64_t Var() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!ok() || left() < 1) return Fail("expected a varint, the section ends"), 0;
      uint8_t b = uint8_t(s_[pos_++]);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    Fail("varint longer than 10 bytes");
    return 0;
  }
  int64_t Zig() {
    uint64_t v = Var();
    return int64_t(v >> 1) ^ -int64_t(v & 1);
  }
  int32_t Zig32() {
    int64_t v = Zig();
    if (v < INT32_MIN || v > INT32_MAX) Fail(fmt::format("value {} out of 32-bit range", v));
    return int32_t(v);
  }
  int16_t Zig16() {
    int64_t v = Zig();
    if (v < INT16_MIN || v > INT16_MAX) Fail(fmt::format("value {} out of 16-bit range", v));
    return int16_t(v);
  }
  std::string Str() {
    uint64_t n = Var();
    if (!ok() || n > left()) return Fail(fmt::format("string of {} bytes, only {} left", n, left())), std::string();
    std::string v(s_.substr(pos_, n));
    pos_ += n;
    return v;
  }
  void Raw(void* p, size_t n) {
    if (!ok() || left() < n) {
      Fail(fmt::format("expected {} bytes, the section ends", n));
      std::memset(p, 0, n);
      return;
    }
    std::memcpy(p, s_.data() + pos_, n);
    pos_ += n;
  }
  size_t Count(size_t min_bytes_each = 1) {
    uint64_t n = Var();
    if (ok() && n > left() / min_bytes_each)
      Fail(fmt::format("count {} exceeds what the {} bytes left can hold", n, left()));
    return ok() ? size_t(n) : 0;
  }
  std::optional<int64_t> OptZig() {
    if (!Bool()) return std::nullopt;
    return Zig();
  }
  std::optional<std::string> OptStr() {
    if (!Bool()) return std::nullopt;
    return Str();
  }
  // A length-prefixed run of bytes, not copied.
  std::string_view View() {
    uint64_t n = Var();
    if (!ok() || n > left()) return Fail(fmt::format("{} bytes, only {} left", n, left())), std::string_view();
    std::string_view v = s_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  size_t size() const { return s_.size(); }
  // The next n bytes, not copied.
  std::string_view Take(size_t n) {
    if (!ok() || n > left()) return Fail(fmt::format("expected {} bytes, only {} left", n, left())), std::string_view();
    std::string_view v = s_.substr(pos_, n);
    pos_ += n;
    return v;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

// A list of strings: its count, then each.
void PutStrings(Out* o, const std::vector<std::string>& list) {
  o->Var(list.size());
  for (const std::string& x : list) o->Str(x);
}
std::vector<std::string> GetStrings(In* in) {
  std::vector<std::string> list;
  const size_t n = in->Count();
  for (size_t i = 0; i < n && in->ok(); ++i) list.push_back(in->Str());
  return list;
}

// Signed difference without overflow traps (wraps like the encoder's).
int64_t Sub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t Add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }

// A path below `base` is stored as its suffix (flag 1), any other in full (flag 0).
void PutPath(Out* o, const std::string& base, const std::string& path) {
  if (!base.empty() && path.starts_with(base)) {
    o->U8(1);
    o->Str(std::string_view(path).substr(base.size()));
  } else {
    o->U8(0);
    o->Str(path);
  }
}
std::string GetPath(In* in, const std::string& base) {
  bool rel = in->Bool();
  std::string s = in->Str();
  return rel ? base + s : s;
}

void PutProblem(Out* o, const Problem& p) {
  o->U8(uint8_t(p.severity));
  o->Str(p.file);
  o->Var(p.position);
  o->Str(p.check);
  o->Str(p.message);
}
Problem GetProblem(In* in) {
  uint8_t s = in->U8();
  if (s > uint8_t(Severity::kInfo)) in->Fail(fmt::format("unknown severity {}", s));
  return Problem{Severity(s), in->Str(), in->Var(), in->Str(), in->Str()};  // braces: read in this order
}

// Record flags (one byte) and which fields differ from the previous record (one byte).
enum : uint8_t {
  kRecTransactional = 1,
  kRecControl = 2,
  kRecHasKey = 4,
  kRecHasValue = 8,
  kRecReadCommitted = 16,
  kRecReadUncommitted = 32,
  // bits 6-7: TxnFate
};
enum : uint8_t { kChgProducer = 1, kChgProducerEpoch = 2, kChgLeaderEpoch = 4, kChgTxn = 8 };

uint8_t RecordFlags(const RecordDigest& d) {
  return uint8_t((d.transactional ? kRecTransactional : 0) | (d.control ? kRecControl : 0) |
                 (d.has_key ? kRecHasKey : 0) | (d.has_value ? kRecHasValue : 0) |
                 (d.read_committed ? kRecReadCommitted : 0) | (d.read_uncommitted ? kRecReadUncommitted : 0) |
                 uint8_t(uint8_t(d.fate) << 6));
}
void SetRecordFlags(uint8_t flags, RecordDigest* d) {
  d->transactional = flags & kRecTransactional;
  d->control = flags & kRecControl;
  d->has_key = flags & kRecHasKey;
  d->has_value = flags & kRecHasValue;
  d->read_committed = flags & kRecReadCommitted;
  d->read_uncommitted = flags & kRecReadUncommitted;
  d->fate = TxnFate(flags >> 6);
}
uint8_t ChangedFields(const RecordDigest& d, const RecordDigest& last) {
  return uint8_t((d.producer_id != last.producer_id ? kChgProducer : 0) |
                 (d.producer_epoch != last.producer_epoch ? kChgProducerEpoch : 0) |
                 (d.leader_epoch != last.leader_epoch ? kChgLeaderEpoch : 0) | (d.txn != last.txn ? kChgTxn : 0));
}
void PutChangedFields(Out* o, uint8_t changed, const RecordDigest& d, const RecordDigest& last) {
  if (changed & kChgProducer) o->Zig(Sub(d.producer_id, last.producer_id));
  if (changed & kChgProducerEpoch) o->Zig(d.producer_epoch);
  if (changed & kChgLeaderEpoch) o->Zig(d.leader_epoch);
  if (changed & kChgTxn) o->Zig(d.txn);
}
void GetChangedFields(In* in, uint8_t changed, const RecordDigest& last, RecordDigest* d) {
  if (changed > 15) in->Fail(fmt::format("unknown record field mask {}", changed));
  d->producer_id = (changed & kChgProducer) ? Add(last.producer_id, in->Zig()) : last.producer_id;
  d->producer_epoch = (changed & kChgProducerEpoch) ? in->Zig16() : last.producer_epoch;
  d->leader_epoch = (changed & kChgLeaderEpoch) ? in->Zig32() : last.leader_epoch;
  d->txn = (changed & kChgTxn) ? in->Zig32() : last.txn;
}
uint8_t BatchFlags(const BatchSpan& b) {
  return uint8_t(uint8_t(b.transactional) | uint8_t(b.control) << 1 | uint8_t(b.digested) << 2);
}
void SetBatchFlags(In* in, uint8_t f, BatchSpan* b) {
  if (f > 7) in->Fail(fmt::format("unknown batch flags {}", f));
  b->transactional = f & 1;
  b->control = f & 2;
  b->digested = f & 4;
}

// Version 2 (docs/SCALE.md): the batches and records column by column, each column's values as deltas
// from what the previous entry predicts, so that runs compress; their hashes go to `h`, stored raw
// after the compressed part (hashes do not compress).
void PutBatchesV2(Out* o, Out* h, const std::vector<BatchSpan>& batches, int64_t log_start) {
  o->Var(batches.size());
  for (const BatchSpan& b : batches) o->Zig(b.records);
  for (const BatchSpan& b : batches) o->Zig(Sub(Sub(b.last_offset, b.base_offset), Sub(b.records, 1)));
  int64_t next = log_start;
  for (const BatchSpan& b : batches) {
    o->Zig(Sub(b.base_offset, next));
    next = Add(b.last_offset, 1);
  }
  int64_t prev_pid = -1;
  for (const BatchSpan& b : batches) {
    o->Zig(Sub(b.producer_id, prev_pid));
    prev_pid = b.producer_id;
  }
  for (const BatchSpan& b : batches) o->Zig(b.producer_epoch);
  for (const BatchSpan& b : batches) o->U8(BatchFlags(b));
  for (const BatchSpan& b : batches) o->Var(b.size);
  // The segment, then the position as the difference from the previous batch's end in that segment.
  int64_t seg = 0, pos = 0;
  for (const BatchSpan& b : batches) {
    o->Zig(Sub(b.segment, seg));
    if (int64_t(b.segment) != seg) pos = 0;
    seg = b.segment;
    o->Zig(Sub(int64_t(b.position), pos));
    pos = Add(int64_t(b.position), b.size);
  }
  int64_t first = 0;
  for (const BatchSpan& b : batches) {
    o->Zig(Sub(b.first_record, first));
    first = Add(b.first_record, b.digested ? b.records : 0);
  }
  for (const BatchSpan& b : batches) h->Fixed(b.crc, 4);
  for (const BatchSpan& b : batches) h->Fixed(b.fingerprint, 8);
}

void PutRecordsV2(Out* o, Out* h, const RecordStore& all, bool elide) {
  const RecordStore none;
  const RecordStore& records = elide ? none : all;
  o->Var(records.size());
  for (const RecordDigest& d : records) o->U8(RecordFlags(d));
  int64_t prev_offset = -1, prev_ts = 0;
  for (const RecordDigest& d : records) {
    o->Zig(Sub(Sub(d.offset, prev_offset), 1));
    prev_offset = d.offset;
  }
  for (const RecordDigest& d : records) {
    o->Zig(Sub(d.timestamp, prev_ts));
    prev_ts = d.timestamp;
  }
  RecordDigest last;
  for (const RecordDigest& d : records) {
    o->U8(ChangedFields(d, last));
    last = d;
  }
  last = RecordDigest();
  for (const RecordDigest& d : records) {
    PutChangedFields(o, ChangedFields(d, last), d, last);
    last = d;
  }
  for (const RecordDigest& d : records)
    if (d.has_key) h->Raw(d.key.data(), d.key.size());
  for (const RecordDigest& d : records) h->Raw(d.content.data(), d.content.size());
}

// A count is checked against the hashes its entries have in the hash part (12 bytes a batch, at least
// 12 a record) before anything is allocated for it.
// NOLINTNEXTLINE(readability-function-cognitive-complexity): a flat deserializer: one column after another, each value checked, in PutBatchesV2's order
void GetBatchesV2(In* in, In* h, std::vector<BatchSpan>* out, int64_t log_start) {
  size_t n = in->Count(9);
  if (in->ok() && n > h->left() / 12) in->Fail(fmt::format("{} batches, but {} bytes of hashes", n, h->left()));
  if (!in->ok()) return;
  std::vector<BatchSpan>& bs = *out;
  bs.resize(n);
  for (BatchSpan& b : bs) b.records = in->Zig32();
  for (BatchSpan& b : bs) b.last_offset = Add(in->Zig(), Sub(b.records, 1));  // the span; offsets below
  int64_t next = log_start;
  for (BatchSpan& b : bs) {
    b.base_offset = Add(next, in->Zig());
    b.last_offset = Add(b.base_offset, b.last_offset);
    next = Add(b.last_offset, 1);
  }
  int64_t prev_pid = -1;
  for (BatchSpan& b : bs) {
    b.producer_id = Add(prev_pid, in->Zig());
    prev_pid = b.producer_id;
  }
  for (BatchSpan& b : bs) b.producer_epoch = in->Zig16();
  for (BatchSpan& b : bs) SetBatchFlags(in, in->U8(), &b);
  for (BatchSpan& b : bs) {
    uint64_t size = in->Var();
    if (size > UINT32_MAX) in->Fail(fmt::format("batch size {} out of range", size));
    b.size = uint32_t(size);
  }
  int64_t seg = 0, pos = 0;
  for (BatchSpan& b : bs) {
    int64_t s = Add(seg, in->Zig());
    if (s < 0 || s > UINT32_MAX) in->Fail(fmt::format("segment index {} out of range", s));
    if (s != seg) pos = 0;
    seg = s;
    b.segment = uint32_t(s);
    b.position = uint64_t(Add(pos, in->Zig()));
    pos = Add(int64_t(b.position), b.size);
  }
  int64_t first = 0;
  for (BatchSpan& b : bs) {
    int64_t f = Add(first, in->Zig());
    if (f < 0 || f > UINT32_MAX) in->Fail(fmt::format("record index {} out of range", f));
    b.first_record = uint32_t(f);
    first = Add(b.first_record, b.digested ? b.records : 0);
  }
  for (BatchSpan& b : bs) b.crc = uint32_t(h->Fixed(4));
  for (BatchSpan& b : bs) b.fingerprint = h->Fixed(8);
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): a flat deserializer: one column after another, each value checked, in PutRecordsV2's order
void GetRecordsV2(In* in, In* h, RecordStore* rs) {
  size_t n = in->Count(4);
  if (in->ok() && n > h->left() / 12) in->Fail(fmt::format("{} records, but {} bytes of hashes", n, h->left()));
  if (!in->ok()) return;
  // The columns before the changed fields' values, then each record built once.
  std::vector<uint8_t> flags(n), changed(n);
  std::vector<int64_t> offsets(n), timestamps(n);
  size_t keys = 0;
  for (uint8_t& f : flags) {
    f = in->U8();
    keys += (f & kRecHasKey) ? 1 : 0;
  }
  int64_t prev = -1;
  for (int64_t& o : offsets) o = prev = Add(Add(prev, in->Zig()), 1);
  prev = 0;
  for (int64_t& t : timestamps) t = prev = Add(prev, in->Zig());
  for (uint8_t& c : changed) c = in->U8();
  In key_hashes(h->Take(keys * sizeof(Digest))), content_hashes(h->Take(n * sizeof(Fingerprint)));
  if (!in->ok() || !h->ok()) return;
  rs->reserve(n);
  RecordDigest last;
  for (size_t i = 0; i < n && in->ok(); ++i) {
    RecordDigest d;
    SetRecordFlags(flags[i], &d);
    d.offset = offsets[i];
    d.timestamp = timestamps[i];
    GetChangedFields(in, changed[i], last, &d);
    if (d.has_key) key_hashes.Raw(d.key.data(), d.key.size());
    content_hashes.Raw(d.content.data(), d.content.size());
    rs->push_back(d);
    last = d;
  }
}

// The state's fields before the batches (both versions).
void PutStateHead(Out* o, const ReplicaState& r, const std::string& base, bool elide) {
  PutPath(o, base, r.path);
  o->Str(r.label);
  o->U8(r.tp.has_value());
  if (r.tp) {
    o->Str(r.tp->topic);
    o->Zig(r.tp->partition);
  }
  o->OptStr(r.topic_id);
  o->OptStr(r.cluster_id);
  o->OptZig(r.node_id ? std::optional<int64_t>(*r.node_id) : std::nullopt);
  o->Zig(r.log_start_offset);
  o->Zig(r.log_end_offset);
  o->Zig(r.high_watermark);
  o->U8(r.high_watermark_from_checkpoint);
  o->Zig(r.last_stable_offset);
  o->OptZig(r.cleaner_checkpoint);
  o->OptZig(r.snapshot_offset);
  o->Zig(r.max_timestamp);
  o->U8(elide);

  o->Var(r.segment_files.size());
  for (const std::string& f : r.segment_files) PutPath(o, base, f);
}

// The state's fields after the records (both versions).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): a flat serializer: one ReplicaState field after another, in the format's order (docs/SCALE.md)
void PutStateTail(Out* o, const ReplicaState& r, const std::string& base) {
  int64_t prev = 0;
  o->Var(r.markers.size());
  for (const Marker& m : r.markers) {
    o->Zig(Sub(m.offset, prev));
    prev = m.offset;
    o->Zig(m.producer_id);
    o->Zig(m.producer_epoch);
    o->U8(uint8_t(m.type));
    o->Zig(m.coordinator_epoch);
  }
  o->Var(r.txns.size());
  for (const Txn& t : r.txns) {
    o->Zig(t.producer_id);
    o->Zig(t.producer_epoch);
    o->Zig(t.first_offset);
    o->Zig(Sub(t.last_data_offset, t.first_offset));
    o->OptZig(t.marker_offset);
    o->U8(uint8_t(t.fate));
    o->Zig(t.records);
  }
  o->Var(r.open_txns.size());
  for (const OpenTxn& t : r.open_txns) {
    o->Zig(t.producer_id);
    o->Zig(t.producer_epoch);
    o->Zig(t.first_offset);
    o->Zig(t.last_offset);
    o->Zig(t.last_timestamp);
  }
  o->Var(r.producers.size());
  for (const LoadedProducer& p : r.producers) {
    o->Zig(p.producer_id);
    o->Zig(p.producer_epoch);
    o->Zig(p.coordinator_epoch);
  }
  o->Var(r.aborted_txns.size());
  for (size_t i = 0; i < r.aborted_txns.size(); ++i) {
    const AbortedTxn& e = r.aborted_txns[i];
    o->Zig(e.version);
    o->Zig(e.producer_id);
    o->Zig(e.first_offset);
    o->Zig(e.last_offset);
    o->Zig(e.last_stable_offset);
    bool has_source = i < r.aborted_txn_sources.size();
    o->U8(has_source);
    if (has_source) {
      PutPath(o, base, r.aborted_txn_sources[i].file);
      o->Var(r.aborted_txn_sources[i].position);
    }
  }
  o->Var(r.gaps.size());
  for (const OffsetGap& g : r.gaps) {
    o->Zig(g.from);
    o->Zig(g.to);
  }
  o->Var(r.damaged.size());
  for (const DamagedRange& d : r.damaged) {
    o->Zig(d.from);
    o->Zig(d.to);
    PutPath(o, base, d.file);
    o->Var(d.position);
    o->Str(d.why);
  }
  o->Var(r.notes.size());
  for (const Problem& p : r.notes) PutProblem(o, p);
}

// Version 2: the state (its hashes apart) zstd-compressed, then the hashes raw:
//   varint raw length, varint compressed length, the zstd frame, varint hash length, the hashes.
void PutState(Out* o, const ReplicaState& r, const std::string& base) {
  const bool elide = IsPlainReplica(r);
  Out m, h;
  PutStateHead(&m, r, base, elide);
  PutBatchesV2(&m, &h, r.batches, r.log_start_offset);
  PutRecordsV2(&m, &h, r.records, elide);
  PutStateTail(&m, r, base);
  std::string raw = m.Take(), packed;
  Compress(Compression::kZstd, AsBytes(raw), 2, &packed);
  o->Var(raw.size());
  o->Str(packed);
  o->Str(h.Take());
}

void GetStateHead(In* in, ReplicaState* r, const std::string& base) {
  r->path = GetPath(in, base);
  r->label = in->Str();
  if (in->Bool()) {
    TopicPartition tp;
    tp.topic = in->Str();
    tp.partition = in->Zig32();
    r->tp = tp;
  }
  r->topic_id = in->OptStr();
  r->cluster_id = in->OptStr();
  if (in->Bool()) r->node_id = in->Zig32();
  r->log_start_offset = in->Zig();
  r->log_end_offset = in->Zig();
  r->high_watermark = in->Zig();
  r->high_watermark_from_checkpoint = in->Bool();
  r->last_stable_offset = in->Zig();
  r->cleaner_checkpoint = in->OptZig();
  r->snapshot_offset = in->OptZig();
  r->max_timestamp = in->Zig();
  r->records_elided = in->Bool();

  size_t n = in->Count(2);
  r->segment_files.reserve(n);
  for (size_t i = 0; i < n && in->ok(); ++i) r->segment_files.push_back(GetPath(in, base));
}

// Version 1: the batches and records row by row, their hashes inline.
// NOLINTNEXTLINE(readability-function-cognitive-complexity): a flat deserializer: one field after another, each checked
void GetBatchesAndRecordsV1(In* in, ReplicaState* r) {
  size_t n = in->Count(20);
  r->batches.reserve(n);
  int64_t prev = 0, prev_pid = -1;
  for (size_t i = 0; i < n && in->ok(); ++i) {
    BatchSpan b;
    b.base_offset = Add(prev, in->Zig());
    b.last_offset = Add(b.base_offset, in->Zig());
    prev = b.last_offset;
    b.producer_id = Add(prev_pid, in->Zig());
    prev_pid = b.producer_id;
    b.producer_epoch = in->Zig16();
    uint8_t f = in->U8();
    if (f > 7) in->Fail(fmt::format("unknown batch flags {}", f));
    b.transactional = f & 1;
    b.control = f & 2;
    b.digested = f & 4;
    b.records = in->Zig32();
    b.segment = uint32_t(in->Var());
    b.position = in->Var();
    b.size = uint32_t(in->Var());
    b.crc = uint32_t(in->Fixed(4));
    b.fingerprint = in->Fixed(8);
    b.first_record = uint32_t(in->Var());
    r->batches.push_back(b);
  }

  n = in->Count(16);
  r->records.reserve(n);
  RecordDigest last;
  int64_t prev_offset = -1, prev_ts = 0;
  for (size_t i = 0; i < n && in->ok(); ++i) {
    RecordDigest d;
    uint8_t flags = in->U8();
    uint8_t changed = in->U8();
    if (changed > 15) in->Fail(fmt::format("unknown record field mask {}", changed));
    d.transactional = flags & kRecTransactional;
    d.control = flags & kRecControl;
    d.has_key = flags & kRecHasKey;
    d.has_value = flags & kRecHasValue;
    d.read_committed = flags & kRecReadCommitted;
    d.read_uncommitted = flags & kRecReadUncommitted;
    d.fate = TxnFate(flags >> 6);
    d.offset = Add(Add(prev_offset, in->Zig()), 1);
    d.timestamp = Add(prev_ts, in->Zig());
    d.producer_id = (changed & kChgProducer) ? Add(last.producer_id, in->Zig()) : last.producer_id;
    d.producer_epoch = (changed & kChgProducerEpoch) ? in->Zig16() : last.producer_epoch;
    d.leader_epoch = (changed & kChgLeaderEpoch) ? in->Zig32() : last.leader_epoch;
    d.txn = (changed & kChgTxn) ? in->Zig32() : last.txn;
    if (d.has_key) in->Raw(d.key.data(), d.key.size());
    in->Raw(d.content.data(), d.content.size());
    prev_offset = d.offset;
    prev_ts = d.timestamp;
    last = d;
    r->records.push_back(d);
  }
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): a flat deserializer: one ReplicaState field after another, each checked, in the format's order (docs/SCALE.md)
bool GetStateTail(In* in, ReplicaState* r, const std::string& base) {
  if (r->records_elided && !r->records.empty()) in->Fail("records of a log whose records are elided");
  size_t n = in->Count(5);
  int64_t prev = 0;
  for (size_t i = 0; i < n && in->ok(); ++i) {
    Marker m;
    m.offset = Add(prev, in->Zig());
    prev = m.offset;
    m.producer_id = in->Zig();
    m.producer_epoch = in->Zig16();
    uint8_t t = in->U8();
    if (t > uint8_t(MarkerType::kOther)) in->Fail(fmt::format("unknown marker type {}", t));
    m.type = MarkerType(t);
    m.coordinator_epoch = in->Zig32();
    r->markers.push_back(m);
  }
  n = in->Count(7);
  for (size_t i = 0; i < n && in->ok(); ++i) {
    Txn t;
    t.producer_id = in->Zig();
    t.producer_epoch = in->Zig16();
    t.first_offset = in->Zig();
    t.last_data_offset = Add(t.first_offset, in->Zig());
    t.marker_offset = in->OptZig();
    uint8_t f = in->U8();
    if (f > uint8_t(TxnFate::kOpen)) in->Fail(fmt::format("unknown transaction fate {}", f));
    t.fate = TxnFate(f);
    t.records = in->Zig();
    r->txns.push_back(t);
  }
  n = in->Count(5);
  for (size_t i = 0; i < n && in->ok(); ++i) {
    OpenTxn t;
    t.producer_id = in->Zig();
    t.producer_epoch = in->Zig16();
    t.first_offset = in->Zig();
    t.last_offset = in->Zig();
    t.last_timestamp = in->Zig();
    r->open_txns.push_back(t);
  }
  n = in->Count(3);
  for (size_t i = 0; i < n && in->ok(); ++i) {
    LoadedProducer p;
    p.producer_id = in->Zig();
    p.producer_epoch = in->Zig16();
    p.coordinator_epoch = in->Zig32();
    r->producers.push_back(p);
  }
  n = in->Count(6);
  bool sources = true;
  for (size_t i = 0; i < n && in->ok(); ++i) {
    AbortedTxn e;
    e.version = in->Zig16();
    e.producer_id = in->Zig();
    e.first_offset = in->Zig();
    e.last_offset = in->Zig();
    e.last_stable_offset = in->Zig();
    r->aborted_txns.push_back(e);
    if (in->Bool()) {
      ReplicaState::FilePosition s;
      s.file = GetPath(in, base);
      s.position = in->Var();
      if (sources) r->aborted_txn_sources.push_back(s);
    } else {
      sources = false;
    }
  }
  if (!sources) r->aborted_txn_sources.clear();
  r->IndexAbortedTxns();
  n = in->Count(2);
  for (size_t i = 0; i < n && in->ok(); ++i) {
    OffsetGap g;
    g.from = in->Zig();
    g.to = in->Zig();
    r->gaps.push_back(g);
  }
  n = in->Count(5);
  for (size_t i = 0; i < n && in->ok(); ++i) {
    DamagedRange d;
    d.from = in->Zig();
    d.to = in->Zig();
    d.file = GetPath(in, base);
    d.position = in->Var();
    d.why = in->Str();
    r->damaged.push_back(d);
  }
  n = in->Count(5);
  for (size_t i = 0; i < n && in->ok(); ++i) r->notes.push_back(GetProblem(in));
  if (!in->ok()) return false;

  // What the diff indexes with must point inside the state: a digest that passed its checksums but was
  // written wrong (or crafted) is refused rather than read out of bounds.
  for (const BatchSpan& b : r->batches) {
    if (b.segment >= r->segment_files.size() && !r->segment_files.empty()) {
      in->Fail(
          fmt::format("batch at offset {} names segment {} of {}", b.base_offset, b.segment, r->segment_files.size()));
      return false;
    }
    if (b.digested && !r->records_elided &&
        (b.records < 0 || uint64_t(b.first_record) + uint64_t(b.records) > r->records.size())) {
      in->Fail(fmt::format("batch at offset {} names records {}+{} of {}", b.base_offset, b.first_record, b.records,
                           r->records.size()));
      return false;
    }
  }
  for (const RecordDigest& d : r->records) {
    if (d.txn < -1 || (d.txn >= 0 && size_t(d.txn) >= r->txns.size())) {
      in->Fail(fmt::format("record at offset {} names transaction {} of {}", d.offset, d.txn, r->txns.size()));
      return false;
    }
  }
  BuildKeyView(r);
  r->from_digest = true;
  return true;
}

// A version 2 state's compressed part may expand to at most this many times its section's size (plus
// 1 MiB): allocation stays proportional to the digest's bytes. Real states expand 2-10 times.
constexpr uint64_t kMaxStateExpansion = 64;

// Decodes a state of digest format `major` (1 or 2). *trailing: a newer minor version's fields follow.
bool GetState(In* in, ReplicaState* r, const std::string& base, uint16_t major, bool* trailing) {
  if (major == 1) {
    GetStateHead(in, r, base);
    GetBatchesAndRecordsV1(in, r);
    return GetStateTail(in, r, base);
  }
  uint64_t raw_size = in->Var();
  std::string_view packed = in->View();
  std::string_view hashes = in->View();
  if (!in->ok()) return false;
  if (raw_size > kMaxStateExpansion * in->size() + (uint64_t(1) << 20)) {
    in->Fail(
        fmt::format("a state of {} bytes compressed to {}: more than this section can hold", raw_size, packed.size()));
    return false;
  }
  std::string raw, why;
  if (!Decompress(Compression::kZstd, AsBytes(packed), 2, size_t(raw_size) + 1, &raw, &why) || raw.size() != raw_size) {
    in->Fail(fmt::format("the compressed state does not decompress to its {} bytes: {}", raw_size,
                         why.empty() ? fmt::format("{} bytes", raw.size()) : why));
    return false;
  }
  In m(raw), h(hashes);
  GetStateHead(&m, r, base);
  GetBatchesV2(&m, &h, &r->batches, r->log_start_offset);
  GetRecordsV2(&m, &h, &r->records);
  if (m.ok() && h.ok() && h.left() != 0) h.Fail(fmt::format("{} bytes after the hashes", h.left()));
  if (!h.ok()) {
    in->Fail("hashes: " + h.error());
    return false;
  }
  bool ok = GetStateTail(&m, r, base);
  if (!m.ok()) in->Fail("compressed state: " + m.error());
  *trailing = ok && m.left() != 0;
  return ok;
}

// A Kafka file name "<20-digit offset><ext>" with a known ext is stored as the ext's number (1..) and the
// offset; any other name (20 digits that overflow 64 bits among them) as 0 and the string.
constexpr const char* kExts[] = {".log", ".index", ".timeindex", ".snapshot", ".txnindex"};
void PutFileName(Out* o, const std::string& name) {
  for (size_t e = 0; e < std::size(kExts); ++e) {
    std::string_view ext = kExts[e];
    uint64_t offset = 0;
    if (name.size() == 20 + ext.size() && name.ends_with(ext) && name.find_first_not_of("0123456789") == 20 &&
        std::from_chars(name.data(), name.data() + 20, offset).ec == std::errc()) {
      o->U8(uint8_t(e + 1));
      o->Var(offset);
      return;
    }
  }
  o->U8(0);
  o->Str(name);
}
std::string GetFileName(In* in) {
  uint8_t e = in->U8();
  if (e == 0) return in->Str();
  if (e > std::size(kExts)) {
    in->Fail(fmt::format("unknown file kind {}", e));
    return "";
  }
  return fmt::format("{:020d}{}", in->Var(), kExts[e - 1]);
}

void PutLE(std::string* s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s->push_back(char((v >> (8 * i)) & 0xff));
}
uint64_t GetLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}

uint32_t Crc(std::string_view s) { return Crc32c(AsBytes(s)); }

// The file mapped read-only (MappedFile: regular files only); its bytes as a string_view.
std::shared_ptr<const MappedFile> MapWhole(const std::string& path, std::string_view* data, std::string* error) {
  std::shared_ptr<const MappedFile> f = MappedFile::Open(path, error);
  if (!f) return nullptr;
  *data = std::string_view(reinterpret_cast<const char*>(f->data().data()), f->data().size());
  return f;
}

// Checks the file header; false with *error when it is not a digest this klf reads.
bool CheckHeader(const std::string& path, std::string_view data, DigestVersion* v, std::string* error) {
  if (!data.starts_with(kDigestMagic)) {
    *error = fmt::format("{}: byte 0: expected the klf digest magic \"KLFDIGST\": not a klf digest", path);
    return false;
  }
  if (data.size() < kDigestHeaderSize) {
    *error = fmt::format("{}: byte {}: the file ends inside the {}-byte digest header (truncated)", path, data.size(),
                         kDigestHeaderSize);
    return false;
  }
  v->major = uint16_t(GetLE(data.data() + 8, 2));
  v->minor = uint16_t(GetLE(data.data() + 10, 2));
  if (v->major > kDigestMajor) {
    *error = fmt::format(
        "{}: byte 8: digest format version {}.{} is newer than this klf reads ({}): use the klf that wrote it", path,
        v->major, v->minor, kDigestVersionsRead);
    return false;
  }
  if (v->major < kDigestOldestMajor) {
    *error = fmt::format("{}: byte 8: digest format version {}.{} does not exist (this klf reads {})", path, v->major,
                         v->minor, kDigestVersionsRead);
    return false;
  }
  return true;
}

struct SectionView {
  uint8_t kind = 0;
  uint64_t start = 0;  // file position of the section
  std::string_view payload;
};

// Reads the section at *pos. 0: a complete, checked section; 1: the trailer; -1: error (truncated or
// damaged), *error set.
int NextSection(const std::string& path, std::string_view data, uint64_t* pos, SectionView* out, std::string* error) {
  uint64_t p = *pos;
  if (p >= data.size()) {
    *error = fmt::format("{}: byte {}: expected a section or the trailer, the file ends (truncated)", path, p);
    return -1;
  }
  uint8_t kind = uint8_t(data[p]);
  if (kind == kDigestSectionTrailer) return 1;
  if (data.size() - p < 1 + 8 + 4) {
    *error = fmt::format("{}: byte {}: the file ends inside a section header (truncated)", path, p);
    return -1;
  }
  uint64_t len = GetLE(data.data() + p + 1, 8);
  if (len > data.size() - p - 13) {
    *error = fmt::format("{}: byte {}: a section of {} bytes does not fit in the {} bytes left (truncated or damaged)",
                         path, p, len, data.size() - p - 13);
    return -1;
  }
  std::string_view framed = data.substr(p, 9 + len);
  uint32_t stored = uint32_t(GetLE(data.data() + p + 9 + len, 4));
  uint32_t actual = Crc(framed);
  if (stored != actual) {
    *error = fmt::format("{}: byte {}: section CRC-32C is {:08x}, expected {:08x} (damaged)", path, p, stored, actual);
    return -1;
  }
  out->kind = kind;
  out->start = p;
  out->payload = data.substr(p + 9, len);
  *pos = p + 13 + len;
  return 0;
}

// Whether a file of version v is of a newer minor version than this klf knows for v's major: its sections
// may then end in fields and be of kinds this klf skips.
bool NewerMinor(DigestVersion v) { return v.minor > (v.major == kDigestMajor ? kDigestMinor : kDigestLastMinorOf1); }

bool DecodeSection(const std::string& path, const SectionView& s, DigestVersion v, DigestFile* out, bool* have_capture,
                   std::string* error, bool keep_state = true) {
  std::string why;
  const bool newer_minor = NewerMinor(v);
  if (s.kind == kDigestSectionCapture) {
    if (*have_capture) {
      *error = fmt::format("{}: byte {}: a second capture section", path, s.start);
      return false;
    }
    if (!DecodeDigestCapture(s.payload, &out->capture, &why) && !(newer_minor && why == "trailing")) {
      *error = fmt::format("{}: byte {}: capture section: {}", path, s.start, why);
      return false;
    }
    *have_capture = true;
    return true;
  }
  if (!*have_capture) {
    *error =
        fmt::format("{}: byte {}: expected the capture section first, found section kind {}", path, s.start, s.kind);
    return false;
  }
  if (s.kind == kDigestSectionCopy) {
    DigestCopy c;
    if (!DecodeDigestCopy(s.payload, &c, &why, v.major) && !(newer_minor && why == "trailing")) {
      *error = fmt::format("{}: byte {}: partition section: {}", path, s.start, why);
      return false;
    }
    c.payload_pos = s.start + 9;
    c.payload_size = s.payload.size();
    c.state_decoded = c.loaded;
    if (!keep_state) {
      c.state = ReplicaState();
      c.state_decoded = false;
    }
    out->copies.push_back(std::move(c));
    return true;
  }
  if (s.kind == kDigestSectionLogDirProblems && (v.major > 2 || (v.major == 2 && v.minor >= 1))) {
    if (out->have_log_dir_problems) {
      *error = fmt::format("{}: byte {}: a second log-dir problems section", path, s.start);
      return false;
    }
    if (!DecodeLogDirProblems(s.payload, &out->capture.log_dir_problems, &why) && !(newer_minor && why == "trailing")) {
      *error = fmt::format("{}: byte {}: log-dir problems section: {}", path, s.start, why);
      return false;
    }
    out->have_log_dir_problems = true;
    return true;
  }
  if (newer_minor) return true;  // a newer minor version's section: skipped
  *error = fmt::format("{}: byte {}: unknown section kind {} (digest format {}.{})", path, s.start, s.kind, v.major,
                       v.minor);
  return false;
}

}  // namespace

// A partition restored from batch identities costs 64 bytes a record, as loading it from its files does;
// a digest that claims more is refused (hostile input must not make klf allocate without bound).
constexpr uint64_t kMaxRestoredRecords = uint64_t(1) << 28;

bool IsPlainReplica(const ReplicaState& r) {
  if (r.records_elided) {
    // As decoded: the batches' structure (the records were checked when the digest was written).
    uint64_t total = 0;
    for (size_t i = 0; i < r.batches.size(); ++i) {
      const BatchSpan& b = r.batches[i];
      if (b.transactional || b.control || b.records < 1 || Sub(b.last_offset, b.base_offset) != b.records - 1 ||
          (i > 0 && Add(r.batches[i - 1].last_offset, 1) != b.base_offset))
        return false;
      total += uint64_t(b.records);
    }
    return !r.batches.empty() && total <= kMaxRestoredRecords && r.batches.front().base_offset == r.log_start_offset &&
           Add(r.batches.back().last_offset, 1) == r.log_end_offset && r.last_stable_offset == r.high_watermark;
  }
  if (r.batches.empty() || !r.markers.empty() || !r.txns.empty() || !r.open_txns.empty() || !r.aborted_txns.empty() ||
      !r.gaps.empty() || !r.damaged.empty() || r.batches.front().base_offset != r.log_start_offset ||
      Add(r.batches.back().last_offset, 1) != r.log_end_offset || r.last_stable_offset != r.high_watermark) {
    return false;
  }
  size_t next = 0;
  for (size_t i = 0; i < r.batches.size(); ++i) {
    const BatchSpan& b = r.batches[i];
    if (!b.digested || b.transactional || b.control || b.first_record != next || b.records < 1 ||
        Sub(b.last_offset, b.base_offset) != b.records - 1 ||
        (i > 0 && Add(r.batches[i - 1].last_offset, 1) != b.base_offset) || next + size_t(b.records) > r.records.size())
      return false;
    for (int32_t k = 0; k < b.records; ++k) {
      const RecordDigest& d = r.records[next + size_t(k)];
      if (d.offset != b.base_offset + k || d.transactional || d.control || d.txn != -1 || d.fate != TxnFate::kNone ||
          d.producer_id != b.producer_id || d.producer_epoch != b.producer_epoch ||
          d.read_uncommitted != (d.offset < r.high_watermark) || d.read_committed != (d.offset < r.last_stable_offset))
        return false;
    }
    next += size_t(b.records);
  }
  return next == r.records.size();
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): docs/SCALE.md's rule for plain logs kept as batch identities: every copy, batch and overlap checked in one pass
bool RestoreElidedRecords(std::vector<ReplicaState>* replicas, std::string* why, int64_t* first, int64_t* last) {
  std::vector<ReplicaState>& rs = *replicas;
  bool any = false;
  for (const ReplicaState& r : rs) any = any || r.records_elided;
  if (!any) return true;
  for (const ReplicaState& r : rs) {
    if (!IsPlainReplica(r)) {
      *why = fmt::format(
          "the digest holds only batch identities for a plain copy, but {} is not plain (transactions, markers, "
          "gaps, compaction or damage), so its records cannot be compared with those identities",
          r.label.empty() ? r.path : r.label);
      *first = r.log_start_offset;
      *last = JavaSub(r.log_end_offset, 1);
      for (const ReplicaState& x : rs) {
        *first = std::min(*first, x.log_start_offset);
        *last = std::max(*last, JavaSub(x.log_end_offset, 1));
      }
      return false;
    }
  }
  auto same = [](const BatchSpan& a, const BatchSpan& b) {
    return a.base_offset == b.base_offset && a.last_offset == b.last_offset && a.size == b.size && a.crc == b.crc &&
           a.fingerprint == b.fingerprint;
  };
  // Every two agree batch for batch where they overlap.
  for (size_t i = 0; i < rs.size(); ++i) {
    for (size_t j = i + 1; j < rs.size(); ++j) {
      const auto& x = rs[i].batches;
      const auto& y = rs[j].batches;
      size_t a = 0, b = 0;
      while (a < x.size() && b < y.size()) {
        if (x[a].last_offset < y[b].base_offset) {
          ++a;
        } else if (y[b].last_offset < x[a].base_offset) {
          ++b;
        } else {
          if (!same(x[a], y[b])) {
            *first = std::max(x[a].base_offset, y[b].base_offset);
            *last = std::max(x[a].last_offset, y[b].last_offset);
            *why = fmt::format(
                "{} and {} hold different batches at offsets {}..{}; the digests keep only the identity of a "
                "plain log's batches, so which records differ needs the files",
                rs[i].label.empty() ? rs[i].path : rs[i].label, rs[j].label.empty() ? rs[j].path : rs[j].label, *first,
                *last);
            return false;
          }
          ++a;
          ++b;
        }
      }
    }
  }
  for (ReplicaState& r : rs) {
    if (!r.records_elided) continue;
    r.records.clear();
    size_t total = 0;
    for (const BatchSpan& b : r.batches) total += size_t(b.records);
    r.records.reserve(total);  // IsPlainReplica bounded it
    for (BatchSpan& b : r.batches) {
      b.first_record = uint32_t(r.records.size());
      const RecordDigest* from = nullptr;
      for (const ReplicaState& o : rs) {
        if (o.records_elided) continue;
        auto it = std::lower_bound(o.batches.begin(), o.batches.end(), b.base_offset,
                                   [](const BatchSpan& s, int64_t off) { return s.base_offset < off; });
        if (it != o.batches.end() && same(*it, b) && it->first_record + size_t(it->records) <= o.records.size()) {
          from = &o.records[it->first_record];
          break;
        }
      }
      for (int32_t k = 0; k < b.records; ++k) {
        RecordDigest d;
        if (from) {
          d = from[k];
        } else {
          // Derived from the batch's identity: equal for equal batch bytes, different otherwise.
          d.offset = b.base_offset + k;
          uint64_t h1 = b.fingerprint ^ (uint64_t(b.crc) << 32 | b.size);
          uint64_t h2 = uint64_t(k) * 0x9E3779B97F4A7C15ull ^ b.fingerprint;
          std::memcpy(d.content.data(), &h1, 8);
          std::memcpy(d.content.data() + 8, &h2, 4);
          d.producer_id = b.producer_id;
          d.producer_epoch = b.producer_epoch;
          d.has_value = true;
        }
        d.read_uncommitted = d.offset < r.high_watermark;
        d.read_committed = d.offset < r.last_stable_offset;
        r.records.push_back(d);
      }
    }
    r.records_elided = false;
    BuildKeyView(&r);
  }
  return true;
}

std::string EncodeDigestCapture(const DigestCapture& c) {
  Out o;
  o.Str(c.klf_version);
  o.Str(c.host);
  o.Zig(c.created_ms);
  o.Var(c.log_dirs.size());
  for (size_t i = 0; i < c.log_dirs.size(); ++i) {
    o.Str(c.log_dirs[i]);
    o.Str(i < c.brokers.size() ? c.brokers[i] : "");
  }
  PutStrings(&o, c.log_dir_problems);
  o.OptZig(c.now_ms);
  o.Zig(c.producer_id_expiration_ms);
  o.U8(c.verify_records);
  return o.Take();
}

std::string EncodeLogDirProblems(const std::vector<std::string>& problems) {
  Out o;
  PutStrings(&o, problems);
  return o.Take();
}

bool DecodeLogDirProblems(std::string_view payload, std::vector<std::string>* out, std::string* error) {
  In in(payload);
  std::vector<std::string> problems = GetStrings(&in);
  if (!in.ok()) {
    *error = in.error();
    return false;
  }
  *out = std::move(problems);
  if (in.left() != 0) {
    *error = "trailing";
    return false;
  }
  return true;
}

bool DecodeDigestCapture(std::string_view payload, DigestCapture* out, std::string* error) {
  In in(payload);
  *out = DigestCapture();
  out->klf_version = in.Str();
  out->host = in.Str();
  out->created_ms = in.Zig();
  size_t n = in.Count(2);
  for (size_t i = 0; i < n && in.ok(); ++i) {
    out->log_dirs.push_back(in.Str());
    out->brokers.push_back(in.Str());
  }
  out->log_dir_problems = GetStrings(&in);
  out->now_ms = in.OptZig();
  out->producer_id_expiration_ms = in.Zig();
  out->verify_records = in.Bool();
  if (!in.ok()) {
    *error = in.error();
    return false;
  }
  if (in.left() != 0) {
    *error = "trailing";
    return false;
  }
  return true;
}

std::string EncodeDigestCopy(const DigestCopy& c) {
  Out o;
  o.Str(c.partition);
  o.Str(c.log_dir);
  o.Str(c.path);
  o.Str(c.broker);
  o.U8(c.loaded);
  o.Str(c.error);
  o.Var(c.damage.errors);
  o.Var(c.damage.warnings);
  o.Str(c.damage.first_error);
  o.Var(c.files.size());
  int64_t prev_mtime = 0;
  for (const DigestFileInfo& f : c.files) {
    PutFileName(&o, f.name);
    o.Var(f.size);
    o.Zig(Sub(f.mtime_ms, prev_mtime));
    prev_mtime = f.mtime_ms;
  }
  if (c.loaded) PutState(&o, c.state, c.path);
  return o.Take();
}

bool DecodeDigestCopy(std::string_view payload, DigestCopy* out, std::string* error, uint16_t major) {
  In in(payload);
  *out = DigestCopy();
  out->partition = in.Str();
  out->log_dir = in.Str();
  out->path = in.Str();
  out->broker = in.Str();
  out->loaded = in.Bool();
  out->error = in.Str();
  out->damage.errors = in.Var();
  out->damage.warnings = in.Var();
  out->damage.first_error = in.Str();
  size_t n = in.Count(3);
  int64_t prev_mtime = 0;
  for (size_t i = 0; i < n && in.ok(); ++i) {
    DigestFileInfo f;
    f.name = GetFileName(&in);
    f.size = in.Var();
    f.mtime_ms = Add(prev_mtime, in.Zig());
    prev_mtime = f.mtime_ms;
    out->files.push_back(std::move(f));
  }
  bool trailing = false;
  if (major < 1 || major > kDigestMajor)
    in.Fail(fmt::format("digest format version {} is not one this klf reads", major));
  if (in.ok() && out->loaded) GetState(&in, &out->state, out->path, major, &trailing);
  if (!in.ok()) {
    *error = in.error();
    return false;
  }
  if (in.left() != 0 || trailing) {
    *error = "trailing";
    return false;
  }
  return true;
}

std::string DigestFileHeader() {
  std::string s(kDigestMagic);
  PutLE(&s, kDigestMajor, 2);
  PutLE(&s, kDigestMinor, 2);
  PutLE(&s, 0, 4);
  return s;
}

std::string DigestSection(uint8_t kind, std::string_view payload) {
  std::string s;
  s.reserve(13 + payload.size());
  s.push_back(char(kind));
  PutLE(&s, payload.size(), 8);
  s.append(payload);
  PutLE(&s, Crc(s), 4);
  return s;
}

std::string DigestTrailer(uint64_t sections, uint32_t crc) {
  std::string s(1, char(kDigestSectionTrailer));
  PutLE(&s, sections, 8);
  PutLE(&s, crc, 4);
  s.append(kDigestEndMagic);
  return s;
}

bool LooksLikeDigest(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::ifstream f(path, std::ios::binary);
  std::string head(kDigestMagic.size(), '\0');
  f.read(head.data(), std::streamsize(head.size()));
  return size_t(f.gcount()) == head.size() && head == kDigestMagic;
}

bool ReadDigestFile(const std::string& path, DigestFile* out, std::string* error, bool keep_states) {
  *out = DigestFile();
  out->path = path;
  std::string_view data;
  std::shared_ptr<const MappedFile> mapping = MapWhole(path, &data, error);
  if (!mapping) return false;
  if (!CheckHeader(path, data, &out->version, error)) return false;
  if (data.size() < kDigestHeaderSize + kDigestTrailerSize ||
      data.substr(data.size() - kDigestEndMagic.size()) != kDigestEndMagic) {
    *error = fmt::format(
        "{}: byte {}: expected the trailer ending in \"KLFDEND!\" at the end of the file: truncated or unfinished "
        "(a digest that was interrupted is completed with klf digest --resume)",
        path, data.size());
    return false;
  }
  const uint64_t trailer = data.size() - kDigestTrailerSize;
  uint32_t stored = uint32_t(GetLE(data.data() + trailer + 9, 4));
  uint32_t actual = Crc(data.substr(0, trailer));
  if (uint8_t(data[trailer]) != kDigestSectionTrailer || stored != actual) {
    *error = fmt::format("{}: byte {}: whole-file CRC-32C is {:08x}, the trailer says {:08x} (damaged)", path, trailer,
                         actual, stored);
    return false;
  }
  uint64_t count = GetLE(data.data() + trailer + 1, 8);
  uint64_t pos = kDigestHeaderSize, seen = 0;
  bool have_capture = false;
  while (true) {
    SectionView s;
    int r = NextSection(path, data.substr(0, trailer + 1), &pos, &s, error);
    if (r < 0) return false;
    if (r == 1) break;
    ++seen;
    if (!DecodeSection(path, s, out->version, out, &have_capture, error, keep_states)) return false;
  }
  if (pos != trailer) {
    *error = fmt::format("{}: byte {}: the sections end here but the trailer starts at byte {} (damaged)", path, pos,
                         trailer);
    return false;
  }
  if (seen != count || !have_capture) {
    *error = fmt::format("{}: byte {}: the trailer counts {} sections, the file holds {}{} (damaged)", path, trailer,
                         count, seen, have_capture ? "" : " and no capture section");
    return false;
  }
  if (!keep_states) out->mapping = std::move(mapping);
  return true;
}

bool DecodeDigestState(const DigestFile& file, DigestCopy* c, std::string* error) {
  if (c->state_decoded || !c->loaded) return true;
  if (!file.mapping || c->payload_pos + c->payload_size > file.mapping->size()) {
    *error = fmt::format("{}: the digest's bytes are not at hand to decode {}", file.path, c->path);
    return false;
  }
  DigestCopy full;
  std::string why;
  std::string_view bytes(reinterpret_cast<const char*>(file.mapping->data().data()), file.mapping->size());
  if (!DecodeDigestCopy(bytes.substr(c->payload_pos, c->payload_size), &full, &why, file.version.major) &&
      why != "trailing") {
    *error = fmt::format("{}: byte {}: partition section: {}", file.path, c->payload_pos - 9, why);
    return false;
  }
  c->state = std::move(full.state);
  c->state_decoded = true;
  return true;
}

bool ReadPartialDigest(const std::string& path, DigestFile* out, uint64_t* valid_bytes, uint32_t* crc,
                       std::string* error) {
  *out = DigestFile();
  std::string_view data;
  std::shared_ptr<const MappedFile> mapping = MapWhole(path, &data, error);
  if (!mapping) return false;
  if (!CheckHeader(path, data, &out->version, error)) return false;
  if (out->version.major != kDigestMajor || out->version.minor != kDigestMinor) {
    *error = fmt::format("{}: byte 8: digest format {}.{}: --resume continues only a {}.{} digest", path,
                         out->version.major, out->version.minor, kDigestMajor, kDigestMinor);
    return false;
  }
  uint64_t pos = kDigestHeaderSize;
  *valid_bytes = pos;
  bool have_capture = false;
  std::string ignored;
  while (pos < data.size()) {
    SectionView s;
    if (NextSection(path, data, &pos, &s, &ignored) != 0) break;
    // The closing section of a run stopped before its trailer: written again when the run ends.
    if (s.kind == kDigestSectionLogDirProblems) break;
    if (!DecodeSection(path, s, out->version, out, &have_capture, &ignored)) break;
    *valid_bytes = pos;
  }
  if (!have_capture) *valid_bytes = kDigestHeaderSize;
  *crc = Crc(data.substr(0, *valid_bytes));
  return true;
}

}  // namespace klf
