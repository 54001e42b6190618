// Batch framing and record decoding against the byte examples of the spec (kafka-on-disk-format.md
// §3.4, §4.6) and damaged variants of them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "segment_reader/batch.h"
#include "segment_reader/crc.h"

namespace klf {
namespace {

std::string Hex(std::string_view hex) {
  std::string out;
  int hi = -1;
  for (char c : hex) {
    int v;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      v = c - 'A' + 10;
    else
      continue;
    if (hi < 0)
      hi = v;
    else {
      out.push_back(char(hi << 4 | v));
      hi = -1;
    }
  }
  return out;
}

std::string Str(Bytes b) { return std::string(AsStringView(b)); }

// Spec §3.4, magic 0.
const char* kV0 =
    "00 00 00 00 00 00 00 00 00 00 00 18 75 f0 f4 1d"
    "00 00 00 00 00 04 6b 65 79 31 00 00 00 06 76 61"
    "6c 75 65 31 00 00 00 00 00 00 00 01 00 00 00 18"
    "75 1b c3 a6 00 00 00 00 00 04 6b 65 79 32 00 00"
    "00 06 76 61 6c 75 65 32";
// Spec §3.4, magic 1 (first record only).
const char* kV1 =
    "00 00 00 00 00 00 00 00 00 00 00 20 06 85 b3 64"
    "01 00 00 00 00 00 00 04 54 c3 00 00 00 04 6b 65"
    "79 31 00 00 00 06 76 61 6c 75 65 31";
// Spec §4.6 (a).
const char* kV2a =
    "00 00 00 00 00 00 00 00 00 00 00 55 ff ff ff ff"
    "02 e5 8c f1 ff 00 00 00 00 00 01 00 00 00 00 00"
    "04 54 c3 00 00 00 00 00 04 54 c3 ff ff ff ff ff"
    "ff ff ff ff ff ff ff ff ff 00 00 00 02 20 00 00"
    "00 08 6b 65 79 31 0c 76 61 6c 75 65 31 00 24 00"
    "e1 bf 22 02 08 6b 65 79 32 0c 76 61 6c 75 65 32"
    "00";
// (b) COMMIT marker.
const char* kV2b =
    "00 00 00 00 00 00 00 0a 00 00 00 42 00 00 00 07"
    "02 7a 94 e4 69 00 30 00 00 00 00 00 00 01 8b cf"
    "e5 68 00 00 00 01 8b cf e5 68 00 00 00 00 00 00"
    "01 80 13 00 63 ff ff ff ff 00 00 00 01 20 00 00"
    "00 08 00 00 00 01 0c 00 00 00 00 00 64 00";
// (c) empty batch written by the cleaner.
const char* kV2c =
    "00 00 00 00 00 00 00 03 00 00 00 31 00 00 01 25"
    "02 55 58 11 48 00 00 00 00 00 01 ff ff ff ff ff"
    "ff ff ff 00 00 00 00 00 00 00 0c 00 00 00 00 00"
    "00 00 17 00 05 00 00 00 0a 00 00 00 00";
// (d) tombstone with a delete horizon.
const char* kV2d =
    "00 00 00 00 00 00 00 14 00 00 00 3c ff ff ff ff"
    "02 b0 6c a6 c8 00 40 00 00 00 00 00 00 01 8b d5"
    "0b c4 00 00 00 01 8b cf e5 68 00 ff ff ff ff ff"
    "ff ff ff ff ff ff ff ff ff 00 00 00 01 14 00 ff"
    "ef b2 52 00 02 6b 01 00";

struct Decoded {
  std::vector<BatchHeader> headers;  // as completed by the decoder
  std::vector<std::vector<Record>> records;
  std::vector<bool> decoded_ok;
  CollectingSink sink;
  LogEnd end = LogEnd::kEndOfData;
  uint64_t valid_bytes = 0;
  RecordDecoder decoder;
  std::string data;  // records' keys and values point into these bytes
};

void ReadAll(const std::string& data, Decoded* out, ReadOptions options = {}) {
  out->data = data;
  LogReader reader("test.log", AsBytes(out->data), &out->sink, options);
  BatchView b;
  while (reader.Next(&b)) {
    bool ok = out->decoder.Decode(b, "test.log", &out->sink);
    out->decoded_ok.push_back(ok);
    out->headers.push_back(out->decoder.header());
    out->records.push_back(out->decoder.records());
  }
  out->end = reader.end();
  out->valid_bytes = reader.valid_bytes();
}

bool HasProblem(const CollectingSink& s, const std::string& check, uint64_t position) {
  for (const auto& p : s.problems) {
    if (p.check == check && p.position == position) return true;
  }
  return false;
}

std::string Problems(const CollectingSink& s) {
  std::string out;
  for (const auto& p : s.problems) {
    out += std::string(SeverityName(p.severity)) + " " + p.check + " @" + std::to_string(p.position) + ": " +
           p.message + "\n";
  }
  return out;
}

TEST(BatchTest, MagicV0SpecExample) {
  Decoded d;
  ReadAll(Hex(kV0), &d);
  EXPECT_TRUE(d.sink.problems.empty()) << Problems(d.sink);
  ASSERT_EQ(d.headers.size(), 2u);
  EXPECT_EQ(d.headers[0].magic, 0);
  EXPECT_EQ(d.headers[0].crc, 0x75F0F41Du);
  EXPECT_TRUE(d.headers[0].crc_valid);
  EXPECT_EQ(d.headers[0].size_in_bytes, 36u);
  EXPECT_EQ(d.headers[0].timestamp_type, TimestampType::kNoTimestampType);
  EXPECT_EQ(d.headers[1].position, 36u);
  EXPECT_EQ(d.headers[1].base_offset, 1);
  EXPECT_EQ(d.headers[1].last_offset, 1);
  ASSERT_EQ(d.records[1].size(), 1u);
  EXPECT_EQ(Str(*d.records[1][0].key), "key2");
  EXPECT_EQ(Str(*d.records[1][0].value), "value2");
  EXPECT_EQ(d.records[1][0].timestamp, kNoTimestamp);
  EXPECT_EQ(d.records[1][0].offset, 1);
  EXPECT_EQ(d.end, LogEnd::kEndOfData);
}

TEST(BatchTest, MagicV1SpecExample) {
  Decoded d;
  ReadAll(Hex(kV1), &d);
  EXPECT_TRUE(d.sink.problems.empty()) << Problems(d.sink);
  ASSERT_EQ(d.headers.size(), 1u);
  EXPECT_EQ(d.headers[0].crc, 0x0685B364u);
  EXPECT_TRUE(d.headers[0].crc_valid);
  EXPECT_EQ(d.headers[0].max_timestamp, 283843);
  EXPECT_EQ(d.headers[0].timestamp_type, TimestampType::kCreateTime);
  ASSERT_EQ(d.records[0].size(), 1u);
  EXPECT_EQ(d.records[0][0].timestamp, 283843);
  EXPECT_EQ(Str(*d.records[0][0].key), "key1");
  EXPECT_EQ(Str(*d.records[0][0].value), "value1");
  EXPECT_EQ(d.records[0][0].magic, 1);
}

TEST(BatchTest, V2SpecExampleA) {
  Decoded d;
  ReadAll(Hex(kV2a), &d);
  EXPECT_TRUE(d.sink.problems.empty()) << Problems(d.sink);
  ASSERT_EQ(d.headers.size(), 1u);
  const BatchHeader& h = d.headers[0];
  EXPECT_EQ(h.size_in_bytes, 97u);
  EXPECT_EQ(h.crc, 0xE58CF1FFu);
  EXPECT_TRUE(h.crc_valid);
  EXPECT_EQ(h.partition_leader_epoch, -1);
  EXPECT_EQ(h.base_offset, 0);
  EXPECT_EQ(h.last_offset, 1);
  EXPECT_EQ(h.base_timestamp, 283843);
  EXPECT_EQ(h.max_timestamp, 283843);
  EXPECT_EQ(h.producer_id, -1);
  EXPECT_EQ(h.producer_epoch, -1);
  EXPECT_EQ(h.base_sequence, -1);
  EXPECT_EQ(h.last_sequence(), -1);
  EXPECT_EQ(h.record_count, 2);
  EXPECT_FALSE(h.delete_horizon_ms.has_value());
  ASSERT_EQ(d.records[0].size(), 2u);
  EXPECT_EQ(d.records[0][0].timestamp, 283843);
  EXPECT_EQ(d.records[0][1].timestamp, 1234);
  EXPECT_EQ(d.records[0][1].offset, 1);
  EXPECT_EQ(Str(*d.records[0][1].key), "key2");
  EXPECT_EQ(Str(*d.records[0][1].value), "value2");
  EXPECT_EQ(d.records[0][0].size_in_bytes, 17u);
  EXPECT_EQ(d.records[0][1].size_in_bytes, 19u);
  EXPECT_EQ(d.records[0][0].sequence, -1);
}

TEST(BatchTest, V2SpecExampleBCommitMarker) {
  Decoded d;
  ReadAll(Hex(kV2b), &d);
  EXPECT_TRUE(d.sink.problems.empty()) << Problems(d.sink);
  ASSERT_EQ(d.headers.size(), 1u);
  const BatchHeader& h = d.headers[0];
  EXPECT_EQ(h.size_in_bytes, 78u);
  EXPECT_TRUE(h.crc_valid);
  EXPECT_EQ(h.base_offset, 10);
  EXPECT_EQ(h.partition_leader_epoch, 7);
  EXPECT_EQ(h.producer_id, 98323);
  EXPECT_EQ(h.producer_epoch, 99);
  EXPECT_TRUE(h.is_control);
  EXPECT_TRUE(h.is_transactional);
  EXPECT_EQ(h.attributes, 0x30);
  EXPECT_EQ(h.max_timestamp, 1700000000000);
  ASSERT_EQ(d.records[0].size(), 1u);
  ControlRecord c;
  std::string err;
  ASSERT_TRUE(ParseControlRecord(d.records[0][0], &c, &err)) << err;
  EXPECT_EQ(c.type, ControlType::kCommit);
  EXPECT_STREQ(ControlTypeName(c.type), "COMMIT");
  EXPECT_EQ(c.coordinator_epoch, 100);
  EXPECT_EQ(c.key_version, 0);
  EXPECT_EQ(d.records[0][0].size_in_bytes, 17u);
}

TEST(BatchTest, V2SpecExampleCEmptyBatch) {
  Decoded d;
  ReadAll(Hex(kV2c), &d);
  EXPECT_TRUE(d.sink.problems.empty()) << Problems(d.sink);
  ASSERT_EQ(d.headers.size(), 1u);
  const BatchHeader& h = d.headers[0];
  EXPECT_EQ(h.size_in_bytes, 61u);
  EXPECT_TRUE(h.crc_valid);
  EXPECT_EQ(h.base_offset, 3);
  EXPECT_EQ(h.last_offset, 4);
  EXPECT_EQ(h.producer_id, 23);
  EXPECT_EQ(h.producer_epoch, 5);
  EXPECT_EQ(h.base_sequence, 10);
  EXPECT_EQ(h.last_sequence(), 11);
  EXPECT_EQ(h.partition_leader_epoch, 293);
  EXPECT_EQ(h.max_timestamp, 12);
  EXPECT_EQ(h.base_timestamp, -1);
  EXPECT_EQ(h.record_count, 0);
  EXPECT_TRUE(d.records[0].empty());
}

TEST(BatchTest, V2SpecExampleDDeleteHorizon) {
  Decoded d;
  ReadAll(Hex(kV2d), &d);
  EXPECT_TRUE(d.sink.problems.empty()) << Problems(d.sink);
  ASSERT_EQ(d.headers.size(), 1u);
  const BatchHeader& h = d.headers[0];
  EXPECT_TRUE(h.crc_valid);
  EXPECT_EQ(h.base_offset, 20);
  ASSERT_TRUE(h.delete_horizon_ms.has_value());
  EXPECT_EQ(*h.delete_horizon_ms, 1700086400000);
  EXPECT_EQ(h.max_timestamp, 1700000000000);
  ASSERT_EQ(d.records[0].size(), 1u);
  EXPECT_EQ(d.records[0][0].timestamp, 1700000000000);
  EXPECT_EQ(Str(*d.records[0][0].key), "k");
  EXPECT_FALSE(d.records[0][0].value.has_value());
}

TEST(BatchTest, AllExamplesConcatenated) {
  // Offsets: v2a 0..1, then b at 10, c at 3 (backwards), d at 20.
  std::string data = Hex(kV2a) + Hex(kV2b) + Hex(kV2d);
  Decoded d;
  ReadAll(data, &d);
  EXPECT_TRUE(d.sink.problems.empty()) << Problems(d.sink);
  EXPECT_EQ(d.headers.size(), 3u);
  EXPECT_EQ(d.valid_bytes, data.size());
}

TEST(BatchTest, OffsetsGoingBackwardsReported) {
  std::string data = Hex(kV2b) + Hex(kV2c);
  Decoded d;
  ReadAll(data, &d);
  EXPECT_EQ(d.headers.size(), 2u);
  EXPECT_TRUE(HasProblem(d.sink, "offset-order", 78)) << Problems(d.sink);
}

TEST(BatchTest, TruncatedTail) {
  std::string a = Hex(kV2a), b = Hex(kV2b);
  std::string data = a + b.substr(0, 40);
  Decoded d;
  ReadAll(data, &d);
  EXPECT_EQ(d.headers.size(), 1u);
  EXPECT_EQ(d.end, LogEnd::kTruncatedTail);
  EXPECT_EQ(d.valid_bytes, a.size());
  EXPECT_TRUE(HasProblem(d.sink, "truncated-tail", a.size())) << Problems(d.sink);
  EXPECT_EQ(d.sink.ErrorCount(), 0u);
  // Fewer than 18 bytes left: also the end of the data.
  Decoded d2;
  ReadAll(a + b.substr(0, 10), &d2);
  EXPECT_EQ(d2.end, LogEnd::kTruncatedTail);
  EXPECT_TRUE(HasProblem(d2.sink, "truncated-tail", a.size()));
}

TEST(BatchTest, ZeroTail) {
  std::string a = Hex(kV2a);
  std::string data = a + std::string(4096, '\0');
  Decoded d;
  ReadAll(data, &d);
  EXPECT_EQ(d.headers.size(), 1u);
  EXPECT_EQ(d.end, LogEnd::kZeroTail);
  EXPECT_TRUE(HasProblem(d.sink, "zero-tail", a.size())) << Problems(d.sink);
  EXPECT_EQ(d.sink.ErrorCount(), 0u);
  Decoded d2;
  ReadAll(a + std::string(5, '\0'), &d2);
  EXPECT_EQ(d2.end, LogEnd::kZeroTail);
}

TEST(BatchTest, BadCrcReportedAndBatchStillReturned) {
  std::string data = Hex(kV2a);
  data[80] ^= 0x01;  // inside record 1's timestamp delta
  Decoded d;
  ReadAll(data, &d);
  ASSERT_EQ(d.headers.size(), 1u);
  EXPECT_FALSE(d.headers[0].crc_valid);
  EXPECT_TRUE(HasProblem(d.sink, "batch-crc", 17)) << Problems(d.sink);
  // The legacy CRC is at 12.
  std::string v0 = Hex(kV0);
  v0[30] ^= 0x20;
  Decoded d0;
  ReadAll(v0, &d0);
  EXPECT_TRUE(HasProblem(d0.sink, "batch-crc", 12)) << Problems(d0.sink);
  EXPECT_EQ(d0.headers.size(), 2u);
}

TEST(BatchTest, LyingLengthResyncsToNextBatch) {
  std::string a = Hex(kV2a), b = Hex(kV2b), dd = Hex(kV2d);
  std::string data = a + b + dd;
  // Batch b claims to be 4 bytes longer than it is: it now runs into batch d.
  StoreBE32(reinterpret_cast<uint8_t*>(data.data()) + a.size() + 8, 0x42 + 4);
  Decoded d;
  ReadAll(data, &d);
  // b is returned with a bad CRC (its bytes now include 4 of d's); the framing then breaks 4 bytes
  // into d, and resynchronisation, scanning from inside the bad-CRC batch, finds d at its real start.
  ASSERT_EQ(d.headers.size(), 3u) << Problems(d.sink);
  EXPECT_FALSE(d.headers[1].crc_valid);
  EXPECT_TRUE(HasProblem(d.sink, "batch-crc", a.size() + 17)) << Problems(d.sink);
  EXPECT_TRUE(HasProblem(d.sink, "batch-size", a.size() + b.size() + 4 + 8)) << Problems(d.sink);
  EXPECT_TRUE(HasProblem(d.sink, "resync", a.size() + b.size() + 4)) << Problems(d.sink);
  EXPECT_EQ(d.headers[2].position, a.size() + b.size());
  EXPECT_EQ(d.headers[2].base_offset, 20);
  EXPECT_TRUE(d.headers[2].crc_valid);
  EXPECT_EQ(d.end, LogEnd::kEndOfData);
  // A length running past the end of the file with a valid batch after it: corrupt length, resync.
  std::string data2 = a + b + dd;
  StoreBE32(reinterpret_cast<uint8_t*>(data2.data()) + 8, 100000);
  Decoded d2;
  ReadAll(data2, &d2);
  EXPECT_TRUE(HasProblem(d2.sink, "batch-size", 8)) << Problems(d2.sink);
  EXPECT_TRUE(HasProblem(d2.sink, "resync", 0)) << Problems(d2.sink);
  ASSERT_EQ(d2.headers.size(), 2u);
  EXPECT_EQ(d2.headers[0].base_offset, 10);
  EXPECT_EQ(d2.headers[0].position, a.size());
  EXPECT_EQ(d2.headers[1].base_offset, 20);
}

TEST(BatchTest, GarbageBetweenBatchesIsSkipped) {
  std::string a = Hex(kV2a), b = Hex(kV2b);
  std::string garbage = "\x01\x02\x03\x04\x05\x06\x07\x08\x00\x00\x00\x05 garbage garbage garbage";
  std::string data = a + garbage + b;
  Decoded d;
  ReadAll(data, &d);
  ASSERT_EQ(d.headers.size(), 2u) << Problems(d.sink);
  EXPECT_EQ(d.headers[1].position, a.size() + garbage.size());
  EXPECT_TRUE(HasProblem(d.sink, "batch-size", a.size() + 8)) << Problems(d.sink);
  EXPECT_TRUE(HasProblem(d.sink, "resync", a.size())) << Problems(d.sink);
  // Without resync the iteration stops at the corruption.
  Decoded d2;
  ReadOptions o;
  o.resync = false;
  ReadAll(data, &d2, o);
  EXPECT_EQ(d2.headers.size(), 1u);
  EXPECT_EQ(d2.end, LogEnd::kCorrupt);
  EXPECT_EQ(d2.valid_bytes, a.size());
}

TEST(BatchTest, SizeAboveLimitIsCorrupt) {
  std::string a = Hex(kV2a);
  ReadOptions o;
  o.max_batch_bytes = 50;
  o.resync = false;
  Decoded d;
  ReadAll(a, &d, o);
  EXPECT_EQ(d.headers.size(), 0u);
  EXPECT_TRUE(HasProblem(d.sink, "batch-size", 8)) << Problems(d.sink);
}

TEST(BatchTest, UnknownMagic) {
  std::string data = Hex(kV2a);
  data[16] = 7;
  Decoded d;
  ReadAll(data, &d);
  EXPECT_EQ(d.headers.size(), 0u);
  EXPECT_TRUE(HasProblem(d.sink, "unknown-magic", 16)) << Problems(d.sink);
}

// Re-stamps the CRC-32C of a v2 batch after an edit, so only the edited field is wrong.
void FixCrc(std::string* batch) {
  uint8_t* p = reinterpret_cast<uint8_t*>(batch->data());
  StoreBE32(p + 17, Crc32c(Bytes(p + 21, batch->size() - 21)));
}

TEST(BatchTest, UnknownCodec) {
  std::string data = Hex(kV2a);
  data[22] = 0x05;
  FixCrc(&data);
  Decoded d;
  ReadAll(data, &d);
  ASSERT_EQ(d.headers.size(), 1u);
  EXPECT_FALSE(d.decoded_ok[0]);
  EXPECT_TRUE(HasProblem(d.sink, "unknown-codec", 22)) << Problems(d.sink);
}

TEST(BatchTest, BadVarintInRecord) {
  std::string data = Hex(kV2a);
  // Record 0 starts at 61: length varint, attributes, tsDelta at 63. Make tsDelta a 10+ byte varlong.
  for (int i = 63; i < 63 + 14; ++i) data[i] = char(0xff);
  FixCrc(&data);
  Decoded d;
  ReadAll(data, &d);
  ASSERT_EQ(d.headers.size(), 1u);
  EXPECT_FALSE(d.decoded_ok[0]);
  EXPECT_TRUE(HasProblem(d.sink, "record-parse", 63)) << Problems(d.sink);
  // A 5-byte varint with the continuation bit on the 5th byte (record length).
  std::string e = Hex(kV2a);
  for (int i = 61; i < 66; ++i) e[i] = char(0x80);
  FixCrc(&e);
  Decoded d2;
  ReadAll(e, &d2);
  EXPECT_TRUE(HasProblem(d2.sink, "record-parse", 61)) << Problems(d2.sink);
}

TEST(BatchTest, RecordCountMismatch) {
  std::string data = Hex(kV2a);
  data[60] = 3;  // declares 3 records, has 2
  FixCrc(&data);
  Decoded d;
  ReadAll(data, &d);
  EXPECT_FALSE(d.decoded_ok[0]);
  EXPECT_TRUE(HasProblem(d.sink, "record-count", 97)) << Problems(d.sink);
  EXPECT_EQ(d.records[0].size(), 2u);  // what decoded before the failure stays available
  data[60] = 1;                        // declares 1, has 2: records still remaining
  FixCrc(&data);
  Decoded d2;
  ReadAll(data, &d2);
  EXPECT_FALSE(d2.decoded_ok[0]);
  EXPECT_TRUE(HasProblem(d2.sink, "record-count", 78)) << Problems(d2.sink);
  bool found = false;
  for (auto& p : d2.sink.problems) found |= p.message.find("records still remaining") != std::string::npos;
  EXPECT_TRUE(found);
  // Negative count.
  StoreBE32(reinterpret_cast<uint8_t*>(data.data()) + 57, uint32_t(-1));
  FixCrc(&data);
  Decoded d3;
  ReadAll(data, &d3);
  EXPECT_TRUE(HasProblem(d3.sink, "record-count", 57)) << Problems(d3.sink);
}

TEST(BatchTest, LogAppendTimeUsesMaxTimestamp) {
  std::string data = Hex(kV2a);
  data[22] = 0x08;
  StoreBE64(reinterpret_cast<uint8_t*>(data.data()) + 35, 999);
  FixCrc(&data);
  Decoded d;
  ReadAll(data, &d);
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.headers[0].timestamp_type, TimestampType::kLogAppendTime);
  EXPECT_EQ(d.records[0][0].timestamp, 999);
  EXPECT_EQ(d.records[0][1].timestamp, 999);
}

TEST(BatchTest, SequencesFromBaseSequence) {
  std::string data = Hex(kV2a);
  StoreBE32(reinterpret_cast<uint8_t*>(data.data()) + 53, 0x7fffffff);
  FixCrc(&data);
  Decoded d;
  ReadAll(data, &d);
  ASSERT_EQ(d.records[0].size(), 2u);
  EXPECT_EQ(d.records[0][0].sequence, 0x7fffffff);
  EXPECT_EQ(d.records[0][1].sequence, 0);  // wraps (incrementSequence)
  EXPECT_EQ(d.headers[0].last_sequence(), 0);
}

TEST(BatchTest, IncrementSequenceWraps) {
  EXPECT_EQ(IncrementSequence(5, 3), 8);
  EXPECT_EQ(IncrementSequence(INT32_MAX, 1), 0);
  EXPECT_EQ(IncrementSequence(INT32_MAX - 1, 3), 1);
  EXPECT_EQ(IncrementSequence(-1, 0), -1);
}

TEST(BatchTest, ParseBatchHeaderRejectsShortV2) {
  std::string data = Hex(kV2c);
  StoreBE32(reinterpret_cast<uint8_t*>(data.data()) + 8, 40);
  BatchHeader h;
  std::string err;
  EXPECT_FALSE(ParseBatchHeader(AsBytes(data).subspan(0, 52), 0, true, &h, &err));
  EXPECT_FALSE(err.empty());
}

TEST(BatchTest, ControlRecordErrors) {
  Record r;
  ControlRecord c;
  std::string err;
  std::string k = Hex("00 00 00");
  r.key = AsBytes(k);
  EXPECT_FALSE(ParseControlRecord(r, &c, &err));
  std::string k2 = Hex("00 00 00 00"), v2 = Hex("00 00 00");
  r.key = AsBytes(k2);
  r.value = AsBytes(v2);
  EXPECT_FALSE(ParseControlRecord(r, &c, &err));  // ABORT with a short value
  std::string k3 = Hex("00 00 00 09");
  r.key = AsBytes(k3);
  ASSERT_TRUE(ParseControlRecord(r, &c, &err));
  EXPECT_EQ(c.type, ControlType::kUnknown);
  EXPECT_EQ(c.raw_type, 9);
}

TEST(BatchTest, LegacyWrapperRelativeOffsets) {
  // Build a v1 gzip wrapper at offset 10 holding inner messages with relative offsets 0,1,2.
  auto message = [](int magic, int64_t offset, int64_t ts, const std::string& key, const std::string& value,
                    uint8_t attr) {
    std::string body;
    body.push_back(char(magic));
    body.push_back(char(attr));
    if (magic == 1) PutBE64(&body, uint64_t(ts));
    if (key.empty())
      PutBE32(&body, uint32_t(-1));
    else {
      PutBE32(&body, uint32_t(key.size()));
      body += key;
    }
    PutBE32(&body, uint32_t(value.size()));
    body += value;
    std::string e;
    PutBE64(&e, uint64_t(offset));
    PutBE32(&e, uint32_t(body.size() + 4));
    PutBE32(&e, Crc32(AsBytes(body)));
    return e + body;
  };
  std::string inner =
      message(1, 0, 100, "a", "1", 0) + message(1, 1, 101, "b", "2", 0) + message(1, 2, 102, "c", "3", 0);
  std::string gz;
  Compress(Compression::kGzip, AsBytes(inner), 1, &gz);
  std::string wrapper = message(1, 10, 102, "", gz, 0x01);
  Decoded d;
  ReadAll(wrapper, &d);
  EXPECT_TRUE(d.sink.problems.empty()) << Problems(d.sink);
  ASSERT_EQ(d.records.size(), 1u);
  ASSERT_EQ(d.records[0].size(), 3u);
  EXPECT_EQ(d.records[0][0].offset, 8);
  EXPECT_EQ(d.records[0][2].offset, 10);
  EXPECT_EQ(d.headers[0].base_offset, 8);
  EXPECT_TRUE(d.headers[0].base_offset_known);
  EXPECT_EQ(d.headers[0].record_count, 3);
  EXPECT_EQ(d.records[0][1].timestamp, 101);
  // Offsets wrap as Java longs do (found by batch_fuzz under UBSan): an inner offset near
  // Long.MIN_VALUE under a positive wrapper offset.
  std::string far = message(1, INT64_MIN + 1, 100, "a", "1", 0);
  std::string gz_far;
  Compress(Compression::kGzip, AsBytes(far), 1, &gz_far);
  Decoded w;
  ReadAll(message(1, 16, 100, "", gz_far, 0x01), &w);
  ASSERT_EQ(w.records.size(), 1u);
  ASSERT_EQ(w.records[0].size(), 1u);
  EXPECT_EQ(w.records[0][0].offset, 16);  // (16 - (MIN + 1)) + (MIN + 1), wrapping
  // LogAppendTime wrapper: every inner record reports the wrapper timestamp.
  Decoded la;
  ReadAll(message(1, 10, 555, "", gz, 0x09), &la);
  ASSERT_EQ(la.records[0].size(), 3u);
  EXPECT_EQ(la.records[0][0].timestamp, 555);
  // W == 0: inner offsets stand as they are.
  Decoded z;
  ReadAll(message(1, 0, 102, "", gz, 0x01), &z);
  ASSERT_EQ(z.records[0].size(), 3u);
  EXPECT_EQ(z.records[0][2].offset, 2);
  // W < L is invalid.
  std::string inner2 = message(1, 0, 1, "a", "1", 0) + message(1, 5, 2, "b", "2", 0);
  Compress(Compression::kGzip, AsBytes(inner2), 1, &gz);
  Decoded bad;
  ReadAll(message(1, 3, 2, "", gz, 0x01), &bad);
  EXPECT_FALSE(bad.decoded_ok[0]);
  EXPECT_TRUE(HasProblem(bad.sink, "legacy-wrapper", 0)) << Problems(bad.sink);
  // v0 wrapper: absolute inner offsets; KAFKA-4298 v0 inside v1 uses the v1 rule and ts -1.
  std::string inner0 = message(0, 7, 0, "a", "1", 0) + message(0, 8, 0, "b", "2", 0);
  Compress(Compression::kGzip, AsBytes(inner0), 0, &gz);
  Decoded v0;
  ReadAll(message(0, 8, 0, "", gz, 0x01), &v0);
  ASSERT_EQ(v0.records[0].size(), 2u);
  EXPECT_EQ(v0.records[0][0].offset, 7);
  std::string inner4298 = message(0, 0, 0, "a", "1", 0) + message(0, 1, 0, "b", "2", 0);
  Compress(Compression::kSnappy, AsBytes(inner4298), 1, &gz);
  Decoded k4298;
  ReadAll(message(1, 21, 50, "", gz, 0x02), &k4298);
  EXPECT_TRUE(k4298.sink.problems.empty()) << Problems(k4298.sink);
  ASSERT_EQ(k4298.records[0].size(), 2u);
  EXPECT_EQ(k4298.records[0][0].offset, 20);
  EXPECT_EQ(k4298.records[0][0].timestamp, -1);
  EXPECT_EQ(k4298.records[0][0].magic, 0);
  // Inner CRC damage is reported per record.
  std::string inner_bad = message(1, 0, 100, "a", "1", 0);
  inner_bad[inner_bad.size() - 1] ^= 1;
  Compress(Compression::kGzip, AsBytes(inner_bad), 1, &gz);
  Decoded ib;
  ReadAll(message(1, 0, 100, "", gz, 0x01), &ib);
  ASSERT_EQ(ib.records[0].size(), 1u);
  EXPECT_FALSE(ib.records[0][0].legacy_crc_valid);
  bool crc_reported = false;
  for (auto& p : ib.sink.problems) crc_reported |= p.check == "record-crc";
  EXPECT_TRUE(crc_reported);
  // A null wrapper value and zstd in a legacy wrapper are invalid.
  std::string nullv = message(1, 0, 1, "", "", 0x01);
  // Turn the empty value into a null one (length -1) and fix the CRC.
  StoreBE32(reinterpret_cast<uint8_t*>(nullv.data()) + nullv.size() - 4, uint32_t(-1));
  StoreBE32(reinterpret_cast<uint8_t*>(nullv.data()) + 12, Crc32(AsBytes(nullv).subspan(16)));
  Decoded nv;
  ReadAll(nullv, &nv);
  EXPECT_TRUE(HasProblem(nv.sink, "legacy-wrapper", 12 + 18)) << Problems(nv.sink);
  Decoded zs;
  ReadAll(message(1, 0, 1, "", "xx", 0x04), &zs);
  EXPECT_TRUE(HasProblem(zs.sink, "unknown-codec", 17)) << Problems(zs.sink);
}

}  // namespace
}  // namespace klf
