#include "partition/consumer_view.h"

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

bool ConsumeLog(const LoadedLog& log, Isolation isolation, const ConsumeVisitor& visit, ProblemSink* sink,
                std::string* error) {
  const ConsumerBounds bounds = ConsumerBounds::Of(log);
  ReadCommittedFilter filter(log.aborted_txns);
  RecordDecoder decoder;
  bool ok = true;
  auto each_batch = [&](size_t segment, const BatchView& b) {
    const BatchHeader& h = b.header;
    const bool has_records = h.magic < 2 || h.record_count != 0;
    if (has_records && !decoder.Decode(b, log.segments[segment].log_path, sink)) {
      *error = log.segments[segment].log_path + ": position " + std::to_string(h.position) +
               ": the batch's records do not decode";
      return ok = false;
    }
    bool abort_marker = false;
    if (h.is_control && has_records && !decoder.records().empty()) {
      ControlRecord c;
      std::string why;
      abort_marker = ParseControlRecord(decoder.records()[0], &c, &why) && c.type == ControlType::kAbort;
    }
    const bool aborted = filter.SkipsBatch(h, abort_marker);
    if (h.is_control || !has_records) return true;
    for (const Record& r : decoder.records()) {
      // Below the log start offset nothing is served (a fetch there is out of range; the consumer drops
      // the records of a batch that straddles it), e.g. after DeleteRecords.
      if (r.offset < log.log_start_offset) continue;
      Delivery d = Delivery::kDelivered;
      if (isolation == Isolation::kReadUncommitted) {
        if (!bounds.ReadUncommitted(r.offset)) d = Delivery::kBeyond;
      } else if (!bounds.BelowLastStable(r.offset)) {
        d = Delivery::kBeyond;
      } else if (aborted) {
        d = Delivery::kAborted;
      }
      visit(h, r, d);
    }
    return true;
  };
  return log.ForEachBatch(each_batch, sink, error) && ok;
}

}  // namespace klf
