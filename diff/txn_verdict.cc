// The transaction rules of `klf diff` (see txn_verdict.h for each rule and why it holds).
#include "diff/txn_verdict.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "segment_reader/bytes.h"

namespace klf {
namespace {

const Marker* MarkerAt(const ReplicaState& r, int64_t offset) {
  auto it = std::lower_bound(r.markers.begin(), r.markers.end(), offset,
                             [](const Marker& m, int64_t o) { return m.offset < o; });
  return it != r.markers.end() && it->offset == offset ? &*it : nullptr;
}

const char* MarkerWord(MarkerType t) {
  switch (t) {
    case MarkerType::kCommit: return "COMMIT";
    case MarkerType::kAbort: return "ABORT";
    case MarkerType::kEmpty: return "emptied control batch";
    case MarkerType::kOther: return "control batch";
  }
  return "?";
}

std::string TxnSpan(const Txn& t, int64_t first) {
  if (!t.marker_offset) return fmt::format("transaction open from offset {}", first);
  return fmt::format("transaction from offset {} to its {} at offset {}", first,
                     t.fate == TxnFate::kCommitted ? "COMMIT" : "ABORT", *t.marker_offset);
}

// A fact about the affected replica lacking `offset` (a hole, or only an emptied control batch there).
TxnFact LacksFact(const std::vector<ReplicaState>& rs, size_t a, int64_t pid, int64_t offset) {
  const ReplicaState& A = rs[a];
  const Marker* m = MarkerAt(A, offset);
  if (m != nullptr && m->producer_id == pid && m->type == MarkerType::kEmpty) {
    return BatchFact(rs, a, offset,
                     fmt::format("{} holds offset {} only as an emptied control batch of producer {}, which closes no "
                                 "transaction on a follower",
                                 A.label, offset, pid));
  }
  const OffsetGap* g = A.GapAtOrAfter(offset);
  std::string hole = g != nullptr && g->from <= offset ? fmt::format("an offset hole {}..{}", g->from, g->to - 1)
                                                       : fmt::format("no batch at offset {}", offset);
  TxnFact f = BatchFact(rs, a, offset,
                        fmt::format("{} holds no batch at offset {} ({}; the position is that of the next batch)",
                                    A.label, offset, hole));
  return f;
}

bool OpenOn(const ReplicaState& b, int64_t pid, int64_t offset) {
  return std::any_of(b.open_txns.begin(), b.open_txns.end(),
                     [&](const OpenTxn& t) { return t.producer_id == pid && t.first_offset <= offset; });
}

}  // namespace

const char* FindingCertaintyName(FindingCertainty c) {
  return c == FindingCertainty::kCertain ? "certain" : "suspected";
}

const char* TxnOutcomeName(TxnOutcome o) {
  switch (o) {
    case TxnOutcome::kCommit: return "commit";
    case TxnOutcome::kAbort: return "abort";
    case TxnOutcome::kUnknown: return "unknown";
  }
  return "unknown";
}

TxnFact BatchFact(const std::vector<ReplicaState>& rs, size_t replica, int64_t offset, std::string fact) {
  const ReplicaState& r = rs[replica];
  TxnFact f;
  f.replica = replica;
  f.fact = std::move(fact);
  auto it = std::lower_bound(r.batches.begin(), r.batches.end(), offset,
                             [](const BatchSpan& b, int64_t o) { return b.last_offset < o; });
  if (it != r.batches.end() && it->segment < r.segment_files.size()) {
    f.file = r.segment_files[it->segment];
    f.position = int64_t(it->position);
  }
  return f;
}

namespace {

template <typename F>
void ForEachEntryEndingIn(const ReplicaState& b, int64_t lo, int64_t hi, F&& f) {
  // Entries with last_offset in [lo, hi]: their first_offset <= hi, and (by the prefix maximum) the
  // scan backwards stops at the first prefix whose entries all end before lo.
  auto it = std::upper_bound(b.aborted_txns.begin(), b.aborted_txns.end(), hi,
                             [](int64_t o, const AbortedTxn& e) { return o < e.first_offset; });
  bool indexed = b.txn_index_max_last.size() == b.aborted_txns.size();
  for (size_t i = size_t(it - b.aborted_txns.begin()); i-- > 0;) {
    if (indexed && b.txn_index_max_last[i] < lo) break;
    const AbortedTxn& e = b.aborted_txns[i];
    if (e.last_offset >= lo && e.last_offset <= hi) f(i);
  }
}

}  // namespace

std::optional<size_t> AbortedRangeCovering(const ReplicaState& b, int64_t pid, int64_t offset) {
  std::optional<size_t> found;
  ForEachEntryEndingIn(b, offset, INT64_MAX, [&](size_t i) {
    const AbortedTxn& e = b.aborted_txns[i];
    if (e.producer_id == pid && e.first_offset <= offset && (!found || i < *found)) found = i;
  });
  return found;
}

TxnFact TxnIndexFact(const ReplicaState& b, size_t replica, size_t entry, std::string fact) {
  TxnFact f;
  f.replica = replica;
  f.fact = std::move(fact);
  if (entry < b.aborted_txn_sources.size()) {
    f.file = b.aborted_txn_sources[entry].file;
    f.position = int64_t(b.aborted_txn_sources[entry].position);
  }
  return f;
}

bool IsSlot(const std::vector<ReplicaState>& rs, size_t affected, int64_t pid, int64_t offset) {
  const ReplicaState& A = rs[affected];
  if (offset < A.log_start_offset || offset >= A.log_end_offset) return false;
  if (A.HoldsOffset(offset)) {
    const Marker* m = MarkerAt(A, offset);
    if (m == nullptr || m->producer_id != pid || m->type != MarkerType::kEmpty) return false;
  }
  for (size_t i = 0; i < rs.size(); ++i) {
    if (i == affected || !rs[i].HoldsOffset(offset)) continue;
    const Marker* m = MarkerAt(rs[i], offset);
    if (m == nullptr || m->producer_id != pid) return false;  // a record of another kind sits there
  }
  return true;
}

std::optional<int64_t> FindSlot(const std::vector<ReplicaState>& rs, size_t affected, int64_t pid, int64_t from,
                                int64_t to) {
  const ReplicaState& A = rs[affected];
  std::optional<int64_t> best;
  // Emptied control batches of the producer on A.
  for (auto it = std::upper_bound(A.markers.begin(), A.markers.end(), from,
                                  [](int64_t o, const Marker&m) { return o < m.offset; });
       it != A.markers.end() && it->offset < to; ++it) {
    if (it->producer_id == pid && it->type == MarkerType::kEmpty && IsSlot(rs, affected, pid, it->offset)) {
      best = it->offset;
      break;
    }
  }
  // Offsets A holds no batch for.
  int64_t checked = 0;
  auto g =
      std::lower_bound(A.gaps.begin(), A.gaps.end(), from + 1, [](const OffsetGap& x, int64_t o) { return x.to <= o; });
  for (; g != A.gaps.end() && g->from < to; ++g) {
    for (int64_t o = std::max(g->from, from + 1); o < std::min(g->to, to); ++o) {
      if (best && o >= *best) return best;
      if (++checked > 1000000 || IsSlot(rs, affected, pid, o)) return o;
    }
  }
  return best;
}

std::vector<std::vector<int64_t>> RecordsByTxn(const ReplicaState& a) {
  std::vector<std::vector<int64_t>> by_txn(a.txns.size());
  for (const RecordDigest& d : a.records) {
    if (!d.control && d.transactional && d.txn >= 0 && size_t(d.txn) < by_txn.size()) by_txn[d.txn].push_back(d.offset);
  }
  return by_txn;
}

std::vector<int64_t> TxnRecords(const ReplicaState& a, int32_t txn) {
  std::vector<int64_t> out;
  if (txn < 0 || size_t(txn) >= a.txns.size()) return out;
  const Txn& t = a.txns[txn];
  // Its records lie between its first and last data offsets.
  auto it = std::lower_bound(a.records.begin(), a.records.end(), t.first_offset,
                             [](const RecordDigest& r, int64_t o) { return r.offset < o; });
  for (; it != a.records.end() && it->offset <= t.last_data_offset; ++it) {
    if (!it->control && it->txn == txn) out.push_back(it->offset);
  }
  return out;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): a proof with one case per evidence kind (issue 17's rules)
MergeProof ProveMerge(const std::vector<ReplicaState>& rs, size_t a, int32_t txn, std::span<const int64_t> records) {
  MergeProof p;
  const ReplicaState& A = rs[a];
  if (records.empty() || txn < 0 || size_t(txn) >= A.txns.size()) return p;
  const Txn& t = A.txns[txn];
  const int64_t pid = t.producer_id;
  const int64_t first = records.front();
  const int64_t end = t.marker_offset.value_or(A.log_end_offset);
  std::set<int64_t> slots_named;
  auto name_slot = [&](int64_t slot) {
    if (slots_named.insert(slot).second) p.facts.push_back(LacksFact(rs, a, pid, slot));
  };

  for (size_t b = 0; b < rs.size(); ++b) {
    if (b == a) continue;
    const ReplicaState& B = rs[b];
    // A marker of the producer inside A's transaction that A lacks (the first three named as facts).
    int named_markers = 0, more_markers = 0;
    for (auto it = std::upper_bound(B.markers.begin(), B.markers.end(), first,
                                    [](int64_t o, const Marker&m) { return o < m.offset; });
         it != B.markers.end() && it->offset < end; ++it) {
      if (it->producer_id != pid || (it->type != MarkerType::kCommit && it->type != MarkerType::kAbort)) continue;
      if (!IsSlot(rs, a, pid, it->offset)) continue;
      p.witnesses.insert(b);
      p.split = std::max(p.split, it->offset);
      if (++named_markers > 3) {
        ++more_markers;
        continue;
      }
      p.facts.push_back(BatchFact(
          rs, b, it->offset,
          fmt::format("{} holds the {} of producer {} (epoch {}) at offset {}, inside {}'s {}: the records of that "
                      "producer before it were closed by it or by an earlier marker",
                      B.label, MarkerWord(it->type), pid, it->producer_epoch, it->offset, A.label, TxnSpan(t, first))));
      name_slot(it->offset);
    }
    if (more_markers > 0) {
      TxnFact more;
      more.replica = b;
      more.fact = fmt::format(
          "{} holds {} more markers of producer {} inside that transaction, up to offset {}, which "
          "{} lacks too",
          B.label, more_markers, pid, p.split, A.label);
      p.facts.push_back(std::move(more));
    }
    // B's .txnindex: the same ABORT starting later, or an ABORT inside A's transaction.
    std::vector<size_t> entries;
    ForEachEntryEndingIn(B, first + 1, end, [&](size_t i) { entries.push_back(i); });
    std::sort(entries.begin(), entries.end());
    for (size_t i : entries) {
      const AbortedTxn& e = B.aborted_txns[i];
      if (e.producer_id != pid) continue;
      if (t.marker_offset && t.fate == TxnFate::kAborted && e.last_offset == *t.marker_offset &&
          e.first_offset > first) {
        auto before = std::lower_bound(records.begin(), records.end(), e.first_offset);
        if (before == records.begin()) continue;
        int64_t last_before = *(before - 1);
        std::optional<int64_t> slot = FindSlot(rs, a, pid, last_before, e.first_offset);
        if (!slot) continue;
        p.facts.push_back(TxnIndexFact(
            B, b, i,
            fmt::format("{}'s .txnindex has producer {}'s transaction aborted at offset {} starting at offset {}, "
                        "after {}'s first record {} of it",
                        B.label, pid, e.last_offset, e.first_offset, A.label, first)));
        name_slot(*slot);
        p.witnesses.insert(b);
        p.split = std::max(p.split, e.first_offset);
      } else if (e.last_offset > first && e.last_offset < end && IsSlot(rs, a, pid, e.last_offset)) {
        p.facts.push_back(TxnIndexFact(
            B, b, i,
            fmt::format("{}'s .txnindex has producer {}'s transaction from offset {} aborted at offset {}, inside "
                        "{}'s {}",
                        B.label, pid, e.first_offset, e.last_offset, A.label, TxnSpan(t, first))));
        name_slot(e.last_offset);
        p.witnesses.insert(b);
        p.split = std::max(p.split, e.last_offset);
      }
    }
  }
  // One transaction's data has one producer epoch.
  int16_t prev_epoch = -1;
  int64_t prev = -1;
  for (int64_t o : records) {
    int64_t ri = A.FindRecord(o);
    if (ri < 0) continue;
    int16_t e = A.records[ri].producer_epoch;
    if (prev >= 0 && e != prev_epoch) {
      std::optional<int64_t> slot = FindSlot(rs, a, pid, prev, o);
      if (slot) {
        p.facts.push_back(BatchFact(
            rs, a, o,
            fmt::format("on {} the data of producer {}'s {} spans two producer epochs: {} at offset {}, {} at offset "
                        "{} (one transaction's data has a single epoch)",
                        A.label, pid, TxnSpan(t, first), prev_epoch, prev, e, o)));
        name_slot(*slot);
        p.split = std::max(p.split, o);
      }
    }
    prev = o;
    prev_epoch = e;
  }
  p.proven = p.split >= 0;
  return p;
}

CoordinatorOutcome OutcomeFromCoordinator(const CoordinatorLog& log, int64_t pid, int16_t epoch,
                                          const std::string& topic_partition, ClusterMatch match) {
  CoordinatorOutcome c;
  c.fact.replica = kCoordinatorWitness;
  CoordinatorView v = ViewOfTransaction(log, pid, epoch, topic_partition, match);
  if (match == ClusterMatch::kForeign) {
    c.fact.fact = v.why;
    return c;
  }
  if (v.verdict == CoordinatorVerdict::kNoRecord) {
    c.fact.fact = fmt::format(
        "the coordinator's log ({} __transaction_state partitions) holds no record of producer "
        "{} (older records of a transactional id are compacted away, or it is another "
        "cluster's log): it decides nothing here",
        log.partition_dirs.size(), pid);
    return c;
  }
  // The record the verdict rests on: the decision (Prepare*) when there is one, else the latest.
  const CoordinatorRecord* at = nullptr;
  for (const CoordinatorRecord& r : v.evidence) {
    if (r.state == "PrepareCommit" || r.state == "PrepareAbort") at = &r;
  }
  if (at == nullptr && !v.evidence.empty()) at = &v.evidence.back();
  if (at != nullptr) {
    c.fact.file = at->file;
    c.fact.position = int64_t(at->position);
  }
  const bool decided = v.verdict == CoordinatorVerdict::kCommitted || v.verdict == CoordinatorVerdict::kAborted;
  const std::string where = at != nullptr ? fmt::format("{} at offset {}", at->state, at->offset) : "none";
  if (decided) {
    c.fact.fact = fmt::format(
        "the coordinator's {} of transactional id '{}' {} producer {}'s transaction at epoch {} "
        "on {} ({}): {}",
        where, v.transactional_id, v.verdict == CoordinatorVerdict::kCommitted ? "committed" : "aborted", pid, epoch,
        topic_partition, v.certain ? "proven" : "suspected", v.why);
  } else {
    c.fact.fact = fmt::format(
        "the coordinator's records of transactional id '{}' (the last one considered: {}) say "
        "{} for producer {}'s transaction at epoch {} on {}: {}",
        v.transactional_id, where, CoordinatorVerdictName(v.verdict), pid, epoch, topic_partition, v.why);
  }
  if (decided && v.certain) {
    c.outcome = v.verdict == CoordinatorVerdict::kCommitted ? TxnOutcome::kCommit : TxnOutcome::kAbort;
    if (at != nullptr) c.marker_epoch = at->producer_epoch;
  }
  return c;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): a proof with one case per evidence kind (issue 17's rules)
OutcomeProof ProveOutcome(const std::vector<ReplicaState>& rs, size_t a, int64_t pid, std::span<const int64_t> records,
                          const CoordinatorLog* coordinator) {
  OutcomeProof p;
  const ReplicaState& A = rs[a];
  // A witness's own transaction that is itself proven merged says nothing about the records of it
  // before its split (cached per replica and transaction).
  std::map<std::pair<size_t, int32_t>, int64_t> witness_split;
  std::map<int16_t, CoordinatorOutcome> by_epoch;
  std::set<int16_t> facts_shown;
  ClusterMatch match = ClusterMatch::kUnproven;
  if (coordinator != nullptr) {
    std::vector<CopyOrigin> origins;
    for (const ReplicaState& r : rs) origins.push_back({r.path, r.cluster_id});
    match = MatchCluster(*coordinator, origins);
  }
  auto split_of = [&](size_t b, int32_t txn) {
    auto it = witness_split.find({b, txn});
    if (it != witness_split.end()) return it->second;
    std::vector<int64_t> recs = TxnRecords(rs[b], txn);
    MergeProof m = ProveMerge(rs, b, txn, recs);
    int64_t split = m.proven ? m.split : -1;
    witness_split[{b, txn}] = split;
    return split;
  };
  for (int64_t o : records) {
    int64_t ri = A.FindRecord(o);
    if (ri < 0) continue;
    const RecordDigest& d = A.records[ri];
    std::vector<std::pair<size_t, std::pair<TxnOutcome, TxnFact>>> found;
    std::optional<int16_t> coordinator_marker_epoch;  // the coordinator's decision for this record
    for (size_t b = 0; b < rs.size(); ++b) {
      if (b == a) continue;
      const ReplicaState& B = rs[b];
      std::optional<TxnOutcome> out;
      TxnFact fact;
      int64_t j = B.FindRecord(o);
      if (j >= 0) {
        const RecordDigest& x = B.records[j];
        if (x.content != d.content || x.producer_id != pid || x.txn < 0) continue;
        const Txn& tb = B.txns[x.txn];
        if (!tb.marker_offset || (x.fate != TxnFate::kCommitted && x.fate != TxnFate::kAborted)) continue;
        if (o < split_of(b, x.txn)) continue;  // that replica merged it too
        out = x.fate == TxnFate::kCommitted ? TxnOutcome::kCommit : TxnOutcome::kAbort;
        fact = BatchFact(rs, b, *tb.marker_offset,
                         fmt::format("{} still holds offset {} and closes it with the {} at offset {} (the marker that "
                                     "closed a record is kept while the record exists)",
                                     B.label, o, *out == TxnOutcome::kCommit ? "COMMIT" : "ABORT", *tb.marker_offset));
      } else if (B.Covers(o)) {
        std::optional<size_t> e = AbortedRangeCovering(B, pid, o);
        if (e) {
          // Not when that replica's own transaction closed by this ABORT is proven merged past offset o.
          // (Its transactions are by first offset, one producer's never overlap: the producer's last one
          // starting at or before the ABORT is the one the ABORT closed.)
          const int64_t m = B.aborted_txns[*e].last_offset;
          auto it = std::upper_bound(B.txns.begin(), B.txns.end(), m,
                                     [](int64_t x, const Txn& t) { return x < t.first_offset; });
          for (size_t ti = size_t(it - B.txns.begin()); ti-- > 0;) {
            if (B.txns[ti].producer_id != pid) continue;
            if (B.txns[ti].marker_offset == m && o < split_of(b, int32_t(ti))) e.reset();
            break;
          }
        }
        if (e) {
          out = TxnOutcome::kAbort;
          fact = TxnIndexFact(
              B, b, *e,
              fmt::format("{}'s .txnindex has producer {}'s aborted range {}..{}, covering offset {}", B.label, pid,
                          B.aborted_txns[*e].first_offset, B.aborted_txns[*e].last_offset, o));
        } else if (d.has_key && d.has_value && !B.DamagedAfter(o) && o < B.last_stable_offset &&
                   B.last_stable_offset >= B.high_watermark) {
          const KeyState* k = B.Key(d.key);
          bool later_anywhere = false;
          for (const ReplicaState& r : rs) {
            const KeyState* kr = r.Key(d.key);
            if (kr != nullptr && kr->offset > o) later_anywhere = true;
          }
          if ((k == nullptr || k->offset < o) && !later_anywhere) {
            out = TxnOutcome::kAbort;
            fact = BatchFact(
                rs, b, o,
                fmt::format("{} removed the value at offset {} and keeps no later record of its key{}, nor "
                            "does any replica (the cleaner removes an unsuperseded value only when its "
                            "transaction aborted)",
                            B.label, o,
                            k == nullptr ? "" : fmt::format(" (only an older one, at offset {})", k->offset)));
          }
        }
      }
      if (!out) continue;
      found.push_back({b, {*out, std::move(fact)}});
    }
    // Rule "coordinator", one look per producer epoch.
    if (coordinator != nullptr && A.tp) {
      auto it = by_epoch.find(d.producer_epoch);
      if (it == by_epoch.end())
        it = by_epoch
                 .emplace(d.producer_epoch,
                          OutcomeFromCoordinator(*coordinator, pid, d.producer_epoch, A.tp->ToString(), match))
                 .first;
      if (it->second.outcome) {
        found.push_back({kCoordinatorWitness, {*it->second.outcome, it->second.fact}});
        coordinator_marker_epoch = it->second.marker_epoch;
      } else if (facts_shown.insert(d.producer_epoch).second) {
        p.coordinator_facts.push_back(it->second.fact);
      }
    }
    // Replicas that prove different outcomes for one record: one of them is wrong, so neither proves it.
    bool agree = !found.empty() && std::all_of(found.begin(), found.end(), [&](const auto& x) {
      return x.second.first == found.front().second.first;
    });
    if (!agree) {
      p.unproven.push_back(o);
      continue;
    }
    TxnOutcome out = found.front().second.first;
    p.proven.push_back({o, out});
    bool first_of_kind = p.seen.insert(out).second;
    for (auto& [b, x] : found) {
      if (b == kCoordinatorWitness) {
        p.coordinator_proves = true;
        if (!p.coordinator_marker_epoch) p.coordinator_marker_epoch = coordinator_marker_epoch;
      } else {
        p.witnesses.insert(b);
      }
      if (first_of_kind) {
        p.facts.push_back(std::move(x.second));
        first_of_kind = false;
      }
    }
  }
  if (p.seen.size() == 1 && p.unproven.empty()) p.outcome = *p.seen.begin();
  return p;
}

MergeProof MergeFromOutcome(const std::vector<ReplicaState>& rs, size_t a, int32_t txn, const OutcomeProof& outcome) {
  MergeProof p;
  const ReplicaState& A = rs[a];
  if (txn < 0 || size_t(txn) >= A.txns.size()) return p;
  const Txn& t = A.txns[txn];
  if (!t.marker_offset || (t.fate != TxnFate::kCommitted && t.fate != TxnFate::kAborted)) return p;
  const TxnOutcome held = t.fate == TxnFate::kCommitted ? TxnOutcome::kCommit : TxnOutcome::kAbort;
  int64_t last_other = -1;
  for (const auto& [o, out] : outcome.proven) {
    if (out != held) last_other = std::max(last_other, o);
  }
  if (last_other < 0) return p;
  std::optional<int64_t> slot = FindSlot(rs, a, t.producer_id, last_other, *t.marker_offset);
  if (!slot) return p;
  p.proven = true;
  p.split = last_other + 1;
  p.witnesses = outcome.witnesses;
  p.facts.push_back(LacksFact(rs, a, t.producer_id, *slot));
  return p;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): a proof with one case per evidence kind (issue 17's rules)
DecidedProof ProveDecided(const std::vector<ReplicaState>& rs, size_t a, int32_t txn,
                          std::span<const int64_t> records) {
  DecidedProof p;
  const ReplicaState& A = rs[a];
  if (records.empty() || txn < 0 || size_t(txn) >= A.txns.size()) return p;
  const Txn& t = A.txns[txn];
  const int64_t pid = t.producer_id;
  std::optional<int64_t> tail_slot;
  bool tail_looked = false;
  auto slot_after_data = [&]() {
    if (!tail_looked) tail_slot = FindSlot(rs, a, pid, records.back(), A.log_end_offset);
    tail_looked = true;
    return tail_slot;
  };
  for (size_t b = 0; b < rs.size(); ++b) {
    if (b == a) continue;
    const ReplicaState& B = rs[b];
    std::optional<TxnFact> fact;
    // A marker of the producer after the first record that A lacks (COMMIT, ABORT, or the cleaner's
    // emptied remnant of one with no open transaction of the producer there).
    for (auto it = std::upper_bound(B.markers.begin(), B.markers.end(), records.front(),
                                    [](int64_t o, const Marker&m) { return o < m.offset; });
         it != B.markers.end() && it->offset < A.log_end_offset && !fact; ++it) {
      if (it->producer_id != pid || it->type == MarkerType::kOther) continue;
      if (it->type == MarkerType::kEmpty && OpenOn(B, pid, records.front())) continue;
      if (!IsSlot(rs, a, pid, it->offset)) continue;
      fact = BatchFact(rs, b, it->offset,
                       fmt::format("{} holds the {} of producer {} at offset {}, after offset {}, which {} {}", B.label,
                                   MarkerWord(it->type), pid, it->offset, records.front(), A.label,
                                   A.HoldsOffset(it->offset) ? "holds only as an emptied batch (which closes no "
                                                               "transaction on a follower)"
                                                             : "lacks"));
    }
    for (size_t i = 0; i < records.size() && !fact; ++i) {
      int64_t o = records[i];
      int64_t j = B.FindRecord(o);
      if (j >= 0) {
        const RecordDigest& x = B.records[j];
        if (x.producer_id != pid || x.txn < 0 || !B.txns[x.txn].marker_offset) continue;
        int64_t m = *B.txns[x.txn].marker_offset;
        if (m >= A.log_end_offset || !IsSlot(rs, a, pid, m)) continue;
        fact = BatchFact(rs, b, m,
                         fmt::format("{} holds offset {} and closes it with the marker at offset {}, which {} lacks",
                                     B.label, o, m, A.label));
      } else if (B.Covers(o) && !B.DamagedAfter(o) && o < B.last_stable_offset && !OpenOn(B, pid, o)) {
        // The marker B still holds after the data lies past A's log end: A has not fetched it yet.
        const Marker* next = B.NextMarker(pid, records.back());
        if (next != nullptr && next->offset >= A.log_end_offset) break;
        if (!slot_after_data()) break;
        fact = BatchFact(rs, b, o,
                         fmt::format("{} removed offset {} and holds no open transaction of producer {} (its last "
                                     "stable offset is {}; the cleaner never removes data of an open transaction): the "
                                     "transaction was decided and its marker compacted away",
                                     B.label, o, pid, B.last_stable_offset));
      }
    }
    if (!fact) continue;
    p.proven = true;
    p.witnesses.insert(b);
    p.facts.push_back(std::move(*fact));
  }
  if (p.proven) {
    if (auto s = slot_after_data()) p.facts.push_back(LacksFact(rs, a, pid, *s));
  }
  return p;
}

Suspicion SuspectMerge(const std::vector<ReplicaState>& rs, size_t a, int32_t txn, std::span<const int64_t> records,
                       int64_t transaction_max_timeout_ms, bool wall_clock_times) {
  Suspicion s;
  const ReplicaState& A = rs[a];
  if (records.empty() || txn < 0 || size_t(txn) >= A.txns.size()) return s;
  const Txn& t = A.txns[txn];
  if (!t.marker_offset) return s;
  const Marker* m = MarkerAt(A, *t.marker_offset);
  int64_t mi = A.FindRecord(*t.marker_offset);
  if (m == nullptr || mi < 0) return s;
  int64_t marker_ts = A.records[mi].timestamp;
  int16_t epoch = -1;
  for (int64_t o : records) {
    int64_t ri = A.FindRecord(o);
    if (ri < 0) continue;
    if (epoch >= 0 && A.records[ri].producer_epoch != epoch) return s;  // ProveMerge's business
    epoch = A.records[ri].producer_epoch;
  }
  if (m->producer_epoch != epoch) return s;  // an epoch bump: a time-out abort (TV1) or a TV2 end
  // Records written longer than the time-out before the marker cannot be in the transaction it closes.
  std::vector<int64_t> stale;
  int64_t next = *t.marker_offset;
  for (int64_t o : records) {
    const int64_t ri = A.FindRecord(o);
    if (ri < 0) continue;  // as above: a record A does not hold (offsets out of order in damaged input)
    const RecordDigest& d = A.records[ri];
    if (marker_ts - d.timestamp > transaction_max_timeout_ms) {
      stale.push_back(o);
    } else {
      next = o;
      break;
    }
  }
  if (stale.empty()) return s;
  std::optional<int64_t> slot = FindSlot(rs, a, t.producer_id, stale.back(), next);
  if (!slot) return s;
  const RecordDigest& first = A.records[A.FindRecord(stale.front())];  // found in the loop above
  s.raised = true;
  s.split = next;
  s.facts.push_back(BatchFact(
      rs, a, stale.front(),
      fmt::format("on {} producer {}'s record at offset {} (timestamp {}) and its marker at offset {} (timestamp {}, "
                  "the same epoch {}) are {} ms apart, longer than transaction.max.timeout.ms ({} ms), after which the "
                  "coordinator aborts a transaction with an epoch bump",
                  A.label, t.producer_id, stale.front(),
                  wall_clock_times ? WithWallClock(first.timestamp) : std::to_string(first.timestamp), *t.marker_offset,
                  wall_clock_times ? WithWallClock(marker_ts) : std::to_string(marker_ts), epoch,
                  marker_ts - first.timestamp, transaction_max_timeout_ms)));
  s.facts.push_back(LacksFact(rs, a, t.producer_id, *slot));
  return s;
}

}  // namespace klf
