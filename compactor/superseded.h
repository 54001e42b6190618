// Which records of a cleaning round's dirty range the offset map supersedes, recorded as the map is
// built, so that the cleaning pass can drop a batch that keeps nothing without reading its records.
//
// The pass keeps a data record only if its offset is at least map.get(key) (spec kafka-log-cleaner.md
// §8.2). For a record the map pass put, that holds exactly when no record with the same key digest
// was put after it: the map's entry still holds the record's own offset. So once the map is built, a
// v2 data batch of the dirty range all of whose records were put and then superseded loses every
// record whatever their contents (§8.2: removed-superseded), and the pass can drop or empty it
// (§9) from its header alone: the records are not decompressed, decoded, hashed or looked up a
// second time. With 10% of the records live (each key written ~10 times) that is most batches. Of
// the other dirty batches, each record put is decided by its bit (Found) instead of hashing its key
// and looking it up again.
//
// Three bits an offset of the range: put (a record at this offset was put), live (the map still
// holds this offset for its key) and tombstone (the record put had no value; the pass counts the
// tombstones it removes). Bits name records by offset, which needs offsets unique, so the tracker
// turns itself off for the round when a batch does not start after the previous one's last offset, a
// record put lies outside its batch's offsets or not after the previous record put, a v0/v1 batch
// is read (their batch offsets are not their records'), or the range is wider than kMaxOffsets
// (3 bits an offset: at most 12 MiB, twice while two threads build the map). Off, it answers "no"
// and the pass reads every batch.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "segment_reader/batch.h"

namespace klf {

class SupersededRecords {
 public:
  static constexpr int64_t kMaxOffsets = int64_t(1) << 25;

  // Tracks offsets [start, end) from empty; off when the range is empty or wider than kMaxOffsets.
  void Reset(int64_t start, int64_t end);
  void Off();
  bool on() const { return on_; }

  // Each batch the map pass reads, in file order, before its records are put.
  void OnBatch(const BatchHeader& h);
  // A record the map pass put: `previous` is the offset the map held for its key before (-1: none).
  void OnPut(int64_t offset, int64_t previous, bool tombstone);
  // The map's entry that held `offset` was overwritten by a later record of the key (a merge of the
  // second half's map, offset_map.h MergeNewer).
  void Supersede(int64_t offset);
  // Takes in `newer`, which tracked the same range for the batches after this one's (the second half
  // of a two-thread map build), after the newer map's entries were put over this one's with
  // Supersede called for every entry they replaced. Off unless both are on and newer's first batch
  // starts after this one's last.
  void MergeNewer(const SupersededRecords& newer);

  // True when `h` is a v2 data batch inside the range and at or below `latest_offset` (the built
  // map's latest offset) all of whose record_count records were put and superseded: the pass would
  // remove every one as superseded. *tombstones: how many of them had no value.
  bool AllSuperseded(const BatchHeader& h, int64_t latest_offset, int64_t* tombstones) const;
  // Of a record at `offset` the map pass put: map.get(key) as far as §8.2's `offset >= map.get(key)`
  // can tell, so the pass need not hash and look its key up: the record's own offset while the map
  // still holds it for its key, else a later one (offset + 1; the map's exact value decides nothing
  // more). nullopt when no record at `offset` was put (or the tracker is off).
  std::optional<int64_t> Found(int64_t offset) const {
    if (!on_ || offset < start_ || offset >= end_ || !Test(put_, offset - start_)) return std::nullopt;
    return Test(live_, offset - start_) ? offset : offset + 1;
  }

 private:
  // Bits [from, to] of `bits` (offsets relative to start_): how many are set.
  int64_t Count(const std::vector<uint64_t>& bits, int64_t from, int64_t to) const;
  static bool Test(const std::vector<uint64_t>& bits, int64_t i) { return (bits[size_t(i >> 6)] >> (i & 63)) & 1; }
  static void Set(std::vector<uint64_t>* bits, int64_t i) { (*bits)[size_t(i >> 6)] |= uint64_t(1) << (i & 63); }
  static void Clear(std::vector<uint64_t>* bits, int64_t i) { (*bits)[size_t(i >> 6)] &= ~(uint64_t(1) << (i & 63)); }

  bool on_ = false;
  int64_t start_ = 0, end_ = 0;
  std::vector<uint64_t> put_, live_, tombstone_;
  bool has_batch_ = false, has_put_ = false;
  int64_t first_base_ = 0;  // the first batch's base offset
  int64_t batch_base_ = 0;  // the last batch's base and last offsets
  int64_t last_batch_ = 0;
  int64_t last_put_ = 0;  // the last record put
};

}  // namespace klf
