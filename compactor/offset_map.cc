#include "compactor/offset_map.h"

#include <openssl/evp.h>

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

void SkimpyOffsetMap::Free::operator()(uint8_t* p) const { std::free(p); }

SkimpyOffsetMap::SkimpyOffsetMap(int32_t memory)
    : bytes_(static_cast<uint8_t*>(std::calloc(size_t(memory), 1))), memory_(size_t(memory)),
      slots_(memory / kBytesPerEntry) {
  if (!bytes_) throw std::bad_alloc();
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
  const uint8_t* p = bytes_.get() + size_t(slot) * kBytesPerEntry;
  uint64_t w[3];
  std::memcpy(w, p, sizeof(w));
  return (w[0] | w[1] | w[2]) == 0;
}

bool SkimpyOffsetMap::Put(Bytes key, int64_t offset) {
  if (entries_ >= slots_) return false;
  uint8_t hash[kHashSize];
  Hash(key, hash);
  for (int32_t attempt = 0;; attempt++) {
    int32_t slot = SlotOf(hash, attempt);
    uint8_t* p = bytes_.get() + size_t(slot) * kBytesPerEntry;
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
  Hash(key, hash);
  // Kafka gives up after slots + hashSize - 4 attempts (the linear tail then covers every slot).
  int64_t max_attempts = int64_t(slots_) + kHashSize - 4;
  for (int64_t attempt = 0; attempt < max_attempts; attempt++) {
    int32_t slot = SlotOf(hash, int32_t(attempt));
    if (IsEmpty(slot)) return -1;
    const uint8_t* p = bytes_.get() + size_t(slot) * kBytesPerEntry;
    if (std::memcmp(p, hash, kHashSize) == 0) return int64_t(LoadBE64(p + kHashSize));
  }
  return -1;
}

void SkimpyOffsetMap::Clear() {
  if (touched_) std::memset(bytes_.get(), 0, memory_);
  touched_ = false;
  entries_ = 0;
  latest_offset_ = -1;
}

int32_t MaxDesiredMapSize(int32_t slots, double load_factor) {
  return int32_t(double(slots) * load_factor);
}

}  // namespace klf
