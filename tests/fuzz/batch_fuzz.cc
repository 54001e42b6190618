// libFuzzer target: arbitrary bytes as a .log file through LogReader and RecordDecoder (every framing
// rule, resync, every codec with a small cap, v2 records, legacy wrappers, control records, and
// DecodeKeys and the check-only walk, Check and CheckWithCrc, against Decode).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/crc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace klf;
  ReadOptions options;
  options.max_batch_bytes = 1 << 20;
  options.max_decompressed_bytes = 1 << 20;
  NullSink sink;
  LogReader reader("fuzz.log", Bytes(data, size), &sink, options);
  RecordDecoder decoder(options), keys(options), checker(options), crc_checker(options);
  RecordOffsetWalk walk, walk_of_records;
  std::vector<std::pair<int64_t, int64_t>> holes, holes_of_records;
  BatchView batch;
  bool first = true;
  uint64_t last_position = 0;
  while (reader.Next(&batch)) {
    // Entries come in file order and lie inside the data. (One may start inside the previous entry
    // only when that entry's CRC failed and resynchronisation found a valid entry within it.)
    if ((!first && batch.header.position <= last_position) || batch.header.position + batch.bytes.size() > size) {
      __builtin_trap();
    }
    first = false;
    last_position = batch.header.position;
    (void)batch.header.last_sequence();
    // DecodeKeys reads a prefix of what Decode reads: whatever Decode accepts, it accepts, with the
    // same offsets and keys.
    bool keys_ok = keys.DecodeKeys(batch, "fuzz.log", &sink);
    CollectingSink decode_problems, check_problems;
    bool ok = decoder.Decode(batch, "fuzz.log", &decode_problems);
    // Check parses what Decode parses, reports the same problem, stores nothing, and folds the same
    // offsets and timestamps.
    if (batch.header.magic >= 2) {
      holes.clear();
      walk.Reset(batch.header, &holes);
      bool check_ok = checker.Check(batch, "fuzz.log", &check_problems, &walk);
      if (check_ok != ok || !checker.records().empty()) __builtin_trap();
      if (check_problems.problems.size() != decode_problems.problems.size()) __builtin_trap();
      for (size_t i = 0; i < check_problems.problems.size(); i++) {
        const Problem& a = check_problems.problems[i];
        const Problem& b = decode_problems.problems[i];
        if (a.position != b.position || a.check != b.check || a.message != b.message) __builtin_trap();
      }
      // CheckWithCrc (the CRC-32C a piece ahead of the walk) walks as Check does, and its CRC is the
      // CRC of the covered bytes.
      if (batch.bytes.size() > size_t(kV2AttributesOffset)) {
        CollectingSink crc_problems;
        std::vector<std::pair<int64_t, int64_t>> crc_holes;
        RecordOffsetWalk crc_walk;
        crc_walk.Reset(batch.header, &crc_holes);
        uint32_t crc = 0;
        const bool crc_ok = crc_checker.CheckWithCrc(batch, "fuzz.log", &crc_problems, &crc_walk, &crc);
        if (crc_ok != check_ok || crc != Crc32c(batch.bytes.subspan(kV2AttributesOffset)) ||
            crc_problems.problems.size() != check_problems.problems.size() || crc_holes != holes ||
            crc_walk.in_order() != walk.in_order() || crc_walk.broken() != walk.broken() ||
            crc_walk.max_timestamp() != walk.max_timestamp() || crc_walk.expected() != walk.expected()) {
          __builtin_trap();
        }
        for (size_t i = 0; i < crc_problems.problems.size(); i++) {
          if (crc_problems.problems[i].position != check_problems.problems[i].position ||
              crc_problems.problems[i].message != check_problems.problems[i].message) {
            __builtin_trap();
          }
        }
      }
      if (ok) {
        walk.Finish();
        holes_of_records.clear();
        walk_of_records.Reset(batch.header, &holes_of_records);
        for (const Record& r : decoder.records()) walk_of_records.Add(r.offset, r.timestamp);
        walk_of_records.Finish();
        if (walk.broken() != walk_of_records.broken() || walk.in_order() != walk_of_records.in_order() ||
            walk.bad_offset() != walk_of_records.bad_offset() || walk.expected() != walk_of_records.expected() ||
            walk.max_timestamp() != walk_of_records.max_timestamp() || holes != holes_of_records) {
          __builtin_trap();
        }
      }
    }
    if (ok && (!keys_ok || keys.records().size() != decoder.records().size())) __builtin_trap();
    if (ok) {
      for (size_t i = 0; i < keys.records().size(); i++) {
        const Record& a = keys.records()[i];
        const Record& b = decoder.records()[i];
        if (a.offset != b.offset || a.key.has_value() != b.key.has_value() ||
            (a.key && !std::equal(a.key->begin(), a.key->end(), b.key->begin(), b.key->end())))
          __builtin_trap();
      }
    }
    for (const Record& r : decoder.records()) {
      for (const RecordHeader& h : decoder.headers(r)) (void)h;
      if (decoder.header().is_control) {
        ControlRecord c;
        std::string error;
        ParseControlRecord(r, &c, &error);
      }
    }
  }
  if (reader.valid_bytes() > size) __builtin_trap();
  return 0;
}
