#include "simulator/replica_view.h"

#include <algorithm>
#include <fmt/format.h>
#include <queue>
#include <set>

#include "segment_reader/batch.h"
#include "segment_reader/file.h"
#include "segment_reader/layout.h"
#include "segment_reader/producer_state.h"
#include "segment_reader/java_long.h"

namespace klf {

bool LoadReplicaView(const std::string& partition_dir, int64_t now_ms, int64_t producer_id_expiration_ms,
                     ReplicaView* out, ProblemSink* sink, std::string* error) {
  *out = ReplicaView{};
  out->path = partition_dir;
  PartitionDir pd;
  if (!ScanPartitionDir(partition_dir, &pd, sink) || !pd.tp) {
    *error = partition_dir + ": not a readable partition directory <topic>-<partition>";
    return false;
  }
  PartitionCheckpoints cp = ReadParentCheckpoints(partition_dir, *pd.tp, sink);

  // Pass 1: the log end offset and every `.txnindex` entry.
  struct Seg {
    std::string path;
    std::unique_ptr<MappedFile> file;
  };
  std::vector<Seg> segs;
  // Only segments with a `.log` (an index left without its log holds no offsets).
  std::vector<const SegmentFiles*> logs = pd.LogSegments();
  for (const SegmentFiles* s : logs) {
    Seg seg{s->log->path, MappedFile::Open(s->log->path, error)};
    if (!seg.file) return false;
    if (s->txn_index) {
      std::unique_ptr<MappedFile> t = MappedFile::Open(s->txn_index->path, error);
      if (!t) return false;
      TxnIndex idx = ParseTxnIndex(s->txn_index->path, t->data(), sink);
      out->aborted_txns.insert(out->aborted_txns.end(), idx.entries.begin(), idx.entries.end());
    }
    segs.push_back(std::move(seg));
  }
  if (!logs.empty()) out->log_end_offset = logs.back()->base_offset;
  for (const Seg& s : segs) {
    LogReader reader(s.path, s.file->data(), sink);
    BatchView b;
    while (reader.Next(&b)) out->log_end_offset = std::max(out->log_end_offset, JavaAdd(b.header.last_offset, 1));
  }
  if (!logs.empty()) out->log_start_offset = logs.front()->base_offset;
  if (cp.log_start_offset) out->log_start_offset = std::max(out->log_start_offset, *cp.log_start_offset);
  out->high_watermark = cp.high_watermark ? std::min(*cp.high_watermark, out->log_end_offset) : out->log_end_offset;
  out->cleaner_checkpoint = cp.cleaner_offset;

  ProducerStateManager state(ProducerStateOptions{producer_id_expiration_ms});
  ProducerStateLoadResult load;
  if (!LoadProducerState(partition_dir, now_ms, &state, &load, sink)) {
    *error = partition_dir + ": producer state cannot be loaded";
    return false;
  }
  for (const auto& [first, txn] : state.ongoing_txns()) out->open_txns.push_back(OpenTxnInfo{txn.producer_id, first});
  out->last_stable_offset = state.LastStableOffset(out->high_watermark);
  std::optional<int64_t> first_unstable = state.FirstUndecidedOffset();
  out->mxfo = first_unstable ? std::min(*first_unstable, out->log_end_offset) : out->log_end_offset;
  int64_t dirty = cp.cleaner_offset.value_or(out->log_start_offset);
  // Kafka resets a checkpoint outside [logStart, logEnd] to the log start (cleanableOffsets).
  if (dirty < out->log_start_offset || dirty > out->log_end_offset) dirty = out->log_start_offset;
  out->mcco = std::min(dirty, out->log_end_offset);

  // Pass 2: the read_committed consumer (CompletedFetch.nextFetchedRecord).
  auto by_first = [](const AbortedTxn& a, const AbortedTxn& b) { return a.first_offset > b.first_offset; };
  std::priority_queue<AbortedTxn, std::vector<AbortedTxn>, decltype(by_first)> aborted(by_first);
  for (const AbortedTxn& t : out->aborted_txns)
    if (t.first_offset < out->last_stable_offset) aborted.push(t);
  std::set<int64_t> aborted_producers;
  RecordDecoder decoder;
  for (const Seg& s : segs) {
    LogReader reader(s.path, s.file->data(), sink);
    BatchView b;
    while (reader.Next(&b)) {
      const BatchHeader& h = b.header;
      bool below_lso = h.last_offset < out->last_stable_offset;
      bool need_records = h.magic < 2 || h.record_count != 0;
      if (need_records && !decoder.Decode(b, s.path, sink)) {
        *error = fmt::format("{}: position {}: records do not decode", s.path, h.position);
        return false;
      }
      // Below the log start offset nothing is served (a fetch there is out of range; records of a
      // batch that straddles it are dropped by the consumer), e.g. after DeleteRecords.
      if (!h.is_control && need_records) {
        for (const Record& r : decoder.records()) out->records_in_log += r.offset >= out->log_start_offset;
      }
      if (!below_lso) continue;
      bool skip = false;
      if (h.has_producer_id()) {
        while (!aborted.empty() && aborted.top().first_offset <= h.last_offset) {
          aborted_producers.insert(aborted.top().producer_id);
          aborted.pop();
        }
        if (h.is_control) {
          ControlRecord c;
          std::string e;
          if (need_records && !decoder.records().empty() && ParseControlRecord(decoder.records()[0], &c, &e) &&
              c.type == ControlType::kAbort)
            aborted_producers.erase(h.producer_id);
        } else if (h.is_transactional && aborted_producers.count(h.producer_id)) {
          skip = true;
        }
      }
      if (h.is_control || !need_records) continue;
      for (const Record& r : decoder.records()) {
        if (r.offset >= out->last_stable_offset) break;
        if (r.offset < out->log_start_offset) continue;
        if (skip) {
          out->hidden_offsets.push_back(r.offset);
          continue;
        }
        ServedRecord sr;
        sr.offset = r.offset;
        sr.timestamp = r.timestamp;
        if (r.key) sr.key = std::string(AsStringView(*r.key));
        if (r.value) sr.value = std::string(AsStringView(*r.value));
        sr.producer_id = h.producer_id;
        sr.transactional = h.is_transactional;
        if (sr.key) {
          if (sr.value) out->key_values[*sr.key] = *sr.value;
          else out->key_values.erase(*sr.key);
        }
        out->read_committed.push_back(std::move(sr));
      }
    }
  }
  return true;
}

}  // namespace klf
