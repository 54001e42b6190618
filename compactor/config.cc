#include "compactor/config.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>

namespace klf {
namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) b++;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) e--;
  return std::string(s.substr(b, e - b));
}

bool ParseI64(std::string_view v, int64_t* out) {
  std::string s = Trim(v);
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ParseI32(std::string_view v, int32_t* out) {
  int64_t x;
  if (!ParseI64(v, &x) || x < INT32_MIN || x > INT32_MAX) return false;
  *out = int32_t(x);
  return true;
}

bool ParseDouble(std::string_view v, double* out) {
  std::string s = Trim(v);
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

bool ParseBool(std::string_view v, bool* out) {
  std::string s = Trim(v);
  if (s == "true") {
    *out = true;
    return true;
  }
  if (s == "false") {
    *out = false;
    return true;
  }
  return false;
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one branch per cleaner config key (LogConfig / CleanerConfig), each with its own value syntax
bool CleanerConfig::Set(std::string_view key, std::string_view value, std::string* error) {
  auto bad = [&](const char* expected) {
    *error = std::string("--config ") + std::string(key) + "=" + std::string(value) + ": expected " + expected;
    return false;
  };
  auto is = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (key == n) return true;
    return false;
  };
  if (is({"cleanup.policy", "log.cleanup.policy"})) {
    // A list: "compact", "delete", "compact,delete" (LogConfig accepts any order and spaces).
    bool c = false, d = false;
    std::string s(value);
    size_t start = 0;
    while (start <= s.size()) {
      size_t comma = s.find(',', start);
      if (comma == std::string::npos) comma = s.size();
      std::string item = Trim(std::string_view(s).substr(start, comma - start));
      if (item == "compact")
        c = true;
      else if (item == "delete")
        d = true;
      else if (!item.empty())
        return bad("a list of compact/delete");
      start = comma + 1;
    }
    compact = c;
    delete_policy = d;
    return true;
  }
  if (is({"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"})) {
    if (!ParseDouble(value, &min_cleanable_ratio) || min_cleanable_ratio < 0 || min_cleanable_ratio > 1)
      return bad("a number in [0, 1]");
    return true;
  }
  if (is({"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"}))
    return ParseI64(value, &min_compaction_lag_ms) ? true : bad("a long");
  if (is({"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"}))
    return ParseI64(value, &max_compaction_lag_ms) ? true : bad("a long");
  if (is({"delete.retention.ms", "log.cleaner.delete.retention.ms"}))
    return ParseI64(value, &delete_retention_ms) ? true : bad("a long");
  if (is({"segment.bytes", "log.segment.bytes"}))
    return ParseI32(value, &segment_bytes) && segment_bytes >= 14 ? true : bad("an int >= 14");
  if (is({"segment.index.bytes", "log.index.size.max.bytes"}))
    return ParseI32(value, &segment_index_bytes) && segment_index_bytes >= 4 ? true : bad("an int >= 4");
  if (is({"index.interval.bytes", "log.index.interval.bytes"}))
    return ParseI32(value, &index_interval_bytes) && index_interval_bytes >= 0 ? true : bad("an int >= 0");
  if (is({"max.message.bytes"}))
    return ParseI32(value, &max_message_bytes) && max_message_bytes >= 0 ? true : bad("an int >= 0");
  if (is({"message.max.bytes"}))
    return ParseI32(value, &broker_message_max_bytes) && broker_message_max_bytes >= 0 ? true : bad("an int >= 0");
  if (is({"preallocate", "log.preallocate"})) return ParseBool(value, &preallocate) ? true : bad("true or false");
  if (is({"message.timestamp.type", "log.message.timestamp.type"})) {
    std::string s = Trim(value);  // validated only: the cleaner keeps each batch's timestamp type
    return s == "CreateTime" || s == "LogAppendTime" ? true : bad("CreateTime or LogAppendTime");
  }
  if (is({"log.cleaner.threads"}))
    return ParseI32(value, &cleaner_threads) && cleaner_threads >= 1 ? true : bad("an int >= 1");
  if (is({"log.cleaner.dedupe.buffer.size"}))
    return ParseI64(value, &dedupe_buffer_size) && dedupe_buffer_size >= 0 ? true : bad("a long >= 0");
  if (is({"log.cleaner.io.buffer.load.factor"}))
    return ParseDouble(value, &dedupe_buffer_load_factor) ? true : bad("a double");
  if (is({"log.cleaner.io.buffer.size"}))
    return ParseI32(value, &io_buffer_size) && io_buffer_size >= 0 ? true : bad("an int >= 0");
  if (is({"producer.id.expiration.ms"}))
    return ParseI64(value, &producer_id_expiration_ms) && producer_id_expiration_ms >= 1 ? true : bad("a long >= 1");
  // Settings that do not change the cleaner's output are accepted so a whole effective config can be
  // passed (e.g. a case.json's `config`).
  if (is({"log.cleaner.enable", "log.cleaner.backoff.ms", "log.cleaner.io.max.bytes.per.second", "file.delete.delay.ms",
          "log.segment.delete.delay.ms", "retention.ms", "retention.bytes", "producer.id.expiration.check.interval.ms",
          "compression.type"}))
    return true;
  *error = "--config " + std::string(key) + ": unknown property (see klf compact --help)";
  return false;
}

bool CleanerConfig::SetFromArg(std::string_view key_value, std::string* error) {
  size_t eq = key_value.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    *error = "--config " + std::string(key_value) + ": expected KEY=VALUE";
    return false;
  }
  return Set(Trim(key_value.substr(0, eq)), key_value.substr(eq + 1), error);
}

int32_t CleanerConfig::OffsetMapMemory() const {
  int64_t per_thread = dedupe_buffer_size / std::max(cleaner_threads, 1);
  return int32_t(std::min<int64_t>(per_thread, INT32_MAX));
}

int32_t CleanerConfig::IoBufferSizePerBuffer() const { return io_buffer_size / std::max(cleaner_threads, 1) / 2; }

}  // namespace klf
