// Segment and partition writers (see segment_writer.h). Kafka sources followed: LogSegment.append,
// LogSegment.recover, LogSegment.onBecomeInactiveSegment, OffsetIndex/TimeIndex append rules,
// UnifiedLog.roll/maybeRoll, LogSegment.shouldRoll, LeaderEpochFileCache.assign.
#include "segment_writer/segment_writer.h"
#include "segment_writer/output_guard.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "segment_reader/file.h"
#include "segment_reader/layout.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace {

std::string SegmentPath(const std::string& dir, int64_t base_offset, const char* suffix) {
  return dir + "/" + OffsetFileNamePrefix(base_offset) + suffix;
}

}  // namespace

ChunkInfo ChunkInfoOf(std::span<const BatchHeader> batches) {
  ChunkInfo info;
  for (const BatchHeader& b : batches) {
    info.largest_offset = std::max(info.largest_offset, b.last_offset);
    // LogValidator / LogAppendInfo: the first batch reaching the max keeps it (strictly greater).
    if (b.max_timestamp > info.largest_timestamp) {
      info.largest_timestamp = b.max_timestamp;
      info.shallow_offset_of_max_timestamp = b.last_offset;
    }
  }
  return info;
}

// ---------------------------------------------------------------------------------------------
// SegmentWriter

std::unique_ptr<SegmentWriter> SegmentWriter::Create(Env* env, const std::string& dir, int64_t base_offset,
                                                     const LogConfig& config, std::string* error,
                                                     const std::string& name_suffix) {
  if (base_offset < 0) {
    *error = "negative segment base offset " + std::to_string(base_offset);
    return nullptr;
  }
  // Kafka's bounds (LogConfig: segment.index.bytes at least 4). An index too small for an entry is
  // full: an append that needs an entry fails, as Kafka's OffsetIndex/TimeIndex.append throws.
  if (config.segment_index_bytes < 4 || config.index_interval_bytes < 0 || config.segment_bytes <= 0) {
    *error = "invalid log config (segment.index.bytes below 4, index.interval.bytes or segment.bytes negative)";
    return nullptr;
  }
  std::unique_ptr<SegmentWriter> w(new SegmentWriter());
  w->env_ = env;
  w->dir_ = dir;
  w->name_suffix_ = name_suffix;
  w->base_offset_ = base_offset;
  w->config_ = config;
  w->offset_of_max_timestamp_so_far_ = base_offset;  // TimestampOffset(-1, baseOffset) for an empty index
  w->log_ = AtomicFile::Create(env, SegmentPath(dir, base_offset, ".log") + name_suffix, error);
  if (!w->log_) return nullptr;
  return w;
}

SegmentWriter::~SegmentWriter() = default;

uint64_t SegmentWriter::size() const { return log_ ? log_->size() : 0; }

bool SegmentWriter::offset_index_full() const {
  return offset_entries_.size() >= size_t(config_.segment_index_bytes / kOffsetIndexEntrySize);
}

bool SegmentWriter::time_index_full() const {
  // TimeIndex.isFull: one slot is kept for the final entry written on roll.
  return int64_t(time_entries_.size()) >= int64_t(config_.segment_index_bytes / kTimeIndexEntrySize) - 1;
}

bool SegmentWriter::CanConvertToRelativeOffset(int64_t offset) const {
  int64_t relative = offset - base_offset_;
  return relative >= 0 && relative <= std::numeric_limits<int32_t>::max();
}

void SegmentWriter::MaybeAppendTimeEntry(int64_t timestamp, int64_t offset) {
  // TimeIndex.maybeAppend: only a timestamp above the last entry's (-1 for an empty index) is written.
  int64_t last = time_entries_.empty() ? kNoTimestamp : time_entries_.back().timestamp;
  if (timestamp > last) time_entries_.push_back(TimeIndexEntry{timestamp, offset});
}

bool SegmentWriter::Append(Bytes chunk, const ChunkInfo& info, std::string* error) {
  if (closed_) {
    *error = "segment " + std::to_string(base_offset_) + " is closed";
    return false;
  }
  if (chunk.empty()) return true;
  if (!CanConvertToRelativeOffset(info.largest_offset)) {
    *error = "offset " + std::to_string(info.largest_offset) + " does not fit the 32-bit relative offsets of segment " +
             std::to_string(base_offset_);
    return false;
  }
  uint64_t position = size();
  if (position + chunk.size() > uint64_t(std::numeric_limits<int32_t>::max())) {
    *error = "segment " + std::to_string(base_offset_) + " would exceed 2 GiB";
    return false;
  }
  if (info.largest_timestamp > max_timestamp_so_far_) {
    max_timestamp_so_far_ = info.largest_timestamp;
    offset_of_max_timestamp_so_far_ = info.shallow_offset_of_max_timestamp;
  }
  if (bytes_since_last_index_entry_ > uint64_t(config_.index_interval_bytes)) {
    if (offset_index_full()) {
      *error = "offset index of segment " + std::to_string(base_offset_) + " is full (roll first)";
      return false;
    }
    int64_t last = offset_entries_.empty() ? base_offset_ : offset_entries_.back().offset;
    if (!offset_entries_.empty() && info.largest_offset <= last) {
      *error = "offset index entry " + std::to_string(info.largest_offset) + " is not above the last entry " +
               std::to_string(last);
      return false;
    }
    if (time_index_full()) {
      *error = "time index of segment " + std::to_string(base_offset_) + " is full (roll first)";
      return false;
    }
    offset_entries_.push_back(OffsetIndexEntry{info.largest_offset, int32_t(position)});
    MaybeAppendTimeEntry(max_timestamp_so_far_, offset_of_max_timestamp_so_far_);
    bytes_since_last_index_entry_ = 0;
  }
  if (!log_->Append(chunk, error)) return false;
  bytes_since_last_index_entry_ += chunk.size();
  return true;
}

bool SegmentWriter::AppendRaw(Bytes bytes, std::string* error) {
  if (closed_) {
    *error = "segment " + std::to_string(base_offset_) + " is closed";
    return false;
  }
  return log_->Append(bytes, error);
}

bool SegmentWriter::AppendAbortedTxn(const AbortedTxn& txn, std::string* error) {
  if (!txn_entries_.empty() && txn.last_offset <= txn_entries_.back().last_offset) {
    *error = "aborted transaction last offset " + std::to_string(txn.last_offset) +
             " is not above the previous entry's " + std::to_string(txn_entries_.back().last_offset);
    return false;
  }
  txn_entries_.push_back(txn);
  return true;
}

bool SegmentWriter::Close(std::string* error, std::optional<int64_t> mtime_ms) {
  if (closed_) return true;
  closed_ = true;
  // onBecomeInactiveSegment: the final time-index entry skips the full check.
  MaybeAppendTimeEntry(max_timestamp_so_far_, offset_of_max_timestamp_so_far_);
  std::string index, time_index, txn_index;
  for (const auto& e : offset_entries_) EncodeOffsetIndexEntry(e, base_offset_, &index);
  for (const auto& e : time_entries_) EncodeTimeIndexEntry(e, base_offset_, &time_index);
  for (const auto& e : txn_entries_) EncodeAbortedTxn(e, &txn_index);
  const std::string index_path = SegmentPath(dir_, base_offset_, ".index") + name_suffix_;
  const std::string time_path = SegmentPath(dir_, base_offset_, ".timeindex") + name_suffix_;
  if (!WriteFileAtomically(env_, index_path, index, error)) return false;
  if (!WriteFileAtomically(env_, time_path, time_index, error)) return false;
  if (!txn_entries_.empty() &&
      !WriteFileAtomically(env_, SegmentPath(dir_, base_offset_, ".txnindex") + name_suffix_, txn_index, error)) {
    return false;
  }
  if (!log_->Commit(error)) return false;
  if (mtime_ms) {
    for (const std::string& p : {log_->path(), index_path, time_path}) {
      if (!env_->SetMtimeMs(p, *mtime_ms, error)) return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// PartitionWriter

std::unique_ptr<PartitionWriter> PartitionWriter::Create(Env* env, const std::string& dir,
                                                         const PartitionWriterOptions& options, std::string* error) {
  std::unique_ptr<PartitionWriter> w(new PartitionWriter());
  w->env_ = env;
  w->dir_ = dir;
  w->options_ = options;
  w->producer_state_ = std::make_unique<ProducerStateManager>(options.producer_state);
  w->leader_epochs_ = options.initial_leader_epochs;
  return w;
}

PartitionWriter::~PartitionWriter() = default;

bool PartitionWriter::StartSegment(int64_t base_offset, std::string* error) {
  active_ = SegmentWriter::Create(env_, dir_, base_offset, options_.config, error);
  if (!active_) return false;
  if (last_snapshot_offset_ < 0) {
    // A fresh log: ProducerStateManager starts at the log start offset with lastSnapOffset there.
    last_snapshot_offset_ = base_offset;
    producer_state_->TruncateFullyAndStartAt(base_offset);
    log_end_offset_ = base_offset;
  }
  return true;
}

bool PartitionWriter::TakeSnapshot(std::string* error) {
  // ProducerStateManager.takeSnapshot: only when the map moved past the last snapshot.
  int64_t offset = producer_state_->map_end_offset();
  if (offset <= last_snapshot_offset_) return true;
  last_snapshot_offset_ = offset;
  return WriteFileAtomically(env_, SegmentPath(dir_, offset, ".snapshot"), producer_state_->EncodeSnapshot(), error);
}

bool PartitionWriter::Roll(int64_t base_offset, std::string* error) {
  if (closed_) {
    *error = "partition writer is closed";
    return false;
  }
  if (!active_) {
    next_base_offset_ = base_offset;
    return true;
  }
  // UnifiedLog.roll: newOffset = max(expected next offset, log end offset). Without auto_roll the
  // caller is reproducing existing boundaries, which are kept even when they overlap.
  int64_t new_base = options_.auto_roll ? std::max(base_offset, log_end_offset_) : base_offset;
  if (new_base == active_->base_offset()) {
    if (active_->size() == 0) return true;  // Kafka replaces an empty segment with the same base
    *error = "cannot roll to base offset " + std::to_string(new_base) + ": the active segment has it";
    return false;
  }
  if (!active_->Close(error)) return false;
  producer_state_->UpdateMapEndOffset(new_base);
  if (!TakeSnapshot(error)) return false;
  return StartSegment(new_base, error);
}

bool PartitionWriter::UpdateStates(const BatchView& batch, std::string* error) {
  const BatchHeader& h = batch.header;
  if (h.magic >= 2 && h.partition_leader_epoch >= 0 &&
      (leader_epochs_.empty() || h.partition_leader_epoch > leader_epochs_.back().epoch)) {
    leader_epochs_.push_back(LeaderEpochEntry{h.partition_leader_epoch, h.base_offset});
  }
  NullSink quiet;
  BatchUpdate u = producer_state_->Apply(batch, dir_, &quiet);
  if (u.aborted_txn) {
    if (!active_->AppendAbortedTxn(*u.aborted_txn, error)) return false;
  }
  return true;
}

bool PartitionWriter::AppendChunk(Bytes chunk, std::span<const BatchView> batches, std::string* error) {
  if (closed_) {
    *error = "partition writer is closed";
    return false;
  }
  if (batches.empty()) return true;
  std::vector<BatchHeader> headers;
  headers.reserve(batches.size());
  for (const BatchView& b : batches) headers.push_back(b.header);
  ChunkInfo info = ChunkInfoOf(headers);
  const BatchHeader& first = batches.front().header;
  int64_t first_offset = first.base_offset_known ? first.base_offset : first.last_offset;
  if (!active_) {
    if (!StartSegment(next_base_offset_.value_or(first_offset), error)) return false;
  } else if (options_.auto_roll && ((active_->size() > 0 && int64_t(active_->size()) > options_.config.segment_bytes -
                                                                                           int64_t(chunk.size())) ||
                                    active_->offset_index_full() || active_->time_index_full() ||
                                    !active_->CanConvertToRelativeOffset(info.largest_offset))) {
    // LogSegment.shouldRoll (time-based rolling is not modelled: it depends on the wall clock).
    if (!Roll(first_offset, error)) return false;
  }
  if (!active_->Append(chunk, info, error)) return false;
  for (const BatchView& b : batches) {
    if (!UpdateStates(b, error)) return false;
    log_end_offset_ = std::max(log_end_offset_, JavaAdd(b.header.last_offset, 1));
  }
  return true;
}

bool PartitionWriter::AppendBatch(const BatchView& batch, std::string* error) {
  return AppendChunk(batch.bytes, std::span<const BatchView>(&batch, 1), error);
}

bool PartitionWriter::AppendEntries(Bytes entries, AppendGranularity granularity, std::string* error) {
  CollectingSink sink;
  ReadOptions ro;
  ro.resync = false;
  LogReader reader("<buffer>", entries, &sink, ro);
  std::vector<BatchView> batches;
  BatchView b;
  while (reader.Next(&b)) batches.push_back(b);
  if (reader.valid_bytes() != entries.size() || sink.ErrorCount() > 0) {
    *error = "entries to append do not parse as whole valid batches (" +
             (sink.problems.empty() ? std::string("trailing bytes") : sink.problems.front().message) + ")";
    return false;
  }
  if (granularity == AppendGranularity::kPerChunk) return AppendChunk(entries, batches, error);
  for (const BatchView& one : batches) {
    if (!AppendBatch(one, error)) return false;
  }
  return true;
}

bool PartitionWriter::AppendRaw(Bytes bytes, std::string* error) {
  if (!active_) {
    if (!StartSegment(next_base_offset_.value_or(0), error)) return false;
  }
  return active_->AppendRaw(bytes, error);
}

bool PartitionWriter::Close(std::string* error) {
  if (closed_) return true;
  closed_ = true;
  if (active_ && !active_->Close(error)) return false;
  // LeaderEpochFileCache.truncateFromEnd(logEndOffset): entries starting at or past the end go.
  while (!leader_epochs_.empty() && leader_epochs_.back().start_offset >= log_end_offset_ && active_ != nullptr) {
    leader_epochs_.pop_back();
  }
  // Clean shutdown: a snapshot at the log end offset.
  producer_state_->UpdateMapEndOffset(std::max(producer_state_->map_end_offset(), log_end_offset_));
  if (active_ && !TakeSnapshot(error)) return false;
  if (!WriteLeaderEpochCheckpointFile(env_, dir_, leader_epochs_, error)) return false;
  if (options_.partition_metadata && !WritePartitionMetadataFile(env_, dir_, *options_.partition_metadata, error)) {
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Checkpoint files

bool WriteOffsetCheckpointFile(Env* env, const std::string& path, const std::vector<OffsetCheckpointEntry>& entries,
                               std::string* error) {
  return WriteFileAtomically(env, path, EncodeOffsetCheckpoint(entries), error);
}

bool WriteLeaderEpochCheckpointFile(Env* env, const std::string& partition_dir,
                                    const std::vector<LeaderEpochEntry>& entries, std::string* error) {
  return WriteFileAtomically(env, partition_dir + "/leader-epoch-checkpoint", EncodeLeaderEpochCheckpoint(entries),
                             error);
}

bool WritePartitionMetadataFile(Env* env, const std::string& partition_dir, const PartitionMetadata& metadata,
                                std::string* error) {
  return WriteFileAtomically(env, partition_dir + "/partition.metadata", EncodePartitionMetadata(metadata), error);
}

// ---------------------------------------------------------------------------------------------
// Reindex

namespace {
// Copies bytes [from, to) of the file at `path` to the end of the active segment, a window at a time.
bool CopyTail(Env* env, const std::string& path, uint64_t from, uint64_t to, PartitionWriter* writer,
              std::string* error) {
  auto file = StreamedFile::Open(path, error, StreamedFile::kDefaultChunk, env);
  if (!file) return false;
  for (uint64_t pos = from; pos < to;) {
    uint64_t n = std::min<uint64_t>(to - pos, StreamedFile::kDefaultChunk);
    const uint8_t* p = file->Fetch(pos, n, error);
    if (p == nullptr || !writer->AppendRaw(Bytes(p, n), error)) return false;
    pos += n;
  }
  return true;
}
}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): LogSegment's index rebuild with index-full guards, in Kafka's order
bool ReindexPartition(Env* env, const std::string& in, const std::string& out, const ReindexOptions& options,
                      ReindexResult* result, ProblemSink* sink, std::string* error) {
  *result = ReindexResult();
  PartitionDir dir;
  if (!ScanPartitionDir(in, &dir, sink, env)) {
    *error = in + ": cannot list the partition directory";
    return false;
  }
  if (!dir.unreadable.empty()) {
    // A segment (or the epoch cache) rebuilt without a file that is there would be wrong, not partial.
    *error = dir.unreadable.front().error + " (a file of the partition that cannot be read: nothing is written)";
    return false;
  }
  // --out is a log directory receiving <topic>-<partition>/ and the log-dir checkpoints, as in compact
  // and repair.
  std::string part;
  auto staged = StagePartitionCopy(env, out, options.force, {in}, dir, &part, error);
  if (!staged) return false;

  PartitionWriterOptions po;
  po.config = options.config;
  po.producer_state = options.producer_state;
  po.auto_roll = false;
  if (options.keep_leader_epoch_checkpoint && dir.leader_epochs) po.initial_leader_epochs = *dir.leader_epochs;
  auto writer = PartitionWriter::Create(env, part, po, error);
  if (!writer) return false;

  for (const SegmentFiles* seg : dir.LogSegments()) {
    const std::string& path = seg->log->path;
    if (!writer->Roll(seg->base_offset, error)) return false;
    ++result->segments;
    // LogSegment.recover: iterate, validate, index per batch; stop at the first invalid entry. Bytes
    // from there on are copied unchanged (the copy must equal the input) but not indexed. Read with
    // the streaming LogReader (pread into a reused buffer; mapping pages costs more than copying
    // them here, docs/PERFORMANCE.md): AppendBatch copies each batch before the next Next().
    ReadOptions ro;
    ro.resync = false;
    ro.env = env;
    NullSink framing;  // framing problems are summarised below as one warning
    auto reader = LogReader::Open(path, &framing, ro, error);
    if (!reader) return false;
    const uint64_t file_size = reader->file_size();
    BatchView batch;
    uint64_t indexed = 0;
    bool have_active = false;
    while (reader->Next(&batch)) {
      if (batch.header.position != indexed || !batch.header.crc_valid) break;
      // LogSegment.recover: ensureOffsetInRange. Kafka would split the segment; we keep the bytes.
      int64_t first = batch.header.base_offset_known ? batch.header.base_offset : batch.header.last_offset;
      if (first < seg->base_offset ||
          JavaSub(batch.header.last_offset, seg->base_offset) > std::numeric_limits<int32_t>::max()) {
        Report(sink, Severity::kError, path, indexed, "reindex-offset-range",
               "batch offsets " + std::to_string(first) + ".." + std::to_string(batch.header.last_offset) +
                   " do not fit the segment's 32-bit relative offsets from base offset " +
                   std::to_string(seg->base_offset));
        break;
      }
      if (!writer->AppendBatch(batch, error)) {
        *error = path + ": position " + std::to_string(batch.header.position) + ": " + *error;
        return false;
      }
      have_active = true;
      indexed += batch.bytes.size();
      ++result->batches;
    }
    if (!have_active) {
      // An empty (or wholly invalid) segment still gets its files.
      if (!writer->AppendRaw({}, error)) return false;
    }
    if (indexed < file_size) {
      Report(sink, Severity::kWarning, path, indexed, "reindex-tail",
             std::to_string(file_size - indexed) +
                 " bytes after the last valid batch are copied unchanged and not indexed "
                 "(Kafka's recovery would truncate them)");
      if (!CopyTail(env, path, indexed, file_size, writer.get(), error)) return false;
    }
  }
  if (!writer->Close(error)) return false;
  result->log_end_offset = writer->log_end_offset();

  if (dir.partition_metadata_file) {
    std::string contents;
    if (!ReadSmallFile(dir.partition_metadata_file->path, 1 << 20, &contents, error, nullptr, env)) return false;
    if (!WriteFileAtomically(env, part + "/partition.metadata", contents, error)) return false;
  }
  if (!WriteCopyCheckpoints(env, staged->path(), dir, result->log_end_offset, error)) return false;
  if (!staged->Commit(error)) return false;
  result->out_partition_dir = out + "/" + PartitionDirName(dir);

  PartitionDir written;
  NullSink quiet;
  if (ScanPartitionDir(result->out_partition_dir, &written, &quiet, env)) {
    for (const auto& [base, s] : written.segments) {
      for (const auto* e : {&s.log, &s.index, &s.time_index, &s.txn_index}) {
        if (*e) result->files_written.push_back((*e)->name);
      }
    }
    for (const auto& [off, e] : written.producer_snapshots) result->files_written.push_back(e.name);
    if (written.leader_epoch_checkpoint_file) result->files_written.push_back("leader-epoch-checkpoint");
    if (written.partition_metadata_file) result->files_written.push_back("partition.metadata");
    std::sort(result->files_written.begin(), result->files_written.end());
  }
  return true;
}

std::string PartitionDirName(const PartitionDir& dir) {
  if (dir.tp) return dir.tp->ToString();
  return std::filesystem::path(dir.path).lexically_normal().filename().string();
}

std::unique_ptr<StagedDirectory> StagePartitionCopy(Env* env, const std::string& out, bool force,
                                                    std::vector<std::string> inputs, const PartitionDir& dir,
                                                    std::string* part_dir, std::string* error) {
  StagedDirectory::Options so;
  so.force = force;
  so.inputs = std::move(inputs);
  auto staged = StagedDirectory::Create(env, out, so, error);
  if (!staged) return nullptr;
  std::string name = PartitionDirName(dir);
  if (!ValidatePathComponent(name, error)) return nullptr;  // it becomes a directory under --out
  *part_dir = staged->path() + "/" + name;
  if (!env->CreateDir(*part_dir, error)) return nullptr;
  return staged;
}

// Log-dir checkpoints for the one partition written (spec §11.2).
bool WriteCopyCheckpoints(Env* env, const std::string& root, const PartitionDir& dir, int64_t log_end_offset,
                          std::string* error) {
  if (!dir.tp) return true;
  NullSink quiet;
  PartitionCheckpoints cp = ReadParentCheckpoints(dir.path, *dir.tp, &quiet, env);
  auto one = [&](const char* name, std::optional<int64_t> v) {
    if (!v) return WriteOffsetCheckpointFile(env, root + "/" + name, {}, error);
    return WriteOffsetCheckpointFile(env, root + "/" + name, {OffsetCheckpointEntry{*dir.tp, *v}}, error);
  };
  auto cap = [&](std::optional<int64_t> v) -> std::optional<int64_t> {
    if (v) return std::min(*v, log_end_offset);
    return v;
  };
  return one("replication-offset-checkpoint", cap(cp.high_watermark)) &&
         one("log-start-offset-checkpoint", cap(cp.log_start_offset)) &&
         one("cleaner-offset-checkpoint", cap(cp.cleaner_checkpoint)) &&
         one("recovery-point-offset-checkpoint", log_end_offset);
}

}  // namespace klf
