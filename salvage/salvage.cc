// Salvage: see salvage.h.
#include "salvage/salvage.h"

#include <algorithm>
#include <limits>
#include <fmt/format.h>
#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/layout.h"
#include "verify/verify.h"
#include "segment_reader/java_long.h"
#include "segment_writer/segment_writer.h"

namespace klf {

namespace {

// Offsets of the entries that can still be framed in `data` from `from` on.
// `first_lies`: the first entry's offsets are the damage (salvage blamed them), so only its count is used.
void DescribeDropped(const std::string& path, Bytes data, uint64_t from, int64_t next_expected, int64_t base,
                     SalvageDrop* d, bool first_lies = false) {
  d->position = from;
  d->bytes = data.size() - from;
  Bytes rest = data.subspan(from);
  auto be = [&](size_t at, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | rest[at + i];
    return v;
  };
  NullSink quiet;
  ReadOptions ro;
  ro.resync = true;
  LogReader reader(path, data.subspan(from), &quiet, ro);
  BatchView b;
  while (reader.Next(&b)) {
    if (first_lies && d->batches == 0) {
      ++d->batches;
      continue;
    }
    // Entries with a bad CRC are counted too: their header offsets are the best evidence of what went.
    ++d->batches;
    int64_t first = b.header.base_offset_known ? b.header.base_offset : b.header.last_offset;
    // Under a bad CRC the lastOffsetDelta may be garbage: only the base offset counts then.
    int64_t last = b.header.crc_valid ? b.header.last_offset : first;
    // Offsets that cannot belong to this segment are the damage, not what was lost.
    auto fits = [&](int64_t o) { return o >= base && o - base <= std::numeric_limits<int32_t>::max(); };
    if (!fits(first) || !fits(last) || last < first) continue;
    if (!d->first_offset) d->first_offset = first;
    d->last_offset = std::max(d->last_offset.value_or(first), last);
  }
  // A batch cut short by the end of the file cannot be framed, but its header may still name its
  // offsets (baseOffset at 0; v2 lastOffsetDelta at 23): reported when they are plausible.
  if (!d->first_offset && !first_lies && rest.size() >= 8) {
    int64_t o = int64_t(be(0, 8));
    if (o >= next_expected && o >= base && o - base <= std::numeric_limits<int32_t>::max()) {
      d->first_offset = o;
      d->last_offset = o;
      if (rest.size() >= 27 && rest[16] == 2) d->last_offset = o + int32_t(uint32_t(be(23, 4)));
    }
  }
}

// The lowest .log of the directory that exists but cannot be read, or nullptr.
const UnreadableFile* FirstUnreadableLog(const PartitionDir& dir) {
  const UnreadableFile* first = nullptr;
  for (const UnreadableFile& u : dir.unreadable) {
    if (u.file.info.kind != FileKind::kLog || !u.file.info.offset) continue;
    if (!first || *u.file.info.offset < *first->file.info.offset) first = &u;
  }
  return first;
}

// The drop of a .log that cannot be read: its offsets, from its name up to the next segment's base
// offset (unknown for the last segment), are reported as lost from the copy -- never as absent.
SalvageDrop UnreadableLogDrop(const UnreadableFile& u, const std::vector<const SegmentFiles*>& later) {
  SalvageDrop d;
  d.file = u.file.path;
  d.whole_segment = true;
  d.unreadable = true;
  d.first_offset = *u.file.info.offset;
  if (!later.empty()) d.last_offset = later.front()->base_offset - 1;
  const std::string_view why = WithoutFile(u.error, u.file.path);
  d.reason = fmt::format(
      "the segment cannot be read ({}); its offsets are not in the copy, and every later "
      "segment is deleted as after a truncation",
      why);
  return d;
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): LogSegment.recover over a damaged directory: Kafka's steps in Kafka's order
bool SalvagePartition(Env* env, const std::string& in, const std::string& out, const SalvageOptions& options,
                      SalvageResult* result, std::string* error) {
  *result = SalvageResult();
  CollectingSink scan;
  PartitionDir dir;
  if (!ScanPartitionDir(in, &dir, &scan, env)) {
    *error = in + ": cannot list the partition directory";
    return false;
  }
  for (const UnreadableFile& u : dir.unreadable) result->unreadable.push_back(u.error);
  if (dir.tp) {
    NullSink quiet;  // the values are read again when the checkpoints are written
    for (const UnreadableFile& u : ReadParentCheckpoints(dir.path, *dir.tp, &quiet, env).unreadable) {
      result->unreadable.push_back(u.error);
    }
  }
  // A .log that cannot be read: the log ends at its base offset (see UnreadableLogDrop); the segments
  // after it are deleted as after a truncation.
  const UnreadableFile* unreadable_log = FirstUnreadableLog(dir);
  std::vector<const SegmentFiles*> segments;
  std::vector<const SegmentFiles*> after_unreadable;
  for (const SegmentFiles* s : dir.LogSegments()) {
    (unreadable_log && s->base_offset > *unreadable_log->file.info.offset ? after_unreadable : segments).push_back(s);
  }
  std::vector<std::unique_ptr<MappedFile>> files;
  for (const SegmentFiles* s : segments) {
    files.push_back(MappedFile::Open(s->log->path, error, env));
    if (!files.back()) return false;
  }

  // Pass 1: where recovery stops (segment, byte position, reason). Batches are checked one by one
  // (CheckBatchRecords, the batch's own fields) and against the last batch kept before them (offsets and
  // leader epochs only go up, a segment's offsets stay below the next segment's base offset).
  size_t stop_segment = segments.size();
  uint64_t stop_position = 0;
  std::string stop_reason;
  bool stop_offsets_lie = false;  // the batch stopped at was blamed for its offsets (not to be reported)
  bool stop_whole = false;        // the stopped segment goes entirely (its name conflicts with the log before it)
  // The last two batches kept so far: when a batch conflicts with the one before it but not with the
  // one before that, the one before it is the liar (a flipped baseOffset or partitionLeaderEpoch,
  // neither covered by the CRC, or a lastOffsetDelta rewritten under a recomputed CRC): recovery stops
  // at that batch, not at the intact one after it.
  struct Kept {
    size_t segment = 0;
    uint64_t position = 0;
    int64_t first_offset = -1;
    int64_t last_offset = -1;
    int32_t epoch = -1;  // partitionLeaderEpoch (v2; -1 = none)
  };
  std::optional<Kept> prev, prev2;
  auto last_of = [](const std::optional<Kept>& k) { return k ? k->last_offset : int64_t(-1); };
  auto epoch_of = [](const std::optional<Kept>& k) { return k ? k->epoch : int32_t(-1); };
  // Stops at the batch before the current one (it lies); prev2 becomes the last batch kept. Its first
  // offset is reported as dropped only when it still fits between its neighbours (`next_first`: the
  // offset of the batch or segment after it); else it is the lie.
  auto blame_prev = [&](const std::string& why, int64_t next_first) {
    stop_offsets_lie = !(prev->first_offset > last_of(prev2) && prev->first_offset < next_first);
    stop_segment = prev->segment;
    stop_position = prev->position;
    stop_reason = why;
    prev = prev2;
  };
  RecordDecoder decoder;
  for (size_t si = 0; si < segments.size() && stop_segment == segments.size(); ++si) {
    const std::string& path = segments[si]->log->path;
    int64_t base = segments[si]->base_offset;
    // Kafka's segments split the offsets: every offset of a segment is below the next one's base offset
    // (LogSegment.baseOffset, spec §1.3). A base offset at or below the last offset kept is a name that
    // lies (or the batch before lies, when the name fits the batch before that).
    if (prev && base <= prev->last_offset) {
      std::string why = fmt::format("a segment named {} although the segment before it already holds offset {}", base,
                                    prev->last_offset);
      if (base > last_of(prev2)) {
        blame_prev(fmt::format("a batch whose last offset {} reaches past the next segment's base offset {}",
                               prev->last_offset, base),
                   base);
      } else {
        // Not kept even empty: an empty segment under that name would still overlap the one before it.
        stop_segment = si;
        stop_position = 0;
        stop_reason = why;
        stop_whole = true;
      }
      break;
    }
    ReadOptions ro;
    ro.resync = false;
    CollectingSink framing;
    LogReader reader(path, files[si]->data(), &framing, ro);
    BatchView b;
    uint64_t expected = 0;
    std::string why;
    while (reader.Next(&b)) {
      const BatchHeader& h = b.header;
      int64_t first = h.base_offset_known ? h.base_offset : h.last_offset;
      const int32_t epoch = h.magic >= 2 ? h.partition_leader_epoch : -1;
      CollectingSink rec;
      std::string conflict;  // with the batch before (blamed on it when the batch before that agrees)
      if (h.position != expected) {
        why = "bytes that are not a batch";
      } else if (!h.crc_valid) {
        why = "a batch whose CRC does not match";
      } else if (first < base || h.last_offset - base > std::numeric_limits<int32_t>::max()) {
        why = fmt::format("a batch whose offsets {}..{} do not fit the segment's base offset {}", first, h.last_offset,
                          base);
      } else if (epoch < -1) {
        // partitionLeaderEpoch is outside the CRC; Kafka writes -1 or an epoch >= 0.
        why = fmt::format("a batch whose partition leader epoch {} is negative", epoch);
      } else if (!decoder.Decode(b, path, &rec)) {
        why = "a batch whose records do not decode" +
              (rec.problems.empty() ? std::string() : " (" + rec.problems.front().message + ")");
      } else if (std::vector<RecordsProblem> rp = CheckBatchRecords(h, decoder.records(), nullptr); !rp.empty()) {
        // Kafka's recovery (LogSegment.recover) does not look at records, but a batch klf verify
        // rejects would make the salvaged copy fail verification.
        why = "a batch with inconsistent records (" + rp.front().message + ")";
      } else if (first <= last_of(prev)) {
        conflict = fmt::format("offset {} is not above the previous batch's last offset {}", first, last_of(prev));
        if (prev && first > last_of(prev2) && (epoch < 0 || epoch >= epoch_of(prev2))) {
          blame_prev(fmt::format("a batch whose last offset {} is not below the next batch's offset {}",
                                 prev->last_offset, first),
                     first);
          break;
        }
      } else if (epoch >= 0 && epoch < epoch_of(prev)) {
        // A replica's leader epochs never go back (LeaderEpochFileCache keeps them ascending).
        conflict = fmt::format("partition leader epoch {} is below the previous batch's {}", epoch, epoch_of(prev));
        if (prev && epoch >= epoch_of(prev2)) {
          blame_prev(fmt::format("a batch whose partition leader epoch {} is above the next batch's {}", epoch_of(prev),
                                 epoch),
                     first);
          break;
        }
      }
      if (!conflict.empty()) why = "a batch whose " + conflict;
      if (!why.empty()) break;
      expected += b.bytes.size();
      prev2 = prev;
      prev = Kept{si, h.position, first, h.last_offset, epoch >= 0 ? epoch : epoch_of(prev)};
    }
    if (stop_segment != segments.size()) break;  // blamed on an earlier batch
    if (why.empty() && expected < files[si]->size()) {
      why = reader.end() == LogEnd::kZeroTail        ? "a zero-filled tail"
            : reader.end() == LogEnd::kTruncatedTail ? "a batch cut short by the end of the file"
                                                     : "bytes that are not a batch";
      if (!framing.problems.empty()) why += " (" + framing.problems.front().message + ")";
    }
    if (!why.empty()) {
      stop_segment = si;
      stop_position = expected;
      stop_reason = why;
    }
  }
  // The log end after recovery: one past the last batch kept (the stopped segment's base offset when
  // none of it is kept).
  std::optional<int64_t> stop_offset;
  if (stop_segment < segments.size()) {
    stop_offset = prev ? JavaAdd(prev->last_offset, 1) : segments[stop_segment]->base_offset;
    if (prev && prev->segment < stop_segment) stop_offset = std::max(*stop_offset, segments[stop_segment]->base_offset);
  }
  const int64_t prev_last = last_of(prev);

  std::string part;
  auto staged = StagePartitionCopy(env, out, options.force, {in}, dir, &part, error);
  if (!staged) return false;
  PartitionWriterOptions po;
  po.config = options.config;
  po.producer_state.producer_id_expiration_ms = options.producer_id_expiration_ms;
  po.auto_roll = false;
  if (!stop_offset && unreadable_log) stop_offset = *unreadable_log->file.info.offset;
  if (dir.leader_epochs) {
    // LeaderEpochFileCache.truncateFromEnd: entries at or past the new log end go.
    for (const LeaderEpochEntry& e : *dir.leader_epochs) {
      if (!stop_offset || e.start_offset < *stop_offset) po.initial_leader_epochs.push_back(e);
    }
  }
  po.partition_metadata = dir.partition_metadata;
  auto writer = PartitionWriter::Create(env, part, po, error);
  if (!writer) return false;

  for (size_t si = 0; si < segments.size(); ++si) {
    const std::string& path = segments[si]->log->path;
    Bytes data = files[si]->data();
    if (si > stop_segment || (si == stop_segment && stop_whole)) {
      SalvageDrop d;
      d.file = path;
      d.whole_segment = true;
      DescribeDropped(path, data, 0, segments[si]->base_offset, segments[si]->base_offset, &d);
      d.reason = si == stop_segment
                     ? "segment deleted: " + stop_reason
                     : fmt::format(
                           "segment deleted: an earlier segment ({}) was truncated, and recovery deletes every "
                           "later segment",
                           segments[stop_segment]->log->path);
      result->dropped.push_back(d);
      continue;
    }
    if (!writer->Roll(segments[si]->base_offset, error)) return false;
    ++result->segments_kept;
    uint64_t end = si == stop_segment ? stop_position : data.size();
    ReadOptions ro;
    ro.resync = false;
    NullSink quiet;
    LogReader reader(path, data.subspan(0, end), &quiet, ro);
    BatchView b;
    bool any = false;
    while (reader.Next(&b)) {
      if (!writer->AppendBatch(b, error)) {
        *error = fmt::format("{}: position {}: {}", path, b.header.position, *error);
        return false;
      }
      ++result->batches_kept;
      any = true;
    }
    if (!any && !writer->AppendRaw({}, error)) return false;
    if (si == stop_segment) {
      SalvageDrop d;
      d.file = path;
      DescribeDropped(path, data, stop_position, JavaAdd(prev_last, 1), segments[si]->base_offset, &d,
                      stop_offsets_lie);
      d.reason = "truncated at " + stop_reason;
      result->dropped.push_back(d);
    }
  }
  if (unreadable_log) {
    result->dropped.push_back(UnreadableLogDrop(*unreadable_log, after_unreadable));
    for (const SegmentFiles* s : after_unreadable) {
      auto file = MappedFile::Open(s->log->path, error, env);
      if (!file) return false;
      SalvageDrop d;
      d.file = s->log->path;
      d.whole_segment = true;
      DescribeDropped(d.file, file->data(), 0, s->base_offset, s->base_offset, &d);
      d.reason = fmt::format(
          "segment deleted: an earlier segment ({}) cannot be read, and recovery deletes every "
          "later segment after a truncation",
          unreadable_log->file.path);
      result->dropped.push_back(d);
    }
  }
  for (const std::unique_ptr<MappedFile>& f : files)  // nothing written from zeros where pages were gone
    if (!f->Unchanged(error)) return false;
  if (!writer->Close(error)) return false;
  result->log_end_offset = writer->log_end_offset();
  if (!WriteCopyCheckpoints(env, staged->path(), dir, result->log_end_offset, error)) return false;
  if (!staged->Commit(error)) return false;
  result->out_partition_dir = out + "/" + PartitionDirName(dir);
  return true;
}

}  // namespace klf
