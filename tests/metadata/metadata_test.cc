// metadata/ against Kafka's own bytes and answers.
//   - kafka4/cluster-metadata: `__cluster_metadata-0` written by the raft layer, with a snapshot at end
//     offset 32 and the log from 0; dump/ is kafka-dump-log's --cluster-metadata-decoder output of every
//     file. The expected image is replayed here from that text (Kafka's decoder, not ours).
//   - kafka4/consumer-offsets: `__consumer_offsets-0` written with the group coordinator's serde;
//     truth/records.json is every record as Kafka's converters print it, truth/log-state.json the
//     aborted transactions Kafka's reload found.
//   - real/: KRaft brokers' metadata logs beside the partitions they describe: every live partition
//     directory's partition.metadata (written by the broker from the metadata log) names the topic id
//     the replay gives its topic, and the broker (meta.properties node.id) is one of its replicas.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "metadata/cluster_metadata.h"
#include "metadata/committed_offsets.h"
#include "segment_reader/kafka_message.h"
#include "segment_reader/layout.h"
#include "segment_writer/batch_builder.h"
#include "tests/support/fault_injection_env.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kKafka4 = fs::path(KLF_FIXTURES_DIR) / "kafka4";
const fs::path kReal = fs::path(KLF_FIXTURES_DIR) / "real";

// One metadata record as kafka-dump-log printed it.
struct DumpRecord {
  int64_t offset = 0, timestamp = 0;
  json payload;
};

std::vector<DumpRecord> ReadDump(const fs::path& file) {
  std::vector<DumpRecord> out;
  std::ifstream in(file);
  std::string line;
  static const std::regex kLine(R"(^\| offset: (\d+) CreateTime: (\d+) .* payload: (\{.*\})$)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (!std::regex_match(line, m, kLine)) continue;
    out.push_back({std::stoll(m[1]), std::stoll(m[2]), json::parse(m[3].str())});
  }
  return out;
}

ClusterMetadata LoadMetadata(const fs::path& dir, CollectingSink* sink) {
  ClusterMetadata m;
  std::string error;
  EXPECT_TRUE(LoadClusterMetadata(dir.string(), &m, sink, &error)) << error;
  return m;
}

TEST(ClusterMetadataTest, SnapshotThenLogAsKafkasDecoderPrintsThem) {
  const fs::path dir = kKafka4 / "cluster-metadata" / "written" / "__cluster_metadata-0";
  const fs::path dump = kKafka4 / "cluster-metadata" / "dump" / "written";
  CollectingSink sink;
  const ClusterMetadata m = LoadMetadata(dir, &sink);
  EXPECT_EQ(sink.ErrorCount(), 0u);
  ASSERT_TRUE(m.snapshot_end_offset.has_value());
  EXPECT_EQ(*m.snapshot_end_offset, 32);
  EXPECT_EQ(m.snapshot_epoch, 2);
  EXPECT_EQ(m.next_offset, 33);  // truth/log-state.json: logEndOffset 33

  // Kafka's records: the snapshot's, then the log's from offset 32 (none changes topics after it
  // but the replay must not apply the log's older records twice either).
  std::map<std::string, std::map<std::string, std::string>> topic_configs, broker_configs;
  std::map<std::string, std::string> names;  // id -> name
  struct Part {
    std::vector<int> isr;
    int leader = -1, leader_epoch = 0, partition_epoch = 0;
  };
  std::map<std::pair<std::string, int>, Part> parts;
  auto apply = [&](const json& p) {
    const std::string type = p["type"];
    const json& d = p["data"];
    if (type == "TOPIC_RECORD") names[d["topicId"]] = d["name"];
    if (type == "CONFIG_RECORD") {
      auto& target = d["resourceType"] == 2 ? topic_configs[d["resourceName"]] : broker_configs[d["resourceName"]];
      if (d["value"].is_null()) {
        target.erase(d["name"].get<std::string>());
      } else {
        target[d["name"]] = d["value"];
      }
    }
    if (type == "PARTITION_RECORD") {
      parts[{d["topicId"], d["partitionId"]}] = {d["isr"].get<std::vector<int>>(), d["leader"], d["leaderEpoch"],
                                                 d["partitionEpoch"]};
    }
    if (type == "PARTITION_CHANGE_RECORD") {
      Part& x = parts[{d["topicId"], d["partitionId"]}];
      if (d.contains("isr")) x.isr = d["isr"].get<std::vector<int>>();
      if (d.contains("leader")) x.leader = d["leader"], x.leader_epoch++;
      x.partition_epoch++;
    }
  };
  for (const DumpRecord& r : ReadDump(dump / "00000000000000000032-0000000002.checkpoint.txt")) apply(r.payload);
  for (const char* log : {"00000000000000000000.log.txt", "00000000000000000021.log.txt"})
    for (const DumpRecord& r : ReadDump(dump / log))
      if (r.offset >= 32) apply(r.payload);

  ASSERT_EQ(names.size(), 1u);
  for (const auto& [id, name] : names) {
    const TopicImage* t = m.TopicByName(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->topic_id, id);
  }
  for (const auto& [topic, configs] : topic_configs) {
    std::map<std::string, std::string> got;
    for (const auto& [k, v] : m.TopicConfigs(topic)) got[k] = v.value;
    EXPECT_EQ(got, configs) << topic;
  }
  for (const auto& [broker, configs] : broker_configs) {
    std::map<std::string, std::string> got;
    for (const auto& [k, v] : m.broker_configs.at(broker)) got[k] = v.value;
    EXPECT_EQ(got, configs) << "broker '" << broker << "'";
  }
  EXPECT_EQ(m.TopicConfigs("tv2-txn").at("cleanup.policy").value, "compact");
  for (const auto& [key, want] : parts) {
    const PartitionRegistration& got = m.topics.at(key.first).partitions.at(key.second);
    EXPECT_EQ(std::vector<int>(got.isr.begin(), got.isr.end()), want.isr) << key.second;
    EXPECT_EQ(got.leader, want.leader) << key.second;
    EXPECT_EQ(got.leader_epoch, want.leader_epoch) << key.second;
    EXPECT_EQ(got.partition_epoch, want.partition_epoch) << key.second;
  }
}

TEST(ClusterMetadataTest, HistoryFromTheLogBeforeTheSnapshot) {
  // The log still holds offsets 0..32, so the history shows each change where Kafka's decoder shows it
  // (dump/written/*.log.txt), and the final registration is the snapshot's plus the log after it.
  const fs::path dir = kKafka4 / "cluster-metadata" / "written" / "__cluster_metadata-0";
  const fs::path dump = kKafka4 / "cluster-metadata" / "dump" / "written";
  CollectingSink sink;
  const ClusterMetadata m = LoadMetadata(dir, &sink);
  const TopicImage* t = m.TopicByName("tv2-txn");
  ASSERT_NE(t, nullptr);
  std::map<int, std::vector<DumpRecord>> want;  // partition -> its records in the log
  for (const char* log : {"00000000000000000000.log.txt", "00000000000000000021.log.txt"}) {
    for (const DumpRecord& r : ReadDump(dump / log)) {
      const std::string type = r.payload["type"];
      if (type == "PARTITION_RECORD" || type == "PARTITION_CHANGE_RECORD")
        want[r.payload["data"]["partitionId"].get<int>()].push_back(r);
    }
  }
  ASSERT_EQ(want.size(), 3u);
  for (const auto& [p, records] : want) {
    const std::vector<PartitionEvent>& events = t->history.at(p);
    ASSERT_EQ(events.size(), records.size()) << "partition " << p;
    for (size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(events[i].at.offset, records[i].offset);
      EXPECT_EQ(events[i].at.timestamp, records[i].timestamp);
      EXPECT_FALSE(events[i].at.from_snapshot);
    }
  }
  // Partition 0: broker 3 leaves the ISR at offset 21, rejoins at 23; broker 2 leads from 24 (epoch 1).
  const std::vector<PartitionEvent>& p0 = t->history.at(0);
  ASSERT_EQ(p0.size(), 4u);
  EXPECT_EQ(p0[0].kind, "created");
  EXPECT_EQ(p0[1].left_isr, std::vector<int32_t>{3});
  EXPECT_EQ(p0[1].at.timestamp, 1735682404500);
  EXPECT_EQ(p0[2].joined_isr, std::vector<int32_t>{3});
  EXPECT_TRUE(p0[3].leader_changed);
  EXPECT_EQ(p0[3].after.leader, 2);
  EXPECT_EQ(p0[3].after.leader_epoch, 1);
  EXPECT_EQ(IsoUtc(p0[1].at.timestamp), "2024-12-31T22:00:04.500Z");
  // The snapshot's configs carry the log record that set them (dump: offset 14 cleanup.policy, 19 the
  // broker default; min.insync.replicas was set again at offset 30, after the snapshot).
  EXPECT_EQ(m.TopicConfigs("tv2-txn").at("cleanup.policy").at.offset, 14);
  EXPECT_FALSE(m.TopicConfigs("tv2-txn").at("cleanup.policy").at.from_snapshot);
  EXPECT_EQ(m.broker_configs.at("").at("log.cleaner.threads").at.offset, 19);
  EXPECT_EQ(m.TopicConfigs("tv2-txn").at("min.insync.replicas").at.offset, 30);
}

TEST(ClusterMetadataTest, AMissingLogBeforeNoSnapshotIsRefused) {
  // Only the log's second segment (from offset 21), no snapshot: the image before 21 is unknown.
  const fs::path src = kKafka4 / "cluster-metadata" / "written" / "__cluster_metadata-0";
  test::TempDir tmp("meta-no-snapshot");
  const fs::path dir = fs::path(tmp.path()) / "__cluster_metadata-0";
  fs::create_directories(dir);
  fs::copy_file(src / "00000000000000000021.log", dir / "00000000000000000021.log");
  ClusterMetadata m;
  CollectingSink sink;
  std::string error;
  EXPECT_FALSE(LoadClusterMetadata(dir.string(), &m, &sink, &error));
  EXPECT_NE(error.find("offset 21"), std::string::npos) << error;
}

// The load reads the log on LoadedLog's pass: a segment the image needs that cannot be read to its end
// fails the load, naming it (what follows the failed byte is unknown, not absent); one read only for
// the history before the snapshot is left out, its problem reported, and the image still loads.
TEST(ClusterMetadataTest, ASegmentThatCannotBeReadFailsTheLoadWhereTheImageNeedsIt) {
  const fs::path dir = kKafka4 / "cluster-metadata" / "written" / "__cluster_metadata-0";
  CollectingSink whole_sink;
  const ClusterMetadata whole = LoadMetadata(dir, &whole_sink);
  ASSERT_EQ(whole.snapshot_end_offset, 32);  // segment 0 is history only; segment 21 holds 32 on

  FaultInjectionEnv after(Env::Default());
  after.FailRead("00000000000000000021.log", 500);
  ClusterMetadata m;
  CollectingSink sink;
  std::string error;
  EXPECT_FALSE(LoadClusterMetadata(dir.string(), &m, &sink, &error, &after));
  EXPECT_NE(error.find("00000000000000000021.log"), std::string::npos) << error;

  FaultInjectionEnv before(Env::Default());
  before.FailRead("00000000000000000000.log", 500);
  CollectingSink history_sink;
  error.clear();
  ASSERT_TRUE(LoadClusterMetadata(dir.string(), &m, &history_sink, &error, &before)) << error;
  bool reported = false;
  for (const Problem& p : history_sink.problems)
    reported |= p.check == std::string("file-read") && p.file == (dir / "00000000000000000000.log").string();
  EXPECT_TRUE(reported);
  EXPECT_EQ(m.next_offset, whole.next_offset);
  ASSERT_NE(m.TopicByName("tv2-txn"), nullptr);
  // The log before the snapshot said where partition 0's ISR changed; without it only the snapshot's
  // entry and what follows it are known.
  EXPECT_LT(m.TopicByName("tv2-txn")->history.at(0).size(), whole.TopicByName("tv2-txn")->history.at(0).size());
}

TEST(ClusterMetadataTest, ADamagedBatchIsReportedAndTheReplayGoesOn) {
  // One byte of the batch holding offset 21 (the ISR shrink) flipped: its CRC fails. The problem names
  // the segment and the batch's position; the rest of the history and the image are still there.
  const fs::path src = kKafka4 / "cluster-metadata" / "written" / "__cluster_metadata-0";
  test::TempDir tmp("meta-damaged");
  const fs::path dir = fs::path(tmp.path()) / "__cluster_metadata-0";
  test::CopyWritable(src.string(), dir.string());
  const std::string segment = (dir / "00000000000000000021.log").string();
  std::string bytes = test::ReadAll(segment);
  ASSERT_GT(bytes.size(), 70u);
  bytes[65] = char(bytes[65] ^ 0x40);  // inside the first batch's records
  test::WriteAll(segment, bytes);
  CollectingSink sink;
  ClusterMetadata m;
  std::string error;
  ASSERT_TRUE(LoadClusterMetadata(dir.string(), &m, &sink, &error)) << error;
  ASSERT_GE(sink.ErrorCount(), 1u);
  size_t crc = 0;
  for (const Problem& p : sink.problems) {
    if (p.severity != Severity::kError) continue;
    EXPECT_EQ(p.file, segment);
    EXPECT_EQ(p.position, 17u);  // the CRC field of the batch at position 0
    ++crc;
  }
  EXPECT_EQ(crc, 1u) << "reported once, though the segment is read before and after the snapshot";
  const TopicImage* t = m.TopicByName("tv2-txn");
  ASSERT_NE(t, nullptr);
  std::vector<int64_t> offsets;
  for (const PartitionEvent& e : t->history.at(0)) offsets.push_back(e.at.offset);
  EXPECT_EQ(offsets, (std::vector<int64_t>{15, 23, 24}));
  EXPECT_EQ(t->partitions.at(0).leader, 2);
}

// Metadata records encoded by hand (frame version 1, api key, version 0, the flexible v0 message), for
// the replay rules the Kafka-written fixture has no example of: an aborted metadata transaction, a config
// deleted by a null value, a removed topic, and a transaction still open at the log end.
std::string Uvarint(uint32_t v) {
  std::string s;
  while (v >= 0x80) {
    s += char((v & 0x7f) | 0x80);
    v >>= 7;
  }
  s += char(v);
  return s;
}
std::string CompactString(const std::optional<std::string>& v) {
  return v ? Uvarint(uint32_t(v->size() + 1)) + *v : Uvarint(0);
}
std::string Frame(int api_key, const std::string& body) { return Uvarint(1) + Uvarint(api_key) + Uvarint(0) + body; }
std::string TopicRec(const std::string& name, char id) {
  return Frame(2, CompactString(name) + std::string(16, id) + Uvarint(0));
}
std::string ConfigRec(const std::string& topic, const std::string& key, const std::optional<std::string>& value) {
  return Frame(4,
               std::string(1, char(2)) + CompactString(topic) + CompactString(key) + CompactString(value) + Uvarint(0));
}
std::string RemoveTopicRec(char id) { return Frame(9, std::string(16, id) + Uvarint(0)); }
std::string BeginTxn() { return Frame(23, Uvarint(0)); }
std::string EndTxn() { return Frame(24, Uvarint(0)); }
std::string AbortTxn() { return Frame(25, Uvarint(0)); }

TEST(ClusterMetadataTest, TransactionsDeletedConfigsAndRemovedTopics) {
  // Offsets: 0-1 topic a and a config; 2-5 an aborted transaction (topic b); 6 a null value deletes a's
  // config, 7 sets another; 8-10 a committed transaction (topic d); 11 removes a; 12-13 open at the end.
  const std::vector<std::string> values = {
      TopicRec("a", 'A'),
      ConfigRec("a", "cleanup.policy", "compact"),
      BeginTxn(),
      TopicRec("b", 'B'),
      ConfigRec("b", "segment.bytes", "1000"),
      AbortTxn(),
      ConfigRec("a", "cleanup.policy", std::nullopt),
      ConfigRec("a", "retention.ms", "5"),
      BeginTxn(),
      TopicRec("d", 'D'),
      EndTxn(),
      RemoveTopicRec('A'),
      BeginTxn(),
      TopicRec("c", 'C'),
  };
  std::vector<RecordInput> records(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    records[i].offset = int64_t(i);
    records[i].timestamp = 1735682400000 + int64_t(i);
    records[i].value = AsBytes(values[i]);
  }
  std::string segment, error;
  BuiltBatch built;
  ASSERT_TRUE(AppendV2Batch(V2BatchOptions{}, records, &segment, &built, &error)) << error;
  test::TempDir tmp("meta-txn");
  const fs::path dir = fs::path(tmp.path()) / "__cluster_metadata-0";
  fs::create_directories(dir);
  test::WriteAll((dir / "00000000000000000000.log").string(), segment);

  CollectingSink sink;
  ClusterMetadata m;
  ASSERT_TRUE(LoadClusterMetadata(dir.string(), &m, &sink, &error)) << error;
  EXPECT_EQ(sink.ErrorCount(), 0u) << (sink.problems.empty() ? "" : sink.problems.front().message);
  EXPECT_EQ(m.next_offset, 14);
  EXPECT_EQ(m.TopicByName("a"), nullptr);  // removed at offset 11
  ASSERT_EQ(m.removed_topics.size(), 1u);
  EXPECT_EQ(m.removed_topics[0].name, "a");
  EXPECT_EQ(m.removed_topics[0].at.offset, 11);
  EXPECT_TRUE(m.TopicConfigs("a").empty());  // its configs went with it
  EXPECT_EQ(m.TopicByName("b"), nullptr);    // aborted transaction
  EXPECT_TRUE(m.TopicConfigs("b").empty());
  ASSERT_NE(m.TopicByName("d"), nullptr);  // committed transaction
  EXPECT_EQ(m.TopicByName("d")->created.offset, 9);
  EXPECT_EQ(m.TopicByName("d")->topic_id, UuidToString(AsBytes(std::string(16, 'D'))));
  EXPECT_EQ(m.TopicByName("c"), nullptr);  // still open at the log end: not applied, and said so
  bool said = false;
  for (const Problem& p : sink.problems) said |= p.check == "cluster-metadata-transaction";
  EXPECT_TRUE(said);
}

TEST(ClusterMetadataTest, ANullValueDeletesAConfig) {
  const std::vector<std::string> values = {TopicRec("a", 'A'), ConfigRec("a", "cleanup.policy", "compact"),
                                           ConfigRec("a", "retention.ms", "5"),
                                           ConfigRec("a", "cleanup.policy", std::nullopt)};
  std::vector<RecordInput> records(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    records[i].offset = int64_t(i);
    records[i].timestamp = 1735682400000;
    records[i].value = AsBytes(values[i]);
  }
  std::string segment, error;
  BuiltBatch built;
  ASSERT_TRUE(AppendV2Batch(V2BatchOptions{}, records, &segment, &built, &error)) << error;
  test::TempDir tmp("meta-null");
  const fs::path dir = fs::path(tmp.path()) / "__cluster_metadata-0";
  fs::create_directories(dir);
  test::WriteAll((dir / "00000000000000000000.log").string(), segment);
  CollectingSink sink;
  ClusterMetadata m;
  ASSERT_TRUE(LoadClusterMetadata(dir.string(), &m, &sink, &error)) << error;
  EXPECT_EQ(m.TopicConfigs("a").count("cleanup.policy"), 0u);
  ASSERT_EQ(m.TopicConfigs("a").count("retention.ms"), 1u);
  EXPECT_EQ(m.TopicConfigs("a").at("retention.ms").value, "5");
  EXPECT_EQ(m.TopicConfigs("a").at("retention.ms").at.offset, 2);
}

TEST(CommittedOffsetsTest, GroupsPastAnOffset) {
  CommittedOffsets c;
  CollectingSink sink;
  std::string error;
  ASSERT_TRUE(LoadCommittedOffsets({(kKafka4 / "consumer-offsets" / "written" / "__consumer_offsets-0").string()}, &c,
                                   &sink, &error));
  // orders-0 per truth/records.json: classic-gmv1 101, classic-gmv3 103, classic-gmv4 104, cg848 42
  // (classic-gmv0 and classic-gmv2 deleted by tombstones).
  std::map<std::string, int64_t> got;
  for (const GroupExposure& g : GroupsPast(c, "orders", 0, 102)) {
    got[g.committed.group] = g.committed.offset;
    EXPECT_EQ(g.rewind_to, 102);
  }
  EXPECT_EQ(got, (std::map<std::string, int64_t>{{"classic-gmv3", 103}, {"classic-gmv4", 104}}));
  EXPECT_EQ(GroupsPast(c, "orders", 0, 104).size(), 0u);  // 104 is the next offset it reads: not read yet
  EXPECT_EQ(GroupsPast(c, "orders", 0, 41).size(), 4u);
}

TEST(CommittedOffsetsTest, AsTheGroupCoordinatorReplaysKafkasRecords) {
  const fs::path base = kKafka4 / "consumer-offsets";
  CommittedOffsets c;
  CollectingSink sink;
  std::string error;
  ASSERT_TRUE(LoadCommittedOffsets({(base / "written" / "__consumer_offsets-0").string()}, &c, &sink, &error)) << error;
  EXPECT_EQ(sink.ErrorCount(), 0u);

  // The same replay over Kafka's own decoding: non-transactional commits apply at once, tombstones
  // delete, transactional ones wait for their producer's marker.
  std::ifstream in(base / "truth" / "records.json");
  const json records = json::parse(in);
  using Key = std::tuple<std::string, std::string, int>;
  std::map<Key, int64_t> want;
  std::map<int64_t, std::map<Key, int64_t>> pending;
  for (const json& r : records) {
    if (r["control"].get<bool>()) {
      auto it = pending.find(r["producerId"].get<int64_t>());
      if (it == pending.end()) continue;
      if (r["controlType"] == "COMMIT")
        for (const auto& [k, v] : it->second) want[k] = v;
      pending.erase(it);
      continue;
    }
    const int type = r["recordType"];
    if (type != 0 && type != 1) continue;
    const json key = json::parse(r["decodedKey"].get<std::string>())["data"];
    const Key k{key["group"], key["topic"], key["partition"]};
    if (r["decodedValue"] == "<DELETE>") {
      want.erase(k);
      continue;
    }
    const int64_t offset = json::parse(r["decodedValue"].get<std::string>())["data"]["offset"];
    if (r["transactional"].get<bool>()) {
      pending[r["producerId"].get<int64_t>()][k] = offset;
    } else {
      want[k] = offset;
    }
  }
  // Kafka's reload agrees that producer 1000's transaction was aborted.
  std::ifstream state_in(base / "truth" / "log-state.json");
  const json state = json::parse(state_in);
  ASSERT_EQ(state["abortedTransactionsFromTxnIndex"].size(), 1u);
  EXPECT_EQ(state["abortedTransactionsFromTxnIndex"][0]["producerId"], 1000);

  std::map<Key, int64_t> got;
  for (const auto& [k, v] : c.offsets) got[{std::get<0>(k), std::get<1>(k), std::get<2>(k)}] = v.offset;
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.count({"classic-gmv3", "payments", 0}), 1u);  // committed transaction (pid 3000)
  EXPECT_EQ(got.count({"classic-gmv3", "payments", 1}), 0u);  // aborted transaction (pid 1000)
  EXPECT_EQ(got.count({"classic-gmv0", "orders", 0}), 0u);    // tombstone at offset 37
  EXPECT_EQ(c.pending_transactional, 0);
  const std::vector<CommittedOffset> orders0 = c.ForPartition("orders", 0);
  ASSERT_FALSE(orders0.empty());
  for (const CommittedOffset& o : orders0) {
    EXPECT_EQ(o.topic, "orders");
    EXPECT_GE(o.record_offset, 0);
  }
}

// Real KRaft brokers: each live partition directory beside the metadata log names (partition.metadata)
// the topic id the replay gives its topic, and lists the broker among the partition's replicas.
TEST(ClusterMetadataTest, RealBrokersPartitionsMatchTheirMetadataLog) {
  size_t logs = 0, checked = 0;
  for (const fs::path& base : {kReal / "hiage__kafka-raft" / "data", kReal / "greenlemonT__kafka-temp" / "data"}) {
    if (!fs::exists(base)) continue;
    for (const auto& broker : fs::directory_iterator(base)) {
      const fs::path meta = broker.path() / "__cluster_metadata-0";
      if (!fs::is_directory(meta)) continue;
      CollectingSink sink;
      ClusterMetadata m;
      std::string error;
      ASSERT_TRUE(LoadClusterMetadata(meta.string(), &m, &sink, &error)) << meta << ": " << error;
      EXPECT_EQ(sink.ErrorCount(), 0u) << meta << ": " << (sink.problems.empty() ? "" : sink.problems.front().message);
      ++logs;
      LogDir ld;
      CollectingSink quiet;
      ASSERT_TRUE(ScanLogDir(broker.path().string(), &ld, &quiet));
      const int32_t node = ld.meta_properties ? ld.meta_properties->node_id().value_or(-1) : -1;
      for (const PartitionDir& p : ld.partitions) {
        if (!p.tp || p.state != PartitionDirState::kLive || p.is_cluster_metadata() || !p.partition_metadata) continue;
        const TopicImage* t = m.TopicByName(p.tp->topic);
        if (t == nullptr) {
          // A partition directory of a deleted topic may stay behind (a stray); it must be a removed one.
          bool removed = false;
          for (const RemovedTopic& r : m.removed_topics) removed |= r.topic_id == p.partition_metadata->topic_id;
          EXPECT_TRUE(removed) << p.path << " has no topic in " << meta;
          continue;
        }
        EXPECT_EQ(t->topic_id, p.partition_metadata->topic_id) << p.path;
        auto reg = t->partitions.find(p.tp->partition);
        ASSERT_NE(reg, t->partitions.end()) << p.path;
        if (node >= 0) {
          EXPECT_NE(std::find(reg->second.replicas.begin(), reg->second.replicas.end(), node),
                    reg->second.replicas.end())
              << p.path << " on broker " << node;
        }
        ++checked;
      }
    }
  }
  if (logs == 0) GTEST_SKIP() << "no real KRaft metadata logs in the fixtures";
  EXPECT_GT(checked, 0u);
  std::printf("real metadata logs: %zu, partition directories checked: %zu\n", logs, checked);
}

// Every real metadata log replays without a problem, snapshot-only ones (no .log kept) included.
TEST(ClusterMetadataTest, EveryRealMetadataLogReplays) {
  size_t n = 0;
  if (!fs::exists(kReal)) GTEST_SKIP();
  for (const auto& e : fs::recursive_directory_iterator(kReal)) {
    if (!e.is_directory() || e.path().filename() != "__cluster_metadata-0") continue;
    CollectingSink sink;
    ClusterMetadata m;
    std::string error;
    EXPECT_TRUE(LoadClusterMetadata(e.path().string(), &m, &sink, &error)) << e.path() << ": " << error;
    EXPECT_EQ(sink.ErrorCount(), 0u) << e.path() << ": "
                                     << (sink.problems.empty() ? "" : sink.problems.front().message);
    std::printf("%s: snapshot %s, next offset %lld, %zu topics, %lld records\n", e.path().string().c_str(),
                m.snapshot_file.empty() ? "none" : fs::path(m.snapshot_file).filename().c_str(),
                (long long)m.next_offset, m.topics.size(), (long long)m.records_replayed);
    ++n;
  }
  EXPECT_GT(n, 0u);
}

TEST(CommittedOffsetsTest, RealBrokersOffsetsPartitionsReplay) {
  const fs::path dir = kReal / "yuanliubei__kafka-source-code" / "kafka-logs";
  if (!fs::exists(dir)) GTEST_SKIP() << dir;
  const std::vector<std::string> dirs = FindConsumerOffsetsDirs({dir.string()});
  ASSERT_EQ(dirs.size(), 50u);
  CommittedOffsets c;
  CollectingSink sink;
  std::string error;
  ASSERT_TRUE(LoadCommittedOffsets(dirs, &c, &sink, &error)) << error;
  EXPECT_EQ(sink.ErrorCount(), 0u) << (sink.problems.empty() ? "" : sink.problems.front().message);
  // Every committed offset names a topic; none is negative.
  for (const auto& [k, v] : c.offsets) {
    EXPECT_FALSE(std::get<1>(k).empty());
    EXPECT_GE(v.offset, 0);
  }
}

}  // namespace
}  // namespace klf
