// See lso.h for the Kafka rules followed.
#include "diff/lso.h"
#include "segment_reader/bytes.h"
#include "segment_reader/java_long.h"

#include <algorithm>
#include <map>
#include <set>
#include <span>

#include <fmt/format.h>

namespace klf {

const char* LsoWitnessKindName(LsoWitness::Kind k) {
  switch (k) {
    case LsoWitness::Kind::kMarker: return "marker";
    case LsoWitness::Kind::kEmptyBatch: return "empty_batch";
    case LsoWitness::Kind::kOpenToo: return "open";
    case LsoWitness::Kind::kDecided: return "decided";
    case LsoWitness::Kind::kBehind: return "behind";
    case LsoWitness::Kind::kNotHeld: return "not_held";
  }
  return "?";
}

namespace {

std::string Join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The epochs each producer of interest has in one replica: broker-loaded producer state, markers and
// transactional data of its log (one pass over each).
std::map<int64_t, LsoEpochSource> EpochsOf(const ReplicaState& r, const std::set<int64_t>& pids) {
  std::map<int64_t, LsoEpochSource> out;
  auto note = [&](int64_t pid) -> LsoEpochSource* {
    if (!pids.count(pid)) return nullptr;
    LsoEpochSource& s = out[pid];
    s.label = r.label;
    s.path = r.path;
    return &s;
  };
  for (const LoadedProducer& p : r.producers) {
    if (LsoEpochSource* s = note(p.producer_id)) {
      s->in_producer_state = true;
      s->producer_epoch = std::max(s->producer_epoch, p.producer_epoch);
      s->coordinator_epoch = std::max(s->coordinator_epoch, p.coordinator_epoch);
    }
  }
  for (const Marker& m : r.markers) {
    if (LsoEpochSource* s = note(m.producer_id)) {
      s->producer_epoch = std::max(s->producer_epoch, m.producer_epoch);
      if (m.type == MarkerType::kCommit || m.type == MarkerType::kAbort) {
        s->coordinator_epoch = std::max(s->coordinator_epoch, m.coordinator_epoch);
      }
    }
  }
  for (const Txn& t : r.txns) {
    if (LsoEpochSource* s = note(t.producer_id)) s->producer_epoch = std::max(s->producer_epoch, t.producer_epoch);
  }
  for (const OpenTxn& t : r.open_txns) {
    if (LsoEpochSource* s = note(t.producer_id)) s->producer_epoch = std::max(s->producer_epoch, t.producer_epoch);
  }
  return out;
}

// Markers of the producers of interest in one replica, ascending (one pass over its markers, so that
// many open transactions do not each scan the whole marker list).
using MarkersByProducer = std::map<int64_t, std::vector<const Marker*>>;
MarkersByProducer MarkersOf(const ReplicaState& r, const std::set<int64_t>& pids) {
  MarkersByProducer out;
  for (const Marker& m : r.markers) {
    if (pids.count(m.producer_id)) out[m.producer_id].push_back(&m);
  }
  return out;
}

// What replica `o` shows for the target's open transaction `t`.
LsoWitness ViewOf(const ReplicaState& o, const MarkersByProducer& markers, const OpenTxn& t) {
  LsoWitness m;
  m.label = o.label;
  m.path = o.path;
  std::span<const Marker* const> after;
  if (auto it = markers.find(t.producer_id); it != markers.end()) {
    const std::vector<const Marker*>& all = it->second;
    auto from = std::upper_bound(all.begin(), all.end(), t.first_offset,
                                 [](int64_t offset, const Marker* mk) { return offset < mk->offset; });
    after = std::span<const Marker* const>(all).subspan(size_t(from - all.begin()));
  }
  const Marker* first = after.empty() ? nullptr : after.front();
  for (const Marker* mk : after) {
    if (mk->type != MarkerType::kCommit && mk->type != MarkerType::kAbort) continue;
    m.markers.push_back(*mk);
    if (mk->offset > t.last_offset) break;
  }
  bool open_there = std::any_of(o.open_txns.begin(), o.open_txns.end(), [&](const OpenTxn& x) {
    return x.producer_id == t.producer_id && x.first_offset <= t.first_offset;
  });
  if (first && (first->type == MarkerType::kCommit || first->type == MarkerType::kAbort)) {
    m.kind = LsoWitness::Kind::kMarker;
    m.first = *first;
  } else if (open_there) {
    m.kind = LsoWitness::Kind::kOpenToo;
  } else if (o.log_end_offset <= t.first_offset) {
    m.kind = LsoWitness::Kind::kBehind;
  } else if (!o.Covers(t.first_offset)) {
    m.kind = LsoWitness::Kind::kNotHeld;
  } else if (first) {
    m.kind = LsoWitness::Kind::kEmptyBatch;
    m.first = *first;
  } else {
    m.kind = LsoWitness::Kind::kDecided;
  }
  return m;
}

std::string ViewText(const ReplicaState& o, const OpenTxn& t, const LsoWitness& m) {
  switch (m.kind) {
    case LsoWitness::Kind::kMarker: {
      std::string text = fmt::format(
          "{} holds the {} of producer {} at offset {} (its first marker of the producer after offset {}), which this "
          "replica lacks",
          m.label, MarkerTypeName(m.first->type), t.producer_id, m.first->offset, t.first_offset);
      if (m.markers.size() > 1) {
        std::vector<std::string> rest;
        for (size_t i = 1; i < m.markers.size(); ++i) {
          rest.push_back(fmt::format("{} at {}", MarkerTypeName(m.markers[i].type), m.markers[i].offset));
        }
        text += fmt::format(", then {} (the data open here spans more than one of its transactions)", Join(rest));
      }
      bool commit = std::any_of(m.markers.begin(), m.markers.end(),
                                [](const Marker& x) { return x.type == MarkerType::kCommit; });
      if (commit) text += fmt::format(": aborting would hide records here that {} committed", m.label);
      return text + ".";
    }
    case LsoWitness::Kind::kEmptyBatch:
      return fmt::format(
          "{} has no open transaction of producer {} and holds only an emptied control batch of it at offset {}: the "
          "transaction was decided there and its marker cleaned, so its files do not show whether it committed or "
          "aborted (an empty batch closes nothing on a follower).",
          m.label, t.producer_id, m.first->offset);
    case LsoWitness::Kind::kOpenToo:
      return fmt::format("{} has the same transaction open (its LSO is {}): it holds no marker of it either.", m.label,
                         o.last_stable_offset);
    case LsoWitness::Kind::kBehind:
      return fmt::format("{} ends at offset {}, before the transaction: it shows nothing about it.", m.label,
                         o.log_end_offset);
    case LsoWitness::Kind::kNotHeld:
      return fmt::format(
          "{} does not hold offset {} (its log starts at {}, or that range is damaged) and holds no marker of producer "
          "{} after it: it shows nothing about the transaction.",
          m.label, t.first_offset, o.log_start_offset, t.producer_id);
    case LsoWitness::Kind::kDecided:
      return fmt::format(
          "{} holds offset {} with no transaction of producer {} open there (its LSO is {}): the transaction was "
          "decided there; the marker that decided it is no longer in its log, so its files do not show whether it "
          "committed or aborted.",
          m.label, t.first_offset, t.producer_id, o.last_stable_offset);
  }
  return "";
}

std::string DescribeProducersCommand(const LsoOptions& options, const std::string& topic, int32_t partition) {
  return fmt::format("kafka-transactions.sh --bootstrap-server {} describe-producers --topic {} --partition {}",
                     options.bootstrap_server, topic, partition);
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one explanation per reason the LSO is pinned (scenarios.md §2.5, §4.4, §6)
LsoReport ExplainLso(const ReplicaState& r, const std::vector<ReplicaState>& others, const LsoOptions& options) {
  LsoReport rep;
  if (r.tp) {
    rep.partition = r.tp->ToString();
    rep.topic = r.tp->topic;
    rep.partition_number = r.tp->partition;
  }
  std::string topic = rep.topic.empty() ? "<topic>" : rep.topic;
  rep.log_start_offset = r.log_start_offset;
  rep.log_end_offset = r.log_end_offset;
  rep.high_watermark = r.high_watermark;
  rep.last_stable_offset = r.last_stable_offset;
  rep.replicas_given = !others.empty();
  rep.open_transactions = r.open_txns;
  std::sort(rep.open_transactions.begin(), rep.open_transactions.end(),
            [](const OpenTxn& a, const OpenTxn& b) { return a.first_offset < b.first_offset; });
  for (const OpenTxn& t : rep.open_transactions) {
    if (t.first_offset < r.high_watermark && t.first_offset == r.last_stable_offset) {
      rep.pinned_by = t;
      break;
    }
  }

  // Every open transaction: the epochs the loaded replicas hold for its producer, the abort command,
  // and what the other replicas show.
  std::set<int64_t> pids;
  for (const OpenTxn& t : rep.open_transactions) pids.insert(t.producer_id);
  std::vector<MarkersByProducer> markers;
  for (const ReplicaState& o : others) markers.push_back(MarkersOf(o, pids));
  std::vector<std::map<int64_t, LsoEpochSource>> epochs;
  epochs.push_back(EpochsOf(r, pids));
  for (const ReplicaState& o : others) epochs.push_back(EpochsOf(o, pids));
  std::vector<std::string> loaded_labels{r.label};
  for (const ReplicaState& o : others) loaded_labels.push_back(o.label);
  std::string describe = DescribeProducersCommand(options, topic, rep.partition_number);

  for (const OpenTxn& t : rep.open_transactions) {
    LsoTxn x;
    x.txn = t;
    x.pins =
        rep.pinned_by && rep.pinned_by->first_offset == t.first_offset && rep.pinned_by->producer_id == t.producer_id;
    x.producer_epoch_for_abort = t.producer_epoch;
    int32_t coordinator = -1;
    for (size_t i = 0; i < epochs.size(); ++i) {
      auto it = epochs[i].find(t.producer_id);
      if (it == epochs[i].end()) continue;
      const LsoEpochSource& s = it->second;
      x.epoch_sources.push_back(s);
      x.producer_epoch_for_abort = std::max(x.producer_epoch_for_abort, s.producer_epoch);
      coordinator = std::max(coordinator, s.coordinator_epoch);
    }
    x.coordinator_epoch_seen = coordinator >= 0;
    x.coordinator_epoch_for_abort = std::max(coordinator, 0);
    for (const LsoEpochSource& s : x.epoch_sources) {
      if (s.producer_epoch == x.producer_epoch_for_abort) x.producer_epoch_from.push_back(s.label);
      if (x.coordinator_epoch_seen && s.coordinator_epoch == coordinator) x.coordinator_epoch_from.push_back(s.label);
    }
    x.abort_command = fmt::format(
        "kafka-transactions.sh --bootstrap-server {} abort --topic {} --partition {} --producer-id {} "
        "--producer-epoch {} --coordinator-epoch {}",
        options.bootstrap_server, topic, rep.partition_number, t.producer_id, x.producer_epoch_for_abort,
        x.coordinator_epoch_for_abort);

    std::string coordinator_text =
        x.coordinator_epoch_seen
            ? fmt::format("coordinator epoch {} (held by {})", x.coordinator_epoch_for_abort,
                          Join(x.coordinator_epoch_from))
            : fmt::format(
                  "coordinator epoch 0 (no loaded replica holds one for producer {}: no marker of it was "
                  "seen; kafka-transactions.sh uses 0 for -1 too)",
                  t.producer_id);
    if (others.empty()) {
      x.epochs_note = fmt::format(
          "producer epoch {} and {} come from this replica alone (its producer state and log). The leader refuses a "
          "marker whose producer or coordinator epoch is below what it holds for producer {}, and it may hold higher "
          "ones (a coordinator time-out abort bumps the epoch on the leader only): give the other replicas with "
          "--replica, or read the leader's values with `{}` (a producer it does not list takes any epoch).",
          x.producer_epoch_for_abort, coordinator_text, t.producer_id, describe);
    } else {
      x.epochs_note = fmt::format(
          "producer epoch {} (held by {}) and {} are the highest that the loaded replicas ({}) hold for producer {}; "
          "the leader refuses a lower one. If the leader is not among them or has moved on since, and the command is "
          "refused (InvalidProducerEpoch, TransactionCoordinatorFenced), read its values with `{}` (a producer it does "
          "not list takes any epoch).",
          x.producer_epoch_for_abort, Join(x.producer_epoch_from), coordinator_text, Join(loaded_labels), t.producer_id,
          describe);
    }
    x.warning = fmt::format(
        "aborting writes an ABORT of producer {} through the leader. On this replica it closes the transaction open "
        "from offset {} as aborted: read_committed consumers skip its records (offsets {}..{} of producer {}). If the "
        "transaction committed elsewhere, these are committed records, hidden here (and this replica's cleaner then "
        "removes them as aborted data). If producer {} has a transaction open on the leader, that one is aborted too.",
        t.producer_id, t.first_offset, t.first_offset, t.last_offset, t.producer_id, t.producer_id);

    std::string views;
    for (size_t i = 0; i < others.size(); ++i) {
      const ReplicaState& o = others[i];
      LsoWitness m = ViewOf(o, markers[i], t);
      views += (views.empty() ? "" : " ") + ViewText(o, t, m);
      if (m.decided()) x.decided_on.push_back(o.label);
      x.replicas.push_back(m);
    }
    if (others.empty()) {
      x.verdict =
          "the other replicas were not given (--replica): these files alone do not show whether the transaction was "
          "decided elsewhere.";
    } else if (!x.decided_on.empty()) {
      x.verdict =
          views + fmt::format(
                      " Decided on {}: this replica lost the marker (a hanging transaction). Do not abort it "
                      "unless you know it aborted; the safe fix is to re-replicate this replica from the leader "
                      "(resolution).",
                      Join(x.decided_on));
    } else {
      bool all_open = std::all_of(x.replicas.begin(), x.replicas.end(),
                                  [](const LsoWitness& m) { return m.kind == LsoWitness::Kind::kOpenToo; });
      x.verdict = views + (all_open ? " Open on every replica given: no replica holds its marker."
                                    : " No replica given shows it decided.");
    }
    if (options.coordinator != nullptr && r.tp) {
      x.coordinator = ViewOfTransaction(*options.coordinator, t.producer_id, t.producer_epoch, r.tp->ToString(),
                                        MatchCluster(*options.coordinator, {{r.path, r.cluster_id}}));
      x.coordinator_advice = CoordinatorAdvice(
          *x.coordinator, x.abort_command,
          fmt::format("another replica holding a marker of producer {} after offset {} (klf lso --replica, klf diff), "
                      "or an older copy of __transaction_state, settles it",
                      t.producer_id, t.last_offset));
    }
    if (x.pins) {
      rep.replicas = x.replicas;
      rep.abort_command = x.abort_command;
    }
    rep.transactions.push_back(std::move(x));
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
  int64_t idle = JavaSub(now, t.last_timestamp);  // any timestamp the data holds: wrap, as Java does
  auto time = [&](int64_t ms) { return options.wall_clock_times ? WithWallClock(ms) : std::to_string(ms); };
  bool later_here = r.NextMarker(t.producer_id, t.first_offset) != nullptr;
  std::string others_text;
  for (size_t i = 0; i < others.size() && i < rep.replicas.size(); ++i) {
    others_text += " " + ViewText(others[i], t, rep.replicas[i]);
  }
  rep.explanation = fmt::format(
      "the last stable offset {} is pinned below the high watermark {} by producer {} (epoch {}), whose transaction is "
      "open from offset {} (last data offset {}, last timestamp {}). A producer with an open transaction never "
      "expires (ProducerStateManager.isProducerExpired is false while currentTxnFirstOffset is set, also after a "
      "snapshot reload), so producer.id.expiration.ms does not lift the pin{}. The pin lifts only when a marker for "
      "producer {} is appended (its next transaction ends, or an admin abort), or when retention moves the log start "
      "offset (now {}) past offset {}.{}{}",
      r.last_stable_offset, r.high_watermark, t.producer_id, t.producer_epoch, t.first_offset, t.last_offset,
      time(t.last_timestamp),
      t.last_timestamp >= 0
          ? fmt::format(" (the producer has been idle {} at {}; expiration is {})", HumanDuration(idle), time(now),
                        HumanDuration(options.producer_id_expiration_ms))
          : "",
      t.producer_id, r.log_start_offset, t.first_offset,
      later_here
          ? fmt::format(" This log holds only an emptied control batch of producer {} after it, which closes "
                        "nothing on a follower.",
                        t.producer_id)
          : fmt::format(" This log holds no marker of producer {} after offset {}.", t.producer_id, t.first_offset),
      others_text);

  // The resolution covers every open transaction below the high watermark.
  std::vector<std::string> decided, undecided;
  for (const LsoTxn& x : rep.transactions) {
    if (x.txn.first_offset >= r.high_watermark) continue;
    std::string name = fmt::format("producer {} from offset {}", x.txn.producer_id, x.txn.first_offset);
    (x.decided_on.empty() ? undecided : decided)
        .push_back(x.decided_on.empty() ? name : fmt::format("{} (on {})", name, Join(x.decided_on)));
  }
  std::string wait = " Waiting for producer.id.expiration.ms does not help: it never expires an open transaction.";
  // The coordinator's word on the pinning transaction comes first: it decided the transaction.
  std::string coordinator_first;
  for (const LsoTxn& x : rep.transactions) {
    if (x.pins && x.coordinator) {
      coordinator_first = fmt::format("the coordinator's records: {} ({}). ", x.coordinator_advice, x.coordinator->why);
    }
  }
  if (others.empty()) {
    bool several = rep.open_transactions.size() > 1;
    rep.resolution = fmt::format(
        "first find out whether the other replicas decided {}: run klf lso again with --replica DIR for every other "
        "replica of {} (copies of their partition directories). A transaction that another replica decided lost its "
        "marker here: re-replicate this replica from the leader instead of aborting it (klf lso --replica prints the "
        "steps), because an ABORT hides its records here if it committed there. A transaction that every replica has "
        "open and whose producer will not finish it can be aborted with the command printed for it{}. Otherwise the "
        "pin lifts when the producer's next marker is appended, or when retention deletes offset {}.{}",
        several ? fmt::format("the {} open transactions", rep.open_transactions.size()) : "the open transaction",
        rep.partition.empty() ? "the partition" : rep.partition,
        several ? " (each has its own; the LSO stays pinned until every one below the high watermark is closed)" : "",
        t.first_offset, wait);
  } else if (!decided.empty()) {
    rep.resolution = fmt::format(
        "decided on another replica: {}. This replica lost {} marker{}. Safe fix: re-replicate this replica from the "
        "leader, so that it takes the leader's records and markers instead of an outcome chosen here. "
        "(1) Check with `kafka-topics.sh --bootstrap-server {} --describe --topic {}` that this replica's broker is "
        "not "
        "the leader of partition {} (if it is, move leadership first) and that the leader is one of the replicas "
        "that decided {}. "
        "(2) Stop the broker that holds {}. "
        "(3) Move that partition directory out of the broker's log directory, keeping it as a backup (not renamed in "
        "place: Kafka expects only partition directories in a log directory). "
        "(4) Start the broker: it creates the partition empty and fetches it from the leader, from the leader's log "
        "start offset, and rejoins the ISR once caught up (until then the partition has one in-sync replica fewer). "
        "Or, instead of (2)-(4), reassign the partition (kafka-reassign-partitions.sh) to move this replica off its "
        "broker and back: the new copy is fetched from the leader. "
        "Do not abort a decided transaction unless you know it aborted: the ABORT would hide its records here if it "
        "committed.{}{}",
        Join(decided, "; "), decided.size() > 1 ? "their" : "its", decided.size() > 1 ? "s" : "",
        options.bootstrap_server, topic, rep.partition_number, decided.size() > 1 ? "them" : "it", r.path,
        undecided.empty()
            ? ""
            : fmt::format(" No replica given shows {} decided, so re-replication leaves {} open: if {} producer{} will "
                          "not finish {}, abort {} with the command printed for {}.",
                          Join(undecided, "; "), undecided.size() > 1 ? "them" : "it",
                          undecided.size() > 1 ? "their" : "its", undecided.size() > 1 ? "s" : "",
                          undecided.size() > 1 ? "them" : "it", undecided.size() > 1 ? "them" : "it",
                          undecided.size() > 1 ? "each" : "it"),
        wait);
  } else {
    rep.resolution = fmt::format(
        "no replica given shows {} decided. If the producer will not finish it, abort it with the command printed for "
        "it (each open transaction has its own); otherwise the pin lifts when the producer's next marker is appended, "
        "or when retention deletes offset {}. If the partition has replicas that were not given, check them first "
        "(--replica): if one decided it, re-replicate this replica instead of aborting.{}",
        Join(undecided, "; "), t.first_offset, wait);
  }
  rep.resolution = coordinator_first + rep.resolution;
  return rep;
}

}  // namespace klf
