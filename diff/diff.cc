// Replica comparison (see diff.h). The rules come from the cleaner's invariants (kafka-log-cleaner.md,
// scenarios.md §2 and §6):
//   * the cleaner removes a value only when a later record for its key exists (then that record, or a
//     tombstone that later went, proves a newer state), and removes aborted data whatever its key;
//   * a COMMIT goes only after its transaction's data was superseded; an ABORT only after its data went;
//   * a follower appends the leader's batches at the leader's offsets, so the same offset holds the same
//     record on every replica that has it; a marker that never arrived makes the next marker of that
//     producer close everything from the open transaction's first offset.
#include "diff/diff.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "segment_reader/bytes.h"
#include "segment_reader/java_long.h"

namespace klf {
namespace {

// A key or value in a sentence, as --bytes prints it.
std::string Text(const std::optional<std::string>& b, BytesFormat format) {
  if (!b) return "null";
  return FormatBytes(AsBytes(*b), format);
}

std::string Names(const std::vector<ReplicaState>& rs, const std::vector<size_t>& idx) {
  std::string s;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (i) s += i + 1 == idx.size() ? " and " : ", ";
    s += rs[idx[i]].label;
  }
  return s;
}

std::string OffsetRange(int64_t a, int64_t b) { return a == b ? std::to_string(a) : fmt::format("{}..{}", a, b); }

// Pairwise agreement of the records two replicas both hold.
struct PairStats {
  int64_t matches = 0, mismatches = 0;
  bool first_common_mismatch = false;
  bool any = false;
};

// ---------------------------------------------------------------------------------------------
// Record-by-record alignment: divergent records, and unrelated logs.

struct Divergent {
  int64_t first = 0, last = 0;
  std::vector<size_t> affected, healthy;
};

// When every replica stands at the start of one and the same full chunk of records (RecordStore: held
// in common because their records are equal), its records agree on every replica: counted as
// matches in one step, as the record-by-record walk would count them.
bool SkipSharedChunk(const std::vector<ReplicaState>& rs, std::vector<size_t>* pos,
                     std::vector<std::vector<PairStats>>* stats, int64_t* last_match) {
  constexpr size_t kChunk = RecordStore::kChunk;
  const size_t n = rs.size();
  const size_t p = (*pos)[0];
  if (n < 2 || p % kChunk != 0 || p + kChunk > rs[0].records.size()) return false;
  for (size_t i = 1; i < n; ++i) {
    if ((*pos)[i] != p || p + kChunk > rs[i].records.size() || rs[i].records.ChunkOf(p) != rs[0].records.ChunkOf(p)) {
      return false;
    }
  }
  for (size_t x = 0; x < n; ++x) {
    for (size_t y = x + 1; y < n; ++y) {
      PairStats& s = (*stats)[x][y];
      if (!s.any) s.first_common_mismatch = false;
      s.any = true;
      s.matches += int64_t(kChunk);
    }
  }
  *last_match = rs[0].records[p + kChunk - 1].offset;
  for (size_t& q : *pos) q += kChunk;
  return true;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one merge walk over the replicas' records; its cases are scenarios.md §5's
void AlignRecords(const std::vector<ReplicaState>& rs, std::vector<std::vector<PairStats>>* stats,
                  std::vector<Divergent>* divergent) {
  size_t n = rs.size();
  stats->assign(n, std::vector<PairStats>(n));
  std::vector<size_t> pos(n, 0);
  int64_t last_match = -1;
  while (true) {
    if (SkipSharedChunk(rs, &pos, stats, &last_match)) continue;
    int64_t offset = INT64_MAX;
    for (size_t i = 0; i < n; ++i) {
      if (pos[i] < rs[i].records.size()) offset = std::min(offset, rs[i].records[pos[i]].offset);
    }
    if (offset == INT64_MAX) break;
    std::vector<size_t> holders;
    for (size_t i = 0; i < n; ++i) {
      if (pos[i] < rs[i].records.size() && rs[i].records[pos[i]].offset == offset) holders.push_back(i);
    }
    if (holders.size() >= 2) {
      auto same = [&](size_t i, size_t j) {
        const RecordDigest& a = rs[i].records[pos[i]];
        const RecordDigest& b = rs[j].records[pos[j]];
        return a.content == b.content && a.control == b.control && a.producer_id == b.producer_id &&
               a.producer_epoch == b.producer_epoch;
      };
      bool all_same = true;
      for (size_t x = 0; x < holders.size(); ++x) {
        for (size_t y = x + 1; y < holders.size(); ++y) {
          PairStats& s = (*stats)[holders[x]][holders[y]];
          bool eq = same(holders[x], holders[y]);
          if (!s.any) s.first_common_mismatch = !eq;
          s.any = true;
          (eq ? s.matches : s.mismatches)++;
          all_same = all_same && eq;
        }
      }
      if (all_same) {
        last_match = offset;
      } else {
        // Largest group of equal records is healthy (ties: the first replica given).
        std::vector<std::vector<size_t>> groups;
        for (size_t h : holders) {
          bool placed = false;
          for (auto& g : groups) {
            if (same(g.front(), h)) {
              g.push_back(h);
              placed = true;
              break;
            }
          }
          if (!placed) groups.push_back({h});
        }
        auto best = std::max_element(groups.begin(), groups.end(),
                                     [](const auto& a, const auto& b) { return a.size() < b.size(); });
        std::vector<size_t> healthy = *best, affected;
        for (size_t h : holders) {
          if (std::find(healthy.begin(), healthy.end(), h) == healthy.end()) affected.push_back(h);
        }
        if (!divergent->empty() && divergent->back().affected == affected && divergent->back().healthy == healthy &&
            divergent->back().last > last_match) {
          divergent->back().last = offset;
        } else {
          divergent->push_back({offset, offset, affected, healthy});
        }
      }
    }
    for (size_t h : holders) ++pos[h];
  }
}

bool Unrelated(const PairStats& s) {
  // Copies of one partition agree on every offset both hold, except a diverged suffix after a
  // truncation; logs of different clusters or topic incarnations disagree from the first common offset.
  return s.mismatches > 0 && (s.matches == 0 || (s.first_common_mismatch && s.mismatches > 10 * s.matches));
}

// ---------------------------------------------------------------------------------------------
// Transactions: each transaction of each replica judged by the rules of txn_verdict.h.

std::string OffsetList(const std::vector<int64_t>& offsets) {
  if (offsets.empty()) return "no records";
  if (offsets.size() == 1) return fmt::format("offset {}", offsets.front());
  return fmt::format("{} records at offsets {}..{}", offsets.size(), offsets.front(), offsets.back());
}

std::string SettleWith(int64_t pid, int16_t epoch, const std::vector<int64_t>& at_stake, bool had_coordinator) {
  return fmt::format(
      "{}the producer's __transaction_state record (transactional id of producer {}, epoch {}: its CompleteCommit or "
      "CompleteAbort), or an older copy of the leader's segments that still holds offsets {}..{} and the marker that "
      "closed them",
      had_coordinator ? "an older copy of " : "", pid, epoch, at_stake.empty() ? -1 : at_stake.front(),
      at_stake.empty() ? -1 : at_stake.back());
}

void AddFacts(std::vector<TxnFact>* to, const std::vector<TxnFact>& from) {
  to->insert(to->end(), from.begin(), from.end());
}

// The finding (if any) for transaction `ti` of replica `a`, whose data records are `records`.
// NOLINTNEXTLINE(readability-function-cognitive-complexity): one decision table over a transaction's evidence (scenarios.md §4, §6)
std::optional<Finding> JudgeTransaction(const std::vector<ReplicaState>& rs, size_t a, int32_t ti,
                                        const std::vector<int64_t>& records, const DiffOptions& options) {
  const ReplicaState& A = rs[a];
  const Txn& t = A.txns[ti];
  if (records.empty()) return std::nullopt;
  Finding f;
  f.affected = {a};
  f.producer_id = t.producer_id;
  f.producer_epoch = t.producer_epoch;
  std::set<size_t> healthy;
  std::vector<int64_t> at_stake;

  if (t.fate == TxnFate::kOpen) {
    DecidedProof d = ProveDecided(rs, a, ti, records);
    if (!d.proven) return std::nullopt;  // in flight, or not fetched that far yet
    MergeProof mp = ProveMerge(rs, a, ti, records);
    at_stake = records;
    OutcomeProof op = ProveOutcome(rs, a, t.producer_id, at_stake, options.coordinator);
    healthy.insert(d.witnesses.begin(), d.witnesses.end());
    healthy.insert(op.witnesses.begin(), op.witnesses.end());
    f.kind = FindingKind::kHangingTransaction;
    f.certainty = FindingCertainty::kCertain;
    f.outcome = op.outcome;
    AddFacts(&f.facts, d.facts);
    if (mp.proven) AddFacts(&f.facts, mp.facts);
    AddFacts(&f.facts, op.facts);
    AddFacts(&f.facts, op.coordinator_facts);
    f.first_offset = t.first_offset;
    f.last_offset = t.last_data_offset;
    f.evidence = fmt::format(
        "on {} producer {} (epoch {}) has a transaction open since offset {} (last data offset {}) with no marker, "
        "pinning its last stable offset at {}; {}",
        A.label, t.producer_id, t.producer_epoch, t.first_offset, t.last_data_offset, A.last_stable_offset,
        d.facts.front().fact);
    f.impact = fmt::format(
        "read_committed consumers of {} stall at offset {} while read_uncommitted consumers and lag tools move on; "
        "it lifts only on a later marker of producer {}, retention, or kafka-transactions.sh abort",
        A.label, A.last_stable_offset, t.producer_id);
  } else {
    const TxnOutcome held = t.fate == TxnFate::kCommitted ? TxnOutcome::kCommit : TxnOutcome::kAbort;
    auto named = [&](const std::vector<int64_t>& offsets) {
      std::string s = OffsetList(offsets);
      if (auto rb = offsets.empty() ? std::nullopt : ReadRecordBytes(A, offsets.front())) {
        s += fmt::format(" ({}={}{})", Text(rb->key, options.bytes), Text(rb->value, options.bytes),
                         offsets.size() > 1 ? ", ..." : "");
      }
      return s;
    };
    const TxnOutcome other = held == TxnOutcome::kCommit ? TxnOutcome::kAbort : TxnOutcome::kCommit;
    MergeProof mp = ProveMerge(rs, a, ti, records);
    Suspicion sus;
    int64_t split = -1;
    if (!mp.proven) mp = MergeFromOutcome(rs, a, ti, ProveOutcome(rs, a, t.producer_id, records, options.coordinator));
    if (mp.proven) {
      split = mp.split;
    } else {
      sus = SuspectMerge(rs, a, ti, records, options.transaction_max_timeout_ms, options.wall_clock_times);
      if (!sus.raised) return std::nullopt;
      split = sus.split;
    }
    for (int64_t o : records) {
      if (o < split) at_stake.push_back(o);
    }
    if (at_stake.empty()) return std::nullopt;
    OutcomeProof op = ProveOutcome(rs, a, t.producer_id, at_stake, options.coordinator);
    bool differs = op.seen.count(other) > 0;
    if (!differs && op.unproven.empty()) return std::nullopt;  // proven the same outcome: nothing visible
    if (differs) {
      // Only the records proven to have the other outcome are at stake for sure.
      f.certainty = mp.proven ? FindingCertainty::kCertain : FindingCertainty::kSuspected;
      f.outcome = other;
      at_stake.clear();
      for (const auto& [o, out] : op.proven) {
        if (out == other) at_stake.push_back(o);
      }
    } else {
      f.certainty = FindingCertainty::kSuspected;
      f.outcome = TxnOutcome::kUnknown;
      at_stake = op.unproven;  // the records proven to share the held outcome are not at stake
    }
    healthy.insert(mp.witnesses.begin(), mp.witnesses.end());
    healthy.insert(op.witnesses.begin(), op.witnesses.end());
    AddFacts(&f.facts, mp.proven ? mp.facts : sus.facts);
    AddFacts(&f.facts, op.facts);
    AddFacts(&f.facts, op.coordinator_facts);
    f.kind = held == TxnOutcome::kCommit ? FindingKind::kLostAbort : FindingKind::kLostCommit;
    f.first_offset = at_stake.front();
    f.last_offset = *t.marker_offset;
    std::string proof = mp.proven ? mp.facts.front().fact : sus.facts.front().fact;
    std::string outcome_proof =
        differs ? fmt::format("; {}", op.facts.front().fact)
                : "; no replica proves what those records were (superseded records prove nothing: an ABORT leaves "
                  "the same files)";
    const char* held_word = held == TxnOutcome::kCommit ? "COMMIT" : "ABORT";
    f.evidence = fmt::format(
        "on {} the {} of producer {} (epoch {}) at offset {} closes one transaction from offset {}, so {} {} {} there; "
        "{}{}",
        A.label, held_word, t.producer_id, t.producer_epoch, *t.marker_offset, t.first_offset, named(at_stake),
        at_stake.size() == 1 ? "is" : "are", held == TxnOutcome::kCommit ? "committed" : "aborted", proof,
        outcome_proof);
    bool certain = f.certainty == FindingCertainty::kCertain;
    if (held == TxnOutcome::kCommit) {
      f.impact = certain ? fmt::format(
                               "read_committed consumers of {} receive aborted data ({}) that the healthy "
                               "replicas never deliver; {}'s own cleaner will keep it as committed",
                               A.label, named(at_stake), A.label)
                         : fmt::format(
                               "suspected: if the records at stake ({}) were aborted, read_committed consumers "
                               "of {} receive them although the leader never delivered them",
                               named(at_stake), A.label);
    } else {
      // Latent: every record at stake is superseded on the healthy replicas, so the latest values agree.
      bool latent = true;
      for (int64_t o : at_stake) {
        const int64_t ri = A.FindRecord(o);
        if (ri < 0) {  // not found (offsets out of order in damaged input): latency unproven
          latent = false;
          break;
        }
        const RecordDigest& d = A.records[ri];
        for (size_t b = 0; b < rs.size() && latent; ++b) {
          if (b == a || !rs[b].Covers(o)) continue;
          const KeyState* k = d.has_key ? rs[b].Key(d.key) : nullptr;
          latent = k != nullptr && k->offset > o;
        }
      }
      std::string prefix = latent ? "latent: every record at stake is superseded on the other replicas, so the latest "
                                    "values agree today, but "
                                  : "";
      f.impact = certain ? fmt::format(
                               "{}read_committed consumers of {} skip committed data ({}) that the healthy "
                               "replicas deliver, and {}'s cleaner will delete it as aborted",
                               prefix, A.label, named(at_stake), A.label)
                         : fmt::format(
                               "suspected: {}if the records at stake ({}) were committed, read_committed "
                               "consumers of {} skip them and {}'s cleaner will delete them as aborted",
                               prefix, named(at_stake), A.label, A.label);
    }
  }
  if (healthy.empty()) {
    for (size_t b = 0; b < rs.size(); ++b) {
      if (b != a) healthy.insert(b);
    }
  }
  f.healthy.assign(healthy.begin(), healthy.end());
  f.records_at_stake = at_stake;
  if (f.outcome == TxnOutcome::kUnknown)
    f.settle_with = SettleWith(t.producer_id, t.producer_epoch, at_stake, options.coordinator != nullptr);
  if (auto rb = ReadRecordBytes(A, at_stake.front())) {
    f.has_key = true;
    f.key = rb->key;
    f.value = rb->value;
  }
  return f;
}

}  // namespace

const char* FindingKindName(FindingKind k) {
  switch (k) {
    case FindingKind::kLostTombstone: return "lost_tombstone";
    case FindingKind::kLostAbort: return "lost_abort";
    case FindingKind::kLostCommit: return "lost_commit";
    case FindingKind::kHangingTransaction: return "hanging_transaction";
    case FindingKind::kDivergentRecord: return "divergent_record";
    case FindingKind::kMissingRange: return "missing_range";
    case FindingKind::kUnrelatedLogs: return "unrelated_logs";
  }
  return "?";
}

bool DiffReport::HasDivergence() const {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return IsDivergence(f.kind); });
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the diff's steps over all replicas (align, judge, findings), scenarios.md §4-§6
DiffReport DiffReplicas(const std::vector<ReplicaState>& rs, const DiffOptions& options) {
  DiffReport report;
  size_t n = rs.size();
  for (const ReplicaState& r : rs) {
    if (r.tp) {
      report.partition = r.tp->ToString();
      break;
    }
  }

  // Not copies of one partition at all?
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      std::string why;
      if (rs[i].tp && rs[j].tp && *rs[i].tp != *rs[j].tp) {
        why = fmt::format("{} is partition {} but {} is partition {}", rs[i].path, rs[i].tp->ToString(), rs[j].path,
                          rs[j].tp->ToString());
      } else if (rs[i].topic_id && rs[j].topic_id && *rs[i].topic_id != *rs[j].topic_id) {
        why =
            fmt::format("partition.metadata names topic id {} in {} but {} in {}: different incarnations of the topic",
                        *rs[i].topic_id, rs[i].path, *rs[j].topic_id, rs[j].path);
      }
      if (!why.empty()) {
        Finding f;
        f.kind = FindingKind::kUnrelatedLogs;
        f.affected = {i, j};
        f.evidence = why;
        f.impact = "these directories are not replicas of one partition; nothing else was compared";
        report.findings.push_back(f);
      }
    }
  }
  if (!report.findings.empty()) return report;

  std::vector<std::vector<PairStats>> stats;
  std::vector<Divergent> divergent;
  AlignRecords(rs, &stats, &divergent);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const PairStats& s = stats[i][j];
      if (!Unrelated(s)) continue;
      Finding f;
      f.kind = FindingKind::kUnrelatedLogs;
      f.affected = {i, j};
      f.evidence = fmt::format(
          "{} and {} disagree on {} of the {} offsets both hold, starting at the first one they share: these logs were "
          "written by different clusters or topic incarnations",
          rs[i].label, rs[j].label, s.mismatches, s.matches + s.mismatches);
      f.impact = "these directories are not replicas of one partition; nothing else was compared";
      report.findings.push_back(f);
    }
  }
  if (!report.findings.empty()) return report;

  // Offsets where some replica holds a different record (and which the key view must not re-report).
  std::vector<std::set<int64_t>> explained(n);
  for (const Divergent& d : divergent) {
    Finding f;
    f.kind = FindingKind::kDivergentRecord;
    f.first_offset = d.first;
    f.last_offset = d.last;
    f.affected = d.affected;
    f.healthy = d.healthy;
    if (auto rb = ReadRecordBytes(rs[d.affected.front()], d.first)) {
      f.has_key = true;
      f.key = rb->key;
      f.value = rb->value;
    }
    std::string other;
    if (auto hb = ReadRecordBytes(rs[d.healthy.front()], d.first)) {
      other = fmt::format(" ({} has key {} value {} there)", rs[d.healthy.front()].label, Text(hb->key, options.bytes),
                          Text(hb->value, options.bytes));
    }
    f.evidence = fmt::format(
        "offsets {} hold different records on {} than on {}{}: the logs diverged (truncation or an "
        "unclean leader election)",
        OffsetRange(d.first, d.last), Names(rs, d.affected), Names(rs, d.healthy), other);
    f.impact = fmt::format("consumers get different records at offsets {} depending on the replica they read",
                           OffsetRange(d.first, d.last));
    for (size_t a : d.affected) {
      for (int64_t o = d.first; o <= d.last && o - d.first < 100000; ++o) explained[a].insert(o);
    }
    report.findings.push_back(f);
  }

  // Transactions: each replica's transactions judged against the others (txn_verdict.h).
  for (size_t a = 0; a < n; ++a) {
    const ReplicaState& A = rs[a];
    const std::vector<std::vector<int64_t>> by_txn = RecordsByTxn(A);
    for (size_t ti = 0; ti < A.txns.size(); ++ti) {
      std::optional<Finding> f = JudgeTransaction(rs, a, int32_t(ti), by_txn[ti], options);
      if (!f) continue;
      for (int64_t o : by_txn[ti]) explained[a].insert(o);
      report.findings.push_back(std::move(*f));
    }
  }

  // Keys: the latest committed value of every key must agree where both replicas expose it.
  struct KeyAcc {
    std::set<size_t> healthy;
    int64_t offset = 0;
    int64_t proof = -1;  // healthy replica's tombstone / newer value offset, if it still holds one
    bool tombstone = true;
    bool resurrected = false;  // the affected replica deleted the key; the healthy ones hold a newer value
    Digest key{};
  };
  std::map<std::pair<size_t, Digest>, KeyAcc> key_findings;
  for (size_t a = 0; a < n; ++a) {
    const ReplicaState& A = rs[a];
    // Every key view is sorted by KeyLess: walk B's alongside A's (a merge) instead of searching it per key.
    std::vector<size_t> cursor(n, 0);
    auto key_on = [&](size_t b, const Digest& k) -> const KeyState* {
      const auto& view = rs[b].key_view;
      size_t& c = cursor[b];
      while (c < view.size() && KeyLess(view[c].first, k)) ++c;
      return c < view.size() && view[c].first == k ? &view[c].second : nullptr;
    };
    for (const auto& [k, ka] : A.key_view) {
      if (ka.tombstone || explained[a].count(ka.offset)) continue;
      for (size_t b = 0; b < n; ++b) {
        const ReplicaState& B = rs[b];
        if (b == a || !B.Covers(ka.offset) || ka.offset >= B.last_stable_offset) continue;
        const KeyState* kb = key_on(b, k);
        if (kb && kb->offset == ka.offset) continue;
        if (B.HoldsOffset(ka.offset) && B.FindRecord(ka.offset) >= 0) continue;  // divergent_record's business
        bool tombstone = true;
        int64_t proof = -1;
        if (kb && kb->offset < ka.offset) {
          // B is the stale one. A live older value on B is reported from B's side; a deletion on B that A
          // overwrote later is reported here, since deleted keys are not walked.
          if (!kb->tombstone || explained[b].count(kb->offset)) continue;
          KeyAcc& acc = key_findings[{b, k}];
          acc.healthy.insert(a);
          acc.offset = kb->offset;
          acc.key = k;
          acc.proof = ka.offset;
          acc.tombstone = false;
          acc.resurrected = true;
          continue;
        }
        if (kb) {
          // B holds a newer record for the key that A lacks.
          if (kb->offset >= A.last_stable_offset) continue;  // lag or A's pinned LSO explains it
          if (A.HoldsOffset(kb->offset)) continue;
          tombstone = kb->tombstone;
          proof = kb->offset;
        } else if (B.DamagedAfter(ka.offset)) {
          continue;  // the later record that let B remove the value may sit in B's damaged range
        }
        KeyAcc& acc = key_findings[{a, k}];
        acc.healthy.insert(b);
        acc.offset = ka.offset;
        acc.key = k;
        if (proof >= 0) acc.proof = proof;
        acc.tombstone = acc.tombstone && tombstone;
      }
    }
  }
  for (const auto& [key, acc] : key_findings) {
    const ReplicaState& A = rs[key.first];
    Finding f;
    f.kind = acc.tombstone ? FindingKind::kLostTombstone : FindingKind::kDivergentRecord;
    f.by_key = true;
    f.affected = {key.first};
    f.healthy.assign(acc.healthy.begin(), acc.healthy.end());
    f.first_offset = acc.offset;
    f.last_offset = acc.proof >= 0 ? acc.proof : acc.offset;
    const int64_t ri = A.FindRecord(acc.offset);
    if (ri >= 0 && A.records[ri].producer_id >= 0) {
      f.producer_id = A.records[ri].producer_id;
      f.producer_epoch = A.records[ri].producer_epoch;
    }
    if (auto rb = ReadRecordBytes(A, acc.offset)) {
      f.has_key = true;
      f.key = rb->key;
      f.value = rb->value;
    }
    std::string kv = fmt::format("{}={}", Text(f.key, options.bytes), Text(f.value, options.bytes));
    std::string gap;
    if (const OffsetGap* g = A.GapAtOrAfter(JavaAdd(acc.offset, 1))) {
      bool above = !A.cleaner_checkpoint || g->from >= *A.cleaner_checkpoint;
      gap = fmt::format("; {} has an offset gap {}..{}{}", A.label, g->from, g->to - 1,
                        above ? fmt::format(" above its own cleaner checkpoint ({}), so it fetched that range already "
                                            "compacted",
                                            A.cleaner_checkpoint ? std::to_string(*A.cleaner_checkpoint) : "none")
                              : "");
    }
    if (acc.tombstone) {
      f.evidence =
          acc.proof >= 0
              ? fmt::format(
                    "{} holds {} at offset {} as its latest value; {} hold the tombstone for the key at offset {}, "
                    "which {} lacks{}",
                    A.label, kv, acc.offset, Names(rs, f.healthy), acc.proof, A.label, gap)
              : fmt::format(
                    "{} holds {} at offset {} as its latest value; {} removed that record, which the cleaner does "
                    "only when a later record for the key exists, yet hold no record for the key: a tombstone "
                    "deleted it and was removed after delete.retention.ms{}",
                    A.label, kv, acc.offset, Names(rs, f.healthy), gap);
      f.impact = fmt::format(
          "the deleted key {} comes back for consumers of {} (value {}), and {}'s cleaner will keep it "
          "for good",
          Text(f.key, options.bytes), A.label, Text(f.value, options.bytes), A.label);
    } else if (acc.resurrected) {
      f.value.reset();
      f.evidence = fmt::format(
          "{} holds the tombstone of key {} at offset {} as its latest record; {} hold a newer value "
          "for the key at offset {}, which {} lacks{}",
          A.label, Text(f.key, options.bytes), acc.offset, Names(rs, f.healthy), acc.proof, A.label, gap);
      f.impact = fmt::format("consumers of {} see key {} deleted although it was written again", A.label,
                             Text(f.key, options.bytes));
    } else {
      f.evidence = fmt::format(
          "{} holds {} at offset {} as its latest value; {} hold a newer value for the key at offset "
          "{}, which {} lacks{}",
          A.label, kv, acc.offset, Names(rs, f.healthy), acc.proof, A.label, gap);
      f.impact = fmt::format("consumers of {} see a stale value for key {}", A.label, Text(f.key, options.bytes));
    }
    report.findings.push_back(f);
  }

  // Damaged segments: their offsets were not compared (klf verify names the damage). Not a divergence.
  for (size_t i = 0; i < n; ++i) {
    for (const DamagedRange& d : rs[i].damaged) {
      Finding f;
      f.kind = FindingKind::kMissingRange;
      f.first_offset = d.from;
      f.last_offset = d.to - 1;
      f.affected = {i};
      for (size_t j = 0; j < n; ++j) {
        if (j != i) f.healthy.push_back(j);
      }
      f.evidence = fmt::format(
          "{} is damaged at byte position {} ({}): offsets {} cannot be read there and were not "
          "compared (run klf verify)",
          d.file, d.position, d.why, OffsetRange(d.from, d.to - 1));
      f.impact = fmt::format("consumers of {} fail or stop at offset {}; the other replicas still serve these offsets",
                             rs[i].label, d.from);
      report.findings.push_back(f);
    }
  }
  // Lag and log start: offsets some replica does not hold (yet, or any more). Not a divergence.
  int64_t max_end = 0, min_start = INT64_MAX;
  for (const ReplicaState& r : rs) {
    max_end = std::max(max_end, r.log_end_offset);
    min_start = std::min(min_start, r.log_start_offset);
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<size_t> ahead, earlier;
    for (size_t j = 0; j < n; ++j) {
      if (rs[j].log_end_offset > rs[i].log_end_offset) ahead.push_back(j);
      if (rs[j].log_start_offset < rs[i].log_start_offset) earlier.push_back(j);
    }
    if (!ahead.empty()) {
      Finding f;
      f.kind = FindingKind::kMissingRange;
      f.first_offset = rs[i].log_end_offset;
      f.last_offset = max_end - 1;
      f.affected = {i};
      f.healthy = ahead;
      std::vector<std::string> ends;
      for (size_t j : ahead) ends.push_back(fmt::format("{} ends at {}", rs[j].label, rs[j].log_end_offset));
      f.evidence = fmt::format("{}'s log ends at offset {} (high watermark {}); {}", rs[i].label, rs[i].log_end_offset,
                               rs[i].high_watermark, fmt::join(ends, ", "));
      f.impact = fmt::format("lag, not divergence: consumers of {} get offsets {} once it has fetched them",
                             rs[i].label, OffsetRange(f.first_offset, f.last_offset));
      report.findings.push_back(f);
    }
    if (!earlier.empty() && rs[i].log_start_offset > min_start) {
      Finding f;
      f.kind = FindingKind::kMissingRange;
      f.first_offset = min_start;
      f.last_offset = JavaSub(rs[i].log_start_offset, 1);
      f.affected = {i};
      f.healthy = earlier;
      f.evidence = fmt::format("{}'s log starts at offset {}; {} still hold offsets from {}", rs[i].label,
                               rs[i].log_start_offset, Names(rs, earlier), min_start);
      f.impact = fmt::format("retention, not divergence: consumers of {} cannot read offsets {} any more", rs[i].label,
                             OffsetRange(f.first_offset, f.last_offset));
      report.findings.push_back(f);
    }
  }
  // The incident window of each lost marker, lost tombstone and divergent record (diff/incident.h).
  for (Finding& f : report.findings) f.incident = ReconstructIncident(rs, f, options);
  // Divergences first, then by offset.
  std::stable_sort(report.findings.begin(), report.findings.end(), [](const Finding& x, const Finding& y) {
    if (IsDivergence(x.kind) != IsDivergence(y.kind)) return IsDivergence(x.kind);
    return x.first_offset < y.first_offset;
  });
  return report;
}

}  // namespace klf
