// One record as a consumer receives it, printed the same way by `klf consume` and by
// `klf dump --json --per-record` (kcat -J style: one JSON object per record instead of one per batch).
//
// The JSON object carries the field names of `klf dump --json --records` records (cli.md "dump":
// offset, timestamp, key, value, sequence, headers, control) plus where the record is and the batch
// fields that decide what a consumer sees:
//   {"type": "record", "file", "position" (of its batch), "topic", "partition", "offset", "timestamp",
//    "timestampType", "key", "value", "headers", "sequence", "producerId", "producerEpoch",
//    "partitionLeaderEpoch", "isTransactional", "isControl"[, "control"]}
// Fields a magic does not have are null, as in dump (legacy messages: headers, sequence and the producer
// fields). The text line: `offset: O <TimestampType>: T (ISO time) key: K value: V headers: [k: v, ...]`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/output.h"
#include "segment_reader/batch.h"
#include "segment_reader/bytes.h"

namespace klf::cli {

// Where the records come from: the topic and partition (from the partition directory's name; null
// for a lone file), and the `.log` (as given).
struct RecordSource {
  std::optional<std::string> topic;
  std::optional<int32_t> partition;
  std::string file;
};

// `decoded_json`: with a topic decoder (dump --decoder), the record as it decoded, already JSON ("null"
// when it did not), printed as "decoded" the way dump's batch records print it.
void WriteRecordJson(Output* out, const RecordSource& source, const BatchHeader& batch, const Record& record,
                     const RecordDecoder& decoded, BytesFormat bytes, const std::string* decoded_json = nullptr);
void WriteRecordText(Output* out, const BatchHeader& batch, const Record& record, const RecordDecoder& decoded,
                     BytesFormat bytes);

}  // namespace klf::cli
