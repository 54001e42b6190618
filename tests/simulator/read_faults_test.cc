// Read faults (segment_writer's FaultInjectionEnv, the read side of segment_reader/env.h) against the
// loads every command starts from, on a partition Kafka wrote (kafka4/tv2-txn/written): LoadedLog::Open
// and ForEachBatch, verify's library entry (VerifyPath), diff's replica load (LoadReplica), and the
// simulator. Each kind of file a load reads -- .log, .index, .timeindex, .txnindex, .snapshot, the log
// dir's checkpoints, leader-epoch-checkpoint, partition.metadata -- failing with EIO at a byte position,
// or ending early, is an error naming the file and the position: never a crash, never an output
// directory, never "absent".
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "diff/replica_state.h"
#include "partition/loaded_log.h"
#include "tests/support/fault_injection_env.h"
#include "simulator/simulator.h"
#include "tests/support/test_files.h"
#include "verify/verify.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

const std::string kLogDir = std::string(KLF_FIXTURES_DIR) + "/kafka4/tv2-txn/written";
const std::string kPartition = kLogDir + "/tv2-txn-0";

struct ReadFaultCase {
  std::string file;  // the file's name in the fixture (a path suffix)
  uint64_t at;       // the byte position the fault strikes at (inside the file)
  bool shrink;       // the file ends at `at` (else: EIO from `at` on)
};

// The files of the fixture, each with a position inside it. LoadedLog::Open reads the checkpoints,
// partition.metadata, leader-epoch-checkpoint, every .txnindex, every .snapshot (newest first) and the
// .log after the latest snapshot (00049); ForEachBatch reads every .log; verify reads all of them and
// the .index / .timeindex files.
std::vector<ReadFaultCase> Cases(bool shrink) {
  return {
      {"/00000000000000000000.log", 500, shrink},     {"/00000000000000000049.log", 100, shrink},
      {"/00000000000000000018.txnindex", 40, shrink}, {"/00000000000000000053.snapshot", 100, shrink},
      {"/00000000000000000018.snapshot", 60, shrink}, {"/replication-offset-checkpoint", 4, shrink},
      {"/log-start-offset-checkpoint", 2, shrink},    {"/recovery-point-offset-checkpoint", 4, shrink},
      {"/leader-epoch-checkpoint", 3, shrink},        {"/partition.metadata", 10, shrink},
  };
}

void Arm(FaultInjectionEnv* env, const ReadFaultCase& c) {
  if (c.shrink) {
    env->ShrinkFile(c.file, c.at);
  } else {
    env->FailRead(c.file, c.at);
  }
}

// The error names the file and the byte position.
void ExpectNamesFileAndPosition(const std::string& error, const ReadFaultCase& c) {
  EXPECT_NE(error.find(c.file), std::string::npos) << error;
  EXPECT_NE(error.find("byte " + std::to_string(c.at)), std::string::npos) << error;
}

// LoadedLog::Open, then ForEachBatch: false with the error naming the file.
bool LoadAndStream(Env* env, std::string* error, bool* unreadable, LoadedLog* log) {
  LoadOptions o;
  o.env = env;
  CollectingSink sink;
  *unreadable = false;
  if (!LoadedLog::Open(kPartition, o, log, &sink, error, unreadable)) return false;
  *unreadable = true;  // from here on a failure is a file that cannot be read
  size_t batches = 0;
  return log->ForEachBatch([&](size_t, const BatchView&) { return ++batches > 0; }, &sink, error);
}

TEST(ReadFaults, WithoutFaultsTheInjectionEnvLoadsWhatTheDefaultLoads) {
  FaultInjectionEnv env(Env::Default());
  LoadedLog a, b;
  std::string error;
  bool unreadable = false;
  ASSERT_TRUE(LoadAndStream(&env, &error, &unreadable, &a)) << error;
  ASSERT_TRUE(LoadAndStream(nullptr, &error, &unreadable, &b)) << error;
  // Every read went through the Env: the scan, checkpoints, indexes, snapshots, the replay and the stream.
  EXPECT_GE(env.files_opened(), 15u);
  EXPECT_GT(env.read_calls(), 0u);
  EXPECT_EQ(a.log_start_offset, b.log_start_offset);
  EXPECT_EQ(a.log_end_offset, b.log_end_offset);
  EXPECT_EQ(a.high_watermark, b.high_watermark);
  EXPECT_EQ(a.last_stable_offset, b.last_stable_offset);
  EXPECT_EQ(a.aborted_txns.size(), b.aborted_txns.size());
  EXPECT_EQ(a.snapshot_offset, b.snapshot_offset);
  EXPECT_EQ(a.producer_state.producers().size(), b.producer_state.producers().size());
}

TEST(ReadFaults, LoadedLogFailsNamingTheFileAndPosition) {
  for (bool shrink : {false, true}) {
    for (const ReadFaultCase& c : Cases(shrink)) {
      SCOPED_TRACE(c.file + (shrink ? " ends early" : " EIO"));
      FaultInjectionEnv env(Env::Default());
      Arm(&env, c);
      LoadedLog log;
      std::string error;
      bool unreadable = false;
      EXPECT_FALSE(LoadAndStream(&env, &error, &unreadable, &log));
      EXPECT_TRUE(unreadable) << "an unreadable file was taken for an absent one: " << error;
      ExpectNamesFileAndPosition(error, c);
    }
  }
}

TEST(ReadFaults, LoadedLogRefusesAFileThatCannotBeOpened) {
  for (const char* file : {"/00000000000000000018.log", "/00000000000000000035.snapshot",
                           "/00000000000000000000.txnindex", "/replication-offset-checkpoint"}) {
    SCOPED_TRACE(file);
    FaultInjectionEnv env(Env::Default());
    env.FailOpen(file);
    LoadedLog log;
    std::string error;
    bool unreadable = false;
    EXPECT_FALSE(LoadAndStream(&env, &error, &unreadable, &log));
    EXPECT_TRUE(unreadable) << error;
    EXPECT_NE(error.find(file), std::string::npos) << error;
  }
}

TEST(ReadFaults, VerifyReportsTheFileAndPosition) {
  std::vector<ReadFaultCase> cases = Cases(false);
  // Only verify reads the offset and time indexes.
  cases.push_back({"/00000000000000000000.index", 8, false});
  cases.push_back({"/00000000000000000035.timeindex", 12, false});
  cases.push_back({"/00000000000000000018.log", 300, true});
  for (const ReadFaultCase& c : cases) {
    SCOPED_TRACE(c.file);
    FaultInjectionEnv env(Env::Default());
    Arm(&env, c);
    VerifyOptions o;
    o.threads = 1;
    o.read.env = &env;
    CollectingSink sink;
    VerifyStats stats = VerifyPath(kPartition, o, &sink);
    EXPECT_TRUE(stats.unreadable) << "verify judged a partition with a file it could not read";
    bool named = false;
    for (const Problem& p : sink.problems) {
      if (p.check != std::string_view("file-read")) continue;
      const std::string where = p.file + ": " + p.message;
      named = named || (where.find(c.file) != std::string::npos &&
                        where.find("byte " + std::to_string(c.at)) != std::string::npos);
    }
    EXPECT_TRUE(named) << "no file-read problem names " << c.file << " at byte " << c.at
                       << "; reason: " << stats.unreadable_reason;
  }
  // Without faults, verify through the Env finds what it finds through the default one.
  FaultInjectionEnv env(Env::Default());
  VerifyOptions o;
  o.threads = 1;
  o.read.env = &env;
  CollectingSink a, b;
  VerifyStats sa = VerifyPath(kPartition, o, &a);
  o.read.env = nullptr;
  VerifyStats sb = VerifyPath(kPartition, o, &b);
  EXPECT_FALSE(sa.unreadable);
  EXPECT_EQ(sa.errors, sb.errors);
  EXPECT_EQ(sa.warnings, sb.warnings);
  EXPECT_EQ(sa.batches, sb.batches);
  EXPECT_EQ(sa.files_checked, sb.files_checked);
  EXPECT_GE(env.files_opened(), sa.files_checked);
}

TEST(ReadFaults, DiffReplicaLoadFailsNamingTheFileAndPosition) {
  for (bool shrink : {false, true}) {
    for (const ReadFaultCase& c : Cases(shrink)) {
      SCOPED_TRACE(c.file + (shrink ? " ends early" : " EIO"));
      FaultInjectionEnv env(Env::Default());
      Arm(&env, c);
      ReplicaOptions o;
      o.env = &env;
      ReplicaState r;
      std::string error;
      EXPECT_FALSE(LoadReplica(kPartition, o, &r, &error));
      ExpectNamesFileAndPosition(error, c);
      EXPECT_NE(error.find("cannot be read"), std::string::npos) << error;
    }
  }
  FaultInjectionEnv env(Env::Default());
  ReplicaOptions o;
  o.env = &env;
  ReplicaState a, b;
  std::string error;
  ASSERT_TRUE(LoadReplica(kPartition, o, &a, &error)) << error;
  o.env = nullptr;
  ASSERT_TRUE(LoadReplica(kPartition, o, &b, &error)) << error;
  EXPECT_GT(env.read_calls(), 0u);
  EXPECT_EQ(a.records.size(), b.records.size());
  EXPECT_EQ(a.last_stable_offset, b.last_stable_offset);
}

// The simulator reads what it wrote: the brokers' closed segments for a follower's fetch, the log
// dir's checkpoints it rewrites, and every broker's partition for the report. A read fault in any of
// them ends the run with an error naming the file, and leaves no --out.
TEST(ReadFaults, SimulatorFailsAndLeavesNoOutput) {
  const std::string timeline_path = std::string(KLF_SOURCE_DIR) + "/fixtures/lost-tombstone.json";
  Timeline t;
  std::string error;
  ASSERT_TRUE(ParseTimeline(test::ReadAll(timeline_path), &t, &error)) << error;
  struct Fault {
    std::string suffix;
    uint64_t at;
    bool shrink;
  };
  for (const Fault& f : {Fault{".log", 0, false}, Fault{".log", 70, false}, Fault{".log", 70, true},
                         Fault{"replication-offset-checkpoint", 3, false}, Fault{"partition.metadata", 5, false}}) {
    SCOPED_TRACE(f.suffix + " at " + std::to_string(f.at));
    test::TempDir tmp;
    FaultInjectionEnv env(Env::Default());
    Arm(&env, {f.suffix, f.at, f.shrink});
    SimulationOptions o;
    o.out_dir = tmp.path() + "/out";
    o.inputs = {timeline_path};
    o.env = &env;
    SimulationResult r;
    error.clear();
    bool ok = RunSimulation(t, o, &r, &error);
    EXPECT_FALSE(ok);
    EXPECT_NE(error.find(f.suffix), std::string::npos) << error;
    EXPECT_NE(error.find("byte " + std::to_string(f.at)), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(o.out_dir)) << "a failed run must not leave --out";
  }
}

}  // namespace
}  // namespace klf
