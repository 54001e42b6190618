#include "compactor/partition_log.h"

#include <algorithm>
#include <filesystem>

namespace klf {
namespace fs = std::filesystem;

LastRecords PartitionLog::LastRecordsOfActiveProducers() const {
  LastRecords r;
  for (const auto& [pid, entry] : loaded.producer_state.producers()) {
    std::optional<int64_t> last_data_offset;
    if (entry.last_data_offset() >= 0) last_data_offset = entry.last_data_offset();
    r[pid] = LastRecord{last_data_offset, entry.producer_epoch};
  }
  return r;
}

std::vector<AbortedTxn> PartitionLog::CollectAbortedTransactions(int64_t start, int64_t upper) const {
  std::vector<AbortedTxn> out;
  // From the segment containing `start` (floor); none → nothing.
  auto seg = std::upper_bound(segments.begin(), segments.end(), start,
                              [](int64_t offset, const SegmentInfo& s) { return offset < s.base_offset; });
  if (seg == segments.begin()) return out;
  // Quirk §15.4: the lower filter is the log start offset, not `start`.
  int64_t fetch_offset = summary.log_start_offset;
  for (--seg; seg != segments.end(); ++seg) {
    for (const AbortedTxn& t : seg->txn_index) {
      if (t.last_offset >= fetch_offset && t.first_offset < upper) out.push_back(t);
      if (t.last_stable_offset >= upper) return out;
    }
  }
  return out;
}

bool LoadPartitionLog(const std::string& partition_dir, const CleanerConfig& config, int64_t now,
                      std::optional<int64_t> high_watermark, PartitionLog* out, ProblemSink* sink, std::string* error,
                      Env* env) {
  // The partition as a broker loads it (partition/loaded_log.h): segments, checkpoints, producer state.
  LoadOptions lo;
  lo.now_ms = now;
  lo.producer_id_expiration_ms = config.producer_id_expiration_ms;
  lo.env = env;
  LoadedLog& log = out->loaded;
  bool unreadable = false;
  if (!LoadedLog::Open(partition_dir, lo, &log, sink, error, &unreadable)) {
    if (unreadable) *error += " (a file of the partition that cannot be read: nothing is compacted)";
    return false;
  }
  fs::path dir(partition_dir);
  if (!log.tp) {
    *error = partition_dir + ": not a partition directory name (<topic>-<partition>)";
    return false;
  }
  out->log_dir = fs::absolute(dir).lexically_normal().parent_path().string();
  if (!out->log_dir.empty() && fs::absolute(dir).lexically_normal().filename().empty())
    out->log_dir = fs::path(out->log_dir).parent_path().string();
  if (log.segments.empty()) {
    *error = partition_dir + ": no .log segment";
    return false;
  }

  for (SegmentInfo& info : log.segments) {
    // Each segment as LogSegment reports it: readNextOffset, sizes, timestamps (partition/loaded_log.h).
    SegmentSummary s;
    std::vector<OffsetIndexEntry> offset_index;
    if (!SummarizeSegment(info, &s, &offset_index, sink, error, env)) return false;
    out->segments.push_back(LoadedSegment{std::move(info), uint64_t(s.size), std::move(offset_index)});
    out->summary.segments.push_back(s);
  }
  log.segments.clear();

  out->summary.cleaner_checkpoint = log.cleaner_checkpoint;
  out->summary.log_start_offset = log.log_start_offset;
  out->summary.log_end_offset = out->summary.segments.back().next_offset;
  const int64_t leo = out->summary.log_end_offset;
  out->high_watermark = std::min(high_watermark.value_or(log.high_watermark), leo);

  // The producers the cleaner sees as active (§7.3): the loaded state, less those expired at `now`
  // (removeExpiredProducers runs before every cleaner pass; never a producer with an open transaction).
  ProducerStateManager& producers = log.producer_state;
  std::vector<int64_t> before;
  for (const auto& [pid, entry] : producers.producers()) before.push_back(pid);
  producers.RemoveExpiredProducers(now);
  for (int64_t pid : before)
    if (!producers.Find(pid)) out->expired_producers.push_back(pid);
  // LSO = min(HW, first unstable offset) (§0).
  out->summary.last_stable_offset = producers.LastStableOffset(out->high_watermark);
  return true;
}

}  // namespace klf
