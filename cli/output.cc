#include "cli/output.h"

#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace klf::cli {

namespace {
constexpr char kHexDigits[] = "0123456789abcdef";
constexpr char kBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Writes the text \xNN for byte c (inside a JSON string the backslash is escaped: \\xNN).
inline char* WriteEscapedByte(char* o, uint8_t c, bool json) {
  if (json) *o++ = '\\';
  *o++ = '\\';
  *o++ = 'x';
  *o++ = kHexDigits[c >> 4];
  *o++ = kHexDigits[c & 15];
  return o;
}
}  // namespace

Output::Output(int fd, size_t capacity) : fd_(fd), cap_(capacity) {
  buf_ = static_cast<char*>(std::malloc(cap_));
  if (!buf_) std::abort();
}

Output::Output(std::string* capture, size_t capacity) : capture_(capture), cap_(capacity) {
  buf_ = static_cast<char*>(std::malloc(cap_));
  if (!buf_) std::abort();
}

Output::~Output() {
  Flush();
  std::free(buf_);
}

bool Output::Flush() {
  if (capture_) {
    capture_->append(buf_, len_);
  } else if (!failed_) {
    size_t done = 0;
    while (done < len_) {
      ssize_t n = ::write(fd_, buf_ + done, len_ - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        // A closed pipe (`klf dump | head`) is not worth a message; anything else is.
        if (errno != EPIPE) std::fprintf(stderr, "klf: writing output failed: %s\n", std::strerror(errno));
        failed_ = true;
        break;
      }
      done += size_t(n);
    }
  }
  flushed_ += len_;
  len_ = 0;
  return !failed_;
}

void Output::Grow(size_t n) {
  Flush();
  if (cap_ < n) {
    // One field larger than the buffer (a huge value): grow to fit it. Bounded by the value size,
    // which the reader has already bounded (max_batch_bytes / decompression cap).
    cap_ = n;
    buf_ = static_cast<char*>(std::realloc(buf_, cap_));
    if (!buf_) std::abort();
  }
}

namespace {

// Where to end a slice of text-mode input near `at` so that rendering the slices one after the
// other gives exactly what rendering the whole does: never just before a UTF-8 continuation byte
// (10xxxxxx), so no well-formed sequence is cut. Four continuation bytes in a row cannot belong to
// one well-formed sequence, so at most three steps back are needed.
size_t TextSliceEnd(Bytes b, size_t at) {
  for (size_t k = 0; k < 4 && at - k > 0; ++k) {
    if ((b[at - k] & 0xC0) != 0x80) return at - k;
  }
  return at;
}

}  // namespace

void Output::AppendBytesSliced(Bytes b, BytesFormat format, bool json) {
  size_t i = 0;
  while (i < b.size()) {
    size_t end = b.size();
    if (end - i > kRenderSliceBytes) {
      end = i + kRenderSliceBytes;
      // base64 renders whole groups of three bytes: slices of a multiple of three join exactly.
      if (format == BytesFormat::kBase64) end = i + kRenderSliceBytes / 3 * 3;
      if (format == BytesFormat::kText) end = TextSliceEnd(b, end);
    }
    Bytes slice = b.subspan(i, end - i);
    char* p = Reserve(MaxRenderedBytes(slice.size(), format));
    Commit(size_t(WriteBytes(p, slice, format, json) - p));
    i = end;
  }
}

char* WriteBytes(char* o, Bytes b, BytesFormat format, bool json) {
  switch (format) {
    case BytesFormat::kText: return WriteText(o, b, json);
    case BytesFormat::kHex: return WriteHex(o, b);
    case BytesFormat::kBase64: return WriteBase64(o, b);
  }
  return o;
}

// Digits are produced two at a time from a table, right to left, into a scratch buffer.
char* WriteUint(char* o, uint64_t v) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  char tmp[kMaxIntChars];
  char* e = tmp + kMaxIntChars;
  char* p = e;
  while (v >= 100) {
    unsigned r = unsigned(v % 100);
    v /= 100;
    p -= 2;
    std::memcpy(p, kPairs + 2 * r, 2);
  }
  if (v >= 10) {
    p -= 2;
    std::memcpy(p, kPairs + 2 * v, 2);
  } else {
    *--p = char('0' + v);
  }
  size_t n = size_t(e - p);
  std::memcpy(o, p, n);
  return o + n;
}

char* WriteInt(char* o, int64_t v) {
  if (v >= 0) return WriteUint(o, uint64_t(v));
  *o++ = '-';
  return WriteUint(o, ~uint64_t(v) + 1);
}

char* WriteHex(char* o, Bytes b) {
  for (uint8_t c : b) {
    *o++ = kHexDigits[c >> 4];
    *o++ = kHexDigits[c & 15];
  }
  return o;
}

char* WriteBase64(char* o, Bytes b) {
  const uint8_t* p = b.data();
  size_t i = 0, n = b.size();
  for (; i + 3 <= n; i += 3) {
    uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8 | p[i + 2];
    *o++ = kBase64Alphabet[v >> 18];
    *o++ = kBase64Alphabet[(v >> 12) & 63];
    *o++ = kBase64Alphabet[(v >> 6) & 63];
    *o++ = kBase64Alphabet[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = uint32_t(p[i]) << 16;
    *o++ = kBase64Alphabet[v >> 18];
    *o++ = kBase64Alphabet[(v >> 12) & 63];
    *o++ = '=';
    *o++ = '=';
  } else if (n - i == 2) {
    uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8;
    *o++ = kBase64Alphabet[v >> 18];
    *o++ = kBase64Alphabet[(v >> 12) & 63];
    *o++ = kBase64Alphabet[(v >> 6) & 63];
    *o++ = '=';
  }
  return o;
}

// The same decisions as FormatBytes' text mode (bytes.cc): well-formed UTF-8 is copied, every other
// byte and every control character (TAB and DEL included) becomes \xNN. Written again here, into the output
// buffer, because this runs for every key and value of a dump; output_test.cc compares the two.
// NOLINTNEXTLINE(readability-function-cognitive-complexity): the SSE2 fast path and the byte-by-byte UTF-8 path are one loop for speed (docs/PERFORMANCE.md)
char* WriteText(char* o, Bytes b, bool json) {
  const uint8_t* p = b.data();
  const size_t n = b.size();
  size_t i = 0;
  auto escape = [&](uint8_t c) { o = WriteEscapedByte(o, c, json); };
  while (i < n) {
    bool stopped = false;  // a special byte is at p[i]
#if defined(__SSE2__)
    // Sixteen bytes at a time: plain ASCII is copied; at the first byte below 0x20 or above 0x7f
    // (both negative or small as signed bytes), '"' or '\\', the plain bytes before it are kept and
    // that byte goes to the byte-by-byte path below, which comes straight back here. (JSON-like values
    // have a '"' every few bytes.) Storing all sixteen is safe: the caller reserved 5 output bytes
    // per input byte, and the bytes past the special one are overwritten next.
    while (i + 16 <= n) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      __m128i special =
          _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)), _mm_cmpeq_epi8(v, _mm_set1_epi8('"'))),
                       _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')), _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o), v);
      unsigned mask = unsigned(_mm_movemask_epi8(special));
      if (mask != 0) {
        unsigned k = unsigned(__builtin_ctz(mask));
        o += k;
        i += k;
        stopped = true;
        break;
      }
      o += 16;
      i += 16;
    }
#endif
    // Eight plain ASCII bytes at a time (no control byte, no byte >= 0x80, no '"' or '\\'): the
    // common case of keys and values, copied without looking at each byte.
    while (!stopped && i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
      auto has_zero = [&](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
      uint64_t special = (w & kHigh) | ((w - 0x20 * kOnes) & ~w & kHigh) | has_zero(w ^ (0x22 * kOnes)) |
                         has_zero(w ^ (0x5c * kOnes)) | has_zero(w ^ (0x7f * kOnes));
      if (special) break;
      std::memcpy(o, p + i, 8);
      o += 8;
      i += 8;
    }
    if (i >= n) break;
    uint8_t c = p[i];
    if (c >= 0x20 && c < 0x7f) {
      if (json && (c == '"' || c == '\\')) *o++ = '\\';
      *o++ = char(c);
      ++i;
      continue;
    }
    if (c < 0x20 || c == 0x7f) {  // control characters, TAB and DEL included
      escape(c);
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(p + i, n - i);
    if (len > 0) {
      std::memcpy(o, p + i, len);
      o += len;
      i += len;
    } else {
      escape(c);
      ++i;
    }
  }
  return o;
}

namespace {

// The short escape letter of control character c ('b' for 0x08, ...), or 0 for \u00XX.
constexpr char kShortEscapes[0x20] = {0, 0, 0, 0, 0, 0, 0, 0, 'b', 't', 'n', 0, 'f', 'r', 0, 0,
                                      0, 0, 0, 0, 0, 0, 0, 0, 0,   0,   0,   0, 0,   0,   0, 0};

// True when none of the eight bytes at p needs a look: no control byte, no byte >= 0x80, no '"' or '\\'.
inline bool PlainAscii8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  auto has_zero = [&](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  return ((w & kHigh) | ((w - 0x20 * kOnes) & ~w & kHigh) | has_zero(w ^ (0x22 * kOnes)) |
          has_zero(w ^ (0x5c * kOnes))) == 0;
}

}  // namespace

void Output::AppendJsonString(std::string_view s, ControlEscapes controls, InvalidUtf8 invalid) {
  char* start = Reserve(s.size() * 6 + 2);
  char* o = start;
  *o++ = '"';
  const uint8_t* p = reinterpret_cast<const uint8_t*>(s.data());
  const bool short_escapes = controls == ControlEscapes::kShort;
  for (size_t i = 0; i < s.size(); ++i) {
    while (i + 8 <= s.size() && PlainAscii8(s.data() + i)) {
      std::memcpy(o, s.data() + i, 8);
      o += 8;
      i += 8;
    }
    if (i >= s.size()) break;
    char ch = s[i];
    uint8_t c = uint8_t(ch);
    if (c >= 0x80) {
      bool well_formed = false;
      const size_t len = Utf8Prefix(p + i, s.size() - i, &well_formed);
      if (well_formed) {
        std::memcpy(o, p + i, len);
        o += len;
        i += len - 1;
      } else if (invalid == InvalidUtf8::kReplacement) {
        o = WriteLiteral(o, "\xEF\xBF\xBD");  // one U+FFFD for the rejected prefix
        i += len - 1;
      } else {
        o = WriteEscapedByte(o, c, /*json=*/true);
      }
    } else if (c == '"' || c == '\\') {
      *o++ = '\\';
      *o++ = ch;
    } else if (c < 0x20) {
      *o++ = '\\';
      if (short_escapes && kShortEscapes[c] != 0) {
        *o++ = kShortEscapes[c];
        continue;
      }
      *o++ = 'u';
      *o++ = '0';
      *o++ = '0';
      *o++ = kHexDigits[c >> 4];
      *o++ = kHexDigits[c & 15];
    } else {
      *o++ = ch;
    }
  }
  *o++ = '"';
  Commit(size_t(o - start));
}

std::string EscapeInvalidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const uint8_t* p = reinterpret_cast<const uint8_t*>(s.data());
  for (size_t i = 0; i < s.size();) {
    size_t len = p[i] < 0x80 ? 1 : Utf8SequenceLength(p + i, s.size() - i);
    if (len == 0) {
      char buf[5];
      WriteEscapedByte(buf, p[i], /*json=*/false);
      out.append(buf, 4);
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

namespace {

bool IsUtf8(std::string_view s) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(s.data());
  for (size_t i = 0; i < s.size();) {
    size_t len = p[i] < 0x80 ? 1 : Utf8SequenceLength(p + i, s.size() - i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// Room for nlohmann's rendering of a double (its serializer's number buffer is 64 bytes).
constexpr size_t kMaxDoubleChars = 64;

void WriteDouble(Output* out, double v) {
  if (!std::isfinite(v)) return out->Append("null");
  char* p = out->Reserve(kMaxDoubleChars);
  // nlohmann's own Grisu2 formatting (what j.dump() calls), so the digits are exactly those of before.
  out->Commit(size_t(::nlohmann::detail::to_chars(p, p + kMaxDoubleChars, v) - p));
}

// A newline and `spaces` spaces (pretty printing only).
void NewLine(Output* out, int spaces) {
  char* p = out->Reserve(size_t(spaces) + 1);
  *p = '\n';
  std::memset(p + 1, ' ', size_t(spaces));
  out->Commit(size_t(spaces) + 1);
}

// Reports are nlohmann::json (keys sorted; bytes that are not UTF-8 as \xNN, as EscapeInvalidUtf8 writes
// them); decoded records of internal topics are nlohmann::ordered_json (keys in insertion order; U+FFFD,
// as CompactJson's error_handler_t::replace wrote them).
template <typename Json>
constexpr Output::InvalidUtf8 kInvalidUtf8 =
    std::is_same_v<Json, nlohmann::ordered_json> ? Output::InvalidUtf8::kReplacement : Output::InvalidUtf8::kAsText;

template <typename Json>
void WriteString(Output* out, const std::string& s) {
  out->AppendJsonString(s, Output::ControlEscapes::kShort, kInvalidUtf8<Json>);
}

template <typename Json>
void WriteValue(Output* out, const Json& j, int indent, int level);

// The members of an object, (key, value) pairs in print order.
template <typename Json, typename Members>
void WriteMembers(Output* out, const Members& members, int indent, int level) {
  out->Append('{');
  bool first = true;
  for (const auto& [key, value] : members) {
    if (!first) out->Append(',');
    first = false;
    if (indent >= 0) NewLine(out, indent * (level + 1));
    WriteString<Json>(out, key);
    out->Append(indent >= 0 ? std::string_view(": ") : std::string_view(":"));
    if constexpr (std::is_pointer_v<std::decay_t<decltype(value)>>) {
      WriteValue<Json>(out, *value, indent, level + 1);
    } else {
      WriteValue<Json>(out, value, indent, level + 1);
    }
  }
  if (indent >= 0) NewLine(out, indent * level);
  out->Append('}');
}

template <typename Json>
void WriteObject(Output* out, const Json& j, int indent, int level) {
  const auto& members = j.template get_ref<const typename Json::object_t&>();
  if (members.empty()) return out->Append("{}");
  if constexpr (kInvalidUtf8<Json> == Output::InvalidUtf8::kAsText) {
    bool keys_utf8 = true;
    for (const auto& [key, value] : members) keys_utf8 = keys_utf8 && IsUtf8(key);
    if (!keys_utf8) {
      // The copy DumpJson printed re-inserted every key escaped: ordered by the escaped key, and of two
      // keys that escape alike, the value of the later one kept.
      std::map<std::string, const Json*> escaped;
      for (const auto& [key, value] : members) escaped[EscapeInvalidUtf8(key)] = &value;
      return WriteMembers<Json>(out, escaped, indent, level);
    }
  }
  WriteMembers<Json>(out, members, indent, level);
}

template <typename Json>
void WriteArray(Output* out, const Json& j, int indent, int level) {
  const auto& elements = j.template get_ref<const typename Json::array_t&>();
  if (elements.empty()) return out->Append("[]");
  out->Append('[');
  bool first = true;
  for (const Json& e : elements) {
    if (!first) out->Append(',');
    first = false;
    if (indent >= 0) NewLine(out, indent * (level + 1));
    WriteValue<Json>(out, e, indent, level + 1);
  }
  if (indent >= 0) NewLine(out, indent * level);
  out->Append(']');
}

template <typename Json>
void WriteValue(Output* out, const Json& j, int indent, int level) {
  using Type = nlohmann::detail::value_t;
  switch (j.type()) {
    case Type::object: return WriteObject(out, j, indent, level);
    case Type::array: return WriteArray(out, j, indent, level);
    case Type::string: return WriteString<Json>(out, j.template get_ref<const std::string&>());
    case Type::boolean: return out->AppendBool(j.template get<bool>());
    case Type::number_integer: return out->AppendInt(j.template get<int64_t>());
    case Type::number_unsigned: return out->AppendUint(j.template get<uint64_t>());
    case Type::number_float: return WriteDouble(out, j.template get<double>());
    case Type::null: return out->Append("null");
    case Type::binary:
    case Type::discarded: break;
  }
  out->Append(j.dump());  // nothing klf prints holds these; printed as nlohmann prints them
}

}  // namespace

void WriteJson(Output* out, const nlohmann::json& j, int indent) { WriteValue(out, j, indent, 0); }

void WriteDecodedJson(Output* out, const nlohmann::ordered_json& j) { WriteValue(out, j, -1, 0); }

std::string DecodedJsonText(const nlohmann::ordered_json& j) {
  std::string text;
  {
    Output out(&text, 256);
    WriteDecodedJson(&out, j);
  }
  return text;
}

void PrintJson(const nlohmann::json& j, int indent) {
  Output out(1);
  WriteJson(&out, j, indent);
  out.Append('\n');
  out.Flush();
}

void PrintText(std::string_view text) {
  Output out(1, std::max<size_t>(text.size(), 1));  // a buffer of the text's size: one write
  out.Append(text);
}

nlohmann::json IntOrNull(const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string IntOrNone(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "none"; }

nlohmann::json ProblemsJson(const CollectingSink& sink) {
  nlohmann::json problems = nlohmann::json::array();
  for (const Problem& p : sink.problems)
    problems.push_back({{"file", p.file},
                        {"position", p.position},
                        {"check", p.check},
                        {"message", p.message},
                        {"severity", SeverityName(p.severity)}});
  return problems;
}

}  // namespace klf::cli
