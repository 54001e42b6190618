// Producer-state snapshot files `NNNNNNNNNNNNNNNNNNNN.snapshot` (spec kafka-on-disk-format.md §10).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "segment_reader/bytes.h"
#include "segment_reader/problem.h"

namespace klf {

struct ProducerSnapshotEntry {
  int64_t producer_id = 0;
  int16_t epoch = 0;
  int32_t last_sequence = -1;
  int64_t last_offset = -1;  // last offset of the producer's last data batch
  int32_t offset_delta = 0;  // lastOffset - firstOffset of that batch
  int64_t timestamp = -1;    // producer's last timestamp
  int32_t coordinator_epoch = -1;
  int64_t current_txn_first_offset = -1;  // -1: no open transaction
  // An entry whose lastOffset is negative has no batch metadata in Kafka (readSnapshot keeps
  // BatchMetadata only for offset >= 0: a producer whose only batch left is a marker), and
  // ProducerStateEntry.firstSeq()/firstDataOffset() are then NO_SEQUENCE and -1.
  bool has_batch() const { return last_offset >= 0; }
  int32_t first_sequence() const;  // lastSequence - offsetDelta, with Kafka's wrap; -1 without a batch
  int64_t first_offset() const { return has_batch() ? last_offset - offset_delta : -1; }
  bool operator==(const ProducerSnapshotEntry&) const = default;
};

struct ProducerSnapshot {
  int64_t offset = 0;  // from the file name: state of every batch below this offset
  int16_t version = 0;
  uint32_t crc = 0;
  bool crc_valid = false;
  std::vector<ProducerSnapshotEntry> entries;  // in file order
};

// Returns false (and reports) when the version, CRC or layout is wrong; entries that decoded are kept.
bool ParseProducerSnapshot(const std::string& file, Bytes data, int64_t offset, ProducerSnapshot* out,
                           ProblemSink* sink);

// The exact bytes Kafka writes for these entries, in the given order (callers that need byte
// equality with Kafka order entries as Java's HashMap iterates them: see JavaHashMapOrder).
std::string EncodeProducerSnapshot(const std::vector<ProducerSnapshotEntry>& entries);

// Reorders producer ids as a java.util.HashMap<Long, ...> built by inserting them in the given order
// would iterate them (spec §10). Used to write snapshots byte-identical to Kafka's.
std::vector<int64_t> JavaHashMapOrder(const std::vector<int64_t>& insertion_order);

// The key order of a java.util.HashMap<Long, ...> that also sees removals (expired producers,
// truncation) and clear(): Java never shrinks the table, so the order of the remaining keys depends
// on the largest size the map ever had. JavaHashMapOrder(ids) == Put(each id) then Keys().
class JavaLongHashMapOrder {
 public:
  void Put(int64_t key);              // a new key goes to the tail of its bucket; an existing key stays
  void Remove(int64_t key);           // unlinks the key; the others keep their places
  void Clear();                       // HashMap.clear(): empties every bucket, keeps the capacity
  std::vector<int64_t> Keys() const;  // iteration order
  size_t capacity() const { return table_.size(); }
  size_t size() const { return size_; }

 private:
  struct Node {
    int64_t key;
    uint32_t hash;
  };
  void Resize();
  std::vector<std::vector<Node>> table_;
  size_t size_ = 0;
  size_t threshold_ = 0;
};

}  // namespace klf
