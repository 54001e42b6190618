// WriteJson (cli/output.h) prints every --json report. It must write exactly the bytes the reports had
// when they were printed by nlohmann: j.dump(indent) of a copy of j in which every string and key that
// is not UTF-8 went through EscapeInvalidUtf8. Here nlohmann's dump of that copy is the oracle.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/output.h"

namespace klf::cli {
namespace {

using nlohmann::json;

// What the reports printed before WriteJson: nlohmann's dump of the escaped copy.
json EscapedCopy(const json& j) {
  if (j.is_string()) return EscapeInvalidUtf8(j.get_ref<const std::string&>());
  if (j.is_object()) {
    json out = json::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[EscapeInvalidUtf8(it.key())] = EscapedCopy(it.value());
    return out;
  }
  if (j.is_array()) {
    json out = json::array();
    for (const json& e : j) out.push_back(EscapedCopy(e));
    return out;
  }
  return j;
}

std::string Oracle(const json& j, int indent) { return EscapedCopy(j).dump(indent); }

std::string Written(const json& j, int indent, size_t capacity = 16) {
  std::string s;
  {
    Output out(&s, capacity);  // small: the printer must grow and flush through the buffer
    WriteJson(&out, j, indent);
  }
  return s;
}

const int kIndents[] = {-1, 0, 1, 2, 4};

void ExpectSame(const json& j) {
  for (int indent : kIndents) EXPECT_EQ(Written(j, indent), Oracle(j, indent)) << "indent " << indent;
}

TEST(WriteJsonTest, ScalarsAndEmptyContainers) {
  ExpectSame(json(nullptr));
  ExpectSame(json(true));
  ExpectSame(json(false));
  ExpectSame(json::object());
  ExpectSame(json::array());
  ExpectSame(json(""));
  ExpectSame(json("plain"));
  EXPECT_EQ(Written(json::object(), 2), "{}");
  EXPECT_EQ(Written(json::array(), 2), "[]");
}

TEST(WriteJsonTest, CompactAndPrettyLayoutOfNestedDocuments) {
  json j = {{"a", 1},
            {"b", {1, 2}},
            {"empty", json::object()},
            {"none", json::array()},
            {"nested", {{"x", {{"y", {json::object(), json::array(), {1, {2, {3}}}}}}}, {"z", nullptr}}},
            {"list", {{{"k", "v"}}, json::array(), "s", true, nullptr}}};
  ExpectSame(j);
  ExpectSame(json::array({j, j}));
  EXPECT_EQ(Written({{"a", 1}, {"b", {1, 2}}}, -1), R"({"a":1,"b":[1,2]})");
  EXPECT_EQ(Written({{"a", 1}, {"b", {1, 2}}}, 1), "{\n \"a\": 1,\n \"b\": [\n  1,\n  2\n ]\n}");
}

TEST(WriteJsonTest, KeysInNlohmannOrder) {
  json j;
  j["zeta"] = 1;
  j["alpha"] = 2;
  j["Beta"] = 3;
  j["\xc3\xa9"] = 4;
  j[""] = 5;
  j["a b"] = 6;
  ExpectSame(j);
  EXPECT_EQ(Written(j, -1), R"({"":5,"Beta":3,"a b":6,"alpha":2,"zeta":1,"é":4})");
}

TEST(WriteJsonTest, IntegersSignedAndUnsigned) {
  const int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  const uint64_t kUmax = std::numeric_limits<uint64_t>::max();
  json j = {0, -1, 1, 9, 10, 99, 100, -100, kMin, kMax, kMin + 1, kUmax, uint64_t(kMax) + 1, int32_t(-7), uint8_t(255)};
  ExpectSame(j);
  EXPECT_EQ(Written(j, -1),
            "[0,-1,1,9,10,99,100,-100,-9223372036854775808,9223372036854775807,-9223372036854775807,"
            "18446744073709551615,9223372036854775808,-7,255]");
  std::mt19937_64 rng(16);
  json many = json::array();
  for (int i = 0; i < 2000; i++) {
    many.push_back(int64_t(rng()));
    many.push_back(uint64_t(rng()) >> (rng() % 64));
  }
  ExpectSame(many);
}

TEST(WriteJsonTest, DoublesAsNlohmannWritesThem) {
  const double kInf = std::numeric_limits<double>::infinity();
  json j = {0.0,
            -0.0,
            0.1,
            0.5,
            1.0,
            -1.0,
            1.0 / 3,
            2.0 / 3,
            100.0,
            1e15,
            1e16,
            1e17,
            1.5e-7,
            1e-4,
            1e-5,
            123456789.25,
            1e300,
            -1e-300,
            5e-324,
            2.2250738585072014e-308,
            std::numeric_limits<double>::max(),
            0.30000000000000004,
            kInf,
            -kInf,
            std::nan(""),
            0.9999,
            0.4375};
  ExpectSame(j);
  ExpectSame({{"cleanableRatio", 0.6666666666666666}, {"n", 1}});
  std::mt19937_64 rng(1616);
  json many = json::array();
  for (int i = 0; i < 20000; i++) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    many.push_back(d);                                // any bit pattern, NaN and infinities included
    many.push_back(double(rng() % 100000) / 1000.0);  // ratios and rates as reports have them
    many.push_back(double(int64_t(rng())) / double(1 << 20));
  }
  ExpectSame(many);
}

TEST(WriteJsonTest, EveryControlByteAndTheCharactersNlohmannEscapes) {
  std::string all;
  for (int c = 0; c < 0x80; c++) all.push_back(char(c));
  json j = {{"all", all}, {all, all}, {"slash", "a/b"}, {"quote", "\"\\"}, {"del", "\x7f"}};
  for (int c = 0; c < 0x20; c++) {
    const std::string s(1, char(c));
    j["each"].push_back(s);
    j["each"].push_back("abcdefgh" + s + "ijklmnopq");  // after and inside the eight-byte fast path
    j[s] = c;
  }
  ExpectSame(j);
  EXPECT_EQ(Written(json("\b\f\n\r\t\x01\x1f\"\\/\x7f"), -1), R"("\b\f\n\r\t\u0001\u001f\"\\/)"
                                                              "\x7f\"");
}

TEST(WriteJsonTest, InvalidUtf8InValuesAndKeys) {
  const std::string bad = "/d/foo\xff-0/x\xfe\xc3.log\xed\xa0\x80 \xc3\xa9\xf0\x9f\x98\x80 \xf4\x90\x80\x80 \xc0\xaf";
  json j = {{"file", bad}, {"list", {bad, 1, nullptr}}, {bad, {{"nested", bad}}}};
  EXPECT_THROW(j.dump(), json::type_error);  // why the escaping exists
  ExpectSame(j);
  // Escaping a key moves it (the copy was ordered by the escaped key: '\\' sorts before 'a', 0xff after).
  json order = {{"\xff", 1}, {"a", 2}, {"\\", 3}, {"[", 4}, {"]", 5}};
  ExpectSame(order);
  // Two keys that escape alike: the copy kept the value of the later one in map order.
  json clash = {{"\xff", "raw"}, {"\\xff", "text"}, {"z\xfe", 1}, {"z\\xfe", 2}};
  ExpectSame(clash);
  EXPECT_EQ(Written(clash, -1), R"({"\\xff":"raw","z\\xfe":1})");
  // Truncated sequences at the end of a string, and at every position of the eight-byte fast path.
  for (size_t at = 0; at < 12; at++) {
    std::string s(12, 'a');
    s.insert(at, "\xe2\x82");
    ExpectSame({{"s", s}, {s, s}});
  }
}

// Random documents over an alphabet of the bytes that matter (controls, quotes, UTF-8 pieces).
json RandomValue(std::mt19937_64& rng, int depth) {
  static const char* const kPieces[] = {"a",
                                        "Z",
                                        "0",
                                        " ",
                                        "\"",
                                        "\\",
                                        "/",
                                        "\n",
                                        "\t",
                                        "\x01",
                                        "\x1f",
                                        "\x7f",
                                        "\xc3\xa9",
                                        "\xe2\x82\xac",
                                        "\xf0\x9f\x98\x80",
                                        "\xff",
                                        "\xc3",
                                        "\xed\xa0\x80",
                                        "abcdefgh",
                                        "\x80"};
  auto str = [&] {
    std::string s;
    for (size_t n = rng() % 24; n > 0; n--) s += kPieces[rng() % (sizeof kPieces / sizeof kPieces[0])];
    return s;
  };
  switch (depth <= 0 ? rng() % 6 : rng() % 8) {
    case 0: return nullptr;
    case 1: return rng() % 2 == 0;
    case 2: return int64_t(rng()) >> (rng() % 64);
    case 3: return uint64_t(rng());
    case 4: return double(int64_t(rng() % 2000000) - 1000000) / 64.0;
    case 5: return str();
    case 6: {
      json a = json::array();
      for (size_t n = rng() % 5; n > 0; n--) a.push_back(RandomValue(rng, depth - 1));
      return a;
    }
    default: {
      json o = json::object();
      for (size_t n = rng() % 5; n > 0; n--) o[str()] = RandomValue(rng, depth - 1);
      return o;
    }
  }
}

TEST(WriteJsonTest, RandomDocuments) {
  std::mt19937_64 rng(4);
  size_t bytes = 0, not_utf8 = 0;
  for (int i = 0; i < 3000; i++) {
    const json j = RandomValue(rng, 4);
    for (int indent : kIndents) {
      const std::string written = Written(j, indent);
      ASSERT_EQ(written, Oracle(j, indent)) << "document " << i;
      bytes += written.size();
      not_utf8 += written.find("\\\\x") != std::string::npos;
    }
  }
  // The documents are not trivial: most of a megabyte of output, many with escaped bytes.
  EXPECT_GT(bytes, size_t(500) << 10);
  EXPECT_GT(not_utf8, 1000u);
  std::printf("%zu bytes written, %zu documents with bytes that are not UTF-8\n", bytes, not_utf8);
}

// Decoded records of internal topics: ordered_json (insertion order) as segment_reader's CompactJson
// wrote them, dump(-1, ' ', false, replace): U+FFFD for each sequence nlohmann's decoder rejects.
std::string Decoded(const nlohmann::ordered_json& j) {
  std::string s;
  {
    Output out(&s, 16);
    WriteDecodedJson(&out, j);
  }
  EXPECT_EQ(DecodedJsonText(j), s);
  return s;
}

std::string ReplaceOracle(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

TEST(WriteJsonTest, DecodedRecordsInInsertionOrderWithReplacementCharacters) {
  nlohmann::ordered_json j;
  j["zeta"] = 1;
  j["alpha"] = {{"z", "\xff \xc3\xa9 \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf \xe0\x80 \xf0\x80 x"}, {"a", 2.5}};
  j["b\xfe"] = {nullptr, true, -3, uint64_t(1) << 63, "\n\t\x01\x7f"};
  j["empty"] = nlohmann::ordered_json::object();
  EXPECT_EQ(Decoded(j), ReplaceOracle(j));
  EXPECT_EQ(Decoded(j).substr(0, 15), R"({"zeta":1,"alph)");
  // Every sequence of up to four bytes from the bytes that matter to the decoder, inside and at the end.
  const uint8_t kBytes[] = {0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf,
                            0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  const size_t n = sizeof kBytes;
  for (size_t a = 0; a < n; a++) {
    for (size_t b = 0; b < n; b++) {
      for (size_t c = 0; c < n; c++) {
        std::string s = {char(kBytes[a]), char(kBytes[b]), char(kBytes[c])};
        for (uint8_t d : {uint8_t(0x80), uint8_t(0xbf), uint8_t(0x41)}) {
          const nlohmann::ordered_json doc = {{"v", s + char(d)}, {"w", s}};
          ASSERT_EQ(Decoded(doc), ReplaceOracle(doc)) << a << " " << b << " " << c << " " << int(d);
        }
      }
    }
  }
}

TEST(WriteJsonTest, RandomDecodedRecords) {
  std::mt19937_64 rng(44);
  for (int i = 0; i < 2000; i++) {
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(RandomValue(rng, 4).dump(
        -1, ' ', false, json::error_handler_t::replace));  // keys in a random insertion order below
    nlohmann::ordered_json shuffled = nlohmann::ordered_json::object();
    std::string raw(size_t(rng() % 20), '\0');
    for (char& ch : raw) ch = char(rng());
    shuffled[raw] = raw;  // raw random bytes, not UTF-8, as key and value
    shuffled["doc"] = j;
    shuffled["a"] = raw;
    ASSERT_EQ(Decoded(shuffled), ReplaceOracle(shuffled)) << "document " << i;
  }
}

// The JSON Lines writers keep \u00XX for every control character (cli.md): the one escaper, two styles.
TEST(WriteJsonTest, JsonLinesKeepUnicodeEscapes) {
  std::string s;
  {
    Output out(&s);
    out.AppendJsonString("a\nb\t\x01\xff");
    out.Append(' ');
    out.AppendJsonString("a\nb\t\x01\xff", Output::ControlEscapes::kShort);
  }
  EXPECT_EQ(s, R"("a\u000ab\u0009\u0001\\xff" "a\nb\t\u0001\\xff")");
}

TEST(WriteJsonTest, ErrorJsonIsWrittenByIt) {
  const json fields = {{"extra", {1, "x\xff"}}};
  EXPECT_EQ(ErrorJson("dump", 3, "bad\n\xfe", &fields),
            Oracle(json({{"error", "bad\n\xfe"}, {"command", "dump"}, {"exitCode", 3}, {"extra", {1, "x\xff"}}}), -1));
}

}  // namespace
}  // namespace klf::cli
