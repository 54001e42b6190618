#include "simulator/replica_view.h"

#include "partition/consumer_view.h"
#include "segment_reader/batch.h"

namespace klf {

bool LoadReplicaView(const std::string& partition_dir, int64_t now_ms, int64_t producer_id_expiration_ms,
                     ReplicaView* out, ProblemSink* sink, std::string* error, Env* env) {
  *out = ReplicaView();
  out->path = partition_dir;
  LoadOptions options;
  options.now_ms = now_ms;
  options.producer_id_expiration_ms = producer_id_expiration_ms;
  options.env = env;
  const LoadedLog& log = out->log;
  if (!LoadedLog::Open(partition_dir, options, &out->log, sink, error)) return false;
  if (!log.tp) {
    *error = partition_dir + ": not a readable partition directory <topic>-<partition>";
    return false;
  }
  out->coordination = CoordinationOffsetsOf(log);

  // The read_committed consumer fetching from the log start offset.
  auto consume = [&](const BatchHeader& h, const Record& r, Delivery d) {
    ++out->records_in_log;
    if (d == Delivery::kAborted) out->hidden_offsets.push_back(r.offset);
    if (d != Delivery::kDelivered) return;
    ServedRecord sr;
    sr.offset = r.offset;
    sr.timestamp = r.timestamp;
    if (r.key) sr.key = std::string(AsStringView(*r.key));
    if (r.value) sr.value = std::string(AsStringView(*r.value));
    sr.producer_id = h.producer_id;
    sr.transactional = h.is_transactional;
    if (sr.key) {
      if (sr.value)
        out->key_values[*sr.key] = *sr.value;
      else
        out->key_values.erase(*sr.key);
    }
    out->read_committed.push_back(std::move(sr));
  };
  return ConsumeLog(log, Isolation::kReadCommitted, consume, sink, error);
}

}  // namespace klf
