// `klf dump`: prints every batch of `.log` files and the entries of index, snapshot and checkpoint
// files, for files, partition directories and broker log directories (spec cli.md "dump").
//
// 1. Each PATH is classified (segment_reader/layout.h): a file is dumped by its kind; a partition
//    directory segment by segment (.log, .index, .timeindex, .txnindex), then producer snapshots,
//    KRaft snapshots, leader-epoch-checkpoint, partition.metadata; a log directory its checkpoint
//    files first, then every partition directory in name order.
// 2. A `.log` is streamed from a read-only mapping with LogReader; records are decoded only with
//    --records (and for legacy compressed wrappers, whose base offset is known only after decoding).
// 3. Problems go to the printer as they are found, next to the batch they concern, each once; the
//    run exits 1 when any of them is an error or a warning, 3 when an input could not be read at all.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/partition_paths.h"
#include "cli/dump_printer.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "segment_reader/batch.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/index_files.h"
#include "segment_reader/internal_topics.h"
#include "segment_reader/layout.h"
#include "segment_reader/producer_snapshot.h"

namespace klf::cli {
namespace {

constexpr int64_t kMinOffset = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxOffset = std::numeric_limits<int64_t>::max();

struct DumpOptions {
  CommonOptions common;
  bool records = false;
  bool per_record = false;  // --per-record: JSON objects per record (kcat -J), not per batch
  std::string offsets;
  std::string decoder = "auto";
  std::vector<std::string> paths;
  // kafka-dump-log.sh's flags, accepted so its scripts keep working (dump-log-segments.md §1).
  std::vector<std::string> files;  // --files a,b: PATHs
  bool deep_iteration = false;     // records, without key and payload
  bool print_data_log = false;     // records with key and payload (= --records)
  bool skip_record_metadata = false;
  bool verify_index_only = false;   // index files: the checks, not the entries
  bool index_sanity_check = false;  // index files: Kafka's sanityCheck only
  int64_t max_bytes = INT32_MAX;    // only batches lying completely within the first N bytes of a .log
  bool offsets_decoder = false, transaction_log_decoder = false, cluster_metadata_decoder = false,
       remote_log_metadata_decoder = false;
};

uint64_t InputBytes(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  uint64_t total = 0;
  std::error_code ec;
  for (const std::string& p : paths) {
    if (fs::is_regular_file(p, ec)) {
      total += fs::file_size(p, ec);
    } else if (fs::is_directory(p, ec)) {
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec)) {
        if (it->is_regular_file(ec)) total += it->file_size(ec);
      }
    }
  }
  return total;
}

// A file given by name whose name is not Kafka's (a renamed copy such as "broken.log") is dumped by
// its extension, without a base offset.
FileName KindFromExtension(const std::string& path, FileName name) {
  if (name.kind != FileKind::kUnknown) return name;
  if (path.ends_with(".log"))
    name.kind = FileKind::kLog;
  else if (path.ends_with(".index"))
    name.kind = FileKind::kOffsetIndex;
  else if (path.ends_with(".timeindex"))
    name.kind = FileKind::kTimeIndex;
  else if (path.ends_with(".txnindex"))
    name.kind = FileKind::kTxnIndex;
  else if (path.ends_with(".snapshot"))
    name.kind = FileKind::kProducerSnapshot;
  name.canonical_name = false;
  return name;
}

class Dumper : public ProblemSink {
 public:
  Dumper(const DumpOptions& options, int64_t from, int64_t to, DumpPrinter* printer, Output* out)
      : options_(options),
        from_(from),
        to_(to),
        printer_(printer),
        out_(out),
        progress_("klf dump", isatty(2) == 1 && isatty(1) == 0 ? InputBytes(options.paths) : 0) {}

  int Run() {
    for (const std::string& path : options_.paths) {
      DumpPath(path);
      if (out_->failed()) break;
    }
    progress_.Finish();
    out_->Flush();
    if (errors_ > 0 && !options_.common.json) {
      PrintError("dump", std::to_string(errors_) + (errors_ == 1 ? " problem" : " problems") +
                             " found (printed in the output with file and byte position)");
    }
    if (unreadable_ || out_->failed()) return kExitUnreadable;
    return errors_ > 0 ? kExitProblems : kExitOk;
  }

  // Every problem is printed once (a directory scan and the file's own parser may both see it) and
  // errors, not warnings, decide the exit code.
  void Report(const Problem& p) override {
    std::string key = p.file + '\0' + std::to_string(p.position) + '\0' + p.check + '\0' + p.message;
    if (!seen_.insert(std::move(key)).second) return;
    // Exit codes mean the same in every command: errors make it 1; warnings (a torn or zero-filled
    // tail, which Kafka's recovery truncates as routine) and notes are printed and do not.
    if (p.severity == Severity::kError) ++errors_;
    // A file of a scanned directory that is there but cannot be read (a FIFO named like a segment...).
    if (p.check == std::string_view("file-read") || p.check == std::string_view("dir-read")) unreadable_ = true;
    Problem shown = p;  // names are bytes: printed as --bytes text prints them, in text and JSON alike
    shown.file = EscapeInvalidUtf8(p.file);
    shown.message = EscapeInvalidUtf8(p.message);
    printer_->PrintProblem(shown);
  }

 private:
  void Unreadable(const std::string& message) {
    // JSON Lines get the error object (README "Conventions") in the stream, where the input was.
    if (options_.common.json) {
      const nlohmann::json fields = {{"type", "error"}, {"file", path_}};
      out_->Append(ErrorJson("dump", kExitUnreadable, message, &fields));
      out_->Append('\n');
    }
    out_->Flush();  // keep stdout and stderr in order on a terminal
    PrintError("dump", message);
    unreadable_ = true;
  }

  // Prints the collected problems that start before `position` (all when it is the maximum).
  void FlushPending(uint64_t position = std::numeric_limits<uint64_t>::max()) {
    if (pending_.problems.empty()) return;
    std::vector<Problem> later;
    for (Problem& p : pending_.problems) {
      if (p.position < position)
        Report(p);
      else
        later.push_back(std::move(p));
    }
    pending_.problems = std::move(later);
  }

  bool Overlaps(int64_t first, int64_t last) const { return last >= from_ && first <= to_; }
  bool has_range() const { return from_ != kMinOffset || to_ != kMaxOffset; }

  void DumpPath(const std::string& path) {
    path_ = path;
    PathInfo info = ClassifyPath(path);
    switch (info.kind) {
      case PathKind::kMissing: Unreadable(path + ": no such file or directory"); return;
      case PathKind::kFile:
        topic_ = info.tp ? std::optional<std::string>(info.tp->topic) : std::nullopt;
        printer_->SetPartition(info.tp);
        DumpFile(path, KindFromExtension(path, info.file));
        return;
      case PathKind::kPartitionDir: {
        PartitionDir dir;
        bool ok = ScanPartitionDir(path, &dir, &pending_);
        FlushPending();
        if (!ok) return Unreadable(path + ": cannot list the partition directory");
        DumpPartitionDir(dir);
        return;
      }
      case PathKind::kLogDir: {
        LogDir dir;
        bool ok = ScanLogDir(path, &dir, &pending_);
        FlushPending();
        if (!ok) return Unreadable(path + ": cannot list the log directory");
        DumpLogDir(dir);
        return;
      }
      case PathKind::kOtherDir:
        Unreadable(path +
                   ": a directory that is neither a partition directory (<topic>-<partition> with "
                   "segments) nor a broker log directory (partition directories, checkpoint files)");
        return;
    }
  }

  void DumpLogDir(const LogDir& dir) {
    topic_.reset();
    printer_->SetPartition(std::nullopt);
    for (const DirEntry& e : dir.files) {
      switch (e.info.kind) {
        case FileKind::kCleanerOffsetCheckpoint:
        case FileKind::kRecoveryPointCheckpoint:
        case FileKind::kReplicationOffsetCheckpoint:
        case FileKind::kLogStartOffsetCheckpoint:
        case FileKind::kMetaProperties:
        case FileKind::kCleanShutdown:
        case FileKind::kBootstrapCheckpoint:
          if (e.info.suffix == FileSuffix::kNone) DumpFile(e.path, e.info);
          break;
        default: break;
      }
    }
    for (const PartitionDir& p : dir.partitions) {
      DumpPartitionDir(p);
      if (out_->failed()) return;
    }
  }

  // NOLINTNEXTLINE(readability-function-cognitive-complexity): one branch per file kind of a partition directory (Kafka's dump-log-segments order)
  void DumpPartitionDir(const PartitionDir& dir) {
    topic_ = dir.tp ? std::optional<std::string>(dir.tp->topic) : std::nullopt;
    printer_->SetPartition(dir.tp);
    for (auto it = dir.segments.begin(); it != dir.segments.end(); ++it) {
      const SegmentFiles& seg = it->second;
      // A segment holds offsets from its base offset up to the next segment's base offset.
      auto next = std::next(it);
      int64_t last = next == dir.segments.end() ? kMaxOffset : next->first - 1;
      if (!Overlaps(seg.base_offset, last)) continue;
      // A torn or zero tail is routine only in the last segment (SegmentTailSink).
      last_segment_ = next == dir.segments.end();
      for (const auto* f : {&seg.log, &seg.index, &seg.time_index, &seg.txn_index}) {
        if (*f) DumpFile((*f)->path, (*f)->info);
        if (out_->failed()) break;
      }
      last_segment_ = true;
      if (out_->failed()) return;
    }
    for (const auto& [offset, e] : dir.producer_snapshots) {
      // A snapshot at N is the producer state below N: with --offsets A:B, those at A..B+1 describe
      // the range (B+1: just after it).
      if (!has_range() || (offset >= from_ && (to_ == kMaxOffset || offset <= to_ + 1))) DumpFile(e.path, e.info);
    }
    for (const KraftSnapshotFile& s : dir.kraft_snapshots) DumpFile(s.file.path, s.file.info);
    if (dir.leader_epoch_checkpoint_file)
      DumpFile(dir.leader_epoch_checkpoint_file->path, dir.leader_epoch_checkpoint_file->info);
    if (dir.partition_metadata_file) DumpFile(dir.partition_metadata_file->path, dir.partition_metadata_file->info);
    if (dir.quorum_state && !has_range()) DumpFile(dir.quorum_state->path, dir.quorum_state->info);
    for (const DirEntry& e : dir.leftovers) {
      printer_->Note("Not dumped: " + EscapeInvalidUtf8(e.path) +
                     " (leftover of an interrupted cleaner, swap or delete; give "
                     "its path to dump it)");
    }
  }

  void DumpFile(const std::string& path, const FileName& name) {
    switch (name.kind) {
      case FileKind::kLog:
      case FileKind::kKraftSnapshot:
      case FileKind::kKraftSnapshotPart:
      case FileKind::kBootstrapCheckpoint: return DumpLog(path, name);
      case FileKind::kOffsetIndex:
      case FileKind::kTimeIndex:
      case FileKind::kTxnIndex:
      case FileKind::kProducerSnapshot: return DumpBinaryFile(path, name);
      case FileKind::kLeaderEpochCheckpoint:
      case FileKind::kPartitionMetadata:
      case FileKind::kMetaProperties:
      case FileKind::kCleanShutdown:
      case FileKind::kCleanerOffsetCheckpoint:
      case FileKind::kRecoveryPointCheckpoint:
      case FileKind::kReplicationOffsetCheckpoint:
      case FileKind::kLogStartOffsetCheckpoint:
      case FileKind::kQuorumState: return DumpTextFile(path, name);
      case FileKind::kLock:
      case FileKind::kUnknown: break;
    }
    Unreadable(path + ": not a file klf dumps (" + FileKindName(name.kind) +
               "); expected .log, .index, .timeindex, .txnindex, .snapshot, leader-epoch-checkpoint, "
               "partition.metadata, meta.properties, quorum-state or a log-dir checkpoint file");
  }

  // NOLINTNEXTLINE(readability-function-cognitive-complexity): the dump loop with its --offsets / --max-batches / --per-record options; kafka-dump-log's order
  void DumpLog(const std::string& path, const FileName& name) {
    std::string error;
    SegmentTailSink tail(&pending_, last_segment_);
    std::unique_ptr<LogReader> reader = LogReader::Open(path, &tail, ReadOptions(), &error);
    if (!reader) return Unreadable(error);
    printer_->BeginFile(EscapeInvalidUtf8(path), name);
    BatchView batch;
    while (reader->Next(&batch)) {
      progress_.Update(done_bytes_ + batch.header.position, path);
      const BatchHeader* header = &batch.header;
      if (int64_t(header->position + header->size_in_bytes) > options_.max_bytes) break;  // --max-bytes
      if (header->last_offset < from_) {
        FlushPending();
        continue;
      }
      // A legacy compressed wrapper carries only its last offset; decoding its inner messages
      // gives the base offset (and the record count).
      const RecordDecoder* decoded = nullptr;
      if (options_.records || !header->base_offset_known) {
        decoder_.Decode(batch, path, &pending_);
        if (decoder_.header().base_offset_known) header = &decoder_.header();
        if (options_.records) decoded = &decoder_;
      }
      int64_t first = header->base_offset_known ? header->base_offset : header->last_offset;
      FlushPending(header->position);
      if (first <= to_) {
        if (decoded && header->is_control) CheckControlRecords(path, *header, *decoded);
        const TopicDecoder topic_decoder = DecoderFor(name);
        const DecodedRecords* internal = nullptr;
        if (decoded && topic_decoder != TopicDecoder::kNone) {
          DecodeInternal(path, topic_decoder, *header, *decoded);
          internal = &internal_;
        }
        printer_->Batch(*header, decoded, internal);
      }
      FlushPending();
      if (out_->failed()) break;
    }
    FlushPending();
    printer_->EndFile();
    done_bytes_ += reader->file_size();
  }

  // --decoder, or with auto the decoder of the topic named by the partition directory (KRaft
  // snapshots are always metadata).
  TopicDecoder DecoderFor(const FileName& name) const {
    if (options_.decoder != "auto") {
      TopicDecoder d = TopicDecoder::kNone;
      ParseTopicDecoder(options_.decoder, &d);
      return d;
    }
    if (name.kind == FileKind::kKraftSnapshot || name.kind == FileKind::kKraftSnapshotPart ||
        name.kind == FileKind::kBootstrapCheckpoint) {
      return TopicDecoder::kClusterMetadata;
    }
    return topic_ ? DecoderForTopic(*topic_) : TopicDecoder::kNone;
  }

  // Decodes every record of a batch with the topic's decoder. A record that does not decode is a
  // problem at the batch's position (a record inside a compressed batch has no position of its own
  // in the file), named by its offset; it is printed raw. Commit and abort markers are not the
  // decoder's; the KRaft control records of a metadata log are.
  void DecodeInternal(const std::string& path, TopicDecoder d, const BatchHeader& header,
                      const RecordDecoder& decoded) {
    internal_.clear();
    internal_.reserve(decoded.records().size());
    for (const Record& r : decoded.records()) {
      DecodedRecord out;
      std::string error;
      bool ok;
      if (header.is_control) {
        ControlRecord c;
        if (!ParseControlRecord(r, &c, &error) || IsEndTxnMarker(c.type)) {
          internal_.emplace_back(std::nullopt);  // a marker, or reported by CheckControlRecords
          continue;
        }
        ok = d == TopicDecoder::kClusterMetadata && DecodeRaftControlRecord(r, &out, &error);
        if (d != TopicDecoder::kClusterMetadata) error = "a KRaft control record outside a metadata log";
      } else {
        ok = DecodeInternalRecord(d, r, &out, &error);
      }
      if (ok) {
        internal_.emplace_back(std::move(out));
      } else {
        internal_.emplace_back(std::nullopt);
        Report({Severity::kError, path, header.position, "internal-record",
                "record at offset " + std::to_string(r.offset) + " (" + TopicDecoderName(d) + " decoder): " + error +
                    "; printed raw"});
      }
    }
  }

  // A control batch's records must parse as control records (spec §5.3); the printers print null
  // for one that does not, and this says why.
  void CheckControlRecords(const std::string& path, const BatchHeader& header, const RecordDecoder& decoded) {
    for (const Record& r : decoded.records()) {
      ControlRecord c;
      std::string error;
      if (!ParseControlRecord(r, &c, &error)) {
        Report({Severity::kError, path, header.position, "control-record",
                "record at offset " + std::to_string(r.offset) + " of a control batch: " + error});
      }
    }
  }

  // `.index` and `.timeindex` are read in windows, not mapped: an active segment's index is a
  // preallocated file of up to segment.index.bytes (2 GiB at most) of zeros after its entries.
  void DumpIndexFile(const std::string& path, const FileName& name) {
    std::string error;
    const int64_t base = name.offset.value_or(0);
    OffsetIndex offsets;
    TimeIndex times;
    CappedSink capped(&pending_);  // an index of garbage: every entry a problem
    const bool ok = name.kind == FileKind::kOffsetIndex ? ReadOffsetIndexFile(path, base, &capped, &offsets, &error)
                                                        : ReadTimeIndexFile(path, base, &capped, &times, &error);
    capped.Finish();
    if (!ok) return Unreadable(error);
    printer_->BeginFile(EscapeInvalidUtf8(path), name);
    if (offsets.file_size + times.file_size == 0 && !has_range())
      printer_->Note(EscapeInvalidUtf8(path) + " is empty.");
    if (options_.index_sanity_check) {
      SanityCheck(path, base, name.kind == FileKind::kOffsetIndex, offsets, times);
    } else if (!options_.verify_index_only) {
      PrintIndexEntries(offsets, times);
    }
    if (name.kind == FileKind::kOffsetIndex)
      NoteUnusedSlots(offsets.unused_slots, kOffsetIndexEntrySize);
    else
      NoteUnusedSlots(times.unused_slots, kTimeIndexEntrySize);
    FlushPending();
    printer_->EndFile();
    done_bytes_ += offsets.file_size + times.file_size;
  }

  void PrintIndexEntries(const OffsetIndex& offsets, const TimeIndex& times) {
    for (size_t i = 0; i < offsets.entries.size(); ++i) {
      if (Overlaps(offsets.entries[i].offset, offsets.entries[i].offset))
        printer_->OffsetIndexEntry(i, offsets.entries[i]);
    }
    for (size_t i = 0; i < times.entries.size(); ++i) {
      if (Overlaps(times.entries[i].offset, times.entries[i].offset)) printer_->TimeIndexEntry(i, times.entries[i]);
    }
  }

  // --index-sanity-check: Kafka's OffsetIndex/TimeIndex.sanityCheck, the check a broker runs on an index
  // it opens (a zero-filled preallocated tail passes it): the length is a whole number of entries, the
  // last entry's offset is not below the base offset, and the time index's last timestamp is not below
  // its first. Passing prints kafka-dump-log's line; failing is an error at the file's end.
  void SanityCheck(const std::string& path, int64_t base, bool offset_index, const OffsetIndex& offsets,
                   const TimeIndex& times) {
    const uint64_t size = offset_index ? offsets.file_size : times.file_size;
    const uint64_t entry = offset_index ? kOffsetIndexEntrySize : kTimeIndexEntrySize;
    std::string failure;
    if (size % entry != 0) {
      failure = fmt::format("the file length {} is not a multiple of the entry size {}", size, entry);
    } else if (offset_index && !offsets.entries.empty() && offsets.entries.back().offset < base) {
      failure = fmt::format("the last offset {} is below the base offset {}", offsets.entries.back().offset, base);
    } else if (!offset_index && !times.entries.empty() && times.entries.back().offset < base) {
      failure = fmt::format("the last offset {} is below the base offset {}", times.entries.back().offset, base);
    } else if (!offset_index && !times.entries.empty() &&
               times.entries.back().timestamp < times.entries.front().timestamp) {
      failure = fmt::format("the last timestamp {} is below the first timestamp {}", times.entries.back().timestamp,
                            times.entries.front().timestamp);
    }
    if (failure.empty()) {
      printer_->Note(EscapeInvalidUtf8(path) + " passed sanity check.");
    } else {
      Report({Severity::kError, path, size, "index-sanity-check", "fails Kafka's index sanity check: " + failure});
    }
  }

  void DumpBinaryFile(const std::string& path, const FileName& name) {
    if (name.kind == FileKind::kOffsetIndex || name.kind == FileKind::kTimeIndex) return DumpIndexFile(path, name);
    std::string error;
    std::unique_ptr<MappedFile> file = MappedFile::Open(path, &error);
    if (!file) return Unreadable(error);
    printer_->BeginFile(EscapeInvalidUtf8(path), name);
    if (file->size() == 0 && !has_range()) printer_->Note(EscapeInvalidUtf8(path) + " is empty.");
    int64_t base = name.offset.value_or(0);
    CappedSink capped(&pending_);  // a file of garbage: every entry a problem
    switch (name.kind) {
      case FileKind::kTxnIndex: {
        TxnIndex index = ParseTxnIndex(path, file->data(), &capped);
        for (size_t i = 0; i < index.entries.size(); ++i) {
          const AbortedTxn& e = index.entries[i];
          if (Overlaps(e.first_offset, e.last_offset)) printer_->TxnIndexEntry(i, e);
        }
        break;
      }
      case FileKind::kProducerSnapshot: {
        ProducerSnapshot snapshot;
        if (file->size() > 0) ParseProducerSnapshot(path, file->data(), base, &snapshot, &capped);
        for (size_t i = 0; i < snapshot.entries.size(); ++i) {
          printer_->ProducerSnapshotEntry(i, base, snapshot.entries[i]);
        }
        break;
      }
      default: break;
    }
    capped.Finish();
    FlushPending();
    printer_->EndFile();
    done_bytes_ += file->size();
  }

  void NoteUnusedSlots(uint64_t slots, int entry_size) {
    if (slots == 0 || has_range()) return;
    printer_->Note("(" + std::to_string(slots) + " zero-filled preallocated slots, " +
                   std::to_string(slots * uint64_t(entry_size)) + " bytes, after the last entry)");
  }

  void DumpTextFile(const std::string& path, const FileName& name) {
    std::string text, error;
    InputFailure failure = InputFailure::kNone;
    if (!ReadSmallFile(path, kMaxMetadataFileBytes, &text, &error, &failure)) {
      // Too large is damage (not a file Kafka writes), reported in the output like a parse error.
      if (failure == InputFailure::kTooLarge) return Report({Severity::kError, path, 0, "file-size", error});
      return Unreadable(error);
    }
    printer_->BeginFile(EscapeInvalidUtf8(path), name);
    switch (name.kind) {
      case FileKind::kLeaderEpochCheckpoint: {
        std::vector<LeaderEpochEntry> entries;
        ParseLeaderEpochCheckpoint(path, text, &entries, &pending_);
        for (const LeaderEpochEntry& e : entries) printer_->LeaderEpochEntry(e);
        break;
      }
      case FileKind::kPartitionMetadata: {
        PartitionMetadata m;
        if (ParsePartitionMetadata(path, text, &m, &pending_)) printer_->PartitionMetadataEntry(m);
        break;
      }
      case FileKind::kMetaProperties: {
        MetaProperties m;
        ParseMetaProperties(path, text, &m, &pending_);
        printer_->MetaPropertiesEntry(m);
        break;
      }
      case FileKind::kQuorumState: {
        OrderedJson state;
        std::string why;
        if (ParseQuorumState(text, &state, &why))
          printer_->QuorumStateEntry(state);
        else
          Report({Severity::kError, path, 0, "quorum-state", "quorum-state: " + why});
        break;
      }
      case FileKind::kCleanShutdown: {
        CleanShutdown c;
        if (ParseCleanShutdown(path, text, &c, &pending_)) printer_->CleanShutdownEntry(c);
        break;
      }
      default: {  // the four log-dir offset checkpoints
        std::vector<OffsetCheckpointEntry> entries;
        ParseOffsetCheckpoint(path, text, &entries, &pending_);
        if (text.empty()) printer_->Note(EscapeInvalidUtf8(path) + " is empty.");
        for (const OffsetCheckpointEntry& e : entries) printer_->OffsetCheckpointEntry(FileKindName(name.kind), e);
        break;
      }
    }
    FlushPending();
    printer_->EndFile();
    done_bytes_ += text.size();
  }

  const DumpOptions& options_;
  const int64_t from_, to_;
  DumpPrinter* printer_;
  Output* out_;
  Progress progress_;
  CollectingSink pending_;
  RecordDecoder decoder_;
  DecodedRecords internal_;
  std::optional<std::string> topic_;  // the topic of the partition directory being dumped
  std::set<std::string> seen_;
  uint64_t errors_ = 0;
  uint64_t done_bytes_ = 0;
  bool last_segment_ = true;  // the .log being dumped is its partition's last segment (or a lone file)
  bool unreadable_ = false;
  std::string path_;  // the PATH being dumped (the "file" of an error object)
};

// The flags kafka-dump-log spells differently, folded into DumpOptions; then the Dumper over the PATHs.
int RunDump(DumpOptions& o) {
  o.paths.insert(o.paths.end(), o.files.begin(), o.files.end());
  if (o.paths.empty()) return Fail("dump", kExitUsage, "PATH is required (or --files)", o.common.json);
  {
    std::string capture_error;
    if (!PrepareCapturePaths(&o.paths, /*expand_roots=*/true, &capture_error))
      return Fail("dump", kExitUnreadable, capture_error, o.common.json);
  }
  const int decoders = int(o.offsets_decoder) + int(o.transaction_log_decoder) + int(o.cluster_metadata_decoder) +
                       int(o.remote_log_metadata_decoder);
  if (decoders > 1 || (decoders == 1 && o.decoder != "auto")) {
    return Fail("dump", kExitUsage, "give one decoder (--decoder or one of kafka-dump-log's decoder flags)",
                o.common.json);
  }
  if (o.offsets_decoder) o.decoder = "offsets";
  if (o.transaction_log_decoder) o.decoder = "transaction-log";
  if (o.cluster_metadata_decoder) o.decoder = "cluster-metadata";
  if (o.remote_log_metadata_decoder) o.decoder = "remote-log-metadata";
  // kafka-dump-log: print data with --print-data-log or any decoder; deep iteration with either, or
  // --deep-iteration alone (record lines without key and payload).
  const bool print_data = o.records || o.print_data_log || decoders > 0 || o.per_record;
  if (print_data || o.deep_iteration || o.skip_record_metadata || o.per_record) o.records = true;
  TextRecordStyle style;
  style.print_data = print_data || o.skip_record_metadata;
  style.skip_record_metadata = o.skip_record_metadata;
  int64_t from = kMinOffset, to = kMaxOffset;
  if (!o.offsets.empty()) ParseOffsetRange(o.offsets, &from, &to);
  Output out(1);
  std::unique_ptr<DumpPrinter> printer = o.common.json
                                             ? MakeJsonDumpPrinter(&out, o.common.bytes_format(), o.per_record)
                                             : MakeTextDumpPrinter(&out, o.common.bytes_format(),
                                                                   /*quiet_empty_files=*/!o.offsets.empty(), style);
  Dumper dumper(o, from, to, printer.get(), &out);
  return dumper.Run();
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): declarative: one option per flag, with kafka-dump-log's aliases
Command AddDumpCommand(CLI::App* parent) {
  auto options = std::make_shared<DumpOptions>();
  CLI::App* app = parent->add_subcommand(
      "dump", "Print every batch, record and index, snapshot or checkpoint entry (like kafka-dump-log.sh)");
  app->footer(
      "Prints every batch of .log files and the entries of .index, .timeindex, .txnindex, .snapshot,\n"
      "leader-epoch-checkpoint, partition.metadata and log-dir checkpoint files. PATH may be a file, a\n"
      "partition directory or a broker log directory (dumped whole, in order). Problems in the data are\n"
      "printed where found (JSON: {\"file\", \"position\", \"error\"}) and dumping resumes; exit 1 then.");
  app->add_flag("--records", options->records, "Also print every record (key, value, headers, control type)");
  app->add_flag("--per-record", options->per_record,
                "With --json: one object per record instead of one per batch (kcat -J style: topic, partition, "
                "offset, timestamp, key, value, headers, producerId, isTransactional, isControl...); implies "
                "--records; text output is unchanged");
  AddCommonOptions(app, &options->common);
  app->add_option("--offsets", options->offsets,
                  "Only batches overlapping the inclusive offset range A:B (also A:, :B or a single offset); "
                  "index entries are filtered the same way")
      ->type_name("A:B")
      ->check(CLI::Validator(
          [](std::string& s) {
            int64_t a, b;
            return ParseOffsetRange(s, &a, &b) ? std::string() : "expected A:B, A:, :B or N with A <= B";
          },
          ""));
  app->add_option("--decoder", options->decoder,
                  "How --records decodes keys and values: auto (by topic: __consumer_offsets, "
                  "__transaction_state, __cluster_metadata and KRaft snapshots), none (raw bytes), or one of "
                  "offsets, transaction-log, cluster-metadata, remote-log-metadata, as kafka-dump-log.sh's decoders")
      ->check(CLI::IsMember({"auto", "none", "offsets", "transaction-log", "cluster-metadata", "remote-log-metadata"}))
      ->default_val("auto");
  app->add_option("PATH", options->paths, "Files or directories to dump, in order")->type_name("PATH");

  // kafka-dump-log.sh's flags, so its scripts keep working.
  CLI::Option_group* compat = app->add_option_group("kafka-dump-log.sh compatibility");
  compat->add_option("--files", options->files, "Comma-separated files to dump (kafka-dump-log's PATHs)")
      ->delimiter(',')
      ->type_name("A,B");
  compat->add_flag("--deep-iteration", options->deep_iteration, "Print record lines, without key and payload");
  compat->add_flag("--print-data-log", options->print_data_log, "Print record lines with key and payload (--records)");
  compat->add_flag("--skip-record-metadata", options->skip_record_metadata,
                   "Record lines hold only key and payload (text output)");
  compat->add_flag("--verify-index-only", options->verify_index_only, "Index files: run the checks, print no entries");
  compat->add_flag("--index-sanity-check", options->index_sanity_check,
                   "Index files: run only Kafka's index sanity check");
  compat
      ->add_option("--max-bytes", options->max_bytes,
                   "Only batches lying completely within the first N bytes of a .log")
      ->check(CLI::NonNegativeNumber);
  compat->add_flag("--offsets-decoder", options->offsets_decoder, "= --records --decoder offsets");
  compat->add_flag("--transaction-log-decoder", options->transaction_log_decoder,
                   "= --records --decoder transaction-log");
  compat->add_flag("--cluster-metadata-decoder", options->cluster_metadata_decoder,
                   "= --records --decoder cluster-metadata");
  compat->add_flag("--remote-log-metadata-decoder", options->remote_log_metadata_decoder,
                   "= --records --decoder remote-log-metadata");

  return {app, [options] { return RunDump(*options); }};
}

}  // namespace klf::cli
