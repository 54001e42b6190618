#include "tests/support/damage_corpus.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "segment_reader/bytes.h"
#include "segment_reader/crc.h"
#include "segment_reader/problem.h"
#include "segment_reader/producer_snapshot.h"
#include "tests/support/test_files.h"

namespace klf::damage {

namespace fs = std::filesystem;

namespace {

void Put(std::string* s, uint64_t position, int width, uint64_t v) {
  for (int i = 0; i < width; ++i) (*s)[position + i] = char(v >> (8 * (width - 1 - i)));
}

std::string Stem(const std::string& file) { return file.substr(0, file.find('.')); }  // "00000000000000000014"

int64_t BaseOf(const std::string& file) { return std::stoll(Stem(file)); }

std::string NameOf(int64_t base, const std::string& ext) { return fmt::format("{:020d}{}", base, ext); }

// Kafka's dump of the segment `file` (an index, snapshot, ... of it) belongs to; nullptr when none.
const oracle::DumpSegment* SegmentOf(const oracle::OracleDump& dump, const std::string& file) {
  for (const oracle::DumpSegment& s : dump.segments) {
    if (Stem(s.file) == Stem(file)) return &s;
  }
  return nullptr;
}

}  // namespace

std::string DamageCorpus::Pristine(const std::string& file) const { return test::ReadAll(source_ + "/" + file); }

void DamageCorpus::Add(DamageCase c) {
  // Where the first damaged byte of a .log lies among Kafka's batches.
  for (size_t s = 0; s < dump_.segments.size(); ++s) {
    if (dump_.segments[s].file != c.file) continue;
    c.segment = int(s);
    c.batch = -1;
    const auto& batches = dump_.segments[s].batches;
    for (size_t b = 0; b < batches.size(); ++b) {
      if (c.position >= batches[b].position && c.position < batches[b].position + batches[b].size) {
        c.batch = int(b);
        c.at = c.position - batches[b].position;
      }
    }
  }
  cases_.push_back(std::move(c));
}

void DamageCorpus::AddBytes(const std::string& group, const std::string& variant, const std::string& what,
                            const std::string& file, const std::string& damaged, uint64_t value) {
  const std::string pristine = Pristine(file);
  DamageCase c;
  c.group = group;
  c.name = group + "/" + variant;
  c.what = what;
  c.file = file;
  c.value = value;
  size_t n = std::min(pristine.size(), damaged.size());
  size_t first = 0;
  while (first < n && pristine[first] == damaged[first]) ++first;
  c.position = first;
  size_t last = n;
  while (last > first && pristine[last - 1] == damaged[last - 1]) --last;
  c.length = damaged.size() > pristine.size() ? damaged.size() - first : last - first;
  c.changed = first < n || pristine.size() != damaged.size();
  c.truncated = first == damaged.size() && damaged.size() < pristine.size();
  c.apply = [file, damaged](const std::string& dir) { test::WriteAll(dir + "/" + file, damaged); };
  Add(std::move(c));
}

const DamageCase* DamageCorpus::Find(const std::string& name) const {
  for (const DamageCase& c : cases_) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::vector<const DamageCase*> DamageCorpus::Group(const std::string& group) const {
  std::vector<const DamageCase*> out;
  for (const DamageCase& c : cases_) {
    if (c.group == group) out.push_back(&c);
  }
  return out;
}

std::string DamageCorpus::Materialise(const DamageCase& c, const std::string& parent) const {
  std::string dir = parent + "/" + fs::path(source_).filename().string();
  fs::create_directories(parent);
  test::CopyWritable(source_, dir);
  c.apply(dir);
  return dir;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): one case per damage kind of the corpus; test support
bool DamageCorpus::Build(const std::string& source_dir, const std::string& dump_file, DamageCorpus* out,
                         std::string* error) {
  *out = DamageCorpus();
  out->source_ = source_dir;
  if (!oracle::ParseOracleDump(dump_file, &out->dump_, error)) return false;
  DamageCorpus& k = *out;
  const auto& segs = k.dump_.segments;
  if (segs.empty()) {
    *error = dump_file + ": no segment";
    return false;
  }
  const oracle::DumpSegment& first_seg = segs.front();
  const oracle::DumpSegment& mid_seg = segs[segs.size() / 2];
  const oracle::DumpSegment& last_seg = segs.back();

  // flip-batch-byte: every byte of one batch, XOR 0xFF.
  if (mid_seg.batches.size() >= 2) {
    const oracle::DumpBatch& b = mid_seg.batches[1];
    const std::string pristine = k.Pristine(mid_seg.file);
    for (uint64_t at = 0; at < b.size; ++at) {
      std::string s = pristine;
      s[b.position + at] = char(uint8_t(s[b.position + at]) ^ 0xFF);
      k.AddBytes("flip-batch-byte", fmt::format("{}@{}", mid_seg.file, b.position + at),
                 fmt::format("byte {} of the batch at {} (offsets {}..{}) flipped", at, b.position, b.base_offset,
                             b.last_offset),
                 mid_seg.file, s, at);
    }
  }
  // flip-payload: one bit well inside the records.
  if (first_seg.batches.size() >= 3 && first_seg.batches[2].size > 70) {
    const oracle::DumpBatch& b = first_seg.batches[2];
    std::string s = k.Pristine(first_seg.file);
    s[b.position + 70] = char(uint8_t(s[b.position + 70]) ^ 0x01);
    k.AddBytes("flip-payload", fmt::format("{}@{}", first_seg.file, b.position + 70),
               fmt::format("bit 0 of byte 70 of the batch at {} flipped", b.position), first_seg.file, s, 70);
  }
  // truncate-mid and truncate-boundary: every batch of every segment.
  for (const oracle::DumpSegment& seg : segs) {
    const std::string pristine = k.Pristine(seg.file);
    for (const oracle::DumpBatch& b : seg.batches) {
      // Inside the length field, the magic, the CRC, the header, the records, the last byte.
      for (uint64_t cut :
           {uint64_t(4), uint64_t(10), uint64_t(17), uint64_t(19), uint64_t(40), uint64_t(61), b.size - 1}) {
        if (cut >= b.size) continue;
        k.AddBytes("truncate-mid", fmt::format("{}@{}", seg.file, b.position + cut),
                   fmt::format("cut {} bytes into the batch at {}", cut, b.position), seg.file,
                   pristine.substr(0, b.position + cut), cut);
      }
      if (b.position == 0) continue;
      k.AddBytes("truncate-boundary", fmt::format("{}@{}", seg.file, b.position),
                 fmt::format("cut at the batch boundary {}", b.position), seg.file, pristine.substr(0, b.position));
    }
  }
  // lying-length.
  if (first_seg.batches.size() >= 2) {
    const oracle::DumpBatch& b = first_seg.batches[1];
    const std::string pristine = k.Pristine(first_seg.file);
    const uint32_t n = uint32_t(b.size - 12);
    for (uint32_t length :
         {uint32_t(0), uint32_t(13), n - 1, n + 1, n + 100, uint32_t(0x7fffffff), uint32_t(0xffffffff)}) {
      std::string s = pristine;
      Put(&s, b.position + 8, 4, length);
      k.AddBytes("lying-length", fmt::format("{}@{}={}", first_seg.file, b.position + 8, length),
                 fmt::format("length field of the batch at {} set to {} (really {})", b.position, length, n),
                 first_seg.file, s, length);
    }
  }
  // record-field: a header field rewritten, CRC recomputed (framing and CRC pass).
  if (!first_seg.batches.empty() && first_seg.batches[0].magic == 2) {
    const oracle::DumpBatch& b = first_seg.batches[0];
    const std::string pristine = k.Pristine(first_seg.file);
    auto rewrite = [&](const std::string& variant, uint64_t field, int width, uint64_t value) {
      std::string s = pristine;
      Put(&s, b.position + field, width, value);
      uint32_t crc = Crc32c(AsBytes(s).subspan(b.position + 21, b.size - 21));
      Put(&s, b.position + 17, 4, crc);
      k.AddBytes("record-field", variant,
                 fmt::format("field at byte {} of the batch at {} set to {}, CRC recomputed", field, b.position, value),
                 first_seg.file, s, value);
    };
    const int64_t delta = b.last_offset - b.base_offset;
    rewrite("record-count", 57, 4, uint64_t(b.count.value_or(0) + 1));
    rewrite("max-timestamp", 35, 8, uint64_t(b.max_timestamp - 500));
    rewrite("last-offset-delta-short", 23, 4, uint64_t(delta - 1));
    rewrite("last-offset-delta-long", 23, 4, uint64_t(delta + 2));
  }
  // zero-tail.
  {
    std::string last = k.Pristine(last_seg.file);
    k.AddBytes("zero-tail", "active-1MiB", "1 MiB of zeros appended to the active segment", last_seg.file,
               last + std::string(1 << 20, '\0'), 1 << 20);
    if (segs.size() > 1) {
      std::string first = k.Pristine(first_seg.file);
      k.AddBytes("zero-tail", "rolled-4KiB", "4 KiB of zeros appended to the first (rolled) segment", first_seg.file,
                 first + std::string(4096, '\0'), 4096);
    }
    if (last_seg.batches.size() >= 3) {
      uint64_t from = last_seg.batches[2].position;
      k.AddBytes("zero-tail", "active-over-batches",
                 fmt::format("zeros over the active segment's batches from {}", from), last_seg.file,
                 last.substr(0, from) + std::string(last.size() - from, '\0'), from);
    }
  }
  // offset-index: the first index with three entries (entries are 8 bytes: relative offset, position).
  for (size_t i = 0; i < k.dump_.offset_indexes.size(); ++i) {
    const oracle::DumpOffsetIndex& ix = k.dump_.offset_indexes[i];
    if (ix.offset_position.size() < 3) continue;
    const int64_t base = BaseOf(ix.file);
    const std::string pristine = k.Pristine(ix.file);
    const auto& e = ix.offset_position;
    const oracle::DumpSegment* seg = SegmentOf(k.dump_, ix.file);
    if (seg == nullptr || seg->batches.empty()) continue;
    auto one = [&](const std::string& variant, const std::string& what, uint64_t field, uint64_t value) {
      std::string s = pristine;
      Put(&s, field, 4, value);
      k.AddBytes("offset-index", variant, what, ix.file, s, value);
    };
    one("past-log", "entry 2's position past the end of the log", 16 + 4, 100000);
    one("off-boundary", "entry 1's position one byte after a batch start", 8 + 4, uint64_t(e[1].second + 1));
    one("offset-below", "entry 1's offset below the batch at its position", 8, uint64_t(e[0].first - base));
    one("offset-beyond", "entry 2's offset beyond the segment", 16,
        uint64_t(seg->batches.back().last_offset - base + 27));
    k.AddBytes("offset-index", "swapped", "entries 0 and 1 swapped", ix.file,
               pristine.substr(8, 8) + pristine.substr(0, 8) + pristine.substr(16));
    // Valid: entry 0 maps the chunk of the batches at its position and the next to the chunk's last offset.
    int64_t before_e2 = -1;
    for (const auto& b : seg->batches) {
      if (int64_t(b.position) < e[2].second) before_e2 = b.last_offset;
    }
    std::string s = pristine;
    Put(&s, 0, 4, uint64_t(e[1].first - base));
    Put(&s, 8, 4, uint64_t(before_e2 - base));
    k.AddBytes("offset-index", "chunk-entry", "entries rewritten as multi-batch chunk entries (valid, §8.3)", ix.file,
               s);
    break;
  }
  // time-index: the first with three entries (12 bytes: timestamp, relative offset).
  for (const oracle::DumpTimeIndex& ti : k.dump_.time_indexes) {
    if (ti.timestamp_offset.size() < 3) continue;
    const int64_t base = BaseOf(ti.file);
    const std::string pristine = k.Pristine(ti.file);
    const auto& e = ti.timestamp_offset;
    const oracle::DumpSegment* seg = SegmentOf(k.dump_, ti.file);
    if (seg == nullptr || seg->batches.empty()) continue;
    auto one = [&](const std::string& variant, const std::string& what, uint64_t field, int width, uint64_t value) {
      std::string s = pristine;
      Put(&s, field, width, value);
      k.AddBytes("time-index", variant, what, ti.file, s, value);
    };
    one("not-max", "entry 1's timestamp below the max timestamp up to its offset", 12, 8, uint64_t(e[1].first - 1000));
    one("not-monotonic", "entry 1's timestamp below entry 0's", 12, 8, uint64_t(e[0].first - 1000));
    one("offset-beyond", "entry 2's offset past the segment", 24 + 8, 4,
        uint64_t(seg->batches.back().last_offset - base + 17));
    break;
  }
  // missing-index.
  if (segs.size() > 1) {
    const std::string stem = Stem(mid_seg.file);
    if (fs::exists(source_dir + "/" + stem + ".index") && fs::exists(source_dir + "/" + stem + ".timeindex")) {
      DamageCase c;
      c.group = "missing-index";
      c.name = "missing-index/" + stem;
      c.what = "the middle segment's .index and .timeindex removed";
      c.file = stem + ".index";
      c.removed = true;
      c.apply = [stem](const std::string& dir) {
        fs::remove(dir + "/" + stem + ".index");
        fs::remove(dir + "/" + stem + ".timeindex");
      };
      k.Add(std::move(c));
    }
  }
  // leftover.
  {
    const std::string swap = mid_seg.file + ".swap", deleted = Stem(first_seg.file) + ".index.deleted",
                      cleaned = first_seg.file + ".cleaned";
    const std::string mid = mid_seg.file, first_index = Stem(first_seg.file) + ".index", first = first_seg.file;
    if (fs::exists(source_dir + "/" + first_index)) {
      DamageCase c;
      c.group = "leftover";
      c.name = "leftover/swap-deleted-cleaned";
      c.what = "copies left as " + swap + ", " + deleted + ", " + cleaned;
      c.file = swap;
      c.apply = [=](const std::string& dir) {
        fs::copy_file(dir + "/" + mid, dir + "/" + swap);
        fs::copy_file(dir + "/" + first_index, dir + "/" + deleted);
        fs::copy_file(dir + "/" + first, dir + "/" + cleaned);
      };
      k.Add(std::move(c));
    }
  }
  // segment-rename: the last segment's files under another base offset.
  if (segs.size() >= 3) {
    const int64_t last_base = BaseOf(last_seg.file);
    const int64_t prev_base = BaseOf(segs[segs.size() - 2].file);
    auto rename = [&](const std::string& variant, const std::string& what, int64_t to) {
      DamageCase c;
      c.group = "segment-rename";
      c.name = "segment-rename/" + variant;
      c.what = what;
      c.file = NameOf(to, ".log");
      c.value = uint64_t(to);
      c.apply = [last_base, to](const std::string& dir) {
        for (const char* ext : {".log", ".index", ".timeindex"}) {
          if (fs::exists(dir + "/" + NameOf(last_base, ext))) {
            fs::rename(dir + "/" + NameOf(last_base, ext), dir + "/" + NameOf(to, ext));
          }
        }
      };
      k.Add(std::move(c));
    };
    rename("overlap", "the last segment renamed to sort before the one before it", prev_base - 4);
    rename("base-offset", "the last segment named one above its first batch", last_base + 1);
  }
  // snapshot.
  {
    const std::string name = Stem(last_seg.file) + ".snapshot";
    const std::string bytes = k.Pristine(name);
    if (bytes.size() > 20) {
      std::string s = bytes;
      s[20] = char(uint8_t(s[20]) ^ 0x01);
      k.AddBytes("snapshot", "snapshot-crc", "bit 0 of byte 20 of " + name + " flipped", name, s);
    }
  }
  for (const oracle::DumpProducerSnapshot& ps : k.dump_.producer_snapshots) {
    const std::string bytes = k.Pristine(ps.file);
    ProducerSnapshot snap;
    NullSink quiet;
    if (!ParseProducerSnapshot(ps.file, AsBytes(bytes), BaseOf(ps.file), &snap, &quiet)) continue;
    // An open transaction, preferably one the log later aborts (the first .txnindex entry's producer).
    std::optional<int64_t> aborted_pid;
    if (!k.dump_.txn_indexes.empty() && !k.dump_.txn_indexes[0].aborted.empty()) {
      aborted_pid = k.dump_.txn_indexes[0].aborted[0].producer_id;
    }
    size_t i = snap.entries.size();
    for (size_t j = 0; j < snap.entries.size(); ++j) {
      if (snap.entries[j].current_txn_first_offset < 0) continue;
      if (i == snap.entries.size() || (aborted_pid && snap.entries[j].producer_id == *aborted_pid)) i = j;
    }
    if (i == snap.entries.size()) continue;
    snap.entries[i].current_txn_first_offset = -1;
    k.AddBytes("snapshot", "snapshot-disagree",
               fmt::format("entry {} of {}: the open transaction's first offset cleared, CRC recomputed", i, ps.file),
               ps.file, EncodeProducerSnapshot(snap.entries), i);
    break;
  }
  // txn-index: the first .txnindex (34-byte entries: version, producerId, firstOffset, lastOffset, LSO).
  for (const oracle::DumpTxnIndex& tx : k.dump_.txn_indexes) {
    if (tx.aborted.empty()) continue;
    const oracle::DumpTxnEntry& e = tx.aborted[0];
    const oracle::DumpSegment* seg = SegmentOf(k.dump_, tx.file);
    if (seg == nullptr) continue;
    // The last data batch before the ABORT marker, the producer's last data batch before it, and a COMMIT.
    int64_t data_before = -1, producer_data = -1, commit = -1;
    for (const auto& b : seg->batches) {
      if (b.last_offset < e.last_offset && !b.is_control) data_before = b.last_offset;
      if (b.last_offset < e.last_offset && !b.is_control && b.producer_id == e.producer_id)
        producer_data = b.base_offset;
      if (b.is_control && !b.records.empty() && b.records[0].control_type == "COMMIT" && commit < 0)
        commit = b.base_offset;
    }
    const std::string pristine = k.Pristine(tx.file);
    auto one = [&](const std::string& variant, const std::string& what, uint64_t field, int64_t value) {
      std::string s = pristine;
      Put(&s, field, 8, uint64_t(value));
      k.AddBytes("txn-index", variant, what, tx.file, s, uint64_t(value));
    };
    if (data_before >= 0) one("marker-data", "entry 0's lastOffset set to a data batch's offset", 18, data_before);
    if (producer_data > e.first_offset) {
      one("first-offset", "entry 0's firstOffset set past the transaction's first data", 10, producer_data);
    }
    DamageCase c;
    c.group = "txn-index";
    c.name = "txn-index/removed";
    c.what = tx.file + " removed";
    c.file = tx.file;
    c.removed = true;
    const std::string file = tx.file;
    c.apply = [file](const std::string& dir) { fs::remove(dir + "/" + file); };
    k.Add(std::move(c));
    if (commit >= 0) one("commit-marker", "entry 0's lastOffset set to a COMMIT marker", 18, commit);
    break;
  }
  // random: seeded flips, cuts and 8-byte overwrites of any file (the sequence verify_test has always used).
  {
    std::vector<std::string> files;
    for (auto& e : fs::directory_iterator(source_dir)) files.push_back(e.path().filename().string());
    std::sort(files.begin(), files.end());
    std::map<std::string, std::string> pristine;
    for (const std::string& f : files) pristine[f] = k.Pristine(f);
    std::mt19937 rng(12345);
    for (int round = 0; round < 300 && !files.empty(); ++round) {
      const std::string& f = files[rng() % files.size()];
      std::string bytes = pristine[f];
      if (bytes.empty()) continue;
      int kind = int(rng() % 3);
      std::string what;
      if (kind == 0) {
        size_t at = rng() % bytes.size();
        bytes[at] ^= char(1 + rng() % 255);
        what = fmt::format("byte {} of {} flipped", at, f);
      } else if (kind == 1) {
        bytes.resize(rng() % bytes.size());
        what = fmt::format("{} cut to {} bytes", f, bytes.size());
      } else {
        size_t at = rng() % bytes.size();
        for (size_t i = at; i < std::min(bytes.size(), at + 8); ++i) bytes[i] = char(rng());
        what = fmt::format("bytes {}.. of {} overwritten", at, f);
      }
      k.AddBytes("random", fmt::format("{:03d}-{}", round, f), what, f, bytes, uint64_t(round));
    }
  }
  return true;
}

}  // namespace klf::damage
