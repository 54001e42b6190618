// Parser for the kafka-oracle `<dir>.dump.txt` files: Kafka's own view of every batch, record, index
// entry, transaction-index entry, producer snapshot and small text file of one partition directory.
//
// Format (one partition per file):
//   # partition-dir <name>
//   segment <file> size=<n>
//   batch k=v ...                        (belongs to the last segment)
//     record k=v ...                     (belongs to the last batch)
//   offset-index <file> entries=<n>      then "  offset=.. position=.." lines
//   time-index <file> entries=<n>        then "  timestamp=.. offset=.." lines
//   txn-index <file> entries=<n>         then "  producerId=.. firstOffset=.. lastOffset=.. lastStableOffset=.."
//   producer-snapshot <file>             then "  producerId=.. epoch=.. firstSeq=.. ..." lines
//   file <name>                          then its content, each line indented by two spaces
// Values are numbers, true/false, none/null, "quoted strings", 0x-hex bytes or [h:"v",...] header lists.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace klf::oracle {

// The raw key=value pairs of one line, values as written (quotes removed from strings).
using Fields = std::map<std::string, std::string>;

struct DumpRecord {
  Fields fields;
  int64_t offset = 0;
  int64_t timestamp = -1;
  std::optional<std::string> key;  // bytes; nullopt = null. 0x-hex values are decoded to bytes.
  std::optional<std::string> value;
  std::optional<int32_t> sequence;          // absent on legacy records
  std::optional<std::string> control_type;  // "COMMIT", "ABORT", ...
  std::optional<int32_t> coordinator_epoch;
  bool has_headers = false;  // a headers=[...] field was shown
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

struct DumpBatch {
  Fields fields;
  int64_t base_offset = 0, last_offset = 0;
  std::optional<int32_t> count;  // null for v0/v1
  uint64_t position = 0, size = 0;
  int magic = 2;
  std::string compression, timestamp_type;
  int64_t max_timestamp = -1;
  int64_t producer_id = -1;
  int32_t producer_epoch = -1, base_sequence = -1, last_sequence = -1, partition_leader_epoch = -1;
  bool is_transactional = false, is_control = false, is_valid = false;
  std::optional<int64_t> delete_horizon_ms;
  uint32_t crc = 0;
  std::vector<DumpRecord> records;
};

struct DumpSegment {
  std::string file;  // e.g. 00000000000000000000.log
  uint64_t size = 0;
  std::vector<DumpBatch> batches;
};

struct DumpOffsetIndex {
  std::string file;
  int64_t entries = 0;
  std::vector<std::pair<int64_t, int64_t>> offset_position;
};

struct DumpTimeIndex {
  std::string file;
  int64_t entries = 0;
  std::vector<std::pair<int64_t, int64_t>> timestamp_offset;
};

struct DumpTxnEntry {
  int64_t producer_id = 0, first_offset = 0, last_offset = 0, last_stable_offset = 0;
};
struct DumpTxnIndex {
  std::string file;
  int64_t entries = 0;
  std::vector<DumpTxnEntry> aborted;
};

struct DumpProducerEntry {
  Fields fields;
  int64_t producer_id = 0;
  int32_t epoch = 0, first_seq = 0, last_seq = 0;
  int64_t first_data_offset = 0, last_data_offset = 0, last_timestamp = 0;
  int32_t coordinator_epoch = -1;
  std::optional<int64_t> current_txn_first_offset;  // "none" = nullopt
};
struct DumpProducerSnapshot {
  std::string file;
  std::vector<DumpProducerEntry> entries;
};

struct DumpTextFile {
  std::string name;
  std::vector<std::string> lines;  // without the two-space indent
};

struct OracleDump {
  std::string partition_dir;
  std::vector<DumpSegment> segments;
  std::vector<DumpOffsetIndex> offset_indexes;
  std::vector<DumpTimeIndex> time_indexes;
  std::vector<DumpTxnIndex> txn_indexes;
  std::vector<DumpProducerSnapshot> producer_snapshots;
  std::vector<DumpTextFile> files;
};

// Parses one dump file. Returns false with *error ("<path>:<line>: ...") on anything unexpected.
bool ParseOracleDump(const std::string& path, OracleDump* out, std::string* error);

// Splits `k=v k="quoted v" k=[a:"b"]` into fields (quoted values unescaped).
bool ParseFields(const std::string& text, Fields* out, std::string* error);

// Every partition directory under `root` (recursively) that holds .log files and has a sibling
// `<dir>.dump.txt` (or, when it sits in a log directory, `<logdir>.dump.txt` beside that log
// directory): pairs of (partition directory, dump file), sorted.
std::vector<std::pair<std::string, std::string>> FindOraclePartitionDirs(const std::string& root);

}  // namespace klf::oracle
