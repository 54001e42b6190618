// What consumers of a loaded partition receive (Kafka's fetch path and the consumer's CompletedFetch),
// written once for every command: diff, lso, repair and the simulator.
//
//   * read_uncommitted: data records from the log start offset up to the high watermark;
//   * read_committed: data records from the log start offset up to the last stable offset, without
//     the records of aborted transactions. The broker returns the aborted transactions (the
//     `.txnindex` entries) with the fetch; the consumer, batch by batch in offset order, adds the
//     producer of every aborted transaction whose first offset is at or below the batch's last
//     offset to its aborted producers, removes a producer again at that producer's ABORT marker,
//     and skips a transactional batch of an aborted producer;
//   * the compacted key view: the latest read_committed record per key (a null value deletes it).
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "partition/loaded_log.h"
#include "segment_reader/batch.h"
#include "segment_reader/index_files.h"

namespace klf {

// The offsets each isolation level may deliver.
struct ConsumerBounds {
  int64_t log_start_offset = 0, high_watermark = 0, last_stable_offset = 0;
  static ConsumerBounds Of(const LoadedLog& log) {
    return ConsumerBounds{log.log_start_offset, log.high_watermark, log.last_stable_offset};
  }
  // A data record at `offset` (control records are never delivered).
  bool ReadUncommitted(int64_t offset) const { return offset >= log_start_offset && offset < high_watermark; }
  bool BelowLastStable(int64_t offset) const { return offset >= log_start_offset && offset < last_stable_offset; }
};

// CompletedFetch's aborted-transaction filter (read_committed). Feed it every batch in offset order.
class ReadCommittedFilter {
 public:
  // `aborted`: the aborted transactions, sorted by first offset (LoadedLog::aborted_txns); must
  // outlive the filter.
  explicit ReadCommittedFilter(std::span<const AbortedTxn> aborted) : aborted_(aborted) {}
  // One batch. `abort_marker`: it is a control batch whose first record is an ABORT marker. Returns
  // true when its records are skipped as aborted.
  bool SkipsBatch(const BatchHeader& batch, bool abort_marker);

 private:
  std::span<const AbortedTxn> aborted_;
  size_t next_ = 0;
  std::set<int64_t> aborted_producers_;
};

enum class Isolation { kReadUncommitted, kReadCommitted };

// What a consumer does with one data record at or above the log start offset.
enum class Delivery {
  kDelivered,  // the consumer receives it
  kAborted,    // read_committed: below the last stable offset, skipped as aborted
  kBeyond,     // at or above the high watermark (read_uncommitted) or the last stable offset
};

// One data record of the log (never a control record, never below the log start offset), its batch
// and what a consumer of `isolation` does with it.
using ConsumeVisitor = std::function<void(const BatchHeader& batch, const Record& record, Delivery delivery)>;

// A consumer of `isolation` fetching `log` from its log start offset to its end: every data record at
// or above the log start offset is visited in offset order with its Delivery. Returns false with
// *error (file and position) when a segment cannot be read or a batch's records do not decode.
bool ConsumeLog(const LoadedLog& log, Isolation isolation, const ConsumeVisitor& visit, ProblemSink* sink,
                std::string* error);

// The same consumer as a fetch from an offset, for a command that shows what it receives (klf consume):
// it stops where the broker stops serving instead of visiting the records beyond.
struct FetchOptions {
  // The consumer's first fetch offset (its position; below the log start offset it fetches from the
  // log start). The broker reads from the batch that holds it, the consumer drops the batch's records
  // below it, and the aborted transactions returned with the fetch are those that end at or after it
  // (LocalLog.collectAbortedTransactions(startOffset, ...)): earlier batches are never read.
  int64_t fetch_offset = 0;
  // The last offset wanted (inclusive): reading stops after it.
  int64_t last_offset = INT64_MAX;
};
// Damage ends what is served: at the first error in a `.log` (a batch that fails its CRC, broken
// framing, records that do not decode, offsets out of order) or a torn or zero-filled tail of a
// segment other than the last, a broker's recovery truncates the log there (LogSegment.recover; the
// segments after it go too), and a consumer that meets the bytes without recovery fails with
// CorruptRecordException (check.crcs) and cannot move past them. A torn or zero-filled tail of the
// last segment is routine (recovery drops it and it was never served) unless the high watermark a
// broker checkpointed lies beyond the log end: then records that were served are gone with it.
struct FetchEnd {
  std::optional<Problem> damage;  // the first damage met (file, byte position, what was expected)
  // The offset after the last batch read whole: where the consumer's position stays.
  int64_t next_offset = 0;
  // The damage cut what is served short: reading met it before the last offset wanted. Reading stops
  // at the high watermark (read_uncommitted) or the last stable offset (read_committed), so damage
  // beyond them is not met; damage that made the load end the log early (the high watermark capped to
  // that log end, as Kafka's recovery truncates) is met right at the bound, and cut acknowledged records.
  bool truncated = false;
};
// One delivered or skipped data record: the segment it is in (index into LoadedLog::segments), its batch
// and the decoder that holds its headers (valid during the call only).
using FetchVisitor = std::function<void(size_t segment, const BatchHeader& batch, const Record& record,
                                        const RecordDecoder& decoded, Delivery delivery)>;
// FetchLog visits the records from options.fetch_offset up to the bound of `isolation`, the last offset
// wanted or the first damage, whichever comes first. Returns false with *error when a segment cannot be
// opened; damage is not an error (see *end).
bool FetchLog(const LoadedLog& log, Isolation isolation, const FetchOptions& options, const FetchVisitor& visit,
              ProblemSink* sink, FetchEnd* end, std::string* error);

}  // namespace klf
