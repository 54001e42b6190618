// repair reads the replicas it copies from through the Env it writes with: a segment whose read fails
// makes the run fail, naming the file, and leaves no --out and no staging directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "repair/repair.h"
#include "segment_writer/file_writer.h"
#include "tests/support/replica_builder.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using test::Replica;
using test::TempDir;

// The `.log` files of partition directory `dir`.
std::vector<std::string> Logs(const std::string& dir) {
  std::vector<std::string> logs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".log") logs.push_back(e.path().string());
  return logs;
}

// Nothing but the replicas under tmp: no --out, no staging directory.
void ExpectNothingLeft(const TempDir& tmp) {
  EXPECT_FALSE(fs::exists(tmp.path() + "/out")) << "a failed run must not leave --out";
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "b1" || name == "b2" || name == "b3") << "left behind: " << e.path();
  }
}

TEST(RepairReadFaults, AFailedReadOfTheTargetFailsTheRepairedCopy) {
  TempDir tmp("repair-faults");
  // The target merged a poison record at 10 into the committed transaction at 12: the plan removes it.
  std::string t = Replica(tmp.path(), "b3")
                      .Txn(10, "poison", "x")
                      .Txn(12, "good", "data")
                      .Marker(13, ControlType::kCommit, 3)
                      .Write();
  std::string h1 = Replica(tmp.path(), "b1")
                       .Put(11, "other", "1")
                       .Txn(12, "good", "data")
                       .Marker(13, ControlType::kCommit, 3)
                       .Write();
  RepairPlan plan;
  std::string error;
  ASSERT_TRUE(PlanRepair({h1}, t, RepairOptions{}, &plan, &error)) << error;
  ASSERT_FALSE(plan.actions.empty());
  const std::vector<std::string> logs = Logs(t);
  ASSERT_EQ(logs.size(), 1u);

  FaultInjectionEnv faults(Env::Default());
  faults.FailRead(fs::path(logs[0]).filename().string(), 10);
  RepairResult result;
  EXPECT_FALSE(WriteRepairedCopy(&faults, plan, tmp.path() + "/out", RepairOptions{}, &result, &error));
  EXPECT_NE(error.find(logs[0]), std::string::npos) << error;
  ExpectNothingLeft(tmp);
}

TEST(RepairReadFaults, AFailedReadOfTheSourceFailsTheRebuiltCopy) {
  TempDir tmp("repair-faults");
  std::string t = Replica(tmp.path(), "b3").Txn(10, "k", "v").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h1 = Replica(tmp.path(), "b1").Put(11, "b", "1").Put(12, "a", "1").Put(14, "k", "w").Write();
  std::string h2 = Replica(tmp.path(), "b2").Put(11, "b", "1").Put(12, "a", "1").Put(14, "k", "w").Write();
  const std::vector<std::string> logs = Logs(h1);
  ASSERT_EQ(logs.size(), 1u);
  FaultInjectionEnv faults(Env::Default());
  faults.FailRead(logs[0], 10);  // the source's segment only (the other replicas' share its name)
  RepairResult result;
  std::string error;
  EXPECT_FALSE(WriteRebuiltCopy(&faults, h1, t, {h2}, tmp.path() + "/out", RepairOptions{}, &result, &error));
  EXPECT_NE(error.find(logs[0]), std::string::npos) << error;
  ExpectNothingLeft(tmp);
}

}  // namespace
}  // namespace klf
