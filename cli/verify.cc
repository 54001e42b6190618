// `klf verify [--json] [--threads N] [--headers-only] PATH...`: checks files, partition directories
// and broker log directories (spec cli.md "verify"; the checks are verify/verify.h's).
//
// Text: one line per problem, "<severity> <file>:<position> <check>: <message>", then a summary on
// stderr. JSON: {"problems": [{"file", "position", "check", "message", "severity"}], "filesChecked",
// "bytesChecked", "errors", "warnings", "infos"}.
// Exit: 3 when a PATH, or a file in it, could not be read; else 1 when any problem is an error; else 0 (warnings
// and infos are routine for Kafka data: a torn tail of the active segment, missing index files Kafka
// rebuilds, compaction gaps fetched from a leader). cli.md says "exit 1 when any problem is found";
// issue 3 refines it to errors (README, "verify").
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/command.h"
#include "cli/partition_paths.h"
#include "cli/output.h"
#include "verify/verify.h"

namespace klf::cli {
namespace {

struct VerifyArgs {
  CommonOptions common;
  int threads = 0;
  bool headers_only = false;
  bool all = false;
  std::vector<std::string> paths;
};

// Prints problems as they arrive (VerifyPath forwards them from one thread at a time). In text, a check
// that repeats rolls up: its first kShownPerCheck problems print as they come, the rest are counted and
// summed up at the end ("847 x missing-index in 312 directories; first: ..."); --all prints each. JSON
// always lists every problem (cli.md).
class PrintingSink : public ProblemSink {
 public:
  static constexpr uint64_t kShownPerCheck = 3;

  PrintingSink(Output* out, bool json, bool all) : out_(out), json_(json), all_(all) {}
  void Report(const Problem& p) override {
    ++count_;
    if (json_) {
      out_->Append(count_ == 1 ? "\n  {\"file\": " : ",\n  {\"file\": ");
      out_->AppendJsonString(p.file);
      out_->Append(", \"position\": ");
      out_->AppendUint(p.position);
      out_->Append(", \"check\": ");
      out_->AppendJsonString(p.check);
      out_->Append(", \"message\": ");
      out_->AppendJsonString(p.message);
      out_->Append(", \"severity\": \"");
      out_->Append(SeverityName(p.severity));
      out_->Append("\"}");
      return;
    }
    Rollup& r = rollups_[{p.severity, p.check}];
    ++r.count;
    r.dirs.insert(std::filesystem::path(p.file).parent_path().string());
    if (all_ || r.count <= kShownPerCheck) {
      PrintLine(p);
    } else if (r.count == kShownPerCheck + 1) {
      r.first_hidden = p;
    }
  }
  uint64_t count() const { return count_; }

  // The roll-up lines, one per check with problems not printed.
  void PrintRollups() {
    if (all_) return;
    for (const auto& [key, r] : rollups_) {
      if (r.count <= kShownPerCheck) continue;
      out_->Append(SeverityName(key.first));
      out_->Append(fmt::format(" {} x {} in {} director{} ({} more not shown; first: {}:{} {}); --all lists each\n",
                               r.count, key.second, r.dirs.size(), r.dirs.size() == 1 ? "y" : "ies",
                               r.count - kShownPerCheck, EscapeInvalidUtf8(r.first_hidden.file),
                               r.first_hidden.position, EscapeInvalidUtf8(r.first_hidden.message)));
    }
  }

 private:
  struct Rollup {
    uint64_t count = 0;
    std::set<std::string> dirs;  // directories holding the files (partitions, log dirs)
    Problem first_hidden;
  };

  void PrintLine(const Problem& p) {
    out_->Append(SeverityName(p.severity));
    out_->Append(p.severity == Severity::kInfo ? "    " : p.severity == Severity::kError ? "   " : " ");
    out_->Append(EscapeInvalidUtf8(p.file));
    out_->Append(':');
    out_->AppendUint(p.position);
    out_->Append(' ');
    out_->Append(p.check);
    out_->Append(": ");
    out_->Append(EscapeInvalidUtf8(p.message));
    out_->Append('\n');
  }

  Output* out_;
  bool json_;
  bool all_;
  uint64_t count_ = 0;
  std::map<std::pair<Severity, std::string>, Rollup> rollups_;
};

int Run(const VerifyArgs& args) {
  std::vector<std::string> paths = args.paths;
  std::string capture_error;
  if (!PrepareCapturePaths(&paths, /*expand_roots=*/true, &capture_error))
    return Fail("verify", kExitUnreadable, capture_error, args.common.json);
  VerifyOptions options;
  options.threads = args.threads;
  options.check_records = !args.headers_only;
  Output out(1);
  PrintingSink sink(&out, args.common.json, args.all);
  if (args.common.json) out.Append("{\"problems\": [");
  VerifyStats total;
  std::vector<std::string> unreadable;
  for (const std::string& path : paths) {
    VerifyStats s = VerifyPath(NamedPath(path), options, &sink);
    if (s.unreadable) unreadable.push_back(s.unreadable_reason);
    total.Add(s);
  }
  if (!args.common.json) sink.PrintRollups();
  if (args.common.json) {
    out.Append(sink.count() == 0 ? "],\n" : "\n],\n");
    out.Append(
        fmt::format(" \"filesChecked\": {}, \"bytesChecked\": {}, \"batches\": {}, \"records\": {},\n"
                    " \"errors\": {}, \"warnings\": {}, \"infos\": {}, \"unreadable\": [",
                    total.files_checked, total.bytes_checked, total.batches, total.records, total.errors,
                    total.warnings, total.infos));
    for (size_t i = 0; i < unreadable.size(); ++i) {
      if (i) out.Append(", ");
      out.AppendJsonString(unreadable[i]);
    }
    out.Append("]");
    // An unreadable PATH fails the run (exit 3): the report carries the error object's fields too
    // (README "Conventions").
    if (!unreadable.empty()) {
      out.Append(", \"error\": ");
      out.AppendJsonString(unreadable.front());
      out.Append(", \"command\": \"verify\", \"exitCode\": 3");
    }
    out.Append("}\n");
  }
  out.Flush();
  for (const std::string& u : unreadable) PrintError("verify", u);
  if (!args.common.json) {
    std::fprintf(stderr,
                 "klf verify: %llu error%s, %llu warning%s, %llu info in %llu files (%llu bytes, %llu batches, %llu "
                 "records)\n",
                 (unsigned long long)total.errors, total.errors == 1 ? "" : "s", (unsigned long long)total.warnings,
                 total.warnings == 1 ? "" : "s", (unsigned long long)total.infos,
                 (unsigned long long)total.files_checked, (unsigned long long)total.bytes_checked,
                 (unsigned long long)total.batches, (unsigned long long)total.records);
  }
  if (!unreadable.empty() || out.failed()) return kExitUnreadable;
  return total.errors > 0 ? kExitProblems : kExitOk;
}

}  // namespace

Command AddVerifyCommand(CLI::App* parent) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* app = parent->add_subcommand(
      "verify", "Check CRCs, framing, offsets, indexes, snapshots, checkpoints and leftovers; report every problem");
  app->footer(
      "Checks every batch (CRC, framing, records), offsets across batches and segments (gaps below the\n"
      "cleaner checkpoint are compaction; elsewhere they are reported as info), .index/.timeindex/.txnindex\n"
      "entries against the log, producer snapshots against the state rebuilt from the log, checkpoint\n"
      "files, leftover .cleaned/.swap/.deleted files and torn or zero-filled tails. Each problem has a\n"
      "severity (error, warning, info) and names file and byte position. Exit 1 only when there is an\n"
      "error; 3 when a PATH, or a file in it, cannot be read (a FIFO, a directory or a symlink loop named\n"
      "like a segment, no permission). A log directory's partitions are checked in parallel.");
  AddCommonOptions(app, &args->common, /*with_bytes=*/false);
  app->add_option("--threads", args->threads, "Partitions verified at once (default: one per core)")
      ->check(CLI::Range(0, 256));
  app->add_flag("--headers-only", args->headers_only, "Only framing, CRCs and batch headers (do not decode records)");
  app->add_flag("--all", args->all,
                "Print every problem (text); by default a check's problems after its first 3 are summed up");
  app->add_option("PATH", args->paths, "Files, partition directories or broker log directories")
      ->required()
      ->type_name("PATH");
  return {app, [args]() { return Run(*args); }};
}

}  // namespace klf::cli
