// Buffered output for commands that print a lot (dump prints one line per batch or record).
//
// Everything a command prints on stdout goes through one Output: a 1 MiB buffer written with write(2)
// when full, so printing costs a memcpy per field instead of a stdio call. The byte renderers below
// write straight into that buffer (no std::string per key or value): they are the hot path of
// `klf dump --records --json`. Their results are exactly those of klf::FormatBytes (bytes.h) — text
// mode, hex, base64 — plus JSON string escaping when asked; tests/cli/output_test.cc checks that.
#pragma once

#include <cstdint>
#include <optional>
#include <cstring>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "segment_reader/bytes.h"
#include "segment_reader/problem.h"

namespace klf::cli {

// Raw renderers: each writes at `o`, which must have room for the Max* bound, and returns the end.
// Output's Append* methods reserve and call these; a printer that writes a whole record at once
// reserves the sum of the bounds once and calls them directly.
constexpr size_t kMaxIntChars = 20;
char* WriteInt(char* o, int64_t v);
char* WriteUint(char* o, uint64_t v);
inline char* WriteLiteral(char* o, std::string_view s) {
  std::memcpy(o, s.data(), s.size());
  return o + s.size();
}
// Upper bound of the rendered size of n bytes (text mode inside JSON: \\xNN is 5 characters).
inline size_t MaxRenderedBytes(size_t n, BytesFormat format) {
  switch (format) {
    case BytesFormat::kHex: return 2 * n;
    case BytesFormat::kBase64: return (n + 2) / 3 * 4;
    case BytesFormat::kText: break;
  }
  return 5 * n;
}
char* WriteBytes(char* o, Bytes b, BytesFormat format, bool json);
char* WriteHex(char* o, Bytes b);
char* WriteBase64(char* o, Bytes b);
char* WriteText(char* o, Bytes b, bool json);

class Output {
 public:
  // Writes to file descriptor `fd` (1 = stdout).
  explicit Output(int fd, size_t capacity = size_t(1) << 20);
  // Captures everything into *capture instead (tests).
  explicit Output(std::string* capture, size_t capacity = size_t(1) << 16);
  ~Output();  // flushes
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  // Makes room for n more bytes and returns where to write them; call Commit(n) after writing.
  char* Reserve(size_t n) {
    if (cap_ - len_ < n) Grow(n);
    return buf_ + len_;
  }
  void Commit(size_t n) { len_ += n; }

  void Append(std::string_view s) {
    if (cap_ - len_ < s.size()) Grow(s.size());
    std::memcpy(buf_ + len_, s.data(), s.size());
    len_ += s.size();
  }
  void Append(char c) {
    if (len_ == cap_) Grow(1);
    buf_[len_++] = c;
  }
  void AppendInt(int64_t v) {
    char* p = Reserve(kMaxIntChars);
    Commit(size_t(WriteInt(p, v) - p));
  }
  void AppendUint(uint64_t v) {
    char* p = Reserve(kMaxIntChars);
    Commit(size_t(WriteUint(p, v) - p));
  }
  void AppendBool(bool v) { Append(v ? std::string_view("true") : std::string_view("false")); }
  // A label and its value ("offset: 12"), as the text printers write them.
  void Field(std::string_view label, int64_t v) {
    Append(label);
    AppendInt(v);
  }
  void UintField(std::string_view label, uint64_t v) {
    Append(label);
    AppendUint(v);
  }
  void BoolField(std::string_view label, bool v) {
    Append(label);
    AppendBool(v);
  }

  // Bytes as --bytes asks. `json` escapes for the inside of a JSON string (the quotes are the
  // caller's): text mode already turns control bytes into \xNN, so only '"', '\\' and tab remain.
  // Longer than kRenderSliceBytes, they are rendered slice by slice, so that one huge value (up to
  // the decompression cap) never grows the buffer to five times its size.
  void AppendBytes(Bytes b, BytesFormat format, bool json) {
    if (b.size() > kRenderSliceBytes) return AppendBytesSliced(b, format, json);
    char* p = Reserve(MaxRenderedBytes(b.size(), format));
    Commit(size_t(WriteBytes(p, b, format, json) - p));
  }
  static constexpr size_t kRenderSliceBytes = size_t(64) << 10;
  // How a JSON string literal writes a control character (below 0x20).
  enum class ControlEscapes {
    kUnicode,  // every one as \u00XX: the JSON Lines of dump, consume and verify (cli.md)
    kShort,    // \b \f \n \r \t, the others as \u00XX: what nlohmann's dump wrote for the reports (WriteJson)
  };
  // What a string literal makes of bytes that are not well-formed UTF-8.
  enum class InvalidUtf8 {
    kAsText,       // each byte as the text \xNN (EscapeInvalidUtf8): names, paths, messages, reports
    kReplacement,  // U+FFFD for each rejected sequence, as nlohmann's error_handler_t::replace wrote the
                   // decoded records of internal topics (segment_reader's CompactJson)
  };
  // A whole JSON string literal with quotes, for names and messages that are our own text or file
  // paths: escapes '"', '\\' and control characters as `controls` says; a byte that is not part of
  // well-formed UTF-8 -- a file name is bytes -- becomes the text \xNN, as EscapeInvalidUtf8 writes it
  // (or U+FFFD, `invalid`).
  // Everything else (DEL, '/', well-formed UTF-8) is copied. The one string escaper of every JSON klf prints.
  void AppendJsonString(std::string_view s, ControlEscapes controls = ControlEscapes::kUnicode,
                        InvalidUtf8 invalid = InvalidUtf8::kAsText);

  // Writes the buffer out. Returns false once a write has failed (the error is printed once).
  bool Flush();
  bool failed() const { return failed_; }
  // Bytes accepted so far (written or buffered).
  uint64_t total() const { return flushed_ + len_; }
  size_t capacity() const { return cap_; }

 private:
  void Grow(size_t n);
  void AppendBytesSliced(Bytes b, BytesFormat format, bool json);

  int fd_ = -1;
  std::string* capture_ = nullptr;
  char* buf_ = nullptr;
  size_t len_ = 0;
  size_t cap_ = 0;
  uint64_t flushed_ = 0;
  bool failed_ = false;
};

// Names and paths are bytes (a directory name need not be UTF-8), and nlohmann's dump throws
// (type_error 316) on a string that is not UTF-8. klf prints them as --bytes text prints keys: every
// byte that is not part of well-formed UTF-8 as the four characters \xNN; everything else unchanged.
std::string EscapeInvalidUtf8(std::string_view s);

// Writes the document `j` onto `out`: the bytes nlohmann's j.dump(indent) gives for a copy of `j` in
// which every string and object key that is not UTF-8 went through EscapeInvalidUtf8 (so printing never
// throws). indent -1 is one line ({"a":1,"b":[1,2]}); indent N is nlohmann's layout (N spaces per level,
// "key": value, empty containers as {} and []). Keys in the object's order (sorted for nlohmann::json;
// an object with a key that is not UTF-8 in the order of the escaped keys, as the copy had them);
// doubles as nlohmann writes them (shortest round trip, null when not finite); strings through
// Output::AppendJsonString(kShort). Every --json report klf builds as a document is printed by it;
// tests/cli/write_json_test.cc checks it against nlohmann's dump.
void WriteJson(Output* out, const nlohmann::json& j, int indent = -1);

// A decoded record of an internal topic or a quorum-state file (segment_reader's OrderedJson: keys in
// the schema's order) on one line, the bytes nlohmann's dump(-1, ' ', false, error_handler_t::replace)
// wrote (segment_reader's CompactJson): WriteJson's layout, with U+FFFD for what is not UTF-8.
void WriteDecodedJson(Output* out, const nlohmann::ordered_json& j);
// The same into a string (for a printer that takes the value as text).
std::string DecodedJsonText(const nlohmann::ordered_json& j);

// WriteJson of `j` and a newline on stdout (fd 1), written before returning, for a command that
// prints one document. A failed write is reported on stderr (Output::Flush). (No command writes stdout
// through stdio: every report goes out through Output.)
void PrintJson(const nlohmann::json& j, int indent = -1);
// A command's text report on stdout (fd 1) as it is, written before returning: PrintJson's twin for
// the text default, so both go out through Output.
void PrintText(std::string_view text);

// The problems of a sink as a JSON array of {file, position, check, message, severity}.
nlohmann::json ProblemsJson(const CollectingSink& sink);

// A number, or null when unset (an optional offset or time in a report).
nlohmann::json IntOrNull(const std::optional<int64_t>& v);
// Its text twin: the number, or "none".
std::string IntOrNone(const std::optional<int64_t>& v);

}  // namespace klf::cli
