// `klf dump --json`: JSON Lines, one object per batch or entry (spec cli.md "dump").
//
// Fields a magic does not have are null (cli.md): for magic 0/1 that is every v2-only header field
// (producer fields, leader epoch, base timestamp, delete horizon, count, transactional/control
// flags), for magic 0 also the timestamps.
#include <string>

#include "cli/dump_printer.h"
#include "cli/json_out.h"
#include "cli/record_out.h"

namespace klf::cli {
namespace {

class JsonDumpPrinter : public DumpPrinter {
 public:
  JsonDumpPrinter(Output* out, BytesFormat bytes, bool per_record)
      : out_(out), bytes_(bytes), per_record_(per_record) {}

  void SetPartition(const std::optional<TopicPartition>& tp) override {
    source_.topic = tp ? std::optional<std::string>(tp->topic) : std::nullopt;
    source_.partition = tp ? std::optional<int32_t>(tp->partition) : std::nullopt;
  }

  void BeginFile(const std::string& path, const FileName&) override {
    source_.file = path;
    // The file name is escaped once per file, not once per batch.
    std::string escaped;
    Output o(&escaped, path.size() * 6 + 8);
    o.AppendJsonString(path);
    o.Flush();
    file_json_ = std::move(escaped);
  }

  // NOLINTNEXTLINE(readability-function-cognitive-complexity): one JSON key per batch header field, each as kafka-dump-log prints it (v0/v1 and v2 differ)
  void Batch(const BatchHeader& h, const RecordDecoder* decoded, const DecodedRecords* internal) override {
    if (per_record_ && decoded) {
      size_t i = 0;
      for (const Record& r : decoded->records()) {
        std::string decoded_json;
        if (internal)
          decoded_json = i < internal->size() && (*internal)[i] ? DecodedJsonText((*internal)[i]->json) : "null";
        WriteRecordJson(out_, source_, h, r, *decoded, bytes_, internal ? &decoded_json : nullptr);
        ++i;
      }
      return;
    }
    const bool v2 = h.magic >= 2;
    JsonObject j = Entry("batch");
    j.Uint("position", h.position);
    if (h.base_offset_known)
      j.Int("baseOffset", h.base_offset);
    else
      j.Null("baseOffset");
    j.Int("lastOffset", h.last_offset);
    j.Int("magic", h.magic);
    j.String("compression", CompressionName(h.compression));
    j.Uint("sizeInBytes", h.size_in_bytes);
    j.Uint("crc", h.crc);
    j.Bool("crcValid", h.crc_valid);
    if (h.magic == 0)
      j.Null("timestampType");
    else
      j.String("timestampType", TimestampTypeName(h.timestamp_type));
    if (v2)
      j.Int("baseTimestamp", h.base_timestamp);
    else
      j.Null("baseTimestamp");
    if (h.magic == 0)
      j.Null("maxTimestamp");
    else
      j.Int("maxTimestamp", h.max_timestamp);
    if (v2) {
      j.OptInt("deleteHorizonMs", h.delete_horizon_ms);
      j.Int("partitionLeaderEpoch", h.partition_leader_epoch);
      j.Int("producerId", h.producer_id);
      j.Int("producerEpoch", h.producer_epoch);
      j.Int("baseSequence", h.base_sequence);
      j.Int("lastSequence", h.last_sequence());
      j.Bool("isTransactional", h.is_transactional);
      j.Bool("isControl", h.is_control);
      j.Int("recordCount", h.record_count);
    } else {
      for (const char* k : {"deleteHorizonMs", "partitionLeaderEpoch", "producerId", "producerEpoch", "baseSequence",
                            "lastSequence", "isTransactional", "isControl", "recordCount"}) {
        j.Null(k);
      }
    }
    if (decoded) {
      j.Key("records")->Append('[');
      bool first = true;
      size_t i = 0;
      for (const Record& r : decoded->records()) {
        if (!first) out_->Append(',');
        first = false;
        WriteRecord(h, r, *decoded, internal ? (i < internal->size() ? &(*internal)[i] : nullptr) : nullptr,
                    internal != nullptr);
        ++i;
      }
      out_->Append(']');
    }
    j.CloseLine();
  }

  void OffsetIndexEntry(size_t slot, const klf::OffsetIndexEntry& e) override {
    JsonObject j = Entry("offset-index-entry");
    j.Uint("position", uint64_t(slot) * kOffsetIndexEntrySize);
    j.Int("offset", e.offset);
    j.Int("logPosition", e.position);
    j.CloseLine();
  }

  void TimeIndexEntry(size_t slot, const klf::TimeIndexEntry& e) override {
    JsonObject j = Entry("time-index-entry");
    j.Uint("position", uint64_t(slot) * kTimeIndexEntrySize);
    j.Int("timestamp", e.timestamp);
    j.Int("offset", e.offset);
    j.CloseLine();
  }

  void TxnIndexEntry(size_t slot, const AbortedTxn& e) override {
    JsonObject j = Entry("txn-index-entry");
    j.Uint("position", uint64_t(slot) * kTxnIndexEntrySize);
    j.Int("version", e.version);
    j.Int("producerId", e.producer_id);
    j.Int("firstOffset", e.first_offset);
    j.Int("lastOffset", e.last_offset);
    j.Int("lastStableOffset", e.last_stable_offset);
    j.CloseLine();
  }

  void ProducerSnapshotEntry(size_t slot, int64_t snapshot_offset, const klf::ProducerSnapshotEntry& e) override {
    // Entries are fixed-size after a 10-byte header (spec §10).
    JsonObject j = Entry("producer-snapshot-entry");
    j.Uint("position", 10 + uint64_t(slot) * 46);
    j.Int("snapshotOffset", snapshot_offset);
    j.Int("producerId", e.producer_id);
    j.Int("producerEpoch", e.epoch);
    j.Int("coordinatorEpoch", e.coordinator_epoch);
    j.OptInt("currentTxnFirstOffset",
             e.current_txn_first_offset >= 0 ? std::optional<int64_t>(e.current_txn_first_offset) : std::nullopt);
    j.Int("lastTimestamp", e.timestamp);
    // Kafka keeps batch metadata only when the producer has written a data batch (lastOffset >= 0).
    if (e.last_offset >= 0) {
      j.Int("firstSequence", e.first_sequence());
      j.Int("lastSequence", e.last_sequence);
      j.Int("firstOffset", e.first_offset());
      j.Int("lastOffset", e.last_offset);
      j.Int("offsetDelta", e.offset_delta);
    } else {
      for (const char* k : {"firstSequence", "lastSequence", "firstOffset", "lastOffset", "offsetDelta"}) j.Null(k);
    }
    j.CloseLine();
  }

  void LeaderEpochEntry(const klf::LeaderEpochEntry& e) override {
    JsonObject j = Entry("leader-epoch-entry");
    j.Int("epoch", e.epoch);
    j.Int("startOffset", e.start_offset);
    j.CloseLine();
  }

  void PartitionMetadataEntry(const PartitionMetadata& m) override {
    JsonObject j = Entry("partition-metadata");
    j.Int("version", m.version);
    j.String("topicId", m.topic_id);
    j.CloseLine();
  }

  void OffsetCheckpointEntry(std::string_view checkpoint, const klf::OffsetCheckpointEntry& e) override {
    JsonObject j = Entry("offset-checkpoint-entry");
    j.String("checkpoint", checkpoint);
    j.String("topic", e.tp.topic);
    j.Int("partition", e.tp.partition);
    j.Int("offset", e.offset);
    j.CloseLine();
  }

  void MetaPropertiesEntry(const MetaProperties& m) override {
    JsonObject j = Entry("meta-properties");
    JsonObject props(j.Key("properties"));
    for (const auto& [k, v] : m.properties) props.String(k, v);
    props.Close();
    j.CloseLine();
  }

  void CleanShutdownEntry(const CleanShutdown& c) override {
    JsonObject j = Entry("clean-shutdown");
    j.OptInt("version", c.version ? std::optional<int64_t>(*c.version) : std::nullopt);
    j.OptInt("brokerEpoch", c.broker_epoch);
    j.CloseLine();
  }

  void QuorumStateEntry(const OrderedJson& state) override {
    JsonObject j = Entry("quorum-state");
    WriteDecodedJson(j.Key("data"), state);
    j.CloseLine();
  }

  void Note(std::string_view) override {}

  void PrintProblem(const Problem& p) override {
    // cli.md: {"file", "position", "error"}. Every problem carries its message under "error" so a
    // consumer needs one key; "severity" says whether Kafka itself would call it an error
    // (a torn or zero-filled tail is a "warning": Kafka's recovery truncates it silently).
    // Notes (severity info: an unexpected subdirectory, ...) are not problems: "type": "note" and
    // the message under "note", so that every object with an "error" key is a problem.
    const bool note = p.severity == Severity::kInfo;
    JsonObject j(out_);
    j.String("file", p.file);
    j.String("type", note ? "note" : "error");
    j.Uint("position", p.position);
    j.String(note ? "note" : "error", p.message);
    j.String("check", p.check);
    j.String("severity", SeverityName(p.severity));
    j.CloseLine();
  }

 private:
  // An object of the JSON Lines stream: {"file": <the file>, "type": <type>, ...}; the caller adds
  // its fields and closes the line.
  JsonObject Entry(std::string_view type) {
    JsonObject j(out_);
    j.Raw("file", file_json_);
    j.String("type", type);
    return j;
  }

  char* WriteOptBytes(char* o, const std::optional<Bytes>& v) {
    if (!v) return WriteLiteral(o, "null");
    *o++ = '"';
    o = WriteBytes(o, *v, bytes_, /*json=*/true);
    *o++ = '"';
    return o;
  }
  // As WriteOptBytes, through the Output's own reservations (long byte strings go slice by slice).
  void AppendOptBytes(const std::optional<Bytes>& v) {
    if (!v) return out_->Append("null");
    out_->Append('"');
    out_->AppendBytes(*v, bytes_, /*json=*/true);
    out_->Append('"');
  }
  size_t MaxOptBytes(const std::optional<Bytes>& v) const { return v ? MaxRenderedBytes(v->size(), bytes_) + 2 : 4; }

  // The characters of a record object besides its key, value and headers: the literals below plus
  // three integers (offset, timestamp, sequence; legacy: timestamp, magic, crc), whichever the magic.
  static constexpr size_t kRecordFixedChars = 256;
  // The literals of one header object, `,{"key":"` `","value":` `}`, besides its key and value.
  static constexpr size_t kHeaderFixedChars = sizeof(",{\"key\":\"") - 1 + sizeof("\",\"value\":") - 1 + 1;
  // Key and value up to this rendered size share the record's one reservation; larger ones are
  // appended slice by slice, so the buffer never grows with a value's size.
  static constexpr size_t kOneReservationBytes = size_t(64) << 10;

  // One record object. This runs once per record of a dump, so in the common case (key and value
  // below kOneReservationBytes) the fixed part, key and value are written with one reservation of
  // their worst-case size instead of a bounds check per field; each header has its own reservation,
  // since a record may declare millions of them.
  // `internal`: with a topic decoder, the record as it decoded (nullopt: it did not, and "decoded" is
  // null); `with_decoder` says whether a decoder applied at all (no "decoded" field otherwise).
  void WriteRecord(const BatchHeader& h, const Record& r, const RecordDecoder& decoded,
                   const std::optional<DecodedRecord>* internal, bool with_decoder) {
    const size_t key_value = MaxOptBytes(r.key) + MaxOptBytes(r.value);
    const bool one_reservation = key_value <= kOneReservationBytes;
    char* start = out_->Reserve(kRecordFixedChars + (one_reservation ? key_value : 0));
    char* o = WriteLiteral(start, "{\"offset\":");
    o = WriteInt(o, r.offset);
    o = WriteLiteral(o, ",\"timestamp\":");
    o = h.magic == 0 ? WriteLiteral(o, "null") : WriteInt(o, r.timestamp);
    o = WriteLiteral(o, ",\"key\":");
    if (one_reservation) {
      o = WriteOptBytes(o, r.key);
      o = WriteLiteral(o, ",\"value\":");
      o = WriteOptBytes(o, r.value);
    } else {
      out_->Commit(size_t(o - start));
      AppendOptBytes(r.key);
      out_->Append(",\"value\":");
      AppendOptBytes(r.value);
      o = start = out_->Reserve(kRecordFixedChars);
    }
    if (h.magic >= 2) {
      o = WriteLiteral(o, ",\"sequence\":");
      o = WriteInt(o, r.sequence);
      o = WriteLiteral(o, ",\"headers\":[");
      out_->Commit(size_t(o - start));
      WriteHeaders(decoded.headers(r));
      out_->Append(']');
    } else {
      // Legacy messages have no sequence or headers, and each has its own magic and CRC.
      o = WriteLiteral(o, ",\"sequence\":null,\"headers\":null,\"magic\":");
      o = WriteInt(o, r.magic);
      o = WriteLiteral(o, ",\"crc\":");
      o = WriteUint(o, r.legacy_crc);
      o = WriteLiteral(o, r.legacy_crc_valid ? ",\"crcValid\":true" : ",\"crcValid\":false");
      out_->Commit(size_t(o - start));
    }
    if (h.is_control) WriteControl(r);
    if (with_decoder) {
      // Control markers (ABORT/COMMIT) are not decoded by a topic decoder: "control" says it all.
      ControlRecord c;
      std::string error;
      const bool marker = h.is_control && ParseControlRecord(r, &c, &error) && IsEndTxnMarker(c.type);
      if (!marker) {
        out_->Append(",\"decoded\":");
        if (internal && *internal)
          WriteDecodedJson(out_, (*internal)->json);
        else
          out_->Append("null");
      }
    }
    out_->Append('}');
  }

  template <typename Headers>
  void WriteHeaders(const Headers& headers) {
    // Header keys are strings in Kafka (cli.md: "key": string), so --bytes never applies to them and jq
    // filters on them keep working; header values follow --bytes like keys and values.
    bool first = true;
    for (const RecordHeader& hd : headers) {
      const size_t key_value = MaxRenderedBytes(hd.key.size(), BytesFormat::kText) + MaxOptBytes(hd.value);
      if (key_value > kOneReservationBytes) {
        out_->Append(first ? "{\"key\":\"" : ",{\"key\":\"");
        out_->AppendBytes(hd.key, BytesFormat::kText, /*json=*/true);
        out_->Append("\",\"value\":");
        AppendOptBytes(hd.value);
        out_->Append('}');
      } else {
        char* start = out_->Reserve(kHeaderFixedChars + key_value);
        char* o = WriteLiteral(start, first ? "{\"key\":\"" : ",{\"key\":\"");
        o = WriteBytes(o, hd.key, BytesFormat::kText, /*json=*/true);
        o = WriteLiteral(o, "\",\"value\":");
        o = WriteOptBytes(o, hd.value);
        *o++ = '}';
        out_->Commit(size_t(o - start));
      }
      first = false;
    }
  }

  // cli.md: a record of a control batch also has "control": {"type", "coordinatorEpoch"}.
  void WriteControl(const Record& r) {
    out_->Append(",\"control\":");
    ControlRecord c;
    std::string error;
    if (!ParseControlRecord(r, &c, &error)) {
      out_->Append("null");  // dump.cc reported why
      return;
    }
    JsonObject cj(out_);
    cj.String("type", ControlTypeName(c.type));
    cj.Int("rawType", c.raw_type);
    if (IsEndTxnMarker(c.type))
      cj.Int("coordinatorEpoch", c.coordinator_epoch);
    else
      cj.Null("coordinatorEpoch");
    cj.Close();
  }

  Output* out_;
  BytesFormat bytes_;
  bool per_record_;
  RecordSource source_;
  std::string file_json_ = "null";
};

}  // namespace

std::unique_ptr<DumpPrinter> MakeJsonDumpPrinter(Output* out, BytesFormat bytes, bool per_record) {
  return std::make_unique<JsonDumpPrinter>(out, bytes, per_record);
}

}  // namespace klf::cli
