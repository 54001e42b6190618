#include "compactor/offset_map.h"

#include <openssl/evp.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace klf {

std::unique_ptr<SkimpyOffsetMap> SkimpyOffsetMap::Create(int32_t memory, std::string* error) {
  if (memory < kBytesPerEntry) {
    *error = "offset map memory " + std::to_string(memory) + " bytes holds no " +
             std::to_string(kBytesPerEntry) + "-byte entry";
    return nullptr;
  }
  return std::unique_ptr<SkimpyOffsetMap>(new SkimpyOffsetMap(memory));
}

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
}

SkimpyOffsetMap::SkimpyOffsetMap(int32_t memory) : memory_(size_t(memory)), slots_(memory / kBytesPerEntry) {
  // Room to align the table to a huge page boundary (AdviseHugePages).
  mapping_size_ = memory_ >= kHugePage ? memory_ + kHugePage : memory_;
  void* p = mmap(nullptr, mapping_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  mapping_ = static_cast<uint8_t*>(p);
  bytes_ = mapping_;
  if (memory_ >= kHugePage)
    bytes_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(mapping_) + kHugePage - 1) & ~(kHugePage - 1));
}

SkimpyOffsetMap::~SkimpyOffsetMap() { munmap(mapping_, mapping_size_); }

void SkimpyOffsetMap::AdviseHugePages() {
  if (memory_ >= kHugePage) madvise(bytes_, memory_, MADV_HUGEPAGE);  // a hint; refusal is harmless
}

namespace {
// One fetched MD5 implementation and one digest context per thread: EVP_Digest would fetch the
// algorithm and allocate a context on every call, which costs more than hashing a short key.
struct Md5 {
  EVP_MD* md = EVP_MD_fetch(nullptr, "MD5", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Md5() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
};
}  // namespace

void SkimpyOffsetMap::Hash(Bytes key, uint8_t out[kHashSize]) {
  // MD5 over the key bytes only (no length prefix, no salt), as SkimpyOffsetMap.hashInto.
  thread_local Md5 md5;
  unsigned int len = 0;
  if (md5.md && md5.ctx && EVP_DigestInit_ex2(md5.ctx, md5.md, nullptr) &&
      EVP_DigestUpdate(md5.ctx, key.data(), key.size()) && EVP_DigestFinal_ex(md5.ctx, out, &len))
    return;
  EVP_Digest(key.data(), key.size(), out, &len, EVP_md5(), nullptr);
}

void SkimpyOffsetMap::Prefetch(const std::vector<Bytes>& keys) {
  prepared_keys_.clear();
  prepared_spans_.clear();
  prepared_hashes_.resize(keys.size());
  prepared_next_ = 0;
  for (size_t i = 0; i < keys.size(); i++) {
    prepared_spans_.emplace_back(prepared_keys_.size(), keys[i].size());
    prepared_keys_.append(reinterpret_cast<const char*>(keys[i].data()), keys[i].size());
    Hash(keys[i], prepared_hashes_[i].data());
    __builtin_prefetch(bytes_ + size_t(SlotOf(prepared_hashes_[i].data(), 0)) * kBytesPerEntry);
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

bool SkimpyOffsetMap::IsEmpty(int32_t slot) const {
  // Kafka tests the first three longs of the slot for zero.
  const uint8_t* p = bytes_ + size_t(slot) * kBytesPerEntry;
  uint64_t w[3];
  std::memcpy(w, p, sizeof(w));
  return (w[0] | w[1] | w[2]) == 0;
}

bool SkimpyOffsetMap::Put(Bytes key, int64_t offset) {
  if (entries_ >= slots_) return false;
  uint8_t hash[kHashSize];
  HashOrPrepared(key, hash);
  for (int32_t attempt = 0;; attempt++) {
    int32_t slot = SlotOf(hash, attempt);
    uint8_t* p = bytes_ + size_t(slot) * kBytesPerEntry;
    if (IsEmpty(slot)) {
      touched_ = true;
      std::memcpy(p, hash, kHashSize);
      StoreBE64(p + kHashSize, uint64_t(offset));
      entries_++;
      break;
    }
    if (std::memcmp(p, hash, kHashSize) == 0) {
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
  // Kafka gives up after slots + hashSize - 4 attempts (the linear tail then covers every slot).
  int64_t max_attempts = int64_t(slots_) + kHashSize - 4;
  for (int64_t attempt = 0; attempt < max_attempts; attempt++) {
    int32_t slot = SlotOf(hash, int32_t(attempt));
    if (IsEmpty(slot)) return -1;
    const uint8_t* p = bytes_ + size_t(slot) * kBytesPerEntry;
    if (std::memcmp(p, hash, kHashSize) == 0) return int64_t(LoadBE64(p + kHashSize));
  }
  return -1;
}

void SkimpyOffsetMap::Clear() {
  if (touched_) std::memset(bytes_, 0, memory_);
  touched_ = false;
  prepared_spans_.clear();
  prepared_next_ = 0;
  entries_ = 0;
  latest_offset_ = -1;
}

int32_t MaxDesiredMapSize(int32_t slots, double load_factor) {
  return int32_t(double(slots) * load_factor);
}

}  // namespace klf
