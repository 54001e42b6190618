// Consumer groups' committed offsets from `__consumer_offsets-N`, replayed as the group coordinator
// replays its partition at load (OffsetMetadataManager.replay):
//   - an OffsetCommit record (key record type 0 or 1: group, topic, partition) sets the group's
//     offset for that partition; a later record of the same key replaces it; a tombstone (null value)
//     deletes it;
//   - a transactional OffsetCommit (a batch with isTransactional) is pending for its producer until
//     that producer's COMMIT marker applies it or its ABORT marker drops it; one still pending at the
//     log end is not a committed offset;
//   - records below the partition's log start offset are not read; other record types (group
//     metadata, KIP-848 and share-group records) change no committed offset.
// Copies of one partition from several brokers are read together: each offset counts once (a record
// one copy's cleaner removed may survive in another), and copies holding different records at one
// offset are reported.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "segment_reader/problem.h"

namespace klf {

struct CommittedOffset {
  std::string group, topic;
  int32_t partition = 0;
  int64_t offset = -1;  // the next offset the group will consume
  std::optional<int32_t> leader_epoch;
  int64_t commit_timestamp = -1;
  // The record that set it.
  std::string file;
  uint64_t position = 0;
  int64_t record_offset = -1;
  bool transactional = false;
};

struct CommittedOffsets {
  std::vector<std::string> partition_dirs;  // the `__consumer_offsets-N` directories read
  // (group, topic, partition) -> the latest committed offset.
  std::map<std::tuple<std::string, std::string, int32_t>, CommittedOffset> offsets;
  int64_t pending_transactional = 0;  // offset commits still waiting for a marker at the log end

  // Every group's committed offset on `topic`-`partition`, by group name.
  std::vector<CommittedOffset> ForPartition(const std::string& topic, int32_t partition) const;
};

// The groups that consumed records from `first_affected` on: a committed offset is the next offset the
// group will read, so one above `first_affected` means the group read (at least) that record. Each must
// rewind to `first_affected` to read the affected records again once they are repaired. By group name.
struct GroupExposure {
  CommittedOffset committed;
  int64_t rewind_to = -1;
};
std::vector<GroupExposure> GroupsPast(const CommittedOffsets& offsets, const std::string& topic, int32_t partition,
                                      int64_t first_affected);

bool LoadCommittedOffsets(const std::vector<std::string>& consumer_offsets_dirs, CommittedOffsets* out,
                          ProblemSink* sink, std::string* error);

// `__consumer_offsets-N` directories among `paths`: a PATH that is one, and those held by a PATH that is
// a log directory. Sorted, each once.
std::vector<std::string> FindConsumerOffsetsDirs(const std::vector<std::string>& paths);

}  // namespace klf
