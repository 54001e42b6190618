// The measured loops of the benchmarks, shared by the Google Benchmark binaries (bench/*_bench.cc)
// and the whole-process tool (bench/klf_bench_tool.cc), so both time exactly the same work.
//
//   FloorStream / FloorMapped — the lower bound for reading a segment with integrity checks: walk the
//     batch headers (length, magic) and CRC-32C every v2 batch, nothing else. FloorStream reads the
//     file with read(2) in 4 MiB chunks (no mmap); FloorMapped walks a memory mapping.
//   DecodeStream / DecodeAll — what klf's decoders do: LogReader (framing + CRC; streaming with
//     pread(2), or over a mapping) and RecordDecoder (decompression, every record's varints, key,
//     value, headers), touching every decoded field.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/bytes.h"
#include "segment_reader/crc.h"
#include "segment_reader/file.h"
#include "segment_reader/problem.h"

namespace klf::bench {

struct WalkResult {
  uint64_t bytes = 0;  // bytes of whole entries walked
  uint64_t batches = 0;
  uint64_t records = 0;  // DecodeAll only
  uint64_t bad_crc = 0;
  uint64_t checksum = 0;  // folds every touched field, so nothing is optimised away
  bool ok = true;
};

// Walks whole entries of `data` from its start; returns the bytes consumed. v2 batches are CRC-checked
// (CRC-32C over attributes..end, spec §4.1); legacy entries are only framed (bench data is v2).
inline uint64_t FloorWalk(Bytes data, WalkResult* r) {
  uint64_t pos = 0;
  while (data.size() - pos >= uint64_t(kHeaderSizeUpToMagic)) {
    const uint8_t* p = data.data() + pos;
    uint32_t length = LoadBE32(p + 8);
    uint64_t entry = uint64_t(kLogOverhead) + length;
    if (entry > data.size() - pos) break;  // incomplete: the caller reads more
    if (p[16] == 2 && entry >= uint64_t(kRecordBatchOverhead)) {
      uint32_t stored = LoadBE32(p + kV2CrcOffset);
      uint32_t computed = Crc32c(Bytes(p + kV2AttributesOffset, entry - kV2AttributesOffset));
      if (stored != computed) r->bad_crc++;
      r->checksum += computed;
    }
    r->batches++;
    pos += entry;
  }
  return pos;
}

inline WalkResult FloorStream(const std::string& path) {
  WalkResult r;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r.ok = false;
    return r;
  }
  std::vector<uint8_t> buf(4u << 20);
  size_t have = 0;
  for (;;) {
    if (have == buf.size()) buf.resize(buf.size() * 2);  // one entry larger than the buffer
    ssize_t n = ::read(fd, buf.data() + have, buf.size() - have);
    if (n < 0) {
      r.ok = false;
      break;
    }
    if (n == 0) break;
    have += size_t(n);
    uint64_t used = FloorWalk(Bytes(buf.data(), have), &r);
    r.bytes += used;
    std::copy(buf.begin() + used, buf.begin() + have, buf.begin());  // the partial entry
    have -= used;
  }
  ::close(fd);
  return r;
}

inline WalkResult FloorMapped(Bytes data) {
  WalkResult r;
  r.bytes = FloorWalk(data, &r);
  return r;
}

// Every entry of `reader`, every record decoded and touched.
inline WalkResult DecodeEach(LogReader& reader, const CollectingSink& sink) {
  WalkResult r;
  RecordDecoder decoder;
  CollectingSink decode_sink;
  BatchView batch;
  const std::string& name = reader.file();
  while (reader.Next(&batch)) {
    r.batches++;
    if (!batch.header.crc_valid) r.bad_crc++;
    if (!decoder.Decode(batch, name, &decode_sink)) r.ok = false;
    for (const Record& rec : decoder.records()) {
      r.records++;
      r.checksum += uint64_t(rec.offset) ^ uint64_t(rec.timestamp);
      if (rec.key) r.checksum += rec.key->size() + (rec.key->empty() ? 0 : rec.key->front());
      if (rec.value) r.checksum += rec.value->size() + (rec.value->empty() ? 0 : rec.value->back());
      for (const RecordHeader& h : decoder.headers(rec)) r.checksum += h.key.size() + (h.value ? h.value->size() : 0);
    }
  }
  r.bytes = reader.valid_bytes();
  if (!sink.problems.empty() || !decode_sink.problems.empty()) r.ok = false;
  return r;
}

// DecodeEach over a mapping of the file (the mapped LogReader).
inline WalkResult DecodeAll(const std::string& name, Bytes data) {
  CollectingSink sink;
  LogReader reader(name, data, &sink);
  return DecodeEach(reader, sink);
}

// DecodeEach reading the file with the streaming LogReader (what klf verify and dump do).
inline WalkResult DecodeStream(const std::string& path) {
  CollectingSink sink;
  std::string error;
  std::unique_ptr<LogReader> reader = LogReader::Open(path, &sink, ReadOptions(), &error);
  if (!reader) {
    WalkResult r;
    r.ok = false;
    return r;
  }
  return DecodeEach(*reader, sink);
}

}  // namespace klf::bench
