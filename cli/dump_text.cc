// `klf dump` without --json: the line formats of kafka-dump-log.sh (spec dump-log-segments.md §3.1,
// §3.2, §4), so eyes and scripts used to it keep working, without its noise (§7): no
// "non-consecutive offsets" summary (gaps are normal after compaction), no stray `}` after legacy
// CRCs, problems printed where they occur (once, with file, byte position and byte counts) instead
// of aborting or of summaries on stderr.
#include <cstdint>
#include <optional>
#include <string>

#include "cli/dump_printer.h"

namespace klf::cli {
namespace {

class TextDumpPrinter : public DumpPrinter {
 public:
  TextDumpPrinter(Output* out, BytesFormat bytes, bool quiet_empty_files, TextRecordStyle style)
      : out_(out), bytes_(bytes), quiet_empty_files_(quiet_empty_files), style_(style) {}
  ~TextDumpPrinter() override { EndFile(); }

  void BeginFile(const std::string& path, const FileName& name) override {
    // The header is held back until the file prints something (or ends, unless quiet).
    EndFile();
    header_.clear();
    Output o(&header_, 256);
    o.Append("Dumping ");
    o.Append(path);
    o.Append('\n');
    switch (name.kind) {
      case FileKind::kLog:
        o.Append("Log starting offset: ");
        if (name.offset)
          o.AppendInt(*name.offset);
        else
          o.Append("unknown (file name is not <offset>.log)");
        o.Append('\n');
        break;
      case FileKind::kBootstrapCheckpoint: o.Append("KRaft bootstrap snapshot\n"); break;
      case FileKind::kKraftSnapshot:
      case FileKind::kKraftSnapshotPart:
        o.Field("Snapshot end offset: ", name.offset.value_or(-1));
        o.Field(", epoch: ", name.epoch);
        o.Append('\n');
        break;
      default: break;
    }
    o.Flush();
    header_pending_ = true;
  }

  void EndFile() override {
    if (header_pending_ && !quiet_empty_files_) Header();
    header_pending_ = false;
  }

  void Batch(const BatchHeader& h, const RecordDecoder* decoded, const DecodedRecords* internal) override {
    Header();
    Output& o = *out_;
    if (h.magic >= 2) {
      o.Field("baseOffset: ", h.base_offset);
      o.Field(" lastOffset: ", h.last_offset);
      o.Field(" count: ", h.record_count);
      o.Field(" baseSequence: ", h.base_sequence);
      o.Field(" lastSequence: ", h.last_sequence());
      o.Field(" producerId: ", h.producer_id);
      o.Field(" producerEpoch: ", h.producer_epoch);
      o.Field(" partitionLeaderEpoch: ", h.partition_leader_epoch);
      o.BoolField(" isTransactional: ", h.is_transactional);
      o.BoolField(" isControl: ", h.is_control);
      o.Append(" deleteHorizonMs: ");
      AppendOptionalLong(h.delete_horizon_ms);
    } else {
      o.Field("offset: ", h.last_offset);
    }
    // The rest of the line is the same for every magic, as kafka-dump-log prints it.
    o.UintField(" position: ", h.position);
    o.Append(' ');
    o.Append(TimestampTypeName(h.magic == 0 ? TimestampType::kNoTimestampType : h.timestamp_type));
    o.Field(": ", h.magic == 0 ? kNoTimestamp : h.max_timestamp);
    o.UintField(" size: ", h.size_in_bytes);
    o.Field(" magic: ", h.magic);
    o.Append(" compresscodec: ");
    o.Append(CompressionName(h.compression));
    o.UintField(" crc: ", h.crc);
    o.BoolField(" isvalid: ", h.crc_valid);
    o.Append('\n');
    if (decoded) {
      size_t i = 0;
      for (const Record& r : decoded->records()) {
        const DecodedRecord* d = internal && i < internal->size() && (*internal)[i] ? &*(*internal)[i] : nullptr;
        WriteRecord(h, r, *decoded, d);
        ++i;
      }
    }
  }

  void OffsetIndexEntry(size_t, const klf::OffsetIndexEntry& e) override {
    Header();
    out_->Field("offset: ", e.offset);
    out_->Field(" position: ", e.position);
    out_->Append('\n');
  }

  void TimeIndexEntry(size_t, const klf::TimeIndexEntry& e) override {
    Header();
    out_->Field("timestamp: ", e.timestamp);
    out_->Field(" offset: ", e.offset);
    out_->Append('\n');
  }

  void TxnIndexEntry(size_t, const AbortedTxn& e) override {
    Header();
    out_->Field("version: ", e.version);
    out_->Field(" producerId: ", e.producer_id);
    out_->Field(" firstOffset: ", e.first_offset);
    out_->Field(" lastOffset: ", e.last_offset);
    out_->Field(" lastStableOffset: ", e.last_stable_offset);
    out_->Append('\n');
  }

  void ProducerSnapshotEntry(size_t, int64_t, const klf::ProducerSnapshotEntry& e) override {
    Header();
    Output& o = *out_;
    o.Field("producerId: ", e.producer_id);
    o.Field(" producerEpoch: ", e.epoch);
    o.Field(" coordinatorEpoch: ", e.coordinator_epoch);
    o.Append(" currentTxnFirstOffset: ");
    // The snapshot stores -1 for "no ongoing transaction" (ProducerStateManager).
    AppendOptionalLong(e.current_txn_first_offset >= 0 ? std::optional<int64_t>(e.current_txn_first_offset)
                                                       : std::nullopt);
    o.Field(" lastTimestamp: ", e.timestamp);
    if (e.last_offset >= 0) {
      o.Field(" firstSequence: ", e.first_sequence());
      o.Field(" lastSequence: ", e.last_sequence);
      o.Field(" lastOffset: ", e.last_offset);
      o.Field(" offsetDelta: ", e.offset_delta);
      o.Field(" timestamp: ", e.timestamp);
    }
    o.Append('\n');
  }

  void LeaderEpochEntry(const klf::LeaderEpochEntry& e) override {
    Header();
    out_->Field("epoch: ", e.epoch);
    out_->Field(" startOffset: ", e.start_offset);
    out_->Append('\n');
  }

  void PartitionMetadataEntry(const PartitionMetadata& m) override {
    Header();
    out_->Field("version: ", m.version);
    out_->Append(" topicId: ");
    out_->Append(m.topic_id);
    out_->Append('\n');
  }

  void OffsetCheckpointEntry(std::string_view, const klf::OffsetCheckpointEntry& e) override {
    Header();
    out_->Append("partition: ");
    out_->Append(e.tp.topic);
    out_->Append('-');
    out_->AppendInt(e.tp.partition);
    out_->Field(" offset: ", e.offset);
    out_->Append('\n');
  }

  void MetaPropertiesEntry(const MetaProperties& m) override {
    Header();
    for (const auto& [k, v] : m.properties) {
      out_->Append(k);
      out_->Append('=');
      out_->Append(v);
      out_->Append('\n');
    }
  }

  void CleanShutdownEntry(const CleanShutdown& c) override {
    Header();
    out_->Append("clean shutdown");
    if (c.broker_epoch) {
      out_->Field(" brokerEpoch: ", *c.broker_epoch);
    }
    out_->Append('\n');
  }

  void QuorumStateEntry(const OrderedJson& state) override {
    Header();
    bool first = true;
    for (const auto& [k, v] : state.items()) {
      if (!first) out_->Append(' ');
      first = false;
      AppendText(k);
      out_->Append(": ");
      AppendText(v.is_string() ? v.get<std::string>() : DecodedJsonText(v));
    }
    out_->Append('\n');
  }

  void Note(std::string_view text) override {
    Header();
    out_->Append(text);
    out_->Append('\n');
  }

  void PrintProblem(const Problem& p) override {
    Header();
    // One line, grep-able, like a compiler diagnostic: <file>: position <n>: <severity>: <message> [<check>]
    out_->Append(p.file);
    out_->UintField(": position ", p.position);
    out_->Append(": ");
    out_->Append(SeverityName(p.severity));
    out_->Append(": ");
    out_->Append(p.message);
    out_->Append(" [");
    out_->Append(p.check);
    out_->Append("]\n");
  }

 private:
  void Header() {
    if (!header_pending_) return;
    header_pending_ = false;
    out_->Append(header_);
  }

  // Java's OptionalLong.toString, as kafka-dump-log prints deleteHorizonMs and currentTxnFirstOffset.
  void AppendOptionalLong(std::optional<int64_t> v) {
    if (v) {
      out_->Field("OptionalLong[", *v);
      out_->Append(']');
    } else {
      out_->Append("OptionalLong.empty");
    }
  }

  // Decoded text (kafka-dump-log's decoder output) holds the record's own strings: invalid UTF-8 is
  // escaped as --bytes text escapes it.
  void AppendText(std::string_view s) { out_->AppendBytes(AsBytes(s), BytesFormat::kText, false); }

  // NOLINTNEXTLINE(readability-function-cognitive-complexity): one text field per record field as kafka-dump-log prints it (v0/v1 and v2 differ)
  void WriteRecord(const BatchHeader& h, const Record& r, const RecordDecoder& decoded, const DecodedRecord* internal) {
    Output& o = *out_;
    if (style_.skip_record_metadata) return WriteRecordDataOnly(h, r, internal);
    o.Field("| offset: ", r.offset);
    o.Append(' ');
    o.Append(TimestampTypeName(h.magic == 0 ? TimestampType::kNoTimestampType : h.timestamp_type));
    o.Field(": ", h.magic == 0 ? kNoTimestamp : r.timestamp);
    o.Field(" keySize: ", r.key ? int64_t(r.key->size()) : -1);
    o.Field(" valueSize: ", r.value ? int64_t(r.value->size()) : -1);
    if (h.magic >= 2) {
      o.Field(" sequence: ", r.sequence);
      o.Append(" headerKeys: [");
      bool first = true;
      for (const RecordHeader& hd : decoded.headers(r)) {
        if (!first) o.Append(',');
        first = false;
        o.AppendBytes(hd.key, BytesFormat::kText, false);
      }
      o.Append(']');
    } else {
      o.BoolField(" isValid: ", r.legacy_crc_valid);
      o.UintField(" crc: ", r.legacy_crc);
    }
    if (h.is_control && internal && internal->control_text) {
      o.Append(' ');
      AppendText(*internal->control_text);
    } else if (h.is_control) {
      ControlRecord c;
      std::string error;
      if (!ParseControlRecord(r, &c, &error)) {
        o.Append(" controlType: unparseable");
      } else if (IsEndTxnMarker(c.type)) {
        o.Append(" endTxnMarker: ");
        o.Append(ControlTypeName(c.type));
        o.Field(" coordinatorEpoch: ", c.coordinator_epoch);
      } else {
        o.Append(" controlType: ");
        o.Append(ControlTypeName(c.type));
        o.Append('(');
        o.AppendInt(c.raw_type);
        o.Append(')');
      }
    } else if (internal && style_.print_data) {
      // As kafka-dump-log prints a decoder's output: a part it does not print (the key of a metadata
      // record) is left out.
      if (internal->key_text) {
        o.Append(" key: ");
        AppendText(*internal->key_text);
      }
      if (internal->value_text) {
        o.Append(" payload: ");
        AppendText(*internal->value_text);
      }
    } else if (style_.print_data) {
      // cli.md: a null key or value prints `null` in text mode (kafka-dump-log omits it).
      o.Append(" key: ");
      if (r.key)
        o.AppendBytes(*r.key, bytes_, false);
      else
        o.Append("null");
      o.Append(" payload: ");
      if (r.value)
        o.AppendBytes(*r.value, bytes_, false);
      else
        o.Append("null");
    }
    o.Append('\n');
  }

  // kafka-dump-log --skip-record-metadata: only the data, and only what is not null; its quirk kept
  // (a record with a null key prints ` payload: <v>` without the leading `|`). Control records print
  // an empty line.
  void WriteRecordDataOnly(const BatchHeader& h, const Record& r, const DecodedRecord* internal) {
    Output& o = *out_;
    if (!h.is_control) {
      if (internal) {
        if (internal->key_text) {
          o.Append("| key: ");
          AppendText(*internal->key_text);
        }
        if (internal->value_text) {
          o.Append(" payload: ");
          AppendText(*internal->value_text);
        }
      } else {
        if (r.key) {
          o.Append("| key: ");
          o.AppendBytes(*r.key, bytes_, false);
        }
        if (r.value) {
          o.Append(" payload: ");
          o.AppendBytes(*r.value, bytes_, false);
        }
      }
    }
    o.Append('\n');
  }

  Output* out_;
  BytesFormat bytes_;
  bool quiet_empty_files_;
  TextRecordStyle style_;
  std::string header_;
  bool header_pending_ = false;
};

}  // namespace

std::unique_ptr<DumpPrinter> MakeTextDumpPrinter(Output* out, BytesFormat bytes, bool quiet_empty_files,
                                                 TextRecordStyle style) {
  return std::make_unique<TextDumpPrinter>(out, bytes, quiet_empty_files, style);
}

}  // namespace klf::cli
