// `klf consume PARTITION_DIR --isolation read_committed|read_uncommitted [--offsets A:B] [--json]
// [--bytes ...] [--partition T-P]`: exactly the records a consumer of this replica receives (spec
// scenarios.md §2.5, §6). The rules are partition/'s: LoadedLog loads the directory as LogLoader does
// (log start, high watermark, last stable offset, .txnindex), FetchLog fetches from the log start
// offset (or A) up to the high watermark (read_uncommitted) or the last stable offset (read_committed),
// drops aborted transactions as CompletedFetch does and never delivers control batches. This file
// parses and prints.
//
// Text: one line per record (cli/record_out.h). JSON: JSON Lines, one record object per record (the
// objects of `klf dump --json --per-record`), then one summary object {"type": "summary", ...}.
// Exit 1 when damage in a `.log` cuts what is served short (the records before it are printed and
// the damage is named with file and byte position); 3 when the partition cannot be read.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/output.h"
#include "cli/partition_paths.h"
#include "cli/record_out.h"
#include "partition/consumer_view.h"
#include "partition/loaded_log.h"

namespace klf::cli {
namespace {

struct ConsumeArgs {
  CommonOptions common;
  std::string isolation;
  std::string offsets;
  std::string dir;
  std::string partition;  // --partition T-P: which partition of a broker log directory
};

// NOLINTNEXTLINE(readability-function-cognitive-complexity): flag checks, then the fetch loop and its printer; flat
int RunConsume(const ConsumeArgs& a) {
  const bool json = a.common.json;
  int64_t from = std::numeric_limits<int64_t>::min(), to = std::numeric_limits<int64_t>::max();
  if (!a.offsets.empty() && !ParseOffsetRange(a.offsets, &from, &to)) {
    return Fail("consume", kExitUsage, "--offsets " + a.offsets + ": expected A:B, A:, :B or N with A <= B", json);
  }
  std::vector<std::string> dirs;
  std::string error;
  int exit_code = kExitUsage;
  if (!ResolveOnePartition({a.dir}, a.partition, &dirs, &error, &exit_code))
    return Fail("consume", exit_code, error, json);
  const std::string dir = dirs.front();

  LoadedLog log;
  NullSink quiet;  // index, snapshot and checkpoint problems are verify's; they change nothing served
  if (!LoadedLog::Open(dir, LoadOptions(), &log, &quiet, &error)) {
    return Fail("consume", kExitUnreadable, error, json);
  }
  const Isolation isolation = a.isolation == "read_committed" ? Isolation::kReadCommitted : Isolation::kReadUncommitted;
  FetchOptions fo;
  fo.fetch_offset = from;
  fo.last_offset = to;
  RecordSource source;
  if (log.tp) {
    source.topic = log.tp->topic;
    source.partition = log.tp->partition;
  }
  const BytesFormat bytes = a.common.bytes_format();
  Output out(1);
  uint64_t delivered = 0, aborted = 0;
  auto visit = [&](size_t segment, const BatchHeader& batch, const Record& record, const RecordDecoder& decoded,
                   Delivery d) {
    if (d == Delivery::kAborted) ++aborted;
    if (d != Delivery::kDelivered) return;
    ++delivered;
    if (json) {
      source.file = log.segments[segment].log_path;
      WriteRecordJson(&out, source, batch, record, decoded, bytes);
    } else {
      WriteRecordText(&out, batch, record, decoded, bytes);
    }
  };
  FetchEnd end;
  if (!FetchLog(log, isolation, fo, visit, &quiet, &end, &error)) {
    out.Flush();
    return Fail("consume", kExitUnreadable, error, json);
  }
  const int64_t bound = isolation == Isolation::kReadCommitted ? log.last_stable_offset : log.high_watermark;
  std::string damage_text;
  if (end.damage) {
    damage_text = fmt::format("{}: position {}: {} [{}]", end.damage->file, end.damage->position, end.damage->message,
                              end.damage->check);
  }
  if (json) {
    nlohmann::json j;
    j["type"] = "summary";
    j["path"] = dir;
    j["topic"] = source.topic ? nlohmann::json(*source.topic) : nlohmann::json(nullptr);
    j["partition"] = IntOrNull(source.partition);
    j["isolation"] = a.isolation;
    j["fetchOffset"] = std::max(from, log.log_start_offset);
    j["lastOffsetWanted"] = to == std::numeric_limits<int64_t>::max() ? nlohmann::json(nullptr) : nlohmann::json(to);
    j["logStartOffset"] = log.log_start_offset;
    j["highWatermark"] = log.high_watermark;
    j["lastStableOffset"] = log.last_stable_offset;
    j["logEndOffset"] = log.log_end_offset;
    j["endOffset"] = bound;  // the high watermark or the last stable offset: nothing at or above is served
    j["records"] = delivered;
    j["abortedRecordsSkipped"] = aborted;
    j["nextOffset"] = end.next_offset;
    j["truncatedByDamage"] = end.truncated;
    if (end.damage) {
      j["damage"] = {{"file", end.damage->file},
                     {"position", end.damage->position},
                     {"check", end.damage->check},
                     {"message", end.damage->message}};
    } else {
      j["damage"] = nullptr;
    }
    WriteJson(&out, j);
    out.Append('\n');
  }
  out.Flush();
  if (out.failed()) return kExitUnreadable;
  if (end.truncated) {
    PrintError("consume",
               fmt::format("damage ends what a consumer receives at offset {}: {}", end.next_offset, damage_text));
    return kExitProblems;
  }
  if (end.damage) {
    PrintError("consume", fmt::format("note: damage after everything served (at or above offset {}): {}",
                                      end.next_offset, damage_text));
  }
  return kExitOk;
}

}  // namespace

Command AddConsumeCommand(CLI::App* parent) {
  auto args = std::make_shared<ConsumeArgs>();
  CLI::App* app = parent->add_subcommand("consume", "Print exactly the records a consumer of this replica receives");
  app->footer(
      "Fetches from the log start offset (or A of --offsets) up to the high watermark (read_uncommitted) or the\n"
      "last stable offset (read_committed), as the broker loads the directory (checkpoints, .txnindex, producer\n"
      "state); read_committed drops the records of aborted transactions as Kafka's consumer does\n"
      "(CompletedFetch); control batches are never delivered. Text: one line per record (offset, timestamp\n"
      "with its ISO-8601 UTC time, key, value, headers). --json: one object per record (the objects of\n"
      "klf dump --json --per-record), then a summary object {\"type\": \"summary\", ...}. Damage in a .log\n"
      "ends what is served there, as Kafka's recovery truncates the log: the records before it are printed,\n"
      "the damage is named with file and byte position, exit 1. Exit 3 when the partition cannot be read.");
  app->add_option("PARTITION_DIR", args->dir, "partition directory, or a broker log directory with --partition")
      ->required();
  app->add_option("--isolation", args->isolation, "the consumer's isolation.level")
      ->check(CLI::IsMember({"read_committed", "read_uncommitted"}))
      ->required();
  app->add_option("--offsets", args->offsets,
                  "only offsets A..B (inclusive; also A:, :B or a single offset): the consumer starts fetching at A")
      ->type_name("A:B");
  app->add_option("--partition", args->partition, "with a broker log directory: the partition to consume")
      ->type_name("T-P");
  AddCommonOptions(app, &args->common);
  return {app, [args] { return RunConsume(*args); }};
}

}  // namespace klf::cli
