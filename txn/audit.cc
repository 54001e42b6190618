// klf txn audit (audit.h). Kafka sources followed: TransactionMetadata (prepareComplete bumps the
// epoch under transaction version 2; a producer-id rollover completes under the new id at epoch 0),
// TransactionMarkerChannelManager (markers carry the metadata's producer id and epoch),
// ProducerStateManager (a marker closes the producer's open transaction), and the cleaner
// (CleanedTransactionMetadata: a marker is removed only once no batch of its transaction is left).
#include "txn/audit.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "segment_reader/parallel.h"

namespace klf {

const char* AuditKindName(AuditKind k) {
  switch (k) {
    case AuditKind::kContradicts: return "contradicts";
    case AuditKind::kMissingMarker: return "missing-marker";
  }
  return "?";
}

namespace {

// One decision of the coordinator that the audit judges.
struct Decision {
  std::string id;
  CoordinatorRecord record;  // the Prepare (or, when it is gone, the Complete) record
  bool committed = false;
  int16_t data_epoch = -1;           // the Ongoing record's epoch, else the one below the decision's
  std::set<std::string> partitions;  // the Prepare or Ongoing record's; empty when only Complete is left
};

bool IsPrepare(const CoordinatorRecord& r) { return r.state == "PrepareCommit" || r.state == "PrepareAbort"; }
bool IsComplete(const CoordinatorRecord& r) { return r.state == "CompleteCommit" || r.state == "CompleteAbort"; }
bool Version2(const CoordinatorRecord& r) { return r.client_transaction_version.value_or(0) >= 2; }

// The decision `r` (a Prepare or Complete record of transaction version 2) as the audit judges it.
Decision MakeDecision(const std::string& id, const CoordinatorRecord& r, const CoordinatorRecord* ongoing) {
  Decision d;
  d.id = id;
  d.record = r;
  d.committed = r.state == "PrepareCommit" || r.state == "CompleteCommit";
  // The transaction's Ongoing record, when it survives, gives its data's epoch and partitions.
  const bool same_txn = ongoing != nullptr && ongoing->producer_id == r.producer_id &&
                        ongoing->producer_epoch < r.producer_epoch && r.producer_epoch - ongoing->producer_epoch <= 2;
  d.data_epoch = same_txn ? ongoing->producer_epoch : int16_t(r.producer_epoch - 1);
  d.partitions.insert(r.partitions.begin(), r.partitions.end());
  if (same_txn) d.partitions.insert(ongoing->partitions.begin(), ongoing->partitions.end());
  return d;
}

// The decisions of one transactional id's records, in log order. A Complete that follows its own
// Prepare is the same decision (possibly under a rolled-over id) and counts once.
void DecisionsOf(const TransactionalIdHistory& h, std::set<std::pair<int64_t, int16_t>>* seen,
                 std::vector<Decision>* out, AuditReport* report) {
  const CoordinatorRecord* ongoing = nullptr;
  const CoordinatorRecord* prepare = nullptr;
  for (const CoordinatorRecord& r : h.records) {
    const bool decision = !r.tombstone && (IsPrepare(r) || IsComplete(r));
    const bool commit = r.state == "PrepareCommit" || r.state == "CompleteCommit";
    const bool repeats =
        decision && IsComplete(r) && prepare != nullptr && (prepare->state == "PrepareCommit") == commit;
    if (!r.tombstone && r.state == "Ongoing") {
      ongoing = &r;
      continue;
    }
    const CoordinatorRecord* last_ongoing = ongoing;
    ongoing = nullptr;
    prepare = decision && IsPrepare(r) ? &r : nullptr;
    if (!decision || repeats) continue;
    ++report->decisions;
    // A Complete at epoch 0 may follow a producer-id rollover: its markers carry the old id.
    if (!Version2(r) || (IsComplete(r) && r.producer_epoch == 0)) {
      ++report->unjudged_decisions;
      continue;
    }
    if (!seen->insert({r.producer_id, r.producer_epoch}).second) continue;
    ++report->version2_decisions;
    out->push_back(MakeDecision(h.id, r, last_ongoing));
  }
}

// Every decision of the coordinator's log; those it cannot tie to markers are only counted.
std::vector<Decision> Decisions(const CoordinatorLog& log, AuditReport* report) {
  std::vector<Decision> out;
  std::set<std::pair<int64_t, int16_t>> seen;  // (producer id, marker epoch)
  for (const auto& [id, h] : log.ids) DecisionsOf(h, &seen, &out, report);
  return out;
}

// A batch of one of the audited producers in a partition copy.
struct ProducerBatch {
  int64_t base_offset = 0, last_offset = 0;
  int16_t epoch = -1;
  bool control = false;
  bool empty = false;  // the cleaner's remnant of a marker: it shows the copy fetched past that offset
  ControlType type = ControlType::kUnknown;
  std::string file;
  uint64_t position = 0;
};

struct Copy {
  std::string dir;
  std::string tp;
  std::optional<std::string> cluster_id;
  int64_t log_start_offset = 0, log_end_offset = 0;
  std::set<int64_t> open_txn_producers;                                   // with a transaction open at the log end
  std::map<int64_t, std::vector<ProducerBatch>> batches;                  // producer id -> its batches, offset order
  std::vector<std::pair<AbortedTxn, LoadedLog::FilePosition>> txn_index;  // of the audited producers
};

bool ReadCopy(const std::string& dir, const std::set<int64_t>& producers, const LoadOptions& options, Copy* out,
              std::string* error) {
  LoadedLog log;
  CollectingSink quiet;  // the partition's own problems are verify's to report
  if (!LoadedLog::Open(dir, options, &log, &quiet, error)) return false;
  if (!log.tp) {
    *error = dir + ": not a partition directory";
    return false;
  }
  out->dir = dir;
  out->tp = log.tp->topic + "-" + std::to_string(log.tp->partition);
  out->log_start_offset = log.log_start_offset;
  out->log_end_offset = log.log_end_offset;
  for (const auto& [first, txn] : log.producer_state.ongoing_txns()) out->open_txn_producers.insert(txn.producer_id);
  out->cluster_id = log.cluster_id;
  for (size_t i = 0; i < log.aborted_txns.size(); ++i) {
    if (producers.count(log.aborted_txns[i].producer_id))
      out->txn_index.emplace_back(log.aborted_txns[i], log.aborted_txn_sources[i]);
  }
  RecordDecoder decoder;
  auto visit = [&](size_t segment, const BatchView& b) {
    const BatchHeader& h = b.header;
    if (h.magic < 2 || !producers.count(h.producer_id) || h.last_offset < log.log_start_offset) return true;
    ProducerBatch p;
    p.base_offset = h.base_offset;
    p.last_offset = h.last_offset;
    p.epoch = h.producer_epoch;
    p.control = h.is_control;
    p.file = log.segments[segment].log_path;
    p.position = h.position;
    if (h.is_control) {
      p.empty = h.record_count == 0;
      if (!p.empty) {
        std::optional<ControlRecord> c;
        if (!decoder.Decode(b, p.file, &quiet) || !(c = ControlBatchMarker(decoder.records()))) return true;
        p.type = c->type;
        if (!IsEndTxnMarker(p.type)) return true;
      }
    } else if (h.record_count == 0) {
      return true;
    }
    out->batches[h.producer_id].push_back(std::move(p));
    return true;
  };
  return log.ForEachBatch(visit, &quiet, error);
}

std::string MarkerName(bool committed) { return committed ? "COMMIT" : "ABORT"; }

std::string DecisionText(const Decision& d) {
  return fmt::format(
      "the coordinator's {} of transactional id '{}' (producer {} epoch {}, transaction version 2, "
      "offset {} of {})",
      d.record.state, d.id, d.record.producer_id, d.record.producer_epoch, d.record.offset, d.record.file);
}

AuditFinding NewFinding(AuditKind kind, const Decision& d, const Copy& c) {
  AuditFinding f;
  f.kind = kind;
  f.topic_partition = c.tp;
  f.partition_dir = c.dir;
  f.transactional_id = d.id;
  f.producer_id = d.record.producer_id;
  f.data_epoch = d.data_epoch;
  f.marker_epoch = d.record.producer_epoch;
  f.committed = d.committed;
  f.decision = d.record;
  return f;
}

// The copy's markers at the decision's producer id and epoch: counted, and each of the other type
// named. Returns whether the copy holds one.
bool JudgeMarkers(const Decision& d, const Copy& c, const std::vector<ProducerBatch>& batches, AuditReport* report) {
  const int16_t e = d.record.producer_epoch;
  bool has_marker = false;
  for (const ProducerBatch& b : batches) {
    if (!b.control || b.empty || b.epoch != e) continue;
    has_marker = true;
    ++report->markers_checked;
    const bool commit = b.type == ControlType::kCommit;
    if (commit == d.committed) {
      ++report->markers_agree;
      continue;
    }
    AuditFinding f = NewFinding(AuditKind::kContradicts, d, c);
    f.certain = true;
    f.facts.push_back({b.file, b.position,
                       fmt::format("{} marker of producer {} epoch {} at offset {}", MarkerName(commit),
                                   d.record.producer_id, e, b.base_offset)});
    f.why = fmt::format(
        "{} holds {} of producer {} at epoch {} (offset {}), but {} decided {}: under transaction "
        "version 2 that epoch belongs to this one transaction",
        c.dir, commit ? "a COMMIT" : "an ABORT", d.record.producer_id, e, b.base_offset, DecisionText(d),
        d.committed ? "commit" : "abort");
    report->findings.push_back(std::move(f));
  }
  return has_marker;
}

// The transaction's data on a copy that lacks its marker: offsets [first, last].
struct DataRange {
  const ProducerBatch* first = nullptr;
  const ProducerBatch* last = nullptr;
};

// Its own .txnindex closes the data with an ABORT: a marker of the producer after the data was applied
// here, and it was not this decision's.
std::string ProofFromTxnIndex(const Decision& d, const Copy& c, const DataRange& data, AuditFinding* f) {
  for (const auto& [entry, source] : c.txn_index) {
    if (entry.producer_id != d.record.producer_id || entry.first_offset > data.last->last_offset ||
        entry.last_offset < data.first->base_offset)
      continue;
    f->facts.push_back({source.file, source.position,
                        fmt::format(".txnindex entry: producer {} aborted offsets {}..{}", entry.producer_id,
                                    entry.first_offset, entry.last_offset)});
    return fmt::format("its .txnindex closes them with the ABORT at offset {}{}", entry.last_offset,
                       d.committed ? ", so it serves this committed data as aborted" : "");
  }
  return "";
}

// A later batch of the producer: the copy fetched past where the marker was.
std::string ProofFromLaterBatch(const Decision& d, const std::vector<ProducerBatch>& batches, const DataRange& data,
                                AuditFinding* f) {
  for (const ProducerBatch& b : batches) {
    if (b.base_offset <= data.last->last_offset) continue;
    f->facts.push_back({b.file, b.position,
                        fmt::format("a later {} of producer {} at epoch {}, offset {}",
                                    b.empty     ? "emptied control batch (the cleaner's remnant of a marker)"
                                    : b.control ? "marker"
                                                : "batch",
                                    d.record.producer_id, b.epoch, b.base_offset)});
    return fmt::format("it holds a later batch of the producer (offset {}): it fetched past the marker", b.base_offset);
  }
  return "";
}

// Another copy of the partition holds the marker, or has the transaction decided (no open transaction
// of the producer, the data's offsets covered), below an offset this copy's log reaches.
std::string ProofFromOtherCopies(const Decision& d, const Copy& c, const std::vector<const Copy*>& same_partition,
                                 const DataRange& data, AuditFinding* f) {
  for (const Copy* other : same_partition) {
    if (other == &c) continue;
    auto o = other->batches.find(d.record.producer_id);
    for (const ProducerBatch& b : o == other->batches.end() ? std::vector<ProducerBatch>{} : o->second) {
      if (!b.control || b.empty || b.epoch != d.record.producer_epoch || b.base_offset >= c.log_end_offset) continue;
      f->facts.push_back({b.file, b.position,
                          fmt::format("{} holds the {} marker at offset {}", other->dir,
                                      MarkerName(b.type == ControlType::kCommit), b.base_offset)});
      return fmt::format("{} holds the marker at offset {}, below this copy's log end {}", other->dir, b.base_offset,
                         c.log_end_offset);
    }
    const bool decided = other->log_start_offset <= data.first->base_offset && data.last->last_offset < INT64_MAX &&
                         other->log_end_offset > data.last->last_offset + 1 &&
                         c.log_end_offset >= other->log_end_offset &&
                         !other->open_txn_producers.count(d.record.producer_id);
    if (!decided) continue;
    f->facts.push_back({other->dir, 0,
                        fmt::format("{} covers offsets {}..{} with no open transaction of producer {}", other->dir,
                                    other->log_start_offset, other->log_end_offset - 1, d.record.producer_id)});
    return fmt::format("{} has the transaction decided below its log end {}, which this copy's log reaches", other->dir,
                       other->log_end_offset);
  }
  return "";
}

// The copy's markers of the decision, its data, and whether it lacks the marker.
void Judge(const Decision& d, const Copy& c, const std::vector<const Copy*>& same_partition, AuditReport* report) {
  auto it = c.batches.find(d.record.producer_id);
  if (it == c.batches.end()) return;
  const std::vector<ProducerBatch>& batches = it->second;
  if (JudgeMarkers(d, c, batches, report)) return;
  DataRange data;
  size_t count = 0;
  for (const ProducerBatch& b : batches) {
    if (b.control || b.epoch != d.data_epoch) continue;
    if (data.first == nullptr) data.first = &b;
    data.last = &b;
    ++count;
  }
  if (count == 0) return;  // no trace of the transaction here: cleaned away, or never fetched
  if (!d.partitions.empty() && !d.partitions.count(c.tp)) return;  // the coordinator did not list it

  // The copy holds the transaction's data and no marker at the decision's epoch. Whether it lost the
  // marker or has not fetched it yet is decided by what lies beyond the data (first rule that holds).
  AuditFinding f = NewFinding(AuditKind::kMissingMarker, d, c);
  f.facts.push_back({data.first->file, data.first->position,
                     fmt::format("data of producer {} at epoch {}: offsets {}..{} ({} batch(es))", d.record.producer_id,
                                 d.data_epoch, data.first->base_offset, data.last->last_offset, count)});
  std::string proof = ProofFromTxnIndex(d, c, data, &f);
  if (proof.empty()) proof = ProofFromLaterBatch(d, batches, data, &f);
  if (proof.empty()) proof = ProofFromOtherCopies(d, c, same_partition, data, &f);
  f.certain = !proof.empty();
  const std::string what = fmt::format(
      "{} holds producer {}'s data at epoch {} (up to offset {}) and no {} at epoch {}, "
      "which {} says was written",
      c.dir, d.record.producer_id, d.data_epoch, data.last->last_offset, MarkerName(d.committed),
      d.record.producer_epoch, DecisionText(d));
  f.why = f.certain ? what + "; " + proof
                    : fmt::format(
                          "{}; its log ends at {}: either it lost the marker or it has not fetched it yet "
                          "(suspected; a copy of the leader's partition, or this replica's fetch position, "
                          "settles it)",
                          what, c.log_end_offset);
  report->findings.push_back(std::move(f));
}

}  // namespace

AuditReport AuditTransactions(const CoordinatorLog& coordinator, const std::vector<std::string>& partition_dirs,
                              const LoadOptions& options, ProblemSink* sink, unsigned jobs) {
  AuditReport report;
  std::vector<Decision> decisions = Decisions(coordinator, &report);
  std::set<int64_t> producers;
  for (const Decision& d : decisions) producers.insert(d.record.producer_id);

  // Loaded on the pool, each copy into its slot; judged in the order given.
  std::vector<Copy> read(partition_dirs.size());
  std::vector<std::string> errors(partition_dirs.size());
  std::vector<char> ok(partition_dirs.size(), 0);
  ParallelFor(partition_dirs.size(), jobs,
              [&](size_t i) { ok[i] = ReadCopy(partition_dirs[i], producers, options, &read[i], &errors[i]); });
  std::vector<Copy> copies;
  copies.reserve(partition_dirs.size());
  for (size_t i = 0; i < partition_dirs.size(); ++i) {
    const std::string& dir = partition_dirs[i];
    Copy& c = read[i];
    if (!ok[i]) {
      Report(sink, Severity::kError, dir, 0, "partition-load", errors[i]);
      report.unreadable.push_back(dir);
      continue;
    }
    // Producer ids are unique within a cluster only: another cluster's coordinator proves nothing here.
    if (c.cluster_id && !coordinator.cluster_ids.empty() && !coordinator.cluster_ids.count(*c.cluster_id)) {
      Report(sink, Severity::kError, dir, 0, "cluster-mismatch",
             "the log dir's meta.properties names cluster " + *c.cluster_id +
                 ", not the coordinator's: its transactions are not audited against that __transaction_state");
      report.foreign.push_back(dir);
      continue;
    }
    copies.push_back(std::move(c));
  }
  report.partition_copies = int(copies.size());
  // A copy the files do not show to be of the coordinator's cluster: its findings are suspected at most.
  std::set<std::string> unproven;
  for (const Copy& c : copies) {
    if (MatchCluster(coordinator, {{c.dir, c.cluster_id}}) != ClusterMatch::kProven) unproven.insert(c.dir);
  }
  std::map<std::string, std::vector<const Copy*>> by_partition;
  for (const Copy& c : copies) by_partition[c.tp].push_back(&c);
  for (const Decision& d : decisions) {
    for (const Copy& c : copies) Judge(d, c, by_partition[c.tp], &report);
  }
  for (AuditFinding& f : report.findings) {
    if (!unproven.count(f.partition_dir)) continue;
    if (f.certain) {
      f.certain = false;
      f.why += "; suspected only: " + ClusterMatchCaveat(coordinator, ClusterMatch::kUnproven);
    }
  }
  std::stable_sort(report.findings.begin(), report.findings.end(), [](const AuditFinding& a, const AuditFinding& b) {
    return std::tie(a.topic_partition, a.partition_dir, a.producer_id, a.marker_epoch) <
           std::tie(b.topic_partition, b.partition_dir, b.producer_id, b.marker_epoch);
  });
  return report;
}

}  // namespace klf
