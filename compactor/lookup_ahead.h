// The offset map's answers for a cleaning pass, looked up ahead of it on a second thread.
//
// Once the offset map is built it is only read. For most records the cleaning pass then asks one
// question, map.Get(key) (spec kafka-log-cleaner.md §8.2), and reading, decoding, hashing and probing
// for it are most of the pass's time. A LookupAhead reads the segments the pass will clean on its own
// thread, decodes them and asks the map for every keyed data record, and hands the answers over in
// file order. The pass takes an answer only for a record with the same offset and the same key bytes,
// and since the answer depends on nothing but the key, it is exactly the answer the pass would have
// got itself. A compressed batch is handed over decoded, with its answers (TakeDecoded): the pass
// takes it only for the batch at the same file position with the same CRC, size and last offset, so
// its records are the ones the pass's own Decode would give, and the batch is decompressed, decoded
// and hashed once in the cleaning phase. Of its records only those the pass has to decide cross to the
// pass's core: the ones the map superseded are counted instead (Decoded::elided). The pass never
// waits: when the thread is behind, the pass decodes and asks the map itself, and the thread skips
// ahead of it (so the two share the work instead of doing it twice).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "compactor/offset_map.h"
#include "compactor/superseded.h"
#include "segment_reader/batch.h"
#include "segment_reader/bytes.h"
#include "segment_reader/env.h"
#include "segment_reader/key_digest.h"

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
  // The segments are read through `env` (null: Env::Default()). Batches `superseded` (when given;
  // it too must stay unchanged) says are all superseded are skipped: the pass does not read them.
  LookupAhead(const SkimpyOffsetMap& map, std::vector<Segment> segments, size_t max_batch_bytes, Env* env = nullptr,
              const SupersededRecords* superseded = nullptr);
  ~LookupAhead();
  LookupAhead(const LookupAhead&) = delete;
  LookupAhead& operator=(const LookupAhead&) = delete;

  // map.Get(key) for the record at `offset`, if the thread has looked it up; nullopt otherwise (the
  // caller asks the map). Calls must come in increasing offset order; answers for records the caller
  // never asks about are dropped.
  std::optional<int64_t> Find(int64_t offset, Bytes key);

  // A compressed v2 data batch the thread has decoded for the cleaning pass: its records as
  // RecordDecoder::Decode gives them (the thread decodes with the pass's options, RecordDecoder's
  // defaults), but for the superseded ones, and the map's answer for every record the pass looks up.
  struct Decoded {
    // header() of the batch; records() and headers(): its records in order, without the elided ones.
    RecordDecoder decoder;
    // Per record of `decoder`: map.Get(key) for a keyed record at or below the map's latest offset
    // (for a record the map pass put, SupersededRecords::Found's answer: its own offset); nullopt for
    // the others (the pass looks none of them up).
    std::vector<std::optional<int64_t>> found;
    // The records left out: keyed, at or below the map's latest offset, put by the map pass and then
    // superseded by a later record of their key (Found: a later offset). The pass removes every such
    // record whatever else holds of the batch (ShouldRetainRecord: superseded, or aborted with its
    // batch), so it only counts them: records read, and tombstones (no value) removed. Their bytes
    // are not handed over: with most records superseded, the thread copies a fraction of the batch
    // to the pass's core instead of all of it.
    int64_t elided = 0, elided_tombstones = 0;
    int64_t answers = 0;  // the entries of `found` the map was asked for
    size_t segment = 0;   // index into the segments given to the constructor
    uint64_t position = 0;
    int64_t last_offset = 0;
    uint32_t crc = 0, size_in_bytes = 0;
    size_t bytes = 0;  // what it holds: the records handed over, 1 KiB at least (the queue's bound)
  };
  // The batches the thread decodes whole and hands over: compressed v2 data batches, every codec.
  // Their records are decompressed and decoded once in the cleaning phase (by the thread when it is
  // ahead, else by the pass), and their keys hashed and looked up once; Find has no answers for them.
  // Uncompressed batches are not: their records point into the thread's read buffer.
  static bool HandsOver(const BatchHeader& h) {
    return h.magic >= 2 && !h.is_control && h.record_count != 0 &&
           (h.compression == Compression::kGzip || h.compression == Compression::kSnappy ||
            h.compression == Compression::kLz4 || h.compression == Compression::kZstd);
  }
  // The decoded batch `h` of the segment at `path` (HandsOver(h)), when the thread has decoded it:
  // moved into *out, whose previous batch is given back to the thread for reuse, and true. Calls must
  // come in file order; batches the caller skips are dropped. False (the caller decodes the batch and
  // looks its keys up itself) when the thread has not got there, or skipped the batch.
  bool TakeDecoded(const std::string& path, const BatchHeader& h, std::unique_ptr<Decoded>* out);
  int64_t batches_taken() const { return batches_taken_; }

  // The pass's own work, lent to the thread: run first whenever the pass has a decoded batch of the
  // thread's waiting (the pass is then the slower of the two), and in the moments the thread would
  // otherwise wait: for room in its queues, or for the end once every segment is read. Lend queues
  // `job`, which must stay alive until Reclaim; Reclaim runs here, in the order lent, every job the
  // thread has not started, and waits until those it has are done. The pass never waits for the
  // thread to get to a job; the jobs must not touch what the pass uses meanwhile.
  void Lend(std::function<void()>* job);
  void Reclaim();
  int64_t jobs_run_by_thread() const { return jobs_run_by_thread_.load(std::memory_order_relaxed); }

  // Answers taken by Find / Find calls.
  int64_t answered() const { return answered_; }
  int64_t asked() const { return asked_; }
  // For tests: waits until the thread has finished or has filled its queue.
  void TEST_WaitUntilIdle();
  // For tests: the decoded batches queued for TakeDecoded.
  size_t TEST_DecodedQueued() const { return decoded_count_.load(std::memory_order_acquire); }

 private:
  struct Entry {
    int64_t offset;
    int64_t found;
    uint32_t key_at, key_size;  // in Block::keys
  };
  struct Block {
    std::vector<Entry> entries;
    std::string keys;
  };

  void Run();
  void RunLoop();
  // Waits on cv_ (with `lock` held) until `ready` is true, running lent jobs meanwhile.
  template <typename Ready>
  void WaitRunningLent(std::unique_lock<std::mutex>& lock, Ready ready);
  // Queues `block` for the caller and sets *next to an empty block (one the caller is done with,
  // when there is one: blocks are reused, not reallocated); false when stopped.
  bool Publish(std::unique_ptr<Block> block, std::unique_ptr<Block>* next);
  // Queues a decoded batch for TakeDecoded, waiting while kMaxDecodedBytes are queued, and sets *next
  // to one the caller gave back (reused: no fresh pages to fault in) or a new one; false when stopped.
  bool PublishDecoded(std::unique_ptr<Decoded> decoded, std::unique_ptr<Decoded>* next);
  // Decodes the batch with `scratch` (the thread's own decoder: its buffers stay in this core's
  // cache), looks its keys up and copies the records the pass decides into *d; false when it does not
  // decode.
  bool DecodeAndLookUp(const BatchView& b, size_t segment, RecordDecoder* scratch, Decoded* d);

  const SkimpyOffsetMap& map_;
  const std::vector<Segment> segments_;
  const size_t max_batch_bytes_;
  Env* const env_;  // what the segments are read through
  const SupersededRecords* const superseded_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Block>> ready_;
  std::atomic<size_t> ready_count_{0};         // ready_.size(), read by Find without the lock
  std::vector<std::unique_ptr<Block>> spare_;  // blocks the caller is done with
  bool stop_ = false;
  bool done_ = false;                                    // the thread has returned
  std::atomic<int64_t> caller_offset_{-1};               // the offset the caller last asked about
  bool waiting_ = false;                                 // the thread waits for room in a queue
  std::deque<std::unique_ptr<Decoded>> decoded_;         // decoded batches, in file order
  size_t decoded_bytes_ = 0;                             // their Decoded::bytes
  std::vector<std::unique_ptr<Decoded>> spare_decoded_;  // batches TakeDecoded's caller gave back
  std::atomic<size_t> decoded_count_{0};                 // decoded_.size(), read by TakeDecoded without the lock
  int64_t batches_taken_ = 0;
  std::vector<Bytes> keys_;          // the thread's: one batch's keys,
  std::vector<size_t> key_records_;  // the index of each one's record,
  std::vector<KeyDigest> digests_;   // and their hashes
  std::vector<uint32_t> kept_;       // the records of a decoded batch handed over (not elided)

  // Runs the first lent job (lent_ not empty; `lock` held, released while the job runs).
  void RunLent(std::unique_lock<std::mutex>& lock);
  // Runs lent jobs while some are queued and a decoded batch waits for the pass.
  void RunLentWhileAhead();

  std::deque<std::function<void()>*> lent_;  // lent jobs not started
  std::atomic<size_t> lent_count_{0};        // lent_.size(), read by the thread without the lock
  int lent_running_ = 0;                     // started by the thread and not done
  std::atomic<int64_t> jobs_run_by_thread_{0};

  std::unique_ptr<Block> current_;  // the caller's block
  size_t next_ = 0;
  int64_t answered_ = 0, asked_ = 0;
  std::thread thread_;
};

}  // namespace klf
