#include "partition/consumer_view.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "segment_reader/java_long.h"

namespace klf {

bool ReadCommittedFilter::SkipsBatch(const BatchHeader& h, bool abort_marker) {
  // Only batches with a producer id take part (CompletedFetch: currentBatch.hasProducerId()).
  if (h.magic < 2 || !h.has_producer_id()) return false;
  while (next_ < aborted_.size() && aborted_[next_].first_offset <= h.last_offset) {
    aborted_producers_.insert(aborted_[next_].producer_id);
    ++next_;
  }
  if (abort_marker) {
    aborted_producers_.erase(h.producer_id);
    return false;
  }
  return h.is_transactional && aborted_producers_.count(h.producer_id) != 0;
}

}  // namespace klf

namespace klf {
namespace {

// Passes every problem on and keeps the first that ends what is served (FetchEnd).
class DamageSink : public ProblemSink {
 public:
  explicit DamageSink(ProblemSink* next) : next_(next) {}
  void Report(const Problem& p) override {
    if (next_) next_->Report(p);
    if (damage || p.file != log_path) return;
    const std::string_view check = p.check;
    const bool tail = check == "truncated-tail" || check == "zero-tail";
    if (p.severity == Severity::kError || check == "resync" || (tail && (!last_segment || tail_lost_records)))
      damage = p;
  }
  std::string log_path;  // the segment being read: problems of other files do not end the fetch
  bool last_segment = false;
  // The last segment's torn tail held records below the high watermark a broker checkpointed: records
  // that were served (acknowledged) are gone, not only an unfinished write.
  bool tail_lost_records = false;
  std::optional<Problem> damage;

 private:
  ProblemSink* next_;
};

// The one consumer pass behind ConsumeLog and FetchLog.
struct Pass {
  int64_t fetch_offset = 0;         // at or above the log start offset
  int64_t last_offset = INT64_MAX;  // inclusive
  bool stop_at_bound = false;       // stop at the high watermark / last stable offset
  bool stop_at_damage = false;      // FetchEnd's damage; otherwise records that do not decode are an error
};

// NOLINTNEXTLINE(readability-function-cognitive-complexity): CompletedFetch's rules (bounds, aborted filter, control batches) in one pass, as Kafka's
bool Consume(const LoadedLog& log, Isolation isolation, const Pass& pass, const FetchVisitor& visit, ProblemSink* sink,
             FetchEnd* end, std::string* error) {
  *end = FetchEnd();
  const ConsumerBounds bounds = ConsumerBounds::Of(log);
  const int64_t fetch_offset = pass.fetch_offset;
  // Nothing at or above the high watermark (read_uncommitted) or the last stable offset
  // (read_committed) is served.
  const int64_t bound = isolation == Isolation::kReadUncommitted ? bounds.high_watermark : bounds.last_stable_offset;
  end->next_offset = fetch_offset;
  // The aborted transactions a fetch from fetch_offset returns: those ending at or after it.
  std::vector<AbortedTxn> aborted;
  for (const AbortedTxn& t : log.aborted_txns)
    if (t.last_offset >= fetch_offset) aborted.push_back(t);
  ReadCommittedFilter filter(aborted);
  RecordDecoder decoder;
  DamageSink damage(sink);
  damage.tail_lost_records = log.high_watermark_checkpoint && *log.high_watermark_checkpoint > log.log_end_offset;
  bool done = false, failed = false;
  // NOLINTNEXTLINE(readability-function-cognitive-complexity): one batch of CompletedFetch.nextFetchedRecord: bounds, control, aborted filter in Kafka's order
  auto each_batch = [&](size_t segment, const BatchView& b) {
    if (pass.stop_at_damage && damage.damage) return false;
    const BatchHeader& h = b.header;
    if (h.last_offset < fetch_offset) return true;  // before the fetch position: never read
    const bool has_records = h.magic < 2 || h.record_count != 0;
    if (has_records && !decoder.Decode(b, log.segments[segment].log_path, &damage)) {
      if (!pass.stop_at_damage) {
        *error = log.segments[segment].log_path + ": position " + std::to_string(h.position) +
                 ": the batch's records do not decode";
        failed = true;
      }
      return false;
    }
    const BatchHeader& full = has_records ? decoder.header() : h;  // legacy wrappers: completed
    const int64_t first = full.base_offset_known ? full.base_offset : full.last_offset;
    if (first > pass.last_offset || (pass.stop_at_bound && first >= bound)) return !(done = true);
    end->next_offset = std::max(end->next_offset, JavaAdd(full.last_offset, 1));
    std::optional<ControlRecord> marker;
    if (full.is_control && has_records) marker = ControlBatchMarker(decoder.records());
    const bool abort_marker = marker && marker->type == ControlType::kAbort;
    const bool aborted_batch = filter.SkipsBatch(full, abort_marker);
    if (full.is_control || !has_records) return true;
    for (const Record& r : decoder.records()) {
      // Below the fetch offset (at least the log start offset) nothing is served: the consumer drops the
      // records of a batch that straddles it (e.g. after DeleteRecords).
      if (r.offset < fetch_offset || r.offset > pass.last_offset) continue;
      Delivery d = Delivery::kDelivered;
      if (isolation == Isolation::kReadUncommitted) {
        if (!bounds.ReadUncommitted(r.offset)) d = Delivery::kBeyond;
      } else if (!bounds.BelowLastStable(r.offset)) {
        d = Delivery::kBeyond;
      } else if (aborted_batch) {
        d = Delivery::kAborted;
      }
      visit(segment, full, r, decoder, d);
    }
    return true;
  };
  LoadedLog::SegmentVisitor v;
  v.before = [&](size_t i) {
    if (pass.stop_at_damage && damage.damage) return LoadedLog::Step::kStop;
    // A segment wholly before the fetch position is not read (the next one starts at or below it).
    const bool before_fetch = i + 1 < log.segments.size() && log.segments[i + 1].base_offset <= fetch_offset;
    return before_fetch ? LoadedLog::Step::kNextSegment : LoadedLog::Step::kNext;
  };
  v.begin = [&](size_t i, LogReader&) {
    damage.log_path = log.segments[i].log_path;
    damage.last_segment = i + 1 == log.segments.size();
  };
  v.batch = [&](size_t i, const BatchView& b) {
    return each_batch(i, b) ? LoadedLog::Step::kNext : LoadedLog::Step::kStop;
  };
  ReadOptions read;
  read.resync = !pass.stop_at_damage;  // nothing after damage is served: no need to look for it
  if (!log.ForEachBatch(v, &damage, error, read)) return false;
  if (failed) return false;
  end->damage = damage.damage;
  end->truncated = end->damage && end->next_offset <= pass.last_offset;
  return true;
}

}  // namespace

bool ConsumeLog(const LoadedLog& log, Isolation isolation, const ConsumeVisitor& visit, ProblemSink* sink,
                std::string* error) {
  Pass pass;
  pass.fetch_offset = log.log_start_offset;
  FetchEnd end;
  return Consume(
      log, isolation, pass,
      [&](size_t, const BatchHeader& batch, const Record& record, const RecordDecoder&, Delivery d) {
        visit(batch, record, d);
      },
      sink, &end, error);
}

bool FetchLog(const LoadedLog& log, Isolation isolation, const FetchOptions& options, const FetchVisitor& visit,
              ProblemSink* sink, FetchEnd* end, std::string* error) {
  Pass pass;
  pass.fetch_offset = std::max(options.fetch_offset, log.log_start_offset);
  pass.last_offset = options.last_offset;
  pass.stop_at_bound = true;
  pass.stop_at_damage = true;
  return Consume(log, isolation, pass, visit, sink, end, error);
}

}  // namespace klf
