// klf-bench: the data generator and whole-process workloads behind scripts/bench.sh and
// docs/PERFORMANCE.md. Not part of klf itself.
//
//   klf-bench gen --out DIR --bytes N [--codec none|lz4|zstd] [--live F] [--segment-bytes N] [--seed S]
//                 [--batch-bytes N]
//       Writes a partition directory DIR (named <topic>-<partition>, created) of N bytes of v2 batches
//       through segment_writer's PartitionWriter (indexes, producer snapshots, leader-epoch checkpoint),
//       deterministic for a seed: keyed records of 100-500 bytes (key + value + headers) with JSON-like
//       values, batches of 4-16 KiB of records (a producer's batch.size), 4 idempotent producers.
//       --live F: the key space is sized so that about F of the records are the latest for their key
//       (F = 0.1: a compaction keeps ~10%); without it keys are (practically) unique.
//       --batch-bytes N: batches of N to 2N bytes of records instead of 4-16 KiB (N = 1M: ~1-2 MiB
//       batches, a producer with a large batch.size and linger.ms, or a broker's appended fetch).
//   klf-bench floor FILE [--mmap]   read(2) in 4 MiB chunks, walk batch headers, CRC-32C every batch
//                              (--mmap: the same walk over a fresh read-only mapping, as klf reads)
//   klf-bench decode FILE [--mmap|--populate]   LogReader + RecordDecoder, every record parsed: the
//                              streaming reader (pread), or over a mapping (--populate: MADV_POPULATE_READ
//                              the whole mapping first)
//   klf-bench check FILE [--repeat N]   verify's check-only record walk (RecordDecoder::Check) alone: the
//                              file read into memory once, then N times (default 1) a pass of LogReader
//                              (framing, CRC-32C) and one of LogReader + Check; the fastest of each in
//                              the thread's CPU time (waiting for a core on a busy host left out), and
//                              the difference: the walk, per record
//   klf-bench recompress FILE [--keep F]   the floor of compacting compressed data: every v2 batch's
//                              records section decompressed once and the first F of its bytes (default
//                              1; 0.1 for a 10%-live log) compressed again with the same codec, one thread
//   klf-bench write --in LOG --out DIR [--no-sync] [--chunk-bytes N]
//       Writes LOG's batches as a new segment through SegmentWriter (offset/time index entries by
//       index.interval.bytes, trimmed index files, fsync, rename), one Append per batch (as recovery
//       and a leader's per-request appends) or per chunk of N bytes of whole batches. --no-sync makes
//       fsync a no-op, to compare with a plain `cp`.
// Every command prints one JSON line with what it did and its in-process time.
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/workloads.h"
#include "segment_reader/batch.h"
#include "segment_reader/file.h"
#include "segment_writer/batch_builder.h"
#include "segment_writer/file_writer.h"
#include "segment_writer/segment_writer.h"

namespace klf::bench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The calling thread's CPU time (user + system) in seconds, minus t0.
double ThreadCpuSince(double t0) {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9 - t0;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "klf-bench: %s\n", what.c_str());
  std::exit(1);
}

// splitmix64: a tiny generator whose output is the same on every platform and standard library
// (std::uniform_int_distribution is not specified bit for bit).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t Uniform(uint64_t lo, uint64_t hi) { return lo + Next() % (hi - lo + 1); }  // [lo, hi]

 private:
  uint64_t s_;
};

const char* const kWords[] = {
    "alpha",  "bravo",      "charlie",  "delta",     "echo",      "foxtrot",    "golf",    "hotel",  "india",
    "juliet", "kilo",       "lima",     "mike",      "november",  "oscar",      "papa",    "quebec", "romeo",
    "sierra", "tango",      "uniform",  "victor",    "whiskey",   "xray",       "yankee",  "zulu",   "checkout",
    "cart",   "payment",    "shipping", "refund",    "login",     "logout",     "search",  "click",  "view",
    "mobile", "desktop",    "tablet",   "eu-west-1", "us-east-1", "ap-south-1", "premium", "basic",  "trial",
    "visa",   "mastercard", "paypal",   "EUR",       "USD",       "GBP"};
constexpr size_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);

// One record's bytes, reused across records.
struct RecordBuf {
  std::string key, value, header_value;
  RecordHeader header;
};

void MakeRecord(Rng* rng, uint64_t key_id, int64_t ts, RecordBuf* r, bool* has_header) {
  char k[32];
  std::snprintf(k, sizeof(k), "user-%010llu", static_cast<unsigned long long>(key_id));
  r->key = k;
  *has_header = rng->Uniform(0, 9) < 3;  // ~30% of records carry a trace header
  size_t header_bytes = 0;
  if (*has_header) {
    char h[40];
    std::snprintf(h, sizeof(h), "%016llx%016llx", static_cast<unsigned long long>(rng->Next()),
                  static_cast<unsigned long long>(rng->Next()));
    r->header_value = h;
    header_bytes = 8 + r->header_value.size();  // "trace-id" + value
  }
  // key + value + headers between 100 and 500 bytes.
  size_t total = rng->Uniform(100, 500);
  size_t value_len = total > r->key.size() + header_bytes + 16 ? total - r->key.size() - header_bytes : 16;
  std::string& v = r->value;
  v.clear();
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"user\":\"%s\",\"ts\":%lld,\"event\":\"%s\",\"session\":\"%08llx\",\"region\":\"%s\","
                "\"amount\":%llu.%02llu,\"currency\":\"%s\",\"note\":\"",
                k, static_cast<long long>(ts), kWords[rng->Next() % kNumWords],
                static_cast<unsigned long long>(rng->Next() & 0xffffffffu), kWords[rng->Next() % kNumWords],
                static_cast<unsigned long long>(rng->Uniform(1, 999)),
                static_cast<unsigned long long>(rng->Uniform(0, 99)), kWords[48 + rng->Next() % 3]);
  v = buf;
  while (v.size() + 2 < value_len) {
    v += kWords[rng->Next() % kNumWords];
    v += ' ';
  }
  v.resize(value_len - 2);
  v += "\"}";
}

Compression ParseCodec(const std::string& s) {
  if (s == "none") return Compression::kNone;
  if (s == "lz4") return Compression::kLz4;
  if (s == "zstd") return Compression::kZstd;
  if (s == "gzip") return Compression::kGzip;
  if (s == "snappy") return Compression::kSnappy;
  Die("unknown codec " + s);
}

struct GenOptions {
  std::string out;
  uint64_t bytes = 256u << 20;
  Compression codec = Compression::kNone;
  double live = 0;  // 0: unique keys
  int64_t segment_bytes = int64_t(1) << 30;
  uint64_t seed = 42;
  uint64_t batch_bytes = 0;  // 0: 4-16 KiB; else N to 2N
};

// Makes the benchmark's v2 batches one at a time (AppendBatch): 4-16 KiB of keyed records each (N to 2N
// with --batch-bytes N), four idempotent producers in turn, offsets and sequences following on.
class BatchSource {
 public:
  BatchSource(const GenOptions& o, uint64_t key_space) : o_(o), rng_(o.seed), key_space_(key_space) {}

  // Appends one batch to *out; returns its record count.
  int AppendBatch(std::string* out) {
    size_t batch_target =
        o_.batch_bytes == 0 ? rng_.Uniform(4096, 16384) : rng_.Uniform(o_.batch_bytes, 2 * o_.batch_bytes);
    size_t bytes = 0;
    inputs_.clear();
    bufs_.resize(0);
    // Records are built into stable buffers first (RecordInput holds views).
    std::vector<bool> has_header;
    while (bytes < batch_target || inputs_.empty()) {
      if (bufs_.size() <= inputs_.size()) bufs_.resize(inputs_.size() + 1);
      RecordBuf& b = bufs_[inputs_.size()];
      bool hh = false;
      uint64_t key_id = key_space_ == 0 ? rng_.Next() % 10000000000ull : rng_.Next() % key_space_;
      MakeRecord(&rng_, key_id, ts_, &b, &hh);
      b.header.key = AsBytes("trace-id");
      b.header.value = AsBytes(b.header_value);
      RecordInput in;
      in.offset = next_offset_ + int64_t(inputs_.size());
      in.timestamp = ts_++;
      in.key = AsBytes(b.key);
      in.value = AsBytes(b.value);
      has_header.push_back(hh);
      inputs_.push_back(in);
      bytes += b.key.size() + b.value.size() + (hh ? 8 + b.header_value.size() : 0);
    }
    for (size_t i = 0; i < inputs_.size(); i++) {
      if (has_header[i]) inputs_[i].headers = std::span<const RecordHeader>(&bufs_[i].header, 1);
    }
    int producer = int(batch_index_++ % 4);
    V2BatchOptions bo;
    bo.base_offset = next_offset_;
    bo.partition_leader_epoch = 3;
    bo.compression = o_.codec;
    bo.producer_id = 1000 + producer;
    bo.producer_epoch = 0;
    bo.base_sequence = sequence_[producer];
    std::string error;
    BuiltBatch built;
    if (!AppendV2Batch(bo, inputs_, out, &built, &error)) Die("AppendV2Batch: " + error);
    sequence_[producer] += int32_t(inputs_.size());
    next_offset_ += int64_t(inputs_.size());
    record_bytes_ += bytes;
    return int(inputs_.size());
  }
  int64_t next_offset() const { return next_offset_; }
  uint64_t record_bytes() const { return record_bytes_; }

 private:
  GenOptions o_;
  Rng rng_;
  uint64_t key_space_;
  int64_t next_offset_ = 0;
  int64_t ts_ = 1760000000000;
  uint64_t batch_index_ = 0;
  int32_t sequence_[4] = {0, 0, 0, 0};
  uint64_t record_bytes_ = 0;
  std::vector<RecordInput> inputs_;
  // A deque: growing it keeps earlier elements in place. (A vector moved them, and a 15-byte key
  // lives inside its std::string, so the batch's key views dangled: fixed 2026-12-02.)
  std::deque<RecordBuf> bufs_;
};

int Gen(const GenOptions& o) {
  auto t0 = Clock::now();
  uint64_t key_space = 0;
  if (o.live > 0) {
    // Estimate records per byte for this codec from a sample, then size the key space so that about
    // `live` of the records are the last of their key (uniformly drawn keys; each key is drawn ~1/live
    // times, so practically every key of the space appears).
    BatchSource sample(o, 1000000);
    std::string s;
    while (s.size() < (8u << 20)) sample.AppendBatch(&s);
    double records = double(o.bytes) * double(sample.next_offset()) / double(s.size());
    key_space = std::max<uint64_t>(1, uint64_t(records * o.live));
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) Die(o.out + ": " + ec.message());
  if (!std::filesystem::is_empty(o.out)) Die(o.out + ": not empty");
  PartitionWriterOptions pwo;
  pwo.config.segment_bytes = o.segment_bytes;
  std::string error;
  auto writer = PartitionWriter::Create(Env::Default(), o.out, pwo, &error);
  if (!writer) Die(error);
  BatchSource src(o, key_space);
  uint64_t written = 0;
  std::string chunk;
  while (written < o.bytes) {
    chunk.clear();
    while (chunk.size() < (1u << 20) && written + chunk.size() < o.bytes) src.AppendBatch(&chunk);
    if (!writer->AppendEntries(AsBytes(chunk), AppendGranularity::kPerBatch, &error)) Die(error);
    written += chunk.size();
  }
  if (!writer->Close(&error)) Die(error);
  std::printf(
      "{\"command\": \"gen\", \"out\": \"%s\", \"codec\": \"%s\", \"bytes\": %llu, \"records\": %lld, "
      "\"recordBytes\": %llu, \"keySpace\": %llu, \"seconds\": %.3f}\n",
      o.out.c_str(), CompressionName(o.codec), static_cast<unsigned long long>(written),
      static_cast<long long>(src.next_offset()), static_cast<unsigned long long>(src.record_bytes()),
      static_cast<unsigned long long>(key_space), SecondsSince(t0));
  return 0;
}

void PrintWalk(const char* command, const std::string& file, const WalkResult& r, double seconds) {
  std::printf(
      "{\"command\": \"%s\", \"file\": \"%s\", \"bytes\": %llu, \"batches\": %llu, \"records\": %llu, "
      "\"badCrc\": %llu, \"ok\": %s, \"seconds\": %.4f, \"MBps\": %.1f, \"checksum\": %llu}\n",
      command, file.c_str(), static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.batches),
      static_cast<unsigned long long>(r.records), static_cast<unsigned long long>(r.bad_crc), r.ok ? "true" : "false",
      seconds, double(r.bytes) / 1e6 / seconds, static_cast<unsigned long long>(r.checksum));
}

int Floor(const std::string& file, bool mapped) {
  auto t0 = Clock::now();
  WalkResult r;
  if (mapped) {
    std::string error;
    auto f = MappedFile::Open(file, &error);
    if (!f) Die(error);
    f->AdviseSequential();
    r = FloorMapped(f->data());
  } else {
    r = FloorStream(file);
  }
  PrintWalk(mapped ? "floor-mmap" : "floor", file, r, SecondsSince(t0));
  return r.ok && r.bad_crc == 0 ? 0 : 1;
}

int Recompress(const std::string& file, double keep) {
  auto t0 = Clock::now();
  CollectingSink sink;
  std::string error;
  std::unique_ptr<LogReader> reader = LogReader::Open(file, &sink, ReadOptions(), &error);
  if (!reader) Die(error);
  WalkResult r;
  std::string plain, packed;
  BatchView batch;
  uint64_t out_bytes = 0;
  while (reader->Next(&batch)) {
    r.batches++;
    const BatchHeader& h = batch.header;
    if (h.magic < 2 || h.compression == Compression::kNone || h.size_in_bytes <= uint32_t(kRecordBatchOverhead))
      continue;
    Bytes section = batch.bytes.subspan(kRecordBatchOverhead, h.size_in_bytes - kRecordBatchOverhead);
    if (!Decompress(h.compression, section, 2, kDefaultMaxDecompressedBytes, &plain, &error)) Die(error);
    r.records += uint64_t(std::max(h.record_count, 0));
    Compress(h.compression, AsBytes(plain).first(size_t(double(plain.size()) * keep)), 2, &packed);
    out_bytes += packed.size();
  }
  r.bytes = reader->valid_bytes();
  r.checksum = out_bytes;
  PrintWalk("recompress", file, r, SecondsSince(t0));
  return 0;
}

int Decode(const std::string& file, const std::string& mode) {
  auto t0 = Clock::now();
  if (mode.empty()) {  // what klf verify and dump do: the streaming LogReader
    WalkResult r = DecodeStream(file);
    PrintWalk("decode", file, r, SecondsSince(t0));
    return r.ok && r.bad_crc == 0 ? 0 : 1;
  }
  if (mode != "--mmap" && mode != "--populate") Die("decode: unknown option " + mode);
  std::string error;
  auto f = MappedFile::Open(file, &error);
  if (!f) Die(error);
  f->AdviseSequential();
  // --populate: map every page of the file in one madvise call before decoding (measures what page
  // faults on the mapping cost; LogReader still drops pages behind it).
  if (mode == "--populate" && f->size() > 0) {
    ::madvise(const_cast<uint8_t*>(f->data().data()), f->size(), MADV_POPULATE_READ);
  }
  WalkResult r = DecodeAll(file, f->data());
  PrintWalk(mode == "--mmap" ? "decode-mmap" : "decode-populate", file, r, SecondsSince(t0));
  return r.ok && r.bad_crc == 0 ? 0 : 1;
}

// One pass of `klf-bench check` over bytes in memory: LogReader (framing, CRC-32C) and, with `walk`,
// RecordDecoder::Check of every v2 batch.
WalkResult CheckPass(const std::string& file, Bytes data, bool walk_records) {
  WalkResult r;
  CollectingSink sink;
  LogReader reader(file, data, &sink);
  RecordDecoder decoder;
  RecordOffsetWalk walk;
  BatchView batch;
  while (reader.Next(&batch)) {
    r.batches++;
    const BatchHeader& h = batch.header;
    if (!h.crc_valid) r.bad_crc++;
    if (!walk_records || h.magic < 2 || !h.crc_valid) continue;
    walk.Reset(h, nullptr);
    if (!decoder.Check(batch, file, &sink, &walk)) r.ok = false;
    r.records += walk.in_order();
    r.checksum += uint64_t(walk.max_timestamp()) ^ uint64_t(walk.expected());
  }
  r.bytes = reader.valid_bytes();
  if (!sink.problems.empty()) r.ok = false;
  return r;
}

// The file is read into memory once; then N passes of framing + CRC alone and N of framing + CRC + the
// check-only walk, alternating; the fastest of each (thread CPU time) and their difference, the walk.
int Check(const std::string& file, int repeat) {
  std::string error;
  std::unique_ptr<MappedFile> f = MappedFile::Open(file, &error);
  if (!f) Die(error);
  std::vector<uint8_t> data(f->data().begin(), f->data().end());
  f.reset();
  std::vector<double> frame, check;
  WalkResult r;
  for (int k = 0; k < std::max(repeat, 1); ++k) {
    double t0 = ThreadCpuSince(0);
    WalkResult fr = CheckPass(file, Bytes(data), false);
    frame.push_back(ThreadCpuSince(t0));
    t0 = ThreadCpuSince(0);
    r = CheckPass(file, Bytes(data), true);
    check.push_back(ThreadCpuSince(t0));
    r.checksum += fr.checksum;
  }
  std::sort(frame.begin(), frame.end());
  std::sort(check.begin(), check.end());
  PrintWalk("check", file, r, check.front());
  const double walk = check.front() - frame.front();
  std::printf(
      "{\"command\": \"check\", \"passes\": %zu, \"frameSeconds\": %.4f, \"checkSeconds\": %.4f, "
      "\"walkSeconds\": %.4f, \"walkNsPerRecord\": %.2f}\n",
      check.size(), frame.front(), check.front(), walk, r.records == 0 ? 0.0 : walk * 1e9 / double(r.records));
  return r.ok && r.bad_crc == 0 ? 0 : 1;
}

// Env whose files never fsync (everything else forwarded): isolates the writer's own cost.
class NoSyncFile : public WritableFile {
 public:
  explicit NoSyncFile(std::unique_ptr<WritableFile> base) : base_(std::move(base)) {}
  bool Append(Bytes data, std::string* error) override { return base_->Append(data, error); }
  bool Flush(std::string* error) override { return base_->Flush(error); }
  // Sync without the fsync: the buffered bytes are still written out.
  bool Sync(std::string* error) override { return base_->Flush(error); }
  bool Close(std::string* error) override { return base_->Close(error); }
  const std::string& path() const override { return base_->path(); }

 private:
  std::unique_ptr<WritableFile> base_;
};

class NoSyncEnv : public Env {
 public:
  explicit NoSyncEnv(Env* base) : base_(base) {}
  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path, std::string* error) override {
    auto f = base_->NewWritableFile(path, error);
    if (!f) return nullptr;
    return std::make_unique<NoSyncFile>(std::move(f));
  }
  bool RenameFile(const std::string& a, const std::string& b, std::string* e) override {
    return base_->RenameFile(a, b, e);
  }
  bool RemoveFile(const std::string& p, std::string* e) override { return base_->RemoveFile(p, e); }
  bool CreateDir(const std::string& p, std::string* e) override { return base_->CreateDir(p, e); }
  bool CreateUniqueDir(const std::string& prefix, std::string* p, std::string* e) override {
    return base_->CreateUniqueDir(prefix, p, e);
  }
  bool RemoveDirRecursively(const std::string& p, std::string* e) override { return base_->RemoveDirRecursively(p, e); }
  bool SyncDir(const std::string&, std::string*) override { return true; }
  bool SyncFileSystem(const std::string&, std::string*) override { return true; }
  bool CopyFile(const std::string& a, const std::string& b, std::string* e) override {
    return base_->CopyFile(a, b, e);
  }
  bool FileExists(const std::string& p) override { return base_->FileExists(p); }
  bool IsNonEmptyDir(const std::string& p) override { return base_->IsNonEmptyDir(p); }
  bool SetMtimeMs(const std::string& p, int64_t ms, std::string* e) override { return base_->SetMtimeMs(p, ms, e); }

 private:
  Env* base_;
};

int Write(const std::string& in, const std::string& out, bool no_sync, uint64_t chunk_bytes) {
  auto t0 = Clock::now();
  std::string error;
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) Die(out + ": " + ec.message());
  NoSyncEnv no_sync_env(Env::Default());
  Env* env = no_sync ? static_cast<Env*>(&no_sync_env) : Env::Default();
  // The input's batches are trusted here (our generator wrote and CRC-checked them): framing only, as
  // a writer handed encoded batches by a builder or a fetch. Read with pread(2) through one reused
  // buffer (LogReader::Open): the cheapest way in on this VM, so the figure is the writer's cost.
  CollectingSink sink;
  ReadOptions ro;
  ro.verify_crc = false;
  ro.resync = false;
  auto reader = LogReader::Open(in, &sink, ro, &error);
  if (!reader) Die(error);
  BatchView b;
  std::unique_ptr<SegmentWriter> seg;
  LogConfig config;
  config.segment_bytes = std::numeric_limits<int32_t>::max();
  // --chunk-bytes: batches are gathered into one chunk (a BatchView lives only until the next Next()).
  std::vector<BatchHeader> pending;
  std::vector<uint8_t> chunk;
  uint64_t batches = 0;
  auto flush = [&]() {
    if (pending.empty()) return;
    if (!seg->Append(Bytes(chunk.data(), chunk.size()), ChunkInfoOf(pending), &error)) Die(error);
    pending.clear();
    chunk.clear();
  };
  while (reader->Next(&b)) {
    if (!seg) {
      seg = SegmentWriter::Create(env, out, b.header.base_offset, config, &error);
      if (!seg) Die(error);
    }
    batches++;
    if (chunk_bytes == 0) {  // one Append per batch, straight from the reader's buffer
      if (!seg->Append(b.bytes, ChunkInfoOf(std::span<const BatchHeader>(&b.header, 1)), &error)) Die(error);
      continue;
    }
    pending.push_back(b.header);
    chunk.insert(chunk.end(), b.bytes.begin(), b.bytes.end());
    if (chunk.size() >= chunk_bytes) flush();
  }
  flush();
  if (!sink.problems.empty()) Die(sink.problems.front().message);
  if (!seg) Die(in + ": no batches");
  if (!seg->Close(&error)) Die(error);
  double s = SecondsSince(t0);
  std::printf(
      "{\"command\": \"write\", \"in\": \"%s\", \"out\": \"%s\", \"sync\": %s, \"bytes\": %llu, \"batches\": %llu, "
      "\"indexEntries\": %zu, \"timeIndexEntries\": %zu, \"seconds\": %.3f, \"MBps\": %.1f}\n",
      in.c_str(), out.c_str(), no_sync ? "false" : "true", static_cast<unsigned long long>(seg->size()),
      static_cast<unsigned long long>(batches), seg->offset_index().size(), seg->time_index().size(), s,
      double(seg->size()) / 1e6 / s);
  return 0;
}

uint64_t ParseSize(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit = end;
  if (unit == "" || unit == "B") return uint64_t(v);
  if (unit == "K" || unit == "KiB") return uint64_t(v * 1024);
  if (unit == "M" || unit == "MiB") return uint64_t(v * 1024 * 1024);
  if (unit == "G" || unit == "GiB") return uint64_t(v * 1024 * 1024 * 1024);
  Die("bad size " + s);
}

int Usage() {
  std::fprintf(stderr,
               "usage: klf-bench gen --out DIR --bytes N [--codec none|lz4|zstd] [--live F] [--segment-bytes N] "
               "[--seed S] [--batch-bytes N]\n"
               "       klf-bench floor FILE | decode FILE | check FILE [--repeat N] | recompress FILE [--keep F]\n"
               "       klf-bench write --in LOG --out DIR [--no-sync] [--chunk-bytes N]\n");
  return 2;
}

}  // namespace
}  // namespace klf::bench

// NOLINTNEXTLINE(readability-function-cognitive-complexity): argument parsing plus one branch per benchmark; a tool, not a rule
int main(int argc, char** argv) {
  using namespace klf::bench;
  if (argc < 3) return Usage();
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  auto value = [&](size_t* i) -> std::string {
    if (*i + 1 >= args.size()) Die(args[*i] + " needs a value");
    return args[++*i];
  };
  if (cmd == "floor") return Floor(args[0], args.size() > 1 && args[1] == "--mmap");
  if (cmd == "decode") return Decode(args[0], args.size() > 1 ? args[1] : "");
  if (cmd == "check") return Check(args[0], args.size() > 2 && args[1] == "--repeat" ? std::atoi(args[2].c_str()) : 1);
  if (cmd == "recompress")
    return Recompress(args[0], args.size() > 2 && args[1] == "--keep" ? std::atof(args[2].c_str()) : 1.0);
  if (cmd == "gen") {
    GenOptions o;
    for (size_t i = 0; i < args.size(); i++) {
      if (args[i] == "--out")
        o.out = value(&i);
      else if (args[i] == "--bytes")
        o.bytes = ParseSize(value(&i));
      else if (args[i] == "--codec")
        o.codec = ParseCodec(value(&i));
      else if (args[i] == "--live")
        o.live = std::atof(value(&i).c_str());
      else if (args[i] == "--segment-bytes")
        o.segment_bytes = int64_t(ParseSize(value(&i)));
      else if (args[i] == "--seed")
        o.seed = std::strtoull(value(&i).c_str(), nullptr, 10);
      else if (args[i] == "--batch-bytes")
        o.batch_bytes = ParseSize(value(&i));
      else
        return Usage();
    }
    if (o.out.empty()) return Usage();
    return Gen(o);
  }
  if (cmd == "write") {
    std::string in, out;
    bool no_sync = false;
    uint64_t chunk = 0;  // 0: one Append per batch
    for (size_t i = 0; i < args.size(); i++) {
      if (args[i] == "--in")
        in = value(&i);
      else if (args[i] == "--out")
        out = value(&i);
      else if (args[i] == "--no-sync")
        no_sync = true;
      else if (args[i] == "--chunk-bytes")
        chunk = ParseSize(value(&i));
      else
        return Usage();
    }
    if (in.empty() || out.empty()) return Usage();
    return Write(in, out, no_sync, chunk);
  }
  return Usage();
}
