#include "cli/command.h"

#include <cstdio>

namespace klf::cli {

BytesFormat CommonOptions::bytes_format() const {
  if (bytes == "hex") return BytesFormat::kHex;
  if (bytes == "base64") return BytesFormat::kBase64;
  return BytesFormat::kText;
}

void AddCommonOptions(CLI::App* app, CommonOptions* options, bool with_bytes) {
  app->add_flag("--json", options->json, "Machine-readable output on stdout (JSON; see README.md)");
  if (with_bytes) {
    app->add_option("--bytes", options->bytes,
                    "How keys, values and header values print: text (UTF-8, invalid bytes as \\xNN), "
                    "base64 or hex")
        ->check(CLI::IsMember({"text", "base64", "hex"}))
        ->default_str("text");
  }
}

void PrintError(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "klf %s: %s\n", command.c_str(), message.c_str());
}

}  // namespace klf::cli
