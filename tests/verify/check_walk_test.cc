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
