// Kafka's generated message serialization, read by interpreting a table of fields per version
// instead of generated classes: the keys and values of `__transaction_state`, `__consumer_offsets`
// and `__cluster_metadata`, and KRaft control records, are all such messages (Kafka's JSON message
// definitions, read by its MessageGenerator; the table is kafka_schemas.inc, made from them by
// scripts/kafka_schema_table.py).
//
// A decoded message is a JSON object shaped as Kafka's generated `<Message>JsonConverter.write`
// prints it: field names in camelCase, in schema order; a field absent from the version is absent;
// a tagged field only when it differs from its default; uuids as Kafka's `Uuid.toString` (URL-safe
// base64 without padding); bytes as standard base64 (Jackson's BinaryNode).
//
// Decoding is strict and bounded: every length and count is checked against the bytes that remain
// (as Kafka's generated readers do, so an array of 2^31 elements in 10 bytes is refused before
// anything is allocated), and bytes left after the message are an error.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "segment_reader/bytes.h"

namespace klf {

using OrderedJson = nlohmann::ordered_json;

enum class FieldType : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kUint16,
  kInt32,
  kUint32,
  kInt64,
  kFloat64,
  kString,
  kBytes,
  kUuid,
  kStruct
};

// One field of a message or struct. Version ranges are inclusive; min > max means "none".
struct SchemaField {
  const char* name;  // as the JSON converter prints it (camelCase)
  FieldType type;
  bool array;
  int16_t min_version, max_version;
  int16_t nullable_min, nullable_max;
  int32_t tag;  // -1: never tagged
  int16_t tagged_min, tagged_max;
  const SchemaField* fields;  // kStruct: the struct's fields
  uint16_t field_count;
  const char* default_value;  // as in the schema ("-1", "null", "false", "" ...)
};

struct MessageSchema {
  const char* name;
  int16_t api_key;  // metadata records; -1 otherwise
  int16_t min_version, max_version;
  int16_t flexible_min, flexible_max;
  const SchemaField* fields;
  uint16_t field_count;

  bool HasVersion(int version) const { return version >= min_version && version <= max_version; }
};

struct GroupRecordSchema {
  int16_t record_type;
  MessageSchema key, value;
};

struct MetadataRecordSchema {
  const char* type_name;  // MetadataRecordType: "TOPIC_RECORD", ...
  MessageSchema message;
};

// Called for a `bytes` field before it is printed as base64; returning true means `*out` was set
// instead (the offsets decoder expands GroupMetadataValue's subscription and assignment). `root` is
// the message decoded so far.
using BytesFieldHook =
    std::function<bool(const SchemaField& field, Bytes value, const OrderedJson& root, OrderedJson* out)>;

struct MessageDecodeOptions {
  BytesFieldHook bytes_hook;
  // Bytes after the message are an error unless this is set (Kafka's consumer protocol readers
  // ignore them, for forward compatibility).
  bool allow_trailing_bytes = false;
};

// Decodes `data` as `schema` at `version` into a JSON object. On failure returns false with the
// reason and the byte position in `data` where decoding stopped.
bool DecodeMessage(const MessageSchema& schema, int version, Bytes data, OrderedJson* out, std::string* error,
                   size_t* error_position = nullptr, const MessageDecodeOptions& options = {});

// Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding.
std::string UuidToString(Bytes sixteen_bytes);

// A message decoded above, printed as Jackson prints a JsonNode (compact; invalid UTF-8 in a string
// becomes U+FFFD, as Java's String decoding does).
std::string CompactJson(const OrderedJson& j);

}  // namespace klf
