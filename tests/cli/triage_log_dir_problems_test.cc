// FinishLogDirProblems puts the log dirs' problems in the order verify of each log dir reports them:
// per log dir its own errors, then errors the copies' checks found outside their directories (by
// partition name), then the first file it could not read (its pass's, else the first copy's); at most
// 100 errors in all, as triage has always kept. LogDirPassProblems is the same without the copies.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "triage/triage.h"

namespace klf {
namespace {

TriageReport TwoLogDirs() {
  TriageReport r;
  r.log_dir_problems = {"from a digest"};  // digests' problems come first (TriageCapture's step 1)
  r.log_dir_verify.push_back({"/a", {"/a/cleaner-offset-checkpoint:0 x: bad"}, ""});
  r.log_dir_verify.push_back({"/b", {}, "/b/t-9: cannot list"});
  for (const char* name : {"t-0", "t-1"}) {
    TriagePartition p;
    p.name = name;
    for (const char* dir : {"/a", "/b"}) {
      TriageCopy c;
      c.log_dir = dir;
      c.path = std::string(dir) + "/" + name;
      p.copies.push_back(c);
    }
    p.damage.resize(2);
    r.partitions.push_back(p);
  }
  r.partitions[0].damage[0].other_files = {"/a/elsewhere:1 y: z"};
  r.partitions[1].damage[0].unreadable = "/a/t-1/00000000000000000000.log: gone";
  r.partitions[1].damage[1].unreadable = "/b/t-1/00000000000000000000.log: gone";
  return r;
}

TEST(TriageLogDirProblems, InVerifysOrder) {
  TriageReport r = TwoLogDirs();
  EXPECT_EQ(LogDirPassProblems(r), (std::vector<std::string>{"from a digest", "/a/cleaner-offset-checkpoint:0 x: bad",
                                                             "/b/t-9: cannot list"}));
  FinishLogDirProblems(&r);
  EXPECT_EQ(r.log_dir_problems,
            (std::vector<std::string>{"from a digest", "/a/cleaner-offset-checkpoint:0 x: bad", "/a/elsewhere:1 y: z",
                                      "/a/t-1/00000000000000000000.log: gone", "/b/t-9: cannot list"}));
  EXPECT_TRUE(r.log_dir_verify.empty());
}

TEST(TriageLogDirProblems, AtMostAHundredErrorsButEveryUnreadableLogDir) {
  TriageReport r = TwoLogDirs();
  r.log_dir_verify[0].problems.assign(150, "/a/x:0 y: z");
  FinishLogDirProblems(&r);
  ASSERT_EQ(r.log_dir_problems.size(), 102u);
  EXPECT_EQ(r.log_dir_problems[99], "/a/x:0 y: z");
  EXPECT_EQ(r.log_dir_problems[100], "/a/t-1/00000000000000000000.log: gone");
  EXPECT_EQ(r.log_dir_problems[101], "/b/t-9: cannot list");
}

}  // namespace
}  // namespace klf
