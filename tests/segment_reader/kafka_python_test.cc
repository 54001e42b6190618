// Every kafka-python fixture (.log written by kafka-python 2.0.2's record builders) decodes to
// exactly what kafka-python itself decodes from it (X.log.expected.json).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "segment_reader/batch.h"
#include "segment_reader/file.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string FixturesDir() { return std::string(KLF_FIXTURES_DIR) + "/kafka-python"; }

std::vector<std::string> LogFiles() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(FixturesDir())) {
    if (e.path().extension() == ".log") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string B64(Bytes b) { return Base64Encode(b); }

TEST(KafkaPythonTest, FixturesPresent) { EXPECT_GE(LogFiles().size(), 7u); }

TEST(KafkaPythonTest, EveryLogDecodesAsKafkaPythonDoes) {
  for (const std::string& path : LogFiles()) {
    SCOPED_TRACE(path);
    std::ifstream in(path + ".expected.json");
    ASSERT_TRUE(in.good());
    json expected = json::parse(in);
    std::string error;
    auto file = MappedFile::Open(path, &error);
    ASSERT_TRUE(file) << error;
    CollectingSink sink;
    LogReader reader(path, file->data(), &sink);
    RecordDecoder decoder;
    BatchView batch;
    size_t i = 0;
    while (reader.Next(&batch)) {
      ASSERT_LT(i, expected.size());
      const json& eb = expected[i];
      SCOPED_TRACE("batch " + std::to_string(i));
      ASSERT_TRUE(decoder.Decode(batch, path, &sink));
      const BatchHeader& h = decoder.header();
      EXPECT_EQ(h.position, eb["position"].get<uint64_t>());
      EXPECT_EQ(h.magic, eb["magic"].get<int>());
      EXPECT_EQ(CompressionName(h.compression), eb["compression"].get<std::string>());
      EXPECT_TRUE(h.crc_valid);
      if (eb.contains("baseOffset")) {
        EXPECT_EQ(h.base_offset, eb["baseOffset"].get<int64_t>());
        EXPECT_EQ(h.last_offset, eb["lastOffset"].get<int64_t>());
        EXPECT_EQ(h.is_transactional, eb["isTransactional"].get<bool>());
        EXPECT_EQ(h.is_control, eb["isControl"].get<bool>());
        EXPECT_EQ(h.producer_id, eb["producerId"].get<int64_t>());
        EXPECT_EQ(h.producer_epoch, eb["producerEpoch"].get<int>());
        EXPECT_EQ(h.crc_valid, eb["crcValid"].get<bool>());
      }
      const json& er = eb["records"];
      ASSERT_EQ(decoder.records().size(), er.size());
      for (size_t k = 0; k < er.size(); ++k) {
        const Record& r = decoder.records()[k];
        const json& e = er[k];
        SCOPED_TRACE("record " + std::to_string(k));
        EXPECT_EQ(r.offset, e["offset"].get<int64_t>());
        if (e["timestamp"].is_null())
          EXPECT_EQ(r.timestamp, kNoTimestamp);
        else
          EXPECT_EQ(r.timestamp, e["timestamp"].get<int64_t>());
        if (e["key"].is_null())
          EXPECT_FALSE(r.key.has_value());
        else {
          ASSERT_TRUE(r.key.has_value());
          EXPECT_EQ(B64(*r.key), e["key"].get<std::string>());
        }
        if (e["value"].is_null())
          EXPECT_FALSE(r.value.has_value());
        else {
          ASSERT_TRUE(r.value.has_value());
          EXPECT_EQ(B64(*r.value), e["value"].get<std::string>());
        }
        const RecordHeaders lazy = decoder.headers(r);
        const std::vector<RecordHeader> hs(lazy.begin(), lazy.end());
        ASSERT_EQ(hs.size(), e["headers"].size());
        for (size_t j = 0; j < hs.size(); ++j) {
          EXPECT_EQ(AsStringView(hs[j].key), e["headers"][j][0].get<std::string>());
          if (e["headers"][j][1].is_null())
            EXPECT_FALSE(hs[j].value.has_value());
          else {
            ASSERT_TRUE(hs[j].value.has_value());
            EXPECT_EQ(B64(*hs[j].value), e["headers"][j][1].get<std::string>());
          }
        }
      }
      ++i;
    }
    EXPECT_EQ(i, expected.size());
    EXPECT_EQ(reader.end(), LogEnd::kEndOfData);
    EXPECT_EQ(reader.valid_bytes(), file->size());
    for (const auto& p : sink.problems) ADD_FAILURE() << p.check << " @" << p.position << ": " << p.message;
  }
}

}  // namespace
}  // namespace klf
