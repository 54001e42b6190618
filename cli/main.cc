// klf: the command line. Parses arguments and prints; the work is done by the libraries.
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"klf: offline forensics and repair for Apache Kafka data"};
  app.set_version_flag("--version", std::string("klf ") + KLF_VERSION);
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
