// Sources (apache/kafka at the fixtures' commit 1eb7644349cb): TransactionLog.scala
// (readTxnRecordKey/Value, formatRecordKeyAndValue), CoordinatorRecordSerde.deserialize,
// DumpLogSegments.OffsetsMessageParser (prepareKey, prepareGroupMetadataValue, prepareValue),
// AbstractApiMessageSerde.read (metadata frame), ControlRecordUtils (control records at version 0).
#include "segment_reader/internal_topics.h"

#include <algorithm>
#include <map>
#include <span>

namespace klf {

#include "segment_reader/kafka_schemas.inc"

namespace {

constexpr const char* kTxnStates[] = {"Empty",          "Ongoing",       "PrepareCommit", "PrepareAbort",
                                      "CompleteCommit", "CompleteAbort", "Dead",          "PrepareEpochFence"};

bool ReadVersionPrefix(Bytes b, int16_t* version, Bytes* rest) {
  if (b.size() < 2) return false;
  *version = LoadI16(b.data());
  *rest = b.subspan(2);
  return true;
}

std::string At(size_t position, const std::string& what) { return what + " (byte " + std::to_string(position) + ")"; }

// TransactionLog.formatRecordKeyAndValue's value text.
std::string TxnValueText(const OrderedJson& v, const char* state) {
  std::string s = "producerId:" + std::to_string(v["producerId"].get<int64_t>()) +
                  ",producerEpoch:" + std::to_string(v["producerEpoch"].get<int64_t>()) + ",state=" + state +
                  ",partitions=[";
  bool first = true;
  const OrderedJson& parts = v["transactionPartitions"];
  if (parts.is_array()) {
    for (const OrderedJson& tp : parts) {
      for (const OrderedJson& p : tp["partitionIds"]) {
        if (!first) s += ',';
        first = false;
        s += tp["topic"].get<std::string>() + '-' + std::to_string(p.get<int64_t>());
      }
    }
  }
  s += "],txnLastUpdateTimestamp=" + std::to_string(v["transactionLastUpdateTimestampMs"].get<int64_t>()) +
       ",txnTimeoutMs=" + std::to_string(v["transactionTimeoutMs"].get<int64_t>());
  return s;
}

// A record's value: int16 version, then `schema`'s message, into *json and out->json's "valueVersion"
// and "value". A record without a value is a tombstone: both null, value_text "<DELETE>".
bool DecodeValue(const Record& r, const MessageSchema& schema, const MessageDecodeOptions& options, DecodedRecord* out,
                 int16_t* version, OrderedJson* json, std::string* error) {
  if (!r.value) {
    out->json["valueVersion"] = nullptr;
    out->json["value"] = nullptr;
    out->value_text = "<DELETE>";
    return true;
  }
  Bytes value;
  if (!ReadVersionPrefix(*r.value, version, &value)) {
    *error = "value of " + std::to_string(r.value->size()) + " bytes: no version";
    return false;
  }
  size_t at = 0;
  if (!DecodeMessage(schema, *version, value, json, error, &at, options)) {
    *error = "value: " + At(at + 2, *error);
    return false;
  }
  out->json["valueVersion"] = *version;
  out->json["value"] = *json;
  return true;
}

bool DecodeTransactionLog(const Record& r, DecodedRecord* out, std::string* error) {
  if (!r.key) {
    *error = "a __transaction_state record without a key";
    return false;
  }
  int16_t key_version;
  Bytes key;
  if (!ReadVersionPrefix(*r.key, &key_version, &key)) {
    *error = "key of " + std::to_string(r.key->size()) + " bytes: no version";
    return false;
  }
  OrderedJson key_json, value_json;
  size_t at = 0;
  if (!DecodeMessage(kTransactionLogKeySchema, key_version, key, &key_json, error, &at)) {
    *error = "key: " + At(at + 2, *error);
    return false;
  }
  out->key_text = "transaction_metadata::transactionalId=" + key_json["transactionalId"].get<std::string>();
  out->json["keyVersion"] = key_version;
  out->json["key"] = key_json;
  int16_t value_version = 0;
  if (!DecodeValue(r, kTransactionLogValueSchema, {}, out, &value_version, &value_json, error)) return false;
  if (!r.value) return true;
  const char* state = TransactionStateName(int(value_json["transactionStatus"].get<int64_t>()));
  if (!state) {
    *error = "value: unknown transaction state " + std::to_string(value_json["transactionStatus"].get<int64_t>());
    return false;
  }
  out->json["state"] = state;
  out->value_text = TxnValueText(value_json, state);
  return true;
}

const GroupRecordSchema* GroupSchema(int16_t record_type) {
  for (const GroupRecordSchema& s : kGroupRecordSchemas) {
    if (s.record_type == record_type) return &s;
  }
  return nullptr;
}

// DumpLogSegments.prepareGroupMetadataValue: a consumer group's member subscription and assignment
// bytes are the embedded ConsumerProtocol (int16 version + message); they stay base64 when they do
// not decode.
bool ExpandConsumerProtocol(const SchemaField& field, Bytes value, const OrderedJson& root, OrderedJson* out) {
  auto type = root.find("protocolType");
  if (type == root.end() || !type->is_string() || type->get<std::string>() != "consumer") return false;
  const MessageSchema* schema = nullptr;
  if (std::string_view(field.name) == "subscription")
    schema = &kConsumerProtocolSubscriptionSchema;
  else if (std::string_view(field.name) == "assignment")
    schema = &kConsumerProtocolAssignmentSchema;
  if (!schema) return false;
  int16_t version;
  Bytes rest;
  if (!ReadVersionPrefix(value, &version, &rest)) return false;
  MessageDecodeOptions options;
  options.allow_trailing_bytes = true;  // Kafka's reader ignores them
  std::string error;
  return DecodeMessage(*schema, version, rest, out, &error, nullptr, options);
}

bool DecodeOffsets(const Record& r, DecodedRecord* out, std::string* error) {
  if (!r.key) {
    *error = "a __consumer_offsets record without a key";
    return false;
  }
  int16_t record_type;
  Bytes key;
  if (!ReadVersionPrefix(*r.key, &record_type, &key)) {
    *error = "key of " + std::to_string(r.key->size()) + " bytes: no record type";
    return false;
  }
  const GroupRecordSchema* schema = GroupSchema(record_type);
  if (!schema) {
    *error = "unknown record type " + std::to_string(record_type);
    return false;
  }
  OrderedJson key_json, value_json;
  size_t at = 0;
  if (!DecodeMessage(schema->key, record_type, key, &key_json, error, &at)) {
    *error = "key: " + At(at + 2, *error);
    return false;
  }
  out->key_text = "{\"type\":\"" + std::to_string(record_type) + "\",\"data\":" + CompactJson(key_json) + "}";
  out->json["recordType"] = record_type;
  out->json["key"] = key_json;
  MessageDecodeOptions options;
  if (record_type == 2) options.bytes_hook = ExpandConsumerProtocol;
  int16_t value_version = 0;
  if (!DecodeValue(r, schema->value, options, out, &value_version, &value_json, error)) return false;
  if (!r.value) return true;
  out->value_text = "{\"version\":\"" + std::to_string(value_version) + "\",\"data\":" + CompactJson(value_json) + "}";
  return true;
}

// A framed metadata record (AbstractApiMessageSerde): uvarint frame version (1), uvarint record type
// (the apiKey of one of `schemas`), uvarint version, then the message with nothing left over.
// `what` names the kind of record in errors ("metadata", "remote log metadata").
bool DecodeFramed(const Record& r, std::span<const MetadataRecordSchema> schemas, const char* what,
                  const MetadataRecordSchema** schema_out, uint32_t* version_out, OrderedJson* data,
                  std::string* error) {
  if (!r.value) {
    *error = std::string("a ") + what + " record without a value";
    return false;
  }
  ByteCursor c(*r.value);
  uint32_t frame, api_key, version;
  if (!c.ReadUvarint(&frame)) {
    *error = std::string("frame version: ") + c.error();
    return false;
  }
  if (frame != 1) {
    *error = "unknown frame version " + std::to_string(frame) + " (expected 1)";
    return false;
  }
  if (!c.ReadUvarint(&api_key) || !c.ReadUvarint(&version)) {
    *error = std::string("record type and version: ") + c.error();
    return false;
  }
  const MetadataRecordSchema* schema = nullptr;
  for (const MetadataRecordSchema& s : schemas) {
    if (s.message.api_key >= 0 && uint32_t(s.message.api_key) == api_key) schema = &s;
  }
  if (!schema) {
    *error = std::string("unknown ") + what + " record type " + std::to_string(api_key);
    return false;
  }
  if (version > 0x7fff) {
    *error = std::string(schema->type_name) + ": unknown version " + std::to_string(version);
    return false;
  }
  const size_t header = c.pos();
  size_t at = 0;
  if (!DecodeMessage(schema->message, int(version), r.value->subspan(header), data, error, &at)) {
    *error = At(at + header, *error);
    return false;
  }
  *schema_out = schema;
  *version_out = version;
  return true;
}

bool DecodeClusterMetadata(const Record& r, DecodedRecord* out, std::string* error) {
  const MetadataRecordSchema* schema = nullptr;
  uint32_t version = 0;
  OrderedJson data;
  if (!DecodeFramed(r, kMetadataRecordSchemas, "metadata", &schema, &version, &data, error)) return false;
  out->json["type"] = schema->type_name;
  out->json["apiKey"] = schema->message.api_key;
  out->json["version"] = version;
  out->json["value"] = data;
  out->value_text = "{\"type\":\"" + std::string(schema->type_name) + "\",\"version\":" + std::to_string(version) +
                    ",\"data\":" + CompactJson(data) + "}";
  return true;
}

// __remote_log_metadata: what RemoteLogMetadataSerde.deserialize builds from the record, printed as its
// toString (what kafka-dump-log --remote-log-metadata-decoder prints), with the checks of the
// transforms and constructors it runs (RemoteLogSegmentState.forId, RemotePartitionDeleteState.forId,
// RemoteLogSegmentMetadata's offsets and leader epochs).
const char* RemoteLogSegmentStateName(int64_t id) {
  static constexpr const char* kNames[] = {"COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED",
                                           "DELETE_SEGMENT_FINISHED"};
  return id >= 0 && id < int64_t(std::size(kNames)) ? kNames[id] : nullptr;
}

const char* RemotePartitionDeleteStateName(int64_t id) {
  static constexpr const char* kNames[] = {"DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED",
                                           "DELETE_PARTITION_FINISHED"};
  return id >= 0 && id < int64_t(std::size(kNames)) ? kNames[id] : nullptr;
}

// TopicIdPartition.toString: "<topic id>:<topic>-<partition>".
std::string TopicIdPartitionText(const OrderedJson& t) {
  return t.at("id").get<std::string>() + ":" + t.at("name").get<std::string>() + "-" +
         std::to_string(t.at("partition").get<int32_t>());
}

std::string SegmentIdText(const OrderedJson& id) {
  return "RemoteLogSegmentId{topicIdPartition=" + TopicIdPartitionText(id.at("topicIdPartition")) +
         ", id=" + id.at("id").get<std::string>() + "}";
}

// Optional<CustomMetadata>.toString; the bytes are in the JSON as padded base64.
std::string CustomMetadataText(const OrderedJson& bytes) {
  if (bytes.is_null()) return "Optional.empty";
  const std::string& b64 = bytes.get_ref<const std::string&>();
  size_t size = b64.size() / 4 * 3;
  for (size_t i = b64.size(); i > 0 && b64[i - 1] == '=' && size > 0; --i) --size;
  return "Optional[CustomMetadata{" + std::to_string(size) + " bytes}]";
}

// The segment's leader epochs as the TreeMap Kafka builds (the last entry of an epoch wins): "{0=0, 3=120}".
bool LeaderEpochsText(const OrderedJson& entries, std::string* out, std::string* error) {
  std::map<int32_t, int64_t> epochs;
  for (const OrderedJson& e : entries) epochs[e.at("leaderEpoch").get<int32_t>()] = e.at("offset").get<int64_t>();
  if (epochs.empty()) {
    *error = "segmentLeaderEpochs can not be null or empty";
    return false;
  }
  *out = "{";
  for (const auto& [epoch, offset] : epochs)
    *out += (out->size() > 1 ? ", " : "") + std::to_string(epoch) + "=" + std::to_string(offset);
  *out += "}";
  return true;
}

bool RemoteLogText(const MetadataRecordSchema& schema, const OrderedJson& v, std::string* text, std::string* error) {
  const std::string type = schema.type_name;
  if (type == "RemotePartitionDeleteMetadataRecord") {
    const char* state = RemotePartitionDeleteStateName(v.at("remotePartitionDeleteState").get<int64_t>());
    if (!state) {
      *error =
          "unknown remote partition delete state " + std::to_string(v.at("remotePartitionDeleteState").get<int64_t>());
      return false;
    }
    *text = "RemotePartitionDeleteMetadata{topicPartition=" + TopicIdPartitionText(v.at("topicIdPartition")) +
            ", state=" + state + ", eventTimestampMs=" + std::to_string(v.at("eventTimestampMs").get<int64_t>()) +
            ", brokerId=" + std::to_string(v.at("brokerId").get<int32_t>()) + "}";
    return true;
  }
  const char* state = RemoteLogSegmentStateName(v.at("remoteLogSegmentState").get<int64_t>());
  if (!state) {
    *error = "unknown remote log segment state " + std::to_string(v.at("remoteLogSegmentState").get<int64_t>());
    return false;
  }
  const std::string custom = CustomMetadataText(v.at("customMetadata"));
  if (type == "RemoteLogSegmentMetadataUpdateRecord") {
    *text = "RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=" + SegmentIdText(v.at("remoteLogSegmentId")) +
            ", customMetadata=" + custom + ", state=" + state +
            ", eventTimestampMs=" + std::to_string(v.at("eventTimestampMs").get<int64_t>()) +
            ", brokerId=" + std::to_string(v.at("brokerId").get<int32_t>()) + "}";
    return true;
  }
  std::string epochs;
  if (!LeaderEpochsText(v.at("segmentLeaderEpochs"), &epochs, error)) return false;
  const int64_t start = v.at("startOffset").get<int64_t>(), end = v.at("endOffset").get<int64_t>();
  if (type == "RemoteLogSegmentMetadataSnapshotRecord") {
    *text = "RemoteLogSegmentMetadataSnapshot{segmentId=" + v.at("segmentId").get<std::string>() +
            ", startOffset=" + std::to_string(start) + ", endOffset=" + std::to_string(end) +
            ", maxTimestampMs=" + std::to_string(v.at("maxTimestampMs").get<int64_t>()) +
            ", segmentLeaderEpochs=" + epochs +
            ", segmentSizeInBytes=" + std::to_string(v.at("segmentSizeInBytes").get<int32_t>()) +
            ", customMetadata=" + custom + ", state=" + state + "}";
    return true;
  }
  if (start < 0) {
    *error =
        "Unexpected start offset = " + std::to_string(start) + ". StartOffset for a remote segment cannot be negative";
    return false;
  }
  if (end < start) {
    *error = "Unexpected end offset = " + std::to_string(end) +
             ". EndOffset for a remote segment cannot be less than startOffset = " + std::to_string(start);
    return false;
  }
  *text = "RemoteLogSegmentMetadata{remoteLogSegmentId=" + SegmentIdText(v.at("remoteLogSegmentId")) +
          ", startOffset=" + std::to_string(start) + ", endOffset=" + std::to_string(end) +
          ", brokerId=" + std::to_string(v.at("brokerId").get<int32_t>()) +
          ", maxTimestampMs=" + std::to_string(v.at("maxTimestampMs").get<int64_t>()) +
          ", eventTimestampMs=" + std::to_string(v.at("eventTimestampMs").get<int64_t>()) +
          ", segmentLeaderEpochs=" + epochs +
          ", segmentSizeInBytes=" + std::to_string(v.at("segmentSizeInBytes").get<int32_t>()) +
          ", customMetadata=" + custom + ", state=" + state + "}";
  return true;
}

bool DecodeRemoteLogMetadata(const Record& r, DecodedRecord* out, std::string* error) {
  const MetadataRecordSchema* schema = nullptr;
  uint32_t version = 0;
  OrderedJson data;
  if (!DecodeFramed(r, kRemoteLogMetadataRecordSchemas, "remote log metadata", &schema, &version, &data, error))
    return false;
  std::string text;
  if (!RemoteLogText(*schema, data, &text, error)) return false;
  out->json["type"] = schema->type_name;
  out->json["apiKey"] = schema->message.api_key;
  out->json["version"] = version;
  out->json["value"] = data;
  out->value_text = text;
  return true;
}

}  // namespace

const char* TopicDecoderName(TopicDecoder d) {
  switch (d) {
    case TopicDecoder::kNone: return "none";
    case TopicDecoder::kOffsets: return "offsets";
    case TopicDecoder::kTransactionLog: return "transaction-log";
    case TopicDecoder::kClusterMetadata: return "cluster-metadata";
    case TopicDecoder::kRemoteLogMetadata: return "remote-log-metadata";
  }
  return "none";
}

bool ParseTopicDecoder(std::string_view name, TopicDecoder* d) {
  for (TopicDecoder c : {TopicDecoder::kNone, TopicDecoder::kOffsets, TopicDecoder::kTransactionLog,
                         TopicDecoder::kClusterMetadata, TopicDecoder::kRemoteLogMetadata}) {
    if (name == TopicDecoderName(c)) {
      *d = c;
      return true;
    }
  }
  return false;
}

TopicDecoder DecoderForTopic(std::string_view topic) {
  if (topic == "__consumer_offsets") return TopicDecoder::kOffsets;
  if (topic == "__transaction_state") return TopicDecoder::kTransactionLog;
  if (topic == "__cluster_metadata") return TopicDecoder::kClusterMetadata;
  if (topic == "__remote_log_metadata") return TopicDecoder::kRemoteLogMetadata;
  return TopicDecoder::kNone;
}

const char* TransactionStateName(int state) {
  if (state < 0 || state >= int(std::size(kTxnStates))) return nullptr;
  return kTxnStates[state];
}

bool DecodeInternalRecord(TopicDecoder decoder, const Record& record, DecodedRecord* out, std::string* error) {
  *out = DecodedRecord();
  out->json = OrderedJson::object();
  switch (decoder) {
    case TopicDecoder::kNone: *error = "no decoder"; return false;
    case TopicDecoder::kOffsets: return DecodeOffsets(record, out, error);
    case TopicDecoder::kTransactionLog: return DecodeTransactionLog(record, out, error);
    case TopicDecoder::kClusterMetadata: return DecodeClusterMetadata(record, out, error);
    case TopicDecoder::kRemoteLogMetadata: return DecodeRemoteLogMetadata(record, out, error);
  }
  return false;
}

bool DecodeRaftControlRecord(const Record& record, DecodedRecord* out, std::string* error) {
  *out = DecodedRecord();
  out->json = OrderedJson::object();
  ControlRecord c;
  if (!ParseControlRecord(record, &c, error)) return false;
  const MessageSchema* schema = nullptr;
  const char* label = nullptr;  // kafka-dump-log's prefix
  switch (c.type) {
    case ControlType::kLeaderChange: schema = &kLeaderChangeSchema; break;
    case ControlType::kSnapshotHeader:
      schema = &kSnapshotHeaderSchema;
      label = "SnapshotHeader";
      break;
    case ControlType::kSnapshotFooter:
      schema = &kSnapshotFooterSchema;
      label = "SnapshotFooter";
      break;
    case ControlType::kKRaftVersion:
      schema = &kKRaftVersionSchema;
      label = "KRaftVersion";
      break;
    case ControlType::kKRaftVoters:
      schema = &kVotersSchema;
      label = "KRaftVoters";
      break;
    default:
      *error = std::string("control record type ") + std::to_string(c.raw_type) + " is not a KRaft control record";
      return false;
  }
  if (!record.value) {
    *error = std::string(schema->name) + " without a value";
    return false;
  }
  OrderedJson data;
  size_t at = 0;
  if (!DecodeMessage(*schema, 0, *record.value, &data, error, &at)) {
    *error = At(at, *error);
    return false;
  }
  out->json["type"] = schema->name;
  out->json["value"] = data;
  if (label) out->control_text = std::string(label) + ' ' + CompactJson(data);
  return true;
}

bool ParseQuorumState(std::string_view text, OrderedJson* out, std::string* error) {
  // nlohmann's DOM is built recursively: refuse nesting deeper than a quorum state has first.
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (in_string) {
      if (ch == '\\')
        ++i;
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      if (++depth > 8) {
        *error = "JSON nested deeper than 8 levels at byte " + std::to_string(i);
        return false;
      }
    } else if (ch == '}' || ch == ']') {
      --depth;
    }
  }
  *out = OrderedJson::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) {
    *error = "not valid JSON";
    return false;
  }
  if (!out->is_object()) {
    *error = "not a JSON object";
    return false;
  }
  return true;
}

}  // namespace klf
