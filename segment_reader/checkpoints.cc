// Text files of partition and log directories (spec kafka-on-disk-format.md §1.1, §11).
//
// Hand-written line and number parsing: Kafka reads these with java.io.BufferedReader.readLine,
// Integer/Long.parseInt and regex splits, and we replicate exactly what those accept (no general
// library gives Java's rules), while keeping byte positions for problem reports.
#include "segment_reader/checkpoints.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

namespace klf {
namespace {

struct Line {
  std::string_view text;  // without the terminator
  size_t position = 0;    // byte position of the line start
};

// java.io.BufferedReader.readLine: a line ends at '\n', '\r' or "\r\n"; the last line need not be
// terminated; an empty input has no lines.
std::vector<Line> SplitLines(std::string_view text) {
  std::vector<Line> lines;
  size_t start = 0;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n' || c == '\r') {
      lines.push_back(Line{text.substr(start, i - start), start});
      i += (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ? 2 : 1;
      start = i;
    } else {
      ++i;
    }
  }
  if (start < text.size()) lines.push_back(Line{text.substr(start), start});
  return lines;
}

// Integer.parseInt / Long.parseLong: optional '+' or '-', then one or more ASCII digits, in range.
template <typename T>
bool ParseJavaInteger(std::string_view s, T* out) {
  if (s.empty()) return false;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
    if (s.empty()) return false;
  }
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  // Parse the magnitude as unsigned so that the minimum value (-2^63) is accepted.
  uint64_t magnitude = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude);
  if (ec != std::errc() || ptr != s.data() + s.size()) return false;
  using U = std::make_unsigned_t<T>;
  const uint64_t max_pos = uint64_t(std::numeric_limits<T>::max());
  if (negative) {
    if (magnitude > max_pos + 1) return false;
    *out = T(U(0) - U(magnitude));
  } else {
    if (magnitude > max_pos) return false;
    *out = T(magnitude);
  }
  return true;
}

// java.util.regex "\s": [ \t\n\x0B\f\r].
bool IsJavaSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\x0B' || c == '\f' || c == '\r'; }

// Pattern.compile("\\s+").split(line): a leading separator yields an empty first token; trailing
// empty tokens are dropped.
std::vector<std::string_view> SplitWhitespace(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  size_t start = 0;
  while (i < s.size()) {
    if (IsJavaSpace(s[i])) {
      size_t j = i;
      while (j < s.size() && IsJavaSpace(s[j])) ++j;
      // Java drops a leading empty token only when the match at 0 is zero-length; "\s+" is never
      // zero-length, so a leading separator gives an empty first token.
      parts.push_back(s.substr(start, i - start));
      i = j;
      start = j;
    } else {
      ++i;
    }
  }
  parts.push_back(s.substr(start));
  while (!parts.empty() && parts.back().empty()) parts.pop_back();
  return parts;
}

std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 200)) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(char(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (s.size() > 200) out += "...";
  return out;
}

// CheckpointFile.CheckpointReadBuffer.read (§11.1). `parse_line` returns false for a malformed line.
template <typename Entry, typename ParseLine>
bool ParseCheckpoint(const std::string& file, std::string_view text, int expected_version, const char* entry_format,
                     std::vector<Entry>* out, ProblemSink* sink, ParseLine parse_line) {
  out->clear();
  std::vector<Line> lines = SplitLines(text);
  if (lines.empty()) return true;  // empty file: no entries
  int32_t version = 0;
  if (!ParseJavaInteger(lines[0].text, &version)) {
    Report(sink, Severity::kError, file, lines[0].position, "checkpoint-line",
           fmt::format("malformed version line \"{}\"; expected the integer {}", Printable(lines[0].text),
                       expected_version));
    return false;
  }
  if (version != expected_version) {
    Report(sink, Severity::kError, file, lines[0].position, "checkpoint-version",
           fmt::format("unrecognised version {}; expected version {}", version, expected_version));
    return false;
  }
  if (lines.size() < 2) return true;  // count line missing: no entries
  int32_t expected_size = 0;
  if (!ParseJavaInteger(lines[1].text, &expected_size)) {
    Report(sink, Severity::kError, file, lines[1].position, "checkpoint-line",
           fmt::format("malformed entry count line \"{}\"; expected an integer", Printable(lines[1].text)));
    return false;
  }
  for (size_t i = 2; i < lines.size(); ++i) {
    Entry e;
    if (!parse_line(lines[i].text, &e)) {
      Report(sink, Severity::kError, file, lines[i].position, "checkpoint-line",
             fmt::format("malformed line {} \"{}\"; expected \"{}\"", i + 1, Printable(lines[i].text), entry_format));
      return false;
    }
    out->push_back(std::move(e));
  }
  if (int64_t(out->size()) != int64_t(expected_size)) {
    Report(sink, Severity::kError, file, lines[1].position, "checkpoint-count",
           fmt::format("Expected [{}] entries in the checkpoint file, but found [{}]", expected_size, out->size()));
    return false;
  }
  return true;
}

int Base64UrlValue(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

std::string TopicPartition::ToString() const { return fmt::format("{}-{}", topic, partition); }

std::optional<TopicPartition> ParsePartitionDirName(const std::string& dir_name) {
  // LocalLog.parseTopicPartitionName: strip ".<uuid>-delete|-future|-stray" (the whole suffix must
  // match <something>-<something>.<something>-<suffix>), then split at the last '-'.
  std::string_view name = dir_name;
  if (name.empty() || name.find('-') == std::string_view::npos) return std::nullopt;
  for (std::string_view suffix : {"-delete", "-future", "-stray"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      size_t dot = name.rfind('.');
      if (dot == std::string_view::npos || dot + 1 >= name.size() - suffix.size()) return std::nullopt;
      name = name.substr(0, dot);
      break;
    }
  }
  size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 >= name.size()) return std::nullopt;
  std::string_view topic = name.substr(0, dash);
  std::string_view partition = name.substr(dash + 1);
  for (char c : partition) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  for (char c : topic) {
    if (IsJavaSpace(c) || c == '/' || c == '\0') return std::nullopt;
  }
  int32_t p = 0;
  if (!ParseJavaInteger(partition, &p)) return std::nullopt;
  return TopicPartition{std::string(topic), p};
}

bool ParseOffsetCheckpoint(const std::string& file, std::string_view text, std::vector<OffsetCheckpointEntry>* out,
                           ProblemSink* sink) {
  // OffsetCheckpointFile.Formatter.fromString: exactly 3 whitespace-separated tokens.
  return ParseCheckpoint(
      file, text, 0, "<topic> <partition> <offset>", out, sink, [](std::string_view line, OffsetCheckpointEntry* e) {
        auto parts = SplitWhitespace(line);
        if (parts.size() != 3) return false;
        e->tp.topic = std::string(parts[0]);
        return ParseJavaInteger(parts[1], &e->tp.partition) && ParseJavaInteger(parts[2], &e->offset);
      });
}

bool ParseLeaderEpochCheckpoint(const std::string& file, std::string_view text, std::vector<LeaderEpochEntry>* out,
                                ProblemSink* sink) {
  // LeaderEpochCheckpointFile.Formatter.fromString: exactly 2 tokens.
  bool ok = ParseCheckpoint(
      file, text, 0, "<leaderEpoch> <startOffset>", out, sink, [](std::string_view line, LeaderEpochEntry* e) {
        auto parts = SplitWhitespace(line);
        if (parts.size() != 2) return false;
        return ParseJavaInteger(parts[0], &e->epoch) && ParseJavaInteger(parts[1], &e->start_offset);
      });
  if (!ok) return false;
  // LeaderEpochFileCache keeps epochs and start offsets strictly ascending; a file that is not would
  // be "fixed" by Kafka on load by dropping entries, which is worth knowing about.
  for (size_t i = 1; i < out->size(); ++i) {
    const auto& prev = (*out)[i - 1];
    const auto& cur = (*out)[i];
    if (cur.epoch <= prev.epoch || cur.start_offset < prev.start_offset) {
      std::vector<Line> lines = SplitLines(text);
      Report(sink, Severity::kWarning, file, lines[i + 2].position, "leader-epoch-order",
             fmt::format("entry {} (epoch {}, start offset {}) does not follow entry {} (epoch {}, start "
                         "offset {}); expected epochs and start offsets ascending",
                         i, cur.epoch, cur.start_offset, i - 1, prev.epoch, prev.start_offset));
      break;
    }
  }
  return true;
}

bool DecodeKafkaUuid(std::string_view s, uint8_t out[16]) {
  // Uuid.fromString: at most 24 characters, Base64.getUrlDecoder() must yield exactly 16 bytes.
  // The URL decoder accepts the 22-character unpadded form and the padded "==" form.
  if (s.size() == 24 && s.substr(22) == "==") s = s.substr(0, 22);
  if (s.size() != 22) return false;
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;
  for (char c : s) {
    int v = Base64UrlValue(c);
    if (v < 0) return false;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n < 16) out[n] = uint8_t(acc >> bits);
      ++n;
    }
  }
  return n == 16;
}

bool ParsePartitionMetadata(const std::string& file, std::string_view text, PartitionMetadata* out, ProblemSink* sink) {
  // PartitionMetadataReadBuffer.read: line 1 "version: <int>" (>= 0 for downgrade compatibility),
  // line 2 "topic_id: <Uuid>", each split once on ":\s+"; the zero Uuid is invalid.
  *out = PartitionMetadata{};
  std::vector<Line> lines = SplitLines(text);
  auto split = [&](size_t i, std::string_view key, std::string_view* value) {
    if (i >= lines.size()) {
      Report(sink, Severity::kError, file, text.size(), "partition-metadata-line",
             fmt::format("missing line {}; expected \"{}: ...\"", i + 1, key));
      return false;
    }
    std::string_view line = lines[i].text;
    size_t colon = line.find(':');
    size_t after = colon == std::string_view::npos ? line.size() : colon + 1;
    size_t value_start = after;
    while (value_start < line.size() && IsJavaSpace(line[value_start])) ++value_start;
    if (colon == std::string_view::npos || value_start == after || line.substr(0, colon) != key) {
      Report(sink, Severity::kError, file, lines[i].position, "partition-metadata-line",
             fmt::format("malformed line {} \"{}\"; expected \"{}: ...\"", i + 1, Printable(line), key));
      return false;
    }
    *value = line.substr(value_start);
    return true;
  };
  std::string_view version_text, topic_id_text;
  if (!split(0, "version", &version_text)) return false;
  if (!ParseJavaInteger(version_text, &out->version)) {
    Report(sink, Severity::kError, file, lines[0].position, "partition-metadata-line",
           fmt::format("malformed version \"{}\"; expected an integer", Printable(version_text)));
    return false;
  }
  if (out->version < 0) {
    Report(sink, Severity::kError, file, lines[0].position, "partition-metadata-version",
           fmt::format("unrecognized version {}; expected 0 or more", out->version));
    return false;
  }
  if (!split(1, "topic_id", &topic_id_text)) return false;
  uint8_t uuid[16];
  if (!DecodeKafkaUuid(topic_id_text, uuid)) {
    Report(sink, Severity::kError, file, lines[1].position, "partition-metadata-line",
           fmt::format("malformed topic id \"{}\"; expected a Kafka Uuid (22 characters of URL-safe "
                       "base64)",
                       Printable(topic_id_text)));
    return false;
  }
  bool zero = true;
  for (uint8_t b : uuid) zero = zero && b == 0;
  if (zero) {
    Report(sink, Severity::kError, file, lines[1].position, "partition-metadata-topic-id",
           "invalid topic id: the all-zero Uuid");
    return false;
  }
  out->topic_id = std::string(topic_id_text);
  if (lines.size() > 2) {
    // Kafka reads two lines and ignores the rest; Kafka never writes more.
    Report(sink, Severity::kWarning, file, lines[2].position, "partition-metadata-line",
           fmt::format("{} unexpected lines after topic_id (ignored by Kafka)", lines.size() - 2));
  }
  return true;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): java.util.Properties.load's grammar (continuations, comments, escapes)
bool ParseMetaProperties(const std::string& file, std::string_view text, MetaProperties* out, ProblemSink* sink) {
  // java.util.Properties.load: natural lines joined by a trailing odd backslash; '#' or '!' starts
  // a comment; the key ends at the first unescaped '=', ':' or whitespace; escapes \t \n \r \f \uXXXX.
  out->properties.clear();
  size_t i = 0;
  // NOLINTNEXTLINE(readability-function-cognitive-complexity): java.util.Properties' escapes, one case each (\t \n \r \f \uXXXX)
  auto unescape_into = [](std::string_view s, std::string* dst) {
    for (size_t k = 0; k < s.size(); ++k) {
      char c = s[k];
      if (c != '\\' || k + 1 >= s.size()) {
        dst->push_back(c);
        continue;
      }
      char n = s[++k];
      switch (n) {
        case 't': dst->push_back('\t'); break;
        case 'n': dst->push_back('\n'); break;
        case 'r': dst->push_back('\r'); break;
        case 'f': dst->push_back('\f'); break;
        case 'u': {
          uint32_t cp = 0;
          size_t d = 0;
          for (; d < 4 && k + 1 < s.size(); ++d) {
            char h = s[k + 1];
            int v = (h >= '0' && h <= '9')   ? h - '0'
                    : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                             : -1;
            if (v < 0) break;
            cp = cp * 16 + uint32_t(v);
            ++k;
          }
          // UTF-8 encode the BMP code point (surrogates are kept as they are).
          if (cp < 0x80) {
            dst->push_back(char(cp));
          } else if (cp < 0x800) {
            dst->push_back(char(0xC0 | (cp >> 6)));
            dst->push_back(char(0x80 | (cp & 0x3F)));
          } else {
            dst->push_back(char(0xE0 | (cp >> 12)));
            dst->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
            dst->push_back(char(0x80 | (cp & 0x3F)));
          }
          break;
        }
        default: dst->push_back(n);
      }
    }
  };
  auto is_ws = [](char c) { return c == ' ' || c == '\t' || c == '\f'; };
  while (i < text.size()) {
    // Skip leading whitespace and blank lines.
    while (i < text.size() && (is_ws(text[i]) || text[i] == '\n' || text[i] == '\r')) ++i;
    if (i >= text.size()) break;
    if (text[i] == '#' || text[i] == '!') {
      while (i < text.size() && text[i] != '\n' && text[i] != '\r') ++i;
      continue;
    }
    // Gather one logical line.
    std::string logical;
    while (i < text.size()) {
      size_t start = i;
      while (i < text.size() && text[i] != '\n' && text[i] != '\r') ++i;
      std::string_view natural = text.substr(start, i - start);
      size_t backslashes = 0;
      while (backslashes < natural.size() && natural[natural.size() - 1 - backslashes] == '\\') ++backslashes;
      if (i < text.size()) i += (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ? 2 : 1;
      if (backslashes % 2 == 1) {
        logical.append(natural.substr(0, natural.size() - 1));
        while (i < text.size() && is_ws(text[i])) ++i;  // leading whitespace of continuation lines
        continue;
      }
      logical.append(natural);
      break;
    }
    size_t k = 0;
    bool escaped = false;
    for (; k < logical.size(); ++k) {
      char c = logical[k];
      if (escaped) {
        escaped = false;
        continue;
      }
      if (c == '\\') {
        escaped = true;
        continue;
      }
      if (c == '=' || c == ':' || is_ws(c)) break;
    }
    std::string key, value;
    unescape_into(std::string_view(logical).substr(0, k), &key);
    size_t v = k;
    while (v < logical.size() && is_ws(logical[v])) ++v;
    if (v < logical.size() && (logical[v] == '=' || logical[v] == ':')) ++v;
    while (v < logical.size() && is_ws(logical[v])) ++v;
    unescape_into(std::string_view(logical).substr(std::min(v, logical.size())), &value);
    out->properties[key] = value;
  }
  // MetaProperties: version 0 (ZooKeeper era) needs broker.id, version 1 (KRaft) node.id and
  // cluster.id; other versions are unknown.
  auto version = out->version();
  auto it = out->properties.find("version");
  if (it == out->properties.end()) {
    // Kafka's RawMetaProperties reads a missing version as 0.
    Report(sink, Severity::kWarning, file, 0, "meta-properties",
           "no version property; read as version 0 as Kafka does");
    version = 0;
  } else if (!version || (*version != 0 && *version != 1)) {
    Report(sink, Severity::kError, file, 0, "meta-properties",
           fmt::format("version \"{}\" is not 0 or 1", Printable(it->second)));
    return false;
  }
  auto require_int = [&](const char* key) {
    auto k = out->properties.find(key);
    int32_t v32 = 0;
    if (k == out->properties.end() || !ParseJavaInteger(std::string_view(k->second), &v32)) {
      Report(sink, Severity::kError, file, 0, "meta-properties",
             fmt::format("version {} needs an integer {} property", *version, key));
      return false;
    }
    return true;
  };
  if (*version == 0) return require_int("broker.id");
  if (!require_int("node.id")) return false;
  if (!out->properties.count("cluster.id")) {
    Report(sink, Severity::kError, file, 0, "meta-properties", "version 1 needs a cluster.id property");
    return false;
  }
  return true;
}

std::optional<int32_t> MetaProperties::version() const {
  auto it = properties.find("version");
  int32_t v = 0;
  if (it == properties.end() || !ParseJavaInteger(std::string_view(it->second), &v)) return std::nullopt;
  return v;
}

std::optional<int32_t> MetaProperties::node_id() const {
  for (const char* key : {"node.id", "broker.id"}) {
    auto it = properties.find(key);
    int32_t v = 0;
    if (it != properties.end() && ParseJavaInteger(std::string_view(it->second), &v)) return v;
  }
  return std::nullopt;
}

std::optional<std::string> MetaProperties::cluster_id() const {
  auto it = properties.find("cluster.id");
  if (it == properties.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> MetaProperties::directory_id() const {
  auto it = properties.find("directory.id");
  if (it == properties.end()) return std::nullopt;
  return it->second;
}

bool ParseCleanShutdown(const std::string& file, std::string_view text, CleanShutdown* out, ProblemSink* sink) {
  // CleanShutdownFileHandler: older brokers wrote an empty file; newer ones JSON with "version" and
  // "brokerEpoch" (unknown fields ignored). An unreadable content still means "clean shutdown".
  *out = CleanShutdown{};
  bool blank = true;
  for (char c : text) blank = blank && IsJavaSpace(c);
  if (blank) return true;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    Report(sink, Severity::kWarning, file, 0, "clean-shutdown",
           "content is not a JSON object; expected {\"version\":0,\"brokerEpoch\":N} or an empty file");
    return false;
  }
  if (auto v = j.find("version"); v != j.end() && v->is_number_integer()) out->version = v->get<int32_t>();
  if (auto e = j.find("brokerEpoch"); e != j.end() && e->is_number_integer()) {
    out->broker_epoch = e->get<int64_t>();
  } else {
    Report(sink, Severity::kWarning, file, 0, "clean-shutdown", "no integer brokerEpoch field");
    return false;
  }
  return true;
}

std::string EncodeOffsetCheckpoint(const std::vector<OffsetCheckpointEntry>& entries) {
  std::string out = fmt::format("0\n{}\n", entries.size());
  for (const auto& e : entries) out += fmt::format("{} {} {}\n", e.tp.topic, e.tp.partition, e.offset);
  return out;
}

std::string EncodeLeaderEpochCheckpoint(const std::vector<LeaderEpochEntry>& entries) {
  std::string out = fmt::format("0\n{}\n", entries.size());
  for (const auto& e : entries) out += fmt::format("{} {}\n", e.epoch, e.start_offset);
  return out;
}

std::string EncodePartitionMetadata(const PartitionMetadata& m) {
  return fmt::format("version: {}\ntopic_id: {}", m.version, m.topic_id);
}

std::string EncodeCleanShutdown(int64_t broker_epoch) {
  return fmt::format("{{\"version\":0,\"brokerEpoch\":{}}}", broker_epoch);
}

}  // namespace klf
