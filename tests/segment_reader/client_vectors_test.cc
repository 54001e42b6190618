// Byte vectors collected from other Kafka clients' test suites and network captures
// (fixtures/client-vectors/vectors.json): each decodes as its `expected` says, and as the independent
// walker (`kwalk_check`) counted: batches, records, magic and codec mix, CRC errors, markers,
// tombstones, truncated tails, and the vectors that must fail.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "segment_reader/batch.h"

namespace klf {
namespace {

using nlohmann::json;

std::string VectorsDir() { return std::string(KLF_FIXTURES_DIR) + "/client-vectors"; }

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

struct OwnedRecord {
  int64_t offset = 0, timestamp = -1;
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  int8_t magic = 2;
  uint32_t legacy_crc = 0;
  bool legacy_crc_valid = true;
  uint32_t size_in_bytes = 0;
  int32_t offset_delta = 0;
  int64_t timestamp_delta = 0;
};

struct Walk {
  int batches = 0, record_count = 0, crc_errors = 0, txn = 0, control = 0, commit = 0, abort = 0, tombstones = 0,
      headers_records = 0, inner_wrappers = 0;
  std::map<std::string, int> magic, codec, ts_type;
  uint64_t truncated_tail = 0;
  std::optional<int64_t> first_offset, last_offset;
  std::vector<std::string> errors;  // error problems other than batch-crc
  std::vector<std::string> snappy_framing;
  std::vector<BatchHeader> headers;
  std::vector<std::vector<OwnedRecord>> records;
  std::vector<OwnedRecord> all;
  uint64_t valid_bytes = 0;
  std::string kafka_rejects;  // check expected where Kafka throws but the walker did not
};

std::optional<std::string> Own(const std::optional<Bytes>& b) {
  if (!b) return std::nullopt;
  return std::string(AsStringView(*b));
}

Walk WalkLog(const std::string& data) {
  Walk w;
  CollectingSink sink;
  LogReader reader("vector", AsBytes(data), &sink);
  RecordDecoder decoder;
  BatchView view;
  while (reader.Next(&view)) {
    bool ok = decoder.Decode(view, "vector", &sink);
    const BatchHeader& h = decoder.header();
    w.batches++;
    w.magic[std::to_string(h.magic)]++;
    w.codec[CompressionName(h.compression)]++;
    if (h.timestamp_type != TimestampType::kNoTimestampType) w.ts_type[TimestampTypeName(h.timestamp_type)]++;
    if (!h.crc_valid) w.crc_errors++;
    if (h.is_transactional) w.txn++;
    if (h.is_control) w.control++;
    if (h.magic < 2 && h.compression_id != 0) w.inner_wrappers++;
    if (h.compression == Compression::kSnappy) {
      Bytes section;
      if (h.magic >= 2) {
        section = view.bytes.subspan(kRecordBatchOverhead);
      } else {
        size_t key_at = h.magic == 0 ? 18 : 26;
        int32_t klen = LoadI32(view.bytes.data() + key_at);
        section = view.bytes.subspan(key_at + 4 + (klen > 0 ? klen : 0) + 4);
      }
      static const char kMagic[8] = {'\x82', 'S', 'N', 'A', 'P', 'P', 'Y', 0};
      w.snappy_framing.push_back(section.size() >= 16 && std::memcmp(section.data(), kMagic, 8) == 0 ? "xerial"
                                                                                                     : "raw");
    }
    // The walker reports the offset field of the first entry (a legacy wrapper's is its last offset).
    if (!w.first_offset) w.first_offset = LoadI64(view.bytes.data());
    w.last_offset = h.last_offset;
    std::vector<OwnedRecord> recs;
    for (const Record& r : decoder.records()) {
      OwnedRecord o;
      o.offset = r.offset;
      o.timestamp = r.timestamp;
      o.key = Own(r.key);
      o.value = Own(r.value);
      for (const RecordHeader& rh : decoder.headers(r))
        o.headers.emplace_back(std::string(AsStringView(rh.key)), Own(rh.value));
      o.magic = r.magic;
      o.legacy_crc = r.legacy_crc;
      o.legacy_crc_valid = r.legacy_crc_valid;
      o.size_in_bytes = r.size_in_bytes;
      o.offset_delta = int32_t(r.offset - h.base_offset);
      o.timestamp_delta = r.timestamp - h.base_timestamp;
      w.record_count++;
      if (!r.value) w.tombstones++;
      if (!o.headers.empty()) w.headers_records++;
      if (h.is_control) {
        ControlRecord c;
        std::string err;
        if (ParseControlRecord(r, &c, &err)) {
          w.commit += c.type == ControlType::kCommit;
          w.abort += c.type == ControlType::kAbort;
        }
      }
      recs.push_back(o);
      w.all.push_back(o);
    }
    (void)ok;
    w.headers.push_back(h);
    w.records.push_back(std::move(recs));
  }
  if (reader.end() == LogEnd::kTruncatedTail) w.truncated_tail = reader.trailing_bytes();
  w.valid_bytes = reader.valid_bytes();
  for (const Problem& p : sink.problems) {
    // CRC errors are counted separately; offsets going backwards are not checked by the walker (several
    // vectors concatenate unrelated test batches), so they are not decoding failures here.
    if (p.severity == Severity::kError && p.check != "batch-crc" && p.check != "offset-order") {
      w.errors.push_back(p.check + ": " + p.message);
    }
  }
  return w;
}

// Expected key/value strings are text, hex, or a python expression like 'x' * 100.
bool BytesMatch(const std::optional<std::string>& got, const json& want) {
  if (want.is_null()) return !got.has_value();
  if (!got) return false;
  std::string s = want.get<std::string>();
  if (*got == s) return true;
  if (s.size() > 6 && s[0] == '\'' && s[2] == '\'' && s.find(" * ") == 3) {
    return *got == std::string(size_t(std::stoi(s.substr(6))), s[1]);
  }
  if (s.size() % 2 == 0 && s.find_first_not_of("0123456789abcdef") == std::string::npos) return *got == FromHex(s);
  return false;
}

std::string Show(const std::optional<std::string>& s) { return s ? "\"" + *s + "\"" : "null"; }

int64_t IntOf(const json& j) {
  if (j.is_number()) return j.get<int64_t>();
  std::string s = j.get<std::string>();  // "0x0020 (control)"
  return std::stoll(s.substr(0, s.find(' ')), nullptr, 0);
}

void CheckRecords(const std::vector<OwnedRecord>& got, const json& want, bool check_offsets) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    const json& e = want[i];
    const OwnedRecord& r = got[i];
    if (e.contains("key")) {
      EXPECT_TRUE(BytesMatch(r.key, e["key"])) << Show(r.key) << " vs " << e["key"];
    }
    if (e.contains("value")) {
      EXPECT_TRUE(BytesMatch(r.value, e["value"])) << Show(r.value) << " vs " << e["value"];
    }
    if (e.contains("offset_delta")) {
      EXPECT_EQ(r.offset_delta, e["offset_delta"].get<int>());
    }
    if (e.contains("timestamp_delta_ms")) {
      EXPECT_EQ(r.timestamp_delta, e["timestamp_delta_ms"].get<int64_t>());
    }
    if (e.contains("timestamp_delta")) {
      EXPECT_EQ(r.timestamp_delta, e["timestamp_delta"].get<int64_t>());
    }
    if (check_offsets && e.contains("offset")) {
      EXPECT_EQ(r.offset, e["offset"].get<int64_t>());
    }
    if (e.contains("timestamp")) {
      EXPECT_EQ(r.timestamp, e["timestamp"].get<int64_t>());
    }
    if (e.contains("crc")) {
      EXPECT_EQ(int32_t(r.legacy_crc), int32_t(e["crc"].get<int64_t>()));
    }
    if (e.contains("magicByte")) {
      EXPECT_EQ(r.magic, e["magicByte"].get<int>());
    }
    if (e.contains("size")) {
      EXPECT_EQ(r.size_in_bytes, e["size"].get<uint32_t>() + 12);
    }
    if (e.contains("headers")) {
      const json& hs = e["headers"];
      ASSERT_EQ(r.headers.size(), hs.size());
      if (hs.is_object()) {
        size_t j = 0;
        for (auto it = hs.begin(); it != hs.end(); ++it, ++j) {
          EXPECT_EQ(r.headers[j].first, it.key());
          EXPECT_TRUE(BytesMatch(r.headers[j].second, it.value()));
        }
      } else {
        for (size_t j = 0; j < hs.size(); ++j) {
          EXPECT_TRUE(BytesMatch(r.headers[j].first, hs[j][0])) << r.headers[j].first;
          EXPECT_TRUE(BytesMatch(r.headers[j].second, hs[j][1]));
        }
      }
    }
  }
}

// Batch-level fields, under the various names the source test suites use.
void CheckBatchFields(const BatchHeader& h, const json& e) {
  auto has = [&](const char* k) { return e.contains(k) && !e[k].is_null(); };
  for (const char* k : {"base_offset", "firstOffset"})
    if (has(k)) {
      EXPECT_EQ(h.base_offset, e[k].get<int64_t>()) << k;
    }
  if (has("batch_length")) {
    EXPECT_EQ(h.size_in_bytes - 12, e["batch_length"].get<uint32_t>());
  }
  for (const char* k : {"partition_leader_epoch", "partitionLeaderEpoch"})
    if (has(k)) {
      EXPECT_EQ(h.partition_leader_epoch, e[k].get<int32_t>()) << k;
    }
  if (has("crc")) {
    EXPECT_EQ(h.crc, uint32_t(std::stoul(e["crc"].get<std::string>(), nullptr, 16)));
  }
  if (has("attributes")) {
    EXPECT_EQ(h.attributes, IntOf(e["attributes"]));
  }
  for (const char* k : {"first_timestamp_ms", "first_timestamp", "firstTimestamp"})
    if (has(k)) {
      EXPECT_EQ(h.base_timestamp, e[k].get<int64_t>()) << k;
    }
  for (const char* k : {"max_timestamp_ms", "max_timestamp", "maxTimestamp"})
    if (has(k)) {
      EXPECT_EQ(h.max_timestamp, e[k].get<int64_t>()) << k;
    }
  for (const char* k : {"producer_id", "producerId"})
    if (has(k)) {
      EXPECT_EQ(h.producer_id, e[k].get<int64_t>()) << k;
    }
  for (const char* k : {"producer_epoch", "producerEpoch"})
    if (has(k)) {
      EXPECT_EQ(h.producer_epoch, e[k].get<int>()) << k;
    }
  for (const char* k : {"base_sequence", "firstSequence"})
    if (has(k)) {
      EXPECT_EQ(h.base_sequence, e[k].get<int32_t>()) << k;
    }
  for (const char* k : {"last_offset_delta", "lastOffsetDelta"})
    if (has(k)) {
      EXPECT_EQ(h.last_offset_delta, e[k].get<int32_t>()) << k;
    }
  if (has("record_count")) {
    EXPECT_EQ(h.record_count, e["record_count"].get<int32_t>());
  }
  for (const char* k : {"is_transactional", "inTransaction"})
    if (has(k)) {
      EXPECT_EQ(h.is_transactional, e[k].get<bool>()) << k;
    }
  for (const char* k : {"control", "isControlBatch", "is_control_batch"})
    if (has(k)) {
      EXPECT_EQ(h.is_control, e[k].get<bool>()) << k;
    }
  if (has("timestampType")) {
    EXPECT_EQ(int(h.timestamp_type), e["timestampType"].get<int>());
  }
  if (has("timestamp_type") && e["timestamp_type"].is_string()) {
    EXPECT_EQ(TimestampTypeName(h.timestamp_type), e["timestamp_type"].get<std::string>());
  }
}

void CheckKwalk(const Walk& w, const json& k) {
  EXPECT_EQ(w.batches, k["batches"].get<int>());
  EXPECT_EQ(w.crc_errors, k["crc_errors"].get<int>());
  EXPECT_EQ(w.truncated_tail, k["truncated_tail_bytes"].get<uint64_t>());
  bool walker_failed = !k["parse_errors"].empty();
  if (!w.kafka_rejects.empty()) {
    // Kafka rejects what the lenient walker accepted: we must report exactly that check.
    ASSERT_EQ(w.errors.size(), 1u);
    EXPECT_EQ(w.errors[0].substr(0, w.kafka_rejects.size() + 1), w.kafka_rejects + ":") << w.errors[0];
    return;
  }
  if (walker_failed) {
    EXPECT_FALSE(w.errors.empty()) << "the walker failed to parse this vector: " << k["parse_errors"];
    return;
  }
  for (const auto& e : w.errors) ADD_FAILURE() << e;
  EXPECT_EQ(w.record_count, k["records"].get<int>());
  for (auto& [name, field] : std::vector<std::pair<const char*, const std::map<std::string, int>*>>{
           {"magic", &w.magic}, {"codec", &w.codec}, {"ts_type", &w.ts_type}}) {
    std::map<std::string, int> want;
    for (auto it = k[name].begin(); it != k[name].end(); ++it) want[it.key()] = it.value().get<int>();
    EXPECT_EQ(*field, want) << name;
  }
  EXPECT_EQ(w.txn, k["transactional_batches"].get<int>());
  EXPECT_EQ(w.control, k["control_batches"].get<int>());
  EXPECT_EQ(w.commit, k["commit_markers"].get<int>());
  EXPECT_EQ(w.abort, k["abort_markers"].get<int>());
  EXPECT_EQ(w.tombstones, k["tombstones"].get<int>());
  EXPECT_EQ(w.headers_records, k["headers_records"].get<int>());
  EXPECT_EQ(w.inner_wrappers, k["inner_wrappers"].get<int>());
  if (k["first_offset"].is_null()) {
    EXPECT_FALSE(w.first_offset.has_value());
  } else
    EXPECT_EQ(w.first_offset, k["first_offset"].get<int64_t>());
  if (k["last_offset"].is_null()) {
    EXPECT_FALSE(w.last_offset.has_value());
  } else
    EXPECT_EQ(w.last_offset, k["last_offset"].get<int64_t>());
  std::vector<std::string> framing = k["snappy_framing"].get<std::vector<std::string>>();
  std::vector<std::string> got = w.snappy_framing;
  std::sort(framing.begin(), framing.end());
  framing.erase(std::unique(framing.begin(), framing.end()), framing.end());
  std::sort(got.begin(), got.end());
  got.erase(std::unique(got.begin(), got.end()), got.end());
  EXPECT_EQ(got, framing);
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

void CheckExpected(const Walk& w, const json& v, const std::string& data) {
  const json& e = v["expected"];
  auto has = [&](const char* k) { return e.contains(k) && !e[k].is_null(); };
  if (has("error")) {
    EXPECT_FALSE(w.errors.empty() && w.batches > 0) << "must be rejected: " << e["error"];
    return;
  }
  if (w.batches == 0) return;  // e.g. a fetch response holding only a partial batch
  if (!w.kafka_rejects.empty()) return;
  CheckBatchFields(w.headers[0], e);
  if (has("records") && e["records"].is_array()) {
    bool one_batch = w.batches == 1;
    CheckRecords(one_batch ? w.records[0] : w.all, e["records"], true);
  }
  if (has("records") && e["records"].is_number()) {
    EXPECT_EQ(int(w.all.size()), e["records"].get<int>());
  }
  if (has("messages_in_order")) CheckRecords(w.all, e["messages_in_order"], true);
  if (has("messages") && e["messages"].is_number()) {
    EXPECT_EQ(int(w.all.size()), e["messages"].get<int>());
  }
  // Vectors 76 and 78 carry the `messages` of the single-message test (topic gzip_test/snappy_test)
  // while their bytes are the batch test's (fetch_partition.topic *_batch_test): the expectation
  // belongs to other bytes, so only the walker's counts apply to them.
  bool messages_for_these_bytes =
      !(has("topic") && has("fetch_partition") && e["topic"] != e["fetch_partition"]["topic"]);
  if (has("messages") && e["messages"].is_array() && messages_for_these_bytes) {
    // Some clients' tests list only the messages at or after the fetch offset: each listed message
    // must be one of ours, in order (the exact count is the walker's).
    std::vector<OwnedRecord> picked;
    size_t from = 0;
    for (const json& m : e["messages"]) {
      size_t j = from;
      if (m.contains("offset")) {
        while (j < w.all.size() && w.all[j].offset != m["offset"].get<int64_t>()) ++j;
      }
      ASSERT_LT(j, w.all.size()) << "message not found: " << m;
      picked.push_back(w.all[j]);
      from = j + 1;
    }
    CheckRecords(picked, e["messages"], true);
  }
  if (has("first")) {
    const json& f = e["first"];
    const OwnedRecord& r = w.all.at(0);
    EXPECT_TRUE(BytesMatch(r.value, f["value"]));
    EXPECT_TRUE(BytesMatch(r.key, f["key"]));
    if (f["timestamp"].is_null()) {
      EXPECT_EQ(r.timestamp, -1);
    } else
      EXPECT_EQ(r.timestamp, f["timestamp"].get<int64_t>());
    if (f.contains("checksum")) {
      EXPECT_EQ(r.legacy_crc, f["checksum"].get<uint32_t>());
    }
  }
  for (const char* k : {"first_batch", "third_batch", "last_batch"}) {
    if (!has(k) || !e[k].is_object()) continue;
    const json& f = e[k];
    size_t idx = std::string(k) == "first_batch" ? 0 : std::string(k) == "third_batch" ? 2 : w.records.size() - 1;
    ASSERT_LT(idx, w.records.size());
    const auto& recs = w.records[idx];
    if (f.contains("records")) {
      EXPECT_EQ(int(recs.size()), f["records"].get<int>()) << k;
    }
    ASSERT_FALSE(recs.empty());
    if (f.contains("value")) {
      EXPECT_TRUE(BytesMatch(recs[0].value, f["value"])) << k;
    }
    if (f.contains("key")) {
      EXPECT_TRUE(BytesMatch(recs[0].key, f["key"])) << k;
    }
    if (f.contains("timestamp")) {
      EXPECT_EQ(recs[0].timestamp, f["timestamp"].get<int64_t>()) << k;
    }
    if (f.contains("timestamp_type")) {
      EXPECT_EQ(int(w.headers[idx].timestamp_type), f["timestamp_type"].get<int>());
    }
    if (f.contains("headers")) {
      ASSERT_EQ(recs[0].headers.size(), f["headers"].size());
      for (size_t j = 0; j < recs[0].headers.size(); ++j) {
        EXPECT_EQ(recs[0].headers[j].first, f["headers"][j][0].get<std::string>());
        EXPECT_TRUE(BytesMatch(recs[0].headers[j].second, f["headers"][j][1]));
      }
    }
  }
  if (has("valid_bytes")) {
    EXPECT_EQ(w.valid_bytes, e["valid_bytes"].get<uint64_t>());
    // With 4 zero bytes appended (kafka-python's test): same batches, the zeros are a short tail.
    Walk w4 = WalkLog(data + std::string(4, '\0'));
    EXPECT_EQ(w4.batches, w.batches);
    EXPECT_EQ(w4.valid_bytes, e["valid_bytes"].get<uint64_t>());
    EXPECT_EQ(data.size() + 4, e["size_in_bytes_with_4_zero_bytes_appended"].get<uint64_t>());
  }
  if (has("message_count")) {
    EXPECT_EQ(int(w.all.size()), e["message_count"].get<int>());
    std::string values = e["values"].get<std::string>();
    std::string txt = values.find("fetch2") != std::string::npos ? "fetch2.txt" : "fetch1.txt";
    auto lines = Lines(VectorsDir() + "/kafka-rust__kafka-rust/test-data/" + txt);
    ASSERT_GE(lines.size(), w.all.size());
    for (size_t i = 0; i < w.all.size(); ++i) EXPECT_TRUE(BytesMatch(w.all[i].value, lines[i])) << i;
    std::string first = e["first_value"].get<std::string>(), last = e["last_value"].get<std::string>();
    EXPECT_EQ(w.all.front().value->substr(0, first.size()), first);
    EXPECT_EQ(w.all.back().value->substr(0, last.size()), last);
    bool all_valid = true;
    for (const auto& h : w.headers) all_valid &= h.crc_valid;
    EXPECT_EQ(all_valid, e["crc_valid"].get<bool>());
  }
  if (has("abort")) {
    const OwnedRecord& r = w.all.at(0);
    Record rec;
    if (r.key) rec.key = AsBytes(*r.key);
    if (r.value) rec.value = AsBytes(*r.value);
    ControlRecord c;
    std::string err;
    // The value is not an end-transaction marker here (an opaque string): only the key is checked.
    ParseControlRecord(rec, &c, &err);
    EXPECT_EQ(int(c.raw_type), e["control_type"].get<int>());
    EXPECT_EQ(c.key_version, e["control_version"].get<int>());
    EXPECT_EQ(c.type == ControlType::kAbort, e["abort"].get<bool>());
    EXPECT_EQ(c.type == ControlType::kCommit, e["commit"].get<bool>());
  }
  // Legacy message bodies (layout message_body_from_crc).
  if (v["layout"] == "message_body_from_crc") {
    const BatchHeader& h = w.headers[0];
    if (has("codec")) {
      EXPECT_EQ(CompressionName(h.compression), e["codec"].get<std::string>());
    }
    if (has("version")) {
      EXPECT_EQ(h.magic, e["version"].get<int>());
    }
    if (has("timestamp_ms")) {
      EXPECT_EQ(h.max_timestamp, e["timestamp_ms"].get<int64_t>());
    }
    if (has("inner_message_set_count")) {
      EXPECT_EQ(int(w.all.size()), e["inner_message_set_count"].get<int>());
    }
    if (h.compression_id == 0) {
      ASSERT_EQ(w.all.size(), 1u);
      if (e.contains("key")) {
        EXPECT_TRUE(BytesMatch(w.all[0].key, e["key"]));
      }
      if (e.contains("value") && e["value"].is_null()) {
        EXPECT_FALSE(w.all[0].value.has_value());
      }
    }
  }
}

std::vector<json> Vectors() {
  std::ifstream in(VectorsDir() + "/vectors.json");
  json all = json::parse(in);
  return all.get<std::vector<json>>();
}

TEST(ClientVectorsTest, AllPresent) { EXPECT_EQ(Vectors().size(), 79u); }

TEST(ClientVectorsTest, EveryVectorDecodesAsExpected) {
  auto vectors = Vectors();
  int checked = 0;
  for (size_t i = 0; i < vectors.size(); ++i) {
    const json& v = vectors[i];
    SCOPED_TRACE("vector " + std::to_string(i) + ": " + v["description"].get<std::string>().substr(0, 100));
    std::string data = FromHex(v["hex"].get<std::string>());
    ASSERT_EQ(data.size(), v["length"].get<size_t>());
    std::string layout = v["layout"];
    if (layout == "v2_control_record_key_value") {
      const json& e = v["expected"];
      std::string key = FromHex(e["key_hex"]), value = FromHex(e["value_hex"]);
      ASSERT_EQ(key + value, data);
      Record r;
      r.key = AsBytes(key);
      r.value = AsBytes(value);
      ControlRecord c;
      std::string err;
      std::string type = e["type"];
      if (type.rfind("ABORT", 0) == 0 || type.rfind("COMMIT", 0) == 0) {
        ASSERT_TRUE(ParseControlRecord(r, &c, &err)) << err;
        EXPECT_EQ(c.coordinator_epoch, e["coordinator_epoch"].get<int>());
        EXPECT_EQ(c.value_version, e["value_version"].get<int>());
        EXPECT_EQ(c.key_version, e["key_version"].get<int>());
      } else {
        // Not an end-transaction marker: only the key is parsed, whatever the value.
        ASSERT_TRUE(ParseControlRecord(r, &c, &err)) << err;
      }
      EXPECT_EQ(ControlTypeName(c.type), type.substr(0, type.find(' ')));
      if (c.type == ControlType::kUnknown) {
        EXPECT_NE(type.find(std::to_string(c.raw_type)), std::string::npos);
      }
      ++checked;
      continue;
    }
    if (layout == "message_body_from_crc") {
      // Give the message its log overhead: offset 0 and its size.
      std::string entry;
      PutBE64(&entry, 0);
      PutBE32(&entry, uint32_t(data.size()));
      data = entry + data;
    } else {
      ASSERT_EQ(layout, "log_entries");
    }
    Walk w = WalkLog(data);
    // Kafka's legacy deep iterator (AbstractLegacyRecordBatch.DeepRecordsIterator) throws for these;
    // the walker accepted them.
    if (v["source"].value("test", "") == "emptyGzipMessage" || v["source"].value("test", "") == "emptyLZ4Message") {
      w.kafka_rejects = "legacy-wrapper";  // "Found invalid compressed record set with no inner records"
    }
    if (v["layout"] == "message_body_from_crc" && v["compression"] == "zstd") {
      w.kafka_rejects = "unknown-codec";  // "Invalid wrapper compressionType found in legacy deep record iterator"
    }
    if (v.contains("kwalk_check") && !v["kwalk_check"].is_null()) CheckKwalk(w, v["kwalk_check"]);
    CheckExpected(w, v, data);
    ++checked;
  }
  EXPECT_EQ(checked, 79);
}

}  // namespace
}  // namespace klf
