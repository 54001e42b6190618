// How `klf dump` prints what the readers decoded: one printer for JSON Lines, one for readable
// text in the style of kafka-dump-log.sh (spec dump-log-segments.md §3-§4, minus its noise).
//
// dump.cc walks the inputs and calls these in file order; a printer only formats. The JSON shape
// of a batch is fixed by cli.md; the other entry objects are documented in README.md ("JSON
// objects of klf dump") and always carry "file" and "type".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/output.h"
#include "segment_reader/batch.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/index_files.h"
#include "segment_reader/internal_topics.h"
#include "segment_reader/layout.h"
#include "segment_reader/problem.h"
#include "segment_reader/producer_snapshot.h"

namespace klf::cli {

// The records of a batch as an internal-topic decoder read them (--decoder), parallel to
// RecordDecoder::records(): nullopt where a record did not decode (dump.cc reported why; the raw
// bytes are printed).
using DecodedRecords = std::vector<std::optional<DecodedRecord>>;

class DumpPrinter {
 public:
  virtual ~DumpPrinter() = default;

  // Starts the entries of one file. `name` is its classified file name (kind, offset in the name).
  virtual void BeginFile(const std::string& path, const FileName& name) = 0;
  // The partition of the files that follow (from the partition directory's name; nullopt for a log
  // dir's own files or a file outside a partition directory).
  virtual void SetPartition(const std::optional<TopicPartition>&) {}
  // Ends them. With an --offsets filter, the text printer names only files that printed something.
  virtual void EndFile() {}
  // A batch (or legacy entry). `decoded` holds its records when they were decoded and are to be
  // printed (--records), else nullptr. `header` is the most complete header known (for legacy
  // wrappers, the one completed by decoding). `internal` holds the records as decoded by the
  // topic's decoder, when one applies.
  virtual void Batch(const BatchHeader& header, const RecordDecoder* decoded,
                     const DecodedRecords* internal = nullptr) = 0;
  virtual void OffsetIndexEntry(size_t slot, const klf::OffsetIndexEntry& e) = 0;
  virtual void TimeIndexEntry(size_t slot, const klf::TimeIndexEntry& e) = 0;
  virtual void TxnIndexEntry(size_t slot, const AbortedTxn& e) = 0;
  virtual void ProducerSnapshotEntry(size_t slot, int64_t snapshot_offset, const klf::ProducerSnapshotEntry& e) = 0;
  virtual void LeaderEpochEntry(const klf::LeaderEpochEntry& e) = 0;
  virtual void PartitionMetadataEntry(const PartitionMetadata& m) = 0;
  // An entry of a log-dir offset checkpoint; `checkpoint` is the file kind's name
  // ("cleaner-offset-checkpoint", ...).
  virtual void OffsetCheckpointEntry(std::string_view checkpoint, const klf::OffsetCheckpointEntry& e) = 0;
  virtual void MetaPropertiesEntry(const MetaProperties& m) = 0;
  virtual void CleanShutdownEntry(const CleanShutdown& c) = 0;
  // KRaft's quorum-state file (a JSON object).
  virtual void QuorumStateEntry(const OrderedJson& state) = 0;
  // Something worth a line for a human that is not data (an empty file, preallocated index slots).
  // JSON prints nothing: its readers count entries.
  virtual void Note(std::string_view text) = 0;
  // A problem found in an input file.
  virtual void PrintProblem(const Problem& p) = 0;
};

// `per_record`: a `.log`'s records each as their own object (cli/record_out.h) instead of batch objects
// (`klf dump --json --per-record`); a batch without records prints nothing then.
std::unique_ptr<DumpPrinter> MakeJsonDumpPrinter(Output* out, BytesFormat bytes, bool per_record = false);

// How the text printer prints records, as kafka-dump-log's flags ask (its aliases in `klf dump`).
struct TextRecordStyle {
  bool print_data = true;             // key and payload (--print-data-log); --deep-iteration alone: off
  bool skip_record_metadata = false;  // --skip-record-metadata: `| key: <k> payload: <v>` only
};
// `quiet_empty_files`: a file with nothing to print (all filtered out) prints no "Dumping" header.
std::unique_ptr<DumpPrinter> MakeTextDumpPrinter(Output* out, BytesFormat bytes, bool quiet_empty_files = false,
                                                 TextRecordStyle style = {});

}  // namespace klf::cli
