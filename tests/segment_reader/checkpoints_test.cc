// Text checkpoint files (spec kafka-on-disk-format.md §1.1, §11).
#include "segment_reader/checkpoints.h"

#include <gtest/gtest.h>

namespace klf {
namespace {

const Problem* Find(const CollectingSink& sink, const std::string& check) {
  for (const auto& p : sink.problems) {
    if (p.check == check) return &p;
  }
  return nullptr;
}

TEST(OffsetCheckpointTest, SpecExample) {
  const std::string text = "0\n2\norders 0 1200\n__consumer_offsets 17 88231\n";
  std::vector<OffsetCheckpointEntry> entries;
  CollectingSink sink;
  ASSERT_TRUE(ParseOffsetCheckpoint("cp", text, &entries, &sink));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0], (OffsetCheckpointEntry{{"orders", 0}, 1200}));
  EXPECT_EQ(entries[1], (OffsetCheckpointEntry{{"__consumer_offsets", 17}, 88231}));
  EXPECT_EQ(EncodeOffsetCheckpoint(entries), text);
  EXPECT_TRUE(sink.problems.empty());
}

TEST(OffsetCheckpointTest, LineSeparatorsAndWhitespaceRuns) {
  for (std::string text : {"0\r\n1\r\nfoo 3 42\r\n", "0\r1\rfoo 3 42\r", "0\n1\nfoo\t 3   42", "0\n1\n foo 3 42x"}) {
    std::vector<OffsetCheckpointEntry> entries;
    CollectingSink sink;
    bool ok = ParseOffsetCheckpoint("cp", text, &entries, &sink);
    if (text[text.size() - 1] == 'x') {
      // A leading space makes Java's split produce an empty first token: 4 tokens, malformed.
      EXPECT_FALSE(ok);
      ASSERT_NE(Find(sink, "checkpoint-line"), nullptr);
      EXPECT_EQ(Find(sink, "checkpoint-line")->position, 4u);
      continue;
    }
    ASSERT_TRUE(ok) << text;
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0], (OffsetCheckpointEntry{{"foo", 3}, 42}));
  }
}

TEST(OffsetCheckpointTest, EmptyFileAndMissingCountMeanNoEntries) {
  std::vector<OffsetCheckpointEntry> entries;
  CollectingSink sink;
  EXPECT_TRUE(ParseOffsetCheckpoint("cp", "", &entries, &sink));
  EXPECT_TRUE(ParseOffsetCheckpoint("cp", "0\n", &entries, &sink));
  EXPECT_TRUE(entries.empty());
  EXPECT_TRUE(sink.problems.empty());
}

TEST(OffsetCheckpointTest, CountMismatch) {
  std::vector<OffsetCheckpointEntry> entries;
  CollectingSink sink;
  EXPECT_FALSE(ParseOffsetCheckpoint("cp", "0\n3\nfoo 0 1\nbar 1 2\n", &entries, &sink));
  const Problem* p = Find(sink, "checkpoint-count");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->position, 2u);
  EXPECT_NE(p->message.find("Expected [3] entries"), std::string::npos) << p->message;
  EXPECT_EQ(entries.size(), 2u);  // what parsed is kept
}

TEST(OffsetCheckpointTest, WrongVersion) {
  std::vector<OffsetCheckpointEntry> entries;
  CollectingSink sink;
  EXPECT_FALSE(ParseOffsetCheckpoint("cp", "1\n0\n", &entries, &sink));
  ASSERT_NE(Find(sink, "checkpoint-version"), nullptr);
  EXPECT_EQ(Find(sink, "checkpoint-version")->position, 0u);
}

TEST(OffsetCheckpointTest, GarbageLines) {
  struct Case {
    std::string text;
    uint64_t position;
  } cases[] = {
      {"zero\n0\n", 0},
      {"0\ntwo\n", 2},
      {"0\n1\nfoo 0\n", 4},                       // two tokens
      {"0\n1\nfoo 0 1 2\n", 4},                   // four tokens
      {"0\n1\nfoo x 1\n", 4},                     // partition not an int
      {"0\n1\nfoo 0 99999999999999999999\n", 4},  // offset overflows a long
      {"0\n1\nfoo 0 1\n\n", 12},                  // an empty line is malformed too
  };
  for (const auto& c : cases) {
    std::vector<OffsetCheckpointEntry> entries;
    CollectingSink sink;
    EXPECT_FALSE(ParseOffsetCheckpoint("garbage-cp", c.text, &entries, &sink)) << c.text;
    const Problem* p = Find(sink, "checkpoint-line");
    ASSERT_NE(p, nullptr) << c.text;
    EXPECT_EQ(p->position, c.position) << c.text;
    EXPECT_EQ(p->file, "garbage-cp");
  }
}

TEST(OffsetCheckpointTest, JavaIntegerRules) {
  std::vector<OffsetCheckpointEntry> entries;
  CollectingSink sink;
  ASSERT_TRUE(ParseOffsetCheckpoint("cp", "+0\n1\nt +7 -9223372036854775808\n", &entries, &sink));
  EXPECT_EQ(entries[0].tp.partition, 7);
  EXPECT_EQ(entries[0].offset, INT64_MIN);
  EXPECT_FALSE(ParseOffsetCheckpoint("cp", "0\n1\nt 2147483648 0\n", &entries, &sink));
}

TEST(LeaderEpochCheckpointTest, SpecExampleRoundTrip) {
  const std::string text = "0\n2\n0 0\n3 1200\n";
  std::vector<LeaderEpochEntry> entries;
  CollectingSink sink;
  ASSERT_TRUE(ParseLeaderEpochCheckpoint("lec", text, &entries, &sink));
  EXPECT_EQ(entries, (std::vector<LeaderEpochEntry>{{0, 0}, {3, 1200}}));
  EXPECT_EQ(EncodeLeaderEpochCheckpoint(entries), text);
  EXPECT_TRUE(sink.problems.empty());
}

TEST(LeaderEpochCheckpointTest, ThreeTokensMalformedAndOrderWarning) {
  std::vector<LeaderEpochEntry> entries;
  CollectingSink sink;
  EXPECT_FALSE(ParseLeaderEpochCheckpoint("lec", "0\n1\n0 0 0\n", &entries, &sink));
  ASSERT_NE(Find(sink, "checkpoint-line"), nullptr);
  CollectingSink sink2;
  EXPECT_TRUE(ParseLeaderEpochCheckpoint("lec", "0\n2\n3 10\n2 20\n", &entries, &sink2));
  const Problem* p = Find(sink2, "leader-epoch-order");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->severity, Severity::kWarning);
  EXPECT_EQ(p->position, 9u);
}

TEST(PartitionMetadataTest, ParseAndEncode) {
  const std::string text = "version: 0\ntopic_id: vrjw0NUpPfKAgWihSTIAzw";
  PartitionMetadata m;
  CollectingSink sink;
  ASSERT_TRUE(ParsePartitionMetadata("pm", text, &m, &sink));
  EXPECT_EQ(m.version, 0);
  EXPECT_EQ(m.topic_id, "vrjw0NUpPfKAgWihSTIAzw");
  EXPECT_EQ(EncodePartitionMetadata(m), text);
  EXPECT_TRUE(sink.problems.empty());
}

TEST(PartitionMetadataTest, ZeroUuidRejected) {
  PartitionMetadata m;
  CollectingSink sink;
  EXPECT_FALSE(ParsePartitionMetadata("pm", "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", &m, &sink));
  const Problem* p = Find(sink, "partition-metadata-topic-id");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->position, 11u);
}

TEST(PartitionMetadataTest, Malformed) {
  struct Case {
    std::string text;
    std::string check;
    uint64_t position;
  } cases[] = {
      {"", "partition-metadata-line", 0},
      {"version:0\ntopic_id: vrjw0NUpPfKAgWihSTIAzw", "partition-metadata-line", 0},  // no space
      {"versio: 0\ntopic_id: vrjw0NUpPfKAgWihSTIAzw", "partition-metadata-line", 0},  // wrong key
      {"version: -1\ntopic_id: vrjw0NUpPfKAgWihSTIAzw", "partition-metadata-version", 0},
      {"version: 0\n", "partition-metadata-line", 11},                                  // no topic id line
      {"version: 0\ntopic_id: vrjw0NUpPfKAgWihSTIA", "partition-metadata-line", 11},    // short uuid
      {"version: 0\ntopic_id: vrjw0NUpPfKAgWihSTIA*w", "partition-metadata-line", 11},  // bad char
  };
  for (const auto& c : cases) {
    PartitionMetadata m;
    CollectingSink sink;
    EXPECT_FALSE(ParsePartitionMetadata("pm", c.text, &m, &sink)) << c.text;
    const Problem* p = Find(sink, c.check);
    ASSERT_NE(p, nullptr) << c.text;
    EXPECT_EQ(p->position, c.position) << c.text;
  }
  // A newer version number is accepted (downgrade compatibility).
  PartitionMetadata m;
  CollectingSink sink;
  EXPECT_TRUE(ParsePartitionMetadata("pm", "version: 3\r\ntopic_id:  vrjw0NUpPfKAgWihSTIAzw==", &m, &sink));
  EXPECT_EQ(m.version, 3);
}

TEST(KafkaUuidTest, Decode) {
  uint8_t b[16];
  ASSERT_TRUE(DecodeKafkaUuid("AAAAAAAAAAAAAAAAAAAAAQ", b));
  for (int i = 0; i < 15; ++i) EXPECT_EQ(b[i], 0);
  EXPECT_EQ(b[15], 1);
  ASSERT_TRUE(DecodeKafkaUuid("_____________________w", b));
  EXPECT_EQ(b[0], 0xff);
  EXPECT_EQ(b[15], 0xff);
  EXPECT_FALSE(DecodeKafkaUuid("AAAA", b));
}

TEST(MetaPropertiesTest, KRaftV1) {
  const std::string text =
      "#\n#Thu Oct 10 11:57:10 GMT 2024\nnode.id=1\ndirectory.id=ROP8qUaSlk7r55i85yz4Cg\nversion=1\n"
      "cluster.id=MkU3OEVBNTcwNTJENDM2Qk\n";
  MetaProperties m;
  CollectingSink sink;
  ASSERT_TRUE(ParseMetaProperties("meta.properties", text, &m, &sink));
  EXPECT_EQ(m.version(), 1);
  EXPECT_EQ(m.node_id(), 1);
  EXPECT_EQ(m.cluster_id(), "MkU3OEVBNTcwNTJENDM2Qk");
  EXPECT_EQ(m.directory_id(), "ROP8qUaSlk7r55i85yz4Cg");
  EXPECT_EQ(m.properties.size(), 4u);
  EXPECT_TRUE(sink.problems.empty());
}

TEST(MetaPropertiesTest, ZooKeeperV0AndJavaPropertiesSyntax) {
  const std::string text =
      "! bang comment\r\n  # indented comment\nversion = 0\nbroker.id:7\ncluster.id   abc\\\n    def\n"
      "weird\\=key=va\\u0041lue\n";
  MetaProperties m;
  CollectingSink sink;
  ASSERT_TRUE(ParseMetaProperties("meta.properties", text, &m, &sink));
  EXPECT_EQ(m.version(), 0);
  EXPECT_EQ(m.node_id(), 7);
  EXPECT_EQ(m.cluster_id(), "abcdef");
  EXPECT_EQ(m.properties.at("weird=key"), "vaAlue");
}

TEST(MetaPropertiesTest, MissingRequiredKeys) {
  {
    MetaProperties m;
    CollectingSink sink;
    EXPECT_TRUE(ParseMetaProperties("mp", "broker.id=1\n", &m, &sink));
    ASSERT_NE(Find(sink, "meta-properties"), nullptr);
    EXPECT_EQ(Find(sink, "meta-properties")->severity, Severity::kWarning);
  }
  for (std::string text : {"cluster.id=x\n", "version=2\n", "version=0\n", "version=1\nnode.id=1\n",
                           "version=1\ncluster.id=x\nnode.id=one\n"}) {
    MetaProperties m;
    CollectingSink sink;
    EXPECT_FALSE(ParseMetaProperties("mp", text, &m, &sink)) << text;
    ASSERT_NE(Find(sink, "meta-properties"), nullptr) << text;
  }
}

TEST(CleanShutdownTest, JsonAndEmptyForms) {
  CleanShutdown c;
  CollectingSink sink;
  ASSERT_TRUE(ParseCleanShutdown(".kafka_cleanshutdown", "{\"version\":0,\"brokerEpoch\":9818}", &c, &sink));
  EXPECT_EQ(c.version, 0);
  EXPECT_EQ(c.broker_epoch, 9818);
  EXPECT_EQ(EncodeCleanShutdown(9818), "{\"version\":0,\"brokerEpoch\":9818}");
  ASSERT_TRUE(ParseCleanShutdown(".kafka_cleanshutdown", "", &c, &sink));
  EXPECT_FALSE(c.broker_epoch.has_value());
  ASSERT_TRUE(ParseCleanShutdown("x", "{\"brokerEpoch\":5,\"future\":true}", &c, &sink));
  EXPECT_EQ(c.broker_epoch, 5);
  EXPECT_TRUE(sink.problems.empty());
  EXPECT_FALSE(ParseCleanShutdown("x", "{\"version\":0,", &c, &sink));
  ASSERT_NE(Find(sink, "clean-shutdown"), nullptr);
  EXPECT_EQ(Find(sink, "clean-shutdown")->severity, Severity::kWarning);
}

TEST(PartitionDirNameTest, Kafka) {
  EXPECT_EQ(ParsePartitionDirName("orders-0"), (TopicPartition{"orders", 0}));
  EXPECT_EQ(ParsePartitionDirName("my-topic-12"), (TopicPartition{"my-topic", 12}));
  EXPECT_EQ(ParsePartitionDirName("rand1.events-0"), (TopicPartition{"rand1.events", 0}));
  EXPECT_EQ(ParsePartitionDirName("__cluster_metadata-0"), (TopicPartition{"__cluster_metadata", 0}));
  EXPECT_EQ(ParsePartitionDirName("foo-3.0123456789abcdef0123456789abcdef-delete"), (TopicPartition{"foo", 3}));
  EXPECT_EQ(ParsePartitionDirName("foo.bar-3.0123456789abcdef0123456789abcdef-future"), (TopicPartition{"foo.bar", 3}));
  EXPECT_EQ(ParsePartitionDirName("foo-1.0123456789abcdef0123456789abcdef-stray"), (TopicPartition{"foo", 1}));
  EXPECT_EQ(ParsePartitionDirName("foo-delete"), std::nullopt);
  EXPECT_EQ(ParsePartitionDirName("foo"), std::nullopt);
  EXPECT_EQ(ParsePartitionDirName("foo-"), std::nullopt);
  EXPECT_EQ(ParsePartitionDirName("-1"), std::nullopt);
  EXPECT_EQ(ParsePartitionDirName("foo-x"), std::nullopt);
  EXPECT_EQ(ParsePartitionDirName("foo-99999999999"), std::nullopt);
  EXPECT_EQ((TopicPartition{"foo", 3}).ToString(), "foo-3");
}

}  // namespace
}  // namespace klf
