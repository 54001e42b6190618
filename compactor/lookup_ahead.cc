#include "compactor/lookup_ahead.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "compactor/partition_log.h"
#include "segment_reader/batch.h"
#include "segment_reader/file.h"
#include "segment_reader/key_digest.h"

namespace klf {
namespace {

constexpr size_t kEntriesPerBlock = 512;  // answers handed over at a time
constexpr size_t kMaxReady = 64;          // blocks queued before the thread waits (bounds memory)
constexpr size_t kReadSize = size_t(256) << 10;
// After finding the caller past it, batches the thread skips to get ahead again.
constexpr int kLeadBatches = 32;
// Decoded batches queued for the pass (bounds memory; one larger batch may wait alone). 8 MiB: the
// same speed as 32 MiB on the 256 MiB lz4 and zstd bench inputs, at 32 / 43 MiB peak RSS instead of
// 52 / 76 MiB (docs/PERFORMANCE.md).
constexpr size_t kMaxDecodedBytes = size_t(8) << 20;
constexpr size_t kMaxSpareDecoded = 64;  // batches given back, kept for the thread to reuse

}  // namespace

LookupAhead::LookupAhead(const SkimpyOffsetMap& map, std::vector<Segment> segments, size_t max_batch_bytes, Env* env,
                         const SupersededRecords* superseded)
    : map_(map),
      segments_(std::move(segments)),
      max_batch_bytes_(std::max(max_batch_bytes, kReadSize)),
      env_(env),
      superseded_(superseded) {
  thread_ = std::thread([this] { Run(); });
}

LookupAhead::~LookupAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool LookupAhead::Publish(std::unique_ptr<Block> block, std::unique_ptr<Block>* next) {
  std::unique_lock<std::mutex> lock(mu_);
  if (ready_.size() >= kMaxReady) {
    waiting_ = true;
    cv_.notify_all();
    WaitRunningLent(lock, [this] { return stop_ || ready_.size() < kMaxReady; });
    waiting_ = false;
  }
  if (stop_) return false;
  ready_.push_back(std::move(block));
  if (!spare_.empty()) {
    *next = std::move(spare_.back());
    spare_.pop_back();
    (*next)->entries.clear();
    (*next)->keys.clear();
  } else {
    *next = std::make_unique<Block>();
    (*next)->entries.reserve(kEntriesPerBlock + 64);
  }
  ready_count_.store(ready_.size(), std::memory_order_release);
  cv_.notify_all();
  return true;
}

bool LookupAhead::PublishDecoded(std::unique_ptr<Decoded> decoded, std::unique_ptr<Decoded>* next) {
  std::unique_lock<std::mutex> lock(mu_);
  auto room = [&] { return stop_ || decoded_.empty() || decoded_bytes_ + decoded->bytes <= kMaxDecodedBytes; };
  if (!room()) {
    waiting_ = true;
    cv_.notify_all();
    WaitRunningLent(lock, room);
    waiting_ = false;
  }
  if (stop_) return false;
  decoded_bytes_ += decoded->bytes;
  decoded_.push_back(std::move(decoded));
  decoded_count_.store(decoded_.size(), std::memory_order_release);
  if (!spare_decoded_.empty()) {
    *next = std::move(spare_decoded_.back());
    spare_decoded_.pop_back();
  } else {
    *next = std::make_unique<Decoded>();
  }
  return true;
}

bool LookupAhead::TakeDecoded(const std::string& path, const BatchHeader& h, std::unique_ptr<Decoded>* out) {
  auto miss = [&] {
    // The caller decodes this batch itself: the thread need not.
    if (h.last_offset > caller_offset_.load(std::memory_order_relaxed))
      caller_offset_.store(h.last_offset, std::memory_order_relaxed);
    return false;
  };
  if (decoded_count_.load(std::memory_order_acquire) == 0) return miss();
  bool taken = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!decoded_.empty()) {
      Decoded& d = *decoded_.front();
      if (d.last_offset > h.last_offset) break;
      const bool same = d.last_offset == h.last_offset && d.position == h.position && d.crc == h.crc &&
                        d.size_in_bytes == h.size_in_bytes && segments_[d.segment].path == path;
      decoded_bytes_ -= d.bytes;
      std::unique_ptr<Decoded> front = std::move(decoded_.front());
      decoded_.pop_front();
      if (same) {
        front.swap(*out);  // front now holds the caller's previous batch, if any: kept for the thread
        taken = true;
      }
      if (front && spare_decoded_.size() < kMaxSpareDecoded) spare_decoded_.push_back(std::move(front));
      if (taken) break;
    }
    decoded_count_.store(decoded_.size(), std::memory_order_release);
  }
  cv_.notify_all();
  if (!taken) return miss();
  batches_taken_++;
  return true;
}

bool LookupAhead::DecodeAndLookUp(const BatchView& b, size_t segment, RecordDecoder* scratch, Decoded* d) {
  if (!scratch->Decode(b, segments_[segment].path, nullptr)) return false;
  const std::vector<Record>& records = scratch->records();
  const int64_t latest = map_.latest_offset();
  keys_.clear();
  key_records_.clear();
  kept_.clear();
  d->found.clear();
  d->elided = d->elided_tombstones = 0;
  size_t bytes = 0;
  for (size_t j = 0; j < records.size(); j++) {
    const Record& r = records[j];
    std::optional<int64_t> found;
    const bool looked_up = r.key && r.offset <= latest;
    if (looked_up && superseded_) found = superseded_->Found(r.offset);  // a record the map pass put
    if (found && *found > r.offset) {
      d->elided++;
      if (!r.value) d->elided_tombstones++;
      continue;
    }
    kept_.push_back(uint32_t(j));
    d->found.push_back(found);
    // The queue's count: the records, their keys and values (the bulk of the section).
    bytes +=
        sizeof(Record) + sizeof(std::optional<int64_t>) + (r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0);
    if (looked_up && !found) {
      keys_.push_back(*r.key);
      key_records_.push_back(d->found.size() - 1);
    }
  }
  d->decoder.CopyRecords(*scratch, kept_);
  digests_.resize(keys_.size());
  Md5Many(keys_.data(), keys_.size(), digests_.data());
  for (const KeyDigest& k : digests_) map_.PrefetchSlot(k.data());
  for (size_t i = 0; i < keys_.size(); i++) d->found[key_records_[i]] = map_.GetHashed(digests_[i].data());
  d->answers = int64_t(keys_.size());
  const BatchHeader& h = b.header;
  d->segment = segment;
  d->position = h.position;
  d->last_offset = h.last_offset;
  d->crc = h.crc;
  d->size_in_bytes = h.size_in_bytes;
  d->bytes = std::max<size_t>(bytes, 1024);
  return true;
}

void LookupAhead::TEST_WaitUntilIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_ || waiting_ || ready_.size() >= kMaxReady; });
}

void LookupAhead::RunLent(std::unique_lock<std::mutex>& lock) {
  std::function<void()>* job = lent_.front();
  lent_.pop_front();
  lent_count_.store(lent_.size(), std::memory_order_relaxed);
  lent_running_++;
  lock.unlock();
  (*job)();
  lock.lock();
  lent_running_--;
  jobs_run_by_thread_++;
  cv_.notify_all();
}

template <typename Ready>
void LookupAhead::WaitRunningLent(std::unique_lock<std::mutex>& lock, Ready ready) {
  while (true) {
    cv_.wait(lock, [&] { return ready() || !lent_.empty(); });
    if (ready()) return;
    RunLent(lock);
  }
}

void LookupAhead::RunLentWhileAhead() {
  while (lent_count_.load(std::memory_order_relaxed) > 0 && decoded_count_.load(std::memory_order_acquire) > 0) {
    std::unique_lock<std::mutex> lock(mu_);
    if (lent_.empty() || stop_) return;
    RunLent(lock);
  }
}

void LookupAhead::Lend(std::function<void()>* job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    lent_.push_back(job);
    lent_count_.store(lent_.size(), std::memory_order_relaxed);
  }
  cv_.notify_all();
}

void LookupAhead::Reclaim() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!lent_.empty()) {
    std::function<void()>* job = lent_.front();
    lent_.pop_front();
    lent_count_.store(lent_.size(), std::memory_order_relaxed);
    lock.unlock();
    (*job)();
    lock.lock();
  }
  cv_.wait(lock, [this] { return lent_running_ == 0; });
}

void LookupAhead::Run() {
  RunLoop();
  std::unique_lock<std::mutex> lock(mu_);
  done_ = true;
  cv_.notify_all();
  // Every segment read: the thread serves lent jobs until the pass ends.
  WaitRunningLent(lock, [this] { return stop_; });
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the look-ahead thread's read-decode-digest loop; its stop conditions are the thread's contract
void LookupAhead::RunLoop() {
  // Any surprise (unreadable file, damaged batch, a batch larger than the buffer may grow) ends the
  // look-ahead: the pass asks the map itself from there on, and reports the damage when it gets there.
  RecordDecoder decoder;
  std::vector<Bytes> keys;
  std::vector<int64_t> offsets;
  std::vector<KeyDigest> digests;
  size_t window = kReadSize;                   // grows for a batch larger than it
  auto decoded = std::make_unique<Decoded>();  // the next batch to hand over
  auto block = std::make_unique<Block>();
  block->entries.reserve(kEntriesPerBlock + 64);
  const int64_t latest = map_.latest_offset();
  int skip = 0;
  bool ok = true;
  for (size_t si = 0; si < segments_.size(); si++) {
    const Segment& seg = segments_[si];
    std::string open_error;
    WindowReader input;  // pread into its buffer, or the mapping (PlaceRead), as the pass reads
    if (!input.Open(seg.path, seg.size, &open_error, env_)) break;
    uint64_t pos = 0;
    while (ok && pos < seg.size) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) ok = false;
      }
      if (!ok) break;
      const size_t n = size_t(std::min<uint64_t>(window, seg.size - pos));
      Bytes chunk;
      if (!input.Read(pos, n, &chunk, &open_error)) {
        ok = false;
        break;
      }
      size_t p = 0;
      BatchView b;
      std::string error;
      while (true) {
        EntryStatus st = NextEntry(chunk, p, pos + p, &b, &error);
        if (st == EntryStatus::kCorrupt) ok = false;
        if (st != EntryStatus::kOk) break;
        p += b.bytes.size();
        const BatchHeader& h = b.header;
        if (h.is_control || (h.magic >= 2 && h.record_count == 0)) continue;
        int64_t tombstones = 0;
        if (superseded_ && superseded_->AllSuperseded(h, latest, &tombstones)) continue;  // the pass skips it too
        if (h.last_offset <= caller_offset_.load(std::memory_order_relaxed)) {
          skip = kLeadBatches;  // the caller has passed this batch: get ahead of it
          continue;
        }
        if (skip > 0) {
          skip--;
          continue;
        }
        if (HandsOver(h)) {
          RunLentWhileAhead();  // the pass's compression first when it is behind
          // Decoded whole for the pass, with its answers (TakeDecoded); none of them go to Find.
          if (!DecodeAndLookUp(b, si, &decoder, decoded.get())) {
            ok = false;
            break;
          }
          if (!PublishDecoded(std::move(decoded), &decoded)) return;
          continue;
        }
        if (!decoder.DecodeKeys(b, seg.path, nullptr)) {
          ok = false;
          break;
        }
        keys.clear();
        offsets.clear();
        for (const Record& r : decoder.records()) {
          // A record the map pass put is answered by its bit (the pass does not ask Find).
          if (r.key && r.offset <= latest && !(superseded_ && superseded_->Found(r.offset))) {
            keys.push_back(*r.key);
            offsets.push_back(r.offset);
          }
        }
        digests.resize(keys.size());
        Md5Many(keys.data(), keys.size(), digests.data());
        for (const KeyDigest& d : digests) map_.PrefetchSlot(d.data());
        for (size_t i = 0; i < keys.size(); i++) {
          block->entries.push_back(Entry{offsets[i], map_.GetHashed(digests[i].data()), uint32_t(block->keys.size()),
                                         uint32_t(keys[i].size())});
          block->keys.append(reinterpret_cast<const char*>(keys[i].data()), keys[i].size());
        }
        if (block->entries.size() >= kEntriesPerBlock && !Publish(std::move(block), &block)) return;
      }
      if (!ok) break;
      if (p == 0) {
        if (n < window) break;  // the segment ends with a partial batch
        if (window >= max_batch_bytes_) {
          ok = false;
          break;
        }
        window = std::min(window * 2, max_batch_bytes_);
        continue;
      }
      pos += p;
    }
    if (!ok) break;
  }
  std::unique_ptr<Block> unused;
  if (!block->entries.empty()) Publish(std::move(block), &unused);
}

std::optional<int64_t> LookupAhead::Find(int64_t offset, Bytes key) {
  asked_++;
  caller_offset_.store(offset, std::memory_order_relaxed);
  while (true) {
    if (current_ && next_ < current_->entries.size()) {
      const Entry& e = current_->entries[next_];
      if (e.offset < offset) {
        next_++;
        continue;
      }
      if (e.offset > offset) return std::nullopt;
      next_++;
      // The answer depends only on the key: the same key bytes get the same answer.
      if (e.key_size == key.size() &&
          (key.empty() || std::memcmp(current_->keys.data() + e.key_at, key.data(), key.size()) == 0)) {
        answered_++;
        return e.found;
      }
      return std::nullopt;
    }
    // Never wait: when nothing is ready the caller asks the map itself. (Checked without the lock
    // first: when the thread is behind, that is every call.)
    if (ready_count_.load(std::memory_order_acquire) == 0) return std::nullopt;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ready_.empty()) return std::nullopt;
      if (current_) spare_.push_back(std::move(current_));
      current_ = std::move(ready_.front());
      ready_.pop_front();
      ready_count_.store(ready_.size(), std::memory_order_release);
    }
    cv_.notify_all();
    next_ = 0;
  }
}

}  // namespace klf
