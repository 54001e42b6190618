// klf txn (coordinator.h). Kafka sources followed: TransactionLog (key and value layout),
// TransactionMetadata (which states list partitions; TV2's epoch bump at PrepareCommit/PrepareAbort,
// the fence bump before a time-out abort), TransactionStateManager (one record per state change).
#include "txn/coordinator.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "partition/consumer_view.h"
#include "segment_reader/batch.h"
#include "segment_reader/internal_topics.h"
#include "segment_reader/parallel.h"

namespace klf {
namespace {

template <typename T>
std::optional<T> Field(const OrderedJson& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

bool ToRecord(const OrderedJson& decoded, CoordinatorRecord* r, std::string* id, std::string* error) {
  const OrderedJson& key = decoded.at("key");
  *id = key.at("transactionalId").get<std::string>();
  auto value = decoded.find("value");
  if (value == decoded.end() || value->is_null()) {
    r->tombstone = true;
    return true;
  }
  r->value_version = decoded.value("valueVersion", int16_t(-1));
  r->producer_id = value->at("producerId").get<int64_t>();
  r->producer_epoch = value->at("producerEpoch").get<int16_t>();
  r->timeout_ms = value->at("transactionTimeoutMs").get<int32_t>();
  const int status = value->at("transactionStatus").get<int>();
  const char* state = TransactionStateName(status);
  if (state == nullptr) {
    *error = "unknown transaction status " + std::to_string(status);
    return false;
  }
  r->state = state;
  if (auto parts = value->find("transactionPartitions"); parts != value->end() && parts->is_array()) {
    for (const OrderedJson& tp : *parts)
      for (const OrderedJson& p : tp.at("partitionIds"))
        r->partitions.push_back(tp.at("topic").get<std::string>() + "-" + std::to_string(p.get<int32_t>()));
  }
  r->last_update_ms = value->at("transactionLastUpdateTimestampMs").get<int64_t>();
  r->start_ms = value->at("transactionStartTimestampMs").get<int64_t>();
  r->previous_producer_id = Field<int64_t>(*value, "previousProducerId");
  r->next_producer_id = Field<int64_t>(*value, "nextProducerId");
  r->client_transaction_version = Field<int8_t>(*value, "clientTransactionVersion");
  return true;
}

bool Lists(const CoordinatorRecord& r, const std::string& topic_partition) {
  return std::find(r.partitions.begin(), r.partitions.end(), topic_partition) != r.partitions.end();
}

// A record about the transaction whose data is at `epoch`: the same epoch (transaction version 0/1),
// one above (version 2 bumps at PrepareCommit/PrepareAbort), or two above (a fence, then the bump, when
// the coordinator aborts a timed-out transaction).
bool EpochOfTransaction(const CoordinatorRecord& r, int16_t epoch) {
  return r.producer_epoch >= epoch && int(r.producer_epoch) <= int(epoch) + 2;
}

}  // namespace

const char* CoordinatorVerdictName(CoordinatorVerdict v) {
  switch (v) {
    case CoordinatorVerdict::kNoRecord: return "no-record";
    case CoordinatorVerdict::kCommitted: return "committed";
    case CoordinatorVerdict::kAborted: return "aborted";
    case CoordinatorVerdict::kOngoing: return "ongoing";
    case CoordinatorVerdict::kUndetermined: return "undetermined";
  }
  return "?";
}

namespace {

bool SameRecord(const CoordinatorRecord& a, const CoordinatorRecord& b) {
  return a.tombstone == b.tombstone && a.producer_id == b.producer_id && a.producer_epoch == b.producer_epoch &&
         a.state == b.state && a.partitions == b.partitions && a.last_update_ms == b.last_update_ms;
}

// One record of the coordinator's log, at `position` of `file`. False when it is reported (not a
// transaction log record).
bool ParseRecord(const std::string& file, uint64_t position, const Record& rec, CoordinatorRecord* r, std::string* id,
                 ProblemSink* sink) {
  r->file = file;
  r->position = position;
  r->offset = rec.offset;
  r->timestamp = rec.timestamp;
  DecodedRecord d;
  std::string why;
  bool ok = DecodeInternalRecord(TopicDecoder::kTransactionLog, rec, &d, &why);
  try {
    ok = ok && ToRecord(d.json, r, id, &why);
  } catch (const std::exception& e) {  // a decoded field of an unexpected JSON type
    ok = false;
    why = e.what();
  }
  if (!ok) {
    Report(sink, Severity::kError, file, position, "transaction-log",
           "record at offset " + std::to_string(rec.offset) + " is not a transaction log record: " + why);
  }
  return ok;
}

// One copy of a `__transaction_state-N` partition: its records by offset, with their transactional ids.
bool ReadCopy(const std::string& dir, std::map<int64_t, std::pair<std::string, CoordinatorRecord>>* by_offset,
              std::set<std::string>* cluster_ids, ProblemSink* sink, std::string* error) {
  LoadedLog log;
  LoadOptions options;
  options.segments_only = true;  // the coordinator's log is read record by record below
  if (!LoadedLog::Open(dir, options, &log, sink, error)) return false;
  if (log.cluster_id) cluster_ids->insert(*log.cluster_id);
  RecordDecoder decoder;
  auto visit = [&](size_t segment, const BatchView& b) {
    const std::string& file = log.segments[segment].log_path;
    if (b.header.is_control || (b.header.magic >= 2 && b.header.record_count == 0)) return true;
    if (!decoder.Decode(b, file, sink)) return true;  // reported by the decoder
    for (const Record& rec : decoder.records()) {
      std::string id;
      CoordinatorRecord r;
      if (rec.offset < log.log_start_offset || !ParseRecord(file, b.header.position, rec, &r, &id, sink)) continue;
      auto [it, inserted] = by_offset->try_emplace(rec.offset, id, r);
      if (inserted) continue;
      // Another broker's copy of the same offset: replication makes it the same record.
      if (it->second.first != id || !SameRecord(it->second.second, r)) {
        Report(sink, Severity::kError, file, b.header.position, "transaction-log-copies",
               "offset " + std::to_string(rec.offset) + " holds another record than in " + it->second.second.file +
                   " (the copies of this partition diverge); the first copy's record is used");
      }
    }
    return true;
  };
  return log.ForEachBatch(visit, sink, error);
}

}  // namespace

bool LoadCoordinatorLog(const std::vector<std::string>& dirs, CoordinatorLog* out, ProblemSink* sink,
                        std::string* error) {
  *out = CoordinatorLog();
  // Copies of one partition from several brokers are read together: a record one copy's cleaner removed
  // may survive in another, and each offset counts once.
  std::map<std::string, std::vector<std::string>> copies;
  for (const std::string& dir : dirs) copies[PartitionDirBaseName(dir)].push_back(dir);
  for (const auto& [name, group] : copies) {
    std::map<int64_t, std::pair<std::string, CoordinatorRecord>> by_offset;
    for (const std::string& dir : group) {
      if (!ReadCopy(dir, &by_offset, &out->cluster_ids, sink, error)) return false;
      out->partition_dirs.push_back(dir);
    }
    for (auto& [offset, x] : by_offset) {
      TransactionalIdHistory& h = out->ids[x.first];
      h.id = x.first;
      h.records.push_back(std::move(x.second));
    }
  }
  return true;
}

std::vector<std::string> FindTransactionStateDirs(const std::vector<std::string>& paths) {
  return FindTopicPartitionDirs(paths, "__transaction_state");
}

bool IsTransactionStateDirName(const std::string& name) {
  std::optional<TopicPartition> tp = ParsePartitionDirName(name);
  return tp && tp->topic == "__transaction_state";
}

namespace {

std::string ParentDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::path(dir), ec);
  if (ec) p = std::filesystem::path(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // a trailing slash
  return p.parent_path().string();
}

CoordinatorView ViewOfTransactionInLog(const CoordinatorLog& log, int64_t producer_id, int16_t epoch,
                                       const std::string& topic_partition);

}  // namespace

ClusterMatch MatchCluster(const CoordinatorLog& log, const std::vector<CopyOrigin>& copies) {
  bool foreign = false;
  std::set<std::string> coordinator_log_dirs;
  for (const std::string& d : log.partition_dirs) coordinator_log_dirs.insert(ParentDir(d));
  for (const CopyOrigin& c : copies) {
    if (c.cluster_id && !log.cluster_ids.empty()) {
      if (log.cluster_ids.count(*c.cluster_id)) return ClusterMatch::kProven;
      foreign = true;
      continue;
    }
    if (coordinator_log_dirs.count(ParentDir(c.partition_dir))) return ClusterMatch::kProven;
  }
  if (foreign) return ClusterMatch::kForeign;
  return log.same_cluster_vouched ? ClusterMatch::kProven : ClusterMatch::kUnproven;
}

std::string ClusterMatchCaveat(const CoordinatorLog& log, ClusterMatch match) {
  switch (match) {
    case ClusterMatch::kProven: return "";
    case ClusterMatch::kForeign:
      return "the coordinator's log is of another cluster than this partition's copies (their log dirs' "
             "meta.properties name different cluster ids): producer ids repeat across clusters, so its records "
             "say nothing here";
    case ClusterMatch::kUnproven: break;
  }
  return fmt::format(
      "nothing in the files shows that the coordinator's log ({}) and this partition's copies come from one "
      "cluster (no meta.properties names a cluster for both, and they are not in one log dir), and producer ids "
      "repeat across clusters: the log dirs' meta.properties, or --same-cluster if you know they do, settles it",
      log.partition_dirs.empty() ? std::string("no directory") : log.partition_dirs.front());
}

CoordinatorView ViewOfTransaction(const CoordinatorLog& log, int64_t producer_id, int16_t epoch,
                                  const std::string& topic_partition, ClusterMatch match) {
  if (match == ClusterMatch::kForeign) {
    CoordinatorView view;
    view.why = ClusterMatchCaveat(log, match);
    return view;
  }
  CoordinatorView view = ViewOfTransactionInLog(log, producer_id, epoch, topic_partition);
  if (match == ClusterMatch::kUnproven && view.certain) {
    view.certain = false;
    view.why += "; suspected only: " + ClusterMatchCaveat(log, match);
  }
  return view;
}

namespace {

// NOLINTNEXTLINE(readability-function-cognitive-complexity): TransactionMetadata's state machine: one case per state and epoch relation (issue 18)
CoordinatorView ViewOfTransactionInLog(const CoordinatorLog& log, int64_t producer_id, int16_t epoch,
                                       const std::string& topic_partition) {
  CoordinatorView view;
  for (const auto& [id, h] : log.ids) {
    if (std::none_of(h.records.begin(), h.records.end(),
                     [&](const CoordinatorRecord& r) { return !r.tombstone && r.producer_id == producer_id; }))
      continue;
    view.transactional_id = id;
    // A transaction of the producer with data at `epoch` on this partition: an Ongoing record at that
    // epoch listing the partition, then a PrepareCommit/PrepareAbort listing it (at the same epoch, or
    // above it under transaction version 2), then its Complete record. An Empty or Complete record
    // ends a transaction.
    struct Decision {
      std::vector<CoordinatorRecord> records;
      bool commit = false;
    };
    std::vector<Decision> decisions;
    const CoordinatorRecord* ongoing = nullptr;
    for (size_t i = 0; i < h.records.size(); ++i) {
      const CoordinatorRecord& r = h.records[i];
      if (r.tombstone) {
        ongoing = nullptr;
        continue;
      }
      const bool ours = r.producer_id == producer_id && EpochOfTransaction(r, epoch) && Lists(r, topic_partition);
      if (r.state == "Ongoing") {
        ongoing = ours && r.producer_epoch == epoch ? &r : nullptr;
      } else if ((r.state == "PrepareCommit" || r.state == "PrepareAbort") && ours && ongoing != nullptr) {
        Decision d;
        d.records = {*ongoing, r};
        d.commit = r.state == "PrepareCommit";
        if (i + 1 < h.records.size() && h.records[i + 1].state.starts_with("Complete"))
          d.records.push_back(h.records[i + 1]);
        decisions.push_back(std::move(d));
        ongoing = nullptr;
      } else if (r.state != "Ongoing") {
        ongoing = nullptr;
      }
    }
    if (decisions.empty()) {
      if (ongoing != nullptr) {
        view.verdict = CoordinatorVerdict::kOngoing;
        view.evidence = {*ongoing};
        view.why = "the coordinator's latest record of the transaction is Ongoing: it has not decided it";
        return view;
      }
      view.verdict = CoordinatorVerdict::kUndetermined;
      view.evidence = {h.records.back()};
      view.why = "no Ongoing and PrepareCommit/PrepareAbort records of producer " + std::to_string(producer_id) +
                 " at epoch " + std::to_string(epoch) + " list " + topic_partition +
                 " (older records of a transactional id are compacted away; an older copy of __transaction_state "
                 "would settle it)";
      continue;
    }
    const bool same = std::all_of(decisions.begin(), decisions.end(),
                                  [&](const Decision& d) { return d.commit == decisions.front().commit; });
    for (const Decision& d : decisions) view.evidence.insert(view.evidence.end(), d.records.begin(), d.records.end());
    if (!same) {
      view.verdict = CoordinatorVerdict::kUndetermined;
      view.why = "the coordinator decided several transactions of the producer at this epoch on " + topic_partition +
                 " with different outcomes; the epoch does not tell which one the hanging data belongs to";
      return view;
    }
    view.verdict = decisions.front().commit ? CoordinatorVerdict::kCommitted : CoordinatorVerdict::kAborted;
    // Transaction version 2 bumps the epoch for every transaction: a decision above the data's epoch
    // belongs to that transaction alone. Under version 0/1 the epoch stays for many transactions, and
    // older ones of this id may have been compacted away.
    const CoordinatorRecord& prepare = decisions.front().records[1];
    // The epoch also rises under version 0/1 when the coordinator aborts a timed-out transaction (a fence,
    // then PrepareAbort at e+1), while data at e may belong to an earlier transaction of that epoch whose
    // records were compacted away: only the record's own ClientTransactionVersion 2 makes it certain.
    view.certain =
        decisions.size() == 1 && prepare.producer_epoch > epoch && prepare.client_transaction_version.value_or(0) >= 2;
    view.why = view.certain
                   ? "the coordinator's " + prepare.state + " at epoch " + std::to_string(prepare.producer_epoch) +
                         " follows the transaction's Ongoing record at epoch " + std::to_string(epoch) +
                         " (transaction version 2: one epoch per transaction)"
                   : "the coordinator decided a transaction of this producer at epoch " + std::to_string(epoch) +
                         " that lists " + topic_partition +
                         "; its records are not transaction version 2 (ClientTransactionVersion), and under version "
                         "0/1 one epoch spans many transactions whose older records may be compacted away, so this "
                         "is suspected, not proven";
    return view;
  }
  return view;
}

}  // namespace

std::string CoordinatorAdvice(const CoordinatorView& c, const std::string& abort_cmd, const std::string& settle) {
  switch (c.verdict) {
    case CoordinatorVerdict::kCommitted:
      return c.certain ? "do not abort it: the coordinator committed it. This replica lacks the COMMIT marker; "
                         "re-replicate it from a replica that holds the marker"
                       : "do not abort it: the coordinator most likely committed it; " + settle;
    case CoordinatorVerdict::kAborted:
      return c.certain ? "aborting agrees with the coordinator's decision: " + abort_cmd
                       : "the coordinator most likely aborted it; before `" + abort_cmd + "`, check: " + settle;
    case CoordinatorVerdict::kOngoing:
      return "the coordinator has not decided it: it aborts it after the transaction's timeout; wait for that before "
             "any manual abort";
    case CoordinatorVerdict::kNoRecord:
    case CoordinatorVerdict::kUndetermined: break;
  }
  return "the coordinator's files do not decide it, and a manual abort hides the data if it was committed: " + settle;
}

namespace {

// The open transactions of one partition directory; false with *error when it cannot be loaded.
bool HangingIn(const std::string& dir, const CoordinatorLog& coordinator, const LoadOptions& options,
               std::vector<HangingTransaction>* out, std::string* error) {
  LoadedLog log;
  CollectingSink quiet;  // the partition's own problems are verify's to report
  if (!LoadedLog::Open(dir, options, &log, &quiet, error)) return false;
  if (!log.tp) return true;
  const std::string tp = log.tp->topic + "-" + std::to_string(log.tp->partition);
  for (const auto& [first, txn] : log.producer_state.ongoing_txns()) {
    HangingTransaction h;
    h.partition_dir = dir;
    h.topic_partition = tp;
    h.producer_id = txn.producer_id;
    h.first_offset = first;
    if (const ProducerStateEntry* e = log.producer_state.Find(txn.producer_id)) {
      h.producer_epoch = e->producer_epoch;
      h.last_offset = e->last_data_offset();
      h.last_timestamp = e->last_timestamp;
    }
    h.last_stable_offset = log.last_stable_offset;
    h.high_watermark = log.high_watermark;
    h.pins_lso = first == log.last_stable_offset && log.last_stable_offset < log.high_watermark;
    h.coordinator = ViewOfTransaction(coordinator, h.producer_id, h.producer_epoch, tp,
                                      MatchCluster(coordinator, {{dir, log.cluster_id}}));
    out->push_back(std::move(h));
  }
  return true;
}

}  // namespace

std::vector<HangingTransaction> FindHangingTransactions(const std::vector<std::string>& partition_dirs,
                                                        const CoordinatorLog& coordinator, const LoadOptions& options,
                                                        ProblemSink* sink, std::vector<std::string>* unreadable,
                                                        unsigned jobs) {
  struct Slot {
    std::vector<HangingTransaction> hanging;
    std::string error;  // not loaded
  };
  std::vector<Slot> slots(partition_dirs.size());
  ParallelFor(partition_dirs.size(), jobs, [&](size_t i) {
    if (!HangingIn(partition_dirs[i], coordinator, options, &slots[i].hanging, &slots[i].error) &&
        slots[i].error.empty())
      slots[i].error = partition_dirs[i] + ": cannot be loaded";
  });
  std::vector<HangingTransaction> out;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i].error.empty()) {
      Report(sink, Severity::kError, partition_dirs[i], 0, "partition-load", slots[i].error);
      if (unreadable) unreadable->push_back(partition_dirs[i]);
      continue;
    }
    for (HangingTransaction& h : slots[i].hanging) out.push_back(std::move(h));
  }
  return out;
}

}  // namespace klf
