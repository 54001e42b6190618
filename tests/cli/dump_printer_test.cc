// The dump printers on the byte examples of the spec (kafka-on-disk-format.md §3.4, §4.6), compared
// with the lines kafka-dump-log.sh prints for them (dump-log-segments.md §3.1, §3.2) and with the
// JSON shape of cli.md.
#include "cli/dump_printer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/output.h"
#include "segment_reader/batch.h"
#include "segment_reader/layout.h"
#include "segment_writer/batch_builder.h"

namespace klf::cli {
namespace {

// "0000: 00 00 ..." lines of the spec -> bytes.
std::string FromHexDump(const std::string& dump) {
  std::string out;
  std::istringstream in(dump);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    std::istringstream words(line.substr(colon + 1));
    std::string w;
    while (words >> w) out.push_back(char(std::stoi(w, nullptr, 16)));
  }
  return out;
}

// §4.6 (a): two records, magic 2, CreateTime, no producer.
const char* kV2Plain =
    "0000: 00 00 00 00 00 00 00 00 00 00 00 55 ff ff ff ff\n"
    "0010: 02 e5 8c f1 ff 00 00 00 00 00 01 00 00 00 00 00\n"
    "0020: 04 54 c3 00 00 00 00 00 04 54 c3 ff ff ff ff ff\n"
    "0030: ff ff ff ff ff ff ff ff ff 00 00 00 02 20 00 00\n"
    "0040: 00 08 6b 65 79 31 0c 76 61 6c 75 65 31 00 24 00\n"
    "0050: e1 bf 22 02 08 6b 65 79 32 0c 76 61 6c 75 65 32\n"
    "0060: 00\n";
// §4.6 (b): COMMIT marker, base offset 10, PLE 7, producer 98323/99, coordinator epoch 100.
const char* kCommit =
    "0000: 00 00 00 00 00 00 00 0a 00 00 00 42 00 00 00 07\n"
    "0010: 02 7a 94 e4 69 00 30 00 00 00 00 00 00 01 8b cf\n"
    "0020: e5 68 00 00 00 01 8b cf e5 68 00 00 00 00 00 00\n"
    "0030: 01 80 13 00 63 ff ff ff ff 00 00 00 01 20 00 00\n"
    "0040: 00 08 00 00 00 01 0c 00 00 00 00 00 64 00\n";
// §4.6 (c): empty batch kept by the cleaner.
const char* kEmpty =
    "0000: 00 00 00 00 00 00 00 03 00 00 00 31 00 00 01 25\n"
    "0010: 02 55 58 11 48 00 00 00 00 00 01 ff ff ff ff ff\n"
    "0020: ff ff ff 00 00 00 00 00 00 00 0c 00 00 00 00 00\n"
    "0030: 00 00 17 00 05 00 00 00 0a 00 00 00 00\n";
// §4.6 (d): tombstone with a delete horizon.
const char* kHorizon =
    "0000: 00 00 00 00 00 00 00 14 00 00 00 3c ff ff ff ff\n"
    "0010: 02 b0 6c a6 c8 00 40 00 00 00 00 00 00 01 8b d5\n"
    "0020: 0b c4 00 00 00 01 8b cf e5 68 00 ff ff ff ff ff\n"
    "0030: ff ff ff ff ff ff ff ff ff 00 00 00 01 14 00 ff\n"
    "0040: ef b2 52 00 02 6b 01 00\n";
// §3.4: magic 1 message with timestamp 283843, and the first magic 0 message.
const char* kV1 =
    "0000: 00 00 00 00 00 00 00 00 00 00 00 20 06 85 b3 64\n"
    "0010: 01 00 00 00 00 00 00 04 54 c3 00 00 00 04 6b 65\n"
    "0020: 79 31 00 00 00 06 76 61 6c 75 65 31\n";
const char* kV0 =
    "0000: 00 00 00 00 00 00 00 00 00 00 00 18 75 f0 f4 1d\n"
    "0010: 00 00 00 00 00 04 6b 65 79 31 00 00 00 06 76 61\n"
    "0020: 6c 75 65 31\n";

// Prints every entry of `bytes` (one file) with the given printer kind; records included.
std::string Print(const std::string& bytes, bool json, BytesFormat format = BytesFormat::kText) {
  std::string text;
  {
    Output out(&text);
    auto printer = json ? MakeJsonDumpPrinter(&out, format) : MakeTextDumpPrinter(&out, format);
    CollectingSink sink;
    LogReader reader("x.log", AsBytes(bytes), &sink);
    RecordDecoder decoder;
    BatchView batch;
    FileName name;
    name.kind = FileKind::kLog;
    name.offset = 0;
    printer->BeginFile("x.log", name);
    while (reader.Next(&batch)) {
      EXPECT_TRUE(decoder.Decode(batch, "x.log", &sink));
      printer->Batch(decoder.header(), &decoder);
    }
    EXPECT_TRUE(sink.problems.empty()) << sink.problems[0].message;
  }
  return text;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

TEST(DumpTextTest, BatchAndRecordLinesAreKafkaDumpLogs) {
  auto lines = Lines(Print(FromHexDump(kV2Plain), false));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "Dumping x.log");
  EXPECT_EQ(lines[1], "Log starting offset: 0");
  // dump-log-segments.md §3.1, first example.
  EXPECT_EQ(lines[2],
            "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
            "partitionLeaderEpoch: -1 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
            "position: 0 CreateTime: 283843 size: 97 magic: 2 compresscodec: none crc: 3851219455 isvalid: true");
  // §3.2, first example.
  EXPECT_EQ(
      lines[3],
      "| offset: 0 CreateTime: 283843 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] key: key1 payload: value1");
  EXPECT_EQ(
      lines[4],
      "| offset: 1 CreateTime: 1234 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] key: key2 payload: value2");
}

TEST(DumpTextTest, ControlEmptyAndLegacyLines) {
  auto commit = Lines(Print(FromHexDump(kCommit), false));
  ASSERT_EQ(commit.size(), 4u);
  EXPECT_EQ(
      commit[2],
      "baseOffset: 10 lastOffset: 10 count: 1 baseSequence: -1 lastSequence: -1 producerId: 98323 producerEpoch: 99 "
      "partitionLeaderEpoch: 7 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty "
      "position: 0 CreateTime: 1700000000000 size: 78 magic: 2 compresscodec: none crc: 2056578153 isvalid: true");
  EXPECT_EQ(commit[3],
            "| offset: 10 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
            "endTxnMarker: COMMIT coordinatorEpoch: 100");

  auto empty = Lines(Print(FromHexDump(kEmpty), false));
  ASSERT_EQ(empty.size(), 3u);
  EXPECT_EQ(empty[2],
            "baseOffset: 3 lastOffset: 4 count: 0 baseSequence: 10 lastSequence: 11 producerId: 23 producerEpoch: 5 "
            "partitionLeaderEpoch: 293 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
            "position: 0 CreateTime: 12 size: 61 magic: 2 compresscodec: none crc: 1431834952 isvalid: true");

  auto horizon = Lines(Print(FromHexDump(kHorizon), false));
  ASSERT_EQ(horizon.size(), 4u);
  EXPECT_NE(horizon[2].find(" deleteHorizonMs: OptionalLong[1700086400000] "), std::string::npos) << horizon[2];
  EXPECT_NE(horizon[2].find(" CreateTime: 1700000000000 "), std::string::npos) << horizon[2];
  EXPECT_EQ(horizon[3],
            "| offset: 20 CreateTime: 1700000000000 keySize: 1 valueSize: -1 sequence: -1 headerKeys: [] key: k "
            "payload: null");

  // Legacy lines: Kafka's format without the stray '}' after the CRC (§3.2), plus key and payload.
  auto v1 = Lines(Print(FromHexDump(kV1), false));
  ASSERT_EQ(v1.size(), 4u);
  EXPECT_EQ(
      v1[2],
      "offset: 0 position: 0 CreateTime: 283843 size: 44 magic: 1 compresscodec: none crc: 109425508 isvalid: true");
  EXPECT_EQ(
      v1[3],
      "| offset: 0 CreateTime: 283843 keySize: 4 valueSize: 6 isValid: true crc: 109425508 key: key1 payload: value1");
  auto v0 = Lines(Print(FromHexDump(kV0), false));
  ASSERT_EQ(v0.size(), 4u);
  EXPECT_EQ(
      v0[2],
      "offset: 0 position: 0 NoTimestampType: -1 size: 36 magic: 0 compresscodec: none crc: 1978725405 isvalid: true");
}

TEST(DumpJsonTest, FieldsOfCliMdWithNullsForWhatAMagicLacks) {
  auto v2 = nlohmann::json::parse(Lines(Print(FromHexDump(kV2Plain), true)).at(0));
  EXPECT_EQ(v2["file"], "x.log");
  EXPECT_EQ(v2["type"], "batch");
  for (const char* k : {"position",
                        "baseOffset",
                        "lastOffset",
                        "magic",
                        "compression",
                        "sizeInBytes",
                        "crc",
                        "crcValid",
                        "timestampType",
                        "baseTimestamp",
                        "maxTimestamp",
                        "deleteHorizonMs",
                        "partitionLeaderEpoch",
                        "producerId",
                        "producerEpoch",
                        "baseSequence",
                        "isTransactional",
                        "isControl",
                        "recordCount",
                        "records"}) {
    EXPECT_TRUE(v2.contains(k)) << k;
  }
  EXPECT_EQ(v2["crc"], 3851219455u);
  EXPECT_EQ(v2["baseTimestamp"], 283843);
  EXPECT_EQ(v2["maxTimestamp"], 283843);
  EXPECT_TRUE(v2["deleteHorizonMs"].is_null());
  ASSERT_EQ(v2["records"].size(), 2u);
  EXPECT_EQ(v2["records"][1],
            nlohmann::json::parse(
                R"({"offset":1,"timestamp":1234,"key":"key2","value":"value2","sequence":-1,"headers":[]})"));

  auto commit = nlohmann::json::parse(Lines(Print(FromHexDump(kCommit), true)).at(0));
  EXPECT_EQ(commit["records"][0]["control"]["type"], "COMMIT");
  EXPECT_EQ(commit["records"][0]["control"]["coordinatorEpoch"], 100);
  EXPECT_EQ(commit["producerId"], 98323);

  auto horizon = nlohmann::json::parse(Lines(Print(FromHexDump(kHorizon), true)).at(0));
  EXPECT_EQ(horizon["deleteHorizonMs"], 1700086400000);
  EXPECT_TRUE(horizon["records"][0]["value"].is_null());

  auto v1 = nlohmann::json::parse(Lines(Print(FromHexDump(kV1), true)).at(0));
  EXPECT_EQ(v1["timestampType"], "CreateTime");
  EXPECT_EQ(v1["maxTimestamp"], 283843);
  for (const char* k : {"producerId", "producerEpoch", "baseSequence", "partitionLeaderEpoch", "baseTimestamp",
                        "deleteHorizonMs", "isTransactional", "isControl", "recordCount"}) {
    EXPECT_TRUE(v1[k].is_null()) << k;
  }
  EXPECT_EQ(v1["records"][0]["crc"], 109425508);
  auto v0 = nlohmann::json::parse(Lines(Print(FromHexDump(kV0), true)).at(0));
  EXPECT_TRUE(v0["timestampType"].is_null());
  EXPECT_TRUE(v0["maxTimestamp"].is_null());
  EXPECT_TRUE(v0["records"][0]["timestamp"].is_null());
}

// Issue 15: a record object is written into one reservation of its worst-case size. The record
// below (300 000 empty headers, empty key and null value: each header renders as the 24 characters
// `,{"key":"","value":null}`) once overran that reservation by 4 bytes per header. Every --bytes
// mode, text and JSON; the sanitizer build catches an overrun however small.
TEST(DumpJsonTest, RecordWithManyEmptyHeadersInEveryBytesMode) {
  constexpr size_t kHeaders = 300000;
  std::vector<RecordHeader> headers(kHeaders);  // empty keys, null values
  RecordInput r;
  r.key = Bytes();
  r.headers = headers;
  std::string bytes, error;
  BuiltBatch built;
  ASSERT_TRUE(AppendV2Batch(V2BatchOptions(), std::span<const RecordInput>(&r, 1), &bytes, &built, &error)) << error;
  for (BytesFormat format : {BytesFormat::kText, BytesFormat::kHex, BytesFormat::kBase64}) {
    auto batch = nlohmann::json::parse(Lines(Print(bytes, true, format)).at(0));
    const auto& record = batch["records"].at(0);
    EXPECT_EQ(record["key"], "");
    EXPECT_TRUE(record["value"].is_null());
    ASSERT_EQ(record["headers"].size(), kHeaders);
    EXPECT_EQ(record["headers"][kHeaders - 1], nlohmann::json::parse(R"({"key":"","value":null})"));
    auto text = Lines(Print(bytes, false, format));
    ASSERT_EQ(text.size(), 4u);
    std::string keys = "headerKeys: [" + std::string(kHeaders - 1, ',') + "]";
    EXPECT_NE(text[3].find(keys), std::string::npos);
  }
}

// Keys, values and header values larger than a reservation are rendered slice by slice: the same
// JSON, whatever the mode.
TEST(DumpJsonTest, LargeKeyValueAndHeaderValue) {
  std::string big(300000, 'v');
  for (size_t i = 0; i < big.size(); i += 977) big[i] = '\xc3', big[i + 1] = '\xa9';  // UTF-8 across slices
  std::vector<RecordHeader> headers(2);
  headers[0].key = AsBytes(big);
  headers[1].value = AsBytes(big);
  RecordInput r;
  r.key = AsBytes(big);
  r.value = AsBytes(big);
  r.headers = headers;
  std::string bytes, error;
  BuiltBatch built;
  ASSERT_TRUE(AppendV2Batch(V2BatchOptions(), std::span<const RecordInput>(&r, 1), &bytes, &built, &error)) << error;
  for (BytesFormat format : {BytesFormat::kText, BytesFormat::kHex, BytesFormat::kBase64}) {
    auto batch = nlohmann::json::parse(Lines(Print(bytes, true, format)).at(0));
    const auto& record = batch["records"].at(0);
    const std::string expected = FormatBytes(AsBytes(big), format);
    EXPECT_EQ(record["key"], expected);
    EXPECT_EQ(record["value"], expected);
    // Header keys are strings in Kafka: text whatever --bytes says (cli.md).
    EXPECT_EQ(record["headers"][0]["key"], FormatBytes(AsBytes(big), BytesFormat::kText));
    EXPECT_TRUE(record["headers"][0]["value"].is_null());
    EXPECT_EQ(record["headers"][1]["key"], "");
    EXPECT_EQ(record["headers"][1]["value"], expected);
  }
}

}  // namespace
}  // namespace klf::cli
