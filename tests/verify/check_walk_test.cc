// verify's check-only record walk (RecordDecoder::Check, segment_reader/batch.cc) against the full decoder
// (RecordDecoder::Decode): the same verdict, the same problem (position, check, text) and the same offsets,
// holes and largest timestamp, on records of every shape the walk's fast path takes or hands back
// (varints of one, two and three bytes, null and empty keys and values, 0 to 3 headers, holes) and on
// every one-byte change of such batches. The batch fuzzer (tests/fuzz/batch_fuzz.cc) checks the same on
// arbitrary bytes; this test reaches the fast path's every bail-out deterministically.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/bytes.h"
#include "segment_reader/crc.h"
#include "segment_reader/problem.h"
#include "segment_writer/batch_builder.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

struct Outcome {
  bool ok = false;
  std::vector<Problem> problems;
  bool broken = false;
  uint32_t in_order = 0;
  int64_t bad_offset = 0, expected = 0, max_timestamp = 0;
  std::vector<std::pair<int64_t, int64_t>> holes;

  // What the finished walk says of the batch's offsets and timestamps.
  void TakeWalk(const RecordOffsetWalk& walk) {
    broken = walk.broken();
    in_order = walk.in_order();
    bad_offset = walk.bad_offset();
    expected = walk.expected();
    max_timestamp = walk.max_timestamp();
  }
};

Outcome ByDecode(const BatchView& batch) {
  RecordDecoder decoder;
  CollectingSink sink;
  Outcome o;
  o.ok = decoder.Decode(batch, "t.log", &sink);
  o.problems = sink.problems;
  if (o.ok) {
    RecordOffsetWalk walk;
    walk.Reset(batch.header, &o.holes);
    for (const Record& r : decoder.records()) walk.Add(r.offset, r.timestamp);
    walk.Finish();
    o.TakeWalk(walk);
  }
  return o;
}

Outcome ByCheck(const BatchView& batch) {
  RecordDecoder decoder;
  CollectingSink sink;
  Outcome o;
  RecordOffsetWalk walk;
  walk.Reset(batch.header, &o.holes);
  o.ok = decoder.Check(batch, "t.log", &sink, &walk);
  EXPECT_TRUE(decoder.records().empty());
  o.problems = sink.problems;
  if (o.ok) {
    walk.Finish();
    o.TakeWalk(walk);
  } else {
    o.holes.clear();
  }
  return o;
}

// Check and Decode agree on `entry` (one v2 batch, its CRC not looked at). Returns whether Decode accepted.
bool ExpectSame(const std::string& entry, const std::string& what) {
  BatchView batch;
  std::string error;
  if (!ParseBatchHeader(AsBytes(entry), 0, false, &batch.header, &error)) return false;
  batch.bytes = AsBytes(entry);
  const Outcome d = ByDecode(batch), c = ByCheck(batch);
  EXPECT_EQ(c.ok, d.ok) << what;
  EXPECT_EQ(c.problems.size(), d.problems.size()) << what;
  for (size_t i = 0; i < c.problems.size() && i < d.problems.size(); ++i) {
    EXPECT_EQ(c.problems[i].position, d.problems[i].position) << what;
    EXPECT_EQ(c.problems[i].check, d.problems[i].check) << what;
    EXPECT_EQ(c.problems[i].message, d.problems[i].message) << what;
  }
  if (c.ok && d.ok) {
    EXPECT_EQ(c.broken, d.broken) << what;
    EXPECT_EQ(c.in_order, d.in_order) << what;
    EXPECT_EQ(c.bad_offset, d.bad_offset) << what;
    EXPECT_EQ(c.expected, d.expected) << what;
    EXPECT_EQ(c.max_timestamp, d.max_timestamp) << what;
    EXPECT_EQ(c.holes, d.holes) << what;
  }
  return d.ok;
}

// A batch of `n` records of varied shapes; `shape` picks the mix.
std::string MakeBatch(int n, int shape, TimestampType type = TimestampType::kCreateTime) {
  static const std::string big(10000, 'v');  // lengths of 3-byte varints
  std::vector<std::string> keys, values;
  std::vector<std::vector<RecordHeader>> headers(static_cast<size_t>(n));
  std::vector<RecordInput> in(static_cast<size_t>(n));
  int64_t offset = 1000;
  for (int i = 0; i < n; ++i) {
    const int k = (i * 7 + shape) % 11;
    RecordInput& r = in[size_t(i)];
    // Holes: some records skip offsets (a cleaned batch), some deltas need 2 or 3 bytes.
    offset += (shape % 3 == 1 && i % 5 == 2) ? 3 : (shape % 3 == 2 && i == 1 ? 9000 : 1);
    r.offset = offset;
    r.timestamp = 1700000000000 + (shape % 2 == 0 ? i : int64_t(i) * 5000 - 3);
    static const size_t kKeyLen[] = {0, 1, 15, 63, 64, 100, 8191, 8192, 15, 15, 15};
    static const size_t kValueLen[] = {300, 0, 63, 64, 5, 8192, 10, 200, 450, 100, 120};
    if (k != 3) r.key = Bytes(reinterpret_cast<const uint8_t*>(big.data()), kKeyLen[k]);
    if (k != 5 || shape % 2 == 0) r.value = Bytes(reinterpret_cast<const uint8_t*>(big.data()), kValueLen[k]);
    const int header_count = (i + shape) % 4 == 0 ? 0 : (i * 3 + shape) % 4;
    for (int h = 0; h < header_count; ++h) {
      RecordHeader rh;
      rh.key = AsBytes(h == 2 ? std::string_view("") : std::string_view("trace-id"));
      if (h != 1 || shape % 2 == 1) rh.value = Bytes(reinterpret_cast<const uint8_t*>(big.data()), h == 0 ? 32 : 70);
      headers[size_t(i)].push_back(rh);
    }
    r.headers = headers[size_t(i)];
  }
  V2BatchOptions o;
  o.base_offset = 1000;
  o.timestamp_type = type;
  if (type == TimestampType::kLogAppendTime) o.log_append_time = 1700000009999;
  o.producer_id = 7;
  o.producer_epoch = 0;
  o.base_sequence = 0;
  std::string out, error;
  BuiltBatch built;
  EXPECT_TRUE(AppendV2Batch(o, in, &out, &built, &error)) << error;
  return out;
}

TEST(CheckWalkTest, SameAsDecodeOnEveryShape) {
  for (int shape = 0; shape < 6; ++shape) {
    for (int n : {1, 2, 3, 10, 70, 200}) {
      for (TimestampType t : {TimestampType::kCreateTime, TimestampType::kLogAppendTime}) {
        const std::string what = "shape " + std::to_string(shape) + ", " + std::to_string(n) + " records";
        EXPECT_TRUE(ExpectSame(MakeBatch(n, shape, t), what)) << what;
      }
    }
  }
}

// Every byte of the records section of small batches set to values that change a varint's length, a
// sign, a length or a count: the walk hands every such record to the general parse, which decides.
TEST(CheckWalkTest, SameAsDecodeOnEveryOneByteChange) {
  int rejected = 0, accepted = 0;
  for (int shape = 0; shape < 3; ++shape) {
    std::string batch = MakeBatch(6, shape);
    if (shape == 2) batch = MakeBatch(3, 4);  // headers, null values
    if (batch.size() > 40000) continue;
    for (size_t at = size_t(kRecordBatchOverhead); at < batch.size(); ++at) {
      const uint8_t was = uint8_t(batch[at]);
      for (uint8_t v : {uint8_t(0x00), uint8_t(0x01), uint8_t(0x02), uint8_t(0x7f), uint8_t(0x80), uint8_t(0xff),
                        uint8_t(was ^ 0x01), uint8_t(was ^ 0x80), uint8_t(was + 2)}) {
        if (v == was) continue;
        std::string changed = batch;
        changed[at] = char(v);
        const bool ok = ExpectSame(changed, "byte " + std::to_string(at) + " set to " + std::to_string(v));
        (ok ? accepted : rejected) += 1;
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  // Both outcomes are exercised (a change inside a key or value is still a sound record).
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(accepted, 1000);
}

// A record count above what the records hold, and below: the walk stops where Decode stops.
TEST(CheckWalkTest, SameAsDecodeWithWrongCounts) {
  std::string batch = MakeBatch(20, 0);
  for (int32_t count : {0, 1, 19, 21, 1000, -1}) {
    std::string changed = batch;
    changed[57] = char(uint32_t(count) >> 24);
    changed[58] = char(uint32_t(count) >> 16);
    changed[59] = char(uint32_t(count) >> 8);
    changed[60] = char(uint32_t(count));
    ExpectSame(changed, "count " + std::to_string(count));
  }
}

// ---- Hand-made records: every varint length and encoding in every field ----
//
// The fast path reads varints of one or two bytes without bounds tests and hands everything else to the
// general parse (ReadVarint32 / ReadVarint64, Kafka's readVarint / readVarlong). These records put
// every encoding a field can have (1 to 5 bytes, 1 to 10 for the timestamp delta; overlong ones with
// continuation bytes of zero bits, which Kafka accepts; one byte too long, which it refuses; cut off at
// the record's end) into every field, at the first, a middle and the last record of a batch, and the
// batch's records are checked against Decode.

// Kafka's varint of zig-zag(v) in at least `min_bytes` bytes (an overlong encoding when more than v needs).
std::string Varint(int64_t v, int min_bytes = 1) {
  uint64_t u = (uint64_t(v) << 1) ^ uint64_t(v >> 63);
  std::string out;
  do {
    uint8_t b = uint8_t(u & 0x7f);
    u >>= 7;
    if (u != 0 || int(out.size()) + 1 < min_bytes) b |= 0x80;
    out.push_back(char(b));
  } while (u != 0 || int(out.size()) < min_bytes);
  return out;
}

// The value of Kafka's varint `e` (its low 64 bits; 0 when it is cut off).
int64_t ZigZagOf(const std::string& e) {
  uint64_t u = 0;
  for (size_t i = 0; i < e.size() && i < 10; ++i) {
    u |= uint64_t(uint8_t(e[i]) & 0x7f) << (7 * i);
    if ((uint8_t(e[i]) & 0x80) == 0) return int64_t(u >> 1) ^ -int64_t(u & 1);
  }
  return 0;
}

// A record's fields as bytes (each varint already encoded), so that a test can put any bytes in any.
struct RawRecord {
  std::string length;  // empty: Varint of the body's size
  std::string attributes = std::string(1, '\0');
  std::string timestamp_delta = Varint(0);
  std::string offset_delta = Varint(0);
  std::string key_length = Varint(3);
  std::string key = "key";
  std::string value_length = Varint(5);
  std::string value = "value";
  std::string header_count = Varint(0);
  std::string headers;

  std::string Body() const {
    return attributes + timestamp_delta + offset_delta + key_length + key + value_length + value + header_count +
           headers;
  }
  std::string Encode() const {
    const std::string body = Body();
    return (length.empty() ? Varint(int64_t(body.size())) : length) + body;
  }
};

void PutBE(std::string* s, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) (*s)[at + size_t(i)] = char(uint8_t(v >> (8 * (bytes - 1 - i))));
}

struct RawBatchOptions {
  int64_t base_offset = 1000;
  std::optional<int32_t> last_offset_delta;  // none: the record count - 1
  int64_t base_timestamp = 1700000000000;
  int64_t max_timestamp = 1700000009999;
  bool log_append_time = false;
  int32_t count = -1;  // -1: the number of records
};

// A v2 batch (CRC-32C computed) holding `records` as they are.
std::string RawBatch(const std::vector<std::string>& records, const RawBatchOptions& o = {}) {
  std::string section;
  for (const std::string& r : records) section += r;
  std::string b(size_t(kRecordBatchOverhead), '\0');
  const int32_t count = o.count >= 0 ? o.count : int32_t(records.size());
  PutBE(&b, 0, uint64_t(o.base_offset), 8);
  PutBE(&b, 8, uint64_t(kRecordBatchOverhead - kLogOverhead + section.size()), 4);
  b[16] = 2;  // magic
  PutBE(&b, 21, o.log_append_time ? 0x08 : 0, 2);
  PutBE(&b, 23, uint32_t(o.last_offset_delta ? *o.last_offset_delta : count - 1), 4);
  PutBE(&b, 27, uint64_t(o.base_timestamp), 8);
  PutBE(&b, 35, uint64_t(o.max_timestamp), 8);
  PutBE(&b, 43, uint64_t(-1), 8);  // producer id
  PutBE(&b, 51, 0xffff, 2);        // producer epoch
  PutBE(&b, 53, 0xffffffff, 4);    // base sequence
  PutBE(&b, 57, uint32_t(count), 4);
  b += section;
  PutBE(&b, 17, Crc32c(AsBytes(b).subspan(kV2AttributesOffset)), 4);
  return b;
}

// The encodings one field is tried with: `values` in every length from the shortest to `max_bytes`
// (overlong beyond the shortest), one byte more than Kafka reads (malformed), and a lone continuation byte.
std::vector<std::string> Encodings(const std::vector<int64_t>& values, int max_bytes) {
  std::vector<std::string> out;
  for (int64_t v : values) {
    for (int n = 1; n <= max_bytes; ++n) {
      const std::string e = Varint(v, n);
      if (int(e.size()) == n) out.push_back(e);
    }
  }
  out.push_back(std::string(size_t(max_bytes), char(0x80)) + std::string(1, '\0'));  // too long: malformed
  out.push_back(std::string(1, char(0x81)));                  // its next byte is the next field's
  out.push_back(std::string(size_t(max_bytes), char(0xff)));  // every bit set
  return out;
}

// Batches of 4 records (a long one too, when `long_records`: past the walk's copy of a batch's last
// bytes), with the record at `at` changed by `change`; each checked against Decode. Counts the outcomes.
template <typename Change>
void TryEveryPlace(const std::string& what, Change change, int* accepted, int* rejected) {
  for (int at : {0, 1, 3}) {
    for (bool long_records : {false, true}) {
      std::vector<std::string> records;
      for (int i = 0; i < 4; ++i) {
        RawRecord r;
        r.offset_delta = Varint(i);
        r.timestamp_delta = Varint(i * 3);
        if (long_records && i == 2) {
          r.value = std::string(1500, 'w');
          r.value_length = Varint(1500);
        }
        if (i == at) change(&r);
        records.push_back(r.Encode());
      }
      const bool ok = ExpectSame(RawBatch(records), what + " at record " + std::to_string(at));
      (ok ? *accepted : *rejected) += 1;
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(CheckWalkTest, EveryVarintLengthInEveryField) {
  const std::vector<int64_t> small = {0, 1, -1, 2, 63, -64, 64, -65, 8191, -8192, 8192, -8193};
  std::vector<int64_t> int32s = small;
  for (int64_t v : {int64_t(INT32_MAX), int64_t(INT32_MIN), int64_t(1) << 20}) int32s.push_back(v);
  std::vector<int64_t> int64s = int32s;
  for (int64_t v : {INT64_MAX, INT64_MIN, int64_t(1) << 40, -(int64_t(1) << 50)}) int64s.push_back(v);
  int accepted = 0, rejected = 0;
  for (const std::string& e : Encodings(int64s, 10)) {
    TryEveryPlace(
        "timestamp delta " + HexEncode(AsBytes(e)), [&](RawRecord* r) { r->timestamp_delta = e; }, &accepted,
        &rejected);
  }
  for (const std::string& e : Encodings(int32s, 5)) {
    const std::string hex = HexEncode(AsBytes(e));
    TryEveryPlace(
        "offset delta " + hex, [&](RawRecord* r) { r->offset_delta = e; }, &accepted, &rejected);
    TryEveryPlace(
        "record length " + hex, [&](RawRecord* r) { r->length = e; }, &accepted, &rejected);
    // A length with the bytes it promises (up to 9000: 3-byte varints); with as many as its raw varint
    // halved (a negative length read as if it were not: -v - 1 bytes); with 8 bytes.
    const int64_t v = ZigZagOf(e);
    for (const int64_t n :
         {std::clamp<int64_t>(v, 0, 9000), std::clamp<int64_t>(v < 0 ? -v - 1 : v + 1, 0, 9000), int64_t(8)}) {
      const std::string bytes = hex + " with " + std::to_string(n) + " bytes";
      TryEveryPlace(
          "key length " + bytes,
          [&](RawRecord* r) {
            r->key_length = e;
            r->key = std::string(size_t(n), 'k');
          },
          &accepted, &rejected);
      TryEveryPlace(
          "value length " + bytes,
          [&](RawRecord* r) {
            r->value_length = e;
            r->value = std::string(size_t(n), 'v');
          },
          &accepted, &rejected);
      TryEveryPlace(
          "header key length " + bytes,
          [&](RawRecord* r) {
            r->header_count = Varint(1);
            r->headers = e + std::string(size_t(n), 'h') + Varint(2) + "hv";
          },
          &accepted, &rejected);
      TryEveryPlace(
          "header value length " + bytes,
          [&](RawRecord* r) {
            r->header_count = Varint(2);
            r->headers = Varint(8) + "trace-id" + e + std::string(size_t(n), 'h') + Varint(0) + Varint(-1);
          },
          &accepted, &rejected);
    }
    // A count with the bytes of 0, 1 or 2 headers after it.
    for (int headers = 0; headers <= 2; ++headers) {
      TryEveryPlace(
          "header count " + hex + " with " + std::to_string(headers) + " headers",
          [&](RawRecord* r) {
            r->header_count = e;
            r->headers.clear();
            if (headers >= 1) r->headers += Varint(1) + "a" + Varint(1) + "b";
            if (headers >= 2) r->headers += Varint(0) + Varint(-1);
          },
          &accepted, &rejected);
    }
    if (::testing::Test::HasFailure()) return;
  }
  // Record lengths from the body's size: one less, one more, negative with the body's size as its raw
  // varint halved, and the right one in every length from 1 to 5 bytes.
  for (int k = 0; k < 8; ++k) {
    TryEveryPlace(
        "record length, case " + std::to_string(k),
        [&](RawRecord* r) {
          const int64_t size = int64_t(r->Body().size());
          const int64_t lengths[] = {size - 1, size + 1, -size - 1, -size, size, size, size, size};
          r->length = Varint(lengths[k], k < 4 ? 1 : k - 2);
        },
        &accepted, &rejected);
  }
  TryEveryPlace(
      "attributes 0xff", [](RawRecord* r) { r->attributes = std::string(1, char(0xff)); }, &accepted, &rejected);
  TryEveryPlace(
      "no attributes", [](RawRecord* r) { r->length = Varint(0); }, &accepted, &rejected);
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(rejected, 1000);
}

// Offsets and timestamps: runs in order, holes, offsets going back, repeated, past the batch's last
// offset, deltas of 1 to 3 bytes, base offsets and timestamps near the ends of int64 (where the sums
// wrap as Java's do), log-append time. The walk's offsets, holes and largest timestamp are Decode's.
TEST(CheckWalkTest, OffsetsAndTimestampsAsDecode) {
  const std::vector<std::vector<int64_t>> deltas = {{0, 1, 2, 3, 4, 5},
                                                    {0, 2, 3, 9, 10, 11},
                                                    {1, 2, 3},
                                                    {0, 1, 1, 2},
                                                    {0, 1, 0, 3},
                                                    {3, 2, 1, 0},
                                                    {0, 70, 71, 72},
                                                    {0, 8191, 8192, 8193},
                                                    {0, 1, 9000, 9001},
                                                    {-1, 0, 1},
                                                    {-8192, 0, 1},
                                                    {0, 1, 2, 100000},
                                                    {5},
                                                    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}};
  const std::vector<std::vector<int64_t>> ts_deltas = {
      {0}, {5, 3, 9, 1}, {-3, -1, -7, 2}, {-8192, 8191, 0}, {100000, -100000, 3}};
  const int64_t far = int64_t(1) << 62;
  int n = 0;
  for (int64_t base :
       {int64_t(1000), int64_t(0), far, far + 1, -far, -far - 1, INT64_MAX - 3, INT64_MIN + 2, INT64_MAX - 8191}) {
    for (int64_t base_ts : {int64_t(1700000000000), far + 1, INT64_MAX - 5, INT64_MIN + 1}) {
      for (bool log_append : {false, true}) {
        for (const auto& d : deltas) {
          for (const auto& t : ts_deltas) {
            for (std::optional<int32_t> last_delta :
                 {std::optional<int32_t>(), std::optional<int32_t>(0), std::optional<int32_t>(2),
                  std::optional<int32_t>(5), std::optional<int32_t>(8192), std::optional<int32_t>(INT32_MAX),
                  std::optional<int32_t>(-1), std::optional<int32_t>(-5), std::optional<int32_t>(INT32_MIN)}) {
              std::vector<std::string> records;
              for (size_t i = 0; i < d.size(); ++i) {
                RawRecord r;
                r.offset_delta = Varint(d[i]);
                r.timestamp_delta = Varint(t[i % t.size()]);
                records.push_back(r.Encode());
              }
              RawBatchOptions o;
              o.base_offset = base;
              o.base_timestamp = base_ts;
              o.log_append_time = log_append;
              o.last_offset_delta = last_delta;
              ExpectSame(RawBatch(records, o), "base " + std::to_string(base) + " ts " + std::to_string(base_ts) +
                                                   " deltas " + std::to_string(n++));
              if (::testing::Test::HasFailure()) return;
            }
          }
        }
      }
    }
  }
}

// The last records of a batch are walked in a copy of its last bytes: batches whose data is shorter
// than 16 bytes, a last record just inside and just past the copy, and damage in the last bytes.
TEST(CheckWalkTest, LastRecordsAsDecode) {
  for (size_t value :
       {size_t(0), size_t(1), size_t(10), size_t(990), size_t(1010), size_t(1020), size_t(1030), size_t(5000)}) {
    for (int n : {1, 2, 3}) {
      std::vector<std::string> records;
      for (int i = 0; i < n; ++i) {
        RawRecord r;
        r.offset_delta = Varint(i);
        r.key_length = Varint(-1);
        r.key.clear();
        r.value_length = Varint(int64_t(value));
        r.value = std::string(value, 'v');
        records.push_back(r.Encode());
      }
      const std::string batch = RawBatch(records);
      EXPECT_TRUE(ExpectSame(batch, "value " + std::to_string(value) + ", " + std::to_string(n) + " records"));
      // The data cut 1 to 3 bytes short of the last record's end (its last byte, the header count, is 0,
      // as the bytes after a copy are).
      for (size_t cut = 1; cut <= 3; ++cut) {
        std::vector<std::string> short_records = records;
        short_records.back().resize(short_records.back().size() - cut);
        EXPECT_FALSE(
            ExpectSame(RawBatch(short_records), "value " + std::to_string(value) + ", cut by " + std::to_string(cut)));
      }
      for (size_t back = 1; back <= 8 && back < batch.size() - size_t(kRecordBatchOverhead); ++back) {
        for (uint8_t v : {uint8_t(0x00), uint8_t(0x80), uint8_t(0xff)}) {
          std::string changed = batch;
          changed[changed.size() - back] = char(v);
          ExpectSame(changed, "value " + std::to_string(value) + ", byte " + std::to_string(back) + " from the end");
        }
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// ---- CheckWithCrc: the CRC-32C a piece ahead of the walk (verify's CrcWalker) ----

// A batch of `n` records of about `value_len` bytes each (the fast path's records), from offset `base`.
std::string MakeUniformBatch(int n, size_t value_len, int64_t base = 1000) {
  static const std::string v(70000, 'x');
  std::vector<RecordInput> in(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    RecordInput& r = in[size_t(i)];
    r.offset = base + i;
    r.timestamp = 1700000000000 + i;
    r.key = AsBytes(std::string_view(v).substr(0, 12));
    r.value = AsBytes(std::string_view(v).substr(0, value_len + size_t(i % 7)));
  }
  V2BatchOptions o;
  o.base_offset = base;
  std::string out, error;
  BuiltBatch built;
  EXPECT_TRUE(AppendV2Batch(o, in, &out, &built, &error)) << error;
  return out;
}

// CheckWithCrc and Check agree on `entry` (walk, problems, offsets, holes), and its CRC is the CRC of
// the covered bytes, header().crc_valid set from it. Returns whether the walk accepted the records.
bool ExpectSameWithCrc(const std::string& entry, const std::string& what) {
  BatchView batch;
  std::string error;
  if (!ParseBatchHeader(AsBytes(entry), 0, true, &batch.header, &error)) return false;
  batch.bytes = AsBytes(entry);
  const bool stored_ok = batch.header.crc_valid;
  batch.header.crc_valid = !stored_ok;  // CheckWithCrc must set it
  const Outcome c = ByCheck(batch);
  RecordDecoder decoder;
  CollectingSink sink;
  Outcome w;
  RecordOffsetWalk walk;
  walk.Reset(batch.header, &w.holes);
  uint32_t crc = 0;
  w.ok = decoder.CheckWithCrc(batch, "t.log", &sink, &walk, &crc);
  w.problems = sink.problems;
  EXPECT_EQ(crc, Crc32c(AsBytes(entry).subspan(kV2AttributesOffset))) << what;
  EXPECT_EQ(decoder.header().crc_valid, stored_ok) << what;
  EXPECT_EQ(w.ok, c.ok) << what;
  EXPECT_EQ(w.problems.size(), c.problems.size()) << what;
  for (size_t i = 0; i < w.problems.size() && i < c.problems.size(); ++i) {
    EXPECT_EQ(w.problems[i].position, c.problems[i].position) << what;
    EXPECT_EQ(w.problems[i].check, c.problems[i].check) << what;
    EXPECT_EQ(w.problems[i].message, c.problems[i].message) << what;
  }
  if (w.ok && c.ok) {
    walk.Finish();
    w.TakeWalk(walk);
    EXPECT_EQ(w.in_order, c.in_order) << what;
    EXPECT_EQ(w.broken, c.broken) << what;
    EXPECT_EQ(w.max_timestamp, c.max_timestamp) << what;
    EXPECT_EQ(w.holes, c.holes) << what;
  }
  return c.ok;
}

void SetByte(std::string* s, size_t at, uint8_t v) { (*s)[at] = char(v); }

TEST(CheckWithCrcTest, SameWalkAndCrcOnLargeBatches) {
  const std::string uniform = MakeUniformBatch(3000, 180);  // ~600 KiB: many pieces
  ASSERT_GT(uniform.size(), 30 * RecordDecoder::kCrcPieceBytes);
  EXPECT_TRUE(ExpectSameWithCrc(uniform, "uniform"));
  // Records longer than a piece (the general parse takes them) between short ones.
  const std::string mixed = MakeBatch(200, 1);
  EXPECT_TRUE(ExpectSameWithCrc(mixed, "mixed"));
  std::string long_records;
  {
    std::vector<RecordInput> in(5);
    static const std::string v(50000, 'y');
    for (int i = 0; i < 5; ++i) {
      in[size_t(i)].offset = i;
      in[size_t(i)].timestamp = 1;
      in[size_t(i)].value = AsBytes(std::string_view(v).substr(0, i % 2 == 0 ? 40000 : 50));
    }
    V2BatchOptions o;
    std::string error;
    BuiltBatch built;
    ASSERT_TRUE(AppendV2Batch(o, in, &long_records, &built, &error)) << error;
  }
  EXPECT_TRUE(ExpectSameWithCrc(long_records, "records longer than a piece"));
  // Small batches, no records, a count the records do not hold: the same as Check.
  EXPECT_TRUE(ExpectSameWithCrc(MakeUniformBatch(1, 10), "one record"));
  std::string counted = uniform;
  SetByte(&counted, 60, uint8_t(uint8_t(counted[60]) + 1));  // one record more than there are
  EXPECT_FALSE(ExpectSameWithCrc(counted, "count one above"));
}

// A damaged record in the second piece (and later ones) of a large batch: the walk stops there and
// reports what Check reports; the CRC still covers every byte (here it fails: the stored CRC is the
// undamaged batch's).
TEST(CheckWithCrcTest, DamagedRecordInALaterPiece) {
  const std::string batch = MakeUniformBatch(3000, 180);
  int rejected = 0;
  const size_t piece = size_t(RecordDecoder::kCrcPieceBytes);
  for (size_t at : {size_t(kRecordBatchOverhead) + piece + 5, size_t(kRecordBatchOverhead) + piece + 77,
                    size_t(kRecordBatchOverhead) + 2 * piece - 1, size_t(kRecordBatchOverhead) + 2 * piece,
                    batch.size() / 2, batch.size() - 2}) {
    for (uint8_t v : {uint8_t(0x00), uint8_t(0x7f), uint8_t(0x80), uint8_t(0xff)}) {
      std::string changed = batch;  // a run longer than a record: it breaks one record's framing or more
      for (size_t k = at; k < at + 256 && k < changed.size(); ++k) SetByte(&changed, k, v);
      if (!ExpectSameWithCrc(changed, "byte " + std::to_string(at) + " set to " + std::to_string(v))) ++rejected;
    }
  }
  EXPECT_GT(rejected, 12);  // most of these break a record's framing
}

// A batch whose bytes change only inside a value in its last piece: every record parses, the CRC
// computed after the walk is wrong.
TEST(CheckWithCrcTest, CrcFailureInALaterPiece) {
  std::string batch = MakeUniformBatch(3000, 180);
  const size_t at = batch.size() - 40;  // inside the last record's value ('x')
  ASSERT_EQ(batch[at], 'x');
  batch[at] = 'z';
  EXPECT_TRUE(ExpectSameWithCrc(batch, "a value byte in the last piece"));
}

// A CrcWalker as verify's: CheckWithCrc for each batch, its problems held.
class TestWalker : public CrcWalker {
 public:
  bool CrcAndWalk(const BatchView& batch, uint32_t* crc) override {
    RecordOffsetWalk walk;
    walk.Reset(batch.header, nullptr);
    CollectingSink sink;
    const bool ok = decoder_.CheckWithCrc(batch, "t.log", &sink, &walk, crc);
    walked.push_back(std::to_string(batch.header.position) + (ok ? " parsed " : " failed ") +
                     std::to_string(sink.problems.size()));
    return true;
  }
  std::vector<std::string> walked;

 private:
  RecordDecoder decoder_;
};

std::vector<std::string> ReadEntries(const std::string& path, uint64_t chunk, CrcWalker* walker) {
  ReadOptions options;
  options.stream_chunk_bytes = chunk;
  CollectingSink sink;
  std::string error;
  auto reader = LogReader::Open(path, &sink, options, &error);
  EXPECT_TRUE(reader) << error;
  std::vector<std::string> out;
  if (!reader) return out;
  reader->SetCrcWalker(walker);
  BatchView b;
  while (reader->Next(&b)) {
    out.push_back(std::to_string(b.header.position) + (b.header.crc_valid ? " ok " : " bad ") +
                  std::to_string(b.bytes.size()) + " " + std::to_string(Crc32c(b.bytes)));
  }
  for (const Problem& p : sink.problems) out.push_back(std::to_string(p.position) + " " + p.check + ": " + p.message);
  out.push_back("end " + std::to_string(int(reader->end())) + " " + std::to_string(reader->valid_bytes()));
  return out;
}

// Large batches read through buffers smaller than a batch and of a few batches (every batch then spans
// chunk boundaries): with a walker the reader returns the same entries, CRC verdicts and problems as
// computing each CRC itself, on sound batches, one with a damaged CRC and one with a damaged record.
TEST(CheckWithCrcTest, ReaderWithWalkerAcrossChunkBoundaries) {
  std::string log;
  for (int i = 0; i < 6; ++i) log += MakeUniformBatch(400 + 300 * i, 150 + 40 * i, 1000 + 10000 * i);
  const size_t second = MakeUniformBatch(400, 150).size();
  std::string damaged = log;
  damaged[second + 20] = char(uint8_t(damaged[second + 20]) ^ 1);  // the second batch's CRC-covered byte
  for (size_t k = log.size() - 1500; k < log.size() - 400; ++k) damaged[k] = char(0xff);  // last batch's records
  test::TempDir dir;
  int n = 0;
  for (const std::string* content : {&log, &damaged}) {
    const std::string path = dir.path() + "/" + std::to_string(n++) + ".log";
    test::WriteAll(path, *content);
    for (uint64_t chunk : {uint64_t(4096), uint64_t(100000), uint64_t(256) << 10}) {
      TestWalker walker;
      const std::vector<std::string> plain = ReadEntries(path, chunk, nullptr);
      const std::vector<std::string> walked = ReadEntries(path, chunk, &walker);
      EXPECT_EQ(walked, plain) << path << " chunk " << chunk;
      EXPECT_EQ(walker.walked.size(), 6u);
      if (content == &damaged && walker.walked.size() == 6) {
        EXPECT_EQ(walker.walked[5].find(" failed 1"), walker.walked[5].size() - 9) << walker.walked[5];
      }
    }
  }
}

}  // namespace
}  // namespace klf
