// The damage corpus: named ways to damage a copy of a partition directory Kafka wrote (LevelDB
// corruption_test.cc style), shared by the verify tests (what is reported, where) and the salvage tests
// (what is kept, what is dropped).
//
// Every case is derived from Kafka's own dump of the source directory (<dir>.dump.txt, parsed by
// oracle_dump.h): batch positions, index entries, transaction-index entries and snapshots come from
// Kafka's view, not from our reader. A case says which file it damages, the first byte it changes, and
// (for a .log) which of Kafka's batches holds that byte. Cases are materialised one at a time into a
// fresh copy, so no case sees another's damage.
//
// Groups (DamageCase::group), each only where the source has what it needs:
//   flip-batch-byte      every byte of one batch (the middle segment's second batch) XOR 0xFF
//   flip-payload         one payload bit of the first segment's third batch (only the CRC sees it)
//   truncate-mid         every batch cut inside its length field, magic, CRC, header, records, last byte
//   truncate-boundary    every segment cut at each of its batch boundaries (a well-formed, shorter log)
//   lying-length         the first segment's second batch's length field: 0, 13, one short, one long,
//                        100 long, INT32_MAX, 0xFFFFFFFF
//   record-field         a header field of the first batch rewritten with its CRC recomputed
//                        (record-count, max-timestamp, last-offset-delta-short, last-offset-delta-long)
//   zero-tail            zeros appended to the active segment (1 MiB) and to the first (rolled) segment
//                        (4 KiB), and zeros over the active segment's batches from its third batch on
//   offset-index         the first .index with 3 entries: past-log, off-boundary, offset-below,
//                        offset-beyond, swapped, and chunk-entry (a valid multi-batch chunk entry)
//   time-index           the first .timeindex with 3 entries: not-max, not-monotonic, offset-beyond
//   missing-index        the middle segment's .index and .timeindex removed
//   leftover             .swap, .deleted and .cleaned files beside the segments
//   segment-rename       the last segment renamed below the one before it (overlap) or one above its
//                        first batch (base-offset)
//   snapshot             snapshot-crc (a bit of the last segment's snapshot), snapshot-disagree (an open
//                        transaction's first offset cleared, CRC recomputed)
//   txn-index            marker-data, first-offset, removed, commit-marker (the first .txnindex)
//   random               seeded random flips, cuts and 8-byte overwrites of any file
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/oracle_dump.h"

namespace klf::damage {

struct DamageCase {
  std::string name;   // unique: "<group>/<variant>" or "<group>/<file>@<byte>"
  std::string group;  // see above
  std::string what;   // one line: what was done
  std::string file;   // the damaged file, relative to the partition dir ("" for none)
  // The first byte of `file` that differs from the source (for a cut: the new size; for appended bytes:
  // the old size). 0 for a removed or renamed file.
  uint64_t position = 0;
  uint64_t length = 0;     // bytes from `position` to the last byte that differs (0 for a cut or a removal)
  uint64_t value = 0;      // the value written (a length, an index field, a cut within the batch, a round)
  bool changed = true;     // false when the damage left every byte as it was (a random overwrite can)
  bool truncated = false;  // `file` now ends at `position` (a cut): the bytes from there on are gone
  bool removed = false;    // `file` was removed or renamed away
  // For damage to a .log: the segment (index into the dump's segments) and the batch holding `position`
  // (index into its batches; -1 when `position` is at or past the end of the last batch), and the
  // first damaged byte's offset within that batch.
  int segment = -1;
  int batch = -1;
  uint64_t at = 0;
  std::function<void(const std::string& dir)> apply;  // damages a copy of the source directory

  bool DamagesLog() const { return segment >= 0; }
};

class DamageCorpus {
 public:
  // Parses `dump_file` (Kafka's dump of `source_dir`) and builds every case the source supports.
  static bool Build(const std::string& source_dir, const std::string& dump_file, DamageCorpus* out, std::string* error);

  const std::string& source() const { return source_; }
  const oracle::OracleDump& dump() const { return dump_; }
  const std::vector<DamageCase>& cases() const { return cases_; }
  // The case named `name` (nullptr if none); the cases of one group, in corpus order.
  const DamageCase* Find(const std::string& name) const;
  std::vector<const DamageCase*> Group(const std::string& group) const;

  // Copies the source to `<parent>/<source dir name>` (writable files), applies `c` and returns the
  // damaged directory. `parent` is created if needed and must not already hold that directory.
  std::string Materialise(const DamageCase& c, const std::string& parent) const;

 private:
  void Add(DamageCase c);
  // A case that replaces `file`'s bytes: position/segment/batch computed from the difference.
  void AddBytes(const std::string& group, const std::string& variant, const std::string& what, const std::string& file,
                const std::string& damaged, uint64_t value = 0);
  std::string Pristine(const std::string& file) const;

  std::string source_;
  oracle::OracleDump dump_;
  std::vector<DamageCase> cases_;
};

}  // namespace klf::damage
