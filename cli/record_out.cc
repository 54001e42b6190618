#include "cli/record_out.h"

#include "cli/json_out.h"

namespace klf::cli {
namespace {

void AppendOptBytes(Output* out, const std::optional<Bytes>& v, BytesFormat format, bool json) {
  if (!v) return out->Append("null");
  if (json) out->Append('"');
  out->AppendBytes(*v, format, json);
  if (json) out->Append('"');
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one JSON key per record field, each written only when present
void WriteRecordJson(Output* out, const RecordSource& source, const BatchHeader& h, const Record& r,
                     const RecordDecoder& decoded, BytesFormat bytes, const std::string* decoded_json) {
  const bool v2 = h.magic >= 2;
  JsonObject j(out);
  j.String("type", "record");
  j.String("file", EscapeInvalidUtf8(source.file));
  j.Uint("position", h.position);
  if (source.topic)
    j.String("topic", EscapeInvalidUtf8(*source.topic));
  else
    j.Null("topic");
  j.OptInt("partition", source.partition);
  j.Int("offset", r.offset);
  if (h.magic == 0)
    j.Null("timestamp").Null("timestampType");
  else
    j.Int("timestamp", r.timestamp).String("timestampType", TimestampTypeName(h.timestamp_type));
  j.OptBytes("key", r.key, bytes);
  j.OptBytes("value", r.value, bytes);
  Output* o = j.Key("headers");
  if (!v2) {
    o->Append("null");
  } else {
    // Header keys are strings in Kafka (cli.md): --bytes applies to their values only.
    o->Append('[');
    bool first = true;
    for (const RecordHeader& hd : decoded.headers(r)) {
      o->Append(first ? "{\"key\":\"" : ",{\"key\":\"");
      first = false;
      o->AppendBytes(hd.key, BytesFormat::kText, /*json=*/true);
      o->Append("\",\"value\":");
      AppendOptBytes(o, hd.value, bytes, /*json=*/true);
      o->Append('}');
    }
    o->Append(']');
  }
  if (v2) {
    j.Int("sequence", r.sequence);
    j.Int("producerId", h.producer_id);
    j.Int("producerEpoch", h.producer_epoch);
    j.Int("partitionLeaderEpoch", h.partition_leader_epoch);
    j.Bool("isTransactional", h.is_transactional);
    j.Bool("isControl", h.is_control);
  } else {
    for (const char* k :
         {"sequence", "producerId", "producerEpoch", "partitionLeaderEpoch", "isTransactional", "isControl"}) {
      j.Null(k);
    }
  }
  ControlRecord c;
  std::string error;
  const bool control_parsed = h.is_control && ParseControlRecord(r, &c, &error);
  const bool marker = control_parsed && IsEndTxnMarker(c.type);
  if (h.is_control) {
    Output* co = j.Key("control");
    if (!control_parsed) {
      co->Append("null");  // dump reports why
    } else {
      JsonObject cj(co);
      cj.String("type", ControlTypeName(c.type));
      cj.Int("rawType", c.raw_type);
      if (marker)
        cj.Int("coordinatorEpoch", c.coordinator_epoch);
      else
        cj.Null("coordinatorEpoch");
      cj.Close();
    }
  }
  // Markers are not a topic decoder's: "control" says it all (as in dump's batch records).
  if (decoded_json && !marker) j.Raw("decoded", *decoded_json);
  j.CloseLine();
}

void WriteRecordText(Output* out, const BatchHeader& h, const Record& r, const RecordDecoder& decoded,
                     BytesFormat bytes) {
  out->Field("offset: ", r.offset);
  out->Append(' ');
  out->Append(TimestampTypeName(h.magic == 0 ? TimestampType::kNoTimestampType : h.timestamp_type));
  out->Append(": ");
  out->Append(WithWallClock(h.magic == 0 ? kNoTimestamp : r.timestamp));
  out->Append(" key: ");
  AppendOptBytes(out, r.key, bytes, /*json=*/false);
  out->Append(" value: ");
  AppendOptBytes(out, r.value, bytes, /*json=*/false);
  out->Append(" headers: [");
  bool first = true;
  for (const RecordHeader& hd : decoded.headers(r)) {
    if (!first) out->Append(", ");
    first = false;
    out->AppendBytes(hd.key, BytesFormat::kText, /*json=*/false);
    out->Append(": ");
    AppendOptBytes(out, hd.value, bytes, /*json=*/false);
  }
  out->Append("]\n");
}

}  // namespace klf::cli
