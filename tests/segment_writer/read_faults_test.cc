// reindex reads its input through the Env it writes with: a segment whose read fails makes the run fail,
// naming the file, and leaves no --out and no staging directory (the input is only read).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/fault_injection_env.h"
#include "segment_writer/segment_writer.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;

const std::string kInput = std::string(KLF_FIXTURES_DIR) + "/kafka-oracle/b-txn/txn-0";

TEST(ReindexReadFaults, AFailedReadOfTheInputFailsTheRunAndLeavesNothing) {
  for (const char* file : {"00000000000000000007.log", "00000000000000000015.log", "partition.metadata"}) {
    SCOPED_TRACE(file);
    test::TempDir tmp("reindex-faults");
    ReindexOptions o;
    o.config.index_interval_bytes = 128;
    ReindexResult result;
    CollectingSink sink;
    std::string error;
    ASSERT_TRUE(ReindexPartition(Env::Default(), kInput, tmp.path() + "/clean", o, &result, &sink, &error)) << error;

    FaultInjectionEnv faults(Env::Default());
    faults.FailRead(file, 10);
    error.clear();
    EXPECT_FALSE(ReindexPartition(&faults, kInput, tmp.path() + "/out", o, &result, &sink, &error));
    EXPECT_NE(error.find(kInput + "/" + file), std::string::npos) << error;
    EXPECT_GT(faults.read_calls(), 0u);
    EXPECT_FALSE(fs::exists(tmp.path() + "/out")) << "a failed run must not leave --out";
    for (const auto& e : fs::directory_iterator(tmp.path()))
      EXPECT_EQ(e.path().filename(), "clean") << "left behind: " << e.path();
  }
}

}  // namespace
}  // namespace klf
