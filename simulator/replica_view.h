// What one replica of a partition would serve if it were the leader, read from its directory alone
// (the simulator's summary, and the per-replica offsets of coordinated compaction): the LoadedLog a
// broker loads (offsets, LSO, `.txnindex`, open transactions), what a READ_COMMITTED consumer fetching
// from the log start offset receives (partition/consumer_view.h, ConsumeLog): the records, the offsets
// it skips as aborted and the key -> value map it ends with (a null value deletes the key), and MCCO
// and MXFO (partition/coordination.h; spec redpanda-coordinated-compaction.md §2, §8).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "partition/coordination.h"
#include "partition/loaded_log.h"
#include "segment_reader/problem.h"

namespace klf {

struct ServedRecord {
  int64_t offset = 0;
  int64_t timestamp = 0;
  std::optional<std::string> key;    // nullopt = null
  std::optional<std::string> value;  // nullopt = tombstone
  int64_t producer_id = -1;
  bool transactional = false;
};

struct ReplicaView {
  std::string path;  // the partition directory (after the run: in the output directory)
  // The replica as a broker loads it: log start and end, high watermark, last stable offset, cleaner
  // checkpoint, every `.txnindex` entry (aborted_txns) and the open transactions (producer_state).
  LoadedLog log;
  std::vector<ServedRecord> read_committed;  // below the LSO, aborted data and markers skipped
  // Offsets of data records below the LSO that read_committed skips as aborted.
  std::vector<int64_t> hidden_offsets;
  int64_t records_in_log = 0;  // data records from the log start to the log end (read_uncommitted)
  std::map<std::string, std::string> key_values;
  CoordinationOffsets coordination;  // MCCO and MXFO
};

// Reads `partition_dir` (never modified). `now_ms` applies producer.id.expiration.ms when producer
// snapshots are loaded. Returns false with *error when the directory or a segment cannot be read or
// a batch does not decode (problems also go to `sink`). Reads through `env` (null: Env::Default()).
bool LoadReplicaView(const std::string& partition_dir, int64_t now_ms, int64_t producer_id_expiration_ms,
                     ReplicaView* out, ProblemSink* sink, std::string* error, Env* env = nullptr);

}  // namespace klf
