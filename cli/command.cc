#include "cli/command.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <limits>
#include <string_view>
#include <filesystem>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/output.h"

namespace klf::cli {
namespace {
Invocation& TheInvocation() {
  static Invocation invocation;
  return invocation;
}
}  // namespace

void SetInvocation(Invocation invocation) { TheInvocation() = std::move(invocation); }
const Invocation& CurrentInvocation() { return TheInvocation(); }

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

std::string NamedPath(const std::string& path) {
  std::filesystem::path p(path);
  std::string normal = p.lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  std::string last = std::filesystem::path(normal).filename().string();
  if (!path.empty() && last != "." && last != "..") return path;
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(p, ec);
  if (ec) return path;
  std::string named = abs.lexically_normal().string();
  while (named.size() > 1 && named.back() == '/') named.pop_back();
  return named;
}

void PrintError(const std::string& command, const std::string& message) {
  // Messages name files, and a name need not be UTF-8: printed as --bytes text prints bytes.
  std::fprintf(stderr, "klf %s: %s\n", command.c_str(), EscapeInvalidUtf8(message).c_str());
}

void AddErrorFields(nlohmann::json* j, const std::string& command, int exit_code, const std::string& message) {
  (*j)["error"] = message;
  (*j)["command"] = command;
  (*j)["exitCode"] = exit_code;
}

namespace {
nlohmann::json ErrorDocument(const std::string& command, int exit_code, const std::string& message,
                             const nlohmann::json* fields) {
  nlohmann::json j;
  AddErrorFields(&j, command, exit_code, message);
  if (fields != nullptr && fields->is_object()) {
    for (const auto& [k, v] : fields->items()) j[k] = v;
  }
  return j;
}
}  // namespace

// Messages quote paths and names from hostile inputs: invalid UTF-8 is escaped as \xNN (WriteJson).
std::string ErrorJson(const std::string& command, int exit_code, const std::string& message,
                      const nlohmann::json* fields) {
  std::string line;
  {
    Output out(&line);
    WriteJson(&out, ErrorDocument(command, exit_code, message, fields));
  }
  return line;
}

void PrintErrorJson(const std::string& command, int exit_code, const std::string& message,
                    const nlohmann::json* fields) {
  PrintJson(ErrorDocument(command, exit_code, message, fields));
}

int Fail(const std::string& command, int exit_code, const std::string& message, bool json,
         const nlohmann::json* fields) {
  PrintError(command, message);
  if (json) PrintErrorJson(command, exit_code, message, fields);
  return exit_code;
}

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool ParseOffsetRange(const std::string& s, int64_t* from, int64_t* to) {
  auto parse = [](std::string_view t, int64_t* v) {
    auto r = std::from_chars(t.data(), t.data() + t.size(), *v);
    return r.ec == std::errc() && r.ptr == t.data() + t.size();
  };
  std::string_view sv(s);
  size_t colon = sv.find(':');
  if (colon == std::string_view::npos) {
    if (!parse(sv, from)) return false;
    *to = *from;
    return true;
  }
  std::string_view a = sv.substr(0, colon), b = sv.substr(colon + 1);
  *from = std::numeric_limits<int64_t>::min();
  *to = std::numeric_limits<int64_t>::max();
  if (a.empty() && b.empty()) return false;
  if (!a.empty() && !parse(a, from)) return false;
  if (!b.empty() && !parse(b, to)) return false;
  return *from <= *to;
}

}  // namespace klf::cli
