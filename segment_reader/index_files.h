// Per-segment index files (spec kafka-on-disk-format.md §8, §9): `.index`, `.timeindex`, `.txnindex`.
//
// Parsers take the whole file's bytes, or read the file in bounded windows (Read*File: an index can
// be a preallocated, sparse 2 GiB file, or tens of MiB of garbage), and report problems to a sink;
// they never fail on bad input, they return what decodes. Garbage makes a problem of every entry:
// callers that keep problems pass a CappedSink (problem.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "segment_reader/bytes.h"
#include "segment_reader/problem.h"

namespace klf {

class Env;

constexpr int kOffsetIndexEntrySize = 8;
constexpr int kTimeIndexEntrySize = 12;
constexpr int kTxnIndexEntrySize = 34;

struct OffsetIndexEntry {
  int64_t offset = 0;    // absolute (base offset + relative)
  int32_t position = 0;  // byte position in the .log
  bool operator==(const OffsetIndexEntry&) const = default;
};

struct TimeIndexEntry {
  int64_t timestamp = 0;
  int64_t offset = 0;  // absolute
  bool operator==(const TimeIndexEntry&) const = default;
};

// One `.txnindex` entry: an aborted transaction (AbortedTxn.java).
struct AbortedTxn {
  int16_t version = 0;
  int64_t producer_id = 0;
  int64_t first_offset = 0;
  int64_t last_offset = 0;         // offset of the ABORT marker
  int64_t last_stable_offset = 0;  // LSO when the marker was appended
  bool operator==(const AbortedTxn&) const = default;
};

struct OffsetIndex {
  std::vector<OffsetIndexEntry> entries;
  uint64_t file_size = 0;
  // Slots after the last entry that are zero-filled preallocated space (Kafka's rule: an entry with
  // relative offset 0 at slot >= 1 marks the start of unused space).
  uint64_t unused_slots = 0;
};

struct TimeIndex {
  std::vector<TimeIndexEntry> entries;
  uint64_t file_size = 0;
  uint64_t unused_slots = 0;
};

struct TxnIndex {
  std::vector<AbortedTxn> entries;
  uint64_t file_size = 0;
};

// `file` names the file in problems; `base_offset` is the segment's (from the file name).
OffsetIndex ParseOffsetIndex(const std::string& file, Bytes data, int64_t base_offset, ProblemSink* sink);
TimeIndex ParseTimeIndex(const std::string& file, Bytes data, int64_t base_offset, ProblemSink* sink);
TxnIndex ParseTxnIndex(const std::string& file, Bytes data, ProblemSink* sink);
// As Parse*Index, reading `path` with pread(2) in 1 MiB windows. The zero-filled preallocated tail
// Kafka leaves after the entries of an active segment's index is recognised without being read
// (holes are skipped with SEEK_DATA, written zeros are read backwards from the end). Returns false
// with *error only when the file cannot be opened or read (a read that fails past the first window is
// a problem of the file at that position, check offset-index-size / time-index-size). Reads through
// `env` (segment_reader/env.h; null: Env::Default()).
bool ReadOffsetIndexFile(const std::string& path, int64_t base_offset, ProblemSink* sink, OffsetIndex* out,
                         std::string* error, Env* env = nullptr);
bool ReadTimeIndexFile(const std::string& path, int64_t base_offset, ProblemSink* sink, TimeIndex* out,
                       std::string* error, Env* env = nullptr);

// Encoders (exact bytes Kafka writes for these entries), used by segment_writer and tests.
void EncodeOffsetIndexEntry(const OffsetIndexEntry& e, int64_t base_offset, std::string* out);
void EncodeTimeIndexEntry(const TimeIndexEntry& e, int64_t base_offset, std::string* out);
void EncodeAbortedTxn(const AbortedTxn& e, std::string* out);

}  // namespace klf
