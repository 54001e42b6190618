// klf: the command line. Parses arguments and prints; the work is done by the libraries.
//
// Exit codes (spec cli.md): 0 nothing wrong, 1 problems found, 2 usage error, 3 input unreadable.
// A subcommand is added by writing `Command AddXCommand(CLI::App*)` (command.h) and listing it below.
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"

int main(int argc, char** argv) {
  using namespace klf::cli;
  CLI::App app{
      "klf: offline forensics and repair for Apache Kafka data directories.\n"
      "Decodes and verifies segment, index, snapshot and checkpoint files of copies of broker log\n"
      "directories. Inputs are never modified.\n"
      "Exit codes: 0 nothing wrong, 1 problems found, 2 usage error, 3 input could not be read.",
      "klf"};
  app.set_version_flag("--version", std::string("klf ") + KLF_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  std::vector<Command> commands;
  commands.push_back(AddDumpCommand(&app));
  commands.push_back(AddReindexCommand(&app));
  commands.push_back(AddCompactCommand(&app));
  commands.push_back(AddVerifyCommand(&app));
  commands.push_back(AddDiffCommand(&app));
  commands.push_back(AddRepairCommand(&app));
  commands.push_back(AddLsoCommand(&app));
  commands.push_back(AddSimulateCommand(&app));

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
    std::fprintf(stderr, "klf: %s\nRun 'klf --help' or 'klf <command> --help' for usage.\n", e.what());
    return kExitUsage;
  }

  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return kExitUsage;
}
