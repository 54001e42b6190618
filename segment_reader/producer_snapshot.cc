// Producer-state snapshots (spec kafka-on-disk-format.md §10; ProducerStateManager.readSnapshot /
// writeSnapshot, generated message ProducerSnapshot version 1).
#include "segment_reader/producer_snapshot.h"

#include <fmt/format.h>

#include "segment_reader/crc.h"

namespace klf {
namespace {

constexpr int16_t kSnapshotVersion = 1;
constexpr size_t kHeaderSize = 10;  // version, crc, entry count
constexpr size_t kCrcStart = 6;     // the CRC covers [6, EOF)
constexpr size_t kEntrySize = 46;

}  // namespace

int32_t ProducerSnapshotEntry::first_sequence() const {
  // DefaultRecordBatch.decrementSequence: sequences wrap from Integer.MAX_VALUE to 0. Java int
  // arithmetic wraps on overflow (damaged files can hold any values), so compute modulo 2^32.
  if (!has_batch()) return -1;
  uint32_t seq = uint32_t(last_sequence);
  uint32_t dec = uint32_t(offset_delta);
  if (last_sequence < offset_delta) return int32_t(uint32_t(INT32_MAX) - (dec - seq) + 1u);
  return int32_t(seq - dec);
}

bool ParseProducerSnapshot(const std::string& file, Bytes data, int64_t offset, ProducerSnapshot* out,
                           ProblemSink* sink) {
  *out = ProducerSnapshot{};
  out->offset = offset;
  if (data.size() < 2) {
    Report(
        sink, Severity::kError, file, 0, "snapshot-size",
        fmt::format("file is {} bytes; a producer snapshot has at least a {}-byte header", data.size(), kHeaderSize));
    return false;
  }
  out->version = LoadI16(data.data());
  // readSnapshot accepts only version 1 ("Snapshot contained an unknown file version").
  if (out->version != kSnapshotVersion) {
    Report(sink, Severity::kError, file, 0, "snapshot-version",
           fmt::format("unknown snapshot version {}; expected {}", out->version, kSnapshotVersion));
    return false;
  }
  if (data.size() < kHeaderSize) {
    Report(
        sink, Severity::kError, file, 0, "snapshot-size",
        fmt::format("file is {} bytes; a producer snapshot has at least a {}-byte header", data.size(), kHeaderSize));
    return false;
  }
  out->crc = LoadBE32(data.data() + 2);
  uint32_t computed = Crc32c(data.subspan(kCrcStart));
  out->crc_valid = computed == out->crc;
  bool ok = true;
  if (!out->crc_valid) {
    Report(sink, Severity::kError, file, 2, "snapshot-crc",
           fmt::format("stored CRC-32C 0x{:08x} does not match 0x{:08x} computed over bytes [6, {}); "
                       "Kafka deletes such a snapshot and tries an older one",
                       out->crc, computed, data.size()));
    ok = false;
  }
  int32_t count = LoadI32(data.data() + 6);
  const size_t available = (data.size() - kHeaderSize) / kEntrySize;
  if (count < 0) {
    // The generated reader turns a negative array length into a null array, which the
    // non-nullable producerEntries field cannot hold.
    Report(sink, Severity::kError, file, 6, "snapshot-entry-count",
           fmt::format("negative entry count {}; expected 0 or more", count));
    return false;
  }
  size_t n = size_t(count);
  if (n > available) {
    Report(sink, Severity::kError, file, kHeaderSize + available * kEntrySize, "snapshot-entry-count",
           fmt::format("entry count {} needs {} bytes of entries but only {} follow the header; "
                       "{} whole entries decoded",
                       count, n * kEntrySize, data.size() - kHeaderSize, available));
    n = available;
    ok = false;
  } else if (kHeaderSize + n * kEntrySize != data.size()) {
    Report(sink, Severity::kError, file, kHeaderSize + n * kEntrySize, "snapshot-trailing-bytes",
           fmt::format("{} bytes follow the {} entries; expected end of file",
                       data.size() - kHeaderSize - n * kEntrySize, count));
    ok = false;
  }
  out->entries.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = data.data() + kHeaderSize + i * kEntrySize;
    ProducerSnapshotEntry e;
    e.producer_id = LoadI64(p);
    e.epoch = LoadI16(p + 8);
    e.last_sequence = LoadI32(p + 10);
    e.last_offset = LoadI64(p + 14);
    e.offset_delta = LoadI32(p + 22);
    e.timestamp = LoadI64(p + 26);
    e.coordinator_epoch = LoadI32(p + 34);
    e.current_txn_first_offset = LoadI64(p + 38);
    out->entries.push_back(e);
  }
  return ok;
}

std::string EncodeProducerSnapshot(const std::vector<ProducerSnapshotEntry>& entries) {
  std::string out;
  out.reserve(kHeaderSize + entries.size() * kEntrySize);
  PutBE16(&out, uint16_t(kSnapshotVersion));
  PutBE32(&out, 0);  // CRC, filled in below
  PutBE32(&out, uint32_t(entries.size()));
  for (const auto& e : entries) {
    PutBE64(&out, uint64_t(e.producer_id));
    PutBE16(&out, uint16_t(e.epoch));
    PutBE32(&out, uint32_t(e.last_sequence));
    PutBE64(&out, uint64_t(e.last_offset));
    PutBE32(&out, uint32_t(e.offset_delta));
    PutBE64(&out, uint64_t(e.timestamp));
    PutBE32(&out, uint32_t(e.coordinator_epoch));
    PutBE64(&out, uint64_t(e.current_txn_first_offset));
  }
  uint32_t crc = Crc32c(AsBytes(std::string_view(out).substr(kCrcStart)));
  StoreBE32(reinterpret_cast<uint8_t*>(out.data()) + 2, crc);
  return out;
}

// java.util.HashMap iteration order for Long keys (Java 8+):
//  * hash(key) = h ^ (h >>> 16) with h = Long.hashCode = (int)(v ^ (v >>> 32));
//  * bucket = hash & (capacity - 1); the table is created with capacity 16 on the first put and
//    doubles when size exceeds capacity * 0.75;
//  * a new key is appended at the tail of its bucket's list; re-putting a key keeps its place;
//  * resize splits every bucket into a "lo" list (hash & oldCap == 0, same index) and a "hi" list
//    (index + oldCap), each keeping the relative order;
//  * a bucket that reaches 9 nodes while the table is smaller than 64 triggers a resize instead of
//    treeification (treeifyBin), which is modelled here.
// Not modelled: buckets that become red-black trees (9+ colliding keys with capacity >= 64) order
// new nodes next to their tree parent, not at the tail, and removals may untreeify them. That needs 9
// or more producer ids colliding in one bucket of a 64+ slot table (not seen with real producer ids,
// which are allocated in sequence); for such maps the order within that one bucket may differ.
// Iteration visits buckets in index order, each bucket's list in order.
namespace {
uint32_t JavaLongHash(int64_t v) {
  uint64_t u = uint64_t(v);
  uint32_t h = uint32_t(u ^ (u >> 32));  // Long.hashCode
  return h ^ (h >> 16);                  // HashMap.hash spreads the high half into the low half
}
}  // namespace

void JavaLongHashMapOrder::Resize() {
  size_t old_cap = table_.size();
  size_t new_cap = old_cap == 0 ? 16 : old_cap * 2;
  std::vector<std::vector<Node>> next(new_cap);
  for (size_t j = 0; j < old_cap; ++j) {
    for (const Node& n : table_[j]) next[(n.hash & old_cap) == 0 ? j : j + old_cap].push_back(n);
  }
  table_ = std::move(next);
  threshold_ = new_cap * 3 / 4;
}

void JavaLongHashMapOrder::Put(int64_t key) {
  if (table_.empty()) Resize();
  uint32_t hash = JavaLongHash(key);
  auto& bucket = table_[hash & (table_.size() - 1)];
  for (const Node& n : bucket) {
    if (n.key == key) return;
  }
  bucket.push_back(Node{key, hash});
  // putVal: appending the 9th node of a bin calls treeifyBin, which resizes while capacity < 64.
  if (bucket.size() >= 9 && table_.size() < 64) Resize();
  if (++size_ > threshold_) Resize();
}

void JavaLongHashMapOrder::Remove(int64_t key) {
  if (table_.empty()) return;
  auto& bucket = table_[JavaLongHash(key) & (table_.size() - 1)];
  for (auto it = bucket.begin(); it != bucket.end(); ++it) {
    if (it->key == key) {
      bucket.erase(it);
      --size_;
      return;
    }
  }
}

void JavaLongHashMapOrder::Clear() {
  for (auto& bucket : table_) bucket.clear();
  size_ = 0;
}

std::vector<int64_t> JavaLongHashMapOrder::Keys() const {
  std::vector<int64_t> out;
  out.reserve(size_);
  for (const auto& bucket : table_) {
    for (const Node& n : bucket) out.push_back(n.key);
  }
  return out;
}

std::vector<int64_t> JavaHashMapOrder(const std::vector<int64_t>& insertion_order) {
  JavaLongHashMapOrder map;
  for (int64_t key : insertion_order) map.Put(key);
  return map.Keys();
}

}  // namespace klf
