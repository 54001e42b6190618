// Writing JSON objects field by field straight into an Output.
//
// klf prints JSON Lines with a fixed, documented shape (spec cli.md), so a generic JSON DOM
// (nlohmann::json) per record would only add allocations: a dump of uncompressed data would spend
// most of its time building and freeing trees. JsonObject writes `{"k":v,...}` directly; keys are
// our own literals (never escaped), string values are escaped, byte strings follow --bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "cli/output.h"
#include "segment_reader/bytes.h"

namespace klf::cli {

class JsonObject {
 public:
  // Opens `{`. Close() writes `}`; nothing is written on destruction.
  explicit JsonObject(Output* out) : out_(out) { out_->Append('{'); }

  // Writes `"key":` (with the comma before it when needed); the caller then writes the value.
  Output* Key(std::string_view key) {
    char* p = out_->Reserve(key.size() + 4);
    char* o = p;
    if (!first_) *o++ = ',';
    first_ = false;
    *o++ = '"';
    std::memcpy(o, key.data(), key.size());
    o += key.size();
    *o++ = '"';
    *o++ = ':';
    out_->Commit(size_t(o - p));
    return out_;
  }
  // A value already rendered as JSON (e.g. a pre-escaped file name), written as is.
  JsonObject& Raw(std::string_view key, std::string_view json) {
    Key(key)->Append(json);
    return *this;
  }
  JsonObject& Int(std::string_view key, int64_t v) {
    Key(key)->AppendInt(v);
    return *this;
  }
  JsonObject& Uint(std::string_view key, uint64_t v) {
    Key(key)->AppendUint(v);
    return *this;
  }
  JsonObject& Bool(std::string_view key, bool v) {
    Key(key)->AppendBool(v);
    return *this;
  }
  JsonObject& Null(std::string_view key) {
    Key(key)->Append("null");
    return *this;
  }
  JsonObject& OptInt(std::string_view key, std::optional<int64_t> v) { return v ? Int(key, *v) : Null(key); }
  JsonObject& String(std::string_view key, std::string_view v) {
    Key(key)->AppendJsonString(v);
    return *this;
  }
  // Bytes rendered per --bytes as a JSON string; nullopt is JSON null (cli.md).
  JsonObject& OptBytes(std::string_view key, const std::optional<Bytes>& v, BytesFormat format) {
    Output* o = Key(key);
    if (!v) {
      o->Append("null");
    } else {
      o->Append('"');
      o->AppendBytes(*v, format, /*json=*/true);
      o->Append('"');
    }
    return *this;
  }
  void Close() { out_->Append('}'); }
  // Closes the object and ends the JSON Lines line.
  void CloseLine() { out_->Append("}\n"); }

 private:
  Output* out_;
  bool first_ = true;
};

}  // namespace klf::cli
