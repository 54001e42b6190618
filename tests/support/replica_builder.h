// Hand-built replicas of one partition (foo-0) for the diff and repair tests: each broker's copy is
// written batch by batch with segment_writer's batch builders at the offsets a follower copies from its
// leader, and its .txnindex holds the aborted transactions Kafka's producer-state replay produces.
//
// Header-only on purpose: the klf_test_support library is linked into every test binary, and only the
// test folders that link segment_writer (diff, repair, ...) may use this builder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>

#include <gtest/gtest.h>

#include "segment_reader/batch.h"
#include "segment_reader/bytes.h"
#include "segment_reader/index_files.h"
#include "partition/producer_state.h"
#include "segment_writer/batch_builder.h"

namespace klf::test {

constexpr int64_t kTxnPid = 7, kPlainPid = 100;
constexpr int64_t kT0 = 1700000000000;

// One broker's copy of partition foo-0: `<root>/<broker>/foo-0/00000000000000000000.log` (+ .txnindex).
class Replica {
 public:
  Replica(const std::string& root, const std::string& broker) : dir_(root + "/" + broker + "/foo-0") {
    std::filesystem::create_directories(dir_);
  }
  // A plain (idempotent) record of producer kPlainPid; value nullopt = tombstone.
  Replica& Put(int64_t offset, const std::string& key, std::optional<std::string> value) {
    return Data(offset, key, std::move(value), kPlainPid, false);
  }
  // A record of a transactional producer (default kTxnPid, epoch 0).
  Replica& Txn(int64_t offset, const std::string& key, const std::string& value, int64_t pid = kTxnPid,
               int16_t epoch = 0) {
    return Data(offset, key, value, pid, true, epoch);
  }
  // An end-transaction marker of a transactional producer (default kTxnPid, epoch 0).
  Replica& Marker(int64_t offset, ControlType type, int32_t coordinator_epoch = 0, int64_t pid = kTxnPid,
                  int16_t epoch = 0) {
    std::string error;
    BuiltBatch built;
    EXPECT_TRUE(AppendEndTxnMarker(MarkerOptions(offset, type, coordinator_epoch, pid, epoch), &log_, &built, &error))
        << error;
    return *this;
  }
  // What the cleaner leaves of a marker that is the producer's last batch: the marker's header with no
  // record (DefaultRecordBatch.writeEmptyHeader).
  Replica& EmptiedMarker(int64_t offset) {
    std::string marker, error;
    BuiltBatch built;
    EXPECT_TRUE(AppendEndTxnMarker(MarkerOptions(offset, ControlType::kCommit, 0), &marker, &built, &error)) << error;
    BatchHeader h;
    EXPECT_TRUE(ParseBatchHeader(AsBytes(marker), 0, true, &h, &error)) << error;
    EXPECT_TRUE(AppendEmptyBatch(h, &log_, &built, &error)) << error;
    return *this;
  }
  // Writes the .log and the .txnindex Kafka would have built while appending; returns the partition dir.
  std::string Write() {
    std::string log_path = dir_ + "/00000000000000000000.log";
    std::ofstream(log_path, std::ios::binary) << log_;
    ProducerStateManager state;
    LogReader reader(log_path, AsBytes(log_), nullptr);
    BatchView batch;
    std::string txn;
    while (reader.Next(&batch)) {
      BatchUpdate u = state.Apply(batch, log_path, nullptr);
      if (u.aborted_txn) EncodeAbortedTxn(*u.aborted_txn, &txn);
    }
    if (!txn.empty()) std::ofstream(dir_ + "/00000000000000000000.txnindex", std::ios::binary) << txn;
    return dir_;
  }

 private:
  static EndTxnMarkerOptions MarkerOptions(int64_t offset, ControlType type, int32_t coordinator_epoch,
                                           int64_t pid = kTxnPid, int16_t epoch = 0) {
    EndTxnMarkerOptions o;
    o.offset = offset;
    o.partition_leader_epoch = 0;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.timestamp = kT0 + offset;
    o.type = type;
    o.coordinator_epoch = coordinator_epoch;
    return o;
  }
  Replica& Data(int64_t offset, const std::string& key, std::optional<std::string> value, int64_t pid, bool txn,
                int16_t epoch = 0) {
    RecordInput r;
    r.offset = offset;
    r.timestamp = kT0 + offset;
    r.key = AsBytes(key);
    if (value) r.value = AsBytes(*value);
    V2BatchOptions o;
    o.base_offset = offset;
    o.partition_leader_epoch = 0;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.base_sequence = int32_t(offset);
    o.is_transactional = txn;
    BuiltBatch built;
    std::string error;
    EXPECT_TRUE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &log_, &built, &error)) << error;
    return *this;
  }

  std::string dir_;
  std::string log_;
};

}  // namespace klf::test
