#include "simulator/replica_log.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/file.h"
#include "segment_reader/layout.h"
#include "segment_writer/file_writer.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace fs = std::filesystem;

namespace {

// Whole batches of `chunk` (written by klf itself, so framing problems are bugs: reported as errors).
bool ParseChunk(const std::string& chunk, const std::string& what, std::vector<BatchView>* batches,
                std::string* error) {
  CollectingSink sink;
  LogReader reader(what, AsBytes(chunk), &sink);
  BatchView b;
  while (reader.Next(&b)) batches->push_back(b);
  if (sink.ErrorCount() > 0 || reader.trailing_bytes() != 0) {
    *error = what + ": chunk does not parse" + (sink.problems.empty() ? "" : ": " + sink.problems[0].message);
    return false;
  }
  return true;
}

// Closed segments of a partition directory: base offset -> .log path.
std::map<int64_t, std::string> ClosedSegments(const std::string& dir) {
  std::map<int64_t, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    FileName f = ClassifyFileName(e.path().filename().string());
    if (f.kind == FileKind::kLog && f.suffix == FileSuffix::kNone && f.offset) out[*f.offset] = e.path().string();
  }
  return out;
}

}  // namespace

std::unique_ptr<ReplicaLog> ReplicaLog::Create(Env* env, const std::string& log_dir, const TopicPartition& tp,
                                               const std::string& topic_id, int32_t broker_id, const LogConfig& config,
                                               const ProducerStateOptions& producer_state, std::string* error) {
  std::unique_ptr<ReplicaLog> log(new ReplicaLog(producer_state));
  log->log_dir_ = log_dir;
  log->dir_ = log_dir + "/" + tp.ToString();
  log->tp_ = tp;
  log->broker_id_ = broker_id;
  log->config_ = config;
  log->env_ = env;
  for (const std::string& d : {log_dir, log->dir_})
    if (!env->FileExists(d) && !env->CreateDir(d, error)) return nullptr;
  // meta.properties as a KRaft broker writes it (version 1), so the directory reads as a log dir.
  std::string meta = fmt::format("#\nnode.id={}\nversion=1\ncluster.id=klf-simulated-cluster\n", broker_id);
  if (!WriteFileAtomically(env, log_dir + "/meta.properties", meta, error)) return nullptr;
  if (!WritePartitionMetadataFile(env, log->dir_, PartitionMetadata{0, topic_id}, error)) return nullptr;
  if (!log->Flush(false, 0, error)) return nullptr;
  return log;
}

void ReplicaLog::AssignLeaderEpoch(int32_t epoch) {
  // LeaderEpochFileCache.assign: only a higher epoch adds an entry.
  if (leader_epochs_.empty() || epoch > leader_epochs_.back().epoch)
    leader_epochs_.push_back(LeaderEpochEntry{epoch, log_end_offset_});
}

bool ReplicaLog::AppendChunk(const std::string& chunk, int64_t now_ms, std::string* error) {
  std::vector<BatchView> batches;
  if (!ParseChunk(chunk, dir_, &batches, error)) return false;
  if (batches.empty()) return true;
  if (batches.front().header.base_offset < log_end_offset_) {
    *error = fmt::format("{}: append at offset {} below the log end offset {}", dir_,
                         batches.front().header.base_offset, log_end_offset_);
    return false;
  }
  std::vector<BatchHeader> headers;
  for (const auto& b : batches) headers.push_back(b.header);
  ChunkInfo info = ChunkInfoOf(headers);
  // LogSegment.shouldRoll (size rule; time-based rolling is driven by the timeline's roll events).
  // (An empty active segment takes the chunk whatever its first offset: a fetched chunk may start
  // past a compaction gap, and Kafka appends it to the segment it has.)
  if (active_size_ > 0 && active_size_ + chunk.size() > uint64_t(config_.segment_bytes)) {
    if (!CloseActive(now_ms, error)) return false;
    // UnifiedLog.roll(expectedNextOffset): the new segment starts at the chunk's first offset, the
    // producer state's map end offset moves there and the snapshot is taken at that offset.
    active_base_ = batches.front().header.base_offset;
    producer_state_.UpdateMapEndOffset(active_base_);
    if (!WriteSnapshot(error)) return false;
  }
  active_chunks_.push_back(Chunk{chunk, info});
  active_size_ += chunk.size();
  active_last_append_ms_ = now_ms;
  NullSink quiet;
  for (const BatchView& b : batches) {
    const BatchHeader& h = b.header;
    if (h.partition_leader_epoch >= 0 &&
        (leader_epochs_.empty() || h.partition_leader_epoch > leader_epochs_.back().epoch))
      leader_epochs_.push_back(LeaderEpochEntry{h.partition_leader_epoch, h.base_offset});
    BatchUpdate u = producer_state_.Apply(b, dir_, &quiet);
    if (u.aborted_txn) active_txn_index_.push_back(*u.aborted_txn);
    log_end_offset_ = JavaAdd(h.last_offset, 1);
  }
  return true;
}

bool ReplicaLog::Roll(int64_t now_ms, std::string* error) {
  if (active_size_ == 0) return true;  // Kafka does not roll an empty segment
  if (!CloseActive(now_ms, error)) return false;
  active_base_ = log_end_offset_;
  if (!WriteSnapshot(error)) return false;
  return WriteActive(error);
}

bool ReplicaLog::CloseActive(int64_t now_ms, std::string* error) {
  if (!WriteActive(error)) return false;
  active_chunks_.clear();
  active_txn_index_.clear();
  active_size_ = 0;
  return true;
}

bool ReplicaLog::WriteActive(std::string* error) const {
  auto w = SegmentWriter::Create(env_, dir_, active_base_, config_, error);
  if (!w) return false;
  for (const Chunk& c : active_chunks_)
    if (!w->Append(AsBytes(c.bytes), c.info, error)) return false;
  for (const AbortedTxn& t : active_txn_index_)
    if (!w->AppendAbortedTxn(t, error)) return false;
  // The segment's mtime is the simulated time of its last append (the cleaner reads mtimes).
  std::optional<int64_t> mtime;
  if (!active_chunks_.empty()) mtime = active_last_append_ms_;
  return w->Close(error, mtime);
}

bool ReplicaLog::WriteSnapshot(std::string* error) const {
  std::string path = dir_ + "/" + OffsetFileNamePrefix(producer_state_.map_end_offset()) + ".snapshot";
  return WriteFileAtomically(env_, path, producer_state_.EncodeSnapshot(), error);
}

bool ReplicaLog::WriteLogDirCheckpoints(std::string* error) const {
  // A log dir's checkpoint files list every partition in it: the entries other logs of this log dir
  // wrote (the coordinator's __transaction_state-0 beside the data) are kept, this partition's entry
  // replaced, in (topic, partition) order. A log dir holding one partition gets a one-entry file.
  auto one = [&](const char* name, int64_t value) {
    const std::string path = log_dir_ + "/" + name;
    std::vector<OffsetCheckpointEntry> entries;
    std::string text, ignored;
    if (env_->FileExists(path) && ReadSmallFile(path, kMaxMetadataFileBytes, &text, &ignored, nullptr, env_)) {
      NullSink quiet;
      ParseOffsetCheckpoint(path, text, &entries, &quiet);
    }
    std::erase_if(entries, [&](const OffsetCheckpointEntry& e) { return e.tp == tp_; });
    entries.push_back(OffsetCheckpointEntry{tp_, value});
    std::sort(entries.begin(), entries.end(),
              [](const OffsetCheckpointEntry& a, const OffsetCheckpointEntry& b) { return a.tp < b.tp; });
    return WriteOffsetCheckpointFile(env_, path, entries, error);
  };
  return one("recovery-point-offset-checkpoint", log_end_offset_) &&
         one("replication-offset-checkpoint", high_watermark_) &&
         one("log-start-offset-checkpoint", log_start_offset());
}

bool ReplicaLog::Flush(bool shutdown, int64_t now_ms, std::string* error) {
  if (!WriteActive(error)) return false;
  if (shutdown && producer_state_.map_end_offset() > 0 && !WriteSnapshot(error)) return false;
  if (!WriteLeaderEpochCheckpointFile(env_, dir_, leader_epochs_, error)) return false;
  return WriteLogDirCheckpoints(error);
}

bool ReplicaLog::ReadForFetch(int64_t fetch_offset, std::string* chunk, std::string* error) const {
  chunk->clear();
  if (fetch_offset >= log_end_offset_) return true;
  // Closed segments from disk, then the active segment from memory.
  std::map<int64_t, std::string> closed = ClosedSegments(dir_);
  closed.erase(active_base_);
  std::string active;
  for (const Chunk& c : active_chunks_) active += c.bytes;
  std::vector<std::pair<int64_t, std::string>> segments;  // base, bytes
  for (const auto& [base, path] : closed) {
    if (base > active_base_) continue;  // a stale file past the active segment: not part of the log
    std::string bytes;
    if (!ReadSmallFile(path, uint64_t(1) << 31, &bytes, error, nullptr, env_)) return false;
    segments.emplace_back(base, std::move(bytes));
  }
  segments.emplace_back(active_base_, std::move(active));
  // LocalLog.read: floor segment of the fetch offset, then later segments until one has data.
  size_t i = 0;
  for (size_t k = 0; k < segments.size(); k++)
    if (segments[k].first <= fetch_offset) i = k;
  for (; i < segments.size(); i++) {
    std::vector<BatchView> batches;
    if (!ParseChunk(segments[i].second, dir_ + "/" + OffsetFileNamePrefix(segments[i].first) + ".log", &batches, error))
      return false;
    for (const BatchView& b : batches) {
      if (b.header.last_offset >= fetch_offset) {
        size_t from = size_t(b.bytes.data() - reinterpret_cast<const uint8_t*>(segments[i].second.data()));
        *chunk = segments[i].second.substr(from);
        return true;
      }
    }
  }
  return true;
}

bool ReplicaLog::Clean(const CompactOptions& options, const std::string& scratch_dir, PassReport* report,
                       ProblemSink* sink, std::string* error) {
  if (!Flush(false, options.now, error)) return false;
  std::string out = scratch_dir + "/" + fmt::format("broker{}-clean", broker_id_);
  std::string ignored;
  env_->RemoveDirRecursively(out, &ignored);
  CompactOptions o = options;
  o.passes = 1;
  o.high_watermark = high_watermark_;
  o.env = env_;
  CompactReport r;
  if (!CompactPartition(dir_, out, o, &r, sink, error)) return false;
  if (!r.passes.empty()) *report = r.passes.front();
  // Swap the cleaned copy in: the old directory aside, the new one renamed in, the old one removed.
  std::string old = scratch_dir + "/" + fmt::format("broker{}-old", broker_id_);
  env_->RemoveDirRecursively(old, &ignored);
  if (!env_->RenameFile(dir_, old, error) || !env_->RenameFile(out + "/" + tp_.ToString(), dir_, error)) {
    *error = dir_ + ": swapping in the cleaned log: " + *error;
    return false;
  }
  env_->RemoveDirRecursively(old, &ignored);
  if (report->checkpoint_written) {
    cleaner_checkpoint_ = report->checkpoint_written;
    if (!WriteOffsetCheckpointFile(env_, log_dir_ + "/cleaner-offset-checkpoint",
                                   {OffsetCheckpointEntry{tp_, *cleaner_checkpoint_}}, error))
      return false;
  }
  env_->RemoveDirRecursively(out, &ignored);
  return true;
}

}  // namespace klf
