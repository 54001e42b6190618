// RunSimulation through segment_writer's FaultInjectionEnv (SimulationOptions::env): every file of the
// run -- the brokers' working logs, their cleaner passes, the copy into --out -- goes through it, so a
// full disk, a short write, a failing fsync or a crash at any rename ends the run with an error and
// never leaves a partial --out; the timeline file is never touched.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/fault_injection_env.h"
#include "simulator/simulator.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// A timeline with produce, replication, an outage and cleaner passes (scenarios.md §4).
const std::string kTimeline = std::string(KLF_SOURCE_DIR) + "/fixtures/lost-tombstone.json";

bool Simulate(const TempDir& tmp, Env* env, std::string* error) {
  Timeline t;
  EXPECT_TRUE(ParseTimeline(test::ReadAll(kTimeline), &t, error)) << *error;
  SimulationOptions o;
  o.out_dir = tmp.path() + "/out";
  o.inputs = {kTimeline};
  o.env = env;
  SimulationResult r;
  return RunSimulation(t, o, &r, error);
}

// This process's tmpfs scratch directories (RunSimulation's working copies), removed when `remove`. A
// crashed run leaves its files as a killed process would; the next run of a live process would not
// remove this process's, so the test does.
int OwnScratch(bool remove) {
  const std::string prefix = "klf-simulate-" + std::to_string(::getpid()) + "-";
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev/shm", ec)) {
    if (!e.path().filename().string().starts_with(prefix)) continue;
    ++n;
    if (remove) fs::remove_all(e.path(), ec);
  }
  return n;
}

TEST(SimulateFaults, WithoutFaultsTheInjectionEnvWritesWhatTheDefaultWrites) {
  TempDir a, b;
  FaultInjectionEnv env(Env::Default());
  std::string error;
  ASSERT_TRUE(Simulate(a, &env, &error)) << error;
  ASSERT_TRUE(Simulate(b, Env::Default(), &error)) << error;
  EXPECT_GT(env.bytes_written(), 0u) << "the simulator's writes bypassed the Env";
  EXPECT_EQ(test::SnapshotFiles(a.path() + "/out"), test::SnapshotFiles(b.path() + "/out"));
}

TEST(SimulateFaults, FullDiskShortWriteAndFailedFsyncLeaveNothing) {
  const std::string timeline = test::ReadAll(kTimeline);
  uint64_t total = 0;
  {
    TempDir tmp;
    FaultInjectionEnv env(Env::Default());
    std::string error;
    ASSERT_TRUE(Simulate(tmp, &env, &error)) << error;
    total = env.bytes_written();
  }
  struct Fault {
    std::string what;
    std::function<void(FaultInjectionEnv*)> arm;
  };
  std::vector<Fault> faults = {
      {"ENOSPC at once", [](FaultInjectionEnv* e) { e->FailAfterBytes(0); }},
      {"ENOSPC half way", [&](FaultInjectionEnv* e) { e->FailAfterBytes(total / 2); }},
      {"ENOSPC at the last byte", [&](FaultInjectionEnv* e) { e->FailAfterBytes(total - 1); }},
      {"short write of a segment", [](FaultInjectionEnv* e) { e->FailShortWrite(".log.tmp"); }},
      {"short write of a cleaned segment", [](FaultInjectionEnv* e) { e->FailShortWrite(".log.cleaned.tmp"); }},
      {"short write of a checkpoint", [](FaultInjectionEnv* e) { e->FailShortWrite("checkpoint.tmp"); }},
      {"fsync fails", [](FaultInjectionEnv* e) { e->FailSync(); }},
  };
  for (const Fault& f : faults) {
    SCOPED_TRACE(f.what);
    TempDir tmp;
    FaultInjectionEnv env(Env::Default());
    f.arm(&env);
    std::string error;
    EXPECT_FALSE(Simulate(tmp, &env, &error));
    EXPECT_FALSE(error.empty());
    EXPECT_FALSE(fs::exists(tmp.path() + "/out")) << "a failed run must not leave --out";
    for (const auto& e : fs::directory_iterator(tmp.path())) ADD_FAILURE() << "left behind: " << e.path();
    EXPECT_EQ(OwnScratch(true), 0) << "the working copies were left in /dev/shm";
  }
  EXPECT_EQ(test::ReadAll(kTimeline), timeline);
}

TEST(SimulateFaults, CrashAtAnyRenameLeavesNoOutput) {
  int crashes = 0;
  for (int renames = 0;; renames += 1 + renames / 4) {  // every rename at first, then sparser
    SCOPED_TRACE(renames);
    TempDir tmp;
    FaultInjectionEnv env(Env::Default());
    env.CrashAfterRenames(renames);
    std::string error;
    bool ok = Simulate(tmp, &env, &error);
    OwnScratch(true);
    if (ok) {
      // Enough renames allowed: the run completed and the output is whole.
      EXPECT_FALSE(env.crashed());
      EXPECT_TRUE(fs::exists(tmp.path() + "/out/broker1"));
      break;
    }
    ++crashes;
    EXPECT_TRUE(env.crashed()) << error;
    EXPECT_FALSE(fs::exists(tmp.path() + "/out")) << "a crashed run must not leave --out";
    ASSERT_LT(renames, 100000) << "the run never completed";
  }
  EXPECT_GT(crashes, 10);
}

}  // namespace
}  // namespace klf
