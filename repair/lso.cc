// See lso.h for the Kafka rules followed.
#include "repair/lso.h"
#include "segment_reader/java_long.h"

#include <algorithm>

#include <fmt/format.h>

namespace klf {

const char* LsoReplicaMarkerKindName(LsoReplicaMarker::Kind k) {
  switch (k) {
    case LsoReplicaMarker::Kind::kMarker: return "marker";
    case LsoReplicaMarker::Kind::kEmptyBatch: return "empty_batch";
    case LsoReplicaMarker::Kind::kOpenToo: return "open";
    case LsoReplicaMarker::Kind::kDecided: return "decided";
    case LsoReplicaMarker::Kind::kBehind: return "behind";
  }
  return "?";
}

namespace {

std::string Duration(int64_t ms) {
  if (ms < 0) return fmt::format("{} ms", ms);
  if (ms < 120000) return fmt::format("{} s", ms / 1000);
  if (ms < 7200000) return fmt::format("{} min", ms / 60000);
  if (ms < 172800000) return fmt::format("{:.1f} h", ms / 3600000.0);
  return fmt::format("{:.1f} days", ms / 86400000.0);
}

}  // namespace

LsoReport ExplainLso(const ReplicaState& r, const std::vector<ReplicaState>& others, const LsoOptions& options) {
  LsoReport rep;
  if (r.tp) {
    rep.partition = r.tp->ToString();
    rep.topic = r.tp->topic;
    rep.partition_number = r.tp->partition;
  }
  rep.log_start_offset = r.log_start_offset;
  rep.log_end_offset = r.log_end_offset;
  rep.high_watermark = r.high_watermark;
  rep.last_stable_offset = r.last_stable_offset;
  rep.open_transactions = r.open_txns;
  std::sort(rep.open_transactions.begin(), rep.open_transactions.end(),
            [](const OpenTxn& a, const OpenTxn& b) { return a.first_offset < b.first_offset; });
  for (const OpenTxn& t : rep.open_transactions) {
    if (t.first_offset < r.high_watermark && t.first_offset == r.last_stable_offset) {
      rep.pinned_by = t;
      break;
    }
  }
  if (!rep.pinned_by) {
    if (rep.open_transactions.empty()) {
      rep.explanation = fmt::format(
          "no open transaction: the last stable offset {} is the high watermark{}; read_committed consumers read "
          "everything replicated",
          r.last_stable_offset, r.high_watermark_from_checkpoint ? " (replication-offset-checkpoint)" : " (log end)");
    } else {
      const OpenTxn& t = rep.open_transactions.front();
      rep.explanation = fmt::format(
          "producer {} has a transaction open from offset {}, at or above the high watermark {}: it does not hold the "
          "last stable offset ({}) back yet",
          t.producer_id, t.first_offset, r.high_watermark, r.last_stable_offset);
    }
    rep.resolution = "nothing to do";
    return rep;
  }

  const OpenTxn& t = *rep.pinned_by;
  int64_t now = options.now_ms.value_or(r.max_timestamp);
  // What the other replicas show for this producer after the transaction's first offset.
  std::string others_text;
  bool decided_elsewhere = false;
  std::string decided_how;
  for (const ReplicaState& o : others) {
    LsoReplicaMarker m;
    m.label = o.label;
    m.path = o.path;
    const Marker* mk = o.NextMarker(t.producer_id, t.first_offset);
    bool open_there = std::any_of(o.open_txns.begin(), o.open_txns.end(), [&](const OpenTxn& x) {
      return x.producer_id == t.producer_id && x.first_offset <= t.first_offset;
    });
    if (mk && (mk->type == MarkerType::kCommit || mk->type == MarkerType::kAbort)) {
      m.kind = LsoReplicaMarker::Kind::kMarker;
      m.offset = mk->offset;
      m.type = MarkerTypeName(mk->type);
    } else if (open_there) {
      m.kind = LsoReplicaMarker::Kind::kOpenToo;
    } else if (o.log_end_offset <= t.first_offset) {
      m.kind = LsoReplicaMarker::Kind::kBehind;
    } else if (mk) {
      m.kind = LsoReplicaMarker::Kind::kEmptyBatch;
      m.offset = mk->offset;
      m.type = MarkerTypeName(mk->type);
    } else {
      m.kind = LsoReplicaMarker::Kind::kDecided;
    }
    switch (m.kind) {
      case LsoReplicaMarker::Kind::kMarker:
        others_text += fmt::format(" {} holds the {} of producer {} at offset {}, which this replica lacks.", o.label,
                                   m.type, t.producer_id, m.offset);
        decided_elsewhere = true;
        decided_how = fmt::format("{} ({} on {})", m.type, m.offset, o.label);
        break;
      case LsoReplicaMarker::Kind::kEmptyBatch:
        others_text += fmt::format(
            " {} holds only an emptied control batch of producer {} at offset {} and no open transaction: the "
            "transaction was decided there and its marker cleaned (an empty batch closes nothing on a follower).",
            o.label, t.producer_id, m.offset);
        decided_elsewhere = true;
        if (decided_how.empty()) decided_how = fmt::format("marker compacted to an empty batch on {}", o.label);
        break;
      case LsoReplicaMarker::Kind::kOpenToo:
        others_text += fmt::format(" {} has the same transaction open (LSO {}): no replica has its marker yet.",
                                   o.label, o.last_stable_offset);
        break;
      case LsoReplicaMarker::Kind::kBehind:
        others_text += fmt::format(" {} ends at offset {}, before the transaction.", o.label, o.log_end_offset);
        break;
      case LsoReplicaMarker::Kind::kDecided:
        others_text += fmt::format(
            " {} has no open transaction of producer {} and no marker of it after offset {} (its LSO is {}): the "
            "transaction was decided there and the marker compacted away.",
            o.label, t.producer_id, t.first_offset, o.last_stable_offset);
        decided_elsewhere = true;
        if (decided_how.empty()) decided_how = fmt::format("marker compacted away on {}", o.label);
        break;
    }
    rep.replicas.push_back(m);
  }

  int64_t idle = JavaSub(now, t.last_timestamp);  // any timestamp the data holds: wrap, as Java does
  bool later_here = r.NextMarker(t.producer_id, t.first_offset) != nullptr;
  rep.explanation = fmt::format(
      "the last stable offset {} is pinned below the high watermark {} by producer {} (epoch {}), whose transaction is "
      "open from offset {} (last data offset {}, last timestamp {}). A producer with an open transaction never "
      "expires (ProducerStateManager.isProducerExpired is false while currentTxnFirstOffset is set, also after a "
      "snapshot reload), so producer.id.expiration.ms does not lift the pin{}. The pin lifts only when a marker for "
      "producer {} is appended (its next transaction ends, or an admin abort), or when retention moves the log start "
      "offset (now {}) past offset {}.{}{}",
      r.last_stable_offset, r.high_watermark, t.producer_id, t.producer_epoch, t.first_offset, t.last_offset,
      t.last_timestamp,
      t.last_timestamp >= 0 ? fmt::format(" (the producer has been idle {} at {}; expiration is {})", Duration(idle), now,
                                          Duration(options.producer_id_expiration_ms))
                            : "",
      t.producer_id, r.log_start_offset, t.first_offset,
      later_here ? fmt::format(" This log holds only an emptied control batch of producer {} after it, which closes "
                               "nothing on a follower.",
                               t.producer_id)
                 : fmt::format(" This log holds no marker of producer {} after offset {}.", t.producer_id,
                               t.first_offset),
      others_text);

  std::string topic = rep.topic.empty() ? "<topic>" : rep.topic;
  rep.abort_command =
      fmt::format("kafka-transactions.sh --bootstrap-server {} abort --topic {} --partition {} --start-offset {}",
                  options.bootstrap_server, topic, rep.partition_number, t.first_offset);
  if (decided_elsewhere) {
    rep.resolution = fmt::format(
        "the other replicas decided this transaction ({}): this replica lost its marker (a hanging transaction). "
        "`klf repair --replica <healthy> --target {} --out DIR` writes the marker they imply at a free offset. "
        "On the live cluster, `{}` lifts the pin (the ABORT it writes closes the transaction here as aborted; the "
        "other replicas have no open transaction, so it changes nothing there). Waiting does not help: "
        "producer.id.expiration.ms never expires an open transaction.",
        decided_how, r.path, rep.abort_command);
  } else {
    rep.resolution = fmt::format(
        "if producer {} will not finish the transaction, abort it: `{}` (the ABORT it writes lifts the pin); "
        "otherwise the pin lifts when the producer's next marker is appended, or when retention deletes offset {}. "
        "Waiting for producer.id.expiration.ms does not help.",
        t.producer_id, rep.abort_command, t.first_offset);
  }
  return rep;
}

}  // namespace klf
