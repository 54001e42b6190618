// What one replica of a partition would serve if it were the leader, read from its directory alone
// (the simulator's summary, and the per-replica offsets of coordinated compaction).
//
//   * last stable offset: producer state as a broker loads it (snapshot + replay), capped by the
//     high watermark of replication-offset-checkpoint (ProducerStateManager.firstUnstableOffset);
//   * read_committed: the records a READ_COMMITTED consumer fetching from the log start offset
//     receives: records from there up to the LSO, with the aborted transactions of the segments'
//     `.txnindex` files filtered out as the consumer does (CompletedFetch: a producer's transactional
//     batches are skipped from an aborted transaction's first offset until that producer's ABORT
//     marker);
//   * the key -> value map that read_committed consumer ends with (a null value deletes the key);
//   * MCCO and MXFO (spec redpanda-coordinated-compaction.md §2, §8).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "segment_reader/index_files.h"
#include "segment_reader/problem.h"

namespace klf {

class Env;

struct ServedRecord {
  int64_t offset = 0;
  int64_t timestamp = 0;
  std::optional<std::string> key;    // nullopt = null
  std::optional<std::string> value;  // nullopt = tombstone
  int64_t producer_id = -1;
  bool transactional = false;
};

struct OpenTxnInfo {
  int64_t producer_id = 0;
  int64_t first_offset = 0;
};

struct ReplicaView {
  std::string path;
  int64_t log_start_offset = 0, log_end_offset = 0, high_watermark = 0, last_stable_offset = 0;
  std::optional<int64_t> cleaner_checkpoint;
  std::vector<OpenTxnInfo> open_txns;
  std::vector<AbortedTxn> aborted_txns;      // every `.txnindex` entry, in segment order
  std::vector<ServedRecord> read_committed;  // below the LSO, aborted data and markers skipped
  // Offsets of data records below the LSO that read_committed skips as aborted.
  std::vector<int64_t> hidden_offsets;
  int64_t records_in_log = 0;  // data records from the log start to the log end (read_uncommitted)
  std::map<std::string, std::string> key_values;
  // Coordinated compaction (exclusive offsets): MCCO = the cleaner checkpoint (the log start offset
  // when there is none, as Kafka's firstDirtyOffset) capped at the log end; MXFO = the first
  // unstable offset, else the log end.
  int64_t mcco = 0, mxfo = 0;
};

// Reads `partition_dir` (never modified). `now_ms` applies producer.id.expiration.ms when producer
// snapshots are loaded. Returns false with *error when the directory or a segment cannot be read or
// a batch does not decode (problems also go to `sink`). Reads through `env` (null: Env::Default()).
bool LoadReplicaView(const std::string& partition_dir, int64_t now_ms, int64_t producer_id_expiration_ms,
                     ReplicaView* out, ProblemSink* sink, std::string* error, Env* env = nullptr);

}  // namespace klf
