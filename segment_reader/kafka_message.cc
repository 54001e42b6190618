// The wire rules are those of Kafka's MessageGenerator output (MessageDataGenerator.generateRead):
// non-flexible versions use int16 string lengths, int32 byte and array lengths (-1 = null);
// flexible versions use unsigned varints of length + 1 (0 = null) and end every struct with a
// tagged-field section (uvarint count, then uvarint tag, uvarint size, data).
#include "segment_reader/kafka_message.h"

#include <bit>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace klf {
namespace {

bool InRange(int v, int lo, int hi) { return v >= lo && v <= hi; }

constexpr char kZeroUuid[] = "AAAAAAAAAAAAAAAAAAAAAA";

// The JSON converter prints a tagged field only when it differs from its default
// (JsonConverterGenerator: generateNonDefaultValueCheck).
bool IsDefault(const SchemaField& f, const OrderedJson& v) {
  const std::string_view d = f.default_value;
  if (v.is_null()) return d == "null";
  if (f.array) return d != "null" && v.empty();
  switch (f.type) {
    case FieldType::kBool: return v.get<bool>() == (d == "true");
    case FieldType::kString: return d != "null" && v.get<std::string>() == d;
    case FieldType::kBytes: return d != "null" && v.get<std::string>().empty();
    case FieldType::kUuid: return v.get<std::string>() == kZeroUuid;
    case FieldType::kStruct: return false;
    case FieldType::kFloat64: return v.get<double>() == std::strtod(f.default_value, nullptr);
    default: return v.get<int64_t>() == std::strtoll(f.default_value, nullptr, 0);
  }
}

class Reader {
 public:
  Reader(Bytes data, size_t base, const MessageDecodeOptions& options, const OrderedJson* root)
      : data_(data), c_(data), base_(base), options_(options), root_(root) {}

  // NOLINTNEXTLINE(readability-function-cognitive-complexity): the generated message schema's struct rules (versions, tagged fields, flexible)
  bool Struct(const SchemaField* fields, uint16_t count, int version, bool flexible, OrderedJson* out) {
    std::vector<OrderedJson> values(count);
    std::vector<bool> present(count, false);
    // The object is built in schema order at the end; until then, `out` holds what is decoded so
    // far for the bytes hook (GroupMetadataValue's protocolType comes before its members).
    *out = OrderedJson::object();
    for (uint16_t i = 0; i < count; ++i) {
      const SchemaField& f = fields[i];
      if (!InRange(version, f.min_version, f.max_version)) continue;
      if (flexible && f.tag >= 0 && InRange(version, f.tagged_min, f.tagged_max)) continue;
      if (!Field(f, version, flexible, &values[i])) return false;
      present[i] = true;
      if (out == root_) (*out)[f.name] = values[i];
    }
    if (flexible) {
      uint32_t n;
      if (!c_.ReadUvarint(&n)) return Fail("the number of tagged fields: " + std::string(c_.error()));
      if (n > c_.remaining()) return Fail("tagged field count " + std::to_string(n) + " exceeds the bytes left");
      for (uint32_t t = 0; t < n; ++t) {
        uint32_t tag, size;
        Bytes slice;
        const size_t at = c_.pos();
        if (!c_.ReadUvarint(&tag) || !c_.ReadUvarint(&size))
          return Fail("a tagged field header: " + std::string(c_.error()));
        if (!c_.ReadBytes(size, &slice))
          return Fail("tagged field " + std::to_string(tag) + " of " + std::to_string(size) + " bytes: only " +
                      std::to_string(c_.remaining()) + " left");
        int index = -1;
        for (uint16_t i = 0; i < count; ++i) {
          const SchemaField& f = fields[i];
          if (f.tag == int32_t(tag) && InRange(version, f.min_version, f.max_version) &&
              InRange(version, f.tagged_min, f.tagged_max)) {
            index = i;
          }
        }
        if (index < 0) {
          ++unknown_tags_;  // kept by Kafka as unknownTaggedFields, printed by no converter
          continue;
        }
        Reader sub(slice, base_ + at + (c_.pos() - at - size), options_, root_);
        OrderedJson v;
        if (!sub.Field(fields[index], version, flexible, &v)) return Propagate(sub);
        if (sub.c_.remaining() != 0) {
          return Fail("tagged field " + std::string(fields[index].name) + ": " + std::to_string(sub.c_.remaining()) +
                      " bytes left after its value");
        }
        unknown_tags_ += sub.unknown_tags_;
        if (!IsDefault(fields[index], v)) {
          values[index] = std::move(v);
          present[index] = true;
        }
      }
    }
    *out = OrderedJson::object();
    for (uint16_t i = 0; i < count; ++i) {
      if (present[i]) (*out)[fields[i].name] = std::move(values[i]);
    }
    return true;
  }

  bool Fail(std::string why) {
    if (error_.empty()) {
      error_ = std::move(why);
      error_pos_ = base_ + c_.pos();
    }
    return false;
  }

  size_t remaining() const { return c_.remaining(); }
  size_t pos() const { return c_.pos(); }
  const std::string& error() const { return error_; }
  size_t error_pos() const { return error_pos_; }
  uint64_t unknown_tags() const { return unknown_tags_; }

 private:
  bool Propagate(const Reader& sub) {
    if (error_.empty()) {
      error_ = sub.error_;
      error_pos_ = sub.error_pos_;
    }
    return false;
  }

  // Reads a length (strings, bytes, arrays): returns false on error; *is_null for a null.
  bool Length(bool flexible, bool int16_length, int64_t* n, bool* is_null) {
    *is_null = false;
    if (flexible) {
      uint32_t u;
      if (!c_.ReadUvarint(&u)) return false;
      if (u == 0) *is_null = true;
      *n = int64_t(u) - 1;
      return true;
    }
    if (int16_length) {
      int16_t s;
      if (!c_.ReadI16(&s)) return false;
      if (s < 0) {
        if (s != -1) return Fail("string length " + std::to_string(s));
        *is_null = true;
      }
      *n = s;
      return true;
    }
    int32_t l;
    if (!c_.ReadI32(&l)) return false;
    if (l < 0) {
      if (l != -1) return Fail("length " + std::to_string(l));
      *is_null = true;
    }
    *n = l;
    return true;
  }

  bool Field(const SchemaField& f, int version, bool flexible, OrderedJson* out) {
    const bool nullable = InRange(version, f.nullable_min, f.nullable_max);
    if (!f.array) return Value(f, version, flexible, nullable, out);
    int64_t n;
    bool is_null;
    if (!Length(flexible, false, &n, &is_null)) return Fail(std::string(f.name) + ": array length: " + c_.error());
    if (is_null) {
      if (!nullable) return Fail(std::string(f.name) + ": non-nullable field was serialized as null");
      *out = nullptr;
      return true;
    }
    // Kafka's generated readers refuse more elements than bytes left, before allocating.
    if (uint64_t(n) > c_.remaining()) {
      return Fail(std::string(f.name) + ": tried to read " + std::to_string(n) + " elements, but only " +
                  std::to_string(c_.remaining()) + " bytes remain");
    }
    *out = OrderedJson::array();
    for (int64_t i = 0; i < n; ++i) {
      OrderedJson e;
      if (!Value(f, version, flexible, false, &e)) return false;
      out->push_back(std::move(e));
    }
    return true;
  }

  // NOLINTNEXTLINE(readability-function-cognitive-complexity): one switch over the schema's field types, as Kafka's generated readers
  bool Value(const SchemaField& f, int version, bool flexible, bool nullable, OrderedJson* out) {
    auto short_read = [&]() { return Fail(std::string(f.name) + ": " + c_.error()); };
    switch (f.type) {
      case FieldType::kBool: {
        int8_t v;
        if (!c_.ReadI8(&v)) return short_read();
        *out = v != 0;
        return true;
      }
      case FieldType::kInt8: {
        int8_t v;
        if (!c_.ReadI8(&v)) return short_read();
        *out = int64_t(v);
        return true;
      }
      case FieldType::kInt16:
      case FieldType::kUint16: {
        int16_t v;
        if (!c_.ReadI16(&v)) return short_read();
        *out = f.type == FieldType::kUint16 ? int64_t(uint16_t(v)) : int64_t(v);
        return true;
      }
      case FieldType::kInt32:
      case FieldType::kUint32: {
        int32_t v;
        if (!c_.ReadI32(&v)) return short_read();
        *out = f.type == FieldType::kUint32 ? int64_t(uint32_t(v)) : int64_t(v);
        return true;
      }
      case FieldType::kInt64: {
        int64_t v;
        if (!c_.ReadI64(&v)) return short_read();
        *out = v;
        return true;
      }
      case FieldType::kFloat64: {
        int64_t v;
        if (!c_.ReadI64(&v)) return short_read();
        *out = std::bit_cast<double>(v);
        return true;
      }
      case FieldType::kUuid: {
        Bytes b;
        if (!c_.ReadBytes(16, &b)) return short_read();
        *out = UuidToString(b);
        return true;
      }
      case FieldType::kString:
      case FieldType::kBytes: {
        int64_t n;
        bool is_null;
        if (!Length(flexible, f.type == FieldType::kString, &n, &is_null)) return short_read();
        if (is_null) {
          if (!nullable) return Fail(std::string(f.name) + ": non-nullable field was serialized as null");
          *out = nullptr;
          return true;
        }
        Bytes b;
        if (!c_.ReadBytes(size_t(n), &b)) {
          return Fail(std::string(f.name) + ": " + std::to_string(n) + " bytes declared, " +
                      std::to_string(c_.remaining()) + " left");
        }
        if (f.type == FieldType::kString) {
          *out = std::string(AsStringView(b));
        } else if (!(options_.bytes_hook && root_ && options_.bytes_hook(f, b, *root_, out))) {
          *out = Base64Encode(b);
        }
        return true;
      }
      case FieldType::kStruct: {
        if (nullable) {
          int8_t marker;
          if (!c_.ReadI8(&marker)) return short_read();
          if (marker < 0) {
            *out = nullptr;
            return true;
          }
        }
        return Struct(f.fields, f.field_count, version, flexible, out);
      }
    }
    return Fail("unknown field type");
  }

  Bytes data_;
  ByteCursor c_;
  size_t base_;
  const MessageDecodeOptions& options_;
  const OrderedJson* root_;
  std::string error_;
  size_t error_pos_ = 0;
  uint64_t unknown_tags_ = 0;
};

}  // namespace

std::string UuidToString(Bytes b) {
  std::string s = Base64Encode(b);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) {
    if (c == '+')
      c = '-';
    else if (c == '/')
      c = '_';
  }
  return s;
}

std::string CompactJson(const OrderedJson& j) { return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace); }

bool DecodeMessage(const MessageSchema& schema, int version, Bytes data, OrderedJson* out, std::string* error,
                   size_t* error_position, const MessageDecodeOptions& options) {
  auto fail = [&](std::string why, size_t at) {
    if (error) *error = std::move(why);
    if (error_position) *error_position = at;
    return false;
  };
  if (!schema.HasVersion(version)) {
    return fail(std::string(schema.name) + " has no version " + std::to_string(version) +
                    " (known: " + std::to_string(schema.min_version) + ".." + std::to_string(schema.max_version) + ")",
                0);
  }
  const bool flexible = InRange(version, schema.flexible_min, schema.flexible_max);
  *out = OrderedJson::object();
  Reader r(data, 0, options, out);
  if (!r.Struct(schema.fields, schema.field_count, version, flexible, out)) {
    return fail(std::string(schema.name) + " v" + std::to_string(version) + ": " + r.error(), r.error_pos());
  }
  if (r.remaining() != 0 && !options.allow_trailing_bytes) {
    return fail(std::string(schema.name) + " v" + std::to_string(version) + ": " + std::to_string(r.remaining()) +
                    " bytes left after the message",
                r.pos());
  }
  return true;
}

}  // namespace klf
