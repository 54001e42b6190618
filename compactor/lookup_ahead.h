// The offset map's answers for a cleaning pass, looked up ahead of it on a second thread.
//
// Once the offset map is built it is only read. For most records the cleaning pass then asks one
// question, map.Get(key) (spec kafka-log-cleaner.md §8.2), and reading, decoding, hashing and probing
// for it are most of the pass's time. A LookupAhead reads the segments the pass will clean on its own
// thread, decodes them and asks the map for every keyed data record, and hands the answers over in
// file order. The pass takes an answer only for a record with the same offset and the same key bytes,
// and since the answer depends on nothing but the key, it is exactly the answer the pass would have
// got itself. The pass never waits: when the thread is behind, the pass asks the map itself, and the
// thread skips ahead of it (so the two share the work instead of doing it twice).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "compactor/offset_map.h"
#include "segment_reader/batch.h"
#include "segment_reader/bytes.h"
#include "segment_reader/env.h"

namespace klf {

class LookupAhead {
 public:
  struct Segment {
    std::string path;
    uint64_t size = 0;  // bytes the pass will read (as loaded)
  };
  // Starts the thread over `segments`, in the order the pass cleans them. `map` must stay unchanged
  // and alive until this object is destroyed. `max_batch_bytes` bounds the read buffer (a batch larger
  // than it ends the look-ahead; the pass then does its own lookups).
  // The segments are read through `env` (null: Env::Default()).
  LookupAhead(const SkimpyOffsetMap& map, std::vector<Segment> segments, size_t max_batch_bytes, Env* env = nullptr);
  ~LookupAhead();
  LookupAhead(const LookupAhead&) = delete;
  LookupAhead& operator=(const LookupAhead&) = delete;

  // map.Get(key) for the record at `offset`, if the thread has looked it up; nullopt otherwise (the
  // caller asks the map). Calls must come in increasing offset order; answers for records the caller
  // never asks about are dropped.
  std::optional<int64_t> Find(int64_t offset, Bytes key);

  // The decompressed records section of the compressed v2 batch `h` of the segment at `path`, when the
  // thread has decompressed it: moved into *section (for RecordDecoder::DecodeDecompressed) and true.
  // The thread decodes a batch with the same options as the pass (RecordDecoder's defaults) and keeps
  // what it decompressed, so the pass does not decompress it again. Calls must come in file order;
  // sections of batches the caller skips are dropped. False (the caller decompresses) when the thread
  // has not got there, or skipped the batch. *section's previous buffer is kept for reuse.
  bool TakeSection(const std::string& path, const BatchHeader& h, std::string* section);
  // The codecs whose sections are handed over: zstd and gzip. lz4 and snappy decompress faster than the
  // pass can take a section another core wrote (measured: lz4 compaction 1.13x the CPU with hand-over).
  static bool HandsOver(Compression c) { return c == Compression::kZstd || c == Compression::kGzip; }
  int64_t sections_taken() const { return sections_taken_; }

  // Answers taken by Find / Find calls.
  int64_t answered() const { return answered_; }
  int64_t asked() const { return asked_; }
  // For tests: waits until the thread has finished or has filled its queue.
  void TEST_WaitUntilIdle();

 private:
  struct Entry {
    int64_t offset;
    int64_t found;
    uint32_t key_at, key_size;  // in Block::keys
  };
  struct Section {
    size_t segment;  // index into segments_
    uint64_t position;
    int64_t last_offset;
    uint32_t crc, size_in_bytes;
    std::string data;
  };
  struct Block {
    std::vector<Entry> entries;
    std::string keys;
  };

  void Run();
  void RunLoop();
  // Queues `block` for the caller and sets *next to an empty block (one the caller is done with,
  // when there is one: blocks are reused, not reallocated); false when stopped.
  bool Publish(std::unique_ptr<Block> block, std::unique_ptr<Block>* next);
  // Queues a decompressed section for TakeSection, waiting while kMaxSectionBytes are queued, and sets
  // *spare to a buffer the caller gave back (reused: no fresh pages to fault in); false when stopped.
  bool PublishSection(Section* section, std::string* spare);

  const SkimpyOffsetMap& map_;
  const std::vector<Segment> segments_;
  const size_t max_batch_bytes_;
  Env* const env_;  // what the segments are read through

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Block>> ready_;
  std::atomic<size_t> ready_count_{0};         // ready_.size(), read by Find without the lock
  std::vector<std::unique_ptr<Block>> spare_;  // blocks the caller is done with
  bool stop_ = false;
  bool done_ = false;                        // the thread has returned
  std::atomic<int64_t> caller_offset_{-1};   // the offset the caller last asked about
  std::deque<Section> sections_;             // decompressed sections, in file order
  size_t section_bytes_ = 0;                 // their data bytes
  std::vector<std::string> spare_sections_;  // buffers TakeSection's caller gave back
  std::atomic<size_t> sections_count_{0};    // sections_.size(), read by TakeSection without the lock
  int64_t sections_taken_ = 0;

  std::unique_ptr<Block> current_;  // the caller's block
  size_t next_ = 0;
  int64_t answered_ = 0, asked_ = 0;
  std::thread thread_;
};

}  // namespace klf
