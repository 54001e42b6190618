#include "compactor/superseded.h"

#include <bit>

namespace klf {

void SupersededRecords::Reset(int64_t start, int64_t end) {
  *this = SupersededRecords();
  if (end <= start || end - start > kMaxOffsets) return;
  on_ = true;
  start_ = start;
  end_ = end;
  size_t words = size_t((end - start + 63) / 64);
  put_.assign(words, 0);
  live_.assign(words, 0);
  tombstone_.assign(words, 0);
}

void SupersededRecords::Off() { *this = SupersededRecords(); }

void SupersededRecords::OnBatch(const BatchHeader& h) {
  if (!on_) return;
  if (h.magic < 2 || h.last_offset < h.base_offset || (has_batch_ && h.base_offset <= last_batch_)) return Off();
  if (!has_batch_) first_base_ = h.base_offset;
  has_batch_ = true;
  batch_base_ = h.base_offset;
  last_batch_ = h.last_offset;
}

void SupersededRecords::OnPut(int64_t offset, int64_t previous, bool tombstone) {
  if (!on_) return;
  if (!has_batch_ || offset < batch_base_ || offset > last_batch_ || (has_put_ && offset <= last_put_) ||
      offset < start_ || offset >= end_)
    return Off();
  has_put_ = true;
  last_put_ = offset;
  int64_t i = offset - start_;
  Set(&put_, i);
  Set(&live_, i);
  if (tombstone) Set(&tombstone_, i);
  Supersede(previous);
}

void SupersededRecords::Supersede(int64_t offset) {
  if (on_ && offset >= start_ && offset < end_) Clear(&live_, offset - start_);
}

void SupersededRecords::MergeNewer(const SupersededRecords& newer) {
  if (!on_) return;
  if (!newer.on_ || newer.start_ != start_ || newer.end_ != end_) return Off();
  if (!newer.has_batch_) return;
  if (has_batch_ && newer.first_base_ <= last_batch_) return Off();
  for (size_t w = 0; w < put_.size(); w++) {
    put_[w] |= newer.put_[w];
    live_[w] |= newer.live_[w];
    tombstone_[w] |= newer.tombstone_[w];
  }
  if (!has_batch_) first_base_ = newer.first_base_;
  has_batch_ = true;
  batch_base_ = newer.batch_base_;
  last_batch_ = newer.last_batch_;
  if (newer.has_put_) {
    has_put_ = true;
    last_put_ = newer.last_put_;
  }
}

int64_t SupersededRecords::Count(const std::vector<uint64_t>& bits, int64_t from, int64_t to) const {
  int64_t n = 0;
  size_t first = size_t(from >> 6), last = size_t(to >> 6);
  for (size_t w = first; w <= last; w++) {
    uint64_t word = bits[w];
    if (w == first) word &= ~uint64_t(0) << (from & 63);
    if (w == last && (to & 63) != 63) word &= (uint64_t(1) << ((to & 63) + 1)) - 1;
    n += std::popcount(word);
  }
  return n;
}

bool SupersededRecords::AllSuperseded(const BatchHeader& h, int64_t latest_offset, int64_t* tombstones) const {
  if (!on_ || h.magic < 2 || h.is_control || h.record_count <= 0 || h.base_offset < start_ || h.last_offset >= end_ ||
      h.last_offset > latest_offset || h.last_offset < h.base_offset)
    return false;
  int64_t from = h.base_offset - start_, to = h.last_offset - start_;
  if (Count(put_, from, to) != h.record_count || Count(live_, from, to) != 0) return false;
  *tombstones = Count(tombstone_, from, to);
  return true;
}

}  // namespace klf
