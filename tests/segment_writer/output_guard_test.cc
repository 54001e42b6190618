// The output guard (output_guard.h) and scratch cleanup (scratch.h): every hostile output path of
// issue 15 is refused with both paths named, --force replaces only klf's own outputs, symlinks are
// followed before comparing, names from data are checked before they become paths, and scratch goes
// away on signals and after a killed run.
#include "segment_writer/output_guard.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "segment_writer/file_writer.h"
#include "segment_writer/scratch.h"
#include "tests/segment_writer/test_util.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using writer_test::ReadFile;
using writer_test::TempDir;
using writer_test::WriteFile;

// A broker log dir with one partition directory, as klf reads them.
struct LogDir {
  explicit LogDir(const std::string& root) : dir(root + "/broker1"), part(dir + "/foo-0") {
    fs::create_directories(part);
    WriteFile(dir + "/cleaner-offset-checkpoint", "0\n1\nfoo 0 0\n");
    WriteFile(part + "/00000000000000000000.log", "data");
  }
  std::string dir, part;
};

bool Check(const std::string& out, std::vector<std::string> inputs, bool force, std::string* error,
           OutputKind kind = OutputKind::kDirectory) {
  return CheckOutputPath({out, kind, std::move(inputs), force}, nullptr, error);
}

TEST(ResolvePath, FollowsEveryLinkAndKeepsTheMissingTail) {
  TempDir tmp;
  const std::string t = ResolvePath(tmp.path());  // /tmp itself may be a link
  fs::create_directories(t + "/a/b");
  fs::create_directory_symlink(t + "/a", t + "/abs");
  fs::create_directory_symlink("a/b", t + "/rel");
  fs::create_symlink("nowhere/x", t + "/dangling");
  EXPECT_EQ(ResolvePath(t + "/abs/b"), t + "/a/b");
  EXPECT_EQ(ResolvePath(t + "/rel/../b/new/dir/"), t + "/a/b/new/dir");
  EXPECT_EQ(ResolvePath(t + "/abs/./b/../../rel"), t + "/a/b");
  EXPECT_EQ(ResolvePath(t + "/dangling"), t + "/nowhere/x");
  EXPECT_EQ(ResolvePath("/"), "/");
}

TEST(OutputGuard, RefusesTheInputAnythingInsideItAndAnythingHoldingIt) {
  TempDir tmp;
  LogDir b(tmp.path());
  std::string error;
  EXPECT_FALSE(Check(b.part, {b.part}, true, &error));
  EXPECT_NE(error.find("is the input " + b.part), std::string::npos) << error;
  EXPECT_FALSE(Check(b.part + "/sub", {b.part}, true, &error));
  EXPECT_NE(error.find("lies inside the input"), std::string::npos) << error;
  EXPECT_FALSE(Check(tmp.path(), {b.part}, true, &error));
  EXPECT_NE(error.find("would contain the input"), std::string::npos) << error;
  // A file input (simulate's timeline): its folder holds it.
  WriteFile(tmp.path() + "/t.json", "{}");
  EXPECT_FALSE(Check(tmp.path(), {tmp.path() + "/t.json"}, true, &error));
  EXPECT_NE(error.find(tmp.path() + "/t.json"), std::string::npos) << error;
  // A segment as the --html report.
  EXPECT_FALSE(Check(b.part + "/00000000000000000000.log", {b.part}, true, &error, OutputKind::kFile));
  EXPECT_TRUE(Check(tmp.path() + "/elsewhere", {b.part}, false, &error)) << error;
}

TEST(OutputGuard, TheParentBrokerLogDirOfAPartitionIsAnInput) {
  TempDir tmp;
  LogDir b(tmp.path());
  std::string error;
  // Another partition of the same log dir, or a new directory in it: refused.
  fs::create_directories(b.dir + "/bar-0");
  EXPECT_FALSE(Check(b.dir + "/bar-0", {b.part}, true, &error));
  EXPECT_NE(error.find("broker log directory of the input " + b.part), std::string::npos) << error;
  EXPECT_FALSE(Check(b.dir + "/out", {b.part}, false, &error));
  EXPECT_EQ(GuardedInputs({b.part}), (std::vector<std::string>{ResolvePath(b.part), ResolvePath(b.dir)}));
  // Without log-dir files the parent is just a folder.
  fs::remove(b.dir + "/cleaner-offset-checkpoint");
  EXPECT_TRUE(Check(b.dir + "/out", {b.part}, false, &error)) << error;
  for (const char* f : {"recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                        "log-start-offset-checkpoint", "meta.properties"}) {
    WriteFile(b.dir + "/" + f, "");
    EXPECT_FALSE(Check(b.dir + "/out", {b.part}, false, &error)) << f;
    fs::remove(b.dir + "/" + f);
  }
}

TEST(OutputGuard, SymlinksAreFollowedBeforeComparing) {
  TempDir tmp;
  LogDir b(tmp.path());
  std::string error;
  // --out is a symlink to the input.
  fs::create_directory_symlink(b.part, tmp.path() + "/link-to-input");
  EXPECT_FALSE(Check(tmp.path() + "/link-to-input", {b.part}, true, &error));
  EXPECT_NE(error.find(tmp.path() + "/link-to-input (resolves to "), std::string::npos) << error;
  EXPECT_NE(error.find(b.part), std::string::npos) << error;
  // --out's parent is a symlink into the input's log dir.
  fs::create_directory_symlink(b.dir, tmp.path() + "/link-to-logdir");
  EXPECT_FALSE(Check(tmp.path() + "/link-to-logdir/new-out", {b.part}, true, &error));
  // The input is named through a symlink, the output directly.
  EXPECT_FALSE(Check(b.part + "/x", {tmp.path() + "/link-to-input"}, true, &error));
  // A dangling symlink is not written through.
  fs::create_directory_symlink(tmp.path() + "/missing", tmp.path() + "/dangling");
  EXPECT_FALSE(Check(tmp.path() + "/dangling", {b.part}, true, &error));
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
}

TEST(OutputGuard, ForceReplacesOnlyAPreviousKlfOutput) {
  TempDir tmp;
  std::string error;
  const std::string out = tmp.path() + "/out";
  fs::create_directory(out);
  EXPECT_TRUE(Check(out, {}, false, &error)) << "an empty directory holds nothing to lose: " << error;
  WriteFile(out + "/precious", "x");
  EXPECT_FALSE(Check(out, {}, false, &error));
  EXPECT_FALSE(Check(out, {}, true, &error));
  EXPECT_NE(error.find("not a klf output"), std::string::npos) << error;
  WriteFile(out + "/" + kOutputMarkerName, "something else\n");
  EXPECT_FALSE(Check(out, {}, true, &error)) << "a marker file with other content is not klf's";
  WriteFile(out + "/" + kOutputMarkerName, OutputMarkerContent("compact"));
  EXPECT_FALSE(Check(out, {}, false, &error));
  EXPECT_NE(error.find("use --force"), std::string::npos) << error;
  EXPECT_TRUE(Check(out, {}, true, &error)) << error;
  // A file where a directory goes, and the other way round.
  WriteFile(tmp.path() + "/file", "x");
  EXPECT_FALSE(Check(tmp.path() + "/file", {}, true, &error));
  EXPECT_FALSE(Check(out, {}, true, &error, OutputKind::kFile));
}

TEST(OutputGuard, HtmlReportsAreReplacedOnlyWhenKlfWroteThem) {
  TempDir tmp;
  std::string error;
  const std::string html = tmp.path() + "/report.html";
  WriteFile(html, "<!DOCTYPE html>\n<html>mine</html>\n");
  EXPECT_FALSE(Check(html, {}, true, &error, OutputKind::kFile));
  WriteFile(html, "<!DOCTYPE html>\n" + std::string(kHtmlOutputMarker) + " -->\n<html></html>\n");
  EXPECT_FALSE(Check(html, {}, false, &error, OutputKind::kFile));
  EXPECT_TRUE(Check(html, {}, true, &error, OutputKind::kFile)) << error;
  WriteFile(html, "");
  EXPECT_TRUE(Check(html, {}, false, &error, OutputKind::kFile)) << error;
}

TEST(StagedDirectory, MarksItsOutputAndReplacesItWithForce) {
  TempDir tmp;
  std::string error;
  const std::string out = tmp.path() + "/out";
  for (bool force : {false, true}) {
    StagedDirectory::Options o;
    o.force = force;
    auto d = StagedDirectory::Create(Env::Default(), out, o, &error);
    ASSERT_TRUE(d) << error;
    WriteFile(d->path() + "/data", force ? "second" : "first");
    ASSERT_TRUE(d->Commit(&error)) << error;
  }
  EXPECT_TRUE(IsKlfOutput(out, OutputKind::kDirectory));
  EXPECT_EQ(ReadFile(out + "/data"), "second");
  EXPECT_EQ(writer_test::ListDir(tmp.path()), std::vector<std::string>{"out"});
  // Written through a symlink: the target is replaced, the link stays a link.
  fs::create_directory_symlink(out, tmp.path() + "/link");
  StagedDirectory::Options o;
  o.force = true;
  auto d = StagedDirectory::Create(Env::Default(), tmp.path() + "/link", o, &error);
  ASSERT_TRUE(d) << error;
  WriteFile(d->path() + "/data", "third");
  ASSERT_TRUE(d->Commit(&error)) << error;
  EXPECT_TRUE(fs::is_symlink(tmp.path() + "/link"));
  EXPECT_EQ(ReadFile(out + "/data"), "third");
}

TEST(StagedDirectory, RefusesWhatTheGuardRefuses) {
  TempDir tmp;
  LogDir b(tmp.path());
  std::string error;
  StagedDirectory::Options o;
  o.force = true;
  o.inputs = {b.part};
  EXPECT_FALSE(StagedDirectory::Create(Env::Default(), b.dir + "/bar-0", o, &error));
  EXPECT_FALSE(fs::exists(b.dir + "/bar-0"));
  EXPECT_EQ(writer_test::ListDir(b.dir), (std::vector<std::string>{"cleaner-offset-checkpoint", "foo-0"}));
}

TEST(ValidateTopicName, KafkasRule) {
  std::string error;
  for (const char* ok : {"foo", "a.b_c-D9", "__consumer_offsets", "..."}) {
    EXPECT_TRUE(ValidateTopicName(ok, &error)) << ok;
  }
  for (const char* bad : {"", ".", "..", "../../../../elsewhere/victim", "a/b", "a b", "tab\t", "caf\xc3\xa9"}) {
    EXPECT_FALSE(ValidateTopicName(bad, &error)) << bad;
  }
  EXPECT_TRUE(ValidateTopicName(std::string(249, 'x'), &error));
  EXPECT_FALSE(ValidateTopicName(std::string(250, 'x'), &error));
  EXPECT_FALSE(ValidateTopicName(std::string("a\0b", 3), &error));
  EXPECT_FALSE(ValidatePathComponent("..", &error));
  EXPECT_FALSE(ValidatePathComponent("a/b", &error));
  EXPECT_TRUE(ValidatePathComponent("foo-0", &error));
}

// A pid that no process has (a child that has exited and been reaped).
pid_t DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST(Scratch, StaleScratchOfADeadRunIsRemovedOthersAreKept) {
  TempDir tmp;
  const std::string dead = tmp.path() + "/klf-simulate-" + std::to_string(DeadPid()) + "-abc123";
  const std::string live = tmp.path() + "/klf-simulate-" + std::to_string(getppid()) + "-abc123";
  const std::string mine = ScratchPrefix(tmp.path() + "/klf-simulate-") + "xyz789";
  const std::string other_shape = tmp.path() + "/klf-simulate-Ab12Cd";  // an older klf's name: no pid
  for (const std::string& d : {dead, live, mine, other_shape}) fs::create_directories(d + "/sub");
  WriteFile(dead + "/sub/f", "x");
  RemoveStaleScratch(tmp.path(), "klf-simulate-");
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(mine));
  EXPECT_TRUE(fs::exists(other_shape));
}

TEST(Scratch, SignalSafeRemovalRemovesATree) {
  TempDir tmp;
  const std::string root = tmp.path() + "/tree";
  for (int i = 0; i < 300; ++i) {
    fs::create_directories(root + "/d" + std::to_string(i % 7) + "/e");
    WriteFile(root + "/d" + std::to_string(i % 7) + "/e/file" + std::to_string(i), "x");
  }
  fs::create_symlink("/", root + "/d0/link-to-root");  // removed as a link, never followed
  RemoveTreeSignalSafe(root.c_str());
  EXPECT_FALSE(fs::exists(root));
  RemoveTreeSignalSafe((tmp.path() + "/missing").c_str());  // nothing there: no harm
}

TEST(Scratch, ASignalRemovesRegisteredScratchAndStillKills) {
  TempDir tmp;
  const std::string scratch = tmp.path() + "/scratch";
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    fs::create_directories(scratch + "/a/b");
    WriteFile(scratch + "/a/b/f", "x");
    pid_t pid = fork();
    if (pid == 0) {
      RegisterScratch(scratch);
      raise(sig);
      _exit(0);  // not reached: the signal still terminates the process
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << sig;
    EXPECT_FALSE(fs::exists(scratch)) << sig;
  }
  // Unregistered scratch (committed, or removed by its owner) is left alone.
  fs::create_directories(scratch);
  pid_t pid = fork();
  if (pid == 0) {
    RegisterScratch(scratch);
    UnregisterScratch(scratch);
    raise(SIGTERM);
    _exit(0);
  }
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(fs::exists(scratch));
}

}  // namespace
}  // namespace klf
