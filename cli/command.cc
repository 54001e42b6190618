#include "cli/command.h"

#include <cstdio>

#include <nlohmann/json.hpp>

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

std::string ErrorJson(const std::string& command, int exit_code, const std::string& message,
                      const nlohmann::json* fields) {
  nlohmann::json j = {{"error", message}, {"command", command}, {"exitCode", exit_code}};
  if (fields != nullptr && fields->is_object()) {
    for (const auto& [k, v] : fields->items()) j[k] = v;
  }
  // Messages quote paths and names from hostile inputs: invalid UTF-8 is replaced, never thrown on.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int Fail(const std::string& command, int exit_code, const std::string& message, bool json,
         const nlohmann::json* fields) {
  PrintError(command, message);
  if (json) {
    std::fflush(stdout);
    std::printf("%s\n", ErrorJson(command, exit_code, message, fields).c_str());
    std::fflush(stdout);
  }
  return exit_code;
}

}  // namespace klf::cli
