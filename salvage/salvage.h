// Salvaging a damaged partition directory as Kafka's recovery would (`klf repair --salvage`,
// kafka-on-disk-format.md §14: LogSegment.recover / LogLoader.recoverLog). The input is never edited:
// the intact prefix is copied into a new partition directory through segment_writer's PartitionWriter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "segment_writer/segment_writer.h"
#include "segment_writer/file_writer.h"

namespace klf {

struct SalvageDrop {
  std::string file;
  uint64_t position = 0;  // first byte dropped
  uint64_t bytes = 0;     // bytes dropped from there to the end of the file
  // Offsets of the entries dropped that could still be framed (nullopt when none could be read).
  std::optional<int64_t> first_offset, last_offset;
  int batches = 0;             // framed entries among the dropped bytes
  bool whole_segment = false;  // a later segment deleted because an earlier one was truncated
  // The .log exists but cannot be read (a FIFO, a directory, a symlink loop, no permission): nothing
  // of it is known, so first_offset..last_offset are the offsets its name and the next segment's name
  // give it (last_offset unset for the last segment), and `bytes` is 0.
  bool unreadable = false;
  std::string reason;
};

struct SalvageResult {
  std::string out_partition_dir;
  int segments_kept = 0;
  int batches_kept = 0;
  int64_t log_end_offset = 0;
  std::vector<SalvageDrop> dropped;
  // Every file of the partition (and its log directory's checkpoints) that exists but cannot be read,
  // as "<path>: <why>". A .log among them is also in `dropped`; indexes and snapshots are rebuilt; a
  // leader-epoch-checkpoint, partition.metadata or checkpoint file that cannot be read is not carried
  // into the copy.
  std::vector<std::string> unreadable;
};

struct SalvageOptions {
  LogConfig config;
  int64_t producer_id_expiration_ms = 86400000;
  bool force = false;
};

// Copies `in` (a partition directory) to `<out>/<name>/` truncating the first segment that holds an
// invalid entry at that entry (bad size, bad CRC, records that do not decode or fail verify's record
// checks, offsets or leader epochs that go back -- blamed on the batch before when it alone is out of
// line -- or do not fit the segment) and deleting every later segment, as Kafka's recovery does; indexes,
// `.txnindex`, producer snapshots and leader-epoch-checkpoint are rebuilt. A .log that cannot be read
// ends the log at its base offset the same way (its offsets are dropped, never taken as absent).
// Reports every dropped range and every file that could not be read.
bool SalvagePartition(Env* env, const std::string& in, const std::string& out, const SalvageOptions& options,
                      SalvageResult* result, std::string* error);

}  // namespace klf
