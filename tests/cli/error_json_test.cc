// The JSON error object every failing --json run prints (cli/command.h, README "Conventions"): one
// shape, one line, valid JSON whatever bytes the message quotes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"

namespace klf::cli {
namespace {

TEST(ErrorJson, OneObjectWithErrorCommandAndExitCode) {
  std::string line = ErrorJson("compact", kExitUsage, "/x/out: refusing to write there");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j, (nlohmann::json{{"error", "/x/out: refusing to write there"}, {"command", "compact"}, {"exitCode", 2}}));
}

TEST(ErrorJson, ExtraFieldsAreAdded) {
  nlohmann::json fields = {{"out", nullptr}, {"problems", nlohmann::json::array()}};
  nlohmann::json j = nlohmann::json::parse(ErrorJson("compact", kExitProblems, "damaged", &fields));
  EXPECT_EQ(j["exitCode"], 1);
  EXPECT_TRUE(j["out"].is_null());
  EXPECT_TRUE(j["problems"].is_array());
}

TEST(ErrorJson, HostileBytesInTheMessageStillMakeValidJson) {
  // A path from a hostile input: invalid UTF-8, quotes, control characters, a newline.
  std::string message = std::string("/x/\xff\xfe\"name\"\n\x01: no such file");
  std::string line = ErrorJson("dump", kExitUnreadable, message);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["command"], "dump");
  EXPECT_NE(j["error"].get<std::string>().find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace klf::cli
