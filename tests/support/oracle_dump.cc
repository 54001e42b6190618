#include "tests/support/oracle_dump.h"
#include "tests/support/test_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace klf::oracle {

namespace fs = std::filesystem;

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads a "quoted string" starting at text[*i] == '"'; handles \" \\ \n \t \r \xNN \uNNNN.
// NOLINTNEXTLINE(readability-function-cognitive-complexity): kafka-dump-log's quoting, one case per escape; test support
bool ReadQuoted(const std::string& text, size_t* i, std::string* out, std::string* error) {
  size_t p = *i + 1;
  out->clear();
  while (p < text.size() && text[p] != '"') {
    char c = text[p];
    if (c == '\\' && p + 1 < text.size()) {
      char e = text[p + 1];
      if (e == 'x' && p + 3 < text.size() && HexDigit(text[p + 2]) >= 0 && HexDigit(text[p + 3]) >= 0) {
        out->push_back(char(HexDigit(text[p + 2]) << 4 | HexDigit(text[p + 3])));
        p += 4;
        continue;
      }
      if (e == 'u' && p + 5 < text.size()) {
        uint32_t cp = 0;
        for (int k = 0; k < 4; ++k) cp = cp << 4 | uint32_t(HexDigit(text[p + 2 + k]));
        if (cp < 0x80)
          out->push_back(char(cp));
        else if (cp < 0x800) {
          out->push_back(char(0xC0 | cp >> 6));
          out->push_back(char(0x80 | (cp & 63)));
        } else {
          out->push_back(char(0xE0 | cp >> 12));
          out->push_back(char(0x80 | ((cp >> 6) & 63)));
          out->push_back(char(0x80 | (cp & 63)));
        }
        p += 6;
        continue;
      }
      out->push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e);
      p += 2;
      continue;
    }
    out->push_back(c);
    ++p;
  }
  if (p >= text.size()) {
    *error = "unterminated quoted string";
    return false;
  }
  *i = p + 1;
  return true;
}

int64_t ToI64(const std::string& s) { return std::stoll(s); }

std::optional<std::string> BytesValue(const Fields& f, const std::string& key, const std::string& raw_key) {
  auto it = f.find(key);
  if (it == f.end()) return std::nullopt;
  // ParseFields marks how a value was written in a shadow field "<key>#kind".
  std::string kind = f.count(raw_key) ? f.at(raw_key) : "plain";
  if (kind == "null") return std::nullopt;
  if (kind == "hex") {
    std::string out;
    const std::string& h = it->second;
    for (size_t i = 2; i + 1 < h.size(); i += 2) out.push_back(char(HexDigit(h[i]) << 4 | HexDigit(h[i + 1])));
    return out;
  }
  return it->second;
}

bool ParseHeaders(const std::string& text, std::vector<std::pair<std::string, std::optional<std::string>>>* out,
                  std::string* error) {
  // [k:"v",k2:null]
  out->clear();
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') {
    *error = "bad headers list " + text;
    return false;
  }
  size_t i = 1;
  while (i < text.size() - 1) {
    size_t colon = text.find(':', i);
    if (colon == std::string::npos) {
      *error = "bad header in " + text;
      return false;
    }
    std::string key = text.substr(i, colon - i);
    i = colon + 1;
    std::optional<std::string> value;
    if (text[i] == '"') {
      std::string v;
      if (!ReadQuoted(text, &i, &v, error)) return false;
      value = v;
    } else {
      size_t e = text.find_first_of(",]", i);
      std::string v = text.substr(i, e - i);
      if (v != "null") value = v;
      i = e;
    }
    out->emplace_back(key, value);
    if (i < text.size() && text[i] == ',') ++i;
  }
  return true;
}

}  // namespace

// NOLINTNEXTLINE(readability-function-cognitive-complexity): kafka-dump-log's fields, one case each; test support
bool ParseFields(const std::string& text, Fields* out, std::string* error) {
  out->clear();
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size()) break;
    size_t eq = text.find('=', i);
    if (eq == std::string::npos) {
      *error = "expected key=value at: " + text.substr(i);
      return false;
    }
    std::string key = text.substr(i, eq - i);
    i = eq + 1;
    std::string value, kind = "plain";
    if (i < text.size() && text[i] == '"') {
      if (!ReadQuoted(text, &i, &value, error)) return false;
      kind = "string";
    } else if (i < text.size() && text[i] == '[') {
      // Up to the matching ']' outside quotes.
      size_t p = i + 1;
      bool in_quote = false;
      while (p < text.size() && (in_quote || text[p] != ']')) {
        if (text[p] == '\\' && in_quote)
          ++p;
        else if (text[p] == '"')
          in_quote = !in_quote;
        ++p;
      }
      if (p >= text.size()) {
        *error = "unterminated list for " + key;
        return false;
      }
      value = text.substr(i, p + 1 - i);
      i = p + 1;
      kind = "list";
    } else {
      size_t e = text.find(' ', i);
      if (e == std::string::npos) e = text.size();
      value = text.substr(i, e - i);
      i = e;
      if (value == "null")
        kind = "null";
      else if (value.size() >= 2 && value[0] == '0' && value[1] == 'x')
        kind = "hex";
    }
    (*out)[key] = value;
    (*out)[key + "#kind"] = kind;
  }
  return true;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): kafka-dump-log's line kinds, one case each; test support
bool ParseOracleDump(const std::string& path, OracleDump* out, std::string* error) {
  *out = OracleDump();
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot open";
    return false;
  }
  std::string line;
  int lineno = 0;
  enum class Section {
    kNone,
    kSegment,
    kOffsetIndex,
    kTimeIndex,
    kTxnIndex,
    kSnapshot,
    kFile
  } section = Section::kNone;
  auto fail = [&](const std::string& why) {
    *error = path + ":" + std::to_string(lineno) + ": " + why;
    return false;
  };
  try {
    while (std::getline(in, line)) {
      ++lineno;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      if (section == Section::kFile && line.rfind("  ", 0) == 0) {
        out->files.back().lines.push_back(line.substr(2));
        continue;
      }
      if (line.rfind("# partition-dir ", 0) == 0) {
        out->partition_dir = line.substr(16);
        section = Section::kNone;
        continue;
      }
      if (line[0] == '#') continue;
      std::string word = line.substr(0, line.find(' '));
      std::string rest = line.size() > word.size() ? line.substr(word.size() + 1) : "";
      if (line.rfind("  ", 0) == 0) {
        std::string body = line.substr(2);
        Fields f;
        if (body.rfind("record ", 0) == 0) {
          if (section != Section::kSegment || out->segments.empty() || out->segments.back().batches.empty()) {
            return fail("record outside a batch");
          }
          if (!ParseFields(body.substr(7), &f, error)) return fail(*error);
          DumpRecord r;
          r.offset = ToI64(f.at("offset"));
          r.timestamp = ToI64(f.at("timestamp"));
          r.key = BytesValue(f, "key", "key#kind");
          r.value = BytesValue(f, "value", "value#kind");
          if (f.count("sequence")) r.sequence = int32_t(ToI64(f.at("sequence")));
          if (f.count("controlType")) r.control_type = f.at("controlType");
          if (f.count("coordinatorEpoch")) r.coordinator_epoch = int32_t(ToI64(f.at("coordinatorEpoch")));
          if (f.count("headers")) {
            r.has_headers = true;
            if (!ParseHeaders(f.at("headers"), &r.headers, error)) return fail(*error);
          }
          r.fields = std::move(f);
          out->segments.back().batches.back().records.push_back(std::move(r));
          continue;
        }
        if (!ParseFields(body, &f, error)) return fail(*error);
        switch (section) {
          case Section::kOffsetIndex:
            out->offset_indexes.back().offset_position.emplace_back(ToI64(f.at("offset")), ToI64(f.at("position")));
            break;
          case Section::kTimeIndex:
            out->time_indexes.back().timestamp_offset.emplace_back(ToI64(f.at("timestamp")), ToI64(f.at("offset")));
            break;
          case Section::kTxnIndex: {
            DumpTxnEntry t;
            t.producer_id = ToI64(f.at("producerId"));
            t.first_offset = ToI64(f.at("firstOffset"));
            t.last_offset = ToI64(f.at("lastOffset"));
            t.last_stable_offset = ToI64(f.at("lastStableOffset"));
            out->txn_indexes.back().aborted.push_back(t);
            break;
          }
          case Section::kSnapshot: {
            DumpProducerEntry e;
            e.producer_id = ToI64(f.at("producerId"));
            e.epoch = int32_t(ToI64(f.at("epoch")));
            e.first_seq = int32_t(ToI64(f.at("firstSeq")));
            e.last_seq = int32_t(ToI64(f.at("lastSeq")));
            e.first_data_offset = ToI64(f.at("firstDataOffset"));
            e.last_data_offset = ToI64(f.at("lastDataOffset"));
            e.last_timestamp = ToI64(f.at("lastTimestamp"));
            e.coordinator_epoch = int32_t(ToI64(f.at("coordinatorEpoch")));
            if (f.at("currentTxnFirstOffset") != "none")
              e.current_txn_first_offset = ToI64(f.at("currentTxnFirstOffset"));
            e.fields = std::move(f);
            out->producer_snapshots.back().entries.push_back(std::move(e));
            break;
          }
          default: return fail("indented line outside a section: " + line);
        }
        continue;
      }
      Fields f;
      if (word == "segment") {
        std::string file = rest.substr(0, rest.find(' '));
        if (!ParseFields(rest.substr(file.size()), &f, error)) return fail(*error);
        DumpSegment s;
        s.file = file;
        s.size = uint64_t(ToI64(f.at("size")));
        out->segments.push_back(std::move(s));
        section = Section::kSegment;
      } else if (word == "batch") {
        if (out->segments.empty()) return fail("batch before any segment");
        if (!ParseFields(rest, &f, error)) return fail(*error);
        DumpBatch b;
        b.base_offset = ToI64(f.at("baseOffset"));
        b.last_offset = ToI64(f.at("lastOffset"));
        if (f.at("count") != "null") b.count = int32_t(ToI64(f.at("count")));
        b.position = uint64_t(ToI64(f.at("position")));
        b.size = uint64_t(ToI64(f.at("size")));
        b.magic = int(ToI64(f.at("magic")));
        b.compression = f.at("compression");
        b.timestamp_type = f.at("timestampType");
        b.max_timestamp = ToI64(f.at("maxTimestamp"));
        b.producer_id = ToI64(f.at("producerId"));
        b.producer_epoch = int32_t(ToI64(f.at("producerEpoch")));
        b.base_sequence = int32_t(ToI64(f.at("baseSequence")));
        b.last_sequence = int32_t(ToI64(f.at("lastSequence")));
        b.is_transactional = f.at("isTransactional") == "true";
        b.is_control = f.at("isControl") == "true";
        b.partition_leader_epoch = int32_t(ToI64(f.at("partitionLeaderEpoch")));
        if (f.at("deleteHorizonMs") != "none") b.delete_horizon_ms = ToI64(f.at("deleteHorizonMs"));
        b.crc = uint32_t(std::stoull(f.at("crc")));
        b.is_valid = f.at("isValid") == "true";
        b.fields = std::move(f);
        out->segments.back().batches.push_back(std::move(b));
        section = Section::kSegment;
      } else if (word == "offset-index" || word == "time-index" || word == "txn-index") {
        std::string file = rest.substr(0, rest.find(' '));
        if (!ParseFields(rest.substr(file.size()), &f, error)) return fail(*error);
        int64_t entries = f.count("entries") ? ToI64(f.at("entries")) : 0;
        if (word == "offset-index") {
          out->offset_indexes.push_back({file, entries, {}});
          section = Section::kOffsetIndex;
        } else if (word == "time-index") {
          out->time_indexes.push_back({file, entries, {}});
          section = Section::kTimeIndex;
        } else {
          out->txn_indexes.push_back({file, entries, {}});
          section = Section::kTxnIndex;
        }
      } else if (word == "producer-snapshot") {
        out->producer_snapshots.push_back({rest.substr(0, rest.find(' ')), {}});
        section = Section::kSnapshot;
      } else if (word == "file") {
        out->files.push_back({rest, {}});
        section = Section::kFile;
      } else {
        return fail("unknown line: " + line);
      }
    }
  } catch (const std::exception& e) {
    return fail(std::string("malformed field (") + e.what() + ") in: " + line);
  }
  return true;
}

std::vector<std::pair<std::string, std::string>> FindOraclePartitionDirs(const std::string& root) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_directory()) continue;
    bool has_log = false;
    for (const auto& f : fs::directory_iterator(e.path())) {
      if (f.is_regular_file() && test::IsSegmentFileName(f.path().filename().string())) {
        has_log = true;
        break;
      }
    }
    if (!has_log) continue;
    // The dump sits beside the partition directory, or beside the log directory holding it
    // (cleaner-passes/<case>/before.dump.txt, replicas/<set>/broker1.dump.txt).
    std::string dump = e.path().string() + ".dump.txt";
    std::string parent_dump = e.path().parent_path().string() + ".dump.txt";
    if (fs::exists(dump))
      out.emplace_back(e.path().string(), dump);
    else if (fs::exists(parent_dump))
      out.emplace_back(e.path().string(), parent_dump);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace klf::oracle
