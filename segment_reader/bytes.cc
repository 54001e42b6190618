#include "segment_reader/bytes.h"

#include <cstdio>

#include <fmt/format.h>

namespace klf {

void PutBE16(std::string* out, uint16_t v) {
  uint8_t b[2];
  StoreBE16(b, v);
  out->append(reinterpret_cast<char*>(b), 2);
}
void PutBE32(std::string* out, uint32_t v) {
  uint8_t b[4];
  StoreBE32(b, v);
  out->append(reinterpret_cast<char*>(b), 4);
}
void PutBE64(std::string* out, uint64_t v) {
  uint8_t b[8];
  StoreBE64(b, v);
  out->append(reinterpret_cast<char*>(b), 8);
}

static void PutUvarint64(std::string* out, uint64_t u) {
  while (u >= 0x80) {
    out->push_back(char(uint8_t(u) | 0x80));
    u >>= 7;
  }
  out->push_back(char(uint8_t(u)));
}

void PutUvarint(std::string* out, uint32_t v) { PutUvarint64(out, v); }
void PutVarint(std::string* out, int32_t v) { PutUvarint64(out, uint32_t((uint32_t(v) << 1) ^ uint32_t(v >> 31))); }
void PutVarlong(std::string* out, int64_t v) { PutUvarint64(out, (uint64_t(v) << 1) ^ uint64_t(v >> 63)); }

static int Uvarint64Size(uint64_t u) {
  int n = 1;
  while (u >= 0x80) {
    u >>= 7;
    ++n;
  }
  return n;
}
int VarintSize(int32_t v) { return Uvarint64Size(uint32_t((uint32_t(v) << 1) ^ uint32_t(v >> 31))); }
int VarlongSize(int64_t v) { return Uvarint64Size((uint64_t(v) << 1) ^ uint64_t(v >> 63)); }

bool ByteCursor::ReadI8(int8_t* v) {
  if (remaining() < 1) return Fail("unexpected end of data reading int8");
  *v = int8_t(data_[pos_]);
  pos_ += 1;
  return true;
}
bool ByteCursor::ReadI16(int16_t* v) {
  if (remaining() < 2) return Fail("unexpected end of data reading int16");
  *v = LoadI16(data_.data() + pos_);
  pos_ += 2;
  return true;
}
bool ByteCursor::ReadI32(int32_t* v) {
  if (remaining() < 4) return Fail("unexpected end of data reading int32");
  *v = LoadI32(data_.data() + pos_);
  pos_ += 4;
  return true;
}
bool ByteCursor::ReadI64(int64_t* v) {
  if (remaining() < 8) return Fail("unexpected end of data reading int64");
  *v = LoadI64(data_.data() + pos_);
  pos_ += 8;
  return true;
}

bool ByteCursor::ReadUvarint(uint32_t* v) {
  uint32_t value = 0;
  size_t p = pos_;
  for (int i = 0; i < 5; ++i) {
    if (p >= data_.size()) return Fail("unexpected end of data reading varint");
    uint8_t b = data_[p++];
    if (i == 4) {
      if (b & 0x80) return Fail("varint longer than 5 bytes");
      value |= uint32_t(b) << 28;  // bits above bit 3 fall off, as in Kafka
      break;
    }
    value |= uint32_t(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) break;
  }
  pos_ = p;
  *v = value;
  return true;
}

bool ByteCursor::ReadVarint(int32_t* v) {
  uint32_t u;
  if (!ReadUvarint(&u)) return false;
  *v = int32_t((u >> 1) ^ (~(u & 1) + 1));
  return true;
}

bool ByteCursor::ReadVarlong(int64_t* v) {
  uint64_t value = 0;
  size_t p = pos_;
  int shift = 0;
  while (true) {
    if (p >= data_.size()) return Fail("unexpected end of data reading varlong");
    uint8_t b = data_[p++];
    value |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
    if (shift > 63) return Fail("varlong longer than 10 bytes");
  }
  pos_ = p;
  *v = int64_t((value >> 1) ^ (~(value & 1) + 1));
  return true;
}

bool ByteCursor::ReadBytes(size_t n, Bytes* out) {
  if (remaining() < n) return Fail("unexpected end of data reading bytes");
  *out = data_.subspan(pos_, n);
  pos_ += n;
  return true;
}

std::string HexEncode(Bytes b) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (uint8_t c : b) {
    s.push_back(kHex[c >> 4]);
    s.push_back(kHex[c & 15]);
  }
  return s;
}

std::string Base64Encode(Bytes b) {
  static const char* kAlpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string s;
  s.reserve((b.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= b.size(); i += 3) {
    uint32_t n = uint32_t(b[i]) << 16 | uint32_t(b[i + 1]) << 8 | b[i + 2];
    s.push_back(kAlpha[n >> 18]);
    s.push_back(kAlpha[(n >> 12) & 63]);
    s.push_back(kAlpha[(n >> 6) & 63]);
    s.push_back(kAlpha[n & 63]);
  }
  if (i + 1 == b.size()) {
    uint32_t n = uint32_t(b[i]) << 16;
    s.push_back(kAlpha[n >> 18]);
    s.push_back(kAlpha[(n >> 12) & 63]);
    s += "==";
  } else if (i + 2 == b.size()) {
    uint32_t n = uint32_t(b[i]) << 16 | uint32_t(b[i + 1]) << 8;
    s.push_back(kAlpha[n >> 18]);
    s.push_back(kAlpha[(n >> 12) & 63]);
    s.push_back(kAlpha[(n >> 6) & 63]);
    s.push_back('=');
  }
  return s;
}

// UTF-8 with every byte that is not part of a well-formed sequence escaped as \xNN. A literal
// backslash is kept as is: the escape is for display, and --bytes hex|base64 is exact.
static std::string Utf8Escaped(Bytes b) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.reserve(b.size());
  size_t i = 0;
  while (i < b.size()) {
    const uint8_t c = b[i];
    // Every control character (TAB and DEL included) is escaped too: a dump line stays one line with
    // one meaning, and columns split on TAB stay aligned.
    const size_t len = c < 0x80 ? (c >= 0x20 && c != 0x7f ? 1 : 0) : Utf8SequenceLength(b.data() + i, b.size() - i);
    if (len > 0) {
      s.append(reinterpret_cast<const char*>(b.data() + i), len);
      i += len;
    } else {
      s += "\\x";
      s.push_back(kHex[c >> 4]);
      s.push_back(kHex[c & 15]);
      i += 1;
    }
  }
  return s;
}

std::string FormatBytes(Bytes b, BytesFormat f) {
  switch (f) {
    case BytesFormat::kText: return Utf8Escaped(b);
    case BytesFormat::kBase64: return Base64Encode(b);
    case BytesFormat::kHex: return HexEncode(b);
  }
  return {};
}

}  // namespace klf

namespace klf {

std::string FormatEpochMs(int64_t ms) {
  constexpr int64_t kMsPerDay = 86400000;
  constexpr int64_t kEndOfYear9999 = 253402300800000;  // 10000-01-01T00:00:00Z
  if (ms < 0 || ms >= kEndOfYear9999) return {};
  const int64_t days = ms / kMsPerDay, in_day = ms % kMsPerDay;
  // Civil date from days since 1970-01-01 (H. Hinnant's days_from_civil inverse), proleptic Gregorian.
  const int64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  char buf[80];  // room for any int the compiler can imagine (-Wformat-truncation)
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", int(year), int(month), int(day),
                int(in_day / 3600000), int(in_day / 60000 % 60), int(in_day / 1000 % 60), int(in_day % 1000));
  return buf;
}

std::string WithWallClock(int64_t ms) {
  std::string iso = FormatEpochMs(ms);
  return iso.empty() ? std::to_string(ms) : std::to_string(ms) + " (" + iso + ")";
}

std::string HumanDuration(int64_t ms) {
  if (ms < 0) return fmt::format("{} ms", ms);
  if (ms < 120000) return fmt::format("{} s", ms / 1000);
  if (ms < 7200000) return fmt::format("{} min", ms / 60000);
  if (ms < 172800000) return fmt::format("{:.1f} h", ms / 3600000.0);
  return fmt::format("{:.1f} days", ms / 86400000.0);
}

}  // namespace klf
