// CompactPartition through segment_writer's FaultInjectionEnv (CompactOptions::env): a full disk, a short
// write, a failing fsync or a crash at any rename ends the run with an error, never with a partial --out,
// and the input directory is never touched. The same faults as the writer's own tests
// (tests/segment_writer/segment_writer_test.cc, Reindex.*).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compactor/cleaner.h"
#include "tests/support/fault_injection_env.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const std::string kInput = std::string(KLF_FIXTURES_DIR) + "/kafka-oracle/b-txn";

struct CompactRun {
  bool ok = false;
  std::string error;
  CompactReport report;
};

// Compacts a copy of b-txn/txn-0 (one pass that cleans: fixtures/README.md) into tmp/out through `env`.
CompactRun Compact(const TempDir& tmp, Env* env) {
  CompactOptions o;
  o.now = 1700000600000;
  o.env = env;
  std::string error;
  EXPECT_TRUE(o.config.Set("cleanup.policy", "compact", &error) && o.config.Set("segment.bytes", "500", &error) &&
              o.config.Set("index.interval.bytes", "128", &error))
      << error;
  CompactRun r;
  CollectingSink sink;
  r.ok = CompactPartition(tmp.path() + "/in/txn-0", tmp.path() + "/out", o, &r.report, &sink, &r.error);
  return r;
}

// A fresh copy of the input under tmp/in, and its files' bytes.
std::map<std::string, std::string> CopyInput(const TempDir& tmp) {
  fs::create_directories(tmp.path() + "/in");
  test::CopyWritable(kInput + "/txn-0", tmp.path() + "/in/txn-0");
  return test::SnapshotFiles(tmp.path() + "/in");
}

// What a failed run must leave: no --out, no staging directory (unless it "crashed"), the input as it was.
void ExpectNothingLeft(const TempDir& tmp, const std::map<std::string, std::string>& input, bool crashed) {
  EXPECT_FALSE(fs::exists(tmp.path() + "/out")) << "a failed run must not leave --out";
  if (!crashed) {
    for (const auto& e : fs::directory_iterator(tmp.path()))
      EXPECT_EQ(e.path().filename(), "in") << "left behind: " << e.path();
  }
  EXPECT_EQ(test::SnapshotFiles(tmp.path() + "/in"), input) << "the input changed";
}

TEST(CompactFaults, WithoutFaultsTheInjectionEnvCleansAsTheDefaultDoes) {
  TempDir a, b;
  CopyInput(a);
  CopyInput(b);
  FaultInjectionEnv env(Env::Default());
  CompactRun faulty = Compact(a, &env);
  CompactRun plain = Compact(b, Env::Default());
  ASSERT_TRUE(faulty.ok) << faulty.error;
  ASSERT_TRUE(plain.ok) << plain.error;
  ASSERT_EQ(faulty.report.passes.size(), 1u);
  EXPECT_TRUE(faulty.report.passes[0].cleaned);
  EXPECT_GT(env.bytes_written(), 0u) << "the compactor's writes bypassed the Env";
  EXPECT_EQ(test::SnapshotFiles(a.path() + "/out"), test::SnapshotFiles(b.path() + "/out"));
}

// Reads go through the Env too (CompactOptions::env): a file of the input that fails to read (EIO from a
// byte on), ends early or cannot be opened ends the run with an error naming the file, never with an
// output built as if the file or its tail were absent.
TEST(CompactFaults, ReadFaultsOfEveryInputFileLeaveNothing) {
  struct Case {
    const char* file;  // under txn-0/
    enum { kEio, kShort, kOpen } fault;
    uint64_t at;
  };
  const Case cases[] = {
      {"00000000000000000000.log", Case::kEio, 0},        {"00000000000000000000.log", Case::kEio, 100},
      {"00000000000000000007.log", Case::kShort, 64},     {"00000000000000000015.log", Case::kEio, 0},
      {"00000000000000000000.index", Case::kOpen, 0},     {"00000000000000000007.timeindex", Case::kOpen, 0},
      {"00000000000000000007.txnindex", Case::kEio, 0},   {"00000000000000000015.snapshot", Case::kEio, 0},
      {"00000000000000000017.snapshot", Case::kShort, 8}, {"partition.metadata", Case::kEio, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.file) + " fault " + std::to_string(int(c.fault)) + " at " + std::to_string(c.at));
    TempDir tmp;
    std::map<std::string, std::string> input = CopyInput(tmp);
    FaultInjectionEnv env(Env::Default());
    const std::string suffix = std::string("/txn-0/") + c.file;
    if (c.fault == Case::kEio) env.FailRead(suffix, c.at);
    if (c.fault == Case::kShort) env.ShrinkFile(suffix, c.at);
    if (c.fault == Case::kOpen) env.FailOpen(suffix);
    CompactRun r = Compact(tmp, &env);
    EXPECT_FALSE(r.ok) << "a read fault must fail the run";
    EXPECT_NE(r.error.find(c.file), std::string::npos) << r.error;
    if (c.fault == Case::kEio) {
      EXPECT_NE(r.error.find("byte " + std::to_string(c.at)), std::string::npos) << r.error;
    }
    ExpectNothingLeft(tmp, input, false);
  }
}

TEST(CompactFaults, WithoutFaultsTheReadsGoThroughTheEnv) {
  TempDir tmp;
  CopyInput(tmp);
  FaultInjectionEnv env(Env::Default());
  CompactRun r = Compact(tmp, &env);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GT(env.files_opened(), 0u) << "the compactor's reads bypassed the Env";
  EXPECT_GT(env.read_calls(), 0u);
}

TEST(CompactFaults, FullDiskShortWriteAndFailedFsyncLeaveNothing) {
  uint64_t total = 0;
  {
    TempDir tmp;
    CopyInput(tmp);
    FaultInjectionEnv env(Env::Default());
    ASSERT_TRUE(Compact(tmp, &env).ok);
    total = env.bytes_written();
  }
  struct Fault {
    std::string what;
    std::function<void(FaultInjectionEnv*)> arm;
  };
  std::vector<Fault> faults = {
      {"ENOSPC at once", [](FaultInjectionEnv* e) { e->FailAfterBytes(0); }},
      {"ENOSPC after 100 bytes", [](FaultInjectionEnv* e) { e->FailAfterBytes(100); }},
      {"ENOSPC half way", [&](FaultInjectionEnv* e) { e->FailAfterBytes(total / 2); }},
      {"ENOSPC at the last byte", [&](FaultInjectionEnv* e) { e->FailAfterBytes(total - 1); }},
      {"short write of a cleaned segment", [](FaultInjectionEnv* e) { e->FailShortWrite(".log.cleaned.tmp"); }},
      {"short write of a time index", [](FaultInjectionEnv* e) { e->FailShortWrite(".timeindex.cleaned.tmp"); }},
      {"short write of a copied file", [](FaultInjectionEnv* e) { e->FailShortWrite("/leader-epoch-checkpoint"); }},
      {"short write of the checkpoint", [](FaultInjectionEnv* e) { e->FailShortWrite("checkpoint.tmp"); }},
      {"short write of any file", [](FaultInjectionEnv* e) { e->FailShortWrite(""); }},
      {"fsync fails", [](FaultInjectionEnv* e) { e->FailSync(); }},
  };
  for (const Fault& f : faults) {
    SCOPED_TRACE(f.what);
    TempDir tmp;
    auto input = CopyInput(tmp);
    FaultInjectionEnv env(Env::Default());
    f.arm(&env);
    CompactRun r = Compact(tmp, &env);
    EXPECT_FALSE(r.ok);
    EXPECT_FALSE(r.error.empty());
    ExpectNothingLeft(tmp, input, false);
  }
}

TEST(CompactFaults, CrashBeforeAnyRenameLeavesNoOutput) {
  for (int renames = 0; renames < 200; ++renames) {
    SCOPED_TRACE(renames);
    TempDir tmp;
    auto input = CopyInput(tmp);
    FaultInjectionEnv env(Env::Default());
    env.CrashAfterRenames(renames);
    CompactRun r = Compact(tmp, &env);
    if (r.ok) {
      // Enough renames allowed: the run completed and the output is whole.
      EXPECT_FALSE(env.crashed());
      EXPECT_TRUE(fs::exists(tmp.path() + "/out/txn-0"));
      EXPECT_GT(renames, 5);
      return;
    }
    EXPECT_TRUE(env.crashed());
    ExpectNothingLeft(tmp, input, true);
  }
  ADD_FAILURE() << "the run never completed";
}

// A snapshot a broker's load would delete (not at a segment base, below the last one) is left out of
// the output and named as the user knows it: the file in the input directory, which keeps it, not the
// staging copy it was deleted from (that directory is gone when the command ends).
TEST(CompactProblems, AStraySnapshotIsNamedInTheInputAndLeftOutOfTheOutput) {
  TempDir tmp;
  CopyInput(tmp);
  const std::string in = tmp.path() + "/in/txn-0";
  fs::copy_file(in + "/00000000000000000007.snapshot", in + "/00000000000000000003.snapshot");
  CompactOptions o;
  o.now = 1700000600000;
  std::string error;
  ASSERT_TRUE(o.config.Set("cleanup.policy", "compact", &error)) << error;
  CompactReport report;
  CollectingSink sink;
  ASSERT_TRUE(CompactPartition(in, tmp.path() + "/out", o, &report, &sink, &error)) << error;
  int stray = 0;
  for (const Problem& p : sink.problems) {
    EXPECT_EQ(p.file.find(".tmp-"), std::string::npos) << "a staging path: " << p.file;
    if (p.check != "stray-snapshot") continue;
    stray++;
    EXPECT_EQ(p.file, in + "/00000000000000000003.snapshot");
  }
  EXPECT_EQ(stray, 1);
  EXPECT_TRUE(fs::exists(in + "/00000000000000000003.snapshot"));
  EXPECT_FALSE(fs::exists(tmp.path() + "/out/txn-0/00000000000000000003.snapshot"));
  EXPECT_TRUE(fs::exists(tmp.path() + "/out/txn-0/00000000000000000015.snapshot"));  // at a segment base: kept
}

}  // namespace
}  // namespace klf
