// The byte renderers of cli/output.h must agree with klf::FormatBytes (segment_reader/bytes.h), the
// one definition of --bytes text|hex|base64, and produce valid JSON that decodes back to that text.
#include "cli/output.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli/json_out.h"
#include "segment_reader/bytes.h"

namespace klf::cli {
namespace {

std::string Render(Bytes b, BytesFormat f, bool json) {
  std::string s;
  {
    Output out(&s, 16);  // tiny buffer: exercises Grow()
    out.AppendBytes(b, f, json);
  }
  return s;
}

Bytes B(const std::string& s) { return AsBytes(s); }

TEST(OutputTest, TextMatchesFormatBytesOnCornerCases) {
  const std::vector<std::string> cases = {
      "",
      "plain ascii",
      "tab\there",
      "quote\" backslash\\ slash/",
      std::string("nul\0byte", 8),
      "\x7f del",
      "caf\xc3\xa9",               // é
      "\xe2\x82\xac euro",         // €
      "\xf0\x9f\x98\x80 emoji",    // 😀
      "\xc3",                      // truncated 2-byte sequence
      "\xc0\xaf overlong",         // overlong '/'
      "\xed\xa0\x80 surrogate",    // U+D800
      "\xf4\x90\x80\x80 too big",  // U+110000
      "\xff\xfe invalid lead",
      "exactly8",
      "0123456789abcdef\"0123456789abcdef",
      "newline\nin the middle of a long ascii run",
  };
  for (const std::string& c : cases) {
    EXPECT_EQ(Render(B(c), BytesFormat::kText, false), FormatBytes(B(c), BytesFormat::kText)) << c;
    EXPECT_EQ(Render(B(c), BytesFormat::kHex, false), FormatBytes(B(c), BytesFormat::kHex)) << c;
    EXPECT_EQ(Render(B(c), BytesFormat::kBase64, false), FormatBytes(B(c), BytesFormat::kBase64)) << c;
  }
}

TEST(OutputTest, KnownRenderings) {
  EXPECT_EQ(Render(B(std::string("a\nb\xff", 4)), BytesFormat::kText, false), "a\\x0ab\\xff");
  // Every control character is escaped, TAB and DEL included (issue 19).
  EXPECT_EQ(Render(B("a\tb\x7f"), BytesFormat::kText, false), "a\\x09b\\x7f");
  EXPECT_EQ(FormatBytes(B("a\tb\x7f"), BytesFormat::kText), "a\\x09b\\x7f");
  EXPECT_EQ(Render(B("\x01\xab"), BytesFormat::kHex, false), "01ab");
  EXPECT_EQ(Render(B("Man"), BytesFormat::kBase64, false), "TWFu");
  EXPECT_EQ(Render(B("Ma"), BytesFormat::kBase64, false), "TWE=");
  EXPECT_EQ(Render(B("M"), BytesFormat::kBase64, false), "TQ==");
}

// Random bytes (biased towards ASCII, quotes, backslashes and UTF-8 lead bytes): the text rendering
// equals FormatBytes', and inside a JSON string it parses back to exactly FormatBytes' text.
TEST(OutputTest, RandomBytesAgreeWithFormatBytesAndParseAsJson) {
  std::mt19937 rng(12345);
  const std::string alphabet = "ab\"\\\t\n\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xff\x80 ";
  for (int iter = 0; iter < 3000; ++iter) {
    size_t n = rng() % 64;
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      if (rng() % 3 == 0)
        s.push_back(char(rng() % 256));
      else
        s.push_back(alphabet[rng() % alphabet.size()]);
    }
    std::string expected = FormatBytes(B(s), BytesFormat::kText);
    ASSERT_EQ(Render(B(s), BytesFormat::kText, false), expected);
    std::string json = "\"" + Render(B(s), BytesFormat::kText, true) + "\"";
    nlohmann::json parsed;
    ASSERT_NO_THROW(parsed = nlohmann::json::parse(json)) << json;
    ASSERT_EQ(parsed.get<std::string>(), expected) << json;
    for (BytesFormat f : {BytesFormat::kHex, BytesFormat::kBase64}) {
      ASSERT_EQ(Render(B(s), f, true), FormatBytes(B(s), f));
    }
  }
}

TEST(OutputTest, Integers) {
  for (int64_t v : {int64_t(0), int64_t(7), int64_t(10), int64_t(99), int64_t(100), int64_t(-1), int64_t(1700000000000),
                    std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
    std::string s;
    {
      Output out(&s);
      out.AppendInt(v);
    }
    EXPECT_EQ(s, std::to_string(v));
  }
  std::string s;
  {
    Output out(&s);
    out.AppendUint(std::numeric_limits<uint64_t>::max());
  }
  EXPECT_EQ(s, "18446744073709551615");
}

TEST(OutputTest, JsonStringEscapesPathsAndMessages) {
  std::string s;
  {
    Output out(&s);
    out.AppendJsonString("dir \"x\"\\y\n\x01z");
  }
  EXPECT_EQ(nlohmann::json::parse(s).get<std::string>(), "dir \"x\"\\y\n\x01z");
}

// File names are bytes: one that is not UTF-8 prints as --bytes text prints a key (\xNN for each byte
// that is not part of well-formed UTF-8), in the fast writer and in nlohmann documents alike, and
// never throws (nlohmann's dump throws type_error 316 on invalid UTF-8).
TEST(OutputTest, NamesThatAreNotUtf8AreEscapedNeverThrown) {
  const std::string name = "/d/foo\xff-0/x\xfe\xc3.log\xed\xa0\x80 \xc3\xa9\xf0\x9f\x98\x80";
  const std::string text = "/d/foo\\xff-0/x\\xfe\\xc3.log\\xed\\xa0\\x80 \xc3\xa9\xf0\x9f\x98\x80";
  EXPECT_EQ(EscapeInvalidUtf8(name), text);
  EXPECT_EQ(EscapeInvalidUtf8(name), FormatBytes(B(name), BytesFormat::kText));  // the same rule as --bytes text
  EXPECT_EQ(EscapeInvalidUtf8("plain/00000000000000000000.log"), "plain/00000000000000000000.log");

  std::string fast;
  {
    Output out(&fast, 16);
    out.AppendJsonString(name);
  }
  EXPECT_EQ(nlohmann::json::parse(fast).get<std::string>(), text);

  nlohmann::json j = {{"file", name}, {"list", {name, 1, nullptr}}, {name, {{"nested", name}}}};
  EXPECT_THROW(j.dump(), nlohmann::json::type_error);
  std::string dumped;
  {
    Output out(&dumped, 16);
    ASSERT_NO_THROW(WriteJson(&out, j, 2));
  }
  nlohmann::json back = nlohmann::json::parse(dumped);
  EXPECT_EQ(back["file"], text);
  EXPECT_EQ(back["list"][0], text);
  EXPECT_EQ(back["list"][1], 1);
  EXPECT_EQ(back[text]["nested"], text);
  // A document that is all UTF-8 prints exactly as dump() prints it.
  nlohmann::json ok = {{"file", "/d/foo-0/\xc3\xa9.log"}, {"n", 3}};
  for (int indent : {-1, 2}) {
    std::string written;
    {
      Output out(&written);
      WriteJson(&out, ok, indent);
    }
    EXPECT_EQ(written, ok.dump(indent));
  }
}

TEST(OutputTest, JsonObjectWritesParseableLines) {
  std::string s;
  {
    Output out(&s, 8);
    JsonObject j(&out);
    j.String("file", "a\"b");
    j.Int("n", -5);
    j.Uint("u", 7);
    j.Bool("t", true);
    j.Null("z");
    j.OptInt("o", std::nullopt);
    j.OptBytes("k", AsBytes(std::string_view("\xff")), BytesFormat::kText);
    j.OptBytes("h", AsBytes(std::string_view("\xff")), BytesFormat::kHex);
    j.OptBytes("nk", std::nullopt, BytesFormat::kText);
    j.CloseLine();
  }
  ASSERT_EQ(s.back(), '\n');
  auto v = nlohmann::json::parse(s);
  EXPECT_EQ(v["file"], "a\"b");
  EXPECT_EQ(v["n"], -5);
  EXPECT_EQ(v["u"], 7);
  EXPECT_EQ(v["t"], true);
  EXPECT_TRUE(v["z"].is_null());
  EXPECT_TRUE(v["o"].is_null());
  EXPECT_EQ(v["k"], "\\xff");
  EXPECT_EQ(v["h"], "ff");
  EXPECT_TRUE(v["nk"].is_null());
}

TEST(OutputTest, ValueLargerThanTheBufferIsWrittenWhole) {
  std::string big(100000, 'x');
  big[5000] = '"';
  std::string s;
  {
    Output out(&s, 64);
    out.Append("pre");
    out.AppendBytes(B(big), BytesFormat::kText, true);
  }
  std::string expected = "pre" + big.substr(0, 5000) + "\\\"" + big.substr(5001);
  EXPECT_EQ(s, expected);
}

// The 16- and 8-byte fast paths must hand every special byte to the exact path, wherever it sits.
TEST(OutputTest, SpecialByteAtEveryPositionOfALongRun) {
  for (char special : {'"', '\\', '\n', '\t', '\x7f', '\xc3', '\xff', '\0'}) {
    for (size_t at = 0; at < 40; ++at) {
      std::string s(40, 'a');
      s[at] = special;
      ASSERT_EQ(Render(B(s), BytesFormat::kText, false), FormatBytes(B(s), BytesFormat::kText)) << at;
      std::string json = "\"" + Render(B(s), BytesFormat::kText, true) + "\"";
      ASSERT_EQ(nlohmann::json::parse(json).get<std::string>(), FormatBytes(B(s), BytesFormat::kText)) << at;
    }
  }
}

// Byte strings longer than a slice are rendered slice by slice (the buffer stays small): the result
// must be exactly the whole rendering, including UTF-8 sequences and escapes that straddle a slice
// boundary, in every mode.
TEST(OutputTest, SlicedRenderingEqualsFormatBytes) {
  std::mt19937 rng(15);
  const std::string pieces[] = {"a",  "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\"", "\\",
                                "\t", "\x01",     "\xff",         "\x80\x80\x80\x80"};
  for (int round = 0; round < 6; ++round) {
    std::string s;
    while (s.size() < 3 * Output::kRenderSliceBytes + 17) s += pieces[rng() % std::size(pieces)];
    for (BytesFormat f : {BytesFormat::kText, BytesFormat::kHex, BytesFormat::kBase64}) {
      ASSERT_EQ(Render(B(s), f, false), FormatBytes(B(s), f)) << round;
      std::string json = "\"" + Render(B(s), f, true) + "\"";
      ASSERT_EQ(nlohmann::json::parse(json).get<std::string>(), FormatBytes(B(s), f)) << round;
    }
  }
}

TEST(OutputTest, HugeValueDoesNotGrowTheBuffer) {
  std::string big(8u << 20, '\x01');  // text mode renders each byte as \x01: 4 (JSON: 5) characters
  std::string s;
  {
    Output out(&s, 1 << 20);
    out.AppendBytes(B(big), BytesFormat::kText, true);
    EXPECT_LE(out.capacity(), size_t(1) << 20);
  }
  EXPECT_EQ(s.size(), big.size() * 5);
}

}  // namespace
}  // namespace klf::cli
