// Byte-level primitives of Kafka's formats: big-endian integers and zig-zag varints
// (spec kafka-on-disk-format.md §5.2), with Kafka's decoder quirks replicated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace klf {

using Bytes = std::span<const uint8_t>;

inline std::string_view AsStringView(Bytes b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }
inline Bytes AsBytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

inline uint16_t LoadBE16(const uint8_t* p) { return uint16_t(p[0]) << 8 | p[1]; }
inline uint32_t LoadBE32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
inline uint64_t LoadBE64(const uint8_t* p) { return uint64_t(LoadBE32(p)) << 32 | LoadBE32(p + 4); }
inline int16_t LoadI16(const uint8_t* p) { return int16_t(LoadBE16(p)); }
inline int32_t LoadI32(const uint8_t* p) { return int32_t(LoadBE32(p)); }
inline int64_t LoadI64(const uint8_t* p) { return int64_t(LoadBE64(p)); }

inline void StoreBE16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
inline void StoreBE32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}
inline void StoreBE64(uint8_t* p, uint64_t v) {
  StoreBE32(p, uint32_t(v >> 32));
  StoreBE32(p + 4, uint32_t(v));
}

// Append helpers for writers.
void PutBE16(std::string* out, uint16_t v);
void PutBE32(std::string* out, uint32_t v);
void PutBE64(std::string* out, uint64_t v);
void PutVarint(std::string* out, int32_t v);    // zig-zag
void PutVarlong(std::string* out, int64_t v);   // zig-zag
void PutUvarint(std::string* out, uint32_t v);  // no zig-zag
int VarintSize(int32_t v);
int VarlongSize(int64_t v);

// A forward cursor over a byte span. Every read checks bounds; a failed read sets `ok() == false`
// and leaves the cursor where the failed field started, so the caller can report that position.
class ByteCursor {
 public:
  explicit ByteCursor(Bytes b) : data_(b) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  bool ok() const { return ok_; }
  const char* error() const { return error_; }

  bool ReadI8(int8_t* v);
  bool ReadI16(int16_t* v);
  bool ReadI32(int32_t* v);
  bool ReadI64(int64_t* v);
  // Kafka's ByteUtils.readVarint: at most 5 bytes; a 5th byte with bit 7 set is an error;
  // bits of the 5th byte above bit 3 are dropped.
  bool ReadVarint(int32_t* v);
  // Kafka's ByteUtils.readVarlong: an error if the continuation bit is still set after 10 bytes.
  bool ReadVarlong(int64_t* v);
  bool ReadUvarint(uint32_t* v);
  bool ReadBytes(size_t n, Bytes* out);

 private:
  bool Fail(const char* why) {
    ok_ = false;
    error_ = why;
    return false;
  }
  Bytes data_;
  size_t pos_ = 0;
  bool ok_ = true;
  const char* error_ = "";
};

// Unicode's well-formed UTF-8 (Table 3-7), read from p[0] (a byte >= 0x80): returns the length of the
// longest prefix at p that a well-formed sequence can start with (a lead byte and the continuation
// bytes it allows; 1 for a byte that starts none) and sets *well_formed when that prefix is a whole
// sequence. Overlong forms, surrogates and values past U+10FFFF are not well-formed. The one UTF-8
// check behind every `\xNN` escape (FormatBytes here, cli/output.cc's writers) and every U+FFFD that
// cli/output.cc writes in its place (one for each such prefix, as nlohmann's decoder rejects them).
inline size_t Utf8Prefix(const uint8_t* p, size_t n, bool* well_formed) {
  const uint8_t c = p[0];
  uint8_t lo = 0x80, hi = 0xBF;  // what the second byte may be
  size_t len = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    lo = c == 0xE0 ? 0xA0 : lo;  // no overlong form
    hi = c == 0xED ? 0x9F : hi;  // no surrogate
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    lo = c == 0xF0 ? 0x90 : lo;  // no overlong form
    hi = c == 0xF4 ? 0x8F : hi;  // nothing above U+10FFFF
  } else {
    *well_formed = false;
    return 1;
  }
  size_t k = 1;
  if (k < n && p[k] >= lo && p[k] <= hi) {
    for (++k; k < len && k < n && (p[k] & 0xC0) == 0x80;) ++k;
  }
  *well_formed = k == len;
  return k;
}

// The length of the well-formed UTF-8 sequence of two to four bytes starting at p[0] (a byte >= 0x80),
// or 0 (Utf8Prefix).
inline size_t Utf8SequenceLength(const uint8_t* p, size_t n) {
  bool well_formed = false;
  const size_t len = Utf8Prefix(p, n, &well_formed);
  return well_formed ? len : 0;
}

// Renders bytes for humans and JSON according to --bytes: text (UTF-8, invalid bytes as \xNN),
// base64 or hex.
enum class BytesFormat { kText, kBase64, kHex };
std::string FormatBytes(Bytes b, BytesFormat f);

// An epoch-millisecond wall-clock time (a record timestamp, a producer's last timestamp, a delete
// horizon, a clock) as ISO-8601 UTC with milliseconds, "2023-11-14T22:13:20.000Z"; "" when the value
// is no such time: negative (Kafka's -1 "no timestamp", Long.MIN_VALUE) or past 9999-12-31 (Long.MAX_VALUE).
std::string FormatEpochMs(int64_t ms);
// How text and HTML print a wall-clock time: the raw number, then the ISO time in parentheses,
// "1700000000000 (2023-11-14T22:13:20.000Z)"; the raw number alone when FormatEpochMs gives "". The
// one rendering of times for humans; JSON keeps the integers.
std::string WithWallClock(int64_t ms);
// How text prints a length of time: "45 s", "12 min", "3.5 h", "2.0 days" (a negative one in ms).
std::string HumanDuration(int64_t ms);
std::string Base64Encode(Bytes b);
std::string HexEncode(Bytes b);

}  // namespace klf
