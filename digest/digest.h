// The digest of a capture (`klf digest LOG_DIR... --out FILE`, docs/SCALE.md): everything `klf triage`
// needs to judge every partition copy of some log directories, in a file small enough to ship, so that
// the read of the data runs on the broker host where it lives and only the digest crosses the network.
//
// A digest holds, per partition copy, the ReplicaState that diff/lso judge (diff/replica_state.h: the
// offset, batch and record structure, markers, transactions, producer state, `.txnindex` entries, gaps,
// damaged ranges), verify's damage summary of the copy, its identity (log dir, broker, path) and the
// name, size and mtime of every file of the partition directory (so that triage can name what to fetch).
// Key and value bytes are not in a digest: a finding that would print them names the file and offset
// range to fetch instead (ReplicaState::from_digest).
//
// File format 2.0 (version rule: a reader refuses a file whose major version is newer than its own,
// reads every older major version back to kDigestOldestMajor, and reads a newer minor version, whose
// additions are only new fields at the end of a section and new section kinds, which it skips):
//   header   "KLFDIGST" u16 major, u16 minor, u32 zero                               (16 bytes)
//   sections u8 kind, u64 payload length, payload, u32 CRC-32C of kind+length+payload
//            kind 1: the capture (once, first); kind 2: one partition copy
//   trailer  u8 0xFF, u64 section count, u32 CRC-32C of every byte before the trailer, "KLFDEND!"
// All integers are little-endian; section payloads use LEB128 varints (zigzag for signed values),
// offsets and timestamps as deltas from the previous entry. A copy's state (version 2) is its fields
// with the batches and records column by column, zstd-compressed, followed by the hashes (batch CRC-32C
// and CRC-64, record key MD5 and content fingerprint) uncompressed; version 1 had the state
// uncompressed, batch by batch and record by record with their hashes inline.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diff/replica_state.h"
#include "segment_reader/file.h"

namespace klf {

inline constexpr std::string_view kDigestMagic = "KLFDIGST";
inline constexpr std::string_view kDigestEndMagic = "KLFDEND!";
inline constexpr uint16_t kDigestMajor = 2;         // what klf digest writes
inline constexpr uint16_t kDigestMinor = 1;         // 2.1: the closing log-dir problems section
inline constexpr uint16_t kDigestOldestMajor = 1;   // the oldest major version this klf still reads
inline constexpr uint16_t kDigestLastMinorOf1 = 0;  // the last minor version of major version 1
inline constexpr std::string_view kDigestVersionsRead = "1.0 and 2.x";

struct DigestVersion {
  uint16_t major = kDigestMajor, minor = kDigestMinor;
};
inline constexpr size_t kDigestHeaderSize = 16;
inline constexpr size_t kDigestTrailerSize = 1 + 8 + 4 + 8;

// verify's problems in one partition copy (triage's TriageDamage).
struct DigestDamage {
  uint64_t errors = 0, warnings = 0;
  std::string first_error;
};

struct DigestFileInfo {
  std::string name;  // file name in the partition directory
  uint64_t size = 0;
  int64_t mtime_ms = 0;
};

// The capture-wide part of a digest.
struct DigestCapture {
  std::string klf_version;
  std::string host;  // hostname of the machine that wrote it
  int64_t created_ms = 0;
  std::vector<std::string> log_dirs;
  std::vector<std::string> brokers;  // per log dir, same order ("broker N", else the log dir's name)
  // verify's problems of the log dirs (triage's log_dir_problems). From version 2.1 the capture section
  // holds those of verify's pass over each log dir, and a closing section (kDigestSectionLogDirProblems)
  // the whole list, with what verifying the copies added; reading the file puts the whole list here.
  std::vector<std::string> log_dir_problems;
  // The options the states were loaded and verified with; triage over digests needs the same.
  std::optional<int64_t> now_ms;
  int64_t producer_id_expiration_ms = 86400000;
  bool verify_records = true;
};

// One partition copy.
struct DigestCopy {
  std::string partition;  // the directory name, <topic>-<partition>
  std::string log_dir, path, broker;
  bool loaded = false;  // false: LoadReplica failed (error says why); state is empty
  std::string error;
  DigestDamage damage;
  std::vector<DigestFileInfo> files;
  ReplicaState state;  // from_digest is set when decoded
  bool state_decoded = false;
  uint64_t payload_pos = 0, payload_size = 0;  // the section payload in DigestFile::bytes
};

struct DigestFile {
  std::string path;
  DigestVersion version;  // of the file's header
  DigestCapture capture;
  std::vector<DigestCopy> copies;
  bool have_log_dir_problems = false;  // the closing section was read (version 2.1 and later)
  // The file, mapped read-only, when read with keep_states = false: triage's memory holds the pages of the
  // digests it is decoding, which the kernel can drop again, not every digest's bytes.
  std::shared_ptr<const MappedFile> mapping;
};

// A plain log: no transactional or control batch, no transaction index entry, no gap, no damage, its
// batches contiguous from its log start to its end (so nothing was ever removed from it: a compacted
// topic's log qualifies until its cleaner removes a record), every batch decoded, and its records'
// consumer flags those of the high watermark and LSO. A digest keeps only the identity of such
// a log's batches (size, CRC-32C, CRC-64 of the whole entry, offsets, producer), not its records: on a
// plain log, what diff and lso find depends on the records only through "same batch bytes or not".
bool IsPlainReplica(const ReplicaState& r);

// For the replicas of one partition, some read from digests with their records elided: fills in the
// records of those when the findings are then exactly those the records would give, that is when every
// replica is plain and every two agree batch for batch (same offsets and bytes) where they overlap. A
// batch some other replica holds with records takes those records; the others get records derived from
// the batch's identity (equal exactly when the batch bytes are). Otherwise false: *why says what the
// digests cannot settle and [*first, *last] the offsets concerned (the files to fetch).
bool RestoreElidedRecords(std::vector<ReplicaState>* replicas, std::string* why, int64_t* first, int64_t* last);

// Section payloads.
std::string EncodeDigestCapture(const DigestCapture& c);
std::string EncodeDigestCopy(const DigestCopy& c);
bool DecodeDigestCapture(std::string_view payload, DigestCapture* out, std::string* error);
// `major`: the digest format version the payload is in (1 or 2; EncodeDigestCopy writes kDigestMajor).
bool DecodeDigestCopy(std::string_view payload, DigestCopy* out, std::string* error, uint16_t major = kDigestMajor);

// Framing.
// A file holds one capture section, first; a section per copy; from version 2.1 at most one log-dir
// problems section, after the copies (klf digest verifies each copy on the pass that loads it, so the
// log dirs' problems are complete only once every copy is done).
enum : uint8_t {
  kDigestSectionCapture = 1,
  kDigestSectionCopy = 2,
  kDigestSectionLogDirProblems = 3,
  kDigestSectionTrailer = 0xFF
};
std::string EncodeLogDirProblems(const std::vector<std::string>& problems);
bool DecodeLogDirProblems(std::string_view payload, std::vector<std::string>* out, std::string* error);
std::string DigestFileHeader();
std::string DigestSection(uint8_t kind, std::string_view payload);
// `crc` is the CRC-32C of every byte of the file before the trailer.
std::string DigestTrailer(uint64_t sections, uint32_t crc);

// Whether `path` is a regular file starting with the digest magic (what triage takes for a digest).
bool LooksLikeDigest(const std::string& path);

// Reads and checks a whole digest. False with *error naming the file, the byte position and what was
// expected there, for a file that is truncated, damaged, foreign or of a newer major version: a digest is
// used whole or not at all.
// With keep_states = false every section is still decoded and checked, but the replica states are
// dropped again and the file kept mapped: DecodeDigestState decodes one copy's state when it is needed,
// so memory holds the compact digests, not every copy's states at once.
bool ReadDigestFile(const std::string& path, DigestFile* out, std::string* error, bool keep_states = true);
// Decodes c's state (c a copy of `file`, read with keep_states = false).
bool DecodeDigestState(const DigestFile& file, DigestCopy* c, std::string* error);

// For `klf digest --resume`: the complete sections at the start of a partial digest (no trailer yet).
// *valid_bytes is where the first incomplete or damaged section (or a closing log-dir problems section,
// which the resumed run writes again) starts (the file is cut there before appending); *crc is the
// CRC-32C of those bytes. False only when the file is not a digest at all.
bool ReadPartialDigest(const std::string& path, DigestFile* out, uint64_t* valid_bytes, uint32_t* crc,
                       std::string* error);

}  // namespace klf
