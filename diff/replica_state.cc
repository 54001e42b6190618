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
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
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
  r->notes.push_back(Problem{s, file, position, check, std::move(message)});
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
void* AllocateLarge(size_t bytes, bool huge_pages) {
  if (bytes < kHugePage) return ::operator new(bytes);
  const size_t size = LargeSize(bytes);
  if (!huge_pages) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
  }
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

namespace {

// Record stores' first chunks (mapped without the huge-page advice), kept for the next store instead of
// unmapped: a diff over thousands of small partitions maps and frees one per replica, and every munmap in
// a process with several threads interrupts the others to flush their TLBs (docs/PERFORMANCE.md). At
// most kKept are kept (16 MiB of address space; resident only where earlier records were written).
class FirstChunkPool {
 public:
  void* Take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!kept_.empty()) {
        void* p = kept_.back();
        kept_.pop_back();
        return p;
      }
    }
    return AllocateLarge(bytes, /*huge_pages=*/false);
  }
  void Give(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (kept_.size() < kKept) {
        kept_.push_back(p);
        return;
      }
    }
    FreeLarge(p, bytes);
  }

 private:
  static constexpr size_t kKept = 8;
  std::mutex mu_;
  std::vector<void*> kept_;
};

FirstChunkPool& FirstChunks() {
  static FirstChunkPool* pool = new FirstChunkPool;  // never destroyed: chunks may be freed at exit
  return *pool;
}

}  // namespace

std::shared_ptr<RecordStore::Chunk> RecordStore::NewChunk(size_t k) {
  if (spare_) return std::move(spare_);
  static_assert(std::is_trivially_destructible_v<RecordDigest>);
  if (k == 0) {
    return std::shared_ptr<Chunk>(static_cast<Chunk*>(FirstChunks().Take(sizeof(Chunk))),
                                  [](Chunk* c) { FirstChunks().Give(c, sizeof(Chunk)); });
  }
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
    chunks_.push_back(NewChunk(k));
  } else if (chunks_[k].use_count() > 1) {
    // Appending to a shared, partly filled chunk (after Seal): a private copy first.
    std::shared_ptr<Chunk> c = NewChunk(k);
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
    std::shared_ptr<Chunk> own = NewChunk(i >> kChunkShift);
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

void ReplicaState::IndexAbortedTxns() {
  txn_index_max_last.clear();
  for (const AbortedTxn& e : aborted_txns)
    txn_index_max_last.push_back(
        std::max(e.last_offset, txn_index_max_last.empty() ? INT64_MIN : txn_index_max_last.back()));
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

// What the load (LoadedLog) already knows: the offsets, checkpoints, snapshots, `.txnindex` and the
// producer state at the log end.
void CopyLoaded(const LoadedLog& log, ReplicaState* r) {
  static_cast<LoadedFacts&>(*r) = log;
  r->high_watermark_from_checkpoint = log.high_watermark_checkpoint.has_value();
  for (const auto& [offset, path] : log.snapshot_files) r->snapshot_offsets.push_back(offset);
  r->IndexAbortedTxns();
  for (const SegmentInfo& s : log.segments) r->segment_files.push_back(s.log_path);
  r->segment_mtimes_ms.assign(log.segments.size(), 0);
  const ProducerStateManager& loaded = log.producer_state;
  for (const auto& [first, meta] : loaded.ongoing_txns()) {
    OpenTxn t;
    t.producer_id = meta.producer_id;
    t.first_offset = first;
    if (const ProducerStateEntry* e = loaded.Find(meta.producer_id)) {
      t.producer_epoch = e->producer_epoch;
      t.last_offset = e->last_data_offset();
      t.last_timestamp = e->last_timestamp;
    }
    r->open_txns.push_back(t);
  }
  r->producers.reserve(loaded.producers().size());
  for (const auto& [pid, e] : loaded.producers()) {
    r->producers.push_back(LoadedProducer{pid, e.producer_epoch, e.coordinator_epoch});
  }
}

// diff's pass over the batches (a visitor of LoadedLog::ForEachBatch): each batch's span, its records'
// digests and consumer views, the markers, and the transactions by replay from the log start.
class ReplicaPass {
 public:
  ReplicaPass(const LoadedLog& log, const ReplicaOptions& options, ReplicaState* r)
      : log_(log),
        segments_(log.segments),
        options_(options),
        r_(*r),
        ref_(options.reference),
        replay_(ProducerStateOptions{options.producer_id_expiration_ms}),
        read_committed_(r->aborted_txns),
        bounds_(ConsumerBounds::Of(log)) {
    replay_.TruncateFullyAndStartAt(segments_.empty() ? 0 : segments_.front().base_offset);
    if (ref_ != nullptr) r_.records.ShareWith(&ref_->records);  // chunks equal to the reference's are shared
    if (ref_ != nullptr &&
        (options.max_state_bytes == 0 || ref_->records.size() * sizeof(RecordDigest) <= options.max_state_bytes)) {
      r_.records.reserve(ref_->records.size());
    }
    for (const SegmentInfo& s : segments_) {
      InputStat st = StatInput(s.log_path);  // real or in a capture (segment_reader/capture.h)
      segment_bytes_.push_back(st.kind == InputKind::kFile ? st.size : 0);
      total_bytes_ += segment_bytes_.back();
    }
  }

  // Streams the log through the pass. False with *error: a segment could not be read (the replica is
  // not used) or the memory budget is exceeded.
  bool Run(std::string* error) {
    LoadedLog::SegmentVisitor v;
    v.begin = [this](size_t si, LogReader& reader) { BeginSegment(si, reader); };
    v.batch = [this, error](size_t si, const BatchView& b) { return Batch(si, b, error); };
    v.end = [this](size_t si, const LogReader& reader) { EndSegment(si, reader); };
    if (!log_.ForEachBatch(v, &sink_, error, ReadOptions(), options_.rider)) return Untrustworthy(*error, error);
    if (over_budget_) return false;
    for (Problem& p : sink_.problems) r_.notes.push_back(std::move(p));
    r_.records.Seal();
    return true;
  }

 private:
  // Without a reference, capacity follows the records per byte seen so far (one reallocation instead of
  // doubling: less copying, and no capacity left unused at the end).
  void BeginSegment(size_t si, const LogReader& reader) {
    if (ref_ == nullptr && bytes_done_ > 0 && !r_.records.empty()) {
      const double per_byte = double(r_.records.size()) / double(bytes_done_);
      const size_t this_segment = size_t(per_byte * double(segment_bytes_[si]));
      size_t want = size_t(per_byte * double(total_bytes_) * 1.02) + 1024;
      if (r_.records.capacity() < r_.records.size() + this_segment) {
        want = std::max(want, r_.records.size() + this_segment + 1024);
        // Never reserve past the budget: WithinBudget reports the replica that needs more.
        if (options_.max_state_bytes > 0)
          want = std::min<size_t>(want, options_.max_state_bytes / sizeof(RecordDigest));
        r_.records.reserve(std::max(want, r_.records.size()));
      }
    }
    bytes_done_ += segment_bytes_[si];
    r_.segment_mtimes_ms[si] = reader.file_mtime_ms();
    damaged_ = false;
  }

  void EndSegment(size_t si, const LogReader& reader) {
    if (!damaged_ && reader.end() != LogEnd::kEndOfData)
      Damage(si, reader.valid_bytes(), "segment ends in a torn or corrupt tail");
    errors_seen_ = sink_.problems.size();
  }

  // Damage stops the segment: its remaining offsets are unreadable. In the last segment that is what
  // Kafka's recovery truncates (the log end moves back, already reflected by the producer-state load);
  // in an earlier one the range up to the next segment is marked damaged and never compared.
  void Damage(size_t si, uint64_t position, const std::string& why) {
    damaged_ = true;
    if (si + 1 >= segments_.size()) return;
    DamagedRange d;
    d.from = std::max(prev_end_, segments_[si].base_offset);
    d.to = segments_[si + 1].base_offset;
    d.file = segments_[si].log_path;
    d.position = position;
    d.why = why;
    if (d.to > d.from) r_.damaged.push_back(d);
  }

  // Whether the reader reported an error since the segment's last batch (problems of earlier batches of
  // the segment were looked at already).
  bool FramingError() {
    for (; errors_seen_ < sink_.problems.size(); ++errors_seen_)
      if (sink_.problems[errors_seen_].severity == Severity::kError) return true;
    return false;
  }

  // The reference's batch with the same bytes, if any: its records' digests are this batch's.
  const BatchSpan* SameInReference(const BatchView& batch, const BatchSpan& span) {
    if (ref_ == nullptr || batch.header.magic < 2 || batch.header.is_control) return nullptr;
    const std::vector<BatchSpan>& rb = ref_->batches;
    if (ref_batch_ >= rb.size() || rb[ref_batch_].base_offset > batch.header.base_offset) ref_batch_ = 0;
    ref_batch_ = std::lower_bound(rb.begin() + ref_batch_, rb.end(), batch.header.base_offset,
                                  [](const BatchSpan& b, int64_t o) { return b.base_offset < o; }) -
                 rb.begin();
    if (ref_batch_ >= rb.size()) return nullptr;
    const BatchSpan& c = rb[ref_batch_];
    const bool same = c.digested && !c.control && c.base_offset == batch.header.base_offset && c.size == span.size &&
                      c.crc == span.crc && c.fingerprint == span.fingerprint;
    return same ? &c : nullptr;
  }

  LoadedLog::Step Batch(size_t si, const BatchView& batch, std::string* error) {
    const std::string& path = segments_[si].log_path;
    const int64_t next_base = si + 1 < segments_.size() ? segments_[si + 1].base_offset : INT64_MAX;
    if (!batch.header.crc_valid || FramingError()) {
      Damage(si, batch.header.position, !batch.header.crc_valid ? "batch CRC mismatch" : sink_.problems.back().message);
      return LoadedLog::Step::kNextSegment;
    }
    BatchSpan span;
    span.size = uint32_t(batch.bytes.size());
    span.crc = batch.header.crc;
    span.fingerprint = Crc64Extend(0, batch.bytes);
    const BatchSpan* same = SameInReference(batch, span);
    const size_t problems_before = sink_.problems.size();
    // Transactions only (klf lso): a v2 data batch's header says all that is needed of it.
    const bool header_only = options_.transactions_only && batch.header.magic >= 2 && !batch.header.is_control;
    const bool decoded = same != nullptr || (!header_only && decoder_.Decode(batch, path, &sink_));
    const BatchHeader& h = same == nullptr && decoded ? decoder_.header() : batch.header;
    if (h.base_offset < std::max<int64_t>(prev_end_, 0) || h.last_offset >= next_base) {
      Damage(si, h.position,
             "batch offsets " + std::to_string(h.base_offset) + ".." + std::to_string(h.last_offset) + " out of order");
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
                                   : int32_t(decoder_.records().size());
    span.segment = si;
    span.position = h.position;
    span.first_record = uint32_t(r_.records.size());
    span.digested = decoded && sink_.problems.size() == problems_before;
    Place(span);

    const int32_t txn = Transactions(batch, h, decoded, path);
    // read_committed as CompletedFetch filters it (aborted list from the .txnindex, ABORT markers).
    const bool abort_marker = h.is_control && !r_.markers.empty() && r_.markers.back().offset == h.base_offset &&
                              r_.markers.back().type == MarkerType::kAbort;
    const bool batch_aborted = read_committed_.SkipsBatch(h, abort_marker);
    if (options_.transactions_only) {
      // The newest record timestamp (the default clock) from the headers: a batch's maxTimestamp.
      if (header_only || decoded) r_.max_timestamp = std::max(r_.max_timestamp, h.max_timestamp);
      return LoadedLog::Step::kNext;
    }
    if (!decoded) return LoadedLog::Step::kNext;
    return Records(h, same, txn, batch_aborted, path, error);
  }

  // A batch's place in the log: the offsets missing before it, the end so far, and the span itself.
  void Place(const BatchSpan& span) {
    if (prev_end_ >= 0 && span.base_offset > prev_end_) r_.gaps.push_back({prev_end_, span.base_offset});
    if (prev_end_ < 0 && span.base_offset > r_.log_start_offset)
      r_.gaps.push_back({r_.log_start_offset, span.base_offset});
    prev_end_ = std::max(prev_end_, JavaAdd(span.last_offset, 1));
    if (!options_.transactions_only) r_.batches.push_back(span);
  }

  // A decoded batch's records: copied from the reference's identical batch (`same`), else digested.
  LoadedLog::Step Records(const BatchHeader& h, const BatchSpan* same, int32_t txn, bool batch_aborted,
                          const std::string& path, std::string* error) {
    const size_t count = same != nullptr ? size_t(same->records) : decoder_.records().size();
    if (!WithinBudget(r_, options_, count, path, h.position, error)) {
      over_budget_ = true;
      return LoadedLog::Step::kStop;
    }
    if (same != nullptr) {
      CopyRecords(h, *same, txn, batch_aborted);
    } else {
      DigestRecords(h, txn, batch_aborted);
    }
    return LoadedLog::Step::kNext;
  }

  // Transaction structure, by replay from the log start: a control batch is a marker (closing the
  // transaction it completes), a transactional data batch joins its producer's open transaction. Returns
  // that transaction's index in r.txns (-1: none).
  int32_t Transactions(const BatchView& batch, const BatchHeader& h, bool decoded, const std::string& path) {
    BatchUpdate u = replay_.Apply(batch, path, nullptr);
    if (h.magic < 2 || !h.has_producer_id()) return -1;
    if (h.is_control) {
      r_.markers.push_back(MarkerOf(h, decoded));
      if (u.completed) Close(*u.completed);
      return -1;
    }
    return h.is_transactional ? Join(h) : -1;
  }

  Marker MarkerOf(const BatchHeader& h, bool decoded) const {
    Marker m;
    m.offset = h.base_offset;
    m.producer_id = h.producer_id;
    m.producer_epoch = h.producer_epoch;
    m.type = MarkerType::kEmpty;
    if (!decoded || decoder_.records().empty()) return m;
    m.type = MarkerType::kOther;
    if (auto c = ControlBatchMarker(decoder_.records())) {
      if (c->type == ControlType::kCommit) m.type = MarkerType::kCommit;
      if (c->type == ControlType::kAbort) m.type = MarkerType::kAbort;
      m.coordinator_epoch = c->coordinator_epoch;
    }
    return m;
  }

  // The transaction a marker completed takes its fate.
  void Close(const CompletedTxn& completed) {
    auto it = txn_by_first_.find({completed.producer_id, completed.first_offset});
    if (it == txn_by_first_.end()) return;
    Txn& t = r_.txns[it->second];
    t.marker_offset = completed.last_offset;
    t.fate = completed.is_aborted ? TxnFate::kAborted : TxnFate::kCommitted;
    txn_by_first_.erase(it);
  }

  // A transactional data batch: its producer's open transaction (new at its first batch).
  int32_t Join(const BatchHeader& h) {
    const ProducerStateEntry* e = replay_.Find(h.producer_id);
    if (e == nullptr || !e->current_txn_first_offset) return -1;
    auto key = std::make_pair(h.producer_id, *e->current_txn_first_offset);
    auto it = txn_by_first_.find(key);
    if (it == txn_by_first_.end()) {
      Txn t;
      t.producer_id = h.producer_id;
      t.producer_epoch = h.producer_epoch;
      t.first_offset = *e->current_txn_first_offset;
      it = txn_by_first_.emplace(key, int32_t(r_.txns.size())).first;
      r_.txns.push_back(t);
    }
    r_.txns[it->second].last_data_offset = h.last_offset;
    r_.txns[it->second].producer_epoch = h.producer_epoch;
    return it->second;
  }

  void Serve(const BatchHeader& h, bool batch_aborted, RecordDigest* d) {
    d->read_uncommitted = !h.is_control && bounds_.ReadUncommitted(d->offset);
    d->read_committed = !h.is_control && bounds_.BelowLastStable(d->offset) && !batch_aborted;
    r_.max_timestamp = std::max(r_.max_timestamp, d->timestamp);
  }

  // A batch byte-identical to the reference's: its digests, with this replica's transaction and views.
  void CopyRecords(const BatchHeader& h, const BatchSpan& same, int32_t txn, bool batch_aborted) {
    for (uint32_t i = same.first_record; i < same.first_record + uint32_t(same.records); ++i) {
      RecordDigest d = ref_->records[i];
      d.txn = txn;  // not a control batch
      d.fate = TxnFate::kNone;
      Serve(h, batch_aborted, &d);
      r_.records.push_back(d);
    }
  }

  void DigestRecords(const BatchHeader& h, int32_t txn, bool batch_aborted) {
    keys_.clear();
    for (const Record& rec : decoder_.records())
      if (rec.key) keys_.push_back(*rec.key);
    key_digests_.resize(keys_.size());
    Md5Many(keys_.data(), keys_.size(), key_digests_.data());
    size_t next_key = 0;
    for (const Record& rec : decoder_.records()) {
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
      d.txn = h.is_control ? -1 : txn;
      if (rec.key) d.key = key_digests_[next_key++];
      d.content = ContentDigest(rec.timestamp, h.is_control, rec.key, rec.value, decoder_.headers(rec));
      Serve(h, batch_aborted, &d);
      r_.records.push_back(d);
    }
  }

  const LoadedLog& log_;
  const std::vector<SegmentInfo>& segments_;
  const ReplicaOptions& options_;
  ReplicaState& r_;
  const ReplicaState* ref_;
  ProducerStateManager replay_;
  std::map<std::pair<int64_t, int64_t>, int32_t> txn_by_first_;  // (pid, first offset) -> txns index
  ReadCommittedFilter read_committed_;
  const ConsumerBounds bounds_;
  RecordDecoder decoder_;
  std::vector<Bytes> keys_;  // one batch's keys, hashed together (Md5Many)
  std::vector<Digest> key_digests_;
  size_t ref_batch_ = 0;  // cursor into ref->batches (both logs ascend by offset)
  std::vector<uint64_t> segment_bytes_;
  uint64_t total_bytes_ = 0, bytes_done_ = 0;
  int64_t prev_end_ = -1;
  CollectingSink sink_;
  bool damaged_ = false, over_budget_ = false;
  size_t errors_seen_ = 0;  // sink_.problems[0..errors_seen_) hold no error of this segment
};

// Records of a transaction take its fate; transactions still open at the end stay open.
void ApplyFates(ReplicaState* r) {
  for (size_t i = 0; i < r->records.size(); ++i) {
    const RecordDigest& d = r->records[i];
    if (d.control || !d.transactional || d.txn < 0) continue;
    Txn& t = r->txns[d.txn];
    if (d.fate != t.fate) r->records.Mutable(i).fate = t.fate;
    ++t.records;
  }
}

// Whether `r`'s records match the reference's one for one in everything the key view depends on: then
// it has the reference's view (record indices included), copied instead of sorted again.
bool SameViewInputs(const ReplicaState& r, const ReplicaState* ref) {
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
}

// The markers' verdict and the .txnindex (what consumers get) must agree on every record a
// read_committed consumer can reach; a mismatch is noted once per transaction.
void NoteTxnIndexMismatches(ReplicaState* r) {
  std::set<int32_t> mismatched;
  for (const RecordDigest& d : r->records) {
    if (d.control || !d.transactional || d.txn < 0 || d.offset >= r->last_stable_offset) continue;
    if (d.offset < r->log_start_offset) continue;
    const bool by_markers = d.fate == TxnFate::kCommitted;
    if (by_markers != d.read_committed && mismatched.insert(d.txn).second) {
      const Txn& t = r->txns[d.txn];
      Note(r, Severity::kWarning, r->path, 0, "txnindex",
           "transaction of producer " + std::to_string(t.producer_id) + " from offset " +
               std::to_string(t.first_offset) + " is " + TxnFateName(t.fate) +
               " by its marker but the .txnindex makes read_committed consumers " +
               (d.read_committed ? "receive" : "skip") + " it (offset " + std::to_string(d.offset) + ")");
    }
  }
}

}  // namespace

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
  CopyLoaded(log, &r);
  // One pass over the log: digests, markers, transactions by replay from the log start, consumer views.
  ReplicaPass pass(log, options, &r);
  if (!pass.Run(error)) return false;
  if (options.transactions_only) return true;
  ApplyFates(&r);
  if (!options.key_view) {
    // Nothing to compare keys with here.
  } else if (SameViewInputs(r, options.reference)) {
    r.key_view = options.reference->key_view;
  } else {
    BuildKeyView(&r);
  }
  NoteTxnIndexMismatches(&r);
  return true;
}

bool LoadReplicas(const std::vector<std::string>& partition_dirs, const ReplicaOptions& options,
                  std::vector<ReplicaState>* out, std::string* error, unsigned threads) {
  out->clear();
  out->resize(partition_dirs.size());
  if (partition_dirs.empty()) return true;
  ReplicaOptions first = options;
  first.rider = nullptr;  // one rider rides on one copy's load
  if (!LoadReplica(partition_dirs[0], first, &(*out)[0], error)) return false;
  ReplicaOptions others = first;
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
  if (!decoder.Decode(batch, file->path(), &quiet) || file->changed()) return std::nullopt;
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
