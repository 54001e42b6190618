// What every klf subcommand shares: exit codes, the common options, and how a subcommand plugs into
// main.cc (spec cli.md "Common").
//
// A subcommand is a function that adds a CLI::App to the parent and returns a Command whose `run`
// is called when that subcommand was chosen on the command line. Subcommands only parse arguments
// and print; the work is done by the libraries.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include "segment_reader/bytes.h"

namespace klf::cli {

// cli.md: 0 ran and found nothing wrong; 1 ran and found problems; 2 usage error; 3 input could not
// be read at all.
enum ExitCode : int { kExitOk = 0, kExitProblems = 1, kExitUsage = 2, kExitUnreadable = 3 };

// Combines the outcomes of several inputs: "unreadable" wins over "problems", which wins over "ok".
inline int WorseExit(int a, int b) {
  auto rank = [](int c) { return c == kExitUnreadable ? 3 : c == kExitUsage ? 2 : c == kExitProblems ? 1 : 0; };
  return rank(a) >= rank(b) ? a : b;
}

struct CommonOptions {
  bool json = false;
  std::string bytes = "text";  // --bytes text|base64|hex
  BytesFormat bytes_format() const;
};

// Adds --json and --bytes to a subcommand.
void AddCommonOptions(CLI::App* app, CommonOptions* options, bool with_bytes = true);

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // returns an ExitCode
};

// One line on stderr: "klf <command>: <message>". Every error names the file it is about.
// A PATH as reports name it: "." and ".." (and paths ending in them) become the absolute directory they
// stand for, so `klf verify .` names the real directory; any other PATH is kept as the user wrote it.
std::string NamedPath(const std::string& path);

void PrintError(const std::string& command, const std::string& message);

// The JSON error object of a failed run (README "Conventions"), on one line without a newline:
// {"error": "<message>", "command": "<command>", "exitCode": N}, plus `fields` (an object) when
// given. Every command prints this shape through Fail (or, for JSON Lines output, in its stream).
std::string ErrorJson(const std::string& command, int exit_code, const std::string& message,
                      const nlohmann::json* fields = nullptr);
// The error object's fields added to a report `j` that is printed all the same (partitions that could
// not be read beside those that could).
void AddErrorFields(nlohmann::json* j, const std::string& command, int exit_code, const std::string& message);
// That object and a newline on stdout (PrintJson).
void PrintErrorJson(const std::string& command, int exit_code, const std::string& message,
                    const nlohmann::json* fields = nullptr);

// A run that fails: the stderr line of PrintError and, with --json, the error object on stdout, so
// a script reading stdout always gets JSON. Returns exit_code, for `return Fail(...)`.
int Fail(const std::string& command, int exit_code, const std::string& message, bool json,
         const nlohmann::json* fields = nullptr);

// The wall clock in ms since the epoch (a report's creation time; compact's --now default).
int64_t WallClockMs();

// --offsets: "A:B", "A:", ":B" or "A" (= "A:A"); both ends inclusive, A <= B. An open end is
// INT64_MIN / INT64_MAX.
bool ParseOffsetRange(const std::string& s, int64_t* from, int64_t* to);

// How klf was run, as main.cc received it: its version and command line (reports name both).
struct Invocation {
  std::string version;
  std::vector<std::string> argv;
};
void SetInvocation(Invocation invocation);
const Invocation& CurrentInvocation();

// The subcommands. Each lives in its own file (dump.cc, ...).
Command AddDumpCommand(CLI::App* parent);
Command AddReindexCommand(CLI::App* parent);   // reindex.cc (segment_writer helper)
Command AddCompactCommand(CLI::App* parent);   // compact.cc (compactor helper)
Command AddVerifyCommand(CLI::App* parent);    // verify.cc (verify helper)
Command AddDiffCommand(CLI::App* parent);      // diff.cc (diff helper)
Command AddDigestCommand(CLI::App* parent);    // digest.cc (digest, triage helpers)
Command AddRepairCommand(CLI::App* parent);    // repair.cc (repair helper)
Command AddLsoCommand(CLI::App* parent);       // lso.cc (repair helper)
Command AddSimulateCommand(CLI::App* parent);  // simulate.cc (simulator helper)
Command AddTriageCommand(CLI::App* parent);    // triage.cc (triage/)
Command AddTxnCommand(CLI::App* parent);       // txn.cc (txn/)
Command AddConsumeCommand(CLI::App* parent);   // consume.cc (partition/consumer_view)

}  // namespace klf::cli
