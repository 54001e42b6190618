// Kafka's SkimpyOffsetMap (spec kafka-log-cleaner.md §5): MD5(key) -> offset, with Kafka's slot
// count, fill accounting and latestOffset rules.
//
// The number of slots is the per-thread dedupe buffer / 24 bytes, exactly Kafka's, so the number of
// distinct keys one cleaning round can map — which decides where a round stops (§4) — is Kafka's.
// What the cleaner observes of the map is only: the offset stored for a key's MD5 (16-byte
// equality), the entry count and latestOffset. Those are the same whatever the table layout, so the
// table itself is laid out for speed instead of copying Kafka's: it grows with the entries (up to
// the slot count), so a run with few distinct keys probes a table that fits the caches instead of
// 128 MiB (a random access to a large, cold region costs several times more: docs/PERFORMANCE.md).
// Kafka's own probe sequence is kept as SlotOf, for reference and its test.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "segment_reader/bytes.h"
#include "segment_reader/key_digest.h"

namespace klf {

// The interface the cleaner uses (Kafka's OffsetMap.java). Tests substitute an exact map, as
// Kafka's own LogCleanerTest does with FakeOffsetMap.
class OffsetMap {
 public:
  virtual ~OffsetMap() = default;
  virtual int32_t slots() const = 0;
  // Stores key -> offset; sets latestOffset = offset; *previous (when given) is the offset the key
  // held before, or -1. Returns false (nothing stored) when the map has no free slot at all (Kafka
  // throws IllegalArgumentException "Attempted to add a new entry to a full offset map." — the
  // cleaner's fill limit keeps it from happening).
  virtual bool Put(Bytes key, int64_t offset, int64_t* previous) = 0;
  bool Put(Bytes key, int64_t offset) { return Put(key, offset, nullptr); }
  // The offset stored for key, or -1.
  virtual int64_t Get(Bytes key) const = 0;
  virtual void UpdateLatestOffset(int64_t offset) = 0;
  virtual void Clear() = 0;
  virtual int32_t size() const = 0;
  virtual int64_t latest_offset() const = 0;
  // A hint that `keys` (one batch's) are about to be put or looked up, in this order, with their MD5
  // digests already computed by the caller (digests[i] is Md5(keys[i])): an implementation may fetch
  // the slots they probe into the cache ahead of use, so the cache misses of a batch overlap instead
  // of being paid one after another, and use the digests instead of hashing again. Never changes a
  // result.
  using KeyDigest = klf::KeyDigest;
  virtual void PrefetchHashed(const std::vector<Bytes>& keys, const std::vector<KeyDigest>& digests) {
    (void)keys;
    (void)digests;
  }
  double Utilization() const { return slots() == 0 ? 0 : double(size()) / slots(); }
};

class SkimpyOffsetMap : public OffsetMap {
 public:
  // `memory` bytes of table (Kafka's `memory` constructor argument). Returns nullptr with *error
  // when it holds no slot.
  static std::unique_ptr<SkimpyOffsetMap> Create(int32_t memory, std::string* error);

  int32_t slots() const override { return slots_; }
  using OffsetMap::Put;
  bool Put(Bytes key, int64_t offset, int64_t* previous) override;
  int64_t Get(Bytes key) const override;
  void UpdateLatestOffset(int64_t offset) override { latest_offset_ = offset; }
  void Clear() override;
  int32_t size() const override { return entries_; }
  int64_t latest_offset() const override { return latest_offset_; }
  void PrefetchHashed(const std::vector<Bytes>& keys, const std::vector<KeyDigest>& digests) override;
  // Backs the table with transparent huge pages when the kernel allows it (call before the first
  // Put): a large map is probed at random, and with 4 KiB pages nearly every probe also misses the
  // TLB. The cost is that touching one slot makes 2 MiB resident, so it is for large cleaning runs.
  void AdviseHugePages();

  static constexpr int kHashSize = 16;  // MD5
  static constexpr int kBytesPerEntry = kHashSize + 8;

  // Put with the key's digest already computed.
  bool PutHashed(const uint8_t hash[kHashSize], int64_t offset, int64_t* previous = nullptr);
  // Get with the key's digest already computed. Only reads the table: safe to call from several
  // threads while nobody puts (the cleaning pass's look-ahead, lookup_ahead.h).
  int64_t GetHashed(const uint8_t hash[kHashSize]) const;
  // Fetches the slot GetHashed(hash) probes first into the cache.
  void PrefetchSlot(const uint8_t hash[kHashSize]) const { __builtin_prefetch(Entry(PositionOf(hash))); }
  // Puts every entry of `newer` (a map built from the records after this map's) over this one's and
  // takes its latest offset: the map that putting this map's records and then newer's would have
  // built, as long as no put found the map full. False (and this map partly merged) if one did.
  // `replaced` (when given) is called with the offset of every entry of this map a newer one replaced.
  bool MergeNewer(const SkimpyOffsetMap& newer, const std::function<void(int64_t)>& replaced = nullptr);

  // MD5 of the key bytes (OpenSSL), exposed for tests.
  static void Hash(Bytes key, uint8_t out[kHashSize]);
  // Kafka's positionOf(hash, attempt): the slot index probed at `attempt`.
  int32_t SlotOf(const uint8_t hash[kHashSize], int32_t attempt) const;

 private:
  explicit SkimpyOffsetMap(int32_t memory);

  // Hash of `key`: the one PrefetchHashed was given for it if it is the next prepared key, else MD5.
  void HashOrPrepared(Bytes key, uint8_t out[kHashSize]) const;

  // The table: `capacity_` entries of kBytesPerEntry (digest, then the offset), linear probing from
  // the digest's first 8 bytes scaled to the capacity; an all-zero entry is empty (as in Kafka). It
  // doubles when 3/4 full, up to `slots_` entries (Kafka's memory), and lives in an anonymous
  // mapping (zero pages handed out lazily).
  struct Table {
    uint8_t* mapping = nullptr;
    size_t mapping_size = 0;
    uint8_t* bytes = nullptr;  // inside `mapping`, 2 MiB aligned when large
    uint64_t capacity = 0;
  };
  bool Allocate(uint64_t capacity, Table* t) const;
  static void Release(Table* t);
  void Grow();
  uint64_t PositionOf(const uint8_t hash[kHashSize]) const;
  uint8_t* Entry(uint64_t position) const { return table_.bytes + position * kBytesPerEntry; }
  bool IsEmptyEntry(const uint8_t* p) const;

  Table table_;
  bool huge_pages_ = false;
  int32_t slots_ = 0;
  int32_t entries_ = 0;
  int64_t latest_offset_ = -1;
  // PrefetchHashed's keys (copied) and hashes, consumed in order by Put/Get; a key that does not match the
  // next prepared one is simply hashed again.
  std::string prepared_keys_;
  std::vector<std::pair<size_t, size_t>> prepared_spans_;  // (offset in prepared_keys_, size)
  std::vector<KeyDigest> prepared_hashes_;
  mutable size_t prepared_next_ = 0;

 public:
  ~SkimpyOffsetMap() override;
};

// The number of keys one cleaner round may put before it stops: (int)(slots × loadFactor)
// (LogCleaner.Cleaner.maxDesiredMapSize... Kafka computes it as `(offsetMap.slots * dupBufferLoadFactor).toInt`).
int32_t MaxDesiredMapSize(int32_t slots, double load_factor);

}  // namespace klf
