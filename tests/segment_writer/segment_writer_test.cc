// Segment and partition writers and `reindex` against Kafka's own files (kafka-oracle fixtures),
// plus the edge cases of the index and roll rules and fault injection.
#include "segment_writer/segment_writer.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "segment_reader/file.h"
#include "segment_reader/layout.h"
#include "segment_writer/batch_builder.h"
#include "tests/segment_writer/test_util.h"
#include "tests/support/fault_injection_env.h"
#include "tests/support/test_files.h"

namespace klf {
namespace {

namespace fs = std::filesystem;
using writer_test::Hex;
using writer_test::ListDir;
using writer_test::Oracle;
using writer_test::ReadFile;
using writer_test::TempDir;

// Partition directories Kafka wrote by appending only (never cleaned): a broker's recovery of them
// rebuilds exactly the files Kafka left.
const char* kUncleaned[] = {
    "a-keyed/keyed-none-0", "a-keyed/keyed-gzip-0", "a-keyed/keyed-snappy-0", "a-keyed/keyed-lz4-0",
    "a-keyed/keyed-zstd-0", "b-txn/txn-0",          "x-legacy/legacy-0",      "c-compact/pass0-before/compact-demo-0",
};

// Directories holding cleaned segments: .log files must still be copied byte for byte; their index
// files were written by the cleaner chunk by chunk, so recovery-style indexes differ there.
const char* kCleaned[] = {
    "b-txn/cleaned-now-plus-10min/txn-0",
    "c-compact/pass1/compact-demo-0",
    "c-compact/pass2-input/compact-demo-0",
    "c-compact/pass2/compact-demo-0",
    "x-legacy/cleaned/legacy-0",
    "replicas/aborted-to-committed/broker1/foo-0",
    "replicas/aborted-to-committed/broker2/foo-0",
    "replicas/aborted-to-committed/broker3/foo-0",
    "replicas/lost-tombstone-healthy-control/broker1/foo-0",
    "replicas/lost-tombstone-healthy-control/broker2/foo-0",
    "replicas/lost-tombstone-healthy-control/broker3/foo-0",
};

ReindexOptions OracleOptions() {
  ReindexOptions o;
  o.config.index_interval_bytes = 128;  // what every oracle fixture used
  return o;
}

TEST(Reindex, UncleanedOracleDirsAreReproducedByteForByte) {
  for (bool keep_epochs : {false, true}) {
    for (const char* name : kUncleaned) {
      SCOPED_TRACE(std::string(name) + (keep_epochs ? " (epochs kept)" : " (epochs from the log)"));
      TempDir tmp;
      std::string in = Oracle() + "/" + name;
      std::string out = tmp.path() + "/out";
      ReindexOptions o = OracleOptions();
      o.keep_leader_epoch_checkpoint = keep_epochs;
      CollectingSink sink;
      ReindexResult result;
      std::string error;
      ASSERT_TRUE(ReindexPartition(Env::Default(), in, out, o, &result, &sink, &error)) << error;
      EXPECT_TRUE(sink.problems.empty());
      // --out is a log directory: the partition directory under it keeps the input's name.
      const std::string part = result.out_partition_dir;
      EXPECT_EQ(part, out + "/" + fs::path(in).filename().string());
      // Every file Kafka wrote, and nothing else.
      EXPECT_EQ(ListDir(part), ListDir(in));
      for (const std::string& f : ListDir(in)) {
        EXPECT_EQ(Hex(ReadFile(part + "/" + f)), Hex(ReadFile(in + "/" + f))) << f;
      }
      EXPECT_EQ(result.files_written, ListDir(in));
      // Nothing left behind next to the output.
      EXPECT_EQ(ListDir(tmp.path()), std::vector<std::string>{"out"});
    }
  }
}

TEST(Reindex, CleanedDirsKeepLogsAndEpochCheckpoint) {
  for (const char* name : kCleaned) {
    SCOPED_TRACE(name);
    TempDir tmp;
    std::string in = Oracle() + "/" + name;
    std::string out = tmp.path() + "/out";
    CollectingSink sink;
    ReindexResult result;
    std::string error;
    ASSERT_TRUE(ReindexPartition(Env::Default(), in, out, OracleOptions(), &result, &sink, &error)) << error;
    const std::string part = result.out_partition_dir;
    int logs = 0;
    for (const std::string& f : ListDir(in)) {
      if (f.ends_with(".log") || f == "leader-epoch-checkpoint" || f == "partition.metadata") {
        ++logs;
        EXPECT_EQ(Hex(ReadFile(part + "/" + f)), Hex(ReadFile(in + "/" + f))) << f;
      }
      // Every segment keeps its index files.
      if (f.ends_with(".index") || f.ends_with(".timeindex")) {
        EXPECT_TRUE(fs::exists(part + "/" + f)) << f;
      }
    }
    EXPECT_GT(logs, 2);
  }
}

// The cleaner appends one chunk per read buffer; with Kafka's default buffer a small source segment
// is one chunk, so a cleaned segment made from one source segment has no offset-index entry and one
// time-index entry (cleaner spec §10.2). pass1's segments 0 and 7 are such segments.
TEST(SegmentWriter, OneChunkPerCleanerBufferReproducesCleanedIndexes) {
  std::string dir = Oracle() + "/c-compact/pass1/compact-demo-0";
  for (int64_t base : {0, 7}) {
    std::string path = dir + "/" + OffsetFileNamePrefix(base) + ".log";
    std::string error;
    auto file = MappedFile::Open(path, &error);
    ASSERT_TRUE(file) << error;
    NullSink sink;
    LogReader reader(path, file->data(), &sink);
    std::vector<BatchHeader> headers;
    BatchView b;
    while (reader.Next(&b)) headers.push_back(b.header);
    TempDir tmp;
    LogConfig config;
    config.index_interval_bytes = 128;
    auto seg = SegmentWriter::Create(Env::Default(), tmp.path(), base, config, &error);
    ASSERT_TRUE(seg) << error;
    ASSERT_TRUE(seg->Append(file->data(), ChunkInfoOf(headers), &error)) << error;
    ASSERT_TRUE(seg->Close(&error)) << error;
    for (const char* ext : {".log", ".index", ".timeindex"}) {
      std::string f = OffsetFileNamePrefix(base) + ext;
      EXPECT_EQ(Hex(ReadFile(tmp.path() + "/" + f)), Hex(ReadFile(dir + "/" + f))) << f;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Index rules

std::string MakeBatch(int64_t offset, int64_t ts, size_t value_size, BuiltBatch* built = nullptr) {
  std::string value(value_size, 'v');
  RecordInput r;
  r.offset = offset;
  r.timestamp = ts;
  r.key = AsBytes(std::string_view("k"));
  r.value = AsBytes(value);
  std::string out, error;
  V2BatchOptions o;
  o.base_offset = offset;
  o.partition_leader_epoch = 0;
  EXPECT_TRUE(AppendV2Batch(o, std::span<const RecordInput>(&r, 1), &out, built, &error)) << error;
  return out;
}

ChunkInfo InfoOf(const BuiltBatch& b) { return ChunkInfo{b.last_offset, b.max_timestamp, b.last_offset}; }

TEST(SegmentWriter, EmptySegmentHasEmptyFiles) {
  TempDir tmp;
  std::string error;
  auto seg = SegmentWriter::Create(Env::Default(), tmp.path(), 42, LogConfig{}, &error);
  ASSERT_TRUE(seg) << error;
  ASSERT_TRUE(seg->Close(&error)) << error;
  EXPECT_EQ(ListDir(tmp.path()), (std::vector<std::string>{"00000000000000000042.index", "00000000000000000042.log",
                                                           "00000000000000000042.timeindex"}));
  for (const std::string& f : ListDir(tmp.path())) EXPECT_EQ(fs::file_size(tmp.path() + "/" + f), 0u) << f;
}

TEST(SegmentWriter, ChunkOfExactlyIndexIntervalBytesAddsNoEntry) {
  // The rule is strictly greater: after one chunk of exactly index.interval.bytes no entry is due.
  BuiltBatch b0;
  std::string first = MakeBatch(0, 1000, 10, &b0);
  LogConfig config;
  config.index_interval_bytes = int32_t(first.size());
  TempDir tmp;
  std::string error;
  auto seg = SegmentWriter::Create(Env::Default(), tmp.path(), 0, config, &error);
  ASSERT_TRUE(seg->Append(AsBytes(first), InfoOf(b0), &error)) << error;
  BuiltBatch b1, b2;
  std::string second = MakeBatch(1, 2000, 10, &b1);
  ASSERT_TRUE(seg->Append(AsBytes(second), InfoOf(b1), &error)) << error;
  EXPECT_TRUE(seg->offset_index().empty());  // bytes since last entry == interval: not more
  std::string third = MakeBatch(2, 3000, 10, &b2);
  ASSERT_TRUE(seg->Append(AsBytes(third), InfoOf(b2), &error)) << error;
  ASSERT_EQ(seg->offset_index().size(), 1u);  // 2 × interval > interval
  EXPECT_EQ(seg->offset_index()[0], (OffsetIndexEntry{2, int32_t(first.size() + second.size())}));
  ASSERT_EQ(seg->time_index().size(), 1u);
  EXPECT_EQ(seg->time_index()[0], (TimeIndexEntry{3000, 2}));
  ASSERT_TRUE(seg->Close(&error));
  // One more byte of interval and the third chunk would not have been indexed either.
  EXPECT_EQ(fs::file_size(tmp.path() + "/00000000000000000000.index"), 8u);
  EXPECT_EQ(fs::file_size(tmp.path() + "/00000000000000000000.timeindex"), 12u);
}

TEST(SegmentWriter, ChunkEntryMapsLastOffsetOfChunkToItsStart) {
  // A follower-style chunk of two batches: the entry maps the chunk's LAST offset to its START.
  LogConfig config;
  config.index_interval_bytes = 0;
  TempDir tmp;
  std::string error;
  auto seg = SegmentWriter::Create(Env::Default(), tmp.path(), 0, config, &error);
  BuiltBatch b0, b1, b2;
  std::string first = MakeBatch(0, 5000, 4, &b0);
  ASSERT_TRUE(seg->Append(AsBytes(first), InfoOf(b0), &error));
  std::string chunk = MakeBatch(1, 7000, 4, &b1) + MakeBatch(2, 6000, 4, &b2);
  ChunkInfo info{2, 7000, 1};
  ASSERT_TRUE(seg->Append(AsBytes(chunk), info, &error)) << error;
  ASSERT_EQ(seg->offset_index().size(), 1u);
  EXPECT_EQ(seg->offset_index()[0], (OffsetIndexEntry{2, int32_t(first.size())}));
  EXPECT_EQ(seg->time_index().back(), (TimeIndexEntry{7000, 1}));
  // Offsets of index entries must increase.
  ASSERT_TRUE(seg->Append(AsBytes(MakeBatch(3, 1, 4)), ChunkInfo{2, 1, 2}, &error) == false);
}

TEST(SegmentWriter, RefusesOffsetsBeyondTheRelativeRange) {
  TempDir tmp;
  std::string error;
  auto seg = SegmentWriter::Create(Env::Default(), tmp.path(), 1000, LogConfig{}, &error);
  EXPECT_TRUE(seg->CanConvertToRelativeOffset(1000 + int64_t(INT32_MAX)));
  EXPECT_FALSE(seg->CanConvertToRelativeOffset(1000 + int64_t(INT32_MAX) + 1));
  EXPECT_FALSE(seg->CanConvertToRelativeOffset(999));
  std::string batch = MakeBatch(1000 + int64_t(INT32_MAX) + 1, 1, 1);
  EXPECT_FALSE(seg->Append(AsBytes(batch), ChunkInfo{1000 + int64_t(INT32_MAX) + 1, 1, 0}, &error));
  EXPECT_NE(error.find("relative"), std::string::npos) << error;
}

std::vector<std::string> LogsIn(const std::string& dir) {
  std::vector<std::string> logs;
  for (const std::string& f : ListDir(dir)) {
    if (f.ends_with(".log")) logs.push_back(f);
  }
  return logs;
}

TEST(PartitionWriter, RollsWhenTheOffsetIndexIsFull) {
  // segment.index.bytes = 24: 3 offset entries, 2 time entries (one kept for the roll) ⇒ the time
  // index is full after 1 entry; with index.interval.bytes = 0 every chunk after the first indexes.
  PartitionWriterOptions o;
  o.config.segment_index_bytes = 24;
  o.config.index_interval_bytes = 0;
  TempDir tmp;
  std::string error;
  auto w = PartitionWriter::Create(Env::Default(), tmp.path(), o, &error);
  for (int64_t i = 0; i < 6; ++i) {
    std::string b = MakeBatch(i, 1000 + i, 8);
    ASSERT_TRUE(w->AppendEntries(AsBytes(b), AppendGranularity::kPerBatch, &error)) << error;
  }
  ASSERT_TRUE(w->Close(&error)) << error;
  // Segment 0: chunk 0 (no entry), chunk 1 (entry, time index now full) ⇒ roll before chunk 2.
  EXPECT_EQ(LogsIn(tmp.path()), (std::vector<std::string>{"00000000000000000000.log", "00000000000000000002.log",
                                                          "00000000000000000004.log"}));
  EXPECT_EQ(fs::file_size(tmp.path() + "/00000000000000000000.index"), 8u);
  // The final time entry on roll is written even though the index was "full".
  EXPECT_EQ(fs::file_size(tmp.path() + "/00000000000000000000.timeindex"), 12u);
  // Snapshots at each roll and at the end (no producers: empty snapshots).
  for (const char* s :
       {"00000000000000000002.snapshot", "00000000000000000004.snapshot", "00000000000000000006.snapshot"}) {
    EXPECT_EQ(Hex(ReadFile(tmp.path() + "/" + s)), "000148674bc700000000") << s;
  }
  EXPECT_EQ(ReadFile(tmp.path() + "/leader-epoch-checkpoint"), "0\n1\n0 0\n");
}

TEST(PartitionWriter, RollsBySegmentBytesAndRelativeOffsets) {
  PartitionWriterOptions o;
  std::string b0 = MakeBatch(0, 1, 100);
  o.config.segment_bytes = int64_t(b0.size()) * 2;  // two batches fit, the third rolls
  TempDir tmp;
  std::string error;
  auto w = PartitionWriter::Create(Env::Default(), tmp.path(), o, &error);
  ASSERT_TRUE(w->AppendEntries(AsBytes(b0), AppendGranularity::kPerBatch, &error));
  ASSERT_TRUE(w->AppendEntries(AsBytes(MakeBatch(1, 2, 100)), AppendGranularity::kPerBatch, &error));
  ASSERT_TRUE(w->AppendEntries(AsBytes(MakeBatch(2, 3, 100)), AppendGranularity::kPerBatch, &error));
  // Offsets jump past the 32-bit relative range of segment 2: roll at the chunk's first offset.
  int64_t far = 2 + int64_t(INT32_MAX) + 1;
  ASSERT_TRUE(w->AppendEntries(AsBytes(MakeBatch(far, 4, 1)), AppendGranularity::kPerBatch, &error)) << error;
  ASSERT_TRUE(w->Close(&error)) << error;
  EXPECT_EQ(LogsIn(tmp.path()), (std::vector<std::string>{"00000000000000000000.log", "00000000000000000002.log",
                                                          OffsetFileNamePrefix(far) + ".log"}));
  EXPECT_EQ(w->log_end_offset(), far + 1);
  EXPECT_TRUE(fs::exists(tmp.path() + "/" + OffsetFileNamePrefix(far + 1) + ".snapshot"));
}

TEST(PartitionWriter, TransactionsGiveTxnIndexAndSnapshots) {
  // pid 1 opens a txn at 0; pid 2 opens one at 1; pid 1 aborts at 2 ⇒ LSO = 1 (pid 2 still open).
  PartitionWriterOptions o;
  TempDir tmp;
  std::string error;
  auto w = PartitionWriter::Create(Env::Default(), tmp.path(), o, &error);
  auto data = [&](int64_t offset, int64_t pid) {
    RecordInput r;
    r.offset = offset;
    r.timestamp = 1000 + offset;
    r.value = AsBytes(std::string_view("x"));
    V2BatchOptions b;
    b.base_offset = offset;
    b.producer_id = pid;
    b.producer_epoch = 0;
    b.base_sequence = 0;
    b.is_transactional = true;
    std::string out;
    EXPECT_TRUE(AppendV2Batch(b, std::span<const RecordInput>(&r, 1), &out, nullptr, &error));
    return out;
  };
  auto marker = [&](int64_t offset, int64_t pid, ControlType type) {
    EndTxnMarkerOptions m;
    m.offset = offset;
    m.producer_id = pid;
    m.timestamp = 1000 + offset;
    m.type = type;
    m.coordinator_epoch = 3;
    std::string out;
    EXPECT_TRUE(AppendEndTxnMarker(m, &out, nullptr, &error));
    return out;
  };
  std::string log = data(0, 1) + data(1, 2) + marker(2, 1, ControlType::kAbort);
  ASSERT_TRUE(w->AppendEntries(AsBytes(log), AppendGranularity::kPerBatch, &error)) << error;
  ASSERT_TRUE(w->Roll(3, &error)) << error;
  ASSERT_TRUE(w->AppendEntries(AsBytes(marker(3, 2, ControlType::kAbort)), AppendGranularity::kPerBatch, &error));
  ASSERT_TRUE(w->Close(&error)) << error;
  CollectingSink sink;
  TxnIndex t0 = ParseTxnIndex("t0", AsBytes(ReadFile(tmp.path() + "/00000000000000000000.txnindex")), &sink);
  ASSERT_EQ(t0.entries.size(), 1u);
  EXPECT_EQ(t0.entries[0], (AbortedTxn{0, 1, 0, 2, 1}));
  TxnIndex t3 = ParseTxnIndex("t3", AsBytes(ReadFile(tmp.path() + "/00000000000000000003.txnindex")), &sink);
  ASSERT_EQ(t3.entries.size(), 1u);
  EXPECT_EQ(t3.entries[0], (AbortedTxn{0, 2, 1, 3, 4}));
  ProducerSnapshot snap;
  ASSERT_TRUE(
      ParseProducerSnapshot("s", AsBytes(ReadFile(tmp.path() + "/00000000000000000003.snapshot")), 3, &snap, &sink));
  ASSERT_EQ(snap.entries.size(), 2u);
  EXPECT_EQ(snap.entries[0].producer_id, 1);
  EXPECT_EQ(snap.entries[0].current_txn_first_offset, -1);
  EXPECT_EQ(snap.entries[0].coordinator_epoch, 3);
  EXPECT_EQ(snap.entries[1].current_txn_first_offset, 1);
  EXPECT_EQ(sink.ErrorCount(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Output safety

TEST(Reindex, RefusesInputAndNonEmptyOutput) {
  TempDir tmp;
  std::string in = Oracle() + "/b-txn/txn-0";
  CollectingSink sink;
  ReindexResult result;
  std::string error;
  EXPECT_FALSE(ReindexPartition(Env::Default(), in, in, OracleOptions(), &result, &sink, &error));
  EXPECT_NE(error.find("input"), std::string::npos) << error;
  EXPECT_FALSE(ReindexPartition(Env::Default(), in, in + "/sub", OracleOptions(), &result, &sink, &error));
  std::string out = tmp.path() + "/out";
  fs::create_directory(out);
  writer_test::WriteFile(out + "/keep", "x");
  EXPECT_FALSE(ReindexPartition(Env::Default(), in, out, OracleOptions(), &result, &sink, &error));
  EXPECT_NE(error.find("not empty"), std::string::npos) << error;
  EXPECT_EQ(ListDir(out), std::vector<std::string>{"keep"});
  // --force replaces only a previous klf output (output_guard.h): not this directory.
  ReindexOptions force = OracleOptions();
  force.force = true;
  EXPECT_FALSE(ReindexPartition(Env::Default(), in, out, force, &result, &sink, &error));
  EXPECT_NE(error.find("not a klf output"), std::string::npos) << error;
  EXPECT_EQ(ListDir(out), std::vector<std::string>{"keep"});
  // A klf output is refused without --force and replaced with it.
  std::string out2 = tmp.path() + "/out2";
  ASSERT_TRUE(ReindexPartition(Env::Default(), in, out2, OracleOptions(), &result, &sink, &error)) << error;
  EXPECT_FALSE(ReindexPartition(Env::Default(), in, out2, OracleOptions(), &result, &sink, &error));
  EXPECT_NE(error.find("--force"), std::string::npos) << error;
  ASSERT_TRUE(ReindexPartition(Env::Default(), in, out2, force, &result, &sink, &error)) << error;
  EXPECT_EQ(ListDir(out2 + "/txn-0"), ListDir(in));
  EXPECT_TRUE(fs::exists(out2 + "/.klf-output"));
  EXPECT_EQ(ListDir(tmp.path()), (std::vector<std::string>{"out", "out2"}));
}

TEST(Reindex, CrashBeforeAnyRenameLeavesNoOutputDirectory) {
  std::string in = Oracle() + "/b-txn/txn-0";
  // Crash before the 1st, 2nd, ... rename, up to the directory rename itself.
  for (int renames = 0; renames < 40; ++renames) {
    SCOPED_TRACE(renames);
    TempDir tmp;
    std::string out = tmp.path() + "/out";
    FaultInjectionEnv env(Env::Default());
    env.CrashAfterRenames(renames);
    CollectingSink sink;
    ReindexResult result;
    std::string error;
    bool ok = ReindexPartition(&env, in, out, OracleOptions(), &result, &sink, &error);
    if (ok) {
      // Enough renames allowed: the run completed and the output is whole.
      EXPECT_FALSE(env.crashed());
      EXPECT_EQ(ListDir(out + "/txn-0"), ListDir(in));
      EXPECT_GT(renames, 15);
      break;
    }
    EXPECT_TRUE(env.crashed());
    EXPECT_FALSE(fs::exists(out)) << "a crashed run must not leave " << out;
  }
}

TEST(Reindex, ShortWriteAndFullDiskLeaveNothing) {
  std::string in = Oracle() + "/a-keyed/keyed-zstd-0";
  for (int mode = 0; mode < 3; ++mode) {
    SCOPED_TRACE(mode);
    TempDir tmp;
    std::string out = tmp.path() + "/out";
    FaultInjectionEnv env(Env::Default());
    if (mode == 0) env.FailShortWrite(".log.tmp");
    if (mode == 1) env.FailShortWrite(".snapshot.tmp");
    if (mode == 2) env.FailAfterBytes(700);
    CollectingSink sink;
    ReindexResult result;
    std::string error;
    EXPECT_FALSE(ReindexPartition(&env, in, out, OracleOptions(), &result, &sink, &error));
    EXPECT_FALSE(error.empty());
    EXPECT_FALSE(fs::exists(out));
    // The staging directory was cleaned up too (no crash here, just errors).
    EXPECT_TRUE(ListDir(tmp.path()).empty()) << ListDir(tmp.path()).front();
  }
}

TEST(FileWriter, AtomicFileIsInvisibleUntilCommit) {
  TempDir tmp;
  std::string path = tmp.path() + "/cleaner-offset-checkpoint";
  std::string error;
  {
    auto f = AtomicFile::Create(Env::Default(), path, &error);
    ASSERT_TRUE(f->Append(std::string_view("0\n0\n"), &error));
    EXPECT_FALSE(fs::exists(path));
    EXPECT_TRUE(fs::exists(path + ".tmp"));
  }  // not committed: the temporary file goes away
  EXPECT_TRUE(ListDir(tmp.path()).empty());
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, "0\n0\n", &error)) << error;
  EXPECT_EQ(ReadFile(path), "0\n0\n");
  EXPECT_EQ(ListDir(tmp.path()), std::vector<std::string>{"cleaner-offset-checkpoint"});
}

}  // namespace
}  // namespace klf

namespace klf {
namespace {

// Checkpoint files written back from their parsed entries equal Kafka's bytes.
TEST(CheckpointWriters, ReproduceKafkasFiles) {
  writer_test::TempDir tmp;
  std::string error;
  CollectingSink sink;
  std::string base = writer_test::Oracle() + "/c-compact/pass2-input";
  for (const char* name : {"cleaner-offset-checkpoint", "recovery-point-offset-checkpoint",
                           "replication-offset-checkpoint", "log-start-offset-checkpoint"}) {
    std::string text = writer_test::ReadFile(base + "/" + name);
    std::vector<OffsetCheckpointEntry> entries;
    ASSERT_TRUE(ParseOffsetCheckpoint(name, text, &entries, &sink)) << name;
    ASSERT_TRUE(WriteOffsetCheckpointFile(Env::Default(), tmp.path() + "/" + name, entries, &error)) << error;
    EXPECT_EQ(writer_test::ReadFile(tmp.path() + "/" + name), text) << name;
  }
  std::string part = base + "/compact-demo-0";
  std::vector<LeaderEpochEntry> epochs;
  std::string text = writer_test::ReadFile(part + "/leader-epoch-checkpoint");
  ASSERT_TRUE(ParseLeaderEpochCheckpoint("lec", text, &epochs, &sink));
  ASSERT_TRUE(WriteLeaderEpochCheckpointFile(Env::Default(), tmp.path(), epochs, &error)) << error;
  EXPECT_EQ(writer_test::ReadFile(tmp.path() + "/leader-epoch-checkpoint"), text);
  PartitionMetadata metadata;
  text = writer_test::ReadFile(part + "/partition.metadata");
  ASSERT_TRUE(ParsePartitionMetadata("pm", text, &metadata, &sink));
  ASSERT_TRUE(WritePartitionMetadataFile(Env::Default(), tmp.path(), metadata, &error)) << error;
  EXPECT_EQ(writer_test::ReadFile(tmp.path() + "/partition.metadata"), text);
  EXPECT_EQ(sink.ErrorCount(), 0u);
  // Nothing but the files themselves (no .tmp left).
  EXPECT_EQ(writer_test::ListDir(tmp.path()).size(), 6u);
}

}  // namespace
}  // namespace klf

namespace klf {
namespace {

// A preallocated segment after a crash ends in zeros: the copy keeps every byte, the indexes are those
// of the valid batches, and the tail is reported (LevelDB-style corruption_test: damage, rerun, assert).
TEST(Reindex, ZeroTailIsCopiedAndReportedButNotIndexed) {
  writer_test::TempDir tmp;
  std::string in = tmp.path() + "/txn-0";
  test::CopyWritable(writer_test::Oracle() + "/b-txn/txn-0", in);
  std::string last = in + "/00000000000000000015.log";
  std::string damaged = writer_test::ReadFile(last) + std::string(1000, '\0');
  writer_test::WriteFile(last, damaged);
  std::string out = tmp.path() + "/out";
  CollectingSink sink;
  ReindexResult result;
  std::string error;
  ASSERT_TRUE(ReindexPartition(Env::Default(), in, out, OracleOptions(), &result, &sink, &error)) << error;
  out = result.out_partition_dir;
  ASSERT_EQ(sink.problems.size(), 1u);
  EXPECT_EQ(sink.problems[0].check, "reindex-tail");
  EXPECT_EQ(sink.problems[0].position, 146u);
  EXPECT_EQ(sink.problems[0].file, last);
  EXPECT_EQ(writer_test::ReadFile(out + "/00000000000000000015.log"), damaged);
  std::string oracle = writer_test::Oracle() + "/b-txn/txn-0";
  for (const char* f :
       {"00000000000000000015.index", "00000000000000000015.timeindex", "00000000000000000017.snapshot"}) {
    EXPECT_EQ(writer_test::ReadFile(out + "/" + f), writer_test::ReadFile(oracle + "/" + f)) << f;
  }
  EXPECT_EQ(result.log_end_offset, 17);
}

// A tail longer than the reader's window (1 MiB) is copied window by window, byte for byte.
TEST(Reindex, LongGarbageTailIsCopiedWhole) {
  writer_test::TempDir tmp;
  std::string in = tmp.path() + "/keyed-none-0";
  test::CopyWritable(writer_test::Oracle() + "/a-keyed/keyed-none-0", in);
  std::string last = in + "/00000000000000000024.log";
  std::string original = writer_test::ReadFile(last);
  std::string tail(5 * (1 << 19) + 13, '\0');
  for (size_t i = 0; i < tail.size(); ++i) tail[i] = char(0x80 | (i * 37 % 127));  // size field < 0: invalid
  writer_test::WriteFile(last, original + tail);
  std::string out = tmp.path() + "/out";
  CollectingSink sink;
  ReindexResult result;
  std::string error;
  ASSERT_TRUE(ReindexPartition(Env::Default(), in, out, OracleOptions(), &result, &sink, &error)) << error;
  out = result.out_partition_dir;
  ASSERT_EQ(sink.problems.size(), 1u);
  EXPECT_EQ(sink.problems[0].check, "reindex-tail");
  EXPECT_EQ(sink.problems[0].position, original.size());
  EXPECT_TRUE(writer_test::ReadFile(out + "/00000000000000000024.log") == original + tail);
  std::string oracle = writer_test::Oracle() + "/a-keyed/keyed-none-0";
  for (const char* f : {"00000000000000000024.index", "00000000000000000024.timeindex"}) {
    EXPECT_EQ(writer_test::ReadFile(out + "/" + f), writer_test::ReadFile(oracle + "/" + f)) << f;
  }
}

}  // namespace
}  // namespace klf
