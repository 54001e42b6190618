// Repair and salvage (see repair.h).
//
// Recipe of `klf repair --replica H... --target T --out O` (LevelDB repair.cc style):
//
//  1. Load every replica as a broker would after a restart and as its consumers read it
//     (diff/replica_state.h), and diff them (diff/diff.h) with the target first. Only divergences whose
//     affected replica is the target are repaired; findings about a healthy replica are left alone,
//     except different records at one offset that involve the target on either side (diff's larger
//     group, or the first replica on a tie, is a majority, not a proof): those are unrepairable.
//
//  2. Plan one edit per finding, in offset order:
//     a. lost ABORT, lost COMMIT, hanging transaction -> an end-transaction marker of the transaction's
//        producer id and epoch (the epoch of its data, so ProducerAppendInfo does not fence it; the
//        decision's epoch when the coordinator's transaction-version-2 record proved the outcome, as Kafka
//        writes it; an emptied marker's own header epoch when that remnant becomes the marker) with the
//        coordinator epoch of the producer's next marker (else its previous one, else 0: Kafka fences a
//        marker whose coordinator epoch is below the producer's current one). Type: only an outcome the
//        files prove (ProveMarker, "What proves an outcome" below), never diff's kind on its word alone and
//        never a guess: a healthy replica holds the record and closes it with a marker; or its .txnindex
//        covers it (aborted); or it removed a value and no replica keeps a later record of the key
//        (aborted); or, with --txn-log, the coordinator's transaction-version-2 decision. Records
//        superseded and gone prove nothing (an ABORT leaves the same files as a COMMIT). A record without its
//        own proof shares a proven one's outcome only when no slot (an offset the target lacks and no
//        replica holds as anything else, where a lost marker could have been) lies between them. Else the
//        operator's --assume PID@FIRST=commit|abort (step marked "assumed"), else a "left" step naming the
//        records at stake and the options (--txn-log, --assume, --rebuild-from, re-replication):
//        nothing is written for it and the exit code is 1. The target's own decided transactions are audited
//        the same way (AuditDecidedTransactions): a verdict whose marker lies after a slot and whose records
//        are unproven may hide a merge, which diff cannot see once the healthy replicas compacted it away.
//        Where: Kafka offsets are dense on the leader, but the marker the target missed was compacted
//        away before the target fetched that range, so its offset is a gap in the target. The marker
//        must land inside the window (last data offset of the transaction, first batch of the same
//        producer after it) -- after the window the producer's next transaction would merge into it
//        again. In order of preference:
//          - the offset where a healthy replica still holds that marker (the leader's own offset);
//          - an emptied control batch of the producer inside the window (what a follower keeps when it
//            received the COMMIT only as the cleaner's empty remnant, scenarios.md §6): it is replaced
//            by the full marker at the same offset;
//          - the first offset of the window that no replica holds (neither the target nor any healthy
//            replica: an offset a healthy replica holds carries another record there, and writing a
//            marker on it would be a divergent record).
//        Never at the log end: a follower's log past the leader's end is truncated on its next fetch,
//        and the transaction would hang again.
//        When the window has no free offset: a proven (or assumed) ABORT is repaired by removing the
//        transaction's data from the target instead (aborted data is never delivered, so consumers see
//        the same); a COMMIT that cannot be placed
//        is repaired by removal only when every record is gone from the healthy replicas too and
//        superseded there; otherwise the finding is reported as unrepairable.
//     b. lost tombstone -> the target's stale value (and older values of that key at lower offsets) is
//        removed, as the healthy replicas' cleaners removed both the value and, after
//        delete.retention.ms, the tombstone. When a healthy replica still holds the tombstone's batch at
//        offsets the target does not use at all, that batch is copied in byte for byte instead (exactly
//        what a fetch would have delivered: consumers of the target then also receive the deletion
//        event). Writing a new tombstone at some free offset is not done: it would invent a record the
//        leader never wrote.
//     c. divergent records (different records at one offset: truncation, unclean election) and
//        unrelated logs are not rewritten: they are reported as unrepairable (re-replicate the replica).
//
//  3. Write `<out>/<topic>-<partition>/` through a StagedDirectory (complete or absent): the target's
//     segments in order with their base offsets kept (PartitionWriter, no automatic roll), every
//     untouched batch copied byte for byte, markers built with segment_writer's AppendEndTxnMarker
//     (CRC computed there) with the partition leader epoch of the record before them, batches with
//     removed records rebuilt as the cleaner's filterTo does (same base and last offset, producer
//     fields, codec, delete horizon); a batch left with no records is dropped, or kept as an empty
//     batch when it carries a producer id (the cleaner's RETAIN_EMPTY: the producer's epoch and
//     sequence state stay).
//
//  4. PartitionWriter rebuilds `.index`, `.timeindex` (index.interval.bytes), `.txnindex` (producer
//     state replay: the newly aborted transactions get their entries with the LSO of that moment),
//     producer snapshots at every segment base and at the log end (the target's old snapshots, which
//     hold the diverged producer state, are not copied: a broker loading the copy replays the repaired
//     log), and leader-epoch-checkpoint (the target's, plus epochs the batches add). partition.metadata
//     is kept. The log-dir checkpoints for the partition are written beside it: high watermark and log
//     start offset as the target had them (capped at the new log end), the cleaner checkpoint kept, the
//     recovery point at the log end (the copy is fully flushed and recovered).
//
//  5. The copy is loaded again and diffed against the healthy replicas; what remains is reported.
//
// --rebuild-from SOURCE (WriteRebuiltCopy) needs no verdict: the copy is SOURCE's batches from its log
// start, byte for byte, with everything else rebuilt, as a follower re-fetching the whole log holds it.
//
// Salvage (`--salvage`, spec §14): every segment is read as LogSegment.recover does (size, CRC) and,
// stricter than Kafka, every record is decoded and checked as klf verify checks it (Kafka would serve a
// batch whose compressed payload is garbage under a valid CRC; a salvaged copy should verify clean).
// Fields outside the CRC (baseOffset, partitionLeaderEpoch) can lie: a batch whose offsets or epoch
// go back is blamed on the batch before it when that one alone is out of line with its neighbours (and
// a segment named at or below the last offset before it is dropped whole), so recovery stops at the
// damaged batch, not at the intact one after it. The first invalid entry truncates
// its segment there and every later segment is deleted, as recovery does when bytes were cut (Kafka
// deletes them; keeping them would leave an offset hole the leader cannot refill). Indexes, `.txnindex`,
// snapshots and the leader-epoch-checkpoint (entries past the new log end dropped) are rebuilt.
#include "repair/repair.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "diff/txn_verdict.h"
#include "partition/loaded_log.h"
#include "segment_reader/checkpoints.h"
#include "segment_reader/file.h"
#include "segment_reader/layout.h"
#include "segment_writer/batch_builder.h"
#include "segment_reader/java_long.h"
#include "segment_writer/output_guard.h"

namespace klf {
namespace {

// ---------------------------------------------------------------------------------------------
// Planning helpers.

// Does some batch of the replica cover `offset` (a record, or a batch emptied by the cleaner)?
bool Held(const ReplicaState& r, int64_t o) { return r.HoldsOffset(o); }

const BatchSpan* BatchAt(const ReplicaState& r, int64_t o) {
  auto it = std::lower_bound(r.batches.begin(), r.batches.end(), o,
                             [](const BatchSpan& b, int64_t x) { return b.last_offset < x; });
  if (it == r.batches.end() || it->base_offset > o) return nullptr;
  return &*it;
}

// The record just before `offset` (any kind), or nullptr.
const RecordDigest* RecordBefore(const ReplicaState& r, int64_t o) {
  auto it = std::lower_bound(r.records.begin(), r.records.end(), o,
                             [](const RecordDigest& d, int64_t x) { return d.offset < x; });
  if (it == r.records.begin()) return nullptr;
  return &*std::prev(it);
}

// An offset the target may use for a marker of `pid`: not held by the target, and on every healthy
// replica either not held or held by a control batch of that producer (the same marker, or its remnant).
bool FreeEverywhere(const std::vector<ReplicaState>& rs, int64_t o, int64_t pid) {
  if (Held(rs[0], o)) return false;
  for (size_t i = 1; i < rs.size(); ++i) {
    const BatchSpan* b = BatchAt(rs[i], o);
    if (b && !(b->control && b->producer_id == pid)) return false;
  }
  return true;
}

int32_t CoordinatorEpochFor(const std::vector<ReplicaState>& rs, int64_t pid, int64_t after) {
  // Next marker of the producer (target first, then healthy), else the previous one.
  for (const ReplicaState& r : rs) {
    for (const Marker& m : r.markers) {
      if (m.producer_id == pid && m.offset > after && m.coordinator_epoch >= 0) return m.coordinator_epoch;
    }
  }
  for (const ReplicaState& r : rs) {
    for (auto it = r.markers.rbegin(); it != r.markers.rend(); ++it) {
      if (it->producer_id == pid && it->offset <= after && it->coordinator_epoch >= 0) return it->coordinator_epoch;
    }
  }
  return 0;
}

bool SupersededOnHealthy(const std::vector<ReplicaState>& rs, const RecordDigest& rec) {
  if (!rec.has_key) return false;
  for (size_t i = 1; i < rs.size(); ++i) {
    const KeyState* k = rs[i].Key(rec.key);
    if (k == nullptr || k->offset <= rec.offset) return false;
  }
  return rs.size() > 1;
}

bool HeldByHealthy(const std::vector<ReplicaState>& rs, int64_t o) {
  for (size_t i = 1; i < rs.size(); ++i) {
    if (rs[i].FindRecord(o) >= 0) return true;
  }
  return false;
}

// What proves a transaction's outcome: diff's rules "outcome" and "coordinator" (diff/txn_verdict.h,
// the one place they live), with the target as the affected replica. Each record at stake is proven by
// a healthy replica that still holds it closed by a marker, by a healthy .txnindex range covering it, by
// a healthy replica that removed the value while no replica keeps a later record of its key, or (with
// --txn-log) by a transaction-version-2 decision of the coordinator at the record's own epoch; witnesses
// that disagree prove nothing. "Superseded and removed, so it committed" proves nothing: an ABORT leaves
// identical files. Records without their own proof take the outcome of proven ones only when no offset
// between the first and the last record at stake is a slot (diff's FindSlot: a lost marker could have
// been there, splitting them into two transactions).
struct MarkerProof {
  std::optional<ControlType> type;
  std::optional<int16_t> coordinator_marker_epoch;  // the epoch the coordinator wrote its markers at
  std::string why;                                  // the proof, or why there is none
  std::set<ControlType> seen;  // outcomes single records are proven to have (even when they do not decide all)
};

ControlType MarkerOf(TxnOutcome o) { return o == TxnOutcome::kCommit ? ControlType::kCommit : ControlType::kAbort; }

MarkerProof ProveMarker(const std::vector<ReplicaState>& rs, int64_t pid, const std::vector<int64_t>& at_stake,
                        const CoordinatorLog* coordinator) {
  MarkerProof p;
  const OutcomeProof d = ProveOutcome(rs, 0, pid, at_stake, coordinator);
  std::string first_proof = d.facts.empty() ? std::string() : d.facts.front().fact;
  std::string coordinator_says;
  for (const TxnFact& c : d.coordinator_facts) coordinator_says += "; " + c.fact;
  for (TxnOutcome o : d.seen) p.seen.insert(MarkerOf(o));
  p.coordinator_marker_epoch = d.coordinator_marker_epoch;
  if (d.seen.size() > 1) {
    p.why =
        "the evidence conflicts (some of these records are proven committed, others aborted: they may belong to "
        "two transactions)" +
        coordinator_says;
    return p;
  }
  if (d.seen.empty()) {
    p.why =
        "no healthy replica holds these records closed by a marker, no .txnindex range covers them, and no "
        "healthy replica removed one of its values while no replica keeps a later record of the key (records "
        "that are superseded and gone prove nothing: an ABORT leaves the same files as a COMMIT)";
    p.why += coordinator != nullptr ? coordinator_says : "; no coordinator's log was given (--txn-log)";
    return p;
  }
  if (!d.unproven.empty()) {
    if (std::optional<int64_t> slot = FindSlot(rs, 0, pid, at_stake.front(), at_stake.back())) {
      p.why = fmt::format(
          "{}, but offset {} inside the transaction is a slot where a lost marker could have been "
          "(the target lacks it and no replica holds anything else there), so {} record(s) from offset "
          "{} on are unproven",
          first_proof, *slot, d.unproven.size(), d.unproven.front());
      return p;
    }
    first_proof += fmt::format(
        "; no offset between {} and {} could have held a lost marker, so all {} records are "
        "one transaction",
        at_stake.front(), at_stake.back(), at_stake.size());
  }
  p.type = MarkerOf(*d.seen.begin());
  p.why = first_proof;
  return p;
}

// An offset an earlier step of the plan already writes (another transaction's marker, a copied batch).
bool TakenByPlan(const std::vector<RepairAction>& plan, int64_t o) {
  for (const RepairAction& a : plan) {
    if (a.kind == RepairActionKind::kInsertMarker && a.offset == o) return true;
    if (a.kind == RepairActionKind::kCopyBatch && a.offset <= o && o <= a.source_last_offset) return true;
  }
  return false;
}

struct AssumptionUse {
  const std::vector<RepairAssumption>* list = nullptr;
  std::vector<bool> used;
};

// The operator's --assume for producer `pid`'s transaction whose records start at `first_record` (or
// which starts at `first_offset`): the last one that names it (each that does is marked used). None
// without `assume`.
std::optional<ControlType> AssumedOutcome(AssumptionUse* assume, int64_t pid, int64_t first_record,
                                          int64_t first_offset) {
  std::optional<ControlType> assumed;
  for (size_t k = 0; assume && k < assume->list->size(); ++k) {
    const RepairAssumption& x = (*assume->list)[k];
    if (x.producer_id == pid && (x.first_offset == first_record || x.first_offset == first_offset)) {
      assume->used[k] = true;
      assumed = x.outcome;
    }
  }
  return assumed;
}

// `split_at_data_end`: the records at stake are all of the target's transaction up to its last data
// offset (the target's own decided transaction that may hide a merge, AuditDecidedTransactions).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one decision per finding kind and proof (scenarios.md §4, §6); each case is one of the spec's
void PlanTransaction(const std::vector<ReplicaState>& rs, const CoordinatorLog* coordinator, const Finding& f,
                     AssumptionUse* assume, std::vector<RepairAction>* out, bool split_at_data_end = false) {
  const ReplicaState& T = rs[0];
  RepairAction a;
  a.finding = f.kind;
  a.producer_id = f.producer_id.value_or(-1);
  int64_t ri = f.first_offset >= 0 ? T.FindRecord(f.first_offset) : -1;
  if (!f.producer_id || ri < 0 || T.records[ri].txn < 0) {
    a.kind = RepairActionKind::kUnrepairable;
    a.offset = f.first_offset;
    a.reason = fmt::format("{} at offset {}: the target holds no transactional record there to anchor a marker",
                           FindingKindName(f.kind), f.first_offset);
    out->push_back(a);
    return;
  }
  const int64_t pid = *f.producer_id;
  const Txn& t = T.txns[T.records[ri].txn];

  // The outcome the finding claims (diff's kind); never written on diff's word alone.
  std::optional<ControlType> claimed;
  if (f.kind == FindingKind::kLostAbort) claimed = ControlType::kAbort;
  if (f.kind == FindingKind::kLostCommit) claimed = ControlType::kCommit;

  // A healthy replica that still holds a marker of the producer after the records: the leader's offset
  // for the lost marker when it closes them with the outcome they are proven to have (below).
  std::optional<int64_t> preferred;
  std::optional<ControlType> preferred_type;
  std::string preferred_from;
  for (size_t i = 1; i < rs.size() && !preferred; ++i) {
    const Marker* m = rs[i].NextMarker(pid, f.first_offset);
    if (m == nullptr || (t.marker_offset && m->offset >= *t.marker_offset)) continue;
    if (m->offset >= T.log_end_offset || Held(T, m->offset)) continue;
    if (m->type != MarkerType::kCommit && m->type != MarkerType::kAbort) continue;
    preferred_type = m->type == MarkerType::kCommit ? ControlType::kCommit : ControlType::kAbort;
    preferred = m->offset;
    preferred_from = rs[i].label;
  }

  // Where the healthy replicas split the target's merged transaction: records of the producer before
  // `split` belong to the transaction whose marker was lost.
  int64_t split = -1;
  if (preferred) {
    split = *preferred;
  } else if (f.kind == FindingKind::kHangingTransaction || split_at_data_end) {
    split = JavaAdd(t.last_data_offset, 1);
  } else if (t.marker_offset) {
    for (size_t i = 1; i < rs.size() && split < 0; ++i) {
      for (const Txn& tb : rs[i].txns) {
        if (tb.producer_id == pid && tb.marker_offset == t.marker_offset) split = tb.first_offset;
      }
      for (const AbortedTxn& e : rs[i].aborted_txns) {
        if (split < 0 && e.producer_id == pid && e.last_offset == *t.marker_offset) split = e.first_offset;
      }
    }
  }
  if (split <= f.first_offset) {
    a.kind = RepairActionKind::kUnrepairable;
    a.offset = f.first_offset;
    a.reason = fmt::format(
        "{} of producer {} at offset {}: the healthy replicas do not show where the lost marker "
        "was (no marker and no transaction boundary of that producer after offset {})",
        FindingKindName(f.kind), pid, f.first_offset, f.first_offset);
    out->push_back(a);
    return;
  }

  // The window (after, before).
  int64_t after = -1, before = T.log_end_offset;
  int16_t epoch = t.producer_epoch;
  std::optional<int64_t> empty_remnant;
  int16_t remnant_epoch = -1;  // the emptied marker's header keeps the marker's producer epoch
  for (const BatchSpan& b : T.batches) {
    if (b.producer_id != pid) continue;
    if (b.base_offset < split) {
      if (!b.control && b.last_offset >= t.first_offset) {
        after = b.last_offset;
        epoch = b.producer_epoch;
      }
      continue;
    }
    if (b.control && b.records == 0 && !empty_remnant) {
      empty_remnant = b.base_offset;
      remnant_epoch = b.producer_epoch;
      continue;
    }
    before = b.base_offset;
    break;
  }
  if (after < 0) after = f.first_offset;
  if (empty_remnant && *empty_remnant >= before) empty_remnant.reset();

  // The records at stake: the target's records of the transaction before the split.
  std::vector<int64_t> at_stake;
  for (const RecordDigest& d : T.records) {
    if (d.txn >= 0 && &T.txns[d.txn] == &t && d.offset <= after && d.offset < split) at_stake.push_back(d.offset);
  }
  if (at_stake.empty()) at_stake.push_back(f.first_offset);
  const int64_t first = at_stake.front();
  // Another finding about the same records (diff names one per healthy replica): one step answers both.
  for (const RepairAction& x : *out) {
    if (x.producer_id == pid && x.records_at_stake == at_stake) {
      out->push_back(x);  // dropped as a duplicate once the plan is sorted
      return;
    }
  }
  a.records_at_stake = at_stake;
  a.assume_key = fmt::format("{}@{}", pid, first);

  // The outcome: proven by the files, else the operator's --assume, else left alone.
  MarkerProof proof = ProveMarker(rs, pid, at_stake, coordinator);
  std::optional<ControlType> type;
  const std::optional<ControlType> assumed = AssumedOutcome(assume, pid, first, t.first_offset);
  auto records_text = [&] {
    std::string r;
    for (size_t k = 0; k < at_stake.size() && k < 12; ++k) r += (k ? "," : "") + std::to_string(at_stake[k]);
    if (at_stake.size() > 12) r += fmt::format(",... ({} records)", at_stake.size());
    return r;
  };
  // No marker is written for the transaction: the action says why.
  auto no_marker = [&](RepairActionKind kind, std::string reason) {
    a.kind = kind;
    a.offset = first;
    a.reason = std::move(reason);
    out->push_back(a);
  };
  if (proof.type && assumed && *assumed != *proof.type) {
    return no_marker(
        RepairActionKind::kUnrepairable,
        fmt::format("{} of producer {} (epoch {}) at offsets {}: --assume {}={} contradicts the files ({} "
                    "proves {}): nothing written",
                    FindingKindName(f.kind), pid, t.producer_epoch, records_text(), a.assume_key,
                    *assumed == ControlType::kCommit ? "commit" : "abort", proof.why, ControlTypeName(*proof.type)));
  }
  if (proof.type && claimed && *claimed != *proof.type) {
    a.producer_epoch = t.producer_epoch;
    return no_marker(RepairActionKind::kLeft,
                     fmt::format("outcome unknown: {} of producer {} (epoch {}) claims {} for offsets {}, but {} "
                                 "(which would make it {}); nothing written for it",
                                 FindingKindName(f.kind), pid, t.producer_epoch, ControlTypeName(*claimed),
                                 records_text(), proof.why, ControlTypeName(*proof.type)));
  }
  if (!proof.type && assumed &&
      proof.seen.count(*assumed == ControlType::kCommit ? ControlType::kAbort : ControlType::kCommit)) {
    return no_marker(
        RepairActionKind::kUnrepairable,
        fmt::format("{} of producer {} (epoch {}) at offsets {}: --assume {}={} would also decide records the "
                    "files prove otherwise ({}): they are two transactions; use --rebuild-from or re-replicate",
                    FindingKindName(f.kind), pid, t.producer_epoch, records_text(), a.assume_key,
                    *assumed == ControlType::kCommit ? "commit" : "abort", proof.why));
  }
  if (proof.type) {
    type = proof.type;
    a.certainty = Certainty::kCertain;
    a.proof = proof.why;
  } else if (assumed) {
    type = assumed;
    a.certainty = Certainty::kAssumed;
    a.proof = fmt::format("assumed by --assume {}={} ({})", a.assume_key,
                          *assumed == ControlType::kCommit ? "commit" : "abort", proof.why);
  } else {
    a.producer_epoch = t.producer_epoch;
    return no_marker(
        RepairActionKind::kLeft,
        fmt::format(
            "outcome unknown: producer {} (epoch {}), {} record(s) at stake at offsets {}: {}. Nothing is written "
            "for it. Options: --txn-log with a copy of the coordinator's __transaction_state partitions taken before "
            "they were compacted (a transaction version 2 decision proves it); --assume {}=commit or --assume {}=abort "
            "once the outcome is known (kafka-transactions.sh describe of the transactional id, or the application's "
            "own records, tell it); "
            "--rebuild-from a healthy replica's partition directory; or re-replicate this replica from the leader",
            pid, t.producer_epoch, at_stake.size(), records_text(), proof.why, a.assume_key, a.assume_key));
  }
  if (preferred && preferred_type != type) preferred.reset();  // that marker closes a later transaction
  a.marker_type = *type;
  // The data's epoch, so ProducerAppendInfo cannot fence the marker; when the coordinator's transaction-
  // version-2 decision proved the outcome, the epoch it wrote its markers at (data epoch + 1, as Kafka).
  a.producer_epoch = proof.coordinator_marker_epoch && *proof.coordinator_marker_epoch >= epoch && !assumed
                         ? *proof.coordinator_marker_epoch
                         : epoch;
  a.window_after = after;
  a.window_before = before;

  std::optional<int64_t> chosen;
  std::string why;
  if (preferred && *preferred > after && *preferred < before && !TakenByPlan(*out, *preferred)) {
    chosen = preferred;
    why = fmt::format("{} still holds this marker at offset {}", preferred_from, *preferred);
  } else if (empty_remnant) {
    chosen = empty_remnant;
    a.replaces_empty_batch = true;
    if (remnant_epoch >= epoch) a.producer_epoch = remnant_epoch;  // Kafka's own header value
    why = fmt::format(
        "the target holds producer {}'s emptied control batch at offset {} (the remnant the cleaner "
        "left of this marker); it becomes the full marker",
        pid, *empty_remnant);
  } else {
    // First offset of the window no replica holds. Walk the target's gaps (offsets it does not hold).
    int64_t checked = 0;
    for (const OffsetGap& g : T.gaps) {
      if (g.to <= after + 1 || chosen) continue;
      if (g.from >= before) break;
      for (int64_t o = std::max(g.from, after + 1); o < std::min(g.to, before) && checked < 1000000; ++o, ++checked) {
        if (FreeEverywhere(rs, o, pid) && !TakenByPlan(*out, o)) {
          chosen = o;
          break;
        }
      }
    }
    if (chosen) {
      why = fmt::format(
          "offset {} is the first offset after the transaction's last data offset {} and before "
          "producer {}'s next batch ({}) that no replica holds: the compacted-away marker's place",
          *chosen, after, pid,
          before == T.log_end_offset ? "none; log end " + std::to_string(before) : "offset " + std::to_string(before));
    }
  }

  if (chosen) {
    a.kind = RepairActionKind::kInsertMarker;
    a.offset = *chosen;
    a.coordinator_epoch = CoordinatorEpochFor(rs, pid, *chosen);
    const RecordDigest* prev = RecordBefore(T, *chosen);
    a.timestamp = prev ? prev->timestamp : T.max_timestamp;
    a.partition_leader_epoch = prev && prev->leader_epoch >= 0 ? prev->leader_epoch : 0;
    if (preferred && *chosen == *preferred) {
      for (size_t i = 1; i < rs.size(); ++i) {
        int64_t j = rs[i].FindRecord(*chosen);
        if (j < 0 || !rs[i].records[j].control) continue;
        a.timestamp = rs[i].records[j].timestamp;
        a.partition_leader_epoch = std::max(0, rs[i].records[j].leader_epoch);
        break;
      }
      for (size_t i = 1; i < rs.size(); ++i) {
        for (const Marker& m : rs[i].markers) {
          if (m.offset == *chosen && m.producer_id == pid && m.coordinator_epoch >= 0) {
            a.coordinator_epoch = m.coordinator_epoch;
            a.producer_epoch = m.producer_epoch;
          }
        }
      }
    }
    a.reason = fmt::format(
        "{}: write the {} of producer {} (epoch {}, coordinator epoch {}) at offset {}, closing the "
        "transaction from offset {} before the producer's next batch; {}",
        FindingKindName(f.kind), ControlTypeName(a.marker_type), pid, a.producer_epoch, a.coordinator_epoch, *chosen,
        t.first_offset, why);
    a.reason += fmt::format(" [{}: {}]", CertaintyName(a.certainty), a.proof);
    out->push_back(a);
    return;
  }

  // No offset for a marker: remove the transaction's records instead where that is what consumers get.
  std::vector<int64_t> records;
  bool all_gone_and_superseded = true;
  for (const RecordDigest& d : T.records) {
    if (d.txn < 0 || &T.txns[d.txn] != &t || d.offset > after) continue;
    records.push_back(d.offset);
    if (HeldByHealthy(rs, d.offset) || !SupersededOnHealthy(rs, d)) all_gone_and_superseded = false;
  }
  if (a.marker_type == ControlType::kAbort || all_gone_and_superseded) {
    a.kind = RepairActionKind::kRemoveRecords;
    a.records_at_stake = at_stake;
    a.removed_offsets = records;
    a.offset = records.empty() ? f.first_offset : records.front();
    a.reason = fmt::format(
        "{}: no free offset between offset {} and offset {} for producer {}'s {}; its {} records "
        "are removed instead ({})",
        FindingKindName(f.kind), after, before, pid, ControlTypeName(a.marker_type), records.size(),
        a.marker_type == ControlType::kAbort ? "aborted data is never delivered"
                                             : "the healthy replicas removed them too and hold "
                                               "later values for their keys");
    a.reason += fmt::format(" [{}: {}]", CertaintyName(a.certainty), a.proof);
  } else {
    a.kind = RepairActionKind::kUnrepairable;
    a.offset = f.first_offset;
    a.certainty = Certainty::kNone;
    a.reason = fmt::format(
        "{}: no free offset between offset {} and offset {} for producer {}'s COMMIT, and its "
        "records are live on the healthy replicas",
        FindingKindName(f.kind), after, before, pid);
  }
  out->push_back(a);
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per tombstone finding (scenarios.md §6)
void PlanTombstone(const std::vector<ReplicaState>& rs, const Finding& f, std::vector<RepairAction>* out) {
  const ReplicaState& T = rs[0];
  RepairAction a;
  a.finding = f.kind;
  if (!f.has_key || !f.key) {
    a.kind = RepairActionKind::kUnrepairable;
    a.offset = f.first_offset;
    a.reason = fmt::format("lost_tombstone at offset {}: the stale record's key could not be read", f.first_offset);
    out->push_back(a);
    return;
  }
  // A healthy replica that still holds the tombstone (f.last_offset = its offset when diff found one).
  if (f.last_offset > f.first_offset) {
    for (size_t i = 1; i < rs.size(); ++i) {
      const BatchSpan* b = BatchAt(rs[i], f.last_offset);
      if (b == nullptr) continue;
      // No target batch may overlap [base, last] (checked by batch, not by offset: a cleaned batch's
      // range can be 2^31 offsets wide).
      auto ov = std::lower_bound(T.batches.begin(), T.batches.end(), b->base_offset,
                                 [](const BatchSpan& x, int64_t o) { return x.last_offset < o; });
      bool free = ov == T.batches.end() || ov->base_offset > b->last_offset;
      // It must also fit between the target's batches (no target batch overlaps its range).
      const BatchSpan* next = nullptr;
      for (const BatchSpan& tb : T.batches) {
        if (tb.base_offset > b->last_offset) {
          next = &tb;
          break;
        }
      }
      const RecordDigest* prev = RecordBefore(T, b->base_offset);
      if (!free || (prev && prev->offset > b->base_offset) || (!next && b->last_offset >= T.log_end_offset)) continue;
      a.kind = RepairActionKind::kCopyBatch;
      a.certainty = Certainty::kCertain;
      a.offset = b->base_offset;
      a.source_file = rs[i].segment_files[b->segment];
      a.source_position = b->position;
      a.source_last_offset = b->last_offset;
      a.reason = fmt::format(
          "lost_tombstone for key {}: copy {}'s batch {}..{} holding the tombstone at offset {} "
          "(offsets the target does not use), as a fetch would have delivered it",
          FormatBytes(AsBytes(*f.key), BytesFormat::kText), rs[i].label, b->base_offset, b->last_offset, f.last_offset);
      out->push_back(a);
      return;
    }
  }
  Digest key = Md5(AsBytes(*f.key));
  a.kind = RepairActionKind::kRemoveRecords;
  a.certainty = Certainty::kCertain;
  for (const RecordDigest& d : T.records) {
    if (d.control || !d.has_key || d.key != key || d.offset > f.first_offset) continue;
    a.removed_offsets.push_back(d.offset);
  }
  a.offset = a.removed_offsets.empty() ? f.first_offset : a.removed_offsets.front();
  a.reason = fmt::format(
      "lost_tombstone for key {}: remove the stale value at offset {}{} (the healthy replicas "
      "removed the value and its tombstone)",
      FormatBytes(AsBytes(*f.key), BytesFormat::kText), f.first_offset,
      a.removed_offsets.size() > 1 ? fmt::format(" and {} older records of the key", a.removed_offsets.size() - 1)
                                   : "");
  out->push_back(a);
}

bool IsTarget(const Finding& f) { return std::find(f.affected.begin(), f.affected.end(), 0) != f.affected.end(); }

bool Involves(const Finding& f, size_t replica) {
  return IsTarget(f) || std::find(f.healthy.begin(), f.healthy.end(), replica) != f.healthy.end();
}

// Records that differ at one offset (or logs that are not copies of one partition) prove that the
// replicas disagree, not which of them is right: diff names the larger group healthy, and the first
// replica given on a tie, which for repair is the target itself. So such a finding stands against the
// target whichever side diff put it on.
bool DisputesTarget(const Finding& f) {
  return (f.kind == FindingKind::kDivergentRecord || f.kind == FindingKind::kUnrelatedLogs) && Involves(f, 0);
}

RepairAction Unrepairable(const Finding& f, std::string reason) {
  RepairAction a;
  a.kind = RepairActionKind::kUnrepairable;
  a.finding = f.kind;
  a.offset = f.first_offset;
  a.reason = std::move(reason);
  return a;
}

// Adds to the plan a finding of `kind` against the target (replica 0; the others healthy) for the
// records R of its transaction `t`, closed by its marker.
const Finding& AddTargetFinding(FindingKind kind, const Txn& t, const std::vector<int64_t>& R, size_t replicas,
                                std::string evidence, RepairPlan* plan) {
  Finding& f = plan->findings.emplace_back();
  f.kind = kind;
  f.producer_id = t.producer_id;
  f.producer_epoch = t.producer_epoch;
  f.first_offset = R.front();
  f.last_offset = *t.marker_offset;
  f.affected = {0};
  for (size_t i = 1; i < replicas; ++i) f.healthy.push_back(i);
  f.evidence = std::move(evidence);
  return f;
}

// The target's own decided transaction `t` (records R, closed by its `held` marker), neither proven
// nor assumed other: when a slot before its marker could have held a lost marker of the other outcome,
// a possible merge is named and left, with what would settle it (`proof_why`: why no proof decides it).
void LeavePossibleMerge(const std::vector<ReplicaState>& rs, const Txn& t, const std::vector<int64_t>& R,
                        ControlType held, const std::string& proof_why, RepairPlan* plan) {
  std::optional<int64_t> slot = FindSlot(rs, 0, t.producer_id, R.front(), *t.marker_offset);
  if (!slot) return;  // one transaction up to the target's own marker: the leader's verdict
  const std::string why = fmt::format(
      "the target closes them with its {} at offset {}, but offset {} before it is a slot where a "
      "lost marker of another outcome could have been, and {}",
      ControlTypeName(held), *t.marker_offset, *slot, proof_why);
  const Finding& f = AddTargetFinding(
      held == ControlType::kCommit ? FindingKind::kLostAbort : FindingKind::kLostCommit, t, R, rs.size(),
      fmt::format("possible merge (unproven either way): producer {}'s records at offsets {}..{} on {}: {}",
                  t.producer_id, R.front(), R.back(), rs[0].label, why),
      plan);
  RepairAction a;
  a.kind = RepairActionKind::kLeft;
  a.finding = f.kind;
  a.finding_index = int(plan->findings.size()) - 1;
  a.offset = R.front();
  a.producer_id = t.producer_id;
  a.producer_epoch = t.producer_epoch;
  a.records_at_stake = R;
  a.assume_key = fmt::format("{}@{}", t.producer_id, R.front());
  a.reason = fmt::format(
      "outcome unknown: producer {} (epoch {}), {} record(s) at stake at offsets {}..{}: {}. Nothing is "
      "written for it. Options: --txn-log with a copy of the coordinator's __transaction_state partitions taken "
      "before they were compacted (a transaction version 2 decision proves it); --assume {}=commit or --assume "
      "{}=abort once the outcome is known (the application's own records may tell it); --rebuild-from a healthy "
      "replica's partition directory; or re-replicate this replica from the leader",
      t.producer_id, t.producer_epoch, R.size(), R.front(), R.back(), why, a.assume_key, a.assume_key);
  plan->actions.push_back(a);
}

// The target's transaction `t` (records R) closed by its `held` marker where the outcome is proven (or
// assumed) `want` (`why`): the records are closed with `want` right after them, in the slot before the
// target's own marker (which then closes nothing).
void Reclose(const std::vector<ReplicaState>& rs, const CoordinatorLog* coordinator, const Txn& t,
             const std::vector<int64_t>& R, ControlType held, ControlType want, const std::string& why,
             AssumptionUse* assume, RepairPlan* plan) {
  const Finding& f = AddTargetFinding(
      want == ControlType::kCommit ? FindingKind::kLostCommit : FindingKind::kLostAbort, t, R, rs.size(),
      fmt::format("producer {}'s records at offsets {}..{} on {} are closed by its {} at offset {}; {}", t.producer_id,
                  R.front(), R.back(), rs[0].label, ControlTypeName(held), *t.marker_offset, why),
      plan);
  const size_t before = plan->actions.size();
  PlanTransaction(rs, coordinator, f, assume, &plan->actions, /*split_at_data_end=*/true);
  for (size_t k = before; k < plan->actions.size(); ++k)
    plan->actions[k].finding_index = int(plan->findings.size()) - 1;
}

// The target's own decided transactions that no earlier step answers: one the other replicas (or the
// coordinator) prove, or the operator assumes, closed otherwise is re-closed in the slot before its
// marker (Reclose); one that may hide a merge is left (LeavePossibleMerge).
void AuditDecidedTransactions(const std::vector<ReplicaState>& rs, const CoordinatorLog* coordinator,
                              AssumptionUse* assume, RepairPlan* plan) {
  const ReplicaState& T = rs[0];
  if (rs.size() < 2) return;
  std::set<int64_t> planned;  // records some step already answers
  for (const RepairAction& a : plan->actions) planned.insert(a.records_at_stake.begin(), a.records_at_stake.end());
  const std::vector<std::vector<int64_t>> by_txn = RecordsByTxn(T);
  for (size_t ti = 0; ti < T.txns.size(); ++ti) {
    const Txn& t = T.txns[ti];
    const std::vector<int64_t>& R = by_txn[ti];
    if (!t.marker_offset || R.empty() || (t.fate != TxnFate::kCommitted && t.fate != TxnFate::kAborted)) continue;
    if (std::any_of(R.begin(), R.end(), [&](int64_t o) { return planned.count(o) > 0; })) continue;
    const ControlType held = t.fate == TxnFate::kCommitted ? ControlType::kCommit : ControlType::kAbort;
    MarkerProof p = ProveMarker(rs, t.producer_id, R, coordinator);
    if (p.type && *p.type == held) continue;
    std::optional<ControlType> assumed = AssumedOutcome(assume, t.producer_id, R.front(), t.first_offset);
    if (!p.type && assumed && *assumed == held) continue;  // the operator confirms the target's own verdict
    if (!p.type && !assumed) {
      LeavePossibleMerge(rs, t, R, held, p.why, plan);
      continue;
    }
    if (p.type) {
      Reclose(rs, coordinator, t, R, held, *p.type, p.why, assume, plan);
    } else {
      Reclose(rs, coordinator, t, R, held, *assumed, "--assume decides them " + std::string(ControlTypeName(*assumed)),
              assume, plan);
    }
  }
}

}  // namespace

const char* RepairActionKindName(RepairActionKind k) {
  switch (k) {
    case RepairActionKind::kInsertMarker: return "insert_marker";
    case RepairActionKind::kCopyBatch: return "copy_batch";
    case RepairActionKind::kRemoveRecords: return "remove_records";
    case RepairActionKind::kUnrepairable: return "unrepairable";
    case RepairActionKind::kLeft: return "left";
  }
  return "?";
}

const char* CertaintyName(Certainty c) {
  switch (c) {
    case Certainty::kNone: return "none";
    case Certainty::kCertain: return "certain";
    case Certainty::kAssumed: return "assumed";
  }
  return "?";
}

bool ParseRepairAssumption(const std::string& text, RepairAssumption* out, std::string* error) {
  auto at = text.find('@'), eq = text.find('=');
  auto bad = [&] {
    *error = "--assume expects PRODUCER_ID@FIRST_OFFSET=commit|abort, got '" + text + "'";
    return false;
  };
  if (at == std::string::npos || eq == std::string::npos || eq < at) return bad();
  auto num = [](const std::string& x, int64_t* v) {
    if (x.empty() || x.size() > 19) return false;
    for (char c : x) {
      if (c < '0' || c > '9') return false;
    }
    try {
      *v = std::stoll(x);
    } catch (...) {
      return false;
    }
    return true;
  };
  if (!num(text.substr(0, at), &out->producer_id) || !num(text.substr(at + 1, eq - at - 1), &out->first_offset)) {
    return bad();
  }
  std::string o = text.substr(eq + 1);
  if (o == "commit") {
    out->outcome = ControlType::kCommit;
  } else if (o == "abort") {
    out->outcome = ControlType::kAbort;
  } else {
    return bad();
  }
  return true;
}

bool RepairPlan::HasUnrepairable() const {
  return std::any_of(actions.begin(), actions.end(), [](const RepairAction& a) {
    return a.kind == RepairActionKind::kUnrepairable || a.kind == RepairActionKind::kLeft;
  });
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per finding kind of a partition's diff
RepairPlan PlanRepairOf(const std::vector<ReplicaState>& healthy, const ReplicaState& target,
                        const std::vector<RepairAssumption>& assumptions, const CoordinatorLog* coordinator) {
  AssumptionUse assume;
  assume.list = &assumptions;
  assume.used.assign(assumptions.size(), false);
  std::vector<ReplicaState> rs;
  rs.reserve(healthy.size() + 1);
  rs.push_back(target);
  for (const ReplicaState& h : healthy) rs.push_back(h);
  RepairPlan plan;
  plan.target = target.path;
  for (const ReplicaState& h : healthy) plan.healthy.push_back(h.path);
  for (const ReplicaState& r : rs) plan.replica_labels.push_back(r.label);
  DiffOptions diff_options;
  diff_options.coordinator = coordinator;
  DiffReport report = DiffReplicas(rs, diff_options);
  plan.partition = report.partition;
  for (const Finding& f : report.findings) {
    if (!IsDivergence(f.kind)) continue;
    if (!IsTarget(f) && !DisputesTarget(f)) continue;  // about another replica: the target keeps its records
    plan.findings.push_back(f);
    size_t before = plan.actions.size();
    switch (IsTarget(f) ? f.kind : FindingKind::kDivergentRecord) {
      case FindingKind::kLostAbort:
      case FindingKind::kLostCommit:
      case FindingKind::kHangingTransaction: PlanTransaction(rs, coordinator, f, &assume, &plan.actions); break;
      case FindingKind::kLostTombstone: PlanTombstone(rs, f, &plan.actions); break;
      default:
        plan.actions.push_back(Unrepairable(
            f, fmt::format("{} at offsets {}..{}: the replicas hold different records at the same offsets and the "
                           "files do not prove which is right; klf does not rewrite history (delete the wrong replica "
                           "and let it re-fetch from the leader)",
                           FindingKindName(f.kind), f.first_offset, f.last_offset)));
    }
    for (size_t k = before; k < plan.actions.size(); ++k) plan.actions[k].finding_index = int(plan.findings.size()) - 1;
  }
  // A transaction open on the target that every healthy replica has decided, which diff may not name
  // when the target holds the emptied remnant of its marker (an empty control batch closes nothing on a
  // follower, scenarios.md §6): also a hanging transaction.
  for (const OpenTxn& t : target.open_txns) {
    bool named = std::any_of(plan.findings.begin(), plan.findings.end(), [&](const Finding& f) {
      return f.kind == FindingKind::kHangingTransaction && f.producer_id == t.producer_id;
    });
    bool decided = !healthy.empty();
    for (const ReplicaState& h : healthy) {
      bool open_there = std::any_of(h.open_txns.begin(), h.open_txns.end(), [&](const OpenTxn& x) {
        return x.producer_id == t.producer_id && x.first_offset <= t.first_offset;
      });
      decided = decided && !open_there && h.Covers(t.first_offset) && h.last_stable_offset > t.first_offset;
    }
    if (named || !decided) continue;
    Finding f;
    f.kind = FindingKind::kHangingTransaction;
    f.producer_id = t.producer_id;
    f.producer_epoch = t.producer_epoch;
    f.first_offset = t.first_offset;
    f.last_offset = t.last_offset;
    f.affected = {0};
    for (size_t i = 1; i < rs.size(); ++i) f.healthy.push_back(i);
    f.evidence = fmt::format(
        "{} has producer {}'s transaction open from offset {} (LSO {}); every healthy replica "
        "holds that offset range with no open transaction of the producer (LSO past it)",
        target.label, t.producer_id, t.first_offset, target.last_stable_offset);
    plan.findings.push_back(f);
    size_t before = plan.actions.size();
    PlanTransaction(rs, coordinator, f, &assume, &plan.actions);
    for (size_t k = before; k < plan.actions.size(); ++k) plan.actions[k].finding_index = int(plan.findings.size()) - 1;
  }
  // The target's own decided transactions: a verdict the target holds (its marker) is the leader's only
  // when no lost marker could lie between the records and that marker, or when the files prove it. diff
  // names a merge only when a healthy replica still shows it; here every merge the files cannot rule out
  // is listed (a follower that lost a COMMIT merges its records into the producer's next, aborted,
  // transaction and hides them, and nothing in the healthy replicas may show it any more).
  AuditDecidedTransactions(rs, coordinator, &assume, &plan);

  // Two findings may name the same marker (e.g. per healthy replica): keep one edit per offset.
  std::stable_sort(plan.actions.begin(), plan.actions.end(),
                   [](const RepairAction& x, const RepairAction& y) { return x.offset < y.offset; });
  std::vector<RepairAction> unique;
  for (const RepairAction& a : plan.actions) {
    bool dup = false;
    for (const RepairAction& u : unique) {
      dup = dup || (u.kind == a.kind && a.kind != RepairActionKind::kUnrepairable && u.offset == a.offset &&
                    u.producer_id == a.producer_id && u.removed_offsets == a.removed_offsets);
    }
    if (!dup) unique.push_back(a);
  }
  plan.actions = std::move(unique);
  for (size_t k = 0; k < assumptions.size(); ++k) {
    if (assume.used[k]) continue;
    const RepairAssumption& x = assumptions[k];
    plan.unmatched_assumptions.push_back(
        fmt::format("{}@{}={}", x.producer_id, x.first_offset, x.outcome == ControlType::kCommit ? "commit" : "abort"));
  }
  return plan;
}

namespace {

// How repair loads replicas, `at_once` of them held together under the memory budget.
ReplicaOptions LoadOptionsFor(const RepairOptions& options, size_t at_once) {
  ReplicaOptions ro;
  ro.now_ms = options.now_ms;
  ro.producer_id_expiration_ms = options.producer_id_expiration_ms;
  ro.max_state_bytes = options.memory_budget_bytes / std::max<size_t>(at_once, 1);
  return ro;
}

}  // namespace

bool PlanRepair(const std::vector<std::string>& healthy_dirs, const std::string& target_dir,
                const RepairOptions& options, RepairPlan* plan, std::string* error) {
  const ReplicaOptions ro = LoadOptionsFor(options, healthy_dirs.size() + 1);
  ReplicaState target;
  if (!LoadReplica(target_dir, ro, &target, error)) return false;
  std::vector<ReplicaState> healthy(healthy_dirs.size());
  for (size_t i = 0; i < healthy_dirs.size(); ++i) {
    if (!LoadReplica(healthy_dirs[i], ro, &healthy[i], error)) return false;
  }
  *plan = PlanRepairOf(healthy, target, options.assumptions, options.coordinator);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Writing.

namespace {

// What CopyLogBatches does at each step of the copy; a step's false (with *error) ends it.
struct SegmentCopy {
  std::function<bool(size_t segment)> skip;  // optional: leave the segment out (not read)
  std::function<bool(size_t segment, std::string* error)> begin;
  std::function<bool(size_t segment, const BatchView& batch, std::string* error)> batch;
  std::function<bool(size_t segment, std::string* error)> end;
};

// Hands every batch of the segments of `dir` to `copy.batch`, front to back on the log's pass (no
// resync), as long as each segment's batches are intact (framed back to back, CRC valid), with
// `copy.begin` before a segment's batches and `copy.end` after them. Bytes after a segment's last intact
// batch are an error that ends with `remedy`: a repaired or rebuilt copy is written only from logs that
// hold no damage.
bool CopyLogBatches(Env* env, const PartitionDir& dir, const SegmentCopy& copy, const std::string& remedy,
                    std::string* error) {
  const LoadedLog log = LoadedLog::Listed(dir, env);
  bool failed = false;
  uint64_t expected = 0;  // where the segment's next batch should start
  LoadedLog::SegmentVisitor v;
  v.before = [&](size_t si) {
    if (failed) return LoadedLog::Step::kStop;
    return copy.skip && copy.skip(si) ? LoadedLog::Step::kNextSegment : LoadedLog::Step::kNext;
  };
  v.begin = [&](size_t si, LogReader&) {
    expected = 0;
    failed = !copy.begin(si, error);
  };
  v.batch = [&](size_t si, const BatchView& b) {
    if (failed) return LoadedLog::Step::kStop;
    if (b.header.position != expected || !b.header.crc_valid) return LoadedLog::Step::kNextSegment;
    expected += b.bytes.size();
    if (copy.batch(si, b, error)) return LoadedLog::Step::kNext;
    *error = fmt::format("{}: position {}: {}", log.segments[si].log_path, b.header.position, *error);
    failed = true;
    return LoadedLog::Step::kStop;
  };
  v.end = [&](size_t si, const LogReader& reader) {
    if (failed) return;
    if (expected < reader.file_size()) {
      *error = fmt::format("{}: position {}: {} bytes are not valid batches; {}", log.segments[si].log_path, expected,
                           reader.file_size() - expected, remedy);
      failed = true;
      return;
    }
    failed = !copy.end(si, error);
  };
  ReadOptions ro;
  ro.resync = false;
  NullSink framing;  // the copy stops at the first entry that is not an intact batch, and says where
  return log.ForEachBatch(v, &framing, error, ro) && !failed;
}

bool ParseOne(const std::string& buf, BatchView* view, std::string* error) {
  view->bytes = AsBytes(buf);
  return ParseBatchHeader(view->bytes, 0, true, &view->header, error);
}

class StreamWriter {
 public:
  StreamWriter(Env* env, PartitionWriter* w, const RepairPlan& plan, RepairResult* result)
      : env_(env), w_(w), result_(result) {
    for (const RepairAction& a : plan.actions) {
      if (a.kind == RepairActionKind::kInsertMarker || a.kind == RepairActionKind::kCopyBatch) inserts_.push_back(&a);
      if (a.kind == RepairActionKind::kRemoveRecords)
        removed_.insert(a.removed_offsets.begin(), a.removed_offsets.end());
    }
    std::sort(inserts_.begin(), inserts_.end(),
              [](const RepairAction* x, const RepairAction* y) { return x->offset < y->offset; });
  }

  // Writes planned inserts at offsets below `limit`.
  bool FlushBelow(int64_t limit, std::string* error) {
    while (next_ < inserts_.size() && inserts_[next_]->offset < limit) {
      if (!Insert(*inserts_[next_], error)) return false;
      ++next_;
    }
    return true;
  }

  bool Batch(const BatchView& batch, const std::string& file, std::string* error) {
    const BatchHeader& h = batch.header;
    int64_t first = h.base_offset_known ? h.base_offset : h.last_offset;
    if (!FlushBelow(first, error)) return false;
    if (next_ < inserts_.size() && inserts_[next_]->replaces_empty_batch && inserts_[next_]->offset == h.base_offset &&
        h.is_control && h.record_count == 0) {
      bool ok = Insert(*inserts_[next_], error);
      ++next_;
      return ok;
    }
    bool touched = false;
    auto it = removed_.lower_bound(first);
    touched = it != removed_.end() && *it <= h.last_offset;
    if (!touched) {
      ++result_->batches_written;
      return w_->AppendBatch(batch, error);
    }
    NullSink quiet;
    if (!decoder_.Decode(batch, file, &quiet)) {
      *error = fmt::format("{}: position {}: cannot decode the batch holding offsets to remove", file, h.position);
      return false;
    }
    std::vector<RecordInput> kept;
    for (const Record& r : decoder_.records()) {
      if (removed_.count(r.offset)) {
        ++result_->records_removed;
        continue;
      }
      kept.push_back(RecordInputFrom(r, decoder_.headers(r)));
    }
    std::string buf;
    BuiltBatch built;
    if (kept.empty()) {
      // The cleaner's rule for a batch left empty: dropped, unless it carries producer state (RETAIN_EMPTY).
      if (h.magic < 2 || !h.has_producer_id()) return true;
      if (!AppendEmptyBatch(h, &buf, &built, error)) return false;
    } else if (!AppendRetainedBatch(batch, kept, h.delete_horizon_ms, &buf, &built, error)) {
      return false;
    }
    BatchView view;
    if (!ParseOne(buf, &view, error)) return false;
    ++result_->batches_written;
    return w_->AppendBatch(view, error);
  }

  bool Done() const { return next_ == inserts_.size(); }

 private:
  bool Insert(const RepairAction& a, std::string* error) {
    std::string buf;
    BuiltBatch built;
    if (a.kind == RepairActionKind::kCopyBatch) {
      auto file = MappedFile::Open(a.source_file, error, env_);
      if (!file) return false;
      if (a.source_position >= file->size()) {
        *error = fmt::format("{}: position {} is past the end of the file", a.source_file, a.source_position);
        return false;
      }
      NullSink quiet;
      LogReader reader(a.source_file, file->data().subspan(a.source_position), &quiet);
      BatchView b;
      if (!reader.Next(&b) || !b.header.crc_valid) {
        *error = fmt::format("{}: position {}: the batch to copy cannot be read", a.source_file, a.source_position);
        return false;
      }
      buf.assign(reinterpret_cast<const char*>(b.bytes.data()), b.bytes.size());
      if (!file->Unchanged(error)) return false;
      ++result_->batches_copied;
    } else {
      EndTxnMarkerOptions mo;
      mo.offset = a.offset;
      mo.partition_leader_epoch = a.partition_leader_epoch;
      mo.producer_id = a.producer_id;
      mo.producer_epoch = a.producer_epoch;
      mo.timestamp = a.timestamp;
      mo.type = a.marker_type;
      mo.coordinator_epoch = a.coordinator_epoch;
      if (!AppendEndTxnMarker(mo, &buf, &built, error)) return false;
      ++result_->markers_inserted;
    }
    BatchView view;
    if (!ParseOne(buf, &view, error)) return false;
    ++result_->batches_written;
    return w_->AppendBatch(view, error);
  }

  Env* env_;  // the target's and sources' files are read through it
  PartitionWriter* w_;
  RepairResult* result_;
  std::vector<const RepairAction*> inserts_;
  size_t next_ = 0;
  std::set<int64_t> removed_;
  RecordDecoder decoder_;
};

}  // namespace

// What read_committed consumers get differently from `after` than from `before` (RepairResult's fields).
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per consumer-visible change (scenarios.md §6)
static void ConsumerChanges(const ReplicaState& before, const ReplicaState& after, RepairResult* result) {
  auto note = [](std::vector<int64_t>* list, size_t* count, int64_t o) {
    if (list->size() < RepairResult::kMaxChangesListed) list->push_back(o);
    ++*count;
  };
  size_t i = 0, j = 0;
  const auto& a = before.records;
  const auto& b = after.records;
  while (i < a.size() || j < b.size()) {
    if (j >= b.size() || (i < a.size() && a[i].offset < b[j].offset)) {
      if (a[i].read_committed && !a[i].control) note(&result->became_hidden, &result->became_hidden_count, a[i].offset);
      ++i;
    } else if (i >= a.size() || b[j].offset < a[i].offset) {
      if (b[j].read_committed && !b[j].control)
        note(&result->became_visible, &result->became_visible_count, b[j].offset);
      ++j;
    } else {
      if (!a[i].control && a[i].read_committed != b[j].read_committed) {
        if (b[j].read_committed) {
          note(&result->became_visible, &result->became_visible_count, b[j].offset);
        } else {
          note(&result->became_hidden, &result->became_hidden_count, a[i].offset);
        }
      }
      ++i;
      ++j;
    }
  }
  auto changed = [&](int64_t from, int64_t to) {
    if (result->keys_changed.size() < RepairResult::kMaxChangesListed) result->keys_changed.emplace_back(from, to);
    ++result->keys_changed_count;
  };
  i = j = 0;
  const auto& ka = before.key_view;
  const auto& kb = after.key_view;
  while (i < ka.size() || j < kb.size()) {
    if (j >= kb.size() || (i < ka.size() && KeyLess(ka[i].first, kb[j].first))) {
      if (!ka[i].second.tombstone) changed(ka[i].second.offset, -1);
      ++i;
    } else if (i >= ka.size() || KeyLess(kb[j].first, ka[i].first)) {
      if (!kb[j].second.tombstone) changed(-1, kb[j].second.offset);
      ++j;
    } else {
      const KeyState& x = ka[i].second;
      const KeyState& y = kb[j].second;
      bool same = x.tombstone == y.tombstone &&
                  (x.tombstone || before.records[x.record].content == after.records[y.record].content);
      if (!same) changed(x.tombstone ? -1 : x.offset, y.tombstone ? -1 : y.offset);
      ++i;
      ++j;
    }
  }
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the write steps (copy, patch, index, guard) in crash-safe order, each with its error exit
bool WriteRepairedCopy(Env* env, const RepairPlan& plan, const std::string& out, const RepairOptions& options,
                       RepairResult* result, std::string* error) {
  *result = RepairResult();
  CollectingSink scan;
  PartitionDir dir;
  if (!ScanPartitionDir(plan.target, &dir, &scan, env)) {
    *error = plan.target + ": cannot list the partition directory";
    return false;
  }
  if (!dir.unreadable.empty()) {  // since PlanRepair loaded it (LoadReplica refuses it as well)
    *error = dir.unreadable.front().error + " (a file of the target that cannot be read: nothing is written)";
    return false;
  }
  std::vector<std::string> inputs = plan.healthy;
  inputs.push_back(plan.target);
  std::string part;
  auto staged = StagePartitionCopy(env, out, options.force, std::move(inputs), dir, &part, error);
  if (!staged) return false;

  PartitionWriterOptions po;
  po.config = options.config;
  po.producer_state.producer_id_expiration_ms = options.producer_id_expiration_ms;
  po.auto_roll = false;
  if (dir.leader_epochs) po.initial_leader_epochs = *dir.leader_epochs;
  po.partition_metadata = dir.partition_metadata;
  auto writer = PartitionWriter::Create(env, part, po, error);
  if (!writer) return false;
  StreamWriter stream(env, writer.get(), plan, result);

  std::vector<const SegmentFiles*> segments = dir.LogSegments();
  bool any = false;  // the segment being copied got a batch
  SegmentCopy copy;
  copy.begin = [&](size_t si, std::string* e) {
    const int64_t base = segments[si]->base_offset;
    // Inserts that belong before this segment's base offset go at the end of the previous one.
    if (si > 0 && !stream.FlushBelow(base, e)) return false;
    ++result->segments;
    any = false;
    return writer->Roll(base, e);
  };
  copy.batch = [&](size_t si, const BatchView& batch, std::string* e) {
    any = true;
    return stream.Batch(batch, segments[si]->log->path, e);
  };
  copy.end = [&](size_t si, std::string* e) {
    if (si + 1 < segments.size() && !stream.FlushBelow(segments[si + 1]->base_offset, e)) return false;
    return any || writer->AppendRaw({}, e);
  };
  if (!CopyLogBatches(
          env, dir, copy,
          fmt::format("salvage the target first (klf repair --salvage {} --out DIR) and repair the salvaged copy",
                      plan.target),
          error)) {
    return false;
  }
  if (!stream.FlushBelow(std::numeric_limits<int64_t>::max(), error)) return false;
  if (!writer->Close(error)) return false;
  result->log_end_offset = writer->log_end_offset();
  if (!WriteCopyCheckpoints(env, staged->path(), dir, result->log_end_offset, error)) return false;
  if (!staged->Commit(error)) return false;
  result->out_partition_dir = out + "/" + PartitionDirName(dir);

  // 5. Load the copy and diff it against the healthy replicas (then the target beside them).
  const ReplicaOptions ro = LoadOptionsFor(options, plan.healthy.size() + 2);
  std::vector<ReplicaState> rs(plan.healthy.size() + 1);
  if (!LoadReplica(result->out_partition_dir, ro, &rs[0], error)) return false;
  for (size_t i = 0; i < plan.healthy.size(); ++i) {
    if (!LoadReplica(plan.healthy[i], ro, &rs[i + 1], error)) return false;
  }
  result->last_stable_offset = rs[0].last_stable_offset;
  for (const ReplicaState& r : rs) result->remaining_labels.push_back(r.label);
  DiffOptions diff_options;
  diff_options.coordinator = options.coordinator;
  for (const Finding& f : DiffReplicas(rs, diff_options).findings) {
    if (IsDivergence(f.kind) && (IsTarget(f) || DisputesTarget(f))) result->remaining.push_back(f);
  }
  {
    ReplicaState before;
    if (!LoadReplica(plan.target, ro, &before, error)) return false;
    ConsumerChanges(before, rs[0], result);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Rebuild from one replica (--rebuild-from): a follower's re-fetch of the whole log, offline.

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the write steps (copy, patch, index, guard) in crash-safe order, each with its error exit
bool WriteRebuiltCopy(Env* env, const std::string& source_dir, const std::string& target_dir,
                      const std::vector<std::string>& compare, const std::string& out, const RepairOptions& options,
                      RepairResult* result, std::string* error) {
  *result = RepairResult();
  CollectingSink scan;
  PartitionDir src, tgt;
  if (!ScanPartitionDir(source_dir, &src, &scan, env)) {
    *error = source_dir + ": cannot list the partition directory";
    return false;
  }
  if (!src.unreadable.empty()) {
    *error = src.unreadable.front().error +
             " (a file of the --rebuild-from replica that cannot be read: nothing is written)";
    return false;
  }
  if (!ScanPartitionDir(target_dir, &tgt, &scan, env)) {
    *error = target_dir + ": cannot list the partition directory";
    return false;
  }
  if (src.tp && tgt.tp && src.tp->ToString() != tgt.tp->ToString()) {
    *error = fmt::format("--rebuild-from {} holds partition {}, the target {}: not copies of one partition", source_dir,
                         src.tp->ToString(), tgt.tp->ToString());
    return false;
  }
  // The source, then the copy, the other replicas given and the target beside it.
  const ReplicaOptions ro = LoadOptionsFor(options, compare.size() + 3);
  ReplicaState source;
  if (!LoadReplica(source_dir, ro, &source, error)) return false;
  const int64_t log_start = source.log_start_offset;

  std::vector<std::string> inputs = compare;
  inputs.push_back(source_dir);
  inputs.push_back(target_dir);
  std::string part;
  auto staged = StagePartitionCopy(env, out, options.force, std::move(inputs), tgt, &part, error);
  if (!staged) return false;

  PartitionWriterOptions po;
  po.config = options.config;
  po.producer_state.producer_id_expiration_ms = options.producer_id_expiration_ms;
  po.auto_roll = false;
  // The follower's leader-epoch cache is what the fetched batches' epochs give (no initial entries).
  po.partition_metadata = tgt.partition_metadata ? tgt.partition_metadata : src.partition_metadata;
  auto writer = PartitionWriter::Create(env, part, po, error);
  if (!writer) return false;

  std::vector<const SegmentFiles*> segments = src.LogSegments();
  bool any = false;  // the segment being copied got a batch
  SegmentCopy copy;
  copy.skip = [&](size_t si) {  // wholly below the log start: a follower never fetches it
    return si + 1 < segments.size() && segments[si + 1]->base_offset <= log_start;
  };
  copy.begin = [&](size_t si, std::string* e) {
    ++result->segments;
    any = false;
    return writer->Roll(segments[si]->base_offset, e);
  };
  copy.batch = [&](size_t, const BatchView& batch, std::string* e) {
    if (batch.header.last_offset < log_start) return true;
    ++result->batches_written;
    ++result->batches_copied;
    any = true;
    return writer->AppendBatch(batch, e);
  };
  copy.end = [&](size_t, std::string* e) { return any || writer->AppendRaw({}, e); };
  if (!CopyLogBatches(env, src, copy,
                      fmt::format("salvage the --rebuild-from replica first (klf repair --salvage {} --out DIR) "
                                  "or rebuild from another replica",
                                  source_dir),
                      error)) {
    return false;
  }
  if (!writer->Close(error)) return false;
  result->log_end_offset = writer->log_end_offset();
  if (tgt.tp) {
    NullSink quiet;
    PartitionCheckpoints cp = ReadParentCheckpoints(src.path, src.tp ? *src.tp : *tgt.tp, &quiet, env);
    auto one = [&](const char* file_name, std::optional<int64_t> v) {
      const std::string path = staged->path() + "/" + file_name;
      if (!v) return WriteOffsetCheckpointFile(env, path, {}, error);
      return WriteOffsetCheckpointFile(env, path,
                                       {OffsetCheckpointEntry{*tgt.tp, std::min(*v, result->log_end_offset)}}, error);
    };
    // A follower takes the leader's high watermark and log start; its own cleaner has not run yet.
    if (!one("replication-offset-checkpoint", cp.high_watermark) ||
        !one("log-start-offset-checkpoint", log_start > 0 ? std::optional<int64_t>(log_start) : cp.log_start_offset) ||
        !one("cleaner-offset-checkpoint", std::nullopt) ||
        !one("recovery-point-offset-checkpoint", result->log_end_offset)) {
      return false;
    }
  }
  if (!staged->Commit(error)) return false;
  result->out_partition_dir = out + "/" + PartitionDirName(tgt);

  // Load the copy and diff it against the source and the other replicas given.
  std::vector<ReplicaState> rs(compare.size() + 2);
  if (!LoadReplica(result->out_partition_dir, ro, &rs[0], error)) return false;
  rs[1] = std::move(source);
  for (size_t i = 0; i < compare.size(); ++i) {
    if (!LoadReplica(compare[i], ro, &rs[i + 2], error)) return false;
  }
  result->last_stable_offset = rs[0].last_stable_offset;
  for (const ReplicaState& r : rs) result->remaining_labels.push_back(r.label);
  DiffOptions diff_options;
  diff_options.coordinator = options.coordinator;
  for (const Finding& f : DiffReplicas(rs, diff_options).findings) {
    if (IsDivergence(f.kind) && (IsTarget(f) || DisputesTarget(f))) result->remaining.push_back(f);
  }
  {
    ReplicaState before;
    if (!LoadReplica(target_dir, ro, &before, error)) return false;
    ConsumerChanges(before, rs[0], result);
  }
  return true;
}

}  // namespace klf
