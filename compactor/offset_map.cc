#include "compactor/offset_map.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "segment_reader/key_digest.h"

namespace klf {

std::unique_ptr<SkimpyOffsetMap> SkimpyOffsetMap::Create(int32_t memory, std::string* error) {
  if (memory < kBytesPerEntry) {
    *error = "offset map memory " + std::to_string(memory) + " bytes holds no " + std::to_string(kBytesPerEntry) +
             "-byte entry";
    return nullptr;
  }
  return std::unique_ptr<SkimpyOffsetMap>(new SkimpyOffsetMap(memory));
}

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
constexpr uint64_t kInitialCapacity = 1024;
#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;  // Linux 5.14; older kernels refuse it (EINVAL), which is harmless
#endif
}  // namespace

SkimpyOffsetMap::SkimpyOffsetMap(int32_t memory) : slots_(memory / kBytesPerEntry) {
  if (!Allocate(std::min<uint64_t>(kInitialCapacity, uint64_t(slots_)), &table_)) throw std::bad_alloc();
}

SkimpyOffsetMap::~SkimpyOffsetMap() { Release(&table_); }

bool SkimpyOffsetMap::Allocate(uint64_t capacity, Table* t) const {
  size_t bytes = size_t(capacity) * kBytesPerEntry;
  bool large = bytes >= kHugePage;
  t->mapping_size = large ? bytes + kHugePage : bytes;  // room to align to a huge page
  void* p = mmap(nullptr, t->mapping_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  t->mapping = static_cast<uint8_t*>(p);
  t->bytes = t->mapping;
  if (large) {
    t->bytes = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(t->mapping) + kHugePage - 1) & ~(kHugePage - 1));
    if (huge_pages_) madvise(t->bytes, bytes, MADV_HUGEPAGE);  // a hint; refusal is harmless
  }
  // Fault the table in writable now: probes touch nearly every page of it anyway, and a page first
  // read (an empty-slot check maps the shared zero page) and then written takes a second fault whose
  // TLB flush interrupts every core running this process (the cleaner has two threads). A hint too.
  madvise(t->bytes, bytes, kPopulateWrite);
  t->capacity = capacity;
  return true;
}

void SkimpyOffsetMap::Release(Table* t) {
  if (t->mapping) munmap(t->mapping, t->mapping_size);
  *t = Table();
}

void SkimpyOffsetMap::AdviseHugePages() {
  huge_pages_ = true;
  size_t bytes = size_t(table_.capacity) * kBytesPerEntry;
  if (bytes >= kHugePage) madvise(table_.bytes, bytes, MADV_HUGEPAGE);
}

uint64_t SkimpyOffsetMap::PositionOf(const uint8_t hash[kHashSize]) const {
  // The digest's first 8 bytes scaled to the capacity (multiply-shift: MD5 bits are uniform).
  uint64_t h;
  std::memcpy(&h, hash, sizeof(h));
  return uint64_t((unsigned __int128)h * table_.capacity >> 64);
}

bool SkimpyOffsetMap::IsEmptyEntry(const uint8_t* p) const {
  // Kafka tests the first three longs of the slot for zero.
  uint64_t w[3];
  std::memcpy(w, p, sizeof(w));
  return (w[0] | w[1] | w[2]) == 0;
}

void SkimpyOffsetMap::Grow() {
  Table old = table_;
  Table grown;
  uint64_t capacity = std::min<uint64_t>(old.capacity * 2, uint64_t(slots_));
  if (!Allocate(capacity, &grown)) throw std::bad_alloc();
  table_ = grown;
  // Move every entry; the old table's pages are released as they are passed, so memory stays near
  // the new table's size.
  size_t released = 0;
  for (uint64_t i = 0; i < old.capacity; i++) {
    const uint8_t* e = old.bytes + i * kBytesPerEntry;
    if (!IsEmptyEntry(e)) {
      uint64_t pos = PositionOf(e);
      while (!IsEmptyEntry(Entry(pos))) pos = pos + 1 == table_.capacity ? 0 : pos + 1;
      std::memcpy(Entry(pos), e, kBytesPerEntry);
    }
    size_t passed = size_t(i + 1) * kBytesPerEntry;
    if (passed - released >= kHugePage) {
      uintptr_t page = uintptr_t(4096);
      uintptr_t begin = (uintptr_t(old.bytes) + released + page - 1) & ~(page - 1);
      uintptr_t end = (uintptr_t(old.bytes) + passed) & ~(page - 1);
      if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
      released = passed;
    }
  }
  Release(&old);
}

void SkimpyOffsetMap::Hash(Bytes key, uint8_t out[kHashSize]) {
  // MD5 over the key bytes only (no length prefix, no salt), as SkimpyOffsetMap.hashInto.
  KeyDigest d = Md5(key);
  std::memcpy(out, d.data(), kHashSize);
}

void SkimpyOffsetMap::PrefetchHashed(const std::vector<Bytes>& keys, const std::vector<KeyDigest>& digests) {
  prepared_keys_.clear();
  prepared_spans_.clear();
  prepared_hashes_ = digests;
  prepared_next_ = 0;
  for (size_t i = 0; i < keys.size(); i++) {
    prepared_spans_.emplace_back(prepared_keys_.size(), keys[i].size());
    prepared_keys_.append(reinterpret_cast<const char*>(keys[i].data()), keys[i].size());
    __builtin_prefetch(Entry(PositionOf(prepared_hashes_[i].data())));
  }
}

void SkimpyOffsetMap::HashOrPrepared(Bytes key, uint8_t out[kHashSize]) const {
  if (prepared_next_ < prepared_spans_.size()) {
    auto [at, size] = prepared_spans_[prepared_next_];
    if (size == key.size() && (size == 0 || std::memcmp(prepared_keys_.data() + at, key.data(), size) == 0)) {
      std::memcpy(out, prepared_hashes_[prepared_next_].data(), kHashSize);
      prepared_next_++;
      return;
    }
  }
  Hash(key, out);
}

int32_t SkimpyOffsetMap::SlotOf(const uint8_t hash[kHashSize], int32_t attempt) const {
  // Kafka: probe = readIntBE(hash, min(attempt, hashSize - 4)) + max(0, attempt - hashSize + 4),
  // in wrapping int32 arithmetic; slot = Utils.abs(probe) % slots, where abs(INT_MIN) = 0.
  int32_t at = attempt < kHashSize - 4 ? attempt : kHashSize - 4;
  int32_t extra = attempt - kHashSize + 4 > 0 ? attempt - kHashSize + 4 : 0;
  uint32_t probe = LoadBE32(hash + at) + uint32_t(extra);
  int32_t p = int32_t(probe);
  int32_t a = p == INT32_MIN ? 0 : (p < 0 ? -p : p);
  return a % slots_;
}

bool SkimpyOffsetMap::Put(Bytes key, int64_t offset, int64_t* previous) {
  if (entries_ >= slots_) return false;
  uint8_t hash[kHashSize];
  HashOrPrepared(key, hash);
  return PutHashed(hash, offset, previous);
}

bool SkimpyOffsetMap::PutHashed(const uint8_t hash[kHashSize], int64_t offset, int64_t* previous) {
  if (entries_ >= slots_) return false;
  if (previous) *previous = -1;
  // Room for one more new entry below 3/4 of the table (or the full slot count at the largest size).
  if (uint64_t(entries_) + 1 > table_.capacity - table_.capacity / 4 && table_.capacity < uint64_t(slots_)) Grow();
  for (uint64_t pos = PositionOf(hash);; pos = pos + 1 == table_.capacity ? 0 : pos + 1) {
    uint8_t* p = Entry(pos);
    if (IsEmptyEntry(p)) {
      std::memcpy(p, hash, kHashSize);
      StoreBE64(p + kHashSize, uint64_t(offset));
      entries_++;
      break;
    }
    if (std::memcmp(p, hash, kHashSize) == 0) {
      if (previous) *previous = int64_t(LoadBE64(p + kHashSize));
      StoreBE64(p + kHashSize, uint64_t(offset));
      break;
    }
  }
  latest_offset_ = offset;
  return true;
}

int64_t SkimpyOffsetMap::Get(Bytes key) const {
  uint8_t hash[kHashSize];
  HashOrPrepared(key, hash);
  return GetHashed(hash);
}

int64_t SkimpyOffsetMap::GetHashed(const uint8_t hash[kHashSize]) const {
  uint64_t pos = PositionOf(hash);
  for (uint64_t attempt = 0; attempt < table_.capacity; attempt++) {
    const uint8_t* p = Entry(pos);
    if (IsEmptyEntry(p)) return -1;
    if (std::memcmp(p, hash, kHashSize) == 0) return int64_t(LoadBE64(p + kHashSize));
    pos = pos + 1 == table_.capacity ? 0 : pos + 1;
  }
  return -1;
}

bool SkimpyOffsetMap::MergeNewer(const SkimpyOffsetMap& newer, const std::function<void(int64_t)>& replaced) {
  for (uint64_t i = 0; i < newer.table_.capacity; i++) {
    const uint8_t* e = newer.Entry(i);
    if (IsEmptyEntry(e)) continue;
    int64_t previous = -1;
    if (!PutHashed(e, int64_t(LoadBE64(e + kHashSize)), &previous)) return false;
    if (previous >= 0 && replaced) replaced(previous);
  }
  latest_offset_ = newer.latest_offset_;
  return true;
}

void SkimpyOffsetMap::Clear() {
  if (entries_ > 0) {
    Release(&table_);
    if (!Allocate(std::min<uint64_t>(kInitialCapacity, uint64_t(slots_)), &table_)) throw std::bad_alloc();
  }
  entries_ = 0;
  latest_offset_ = -1;
  prepared_spans_.clear();
  prepared_next_ = 0;
}

int32_t MaxDesiredMapSize(int32_t slots, double load_factor) { return int32_t(double(slots) * load_factor); }

}  // namespace klf
