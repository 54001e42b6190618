// One replica of a partition as a broker would load it and as its consumers would read it: the input
// of `klf diff`, `klf lso` and `klf repair`.
//
// LoadReplica streams every segment once with read(2) (LogReader::Open) and reduces each record to a
// fixed-size 64-byte RecordDigest (memory grows by the record count, never by key or value size): the
// key as its MD5, the digest the cleaner's offset map keeps (SkimpyOffsetMap), and the record's
// content as a 128-bit fingerprint computed in one pass over its bytes. It derives:
//   * the broker's view after a restart: log start and end offsets, the high watermark from the log
//     dir's replication-offset-checkpoint, producer state loaded from the latest valid .snapshot plus
//     the log after it (partition/producer_state.h), open transactions and the last stable offset;
//   * the transaction structure of the whole log as replay from the log start builds it (which
//     records each marker commits or aborts, including transactions merged across a lost marker);
//   * what consumers get: read_uncommitted (below the high watermark), read_committed (below the LSO,
//     without aborted transactions, using the `.txnindex` entries exactly as Kafka's fetch path and
//     consumer do), and the compacted key->value view (latest read_committed record per key).
// Key and value bytes are not kept; ReadRecordBytes fetches them again for the few records a report
// names.
#pragma once

#include <algorithm>
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "partition/loaded_log.h"
#include "segment_reader/batch.h"
#include "segment_reader/bytes.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/index_files.h"
#include "segment_reader/key_digest.h"
#include "segment_reader/problem.h"

namespace klf {

// MD5 of a key (segment_reader/key_digest.h), as the cleaner's offset map hashes keys.
using Digest = KeyDigest;
// The content fingerprint of one record (RecordDigest::content): timestamp, control flag, key, value
// and headers, each length-prefixed (null distinct from empty). Not MD5: a record's value is its bulk,
// and MD5 is much slower than ISA-L's CRCs (docs/PERFORMANCE.md); the fingerprint is the CRC-64 (ISO)
// and the CRC-32C of that byte sequence. Two CRCs with distinct generators detect every difference of up to 64
// bits and miss a random one with probability ~2^-96; like MD5 today, it is not meant to resist crafted
// collisions (replicas are not adversaries).
using Fingerprint = std::array<uint8_t, 12>;
Fingerprint ContentDigest(int64_t timestamp, bool control, const std::optional<Bytes>& key,
                          const std::optional<Bytes>& value, RecordHeaders headers);

// How the log itself decides a record (marker replay from the log start).
enum class TxnFate : uint8_t {
  kNone,       // not transactional
  kCommitted,  // closed by a COMMIT
  kAborted,    // closed by an ABORT
  kOpen,       // no marker yet: still open at the log end
};
const char* TxnFateName(TxnFate f);

// One record (data or control), without its bytes. 64 bytes: every replica keeps one per record.
struct RecordDigest {
  int64_t offset = 0;
  int64_t timestamp = 0;
  int64_t producer_id = -1;
  Digest key{};           // MD5(key), zero for a null key
  Fingerprint content{};  // ContentDigest: record identity across replicas
  int32_t leader_epoch = -1;
  int32_t txn = -1;  // index into ReplicaState::txns, for transactional data records
  int16_t producer_epoch = -1;
  TxnFate fate = TxnFate::kNone;
  bool transactional : 1 = false;
  bool control : 1 = false;
  bool has_key : 1 = false;
  bool has_value : 1 = false;         // false: tombstone (data records)
  bool read_committed : 1 = false;    // delivered to a read_committed consumer
  bool read_uncommitted : 1 = false;  // delivered to a read_uncommitted consumer
};
static_assert(sizeof(RecordDigest) == 64);

enum class MarkerType : uint8_t { kCommit, kAbort, kEmpty, kOther };
const char* MarkerTypeName(MarkerType t);

// A control batch of a producer (an end-transaction marker, or the empty batch the cleaner leaves).
struct Marker {
  int64_t offset = 0;  // base offset of the batch
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  MarkerType type = MarkerType::kEmpty;
  int32_t coordinator_epoch = -1;
};

// A transaction as replay from the log start builds it: from the producer's first transactional
// batch after its previous marker to the next marker (COMMIT or ABORT) that has data to close.
struct Txn {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int64_t first_offset = 0;
  int64_t last_data_offset = 0;
  std::optional<int64_t> marker_offset;  // nullopt: open
  TxnFate fate = TxnFate::kOpen;
  int64_t records = 0;
};

// An ongoing transaction of the producer state a broker loads (snapshot + log).
struct OpenTxn {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int64_t first_offset = 0;
  int64_t last_offset = -1;  // last data offset of the producer
  int64_t last_timestamp = -1;
};

// One producer of the broker-loaded producer state (snapshot + log): the epochs that broker fences an
// end-transaction marker with (ProducerAppendInfo.checkProducerEpoch, checkCoordinatorEpoch).
struct LoadedProducer {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t coordinator_epoch = -1;  // -1: no marker of the producer seen
};

struct BatchSpan {
  int64_t base_offset = 0, last_offset = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  bool transactional = false, control = false;
  int32_t records = 0;
  uint32_t segment = 0;   // index into ReplicaState::segment_files
  uint64_t position = 0;  // byte position in that segment
  // Identity of the entry's bytes, to reuse a reference replica's digests (ReplicaOptions::reference):
  // its size, its stored CRC-32C (checked) and a CRC-64 of all of it (base offset and leader epoch,
  // which the CRC-32C does not cover, included).
  uint32_t size = 0;
  uint32_t crc = 0;
  uint64_t fingerprint = 0;
  uint32_t first_record = 0;  // index into ReplicaState::records of its first record
  bool digested = false;      // decoded without a problem; its records are records[first_record..+records)
};

struct OffsetGap {
  int64_t from = 0, to = 0;  // offsets [from, to) held by no batch between two batches of the log
};

// Offsets a damaged segment makes unreadable (a corrupt or truncated batch that is not at the log's
// tail, where Kafka's recovery would simply truncate): never compared.
struct DamagedRange {
  int64_t from = 0, to = 0;  // [from, to)
  std::string file;
  uint64_t position = 0;
  std::string why;
};

struct ReplicaState;

// Memory for the per-record vectors: blocks of 2 MiB or more are mapped directly (mmap/munmap, so a
// freed block leaves the process), 2 MiB-aligned and advised MADV_HUGEPAGE, as hosts whose transparent
// huge pages are "madvise" would otherwise take a page fault per 4 KiB page (docs/PERFORMANCE.md);
// smaller blocks come from operator new. `huge_pages` false: mapped without the advice, for a block
// that may stay mostly unused (the first record chunk of a small partition): the kernel then backs only
// the pages written, instead of zeroing a whole huge page at the first write.
void* AllocateLarge(size_t bytes, bool huge_pages = true);
void FreeLarge(void* p, size_t bytes);
template <typename T>
struct LargeAllocator {
  using value_type = T;
  LargeAllocator() = default;
  template <typename U>
  LargeAllocator(const LargeAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(AllocateLarge(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { FreeLarge(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const LargeAllocator<U>&) const {
    return true;
  }
};

// Every field of two records equal (what sharing a chunk of records needs).
bool SameRecordDigest(const RecordDigest& a, const RecordDigest& b);

// ReplicaState::records: the records in chunks of kChunk (2 MiB; a huge page each from the second). A
// replica loaded against a reference (ReplicaOptions::reference) shares each chunk whose records are
// all equal to the reference's chunk at the same index, instead of holding a copy: replicas that hold
// the same batches cost the memory of one (issue 20). Records are appended into a private chunk that,
// once full (or at Seal()), is compared with the reference's and then dropped for it or kept. The fate
// of a transactional data record (set by LoadReplica after the last append, through Mutable) is left
// out of that comparison.
// Read access is as to a vector; a record is changed only through Mutable(), which copies a shared
// chunk first. capacity() follows std::vector's growth (reserve, doubling) so that the memory budget
// (ReplicaStateBytes) counts what a vector of the records would take, as it always did.
class RecordStore {
 public:
  static constexpr size_t kChunkShift = 15;
  static constexpr size_t kChunk = size_t(1) << kChunkShift;  // 32768 records: 2 MiB

  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = RecordDigest;
    using difference_type = std::ptrdiff_t;
    using pointer = const RecordDigest*;
    using reference = const RecordDigest&;
    const_iterator() = default;
    const_iterator(const RecordStore* s, size_t i) : s_(s), i_(i) {}
    reference operator*() const { return (*s_)[i_]; }
    pointer operator->() const { return &(*s_)[i_]; }
    reference operator[](difference_type n) const { return (*s_)[size_t(difference_type(i_) + n)]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator t = *this;
      ++i_;
      return t;
    }
    const_iterator& operator--() {
      --i_;
      return *this;
    }
    const_iterator operator--(int) {
      const_iterator t = *this;
      --i_;
      return t;
    }
    const_iterator& operator+=(difference_type n) {
      i_ = size_t(difference_type(i_) + n);
      return *this;
    }
    const_iterator& operator-=(difference_type n) {
      i_ = size_t(difference_type(i_) - n);
      return *this;
    }
    friend const_iterator operator+(const_iterator a, difference_type n) { return a += n; }
    friend const_iterator operator+(difference_type n, const_iterator a) { return a += n; }
    friend const_iterator operator-(const_iterator a, difference_type n) { return a -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return difference_type(a.i_) - difference_type(b.i_);
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.i_ == b.i_; }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.i_ <=> b.i_; }

   private:
    const RecordStore* s_ = nullptr;
    size_t i_ = 0;
  };

  RecordStore() = default;
  // A copy holds the same chunks (copied on the first change); the spare buffer is not copied.
  RecordStore(const RecordStore& o)
      : chunks_(o.chunks_), size_(o.size_), capacity_(o.capacity_), reference_(o.reference_) {}
  RecordStore& operator=(const RecordStore& o) {
    if (this != &o) {
      chunks_ = o.chunks_;
      size_ = o.size_;
      capacity_ = o.capacity_;
      reference_ = o.reference_;
      spare_.reset();
    }
    return *this;
  }
  RecordStore(RecordStore&& o) noexcept = default;
  RecordStore& operator=(RecordStore&& o) noexcept = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  void reserve(size_t n) { capacity_ = std::max(capacity_, n); }
  void clear();
  const RecordDigest& operator[](size_t i) const { return chunks_[i >> kChunkShift]->At(i & (kChunk - 1)); }
  const RecordDigest& front() const { return (*this)[0]; }
  const RecordDigest& back() const { return (*this)[size_ - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }
  void push_back(const RecordDigest& d);
  // Record i for changing it (its chunk copied first when it is shared).
  RecordDigest& Mutable(size_t i);
  // Chunks are compared with `reference`'s at the same index (nullptr: none are shared).
  void ShareWith(const RecordStore* reference) { reference_ = reference; }
  // Ends appending against the reference: the last, partly filled chunk is compared with the
  // reference's too, and the reference is forgotten.
  void Seal();
  // Chunks held in common with another store (for tests and the memory figures).
  size_t SharedChunks() const;
  // The chunk holding record i (two stores hold it in common when these are equal).
  const void* ChunkOf(size_t i) const { return chunks_[i >> kChunkShift].get(); }

 private:
  // Raw storage: records are constructed in place as they are appended (no zero-fill of 2 MiB).
  struct Chunk {
    alignas(RecordDigest) unsigned char bytes[kChunk * sizeof(RecordDigest)];
    RecordDigest& At(size_t j) { return std::launder(reinterpret_cast<RecordDigest*>(bytes))[j]; }
    const RecordDigest& At(size_t j) const { return std::launder(reinterpret_cast<const RecordDigest*>(bytes))[j]; }
  };
  // A chunk for records from index k * kChunk: huge pages only from the second chunk on (a store
  // that needs one holds 32,768 records or more; most partitions of a fleet hold far fewer).
  std::shared_ptr<Chunk> NewChunk(size_t k);
  // Compares the last chunk (records [k * kChunk, size_)) with the reference's chunk k.
  void ShareLastIfSame();

  std::vector<std::shared_ptr<Chunk>> chunks_;
  size_t size_ = 0;
  size_t capacity_ = 0;
  const RecordStore* reference_ = nullptr;
  std::shared_ptr<Chunk> spare_;  // a private chunk given up for the reference's, to fill next
};

// The order of ReplicaState::key_view: the digest's first 8 bytes as a little-endian integer, then
// the rest. Any fixed total order would do; this one is what the radix sort produces.
inline uint64_t KeyPrefix(const Digest& d) {
  uint64_t p;
  __builtin_memcpy(&p, d.data(), sizeof(p));
  return p;
}
inline bool KeyLess(const Digest& a, const Digest& b) {
  uint64_t pa = KeyPrefix(a), pb = KeyPrefix(b);
  if (pa != pb) return pa < pb;
  return __builtin_memcmp(a.data() + 8, b.data() + 8, 8) < 0;
}

struct KeyState {
  int64_t offset = 0;   // offset of the latest read_committed record for the key
  uint32_t record = 0;  // index into ReplicaState::records
  bool tombstone = false;
};

// ReplicaState::key_view: a sorted vector held through a shared pointer. A copy shares it (LoadReplica
// gives a replica whose records match the reference's in everything the view depends on the
// reference's view); a change (clear, emplace_back) works on a private copy.
class KeyView {
 public:
  using value_type = std::pair<Digest, KeyState>;
  using Vector = std::vector<value_type, LargeAllocator<value_type>>;
  using const_iterator = Vector::const_iterator;

  size_t size() const { return v_ ? v_->size() : 0; }
  bool empty() const { return size() == 0; }
  const value_type& operator[](size_t i) const { return (*v_)[i]; }
  const_iterator begin() const { return v_ ? v_->cbegin() : const_iterator(); }
  const_iterator end() const { return v_ ? v_->cend() : const_iterator(); }
  void clear() { v_.reset(); }
  template <typename... Args>
  void emplace_back(Args&&... args) {
    Own().emplace_back(std::forward<Args>(args)...);
  }
  // Both hold the same vector (for tests and the memory figures).
  bool SharedWith(const KeyView& o) const { return v_ != nullptr && v_ == o.v_; }

 private:
  Vector& Own() {
    if (!v_) {
      v_ = std::make_shared<Vector>();
    } else if (v_.use_count() > 1) {
      v_ = std::make_shared<Vector>(*v_);
    }
    return *v_;
  }
  std::shared_ptr<Vector> v_;
};

struct ReplicaOptions {
  // Clock for snapshot loading (producer expiration). Default: the newest record timestamp seen.
  std::optional<int64_t> now_ms;
  int64_t producer_id_expiration_ms = 86400000;
  // An already loaded replica of the same partition. A follower appends the leader's batches byte for
  // byte, so a batch whose bytes match the reference's batch at the same base offset (same size,
  // CRC-32C and CRC-64 of the whole entry) holds the same records: their digests are copied instead of
  // decoding and hashing the records again. Results are the same with or without it.
  const ReplicaState* reference = nullptr;
  // Only the transaction structure (klf lso): offsets, markers, transactions, open transactions and
  // the LSO, in memory that does not grow with the record count. v2 data batches are not decoded;
  // `batches`, `records` and `key_view` stay empty, and Txn::records is 0.
  bool transactions_only = false;
  // Memory budget of the per-record and per-batch state of this replica (0: none). Passing it stops
  // the load with an error naming the segment, the position and the figures, never an allocation
  // failure (klf diff --memory-budget).
  uint64_t max_state_bytes = 0;
  // What the replica's files are read through (segment_reader/env.h; null: Env::Default()): the load
  // (LoadOptions::env) and, later, ReadRecordBytes (kept in ReplicaState::env).
  Env* env = nullptr;
  // A visitor that rides on the load's pass over the batches (LoadedLog::Rider: klf triage and digest
  // verify the copy on it); its `complete` says whether it saw them all. Results are the same with or
  // without it. LoadReplicas ignores it.
  LoadedLog::Rider* rider = nullptr;
  // Build key_view (false: left empty, for a caller that compares no keys: klf digest, whose reader
  // builds it from the records).
  bool key_view = true;
};

// The memory a replica's per-record and per-batch state takes (vectors' capacities, the key view
// counted at one entry per record).
uint64_t ReplicaStateBytes(const ReplicaState& r);

// The partition's identity, offsets and `.txnindex` entries as the load found them (LoadedFacts), and
// what diff adds.
struct ReplicaState : LoadedFacts {
  std::string path;    // partition directory as given
  Env* env = nullptr;  // ReplicaOptions::env, for ReadRecordBytes
  std::string label;   // short name for reports (the broker's log dir name, else the path)
  bool high_watermark_from_checkpoint = false;
  // Every producer snapshot file's offset, ascending (a broker writes one when it rolls a segment and
  // when it shuts down, named by its log end offset then). Empty when read from a digest.
  std::vector<int64_t> snapshot_offsets;

  std::vector<std::string> segment_files;
  // Each segment file's modification time when it was read (ms since the epoch; parallel to
  // segment_files, 0 when not read). A broker's append is a modification, so each batch was appended no
  // later than its file's mtime (the cleaner gives a cleaned segment its last source's mtime); a copy
  // that did not keep mtimes only makes the bound later.
  std::vector<int64_t> segment_mtimes_ms;
  std::vector<BatchSpan> batches;
  RecordStore records;                    // ascending offsets, data and control
  std::vector<Marker> markers;            // ascending offsets
  std::vector<Txn> txns;                  // by first offset
  std::vector<OpenTxn> open_txns;         // broker-loaded producer state
  std::vector<LoadedProducer> producers;  // broker-loaded producer state, by producer id
  // txn_index_max_last[i]: the largest last_offset of aborted_txns[0..i] (to find the entries around an
  // offset by binary search), set from aborted_txns by IndexAbortedTxns (a load and a digest's reader).
  std::vector<int64_t> txn_index_max_last;
  void IndexAbortedTxns();
  std::vector<OffsetGap> gaps;
  std::vector<DamagedRange> damaged;
  // The compacted read_committed view, one entry per key, sorted by KeyLess (a flat vector: built by a
  // radix sort of the records' key digests instead of one hash-table probe per record, which costs a
  // cache and TLB miss each).
  KeyView key_view;
  std::vector<Problem> notes;  // problems met while loading (decode errors, txnindex vs markers)
  int64_t max_timestamp = -1;
  // Read from a digest (digest/digest.h), not from the files: no key or value bytes can be read again
  // (ReadRecordBytes returns nullopt), and the paths are those of the host that wrote the digest.
  bool from_digest = false;
  // From a digest that kept only the batches' identities of this plain log (digest/digest.h
  // IsPlainReplica): `records` is empty until RestoreElidedRecords fills it in.
  bool records_elided = false;

  // Index of the record at `offset`, or -1.
  int64_t FindRecord(int64_t offset) const;
  // Does the log hold offset `offset` in any batch (a record, or a batch emptied by the cleaner)?
  bool HoldsOffset(int64_t offset) const;
  // Markers of `producer_id` at offsets > after, ascending.
  const Marker* NextMarker(int64_t producer_id, int64_t after) const;
  // The gap (if any) that contains `offset`, or the first gap after it.
  const OffsetGap* GapAtOrAfter(int64_t offset) const;
  // The replica holds (or held and compacted) `offset`: within its log and not in a damaged range.
  bool Covers(int64_t offset) const;
  // Some damaged range lies at or after `offset` (a later record for a key may be hidden there).
  bool DamagedAfter(int64_t offset) const;
  // Latest read_committed record of a key (nullptr when the key was never delivered).
  const KeyState* Key(const Digest& key) const;
  size_t ReadCommittedCount() const;
  size_t ReadUncommittedCount() const;
};

// Builds key_view from records (what LoadReplica does after reading the log; a digest reader needs it).
void BuildKeyView(ReplicaState* r);

// Loads a partition directory. Returns false with *error when it cannot be read at all, or when a file
// of it that the load needs (a segment, index, snapshot, checkpoint or meta.properties) exists but
// cannot be read: *error names that file. Such a replica is never loaded as if the file were absent.
bool LoadReplica(const std::string& partition_dir, const ReplicaOptions& options, ReplicaState* out,
                 std::string* error);

// Loads several replicas of one partition: the first alone, then the others (on up to `threads`
// threads) with the first as their reference (ReplicaOptions::reference). Same results as LoadReplica
// on each. Returns false with *error naming the first directory that cannot be read.
bool LoadReplicas(const std::vector<std::string>& partition_dirs, const ReplicaOptions& options,
                  std::vector<ReplicaState>* out, std::string* error, unsigned threads = 0);

struct RecordBytes {
  std::optional<std::string> key, value;
  int64_t timestamp = -1;
};
// Reads one record's key and value again from the segment (nullopt when the offset is not held, or the
// replica was read from a digest).
std::optional<RecordBytes> ReadRecordBytes(const ReplicaState& replica, int64_t offset);

}  // namespace klf
