// klf: the command line. Parses arguments and prints; the work is done by the libraries.
//
// Exit codes (spec cli.md): 0 nothing wrong, 1 problems found, 2 usage error, 3 input unreadable.
// A subcommand is added by writing `Command AddXCommand(CLI::App*)` (command.h) and listing it below.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace {

bool AskedForJson(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "--json") == 0) return true;
  }
  return false;
}

// The subcommand named on the command line ("klf" when there is none), for the JSON error object.
std::string CommandName(const std::vector<klf::cli::Command>& commands, int argc, char** argv) {
  for (const klf::cli::Command& c : commands) {
    if (argc > 1 && c.app->get_name() == argv[1]) return c.app->get_name();
  }
  return "klf";
}

// Building a subcommand's options costs time at every start (a millisecond or two for all of them,
// which shows on a short run: docs/PERFORMANCE.md). When the first argument names a subcommand only
// that one is built; otherwise (klf --help, a typo) all are, so help and errors list every one.
std::vector<klf::cli::Command> AddCommands(CLI::App* app, int argc, char** argv) {
  using namespace klf::cli;
  const std::pair<const char*, Command (*)(CLI::App*)> kCommands[] = {
      {"dump", AddDumpCommand},     {"reindex", AddReindexCommand},   {"compact", AddCompactCommand},
      {"verify", AddVerifyCommand}, {"diff", AddDiffCommand},         {"repair", AddRepairCommand},
      {"lso", AddLsoCommand},       {"simulate", AddSimulateCommand}, {"triage", AddTriageCommand},
      {"digest", AddDigestCommand}, {"txn", AddTxnCommand},           {"consume", AddConsumeCommand},
  };
  const char* named = nullptr;
  for (const auto& [name, add] : kCommands)
    if (argc > 1 && std::strcmp(argv[1], name) == 0) named = name;
  std::vector<Command> commands;
  for (const auto& [name, add] : kCommands)
    if (named == nullptr || named == name) commands.push_back(add(app));
  return commands;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace klf::cli;
  CLI::App app{
      "klf: offline forensics and repair for Apache Kafka data directories.\n"
      "Decodes and verifies segment, index, snapshot and checkpoint files of copies of broker log\n"
      "directories. Inputs are never modified.\n"
      "Exit codes: 0 nothing wrong, 1 problems found, 2 usage error, 3 input could not be read.",
      "klf"};
  app.set_version_flag("--version", std::string("klf ") + KLF_VERSION);
  SetInvocation({KLF_VERSION, std::vector<std::string>(argv, argv + argc)});
  app.require_subcommand(1);
  app.fallthrough(false);

  std::vector<Command> commands = AddCommands(&app, argc, argv);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  } catch (const CLI::CallForVersion& e) {
    app.exit(e);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // One line naming the problem, then where to look; CLI11's own exit codes are not ours.
    // Prefixed with the subcommand, like every other error ("klf diff: ...").
    const std::string name = CommandName(commands, argc, argv);
    const std::string prefix = name == "klf" ? "klf" : "klf " + name;
    const std::string help = name == "klf" ? "klf --help" : "klf " + name + " --help";
    std::fprintf(stderr, "%s: %s\nRun '%s' for usage.\n", prefix.c_str(), e.what(), help.c_str());
    // Scripts that asked for --json get the error object on stdout as well (README "Conventions").
    if (AskedForJson(argc, argv)) PrintErrorJson(name, kExitUsage, e.what());
    return kExitUsage;
  }

  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    // An exception escaping a command is a bug, but it still unwinds (removing staging directories)
    // and ends as an error line, not an abort.
    try {
      return c.run();
    } catch (const std::exception& e) {
      return Fail(c.app->get_name(), kExitUnreadable, std::string("internal error: ") + e.what(),
                  AskedForJson(argc, argv));
    }
  }
  return kExitUsage;
}
