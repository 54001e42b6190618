// segment_writer/txn_log_encoder.h against Kafka's own bytes: kafka4/txn-state/written is a
// __transaction_state-0 partition written with TransactionLog's serializers (keys v0, values v0 and v1
// with the tagged PreviousProducerId / NextProducerId / ClientTransactionVersion, every state, a
// tombstone). Every record is decoded with klf's decoder (segment_reader/internal_topics.h), encoded
// again from the decoded fields, and compared with Kafka's bytes: the key, the value and the whole
// batch (the coordinator's one-record batch with producer fields -1).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "segment_reader/batch.h"
#include "segment_reader/internal_topics.h"
#include "segment_writer/txn_log_encoder.h"
#include "tests/segment_writer/test_util.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

const fs::path kWritten = fs::path(KLF_FIXTURES_DIR) / "kafka4" / "txn-state" / "written" / "__transaction_state-0";

// A TransactionLogValue from the JSON klf's decoder prints (Kafka's JSON converter shape).
TxnLogValue ValueFromJson(int16_t version, const OrderedJson& v) {
  TxnLogValue out;
  out.version = version;
  out.producer_id = v.at("producerId").get<int64_t>();
  out.previous_producer_id = v.value("previousProducerId", int64_t(-1));
  out.next_producer_id = v.value("nextProducerId", int64_t(-1));
  out.producer_epoch = v.at("producerEpoch").get<int16_t>();
  out.transaction_timeout_ms = v.at("transactionTimeoutMs").get<int32_t>();
  out.transaction_status = v.at("transactionStatus").get<int8_t>();
  if (!v.at("transactionPartitions").is_null()) {
    out.partitions.emplace();
    for (const OrderedJson& p : v.at("transactionPartitions"))
      out.partitions->push_back(
          TxnLogPartitions{p.at("topic").get<std::string>(), p.at("partitionIds").get<std::vector<int32_t>>()});
  }
  out.last_update_timestamp_ms = v.at("transactionLastUpdateTimestampMs").get<int64_t>();
  out.start_timestamp_ms = v.at("transactionStartTimestampMs").get<int64_t>();
  out.client_transaction_version = v.value("clientTransactionVersion", int16_t(0));
  return out;
}

TEST(TxnLogEncoderTest, EveryRecordKafkaWroteIsEncodedByteForByte) {
  std::map<int64_t, std::string> segments;
  for (const auto& e : fs::directory_iterator(kWritten))
    if (e.path().extension() == ".log") segments[std::stoll(e.path().stem().string())] = e.path().string();
  ASSERT_EQ(segments.size(), 3u);
  int records = 0;
  std::set<int> value_versions, states;
  bool tombstone = false, tagged_ids = false;
  for (const auto& [base, path] : segments) {
    const std::string data = writer_test::ReadFile(path);
    CollectingSink sink;
    LogReader reader(path, AsBytes(data), &sink);
    BatchView batch;
    RecordDecoder decoder;
    while (reader.Next(&batch)) {
      SCOPED_TRACE(path + " batch at offset " + std::to_string(batch.header.base_offset));
      ASSERT_TRUE(decoder.Decode(batch, path, &sink));
      ASSERT_EQ(decoder.records().size(), 1u);  // one record per coordinator write
      const Record& r = decoder.records()[0];
      DecodedRecord d;
      std::string error;
      ASSERT_TRUE(DecodeInternalRecord(TopicDecoder::kTransactionLog, r, &d, &error)) << error;
      ASSERT_TRUE(r.key.has_value());
      const std::string kafka_key(reinterpret_cast<const char*>(r.key->data()), r.key->size());
      const std::string key = EncodeTxnLogKey(d.json.at("key").at("transactionalId").get<std::string>());
      EXPECT_EQ(writer_test::Hex(key), writer_test::Hex(kafka_key));
      std::optional<std::string> value;
      if (r.value) {
        const int16_t version = d.json.at("valueVersion").get<int16_t>();
        TxnLogValue v = ValueFromJson(version, d.json.at("value"));
        value.emplace();
        ASSERT_TRUE(EncodeTxnLogValue(v, &*value, &error)) << error;
        const std::string kafka_value(reinterpret_cast<const char*>(r.value->data()), r.value->size());
        EXPECT_EQ(writer_test::Hex(*value), writer_test::Hex(kafka_value));
        value_versions.insert(version);
        states.insert(v.transaction_status);
        tagged_ids |= v.previous_producer_id != -1 || v.next_producer_id != -1;
      } else {
        tombstone = true;
      }
      // The whole batch: offset, leader epoch and timestamp as Kafka's append stamped them.
      TxnLogRecordOptions o;
      o.offset = batch.header.base_offset;
      o.partition_leader_epoch = batch.header.partition_leader_epoch;
      o.timestamp = r.timestamp;
      std::string bytes;
      BuiltBatch built;
      ASSERT_TRUE(AppendTxnLogRecord(o, key, value, &bytes, &built, &error)) << error;
      const std::string kafka_batch(reinterpret_cast<const char*>(batch.bytes.data()), batch.bytes.size());
      EXPECT_EQ(writer_test::Hex(bytes), writer_test::Hex(kafka_batch));
      records++;
    }
    EXPECT_EQ(sink.ErrorCount(), 0u);
  }
  // What the fixture covers (README): 32 records, values v0 and v1, all eight states, tagged
  // producer ids, a tombstone.
  EXPECT_EQ(records, 32);
  EXPECT_EQ(value_versions, (std::set<int>{0, 1}));
  EXPECT_EQ(states.size(), 8u);
  EXPECT_TRUE(tombstone);
  EXPECT_TRUE(tagged_ids);
}

TEST(TxnLogEncoderTest, RefusesWhatKafkaCannotWrite) {
  TxnLogValue v;
  std::string out, error;
  v.version = 2;
  EXPECT_FALSE(EncodeTxnLogValue(v, &out, &error));
  EXPECT_NE(error.find("version 2"), std::string::npos);
  v.version = 0;
  v.client_transaction_version = 2;  // v0 has no tagged fields: refused rather than lost
  EXPECT_FALSE(EncodeTxnLogValue(v, &out, &error));
}

}  // namespace
}  // namespace klf
