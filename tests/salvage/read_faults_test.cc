// salvage reads its input through the Env it writes with: a segment that fails to read is not taken as
// absent (nor as damage to truncate at): the run fails naming the file, and leaves no --out and no
// staging directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "salvage/salvage.h"
#include "tests/support/fault_injection_env.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

const std::string kInput = std::string(KLF_FIXTURES_DIR) + "/kafka-oracle/b-txn/txn-0";

TEST(SalvageReadFaults, AFailedReadOfASegmentFailsTheRunAndLeavesNothing) {
  for (const char* file : {"00000000000000000000.log", "00000000000000000015.log"}) {
    SCOPED_TRACE(file);
    test::TempDir tmp("salvage-faults");
    SalvageResult result;
    std::string error;
    ASSERT_TRUE(SalvagePartition(Env::Default(), kInput, tmp.path() + "/clean", {}, &result, &error)) << error;
    EXPECT_TRUE(result.dropped.empty());

    FaultInjectionEnv faults(Env::Default());
    faults.FailRead(file, 10);
    error.clear();
    EXPECT_FALSE(SalvagePartition(&faults, kInput, tmp.path() + "/out", {}, &result, &error));
    EXPECT_NE(error.find(kInput + "/" + file), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(tmp.path() + "/out")) << "a failed run must not leave --out";
    for (const auto& e : fs::directory_iterator(tmp.path()))
      EXPECT_EQ(e.path().filename(), "clean") << "left behind: " << e.path();
  }
}

}  // namespace
}  // namespace klf
