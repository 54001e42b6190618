// One replica of a partition as a broker would load it and as its consumers would read it: the input
// of `klf diff`, `klf lso` and `klf repair`.
//
// LoadReplica streams every segment once (records are decoded and reduced to fixed-size MD5 digests,
// like the cleaner's offset map keeps keys: memory grows by ~90 bytes per record, never by key or
// value size) and derives:
//   * the broker's view after a restart: log start and end offsets, the high watermark from the log
//     dir's replication-offset-checkpoint, producer state loaded from the latest valid .snapshot plus
//     the log after it (segment_reader/producer_state.h), open transactions and the last stable offset;
//   * the transaction structure of the whole log as replay from the log start builds it (which
//     records each marker commits or aborts, including transactions merged across a lost marker);
//   * what consumers get: read_uncommitted (below the high watermark), read_committed (below the LSO,
//     without aborted transactions, using the `.txnindex` entries exactly as Kafka's fetch path and
//     consumer do), and the compacted key->value view (latest read_committed value per key).
// Key and value bytes are not kept; ReadRecordBytes fetches them again for the few records a report
// names.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "segment_reader/bytes.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/index_files.h"
#include "segment_reader/problem.h"

namespace klf {

using Digest = std::array<uint8_t, 16>;
Digest Md5(Bytes b);
std::string DigestHex(const Digest& d);

struct DigestHash {
  size_t operator()(const Digest& d) const {
    size_t h;
    static_assert(sizeof(h) <= sizeof(Digest));
    __builtin_memcpy(&h, d.data(), sizeof(h));
    return h;
  }
};

// How the log itself decides a record (marker replay from the log start).
enum class TxnFate : uint8_t {
  kNone,       // not transactional
  kCommitted,  // closed by a COMMIT
  kAborted,    // closed by an ABORT
  kOpen,       // no marker yet: still open at the log end
};
const char* TxnFateName(TxnFate f);

// One record (data or control), without its bytes.
struct RecordDigest {
  int64_t offset = 0;
  int64_t timestamp = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t leader_epoch = -1;
  bool transactional = false;
  bool control = false;
  bool has_key = false;
  bool has_value = false;      // false: tombstone (data records)
  TxnFate fate = TxnFate::kNone;
  bool read_committed = false;    // delivered to a read_committed consumer
  bool read_uncommitted = false;  // delivered to a read_uncommitted consumer
  int32_t txn = -1;               // index into ReplicaState::txns, for transactional data records
  uint32_t batch = 0;             // index into ReplicaState::batches
  Digest key{};                   // MD5(key), zero for a null key
  Digest value{};                 // MD5(value), zero for a null value
  Digest content{};               // MD5 over key, value, headers, timestamp: record identity
};

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

struct BatchSpan {
  int64_t base_offset = 0, last_offset = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  bool transactional = false, control = false;
  int32_t records = 0;
  uint32_t segment = 0;   // index into ReplicaState::segment_files
  uint64_t position = 0;  // byte position in that segment
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

struct KeyState {
  int64_t offset = 0;  // offset of the latest read_committed record for the key
  bool tombstone = false;
  Digest value{};
  uint32_t record = 0;  // index into ReplicaState::records
};

struct ReplicaOptions {
  // Clock for snapshot loading (producer expiration). Default: the newest record timestamp seen.
  std::optional<int64_t> now_ms;
  int64_t producer_id_expiration_ms = 86400000;
};

struct ReplicaState {
  std::string path;   // partition directory as given
  std::string label;  // short name for reports (the broker's log dir name, else the path)
  std::optional<TopicPartition> tp;
  std::optional<std::string> topic_id;  // partition.metadata
  std::optional<std::string> cluster_id;  // parent's meta.properties
  std::optional<int32_t> node_id;

  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  int64_t high_watermark = 0;
  bool high_watermark_from_checkpoint = false;
  int64_t last_stable_offset = 0;
  std::optional<int64_t> cleaner_checkpoint;  // firstDirtyOffset
  std::optional<int64_t> snapshot_offset;     // producer snapshot the load started from

  std::vector<std::string> segment_files;
  std::vector<BatchSpan> batches;
  std::vector<RecordDigest> records;  // ascending offsets, data and control records
  std::vector<Marker> markers;        // ascending offsets
  std::vector<Txn> txns;              // by first offset
  std::vector<OpenTxn> open_txns;     // broker-loaded producer state
  std::vector<AbortedTxn> txn_index;  // every .txnindex entry, by first offset
  std::vector<OffsetGap> gaps;
  std::vector<DamagedRange> damaged;
  std::unordered_map<Digest, KeyState, DigestHash> key_view;  // compacted read_committed view
  std::vector<Problem> notes;  // problems met while loading (decode errors, txnindex vs markers)
  int64_t max_timestamp = -1;

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

// Loads a partition directory. Returns false with *error only when it cannot be read at all.
bool LoadReplica(const std::string& partition_dir, const ReplicaOptions& options, ReplicaState* out,
                 std::string* error);

struct RecordBytes {
  std::optional<std::string> key, value;
  int64_t timestamp = -1;
};
// Reads one record's key and value again from the segment (nullopt when the offset is not held).
std::optional<RecordBytes> ReadRecordBytes(const ReplicaState& replica, int64_t offset);

}  // namespace klf
