// Loading one replica (see replica_state.h). Kafka sources followed: UnifiedLog/LogLoader (log start,
// high watermark, producer state load), LocalLog.collectAbortedTransactions + CompletedFetch
// (read_committed filtering by the aborted-transaction list and ABORT markers), ProducerAppendInfo
// (which marker closes which transaction).
#include "diff/replica_state.h"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "segment_reader/capture.h"
#include "segment_reader/batch.h"
#include "segment_reader/crc.h"
#include "segment_reader/file.h"
#include "segment_reader/layout.h"
#include "partition/consumer_view.h"
#include "partition/loaded_log.h"
#include "partition/producer_state.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace {

// The content fingerprint (replica_state.h): two CRCs streamed over the record's fields. Small fields
// are gathered in a scratch buffer so each CRC runs once over them, not once per 8-byte field.
class ContentHasher {
 public:
  void AddInt(int64_t v) { Add(&v, sizeof(v)); }
  void AddOptional(const std::optional<Bytes>& b) {
    AddInt(b ? int64_t(b->size()) : -1);
    if (b && !b->empty()) Add(b->data(), b->size());
  }
  Fingerprint End() {
    Flush();
    Fingerprint f{};
    std::memcpy(f.data(), &crc64_, 8);
    std::memcpy(f.data() + 8, &crc32c_, 4);
    return f;
  }

 private:
  static constexpr size_t kScratch = 256;
  void Add(const void* p, size_t n) {
    if (n > kScratch - used_) {
      Flush();
      if (n > kScratch / 2) {
        Crc(p, n);
        return;
      }
    }
    std::memcpy(scratch_ + used_, p, n);
    used_ += n;
  }
  void Flush() {
    if (used_ > 0) Crc(scratch_, used_);
    used_ = 0;
  }
  void Crc(const void* p, size_t n) {
    crc64_ = Crc64Extend(crc64_, Bytes(static_cast<const uint8_t*>(p), n));
    crc32c_ = Crc32cExtend(crc32c_, Bytes(static_cast<const uint8_t*>(p), n));
  }
  uint64_t crc64_ = 0;
  uint32_t crc32c_ = 0;
  size_t used_ = 0;
  uint8_t scratch_[kScratch];
};

void Note(ReplicaState* r, Severity s, const std::string& file, uint64_t position, const char* check,
          std::string message) {
  Problem p;
  p.severity = s;
  p.file = file;
  p.position = position;
  p.check = check;
  p.message = std::move(message);
  r->notes.push_back(std::move(p));
}

std::string Label(const std::string& partition_dir) {
  std::filesystem::path p(partition_dir);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();
  std::string parent = p.parent_path().filename().string();
  if (!parent.empty() && parent != "." && parent != "..") return parent;
  return partition_dir;
}

// The compacted view: the latest read_committed record per key (tombstones kept as deletions). The
// records' (key digest, index) pairs are bucketed by the digest's top prefix byte (one sequential pass)
// and each bucket, small enough for the cache, is sorted by (digest in KeyLess order, index); within a
// key the records are then in log order and the last one is the latest.
}  // namespace

void BuildKeyView(ReplicaState* r) {
  // The whole digest is in the entry, so sorting and grouping never go back to the records.
  struct Entry {
    uint64_t prefix, rest;
    uint32_t record;
    bool operator<(const Entry& o) const {
      if (prefix != o.prefix) return prefix < o.prefix;
      if (rest != o.rest) return __builtin_bswap64(rest) < __builtin_bswap64(o.rest);  // KeyLess: memcmp order
      return record < o.record;
    }
  };
  auto entry = [](const Digest& key, uint32_t record) {
    Entry e{KeyPrefix(key), 0, record};
    __builtin_memcpy(&e.rest, key.data() + 8, 8);
    return e;
  };
  std::vector<uint32_t> start(257, 0);
  for (const RecordDigest& d : r->records) {
    if (d.read_committed && d.has_key) ++start[(KeyPrefix(d.key) >> 56) + 1];
  }
  for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  std::vector<Entry, LargeAllocator<Entry>> a(start.back());
  std::vector<uint32_t> fill(start.begin(), start.end() - 1);
  for (uint32_t i = 0; i < r->records.size(); ++i) {
    const RecordDigest& d = r->records[i];
    if (!d.read_committed || !d.has_key) continue;
    a[fill[KeyPrefix(d.key) >> 56]++] = entry(d.key, i);
  }
  for (size_t bkt = 0; bkt + 1 < start.size(); ++bkt) std::sort(a.begin() + start[bkt], a.begin() + start[bkt + 1]);
  r->key_view.clear();
  for (size_t i = 0; i < a.size(); ++i) {
    if (i + 1 < a.size() && a[i + 1].prefix == a[i].prefix && a[i + 1].rest == a[i].rest) continue;
    const RecordDigest& d = r->records[a[i].record];  // the key's latest record
    KeyState k;
    k.offset = d.offset;
    k.record = a[i].record;
    k.tombstone = !d.has_value;
    r->key_view.emplace_back(d.key, k);
  }
}

namespace {

constexpr size_t kHugePage = size_t(2) << 20;
size_t LargeSize(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }
}  // namespace

// Blocks of 2 MiB or more are mapped and unmapped directly, not taken from malloc: a diff over many
// partitions allocates and frees thousands of 2 MiB record chunks (RecordStore), and glibc serves
// those from its heap once the first is freed (its mmap threshold rises), where freed chunks stay
// resident and fragment. Unmapping gives each partition's memory back before the next loads.
void* AllocateLarge(size_t bytes) {
  if (bytes < kHugePage) return ::operator new(bytes);
  const size_t size = LargeSize(bytes);
  // Map one huge page more than needed, then unmap the unaligned head and the tail beyond `size`.
  void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) & ~(uintptr_t(kHugePage) - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t tail = aligned + size;
  const uintptr_t end = start + size + kHugePage;
  if (end > tail) munmap(reinterpret_cast<void*>(tail), end - tail);
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, size, MADV_HUGEPAGE);  // a hint; refusal is harmless
  return p;
}

void FreeLarge(void* p, size_t bytes) {
  if (bytes < kHugePage) {
    ::operator delete(p);
  } else {
    munmap(p, LargeSize(bytes));
  }
}

bool SameRecordDigest(const RecordDigest& a, const RecordDigest& b) {
  return a.offset == b.offset && a.timestamp == b.timestamp && a.producer_id == b.producer_id && a.key == b.key &&
         a.content == b.content && a.leader_epoch == b.leader_epoch && a.txn == b.txn &&
         a.producer_epoch == b.producer_epoch && a.fate == b.fate && a.transactional == b.transactional &&
         a.control == b.control && a.has_key == b.has_key && a.has_value == b.has_value &&
         a.read_committed == b.read_committed && a.read_uncommitted == b.read_uncommitted;
}

std::shared_ptr<RecordStore::Chunk> RecordStore::NewChunk() {
  if (spare_) return std::move(spare_);
  static_assert(std::is_trivially_destructible_v<RecordDigest>);
  return std::shared_ptr<Chunk>(static_cast<Chunk*>(AllocateLarge(sizeof(Chunk))),
                                [](Chunk* c) { FreeLarge(c, sizeof(Chunk)); });
}

void RecordStore::clear() {
  chunks_.clear();
  size_ = 0;
}

void RecordStore::push_back(const RecordDigest& d) {
  if (size_ == capacity_) capacity_ = size_ + std::max<size_t>(size_, 1);  // std::vector's growth
  const size_t k = size_ >> kChunkShift, j = size_ & (kChunk - 1);
  if (k == chunks_.size()) {
    chunks_.push_back(NewChunk());
  } else if (chunks_[k].use_count() > 1) {
    // Appending to a shared, partly filled chunk (after Seal): a private copy first.
    std::shared_ptr<Chunk> c = NewChunk();
    std::memcpy(c->bytes, chunks_[k]->bytes, j * sizeof(RecordDigest));
    chunks_[k] = std::move(c);
  }
  new (&chunks_[k]->At(j)) RecordDigest(d);
  ++size_;
  if ((size_ & (kChunk - 1)) == 0) ShareLastIfSame();
}

void RecordStore::ShareLastIfSame() {
  if (reference_ == nullptr || chunks_.empty()) return;
  const size_t k = chunks_.size() - 1;
  const size_t first = k << kChunkShift;
  const size_t n = size_ - first;
  if (reference_->chunks_.size() <= k || std::min(reference_->size_ - first, kChunk) != n) return;
  const Chunk& mine = *chunks_[k];
  const Chunk& theirs = *reference_->chunks_[k];
  if (&mine == &theirs) return;
  for (size_t j = 0; j < n; ++j) {
    const RecordDigest& a = mine.At(j);
    const RecordDigest& b = theirs.At(j);
    // A transactional data record's fate is set after the load (from its transaction, through
    // Mutable, which copies the chunk when the reference's differs): compared without it.
    const bool fate_pending = a.transactional && !a.control && a.txn >= 0 && a.fate == TxnFate::kNone;
    if (fate_pending) {
      RecordDigest c = b;
      c.fate = TxnFate::kNone;
      if (!SameRecordDigest(a, c)) return;
    } else if (!SameRecordDigest(a, b)) {
      return;
    }
  }
  if (chunks_[k].use_count() == 1) spare_ = std::move(chunks_[k]);
  chunks_[k] = reference_->chunks_[k];
}

void RecordStore::Seal() {
  if ((size_ & (kChunk - 1)) != 0) ShareLastIfSame();
  reference_ = nullptr;
}

RecordDigest& RecordStore::Mutable(size_t i) {
  std::shared_ptr<Chunk>& c = chunks_[i >> kChunkShift];
  if (c.use_count() > 1) {
    std::shared_ptr<Chunk> own = NewChunk();
    const size_t first = (i >> kChunkShift) << kChunkShift;
    std::memcpy(own->bytes, c->bytes, std::min(size_ - first, kChunk) * sizeof(RecordDigest));
    c = std::move(own);
  }
  return c->At(i & (kChunk - 1));
}

size_t RecordStore::SharedChunks() const {
  return size_t(std::count_if(chunks_.begin(), chunks_.end(), [](const auto& c) { return c.use_count() > 1; }));
}

Fingerprint ContentDigest(int64_t timestamp, bool control, const std::optional<Bytes>& key,
                          const std::optional<Bytes>& value, RecordHeaders headers) {
  ContentHasher h;
  h.AddInt(timestamp);
  h.AddInt(control ? 1 : 0);
  h.AddOptional(key);
  h.AddOptional(value);
  for (const RecordHeader& hd : headers) {
    h.AddOptional(std::optional<Bytes>(hd.key));
    h.AddOptional(hd.value);
  }
  return h.End();
}

const char* TxnFateName(TxnFate f) {
  switch (f) {
    case TxnFate::kNone: return "none";
    case TxnFate::kCommitted: return "committed";
    case TxnFate::kAborted: return "aborted";
    case TxnFate::kOpen: return "open";
  }
  return "?";
}

const char* MarkerTypeName(MarkerType t) {
  switch (t) {
    case MarkerType::kCommit: return "COMMIT";
    case MarkerType::kAbort: return "ABORT";
    case MarkerType::kEmpty: return "empty control batch";
    case MarkerType::kOther: return "control";
  }
  return "?";
}

int64_t ReplicaState::FindRecord(int64_t offset) const {
  auto it = std::lower_bound(records.begin(), records.end(), offset,
                             [](const RecordDigest& r, int64_t o) { return r.offset < o; });
  if (it == records.end() || it->offset != offset) return -1;
  return it - records.begin();
}

bool ReplicaState::HoldsOffset(int64_t offset) const {
  auto it = std::lower_bound(batches.begin(), batches.end(), offset,
                             [](const BatchSpan& b, int64_t o) { return b.last_offset < o; });
  return it != batches.end() && it->base_offset <= offset;
}

const Marker* ReplicaState::NextMarker(int64_t producer_id, int64_t after) const {
  auto it =
      std::upper_bound(markers.begin(), markers.end(), after, [](int64_t o, const Marker& m) { return o < m.offset; });
  for (; it != markers.end(); ++it) {
    if (it->producer_id == producer_id) return &*it;
  }
  return nullptr;
}

const OffsetGap* ReplicaState::GapAtOrAfter(int64_t offset) const {
  // Gaps are found in log order and do not overlap, so their ends ascend.
  auto it = std::lower_bound(gaps.begin(), gaps.end(), offset, [](const OffsetGap& g, int64_t o) { return g.to <= o; });
  return it == gaps.end() ? nullptr : &*it;
}

bool ReplicaState::Covers(int64_t offset) const {
  if (offset < log_start_offset || offset >= log_end_offset) return false;
  for (const DamagedRange& d : damaged) {
    if (offset >= d.from && offset < d.to) return false;
  }
  return true;
}

bool ReplicaState::DamagedAfter(int64_t offset) const {
  return std::any_of(damaged.begin(), damaged.end(), [&](const DamagedRange& d) { return d.to > offset; });
}

const KeyState* ReplicaState::Key(const Digest& key) const {
  auto it = std::lower_bound(key_view.begin(), key_view.end(), key,
                             [](const std::pair<Digest, KeyState>& e, const Digest& k) { return KeyLess(e.first, k); });
  return it == key_view.end() || it->first != key ? nullptr : &it->second;
}

size_t ReplicaState::ReadCommittedCount() const {
  return std::count_if(records.begin(), records.end(), [](const RecordDigest& r) { return r.read_committed; });
}
size_t ReplicaState::ReadUncommittedCount() const {
  return std::count_if(records.begin(), records.end(), [](const RecordDigest& r) { return r.read_uncommitted; });
}

// A file of the replica exists but cannot be read (`why`: "<path>: <reason>"). Its offsets are unknown,
// not absent: a replica loaded without them would look like one that lost them (or, as a healthy
// replica, make the others look diverged), so it is not loaded at all.
static bool Untrustworthy(const std::string& why, std::string* error) {
  *error = why + " (a file of the replica that cannot be read: the replica is not used)";
  return false;
}

uint64_t ReplicaStateBytes(const ReplicaState& r) {
  return uint64_t(r.records.capacity()) * sizeof(RecordDigest) +
         uint64_t(r.records.size()) * sizeof(decltype(r.key_view)::value_type) +
         uint64_t(r.batches.capacity()) * sizeof(BatchSpan) + uint64_t(r.markers.capacity()) * sizeof(Marker) +
         uint64_t(r.txns.capacity()) * sizeof(Txn);
}

namespace {

// Whether `more` records fit in the budget (growing the vector may double its capacity); else the
// error says where the load stopped and by how much the budget falls short.
bool WithinBudget(const ReplicaState& r, const ReplicaOptions& options, size_t more, const std::string& file,
                  uint64_t position, std::string* error) {
  if (options.max_state_bytes == 0) return true;
  uint64_t need =
      ReplicaStateBytes(r) + uint64_t(more) * (sizeof(RecordDigest) + sizeof(decltype(r.key_view)::value_type));
  if (r.records.size() + more > r.records.capacity()) {
    need += uint64_t(std::max(2 * r.records.capacity(), r.records.size() + more)) * sizeof(RecordDigest);
  }
  if (need <= options.max_state_bytes) return true;
  *error = file + ": position " + std::to_string(position) + ": the state of replica " + r.path + " (" +
           std::to_string(r.records.size() + more) + " records in the first " + std::to_string(r.batches.size()) +
           " batches) needs " + std::to_string((need + (1 << 20) - 1) >> 20) + " MiB, more than its " +
           std::to_string(options.max_state_bytes >> 20) + " MiB share of the memory budget (" +
           std::to_string(sizeof(RecordDigest) + sizeof(decltype(r.key_view)::value_type)) +
           " bytes per record; --memory-budget raises it)";
  return false;
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): diff's visitor over LoadedLog::ForEachBatch: per batch, its digests, markers, transactions and consumer views
bool LoadReplica(const std::string& partition_dir, const ReplicaOptions& options, ReplicaState* out,
                 std::string* error) {
  ReplicaState& r = *out;
  r = ReplicaState();
  r.path = partition_dir;
  r.label = Label(partition_dir);

  // The partition as a broker loads it (partition/loaded_log.h).
  LoadOptions lo;
  lo.now_ms = options.now_ms;
  lo.producer_id_expiration_ms = options.producer_id_expiration_ms;
  lo.remove_expired_producers = true;
  lo.env = options.env;
  r.env = options.env;
  LoadedLog log;
  {
    CollectingSink sink;
    bool unreadable = false;
    if (!LoadedLog::Open(partition_dir, lo, &log, &sink, error, &unreadable))
      return unreadable ? Untrustworthy(*error, error) : false;
    r.notes = std::move(sink.problems);
  }
  r.tp = log.tp;
  r.topic_id = log.topic_id;
  r.cluster_id = log.cluster_id;
  r.node_id = log.node_id;
  r.log_start_offset = log.log_start_offset;
  r.log_end_offset = log.log_end_offset;
  r.high_watermark = log.high_watermark;
  r.high_watermark_from_checkpoint = log.high_watermark_from_checkpoint;
  r.last_stable_offset = log.last_stable_offset;
  r.cleaner_checkpoint = log.cleaner_checkpoint;
  r.snapshot_offset = log.snapshot_offset;
  for (const auto& [offset, path] : log.snapshot_files) r.snapshot_offsets.push_back(offset);
  r.txn_index = log.aborted_txns;
  for (const LoadedLog::FilePosition& f : log.aborted_txn_sources) r.txn_index_sources.push_back({f.file, f.position});
  for (const AbortedTxn& e : r.txn_index) {
    r.txn_index_max_last.push_back(
        std::max(e.last_offset, r.txn_index_max_last.empty() ? INT64_MIN : r.txn_index_max_last.back()));
  }
  const std::vector<SegmentInfo>& segments = log.segments;
  for (const SegmentInfo& s : segments) r.segment_files.push_back(s.log_path);
  r.segment_mtimes_ms.assign(segments.size(), 0);
  const ProducerStateManager& loaded = log.producer_state;
  ProducerStateOptions pso;
  pso.producer_id_expiration_ms = options.producer_id_expiration_ms;
  for (const auto& [first, meta] : loaded.ongoing_txns()) {
    OpenTxn t;
    t.producer_id = meta.producer_id;
    t.first_offset = first;
    if (const ProducerStateEntry* e = loaded.Find(meta.producer_id)) {
      t.producer_epoch = e->producer_epoch;
      t.last_offset = e->last_data_offset();
      t.last_timestamp = e->last_timestamp;
    }
    r.open_txns.push_back(t);
  }
  r.producers.reserve(loaded.producers().size());
  for (const auto& [pid, e] : loaded.producers()) {
    r.producers.push_back(LoadedProducer{pid, e.producer_epoch, e.coordinator_epoch});
  }

  // One pass over the log: digests, markers, transactions by replay from the log start, consumer views.
  ProducerStateManager replay(pso);
  replay.TruncateFullyAndStartAt(segments.empty() ? 0 : segments.front().base_offset);
  std::map<std::pair<int64_t, int64_t>, int32_t> txn_by_first;  // (pid, first offset) -> txns index
  ReadCommittedFilter read_committed(r.txn_index);
  const ConsumerBounds bounds = ConsumerBounds::Of(log);
  RecordDecoder decoder;
  std::vector<Bytes> keys;  // one batch's keys, hashed together (Md5Many)
  std::vector<Digest> key_digests;
  const ReplicaState* ref = options.reference;
  if (ref != nullptr) r.records.ShareWith(&ref->records);  // chunks equal to the reference's are shared
  size_t ref_batch = 0;                                    // cursor into ref->batches (both logs ascend by offset)
  if (ref != nullptr &&
      (options.max_state_bytes == 0 || ref->records.size() * sizeof(RecordDigest) <= options.max_state_bytes)) {
    r.records.reserve(ref->records.size());
  }
  // Without a reference, capacity follows the records per byte seen so far (one reallocation instead of
  // doubling: less copying, and no capacity left unused at the end).
  std::vector<uint64_t> segment_bytes;
  uint64_t total_bytes = 0;
  for (const SegmentInfo& s : segments) {
    InputStat st = StatInput(s.log_path);  // real or in a capture (segment_reader/capture.h)
    segment_bytes.push_back(st.kind == InputKind::kFile ? st.size : 0);
    total_bytes += segment_bytes.back();
  }
  uint64_t bytes_done = 0;
  int64_t prev_end = -1;
  // Damage stops the segment: its remaining offsets are unreadable. In the last segment that is what
  // Kafka's recovery truncates (the log end moves back, already reflected by the producer-state load);
  // in an earlier one the range up to the next segment is marked damaged and never compared.
  auto damage = [&](size_t si, uint64_t position, const std::string& why) {
    if (si + 1 >= segments.size()) return;
    DamagedRange d;
    d.from = std::max(prev_end, segments[si].base_offset);
    d.to = segments[si + 1].base_offset;
    d.file = segments[si].log_path;
    d.position = position;
    d.why = why;
    if (d.to > d.from) r.damaged.push_back(d);
  };
  // Streamed with pread(2) through one reused buffer (LoadedLog::ForEachBatch): on this VM mapping a page
  // costs more than reading it, and each batch is used once, right away.
  CollectingSink sink;
  bool damaged = false, over_budget = false;
  size_t errors_seen = 0;  // sink.problems[0..errors_seen) hold no error of this segment
  LoadedLog::SegmentVisitor pass;
  pass.begin = [&](size_t si, const LogReader& reader) {
    if (ref == nullptr && bytes_done > 0 && !r.records.empty()) {
      double per_byte = double(r.records.size()) / double(bytes_done);
      size_t want = size_t(per_byte * double(total_bytes) * 1.02) + 1024;
      if (r.records.capacity() < r.records.size() + size_t(per_byte * double(segment_bytes[si]))) {
        want = std::max(want, r.records.size() + size_t(per_byte * double(segment_bytes[si])) + 1024);
        // Never reserve past the budget: WithinBudget reports the replica that needs more.
        if (options.max_state_bytes > 0) want = std::min<size_t>(want, options.max_state_bytes / sizeof(RecordDigest));
        r.records.reserve(std::max(want, r.records.size()));
      }
    }
    bytes_done += segment_bytes[si];
    r.segment_mtimes_ms[si] = reader.file_mtime_ms();
    damaged = false;
  };
  pass.end = [&](size_t si, const LogReader& reader) {
    if (!damaged && reader.end() != LogEnd::kEndOfData)
      damage(si, reader.valid_bytes(), "segment ends in a torn or corrupt tail");
    errors_seen = sink.problems.size();
  };
  // NOLINTNEXTLINE(readability-function-cognitive-complexity): one batch of diff's pass: framing, digests, markers, transactions, consumer views
  pass.batch = [&](size_t si, const BatchView& batch) {
    const std::string& path = segments[si].log_path;
    const int64_t next_base = si + 1 < segments.size() ? segments[si + 1].base_offset : INT64_MAX;
    bool framing_error = false;
    for (; errors_seen < sink.problems.size(); ++errors_seen) {
      if (sink.problems[errors_seen].severity == Severity::kError) {
        framing_error = true;
        break;
      }
    }
    if (!batch.header.crc_valid || framing_error) {
      damage(si, batch.header.position, !batch.header.crc_valid ? "batch CRC mismatch" : sink.problems.back().message);
      damaged = true;
      return LoadedLog::Step::kNextSegment;
    }
    BatchSpan span;
    span.size = uint32_t(batch.bytes.size());
    span.crc = batch.header.crc;
    span.fingerprint = Crc64Extend(0, batch.bytes);
    // The reference's batch with the same bytes, if any: its records' digests are this batch's.
    const BatchSpan* same = nullptr;
    if (ref != nullptr && batch.header.magic >= 2 && !batch.header.is_control) {
      const std::vector<BatchSpan>& rb = ref->batches;
      if (ref_batch >= rb.size() || rb[ref_batch].base_offset > batch.header.base_offset) ref_batch = 0;
      ref_batch = std::lower_bound(rb.begin() + ref_batch, rb.end(), batch.header.base_offset,
                                   [](const BatchSpan& b, int64_t o) { return b.base_offset < o; }) -
                  rb.begin();
      if (ref_batch < rb.size()) {
        const BatchSpan& c = rb[ref_batch];
        if (c.digested && !c.control && c.base_offset == batch.header.base_offset && c.size == span.size &&
            c.crc == span.crc && c.fingerprint == span.fingerprint) {
          same = &c;
        }
      }
    }
    size_t problems_before = sink.problems.size();
    // Transactions only (klf lso): a v2 data batch's header says all that is needed of it.
    const bool header_only = options.transactions_only && batch.header.magic >= 2 && !batch.header.is_control;
    bool decoded = same != nullptr || (!header_only && decoder.Decode(batch, path, &sink));
    const BatchHeader& h = same == nullptr && decoded ? decoder.header() : batch.header;
    if (h.base_offset < std::max<int64_t>(prev_end, 0) || h.last_offset >= next_base) {
      damage(si, h.position,
             "batch offsets " + std::to_string(h.base_offset) + ".." + std::to_string(h.last_offset) + " out of order");
      damaged = true;
      return LoadedLog::Step::kNextSegment;
    }
    span.base_offset = h.base_offset;
    span.last_offset = h.last_offset;
    span.producer_id = h.producer_id;
    span.producer_epoch = h.producer_epoch;
    span.transactional = h.is_transactional;
    span.control = h.is_control;
    span.records = same != nullptr ? same->records
                   : header_only   ? std::max(h.record_count, 0)
                                   : int32_t(decoder.records().size());
    span.segment = si;
    span.position = h.position;
    span.first_record = uint32_t(r.records.size());
    span.digested = decoded && sink.problems.size() == problems_before;
    if (prev_end >= 0 && span.base_offset > prev_end) r.gaps.push_back({prev_end, span.base_offset});
    if (prev_end < 0 && span.base_offset > r.log_start_offset) r.gaps.push_back({r.log_start_offset, span.base_offset});
    prev_end = std::max(prev_end, JavaAdd(span.last_offset, 1));
    if (!options.transactions_only) r.batches.push_back(span);

    // Transaction structure (replay from the log start).
    BatchUpdate u = replay.Apply(batch, path, nullptr);
    int32_t txn_index = -1;
    if (h.magic >= 2 && h.has_producer_id()) {
      if (h.is_control) {
        Marker m;
        m.offset = h.base_offset;
        m.producer_id = h.producer_id;
        m.producer_epoch = h.producer_epoch;
        m.type = MarkerType::kEmpty;
        if (decoded && !decoder.records().empty()) {
          m.type = MarkerType::kOther;
          if (auto c = ControlBatchMarker(decoder.records())) {
            if (c->type == ControlType::kCommit) m.type = MarkerType::kCommit;
            if (c->type == ControlType::kAbort) m.type = MarkerType::kAbort;
            m.coordinator_epoch = c->coordinator_epoch;
          }
        }
        r.markers.push_back(m);
        if (u.completed) {
          auto it = txn_by_first.find({u.completed->producer_id, u.completed->first_offset});
          if (it != txn_by_first.end()) {
            Txn& t = r.txns[it->second];
            t.marker_offset = u.completed->last_offset;
            t.fate = u.completed->is_aborted ? TxnFate::kAborted : TxnFate::kCommitted;
            txn_by_first.erase(it);
          }
        }
      } else if (h.is_transactional) {
        const ProducerStateEntry* e = replay.Find(h.producer_id);
        if (e && e->current_txn_first_offset) {
          auto key = std::make_pair(h.producer_id, *e->current_txn_first_offset);
          auto it = txn_by_first.find(key);
          if (it == txn_by_first.end()) {
            Txn t;
            t.producer_id = h.producer_id;
            t.producer_epoch = h.producer_epoch;
            t.first_offset = *e->current_txn_first_offset;
            it = txn_by_first.emplace(key, int32_t(r.txns.size())).first;
            r.txns.push_back(t);
          }
          txn_index = it->second;
          r.txns[txn_index].last_data_offset = h.last_offset;
          r.txns[txn_index].producer_epoch = h.producer_epoch;
        }
      }
    }

    // read_committed as CompletedFetch filters it (aborted list from the .txnindex, ABORT markers).
    const bool abort_marker = h.is_control && !r.markers.empty() && r.markers.back().offset == h.base_offset &&
                              r.markers.back().type == MarkerType::kAbort;
    const bool batch_aborted = read_committed.SkipsBatch(h, abort_marker);

    if (options.transactions_only) {
      // The newest record timestamp (the default clock) from the headers: a batch's maxTimestamp.
      if (header_only || decoded) r.max_timestamp = std::max(r.max_timestamp, h.max_timestamp);
      return LoadedLog::Step::kNext;
    }
    if (!decoded) return LoadedLog::Step::kNext;
    auto consumers = [&](RecordDigest& d) {
      d.read_uncommitted = !h.is_control && bounds.ReadUncommitted(d.offset);
      d.read_committed = !h.is_control && bounds.BelowLastStable(d.offset) && !batch_aborted;
      r.max_timestamp = std::max(r.max_timestamp, d.timestamp);
    };
    if (same != nullptr) {
      if (!WithinBudget(r, options, size_t(same->records), path, h.position, error)) {
        over_budget = true;
        return LoadedLog::Step::kStop;
      }
      for (uint32_t i = same->first_record; i < same->first_record + uint32_t(same->records); ++i) {
        RecordDigest d = ref->records[i];
        d.txn = txn_index;  // not a control batch
        d.fate = TxnFate::kNone;
        consumers(d);
        r.records.push_back(d);
      }
      return LoadedLog::Step::kNext;
    }
    if (!WithinBudget(r, options, decoder.records().size(), path, h.position, error)) {
      over_budget = true;
      return LoadedLog::Step::kStop;
    }
    keys.clear();
    for (const Record& rec : decoder.records())
      if (rec.key) keys.push_back(*rec.key);
    key_digests.resize(keys.size());
    Md5Many(keys.data(), keys.size(), key_digests.data());
    size_t next_key = 0;
    for (const Record& rec : decoder.records()) {
      RecordDigest d;
      d.offset = rec.offset;
      d.timestamp = rec.timestamp;
      d.producer_id = h.producer_id;
      d.producer_epoch = h.producer_epoch;
      d.leader_epoch = h.partition_leader_epoch;
      d.transactional = h.is_transactional;
      d.control = h.is_control;
      d.has_key = rec.key.has_value();
      d.has_value = rec.value.has_value();
      d.txn = h.is_control ? -1 : txn_index;
      if (rec.key) d.key = key_digests[next_key++];
      d.content = ContentDigest(rec.timestamp, h.is_control, rec.key, rec.value, decoder.headers(rec));
      consumers(d);
      r.records.push_back(d);
    }
    return LoadedLog::Step::kNext;
  };
  if (!log.ForEachBatch(pass, &sink, error)) return Untrustworthy(*error, error);
  if (over_budget) return false;
  for (Problem& p : sink.problems) r.notes.push_back(std::move(p));
  r.records.Seal();
  if (options.transactions_only) return true;
  // Records of a transaction take its fate; transactions still open at the end stay open.
  for (size_t i = 0; i < r.records.size(); ++i) {
    const RecordDigest& d = r.records[i];
    if (d.control || !d.transactional) continue;
    if (d.txn < 0) continue;
    Txn& t = r.txns[d.txn];
    if (d.fate != t.fate) r.records.Mutable(i).fate = t.fate;
    ++t.records;
  }
  // A replica whose records match the reference's one for one in everything the view depends on has
  // the reference's view (record indices included): copy it instead of sorting again.
  auto same_view_inputs = [&]() {
    if (ref == nullptr || ref->records.size() != r.records.size()) return false;
    for (size_t i = 0; i < r.records.size(); ++i) {
      const RecordDigest& x = r.records[i];
      const RecordDigest& y = ref->records[i];
      if (x.offset != y.offset || x.read_committed != y.read_committed || x.has_key != y.has_key ||
          x.has_value != y.has_value || x.key != y.key) {
        return false;
      }
    }
    return true;
  };
  if (same_view_inputs()) {
    r.key_view = ref->key_view;
  } else {
    BuildKeyView(&r);
  }
  // The markers' verdict and the .txnindex (what consumers get) must agree on every record a
  // read_committed consumer can reach; a mismatch is noted once per transaction.
  std::set<int32_t> mismatched;
  for (const RecordDigest& d : r.records) {
    if (d.control || !d.transactional || d.txn < 0 || d.offset >= r.last_stable_offset) continue;
    if (d.offset < r.log_start_offset) continue;
    bool by_markers = d.fate == TxnFate::kCommitted;
    if (by_markers != d.read_committed && mismatched.insert(d.txn).second) {
      const Txn& t = r.txns[d.txn];
      Note(&r, Severity::kWarning, partition_dir, 0, "txnindex",
           "transaction of producer " + std::to_string(t.producer_id) + " from offset " +
               std::to_string(t.first_offset) + " is " + TxnFateName(t.fate) +
               " by its marker but the .txnindex makes read_committed consumers " +
               (d.read_committed ? "receive" : "skip") + " it (offset " + std::to_string(d.offset) + ")");
    }
  }
  return true;
}

bool LoadReplicas(const std::vector<std::string>& partition_dirs, const ReplicaOptions& options,
                  std::vector<ReplicaState>* out, std::string* error, unsigned threads) {
  out->clear();
  out->resize(partition_dirs.size());
  if (partition_dirs.empty()) return true;
  if (!LoadReplica(partition_dirs[0], options, &(*out)[0], error)) return false;
  ReplicaOptions others = options;
  others.reference = &(*out)[0];
  size_t n = partition_dirs.size();
  std::vector<std::string> errors(n);
  std::vector<char> ok(n, 1);
  std::atomic<size_t> next{1};
  auto work = [&]() {
    for (size_t i; (i = next.fetch_add(1)) < n;) ok[i] = LoadReplica(partition_dirs[i], others, &(*out)[i], &errors[i]);
  };
  if (threads == 0) {
    // The CPUs this process may run on (taskset), not the machine's: extra threads on one CPU only add
    // their loads' transient memory.
    cpu_set_t set;
    CPU_ZERO(&set);
    threads = sched_getaffinity(0, sizeof(set), &set) == 0 ? unsigned(CPU_COUNT(&set)) : 1u;
    threads = std::max(1u, threads);
  }
  size_t extra = std::min<size_t>(threads, n - 1);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < extra; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (size_t i = 1; i < n; ++i) {
    if (!ok[i]) {
      *error = errors[i];
      return false;
    }
  }
  return true;
}

std::optional<RecordBytes> ReadRecordBytes(const ReplicaState& replica, int64_t offset) {
  if (replica.from_digest) return std::nullopt;
  auto it = std::lower_bound(replica.batches.begin(), replica.batches.end(), offset,
                             [](const BatchSpan& b, int64_t o) { return b.last_offset < o; });
  if (it == replica.batches.end() || it->base_offset > offset) return std::nullopt;
  std::string error;
  auto file = MappedFile::Open(replica.segment_files[it->segment], &error, replica.env);
  if (!file || it->position >= file->size()) return std::nullopt;
  NullSink quiet;
  LogReader reader(file->path(), file->data().subspan(it->position), &quiet);
  BatchView batch;
  if (!reader.Next(&batch)) return std::nullopt;
  RecordDecoder decoder;
  if (!decoder.Decode(batch, file->path(), &quiet)) return std::nullopt;
  for (const Record& rec : decoder.records()) {
    if (rec.offset != offset) continue;
    RecordBytes out;
    if (rec.key) out.key = std::string(AsStringView(*rec.key));
    if (rec.value) out.value = std::string(AsStringView(*rec.value));
    out.timestamp = rec.timestamp;
    return out;
  }
  return std::nullopt;
}

}  // namespace klf
