// A partition directory loaded the way the log cleaner sees it (spec kafka-log-cleaner.md §0, §7.1,
// §7.3, §13 steps 1-2): its segments (read-only), their summaries, transaction indexes, the
// log-dir checkpoint values, and the producer state that decides which producers are active.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compactor/cleanable.h"
#include "compactor/config.h"
#include "compactor/retention.h"
#include "segment_reader/batch.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/index_files.h"
#include "segment_reader/problem.h"
#include "partition/loaded_log.h"
#include "partition/producer_state.h"

namespace klf {

// A segment's .log read as the cleaner reads it (FileRecords.readInto): pread(2) of up to a buffer's
// capacity at a position into one reused buffer. No mapping is kept: on this kind of VM mapping a
// page costs ~2.5x copying it (docs/PERFORMANCE.md), and mapped input pages would count in the
// process's resident memory, which the cleaner must keep near its dedupe buffer (issue 5).
class ChunkReader {
 public:
  ChunkReader() = default;
  ~ChunkReader();
  ChunkReader(const ChunkReader&) = delete;
  ChunkReader& operator=(const ChunkReader&) = delete;

  // Opens `path` read-only; `size` is the length seen when the log was loaded.
  bool Open(const std::string& path, uint64_t size, std::string* error);
  // Bytes [pos, pos + min(n, size - pos)), valid until the next Read. An error if the file is
  // shorter than at load (it changed underneath us).
  bool Read(uint64_t pos, size_t n, Bytes* out, std::string* error);
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::unique_ptr<CaptureMemberReader> member_;  // a member of a capture (segment_reader/capture.h)
  uint64_t size_ = 0;
  std::unique_ptr<uint8_t[]> buffer_;
  size_t capacity_ = 0;
};

struct LoadedSegment {
  int64_t base_offset = 0;
  std::string log_path;
  uint64_t size = 0;                  // .log bytes at load
  int64_t mtime_ms = 0;               // .log modification time
  std::vector<AbortedTxn> txn_index;  // .txnindex entries (empty if absent)
  std::vector<OffsetIndexEntry> offset_index;
};

struct PartitionLog {
  std::string dir;
  std::string log_dir;  // parent directory (holds the checkpoint files)
  TopicPartition tp;
  std::vector<LoadedSegment> segments;            // ascending base offset
  LogSummary summary;                             // parallel to `segments`
  std::map<int64_t, std::string> snapshot_files;  // offset -> path
  int64_t high_watermark = 0;
  ProducerStateManager producer_state;     // after expiration at `now`: the active producers
  std::vector<int64_t> expired_producers;  // removed by that expiration

  // lastRecordsOfActiveProducers (§7.3).
  LastRecords LastRecordsOfActiveProducers() const;
  // UnifiedLog.collectAbortedTransactions(start, upper) (§7.1).
  std::vector<AbortedTxn> CollectAbortedTransactions(int64_t start, int64_t upper) const;
};

// Loads `partition_dir`. `now` applies producer.id.expiration.ms. `high_watermark`: when unset, the
// replication-offset-checkpoint value capped at the log end offset, else the log end offset.
// Returns false with *error when the directory or a segment cannot be read, or a segment is corrupt
// where the cleaner would read it (problems also go to `sink`).
bool LoadPartitionLog(const std::string& partition_dir, const CleanerConfig& config, int64_t now,
                      std::optional<int64_t> high_watermark, PartitionLog* out, ProblemSink* sink, std::string* error);

// Kafka's in-memory batch iteration over a read buffer (ByteBufferLogInputStream, FMT §2): the entry
// at `pos` of `buf`. kIncomplete when the buffer ends inside it; kCorrupt (with *error) for a size
// below 14 or a magic outside 0..2.
enum class EntryStatus { kOk, kIncomplete, kCorrupt };
EntryStatus NextEntry(Bytes buf, size_t pos, uint64_t file_position, BatchView* batch, std::string* error);

// The 20-digit file name prefix of an offset.
std::string SegmentFileName(int64_t offset, const char* suffix);

}  // namespace klf
