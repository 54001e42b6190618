// A coordinator log made up for a rule's sake (the Kafka-written replica sets have no
// __transaction_state): transactional id "app" of producer `pid`, one transaction listing foo-0 from
// `epoch`, decided by `state` ("PrepareCommit" or "PrepareAbort") at epoch + 1, then completed, under
// transaction version `tv`. Records at offsets 1..3 of __transaction_state-7, at byte position offset
// * 100.
//
// Header-only: only the test folders that link klf_txn (txn, diff, repair) include it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "txn/coordinator.h"

namespace klf::test {

inline CoordinatorLog OneDecision(int64_t pid, int16_t epoch, const char* state, int8_t tv) {
  CoordinatorLog log;
  // Made up for the copies at hand: of their cluster, as --same-cluster vouches (it has no directory that
  // could show it).
  log.same_cluster_vouched = true;
  log.partition_dirs = {"__transaction_state-7"};
  TransactionalIdHistory& h = log.ids["app"];
  h.id = "app";
  auto rec = [&](int64_t offset, int16_t e, const char* st, std::vector<std::string> parts) {
    CoordinatorRecord r;
    r.file = "__transaction_state-7/00000000000000000000.log";
    r.position = uint64_t(offset) * 100;
    r.offset = offset;
    r.producer_id = pid;
    r.producer_epoch = e;
    r.state = st;
    r.partitions = std::move(parts);
    r.client_transaction_version = tv;
    h.records.push_back(r);
  };
  rec(1, epoch, "Ongoing", {"foo-0"});
  rec(2, int16_t(epoch + 1), state, {"foo-0"});
  rec(3, int16_t(epoch + 1), std::string(state) == "PrepareCommit" ? "CompleteCommit" : "CompleteAbort", {});
  return log;
}

}  // namespace klf::test
