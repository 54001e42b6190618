#include "compactor/cleaner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "compactor/grouping.h"
#include "compactor/lookup_ahead.h"
#include "compactor/offset_map.h"
#include "compactor/partition_log.h"
#include "compactor/superseded.h"
#include "compactor/txn_metadata.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/index_files.h"
#include "segment_reader/key_digest.h"
#include "segment_reader/layout.h"
#include "segment_writer/batch_builder.h"
#include "segment_writer/file_writer.h"
#include "segment_writer/segment_writer.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace fs = std::filesystem;

namespace {

// The new segment of one group, written as LogSegment.append writes it (SegmentWriter: one Append per
// cleaner chunk, index.interval.bytes deciding index entries, spec §10.2, FMT §8.3) to
// `<base>.log.cleaned` and its `.cleaned` indexes, which ReplaceSegments swaps in.
struct GroupOutput {
  std::vector<size_t> sources;  // indexes into PartitionLog::segments
  std::unique_ptr<SegmentWriter> segment;
  std::vector<AbortedTxn> txn_index;  // CleanedTransactionMetadata's entries for the cleaned .txnindex
  int64_t mtime_ms = 0;               // the new files' modification time

  bool Create(Env* env, const std::string& dir, int64_t base, const CleanerConfig& config, std::string* error) {
    LogConfig lc;
    lc.segment_bytes = config.segment_bytes;
    lc.segment_index_bytes = config.segment_index_bytes;
    lc.index_interval_bytes = config.index_interval_bytes;
    segment = SegmentWriter::Create(env, dir, base, lc, error, ".cleaned");
    return segment != nullptr;
  }
  // onBecomeInactiveSegment: the final time-index entry; every file fsynced and renamed to its
  // `.cleaned` name, with the group's modification time.
  bool Finish(std::string* error) {
    for (const AbortedTxn& t : txn_index)
      if (!segment->AppendAbortedTxn(t, error)) return false;
    return segment->Close(error, mtime_ms);
  }
};

// canConvertToRelativeOffset: the offset index stores offset - baseOffset as a non-negative int32.
bool FitsRelative(int64_t base_offset, int64_t offset) {
  int64_t relative = JavaSub(offset, base_offset);
  return relative >= 0 && relative <= INT32_MAX;
}

// One cleaning round over a loaded log (Cleaner.doClean, spec §3-§10).
class Round {
 public:
  Round(const PartitionLog& log, const CleanerConfig& config, int64_t now, OffsetMap* map, PassReport* report,
        ProblemSink* sink, bool explain)
      : log_(log),
        config_(config),
        now_(now),
        map_(map),
        skimpy_(dynamic_cast<SkimpyOffsetMap*>(map)),
        report_(report),
        sink_(sink),
        explain_(explain),
        io_buffer_size_(config.IoBufferSizePerBuffer()),
        capacity_(io_buffer_size_) {}

  // When a source segment's offsets overflow its cleaned segment (§6.2 step 4e), the round ends
  // early: `groups` then holds the groups cleaned before it followed by the overflowed segment's split
  // (SplitOverflowedSegment) and *split_source is that segment's index.
  bool DoClean(int64_t first_dirty_offset, int64_t first_uncleanable_offset, int64_t* end_offset,
               std::vector<GroupOutput>* groups, std::optional<size_t>* split_source, std::string* error);
  // Coordinated mode (CompactOptions::max_tombstone_remove_offset / max_tx_end_remove_offset).
  void SetRemovalLimits(std::optional<int64_t> mtro, std::optional<int64_t> mxro) {
    mtro_ = mtro;
    mxro_ = mxro;
  }
  void SetParallelMinBytes(uint64_t bytes) { parallel_min_bytes_ = bytes; }
  void SetSkipSuperseded(bool skip) { skip_superseded_ = skip; }
  void SetEnv(Env* env) { env_ = env; }

 private:
  bool BuildOffsetMap(int64_t start, int64_t end, bool* full, std::string* error);
  // Maps dirty segments [first, last) of those ending at dirty_last (LogCleaner.buildOffsetMap's loop).
  bool MapSegments(size_t first, size_t last, size_t dirty_last, int64_t start, int64_t end,
                   CleanedTransactionMetadata* m, bool* full, std::string* error);
  bool MapBatch(const LoadedSegment& seg, const BatchView& batch, int64_t start, CleanedTransactionMetadata* m,
                bool* full, std::string* error);
  // `chunk`: the bytes read at `position` (the current read buffer's contents).
  bool GrowBuffersOrFail(const LoadedSegment& seg, Bytes chunk, size_t position, std::string* error);
  bool CleanInto(const LoadedSegment& seg, SegmentWriter* dest, CleanedTransactionMetadata* t,
                 const LastRecords& last_records, bool retain_legacy_deletes, int64_t upper_bound, bool* overflow,
                 std::string* error);
  bool SplitOverflowedSegment(size_t si, std::vector<GroupOutput>* out, std::string* error);
  bool FilterChunk(const LoadedSegment& seg, Bytes chunk, uint64_t chunk_position, CleanedTransactionMetadata* t,
                   const LastRecords& last_records, bool retain_legacy_deletes, int64_t upper_bound, std::string* out,
                   int64_t* max_offset, int64_t* max_timestamp, int64_t* shallow_offset, size_t* bytes_read,
                   std::string* error);
  // Rebuilds a compressed v2 batch keeping `retained` as AppendRetainedBatch does, but leaves its
  // compression to the look-ahead thread when that is idle: the batch's bytes go into `*out` at its
  // present end when FinishDeferred runs. *built lacks the size, the rest is the same.
  bool DeferRetainedBatch(const BatchView& original, std::span<const RecordInput> retained,
                          std::optional<int64_t> horizon, size_t at, BuiltBatch* built, std::string* error);
  // Compresses what the look-ahead thread has not (LookupAhead::Reclaim), splices every deferred
  // batch into *out where it belongs, and counts its bytes written.
  void FinishDeferred(std::string* out);
  // Decodes every record of `batch` (or takes the look-ahead thread's decoding of it) into decoded_.
  bool Decode(const LoadedSegment& seg, const BatchView& batch, std::string* error);
  std::optional<ControlType> FirstControlType(const BatchView& batch);

  const PartitionLog& log_;
  const CleanerConfig& config_;
  int64_t now_;
  OffsetMap* map_;
  SkimpyOffsetMap* const skimpy_;  // map_, when it is the real map (not a test's exact one)
  PassReport* report_;
  ProblemSink* sink_;
  bool explain_;
  std::optional<int64_t> mtro_, mxro_;        // exclusive removal limits; nullopt = Kafka's rules only
  uint64_t parallel_min_bytes_ = UINT64_MAX;  // CompactOptions::parallel_min_bytes
  bool skip_superseded_ = false;              // CompactOptions::skip_superseded_batches
  SupersededRecords superseded_;              // what the map pass learnt of the dirty records
  Env* env_ = Env::Default();                 // CompactOptions::env
  int32_t io_buffer_size_;
  int32_t capacity_;  // current read (and write) buffer capacity
  RecordDecoder decoder_;
  std::vector<Bytes> keys_;  // one batch's keys for OffsetMap::PrefetchHashed
  std::vector<OffsetMap::KeyDigest> digests_;
  std::vector<std::optional<int64_t>> found_;  // one batch's answers from lookahead_
  std::unique_ptr<LookupAhead> lookahead_;     // the cleaning pass's look-ahead, if any
  // The batch the look-ahead thread decoded and looked up, last taken (LookupAhead::TakeDecoded).
  std::unique_ptr<LookupAhead::Decoded> taken_;
  const RecordDecoder* decoded_ = &decoder_;  // the last Decode's records: decoder_'s or taken_'s
  int64_t answers_taken_ = 0;                 // map answers used from taken_ batches
  // Rebuilt batches whose compression is lent to lookahead_ (DeferRetainedBatch): the first
  // deferred_count_ are the current chunk's, in order; the rest are kept for reuse.
  struct Deferred {
    size_t at = 0;  // where its bytes go in the chunk's output
    EncodedV2Batch batch;
    std::string bytes;
    std::function<void()> compress;
  };
  std::deque<Deferred> deferred_;
  size_t deferred_count_ = 0;
  size_t deferred_bound_ = 0;  // the most bytes they will take (V2BatchBound)
  std::string spliced_;        // FinishDeferred's output buffer, reused
};

bool Round::Decode(const LoadedSegment& seg, const BatchView& batch, std::string* error) {
  CollectingSink local;
  decoded_ = &decoder_;
  bool ok;
  if (lookahead_ && LookupAhead::HandsOver(batch.header) &&
      lookahead_->TakeDecoded(seg.log_path, batch.header, &taken_)) {
    // The look-ahead thread decoded this batch (the same records Decode gives) and looked its keys up:
    // each batch is decompressed and decoded once in the cleaning phase.
    decoded_ = &taken_->decoder;
    return true;
  } else {
    ok = decoder_.Decode(batch, seg.log_path, &local);
  }
  if (ok) return true;
  for (const auto& p : local.problems)
    if (sink_) sink_->Report(p);
  *error = local.problems.empty()
               ? fmt::format("{}: position {}: records do not decode", seg.log_path, batch.header.position)
               : fmt::format("{}: position {}: {}", local.problems[0].file, local.problems[0].position,
                             local.problems[0].message);
  return false;
}

bool Round::DeferRetainedBatch(const BatchView& original, std::span<const RecordInput> retained,
                               std::optional<int64_t> horizon, size_t at, BuiltBatch* built, std::string* error) {
  if (deferred_count_ == deferred_.size()) {
    Deferred& d = deferred_.emplace_back();
    d.compress = [&d] { FinishV2Batch(d.batch, &d.bytes); };
  }
  Deferred& d = deferred_[deferred_count_];
  if (!EncodeRetainedV2Batch(original, retained, horizon, &d.batch, error)) return false;
  d.at = at;
  d.bytes.clear();
  deferred_count_++;
  deferred_bound_ += V2BatchBound(d.batch);
  *built = d.batch.built;
  lookahead_->Lend(&d.compress);
  return true;
}

void Round::FinishDeferred(std::string* out) {
  if (deferred_count_ == 0) return;
  lookahead_->Reclaim();
  spliced_.clear();
  size_t from = 0;
  for (size_t i = 0; i < deferred_count_; i++) {
    const Deferred& d = deferred_[i];
    spliced_.append(*out, from, d.at - from);
    spliced_.append(d.bytes);
    report_->stats.bytes_written += int64_t(d.bytes.size());
    from = d.at;
  }
  spliced_.append(*out, from, std::string::npos);
  out->swap(spliced_);
  deferred_count_ = 0;
  deferred_bound_ = 0;
}

std::optional<ControlType> Round::FirstControlType(const BatchView& batch) {
  if (decoded_->records().empty()) return std::nullopt;
  auto c = ControlBatchMarker(decoded_->records());
  return c ? c->type : ControlType::kUnknown;
}

bool Round::GrowBuffersOrFail(const LoadedSegment& seg, Bytes chunk, size_t position, std::string* error) {
  // LogCleaner.growBuffersOrFail / growBuffers (spec §6.4).
  int64_t target;
  if (capacity_ >= config_.max_message_bytes) {
    size_t avail = chunk.size();
    if (avail < size_t(kHeaderSizeUpToMagic)) {
      *error = fmt::format("{}: position {}: could not determine the next batch size", seg.log_path, position);
      return false;
    }
    int64_t n = int64_t(LoadI32(chunk.data() + 8)) + kLogOverhead;
    if (n <= 0 || n <= capacity_) {
      *error = fmt::format("{}: position {}: invalid batch size {} (buffer {})", seg.log_path, position, n, capacity_);
      return false;
    }
    if (n > int64_t(seg.size - position)) {
      *error =
          fmt::format("{}: position {}: batch size {} is larger than the {} bytes left: log segment may be corrupt",
                      seg.log_path, position, n, seg.size - position);
      if (sink_) sink_->Report(Problem{Severity::kError, seg.log_path, position, "batch-size", *error});
      return false;
    }
    target = n;
  } else {
    target = config_.max_message_bytes;
  }
  int64_t limit = std::max<int64_t>(target, config_.MaxIoBufferSize());
  if (capacity_ >= limit) {
    *error = fmt::format("{}: position {}: a batch is larger than the maximum allowable size {}", seg.log_path,
                         position, limit);
    return false;
  }
  int64_t grown = std::min<int64_t>(2 * int64_t(std::max(capacity_, 1)), limit);
  capacity_ = int32_t(grown);
  return true;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): Cleaner.buildOffsetMapForSegment's per-batch rules (aborted, control, transactional) in Kafka's order
bool Round::MapBatch(const LoadedSegment& seg, const BatchView& batch, int64_t start, CleanedTransactionMetadata* m,
                     bool* full, std::string* error) {
  const BatchHeader& h = batch.header;
  bool need_records = h.magic < 2 || h.record_count != 0;
  superseded_.OnBatch(h);
  if (h.is_control) {
    if (need_records && !Decode(seg, batch, error)) return false;
    m->OnControlBatchRead(h, need_records ? FirstControlType(batch) : std::nullopt);
    report_->stats.map_messages_read += 1;  // Kafka counts a control batch as one message read
  } else {
    bool aborted = m->OnBatchRead(h);
    if (aborted) report_->stats.map_messages_read += h.record_count;  // skipped, but counted
    if (!aborted && need_records) {
      // Every field of every record is decoded, as Kafka's map pass iterates whole records: a batch
      // whose records are all superseded is not read again (superseded.h), so a record damaged only
      // in its value or headers is found here.
      if (!Decode(seg, batch, error)) return false;
      int32_t limit = MaxDesiredMapSize(map_->slots(), config_.dedupe_buffer_load_factor);
      keys_.clear();
      for (const Record& r : decoded_->records())
        if (r.key && r.offset >= start) keys_.push_back(*r.key);
      digests_.resize(keys_.size());
      Md5Many(keys_.data(), keys_.size(), digests_.data());
      // SkimpyOffsetMap takes the digests as they are (Put would hash each key again, or find it
      // among copies PrefetchHashed kept); another map (a test's exact one) takes the keys.
      if (skimpy_)
        for (const KeyDigest& k : digests_) skimpy_->PrefetchSlot(k.data());
      else
        map_->PrefetchHashed(keys_, digests_);
      size_t next_key = 0;
      for (const Record& r : decoded_->records()) {
        if (r.key && r.offset >= start) {
          // The fill check comes before every put, even one that would only overwrite (§4).
          if (map_->size() >= limit) {
            *full = true;
            return true;
          }
          int64_t previous = -1;
          if (skimpy_)
            skimpy_->PutHashed(digests_[next_key++].data(), r.offset, &previous);
          else
            map_->Put(*r.key, r.offset, &previous);
          superseded_.OnPut(r.offset, previous, !r.value);
        }
        report_->stats.map_messages_read++;
      }
    }
  }
  if (h.last_offset >= start) map_->UpdateLatestOffset(h.last_offset);
  return true;
}

bool Round::BuildOffsetMap(int64_t start, int64_t end, bool* full, std::string* error) {
  map_->Clear();
  *full = false;
  // --explain lists every record's decision, so it reads every record.
  if (skip_superseded_ && !explain_)
    superseded_.Reset(start, end);
  else
    superseded_.Off();
  SegmentRange dirty = SegmentsInRange(log_.summary, start, end);
  CleanedTransactionMetadata m;
  std::vector<AbortedTxn> aborted = log_.CollectAbortedTransactions(start, end);
  m.AddAbortedTransactions(aborted);

  // Two threads, when that cannot change the result: the second maps the later half of the dirty
  // segments into a map of its own while this one maps the earlier half, then its entries are put
  // over this map's. That is the map the sequential loop builds provided (a) no put of the sequential
  // run would have found the map at its fill limit, which holds when the two maps' sizes together
  // stay below the limit, and (b) no record of the later half is skipped as aborted depending on
  // what the earlier half held, which holds when the dirty range has no aborted transaction. When
  // either fails the later half is mapped again here, sequentially, as if it had not been tried.
  // The second map is capped at kSecondMapMemory so that both stay within the dedupe buffer + 64 MiB.
  constexpr int32_t kSecondMapMemory = int32_t(32) << 20;
  size_t split = dirty.last;
  std::vector<uint64_t> sizes;
  uint64_t dirty_bytes = 0;
  for (size_t i = dirty.first; i < dirty.last; i++) {
    sizes.push_back(log_.segments[i].size);
    dirty_bytes += log_.segments[i].size;
  }
  if (skimpy_ && aborted.empty() && sizes.size() >= 2 && dirty_bytes >= parallel_min_bytes_)
    split = dirty.first + SplitNearMiddle(sizes);
  if (split == dirty.last) return MapSegments(dirty.first, dirty.last, dirty.last, start, end, &m, full, error);

  std::string second_error;
  std::unique_ptr<SkimpyOffsetMap> second_map = SkimpyOffsetMap::Create(kSecondMapMemory, &second_error);
  PassReport second_report;
  CollectingSink second_sink;
  bool second_ok = false, second_full = false;
  Round later(log_, config_, now_, second_map.get(), &second_report, &second_sink, false);
  if (superseded_.on()) later.superseded_.Reset(start, end);
  std::thread second([&] {
    if (!second_map) return;
    CleanedTransactionMetadata m2;
    second_ok = later.MapSegments(split, dirty.last, dirty.last, start, end, &m2, &second_full, &second_error);
  });
  bool ok = MapSegments(dirty.first, split, dirty.last, start, end, &m, full, error);
  second.join();
  if (!ok || *full) return ok;
  int32_t limit = MaxDesiredMapSize(map_->slots(), config_.dedupe_buffer_load_factor);
  if (second_ok && !second_full && int64_t(map_->size()) + second_map->size() < limit) {
    if (!skimpy_->MergeNewer(*second_map, [this](int64_t replaced) { superseded_.Supersede(replaced); })) {
      *error = "offset map: merging the second half's map failed";  // cannot happen below the limit
      return false;
    }
    superseded_.MergeNewer(later.superseded_);
    report_->map_threads = 2;
    report_->stats.map_messages_read += second_report.stats.map_messages_read;
    report_->stats.map_bytes_read += second_report.stats.map_bytes_read;
    if (sink_)
      for (const Problem& p : second_sink.problems) sink_->Report(p);
    return true;
  }
  return MapSegments(split, dirty.last, dirty.last, start, end, &m, full, error);
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): Cleaner.buildOffsetMap: segments, buffer growth and the map-full stop, in Kafka's order
bool Round::MapSegments(size_t first, size_t last, size_t dirty_last, int64_t start, int64_t end,
                        CleanedTransactionMetadata* m, bool* full, std::string* error) {
  for (size_t i = first; i < last; i++) {
    const LoadedSegment& seg = log_.segments[i];
    int64_t next_start = i + 1 < dirty_last ? log_.segments[i + 1].base_offset : end;
    // offsetIndex.lookup(start).position: the largest entry with offset <= start.
    size_t position = 0;
    for (const auto& e : seg.offset_index)
      if (e.offset <= start) position = size_t(e.position);
    if (position > seg.size) position = 0;
    WindowReader reader;
    if (position < seg.size && !reader.Open(seg.log_path, seg.size, error, log_.loaded.env)) return false;
    while (position < seg.size) {
      Bytes chunk;
      if (!reader.Read(position, size_t(capacity_), &chunk, error)) return false;
      size_t p = 0;
      BatchView b;
      std::string e;
      while (true) {
        EntryStatus st = NextEntry(chunk, p, position + p, &b, &e);
        if (st == EntryStatus::kIncomplete) break;
        if (st == EntryStatus::kCorrupt) {
          *error = fmt::format("{}: position {}: {}", seg.log_path, position + p, e);
          if (sink_) sink_->Report(Problem{Severity::kError, seg.log_path, position + p, "batch-framing", e});
          return false;
        }
        if (!MapBatch(seg, b, start, m, full, error)) return false;
        if (*full) return true;  // buffers stay as they are (spec §6.3 edge case)
        p += b.bytes.size();
      }
      if (p == 0) {
        if (!GrowBuffersOrFail(seg, chunk, position, error)) return false;
        continue;
      }
      position += p;
      report_->stats.map_bytes_read += int64_t(p);
    }
    map_->UpdateLatestOffset(next_start - 1);
    capacity_ = io_buffer_size_;
  }
  return true;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): MemoryRecords.filterTo with Cleaner's RecordFilter inlined: one loop over the chunk, as Kafka's
bool Round::FilterChunk(const LoadedSegment& seg, Bytes chunk, uint64_t chunk_position, CleanedTransactionMetadata* t,
                        const LastRecords& last_records, bool retain_legacy_deletes, int64_t upper_bound,
                        std::string* out, int64_t* max_offset, int64_t* max_timestamp, int64_t* shallow_offset,
                        size_t* bytes_read, std::string* error) {
  CleanerStats& stats = report_->stats;
  size_t p = 0;
  BatchView b;
  std::vector<RecordInput> retained;
  // Whatever the way out (a failure too: the thread must be done with the jobs), the deferred
  // batches are finished in *out.
  struct FinishOnReturn {
    Round* round;
    std::string* out;
    ~FinishOnReturn() { round->FinishDeferred(out); }
  } finish{this, out};
  while (true) {
    std::string e;
    EntryStatus st = NextEntry(chunk, p, chunk_position + p, &b, &e);
    if (st == EntryStatus::kIncomplete) break;
    if (st == EntryStatus::kCorrupt) {
      *error = fmt::format("{}: position {}: {}", seg.log_path, chunk_position + p, e);
      if (sink_) sink_->Report(Problem{Severity::kError, seg.log_path, chunk_position + p, "batch-framing", e});
      return false;
    }
    p += b.bytes.size();
    *bytes_read = p;
    const BatchHeader& h = b.header;
    bool need_records = h.magic < 2 || h.record_count != 0;
    // Control records are read to learn the marker type; data records only if the batch is not
    // deleted outright (Kafka does not iterate a DELETEd batch).
    if (need_records && h.is_control && !Decode(seg, b, error)) return false;
    bool can_discard =
        h.is_control ? t->OnControlBatchRead(h, need_records ? FirstControlType(b) : std::nullopt) : t->OnBatchRead(h);
    BatchDecision d = CheckBatchRetention(h, can_discard, last_records, upper_bound, now_);
    // Coordinated mode: a COMMIT/ABORT at or above MXRO keeps its record, whatever Kafka's rules say
    // (neither deleted nor emptied: an empty control batch closes nothing on a follower).
    if (h.is_control && d.discard_batch_records && mxro_ && h.last_offset >= *mxro_) {
      d.discard_batch_records = false;
      if (d.retention == BatchRetention::kDelete) {
        d.retention = BatchRetention::kDeleteEmpty;
        d.reason = BatchReason::kRecordsDecide;
      }
      report_->stats.markers_held++;
    }
    stats.bytes_read += int64_t(b.bytes.size());
    // A dirty batch whose records the map superseded, every one, is decided from its header alone.
    int64_t superseded_tombstones = 0;
    const bool all_superseded = need_records && !h.is_control && d.retention != BatchRetention::kDelete &&
                                !d.discard_batch_records &&
                                superseded_.AllSuperseded(h, map_->latest_offset(), &superseded_tombstones);
    const bool decode = need_records && !all_superseded && (h.is_control || d.retention != BatchRetention::kDelete);
    if (decode && !h.is_control && !Decode(seg, b, error)) return false;
    const BatchHeader& full_header = decode ? decoded_->header() : h;

    BatchExplain ex;
    if (explain_) {
      ex.file = seg.log_path;
      ex.position = chunk_position + p - b.bytes.size();
      ex.base_offset = full_header.base_offset;
      ex.last_offset = h.last_offset;
      ex.is_control = h.is_control;
      ex.producer_id = h.producer_id;
      ex.retention = d.retention;
      ex.reason = d.reason;
    }
    auto update_meta = [&](const BuiltBatch& built) {
      if (built.max_timestamp > *max_timestamp) {
        *max_timestamp = built.max_timestamp;
        *shallow_offset = built.shallow_offset_of_max_timestamp;
      }
      *max_offset = std::max(*max_offset, built.max_offset);
    };

    if (d.retention == BatchRetention::kDelete) {
      // Records are not read (and not counted) for a deleted batch.
      if (h.is_control) stats.markers_removed += need_records ? int64_t(decoded_->records().size()) : 0;
      if (explain_) {
        ex.action = "removed";
        report_->explain.push_back(std::move(ex));
      }
      continue;
    }

    retained.clear();
    bool write_original = true, contains_tombstones = false;
    if (all_superseded) {
      // What the loop below would count: every record read, none retained, the tombstones removed.
      stats.messages_read += h.record_count;
      stats.tombstones_removed += superseded_tombstones;
      write_original = false;
      report_->batches_superseded++;
    } else if (need_records) {
      if (decoded_ != &decoder_ && taken_->elided > 0) {
        // Records the look-ahead left out as superseded (LookupAhead::Decoded): what the loop below
        // would count for them, each read and removed.
        stats.messages_read += taken_->elided;
        stats.tombstones_removed += taken_->elided_tombstones;
        write_original = false;
      }
      // The keys ShouldRetainRecord will look up, in order (§8.2).
      keys_.clear();
      digests_.clear();
      if (!d.discard_batch_records && !h.is_control) {
        if (decoded_ != &decoder_) {
          found_.swap(taken_->found);  // the look-ahead's answers for every key looked up below
          answers_taken_ += taken_->answers;
        } else {
          // Answers the look-ahead thread has are taken; the other keys are hashed and probed here.
          found_.assign(decoded_->records().size(), std::nullopt);
          for (size_t j = 0; j < decoded_->records().size(); j++) {
            const Record& r = decoded_->records()[j];
            if (!r.key || r.offset > map_->latest_offset()) continue;
            found_[j] = superseded_.Found(r.offset);  // a record the map pass put
            if (!found_[j] && lookahead_) found_[j] = lookahead_->Find(r.offset, *r.key);
            if (!found_[j]) keys_.push_back(*r.key);
          }
          digests_.resize(keys_.size());
          Md5Many(keys_.data(), keys_.size(), digests_.data());
        }
      } else {
        found_.clear();
      }
      map_->PrefetchHashed(keys_, digests_);
      for (size_t j = 0; j < decoded_->records().size(); j++) {
        const Record& r = decoded_->records()[j];
        stats.messages_read++;
        RecordDecision rd =
            ShouldRetainRecord(h, d, r, *map_, now_, retain_legacy_deletes, found_.empty() ? std::nullopt : found_[j]);
        // Coordinated mode: a tombstone whose horizon passed stays unless it is below MTRO.
        if ((rd == RecordDecision::kRemovedPastHorizon || rd == RecordDecision::kRemovedLegacyTombstone) && mtro_ &&
            r.offset >= *mtro_) {
          rd = RecordDecision::kKeptTombstone;
          stats.tombstones_held++;
        }
        if (rd == RecordDecision::kRemovedNoKey) stats.invalid_messages_read++;
        if (IsRetained(rd)) {
          if (r.magic != h.magic) write_original = false;  // KAFKA-4298: rewrite v0 inside v1
          if (!r.value) contains_tombstones = true;
          retained.push_back(RecordInputFrom(r, decoded_->headers(r)));
        } else {
          write_original = false;
          if (h.is_control)
            stats.markers_removed++;
          else if (!r.value && rd != RecordDecision::kRemovedNoKey)
            stats.tombstones_removed++;
        }
        if (explain_) {
          RecordExplain re{r.offset, rd, !r.value.has_value(), std::nullopt, std::nullopt};
          if (r.key) re.key = std::string(AsStringView(*r.key));
          ControlRecord c;
          std::string why;
          if (h.is_control && ParseControlRecord(r, &c, &why)) re.control = c.type;
          ex.records.push_back(std::move(re));
        }
      }
    }

    size_t before = out->size();
    BuiltBatch built;
    if (!retained.empty()) {
      bool need_horizon =
          h.magic >= 2 && (contains_tombstones || d.contains_marker_for_empty_txn) && !h.delete_horizon_ms.has_value();
      if (write_original && !need_horizon) {
        AppendOriginalBatch(b, out, &built);
        if (explain_) ex.action = "copied";
      } else {
        std::optional<int64_t> horizon = h.delete_horizon_ms;
        if (need_horizon) {
          int64_t hz = JavaAdd(now_, config_.delete_retention_ms);
          horizon = hz >= 0 ? std::optional<int64_t>(hz) : std::nullopt;
        }
        // Compressed v2 batches are compressed on the look-ahead thread when it has time.
        const bool defer = lookahead_ != nullptr && h.magic >= 2 && h.compression != Compression::kNone;
        if (defer ? !DeferRetainedBatch(b, retained, horizon, out->size(), &built, error)
                  : !AppendRetainedBatch(b, retained, horizon, out, &built, error)) {
          *error = fmt::format("{}: position {}: rebuilding the batch: {}", seg.log_path, h.position, *error);
          return false;
        }
        if (explain_) {
          ex.action = need_horizon ? "stamped" : "rebuilt";
          ex.delete_horizon_ms = horizon;
        }
      }
      stats.messages_written += int64_t(retained.size());
      update_meta(built);
    } else if (d.retention == BatchRetention::kRetainEmpty) {
      if (h.magic < 2) {
        // Kafka throws IllegalStateException and marks the partition uncleanable (§9 step 4, §15.6).
        *error = fmt::format(
            "{}: position {}: Empty batches are only supported for magic v2 and above "
            "(Kafka would mark the partition uncleanable)",
            seg.log_path, h.position);
        return false;
      }
      if (!AppendEmptyBatch(h, out, &built, error)) return false;
      if (explain_) ex.action = "emptied";
      update_meta(built);
    } else {
      if (explain_) ex.action = "removed";
    }
    stats.bytes_written += int64_t(out->size() - before);
    if (explain_) report_->explain.push_back(std::move(ex));
    // filterTo returns early when the output outgrew the write buffer (KAFKA-5316). The deferred
    // batches' sizes are known once compressed: until they may reach it, they need not be.
    if (out->size() + deferred_bound_ > size_t(capacity_)) {
      FinishDeferred(out);
      if (out->size() > size_t(capacity_)) break;
    }
  }
  return true;
}

bool Round::CleanInto(const LoadedSegment& seg, SegmentWriter* dest, CleanedTransactionMetadata* t,
                      const LastRecords& last_records, bool retain_legacy_deletes, int64_t upper_bound, bool* overflow,
                      std::string* error) {
  size_t position = 0;
  std::string out;
  WindowReader reader;
  if (seg.size > 0 && !reader.Open(seg.log_path, seg.size, error, log_.loaded.env)) return false;
  while (position < seg.size) {
    // The chunk's unchanged batches are copied into `out` before the next Read replaces it.
    Bytes chunk;
    if (!reader.Read(position, size_t(capacity_), &chunk, error)) return false;
    out.clear();
    int64_t max_offset = -1, max_timestamp = kNoTimestamp, shallow = -1;
    size_t bytes_read = 0;
    if (!FilterChunk(seg, chunk, position, t, last_records, retain_legacy_deletes, upper_bound, &out, &max_offset,
                     &max_timestamp, &shallow, &bytes_read, error))
      return false;
    position += bytes_read;
    // LogSegment.append → ensureOffsetInRange(largestOffset): LogSegmentOffsetOverflowException.
    if (!out.empty() && !FitsRelative(dest->base_offset(), max_offset)) {
      *overflow = true;
      return true;
    }
    if (!out.empty() && !dest->Append(AsBytes(out), ChunkInfo{max_offset, max_timestamp, shallow}, error)) return false;
    // Nothing read: the buffer is smaller than the next batch -- or empty, when log.cleaner.io.buffer.size
    // is below 2 bytes per cleaner thread (ConfigDef allows 0; Kafka's own growBuffers doubles 0 to 0 and
    // never progresses): grow it, or fail when the batch is too large.
    if (bytes_read == 0) {
      if (!GrowBuffersOrFail(seg, chunk, position, error)) return false;
    }
  }
  capacity_ = io_buffer_size_;  // restoreBuffers
  return true;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): LogSplitOverflowException handling: Kafka's own step order, each with its error exit
bool Round::SplitOverflowedSegment(size_t si, std::vector<GroupOutput>* out, std::string* error) {
  // UnifiedLog.splitOverflowedSegment: only a segment whose own offsets overflow its base may be
  // split (require(segment.hasOverflow)); anything else is an IllegalArgumentException that makes the
  // partition uncleanable.
  const LoadedSegment& seg = log_.segments[si];
  const SegmentSummary& summary = log_.summary.segments[si];
  if (!(summary.next_offset > seg.base_offset && !FitsRelative(seg.base_offset, JavaSub(summary.next_offset, 1)))) {
    *error = fmt::format(
        "{}: an offset overflows the cleaned segment but this segment has no overflow of its own, "
        "so Kafka cannot split it (IllegalArgumentException: the partition would be uncleanable)",
        seg.log_path);
    return false;
  }
  WindowReader reader;
  if (!reader.Open(seg.log_path, seg.size, error, log_.loaded.env)) return false;
  // The batch at `pos` (FileLogInputStream over the whole file: no buffer limit). kIncomplete at the
  // end of the file or before a truncated tail.
  std::string entry_bytes;
  auto batch_at = [&](uint64_t pos, BatchView* b, EntryStatus* status) -> bool {
    Bytes head;
    if (!reader.Read(pos, size_t(kHeaderSizeUpToMagic), &head, error)) return false;
    int64_t need = head.size() >= size_t(kLogOverhead) ? int64_t(LoadI32(head.data() + 8)) + kLogOverhead : 0;
    need = std::clamp<int64_t>(need, int64_t(kHeaderSizeUpToMagic), int64_t(seg.size - pos));
    Bytes whole;
    if (!reader.Read(pos, size_t(need), &whole, error)) return false;
    std::string e;
    *status = NextEntry(whole, 0, pos, b, &e);
    if (*status == EntryStatus::kCorrupt) {
      *error = fmt::format("{}: position {}: {}", seg.log_path, pos, e);
      return false;
    }
    return true;
  };
  uint64_t position = 0;
  bool first_split = true;
  while (position < seg.size) {
    // The new segment is named after the first batch's baseOffset (for a legacy wrapper: its first
    // inner record's offset).
    BatchView first;
    EntryStatus st;
    if (!batch_at(position, &first, &st)) return false;
    if (st != EntryStatus::kOk) {
      *error = fmt::format("{}: position {}: no complete batch to start a split segment with", seg.log_path, position);
      return false;
    }
    int64_t base = first.header.base_offset;
    if (first.header.magic < 2) {
      if (!Decode(seg, first, error)) return false;
      base = decoder_.header().base_offset;
    }
    GroupOutput go;
    if (first_split) go.sources = {si};  // replaces the source segment; the others are new
    first_split = false;
    go.mtime_ms = summary.last_modified_ms;
    if (!go.Create(env_, log_.loaded.dir, base, config_, error)) return false;
    // LogSegment.appendFromFile: chunks of whole batches, each below the read buffer's capacity
    // (1 MiB, grown to a single larger batch by the GrowableBufferSupplier), until a batch's last
    // offset does not fit the new segment.
    uint64_t capacity = uint64_t(1) << 20, appended = 0;
    std::string chunk;
    while (position < seg.size) {
      chunk.clear();
      int64_t max_timestamp = INT64_MIN, shallow = INT64_MIN, max_offset = INT64_MIN;
      uint64_t p = position;
      while (p < seg.size) {
        BatchView b;
        if (!batch_at(p, &b, &st)) return false;
        if (st != EntryStatus::kOk) break;
        if (!FitsRelative(base, b.header.last_offset)) break;
        if (!chunk.empty() && chunk.size() + b.bytes.size() >= capacity) break;
        if (b.header.max_timestamp > max_timestamp) {
          max_timestamp = b.header.max_timestamp;
          shallow = b.header.last_offset;
        }
        max_offset = b.header.last_offset;
        chunk.append(reinterpret_cast<const char*>(b.bytes.data()), b.bytes.size());
        p += b.bytes.size();
      }
      if (chunk.empty()) break;
      capacity = std::max<uint64_t>(capacity, chunk.size());
      if (!go.segment->Append(AsBytes(chunk), ChunkInfo{max_offset, max_timestamp, shallow}, error)) return false;
      position = p;
      appended += chunk.size();
    }
    if (appended == 0) {
      *error = fmt::format("{}: failed to append records from position {} to a split segment", seg.log_path, position);
      return false;
    }
    if (!go.Finish(error)) return false;
    out->push_back(std::move(go));
  }
  return true;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): Cleaner.doClean's steps in Kafka's order, each with its error exit
bool Round::DoClean(int64_t first_dirty_offset, int64_t first_uncleanable_offset, int64_t* end_offset,
                    std::vector<GroupOutput>* groups, std::optional<size_t>* split_source, std::string* error) {
  const LogSummary& summary = log_.summary;
  // §3 step 1: legacy delete horizon from the last clean segment's mtime.
  SegmentRange clean = SegmentsInRange(summary, 0, first_dirty_offset);
  int64_t legacy_delete_horizon_ms =
      clean.empty() ? 0 : summary.segments[clean.last - 1].last_modified_ms - config_.delete_retention_ms;
  int64_t upper_bound = first_uncleanable_offset;

  bool full = false;
  if (!BuildOffsetMap(first_dirty_offset, upper_bound, &full, error)) return false;
  report_->map_filled = full;
  report_->map_entries = map_->size();
  *end_offset = JavaAdd(map_->latest_offset(), 1);

  CleanedTransactionMetadata t;
  SegmentRange to_clean = SegmentsInRange(summary, 0, *end_offset);
  std::vector<SegmentSummary> run(summary.segments.begin() + to_clean.first, summary.segments.begin() + to_clean.last);
  auto grouped = GroupSegmentsBySize(run, config_.segment_bytes, config_.segment_index_bytes, first_uncleanable_offset);
  // The map is final from here on: a second thread may look keys up ahead of the pass.
  std::vector<LookupAhead::Segment> ahead;
  uint64_t clean_bytes = 0;
  for (size_t i = to_clean.first; i < to_clean.last; i++) {
    ahead.push_back(LookupAhead::Segment{log_.segments[i].log_path, log_.segments[i].size});
    clean_bytes += log_.segments[i].size;
  }
  if (skimpy_ && clean_bytes >= parallel_min_bytes_)
    lookahead_ = std::make_unique<LookupAhead>(*skimpy_, std::move(ahead), size_t(config_.MaxIoBufferSize()),
                                               log_.loaded.env, &superseded_);
  struct StopLookahead {
    Round* round;
    ~StopLookahead() {
      if (round->lookahead_) round->report_->lookups_ahead = round->lookahead_->answered() + round->answers_taken_;
      round->lookahead_.reset();
    }
  } stop_lookahead{this};
  LastRecords last_records = log_.LastRecordsOfActiveProducers();
  for (const auto& g : grouped) {
    GroupOutput go;
    for (size_t k : g) go.sources.push_back(to_clean.first + k);
    const LoadedSegment& first = log_.segments[go.sources.front()];
    go.mtime_ms = summary.segments[go.sources.back()].last_modified_ms;
    if (!go.Create(env_, log_.loaded.dir, first.base_offset, config_, error)) return false;
    t.set_cleaned_index(&go.txn_index);
    for (size_t j = 0; j < go.sources.size(); j++) {
      size_t si = go.sources[j];
      const LoadedSegment& cur = log_.segments[si];
      int64_t from = cur.base_offset;
      int64_t to =
          j + 1 < go.sources.size() ? log_.segments[go.sources[j + 1]].base_offset : summary.segments[si].next_offset;
      t.AddAbortedTransactions(log_.CollectAbortedTransactions(from, to));
      bool retain_legacy_deletes = summary.segments[si].last_modified_ms > legacy_delete_horizon_ms;
      bool overflow = false;
      if (!CleanInto(cur, go.segment.get(), &t, last_records, retain_legacy_deletes, upper_bound, &overflow, error))
        return false;
      if (overflow) {
        // §6.2 step 4e (cleanSegments catching LogSegmentOffsetOverflowException): the group's
        // .cleaned file is deleted, the offending source segment is split, and the round is aborted
        // (LogCleaningAbortedException) so the next round starts from scratch on the split log.
        go.segment.reset();
        if (!SplitOverflowedSegment(si, groups, error)) return false;
        *split_source = si;
        return true;
      }
    }
    if (!go.Finish(error)) return false;
    groups->push_back(std::move(go));
  }
  return true;
}

bool RemoveIfExists(Env* env, const std::string& path, std::string* error) {
  return !env->FileExists(path) || env->RemoveFile(path, error);
}

// Swaps the cleaned groups into the (staging) partition directory (replaceSegments, §6.2 step 6).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): LocalLog.replaceSegments: rename, swap and delete in Kafka's crash-safe order
bool ReplaceSegments(Env* env, const PartitionLog& log, std::vector<GroupOutput>* groups, PassReport* report,
                     std::string* error) {
  const std::string& dir = log.loaded.dir;
  // Every new segment is already written as .cleaned files (GroupOutput::Finish), so a failure before
  // here leaves the old segments in place.
  for (auto& g : *groups) {
    int64_t base = g.segment->base_offset();
    OutputSegment os;
    os.base_offset = base;
    os.size = int64_t(g.segment->size());
    os.cleaned = true;
    for (size_t si : g.sources) {
      int64_t b = log.segments[si].base_offset;
      os.merged_from.push_back(b);
      for (const char* suffix : {".log", ".index", ".timeindex", ".txnindex"})
        if (!RemoveIfExists(env, dir + "/" + OffsetFileNamePrefix(b) + suffix, error)) return false;
      // Snapshots of merged-away segments go with them (not the group's first).
      if (b != base && !RemoveIfExists(env, dir + "/" + OffsetFileNamePrefix(b) + ".snapshot", error)) return false;
    }
    for (const char* suffix : {".log", ".index", ".timeindex", ".txnindex"}) {
      std::string final_path = dir + "/" + OffsetFileNamePrefix(base) + suffix;
      std::string cleaned = final_path + ".cleaned";
      if (!env->FileExists(cleaned)) continue;
      if (!env->RenameFile(cleaned, final_path, error)) return false;  // keeps the mtime Finish set
    }
    report->segments.push_back(os);
  }
  return env->SyncDir(dir, error);
}

bool WriteCleanerCheckpoint(Env* env, const PartitionLog& log, int64_t value, std::string* error) {
  // The file keeps only partitions hosted in the log dir (§11): the output holds this one.
  std::vector<OffsetCheckpointEntry> entries{OffsetCheckpointEntry{*log.loaded.tp, value}};
  return WriteFileAtomically(env, log.log_dir + "/cleaner-offset-checkpoint", EncodeOffsetCheckpoint(entries), error);
}

// What a broker's log load does to snapshot files before the cleaner ever runs
// (ProducerStateManager.removeStraySnapshots and truncateAndReload): snapshots that are not at a
// segment base offset are deleted, except the largest one if it is at or above the last segment's
// base (the clean-shutdown snapshot); snapshots above the log end or at/below the log start go too.
// Each is reported under its name in `input_dir`, the partition directory the user gave (the staging
// copy it is deleted from is gone once the command ends).
bool RemoveSnapshotsAsLoadDoes(Env* env, const PartitionLog& log, const std::string& input_dir, ProblemSink* sink,
                               std::string* error) {
  std::set<int64_t> bases;
  for (const auto& s : log.segments) bases.insert(s.base_offset);
  int64_t max_base = *bases.rbegin();
  std::optional<int64_t> latest_stray;
  std::vector<int64_t> remove;
  for (const auto& [offset, path] : log.loaded.snapshot_files) {
    if (bases.count(offset)) continue;
    if (latest_stray) remove.push_back(*latest_stray);
    latest_stray = offset;
  }
  if (latest_stray && *latest_stray < max_base) remove.push_back(*latest_stray);
  for (const auto& [offset, path] : log.loaded.snapshot_files)
    if (offset > log.summary.log_end_offset || offset <= log.summary.log_start_offset) remove.push_back(offset);
  for (int64_t offset : remove) {
    auto it = log.loaded.snapshot_files.find(offset);
    if (it == log.loaded.snapshot_files.end() || !env->FileExists(it->second)) continue;
    if (sink)
      sink->Report(Problem{Severity::kInfo, (fs::path(input_dir) / fs::path(it->second).filename()).string(), 0,
                           "stray-snapshot",
                           "left out of the output, as a broker's log load deletes it "
                           "(removeStraySnapshots/truncateAndReload); the input keeps it"});
    if (!env->RemoveFile(it->second, error)) return false;
  }
  return true;
}

bool CopyPreservingMtime(Env* env, const fs::path& from, const fs::path& to, std::string* error,
                         bool missing_ok = false);

// One pass. It reads the log from `read_dir` and writes into `partition_dir` (the staging copy). On
// the first pass `read_dir` is the input directory, whose .log files were not copied beforehand:
// the segments this pass rewrites are read from the input once and never copied at all (a copy
// would cost as much as the whole clean); the ones it leaves alone are copied afterwards.
// `input_dir` is the partition directory as the user gave it (problems name its files).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one cleaning round (cleanable range, map, groups, clean) in LogCleaner's order
bool RunPass(const std::string& read_dir, const std::string& partition_dir, const std::string& input_dir,
             const CompactOptions& options, PassReport* report, ProblemSink* sink, std::string* error) {
  const CleanerConfig& config = options.config;
  PartitionLog log;
  if (!LoadPartitionLog(read_dir, config, options.now, options.high_watermark, &log, sink, error, options.env))
    return false;
  if (read_dir != partition_dir) {
    // Everything written or deleted from here on is in the staging copy; only the segments' .log
    // files are still read from the input (LoadedSegment::log_path). The log-dir checkpoints were
    // copied unchanged, so the values loaded from the input's log dir are the staging ones.
    log.loaded.dir = partition_dir;
    log.log_dir = fs::path(partition_dir).parent_path().string();
    for (auto& [offset, path] : log.loaded.snapshot_files)
      path = (fs::path(partition_dir) / fs::path(path).filename()).string();
  }
  report->partition = log.loaded.tp->ToString();
  report->log_start_offset = log.summary.log_start_offset;
  report->log_end_offset = log.summary.log_end_offset;
  report->high_watermark = log.high_watermark;
  report->last_stable_offset = log.summary.last_stable_offset;
  report->active_segment_base = log.summary.active().base_offset;
  for (const auto& [pid, entry] : log.loaded.producer_state.producers()) report->active_producers.push_back(pid);
  report->expired_producers = log.expired_producers;
  report->cleaner_checkpoint_before = log.summary.cleaner_checkpoint;
  if (options.first_dirty_offset) log.summary.cleaner_checkpoint = options.first_dirty_offset;
  if (!RemoveSnapshotsAsLoadDoes(options.env, log, input_dir, sink, error)) return false;

  CleaningDecision d = DecideCleaning(log.summary, config, options.now);
  report->decision = d;
  bool clean = options.only_if_eligible ? d.selected : d.range.cleanable_bytes > 0;
  std::optional<int64_t> checkpoint;
  if (d.offsets.force_update_checkpoint) checkpoint = d.offsets.first_dirty_offset;  // written at once (§2.5)

  if (clean) {
    std::unique_ptr<SkimpyOffsetMap> map = SkimpyOffsetMap::Create(config.OffsetMapMemory(), error);
    if (!map) return false;
    report->map_slots = map->slots();
    report->max_desired_map_size = MaxDesiredMapSize(map->slots(), config.dedupe_buffer_load_factor);
    // A large dirty range touches most of the table: back it with huge pages (fewer TLB misses).
    if (d.range.cleanable_bytes >= (int64_t(64) << 20)) map->AdviseHugePages();
    if (!(double(map->slots()) * config.dedupe_buffer_load_factor > 1)) {
      *error =
          "offset map is too small to fit in even a single message, so log cleaning will never make progress "
          "(increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads)";
      return false;
    }
    Round round(log, config, options.now, map.get(), report, sink, options.explain);
    round.SetRemovalLimits(options.max_tombstone_remove_offset, options.max_tx_end_remove_offset);
    round.SetParallelMinBytes(options.parallel_min_bytes);
    round.SetSkipSuperseded(options.skip_superseded_batches);
    round.SetEnv(options.env);
    std::vector<GroupOutput> groups;
    int64_t end_offset = 0;
    std::optional<size_t> split;
    if (!round.DoClean(d.offsets.first_dirty_offset, d.range.first_uncleanable_offset, &end_offset, &groups, &split,
                       error))
      return false;
    if (!ReplaceSegments(options.env, log, &groups, report, error)) return false;
    if (split) {
      // The round was aborted after the split: LogCleaner.cleanLog's doneCleaning writes the
      // checkpoint back as firstDirtyOffset (§11); the groups cleaned before stay cleaned.
      report->split_segment = log.segments[*split].base_offset;
      checkpoint = d.offsets.first_dirty_offset;
    } else {
      report->cleaned = true;
      report->end_offset = end_offset;
      checkpoint = end_offset;
    }
  }
  if (checkpoint) {
    if (!WriteCleanerCheckpoint(options.env, log, *checkpoint, error)) return false;
    report->checkpoint_written = checkpoint;
  }
  if (read_dir != partition_dir) {
    std::set<int64_t> replaced;
    for (const auto& os : report->segments) replaced.insert(os.merged_from.begin(), os.merged_from.end());
    for (const auto& seg : log.segments) {
      if (replaced.count(seg.base_offset)) continue;
      if (!CopyPreservingMtime(options.env, seg.log_path, fs::path(partition_dir) / fs::path(seg.log_path).filename(),
                               error))
        return false;
    }
  }
  // Segments not rewritten, for the summary.
  std::error_code ec;
  std::vector<OutputSegment> all;
  for (fs::directory_iterator it(partition_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    // The staging directory holds only what klf wrote, but a name is still parsed, never trusted.
    FileName name = ClassifyFileName(it->path().filename().string());
    if (name.kind == FileKind::kLog && name.suffix == FileSuffix::kNone && name.offset && name.canonical_name) {
      OutputSegment os;
      os.base_offset = *name.offset;
      std::error_code size_ec;
      os.size = int64_t(it->file_size(size_ec));
      for (const auto& c : report->segments)
        if (c.base_offset == os.base_offset) os = c;
      all.push_back(os);
    }
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.base_offset < b.base_offset; });
  report->segments = all;
  return true;
}

// `from` (a file, or a member of a capture: segment_reader/capture.h) copied to `to` through the Env, with
// its modification time. A missing `from` is no error when `missing_ok`.
bool CopyPreservingMtime(Env* env, const fs::path& from, const fs::path& to, std::string* error, bool missing_ok) {
  InputFileInfo info;
  InputFailure failure = InputFailure::kNone;
  std::string archive, member;
  if (!SplitCapturePath(from.string(), &archive, &member)) {
    if (!ProbeInputFile(from.string(), &info, error, &failure, env))
      return missing_ok && failure == InputFailure::kMissing;
    return env->CopyFile(from.string(), to.string(), error);
  }
  std::unique_ptr<CaptureMemberReader> in = OpenInputReader(from.string(), &info, error, &failure, env);
  if (!in) return missing_ok && failure == InputFailure::kMissing;
  std::unique_ptr<WritableFile> out = env->NewWritableFile(to.string(), error);
  if (!out) return false;
  std::vector<uint8_t> buffer(size_t(1) << 20);  // in 1 MiB pieces
  for (uint64_t pos = 0; pos < info.size;) {
    const uint64_t n = std::min<uint64_t>(buffer.size(), info.size - pos);
    if (!in->Read(pos, n, buffer.data(), error) || !out->Append(Bytes(buffer.data(), size_t(n)), error)) return false;
    pos += n;
  }
  return out->Close(error) && env->SetMtimeMs(to.string(), info.mtime_ms, error);
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): rounds until clean, with each round's error exits; LogCleaner's loop
bool CompactPartition(const std::string& partition_dir, const std::string& out_dir, const CompactOptions& options,
                      CompactReport* report, ProblemSink* sink, std::string* error) {
  fs::path in = fs::absolute(partition_dir).lexically_normal();
  if (in.filename().empty()) in = in.parent_path();
  std::error_code ec;
  if (!IsInputDir(in.string())) {  // a real directory or one in a capture (segment_reader/capture.h)
    *error = partition_dir + ": not a directory";
    return false;
  }
  fs::path log_dir = in.parent_path();
  StagedDirectory::Options so;
  so.force = options.force;
  // --out must not be (or be inside) the partition directory being read.
  so.inputs = {in.string()};
  auto staged = StagedDirectory::Create(options.env, out_dir, so, error);
  if (!staged) return false;
  fs::path staging_part = fs::path(staged->path()) / in.filename();
  if (!options.env->CreateDir(staging_part.string(), error)) return false;
  std::vector<InputDirEntry> entries;
  std::string list_error;
  if (!ListInputDir(in.string(), &entries, &list_error)) {
    *error = in.string() + ": " + list_error;
    return false;
  }
  for (const InputDirEntry& e : entries) {
    // Segment .log files are read by the first pass from the input and copied by it only when left
    // unchanged (RunPass).
    const std::string& n = e.name;
    if (n.size() == 24 && n.compare(20, 4, ".log") == 0 &&
        std::all_of(n.begin(), n.begin() + 20, [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    FileName name = ClassifyFileName(n);
    // A file Kafka keeps here (an index, a snapshot, leader-epoch-checkpoint...) is copied, and must be
    // readable: a FIFO or symlink loop under its name fails the copy. Other non-files are not data.
    if (e.kind != InputKind::kFile && (name.kind == FileKind::kUnknown || name.suffix != FileSuffix::kNone)) continue;
    if (!CopyPreservingMtime(options.env, in / n, staging_part / n, error)) return false;
  }
  for (const char* name : {"cleaner-offset-checkpoint", "log-start-offset-checkpoint",
                           "recovery-point-offset-checkpoint", "replication-offset-checkpoint"}) {
    fs::path p = log_dir / name;
    if (!CopyPreservingMtime(options.env, p, fs::path(staged->path()) / name, error, /*missing_ok=*/true)) return false;
  }
  for (int pass = 0; pass < std::max(options.passes, 1); pass++) {
    PassReport pr;
    CompactOptions pass_options = options;
    pass_options.now = JavaAdd(options.now, JavaMul(pass, options.pass_interval_ms));
    if (pass > 0) pass_options.first_dirty_offset.reset();
    pr.now = pass_options.now;
    std::string read_dir = pass == 0 ? in.string() : staging_part.string();
    if (!RunPass(read_dir, staging_part.string(), in.string(), pass_options, &pr, sink, error)) return false;
    // Explain paths name the input, not the staging copy.
    for (auto& ex : pr.explain) ex.file = (in / fs::path(ex.file).filename()).string();
    report->passes.push_back(std::move(pr));
  }
  if (!staged->Commit(error)) return false;
  report->out_partition_dir = (fs::path(staged->final_path()) / in.filename()).string();
  return true;
}

bool ChooseFilthiestLog(const std::string& log_dir, const CompactOptions& options, LogDirChoice* choice,
                        ProblemSink* sink, std::string* error) {
  std::vector<std::string> dirs;
  std::vector<InputDirEntry> entries;
  std::string list_error;
  if (!ListInputDir(log_dir, &entries, &list_error)) {
    *error = log_dir + ": cannot list directory: " + list_error;
    return false;
  }
  for (const InputDirEntry& e : entries) {
    if (e.kind == InputKind::kDir && ParsePartitionDirName(e.name))
      dirs.push_back((fs::path(log_dir) / e.name).string());
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<CleaningDecision> decisions;
  for (const auto& d : dirs) {
    PartitionLog log;
    std::string e;
    const CleanerConfig config = options.config_for ? options.config_for(d) : options.config;
    if (!LoadPartitionLog(d, config, options.now, options.high_watermark, &log, sink, &e, options.env)) {
      if (sink) sink->Report(Problem{Severity::kWarning, d, 0, "uncleanable", "skipped: " + e});
      continue;
    }
    choice->candidates.push_back(LogDirCandidate{d, DecideCleaning(log.summary, config, options.now)});
    decisions.push_back(choice->candidates.back().decision);
  }
  choice->chosen = GrabFilthiest(decisions);
  if (!choice->chosen && !options.only_if_eligible) {
    for (size_t i = 0; i < decisions.size(); i++) {
      if (decisions[i].range.cleanable_bytes <= 0) continue;
      if (!choice->chosen || decisions[i].range.cleanable_ratio > decisions[*choice->chosen].range.cleanable_ratio)
        choice->chosen = i;
    }
  }
  return true;
}

}  // namespace klf
