// PartitionCheck: a log dir's partition verified on the pass that loads it (LoadedLog::Rider) gives the
// problems and stats VerifyPath of the log dir gives for it, whatever the load's own visitor does (reads
// every batch, skips the rest of each segment, stops), and when the rider cannot see every batch it
// verifies the partition alone with the same result.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "partition/loaded_log.h"
#include "segment_reader/layout.h"
#include "tests/support/test_files.h"
#include "verify/verify.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const std::string kFixtures = KLF_FIXTURES_DIR;

std::string Dump(const std::vector<Problem>& problems) {
  std::string s;
  for (const Problem& p : problems) {
    s += std::string(SeverityName(p.severity)) + " " + p.file + ":" + std::to_string(p.position) + " " + p.check +
         ": " + p.message + "\n";
  }
  return s;
}

// What the load's own visitor does with each segment.
enum class Load { kEveryBatch, kFirstBatchOfEachSegment, kStopAfterFirstBatch, kNoLoad };

struct Checked {
  std::vector<Problem> problems;
  VerifyStats stats;
  size_t partitions = 0, rode = 0;
};

// VerifyPath of `log_dir` without its partitions, then each partition with a PartitionCheck riding on a
// load that does `load`.
Checked RideAlong(const std::string& log_dir, Load load, const VerifyOptions& base = VerifyOptions()) {
  Checked run;
  CollectingSink sink;
  VerifyOptions options = base;
  options.verified_elsewhere = [](const std::string&) { return true; };
  run.stats = VerifyPath(log_dir, options, &sink);
  LogDir scanned;
  NullSink quiet;
  EXPECT_TRUE(ScanLogDir(log_dir, &scanned, &quiet));
  for (const PartitionDir& p : scanned.partitions) {
    ++run.partitions;
    PartitionCheck check(p.path, base);
    if (load != Load::kNoLoad) {
      LoadedLog log;
      std::string error;
      CollectingSink load_sink;
      if (LoadedLog::Open(p.path, LoadOptions(), &log, &load_sink, &error)) {
        LoadedLog::SegmentVisitor v;
        size_t seen = 0;
        v.batch = [&](size_t, const BatchView&) {
          ++seen;
          if (load == Load::kStopAfterFirstBatch) return LoadedLog::Step::kStop;
          if (load == Load::kFirstBatchOfEachSegment) return LoadedLog::Step::kNextSegment;
          return LoadedLog::Step::kNext;
        };
        log.ForEachBatch(v, &load_sink, &error, ReadOptions(), check.rider());
      }
    }
    run.stats.Add(check.Finish(&sink));
    run.rode += check.rode();
  }
  run.problems = std::move(sink.problems);
  return run;
}

Checked Whole(const std::string& log_dir, const VerifyOptions& options = VerifyOptions()) {
  Checked run;
  CollectingSink sink;
  run.stats = VerifyPath(log_dir, options, &sink);
  run.problems = std::move(sink.problems);
  return run;
}

void ExpectSame(const Checked& whole, const Checked& along, const std::string& what) {
  EXPECT_EQ(Dump(along.problems), Dump(whole.problems)) << what;
  EXPECT_EQ(along.stats.errors, whole.stats.errors) << what;
  EXPECT_EQ(along.stats.warnings, whole.stats.warnings) << what;
  EXPECT_EQ(along.stats.infos, whole.stats.infos) << what;
  EXPECT_EQ(along.stats.batches, whole.stats.batches) << what;
  EXPECT_EQ(along.stats.records, whole.stats.records) << what;
  EXPECT_EQ(along.stats.files_checked, whole.stats.files_checked) << what;
  EXPECT_EQ(along.stats.bytes_checked, whole.stats.bytes_checked) << what;
  EXPECT_EQ(along.stats.gaps_below_cleaner_checkpoint, whole.stats.gaps_below_cleaner_checkpoint) << what;
  EXPECT_EQ(along.stats.gaps_never_cleaned, whole.stats.gaps_never_cleaned) << what;
  EXPECT_EQ(along.stats.unreadable, whole.stats.unreadable) << what;
}

// Every broker log dir of the Kafka-made fixtures.
std::vector<std::string> FixtureLogDirs() {
  std::vector<std::string> out;
  for (const char* root : {"kafka-oracle", "kafka4"}) {
    for (auto it = fs::recursive_directory_iterator(kFixtures + "/" + root); it != fs::recursive_directory_iterator();
         ++it) {
      if (it->is_directory() && ClassifyPath(it->path().string()).kind == PathKind::kLogDir) {
        out.push_back(it->path().string());
        it.disable_recursion_pending();
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PartitionCheck, OnTheLoadsPassTheSameAsVerifyOfTheLogDir) {
  const std::vector<std::string> dirs = FixtureLogDirs();
  ASSERT_GE(dirs.size(), 20u);
  size_t rode = 0, partitions = 0;
  for (const std::string& d : dirs) {
    const Checked whole = Whole(d);
    for (Load load : {Load::kEveryBatch, Load::kFirstBatchOfEachSegment, Load::kStopAfterFirstBatch}) {
      const Checked along = RideAlong(d, load);
      ExpectSame(whole, along, d + " load " + std::to_string(int(load)));
      rode += along.rode;
      partitions += along.partitions;
    }
  }
  // Every partition of a Kafka-made log dir loads, so every check rode on its load.
  EXPECT_EQ(rode, partitions);
}

TEST(PartitionCheck, HeadersOnlyAndWithoutALoadTheSame) {
  VerifyOptions headers_only;
  headers_only.check_records = false;
  for (const std::string& d : FixtureLogDirs()) {
    ExpectSame(Whole(d, headers_only), RideAlong(d, Load::kEveryBatch, headers_only), d + " headers only");
    const Checked alone = RideAlong(d, Load::kNoLoad);
    ExpectSame(Whole(d), alone, d + " no load");
    EXPECT_EQ(alone.rode, 0u);  // nothing to ride on: each partition read alone
  }
}

// Damage the load and verify both meet: a CRC that fails, a batch cut short in a segment that is not
// the last, a torn tail, an index entry that points nowhere, a stray file; and a segment the load cannot
// read (a directory named like one), where the rider is incomplete and the partition is verified alone.
TEST(PartitionCheck, DamagedPartitionsTheSame) {
  TempDir tmp("partition-check", test::ScratchParent());
  const std::string log_dir = tmp.path() + "/broker";
  fs::create_directory(log_dir);
  const std::string source = kFixtures + "/kafka-oracle/replicas/aborted-to-committed/broker1/foo-0";
  for (int i = 0; i < 6; ++i) fs::copy(source, log_dir + "/foo-" + std::to_string(i), fs::copy_options::recursive);
  fs::copy(kFixtures + "/kafka-oracle/replicas/aborted-to-committed/broker1/replication-offset-checkpoint", log_dir);
  auto flip = [](const std::string& file, std::streamoff at) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(at);
    f.put(char(0x5a));
  };
  const std::string first = "/00000000000000000000.log";
  flip(log_dir + "/foo-1" + first, 100);
  fs::resize_file(log_dir + "/foo-2" + first, fs::file_size(log_dir + "/foo-2" + first) - 7);
  fs::resize_file(log_dir + "/foo-3/00000000000000000113.log",
                  fs::file_size(log_dir + "/foo-3/00000000000000000113.log") - 3);
  flip(log_dir + "/foo-4/00000000000000000047.index", 4);
  std::ofstream(log_dir + "/foo-4/notes.txt") << "x";
  fs::remove(log_dir + "/foo-5/00000000000000000070.log");
  fs::create_directory(log_dir + "/foo-5/00000000000000000070.log");

  const Checked whole = Whole(log_dir);
  ASSERT_GE(whole.stats.errors, 3u) << Dump(whole.problems);
  for (Load load : {Load::kEveryBatch, Load::kFirstBatchOfEachSegment, Load::kStopAfterFirstBatch}) {
    const Checked along = RideAlong(log_dir, load);
    ExpectSame(whole, along, "load " + std::to_string(int(load)));
    EXPECT_EQ(along.partitions, 6u);
    // foo-5 cannot be loaded (a segment that is a directory): verified alone. The others rode.
    EXPECT_EQ(along.rode, 5u) << "load " << int(load);
  }
}

}  // namespace
}  // namespace klf
