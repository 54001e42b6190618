// The internal-topic decoders are strict: unknown types and versions, short fields and leftover
// bytes fail with a reason; counts are checked against the bytes left before anything is allocated.
// (Their agreement with Kafka's own output is tested end to end: tests/e2e/internal_topics_test.py.)
#include "segment_reader/internal_topics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace klf {
namespace {

std::vector<uint8_t> Hex(std::string_view hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(uint8_t(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

// From fixtures/kafka4/txn-state/truth/records.json, offset 30 (v1 with all three tagged fields).
const char* kTxnKey = "0000001373796e7468657469632d707265762d6e657874";
const char* kTxnValue =
    "000100000000000007d100000000ea600202087476322d74786e020000000000000001941f6088c6000001941f6087cc03000800000000"
    "000007d0010800000000000007d202020002";

struct Fixture {
  std::vector<uint8_t> key, value;
  Record Make(bool null_value = false) const {
    Record r;
    r.key = Bytes(key);
    if (!null_value) r.value = Bytes(value);
    return r;
  }
};

TEST(InternalTopicsTest, TransactionLogValueWithTaggedFields) {
  Fixture f{Hex(kTxnKey), Hex(kTxnValue)};
  DecodedRecord out;
  std::string error;
  ASSERT_TRUE(DecodeInternalRecord(TopicDecoder::kTransactionLog, f.Make(), &out, &error)) << error;
  EXPECT_EQ(*out.key_text, "transaction_metadata::transactionalId=synthetic-prev-next");
  EXPECT_EQ(out.json["value"]["previousProducerId"], 2000);
  EXPECT_EQ(out.json["value"]["nextProducerId"], 2002);
  EXPECT_EQ(out.json["value"]["clientTransactionVersion"], 2);
  EXPECT_EQ(out.json["state"], "PrepareCommit");
}

TEST(InternalTopicsTest, TombstoneIsDelete) {
  Fixture f{Hex(kTxnKey), {}};
  DecodedRecord out;
  std::string error;
  ASSERT_TRUE(DecodeInternalRecord(TopicDecoder::kTransactionLog, f.Make(true), &out, &error)) << error;
  EXPECT_EQ(*out.value_text, "<DELETE>");
  EXPECT_TRUE(out.json["value"].is_null());
}

TEST(InternalTopicsTest, LeftoverByteIsAnError) {
  Fixture f{Hex(kTxnKey), Hex(kTxnValue)};
  f.value.push_back(0);
  DecodedRecord out;
  std::string error;
  EXPECT_FALSE(DecodeInternalRecord(TopicDecoder::kTransactionLog, f.Make(), &out, &error));
  EXPECT_NE(error.find("1 bytes left after the message"), std::string::npos) << error;
}

TEST(InternalTopicsTest, UnknownVersionAndTypeAreErrors) {
  Fixture f{Hex(kTxnKey), Hex(kTxnValue)};
  f.value[1] = 7;  // value version 7
  DecodedRecord out;
  std::string error;
  EXPECT_FALSE(DecodeInternalRecord(TopicDecoder::kTransactionLog, f.Make(), &out, &error));
  EXPECT_NE(error.find("has no version 7"), std::string::npos) << error;

  Fixture g{Hex("0063000141"), Hex("0000")};  // record type 99
  EXPECT_FALSE(DecodeInternalRecord(TopicDecoder::kOffsets, g.Make(), &out, &error));
  EXPECT_EQ(error, "unknown record type 99");

  Fixture m{{}, Hex("01630000")};  // metadata record type 99
  Record r;
  r.value = Bytes(m.value);
  EXPECT_FALSE(DecodeInternalRecord(TopicDecoder::kClusterMetadata, r, &out, &error));
  EXPECT_EQ(error, "unknown metadata record type 99");
  m.value[0] = 2;  // frame version 2
  EXPECT_FALSE(DecodeInternalRecord(TopicDecoder::kClusterMetadata, r, &out, &error));
  EXPECT_NE(error.find("frame version 2"), std::string::npos) << error;
}

TEST(InternalTopicsTest, HostileCountIsRefusedBeforeAllocating) {
  // ConsumerGroupPartitionMetadataValue v0 (flexible): a compact array of 2^32-2 topics in 5 bytes.
  Fixture f{Hex("0004000141"), Hex("0000ffffffff0f")};  // key: type 4, group "A"
  DecodedRecord out;
  std::string error;
  EXPECT_FALSE(DecodeInternalRecord(TopicDecoder::kOffsets, f.Make(), &out, &error));
  EXPECT_NE(error.find("elements, but only"), std::string::npos) << error;
}

TEST(InternalTopicsTest, QuorumState) {
  OrderedJson j;
  std::string error;
  EXPECT_TRUE(ParseQuorumState(R"({"leaderId":1,"leaderEpoch":2,"data_version":1})", &j, &error)) << error;
  EXPECT_EQ(j["leaderEpoch"], 2);
  EXPECT_FALSE(ParseQuorumState("[1]", &j, &error));
  EXPECT_FALSE(ParseQuorumState(std::string(100000, '['), &j, &error));
  EXPECT_FALSE(ParseQuorumState("{", &j, &error));
}

}  // namespace
}  // namespace klf
