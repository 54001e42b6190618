// verify's check-only record walk (RecordDecoder::Check, segment_reader/batch.cc) against the full decoder
// (RecordDecoder::Decode): the same verdict, the same problem (position, check, text) and the same offsets,
// holes and largest timestamp, on records of every shape the walk's fast path takes or hands back
// (varints of one, two and three bytes, null and empty keys and values, 0 to 3 headers, holes) and on
// every one-byte change of such batches. The batch fuzzer (tests/fuzz/batch_fuzz.cc) checks the same on
// arbitrary bytes; this test reaches the fast path's every bail-out deterministically.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/problem.h"
#include "segment_writer/batch_builder.h"

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

}  // namespace
}  // namespace klf
