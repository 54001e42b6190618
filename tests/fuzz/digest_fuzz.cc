// libFuzzer target: arbitrary bytes as a digest's partition section (digest/digest.h DecodeDigestCopy), in
// each digest format version this klf reads (1 and 2), and as the uncompressed part of a version 2 state
// (compressed here, so that mutations reach the column decoder rather than stop at zstd's checks).
// Whatever decodes must be safe to judge: restored next to itself (RestoreElidedRecords), diffed
// against itself and explained (DiffReplicas, ExplainLso), as triage does with a digest that passed its
// checksums but was crafted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "diff/diff.h"
#include "diff/lso.h"
#include "digest/digest.h"
#include "segment_reader/compression.h"

namespace {

void Judge(const klf::ReplicaState& state) {
  using namespace klf;
  std::vector<ReplicaState> rs = {state, state};
  std::string why;
  int64_t first = -1, last = -1;
  if (!RestoreElidedRecords(&rs, &why, &first, &last)) return;
  rs[0].label = "a";
  rs[1].label = "b";
  (void)DiffReplicas(rs);
  (void)ExplainLso(rs[0], {rs[1]}, LsoOptions());
}

void PutVar(std::string* s, uint64_t v) {
  for (; v >= 0x80; v >>= 7) s->push_back(char((v & 0x7f) | 0x80));
  s->push_back(char(v));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace klf;
  std::string_view payload(reinterpret_cast<const char*>(data), size);
  DigestCapture capture;
  std::string error;
  (void)DecodeDigestCapture(payload, &capture, &error);
  std::vector<std::string> log_dir_problems;
  (void)DecodeLogDirProblems(payload, &log_dir_problems, &error);
  for (uint16_t major : {uint16_t(1), uint16_t(2)}) {
    DigestCopy copy;
    if (DecodeDigestCopy(payload, &copy, &error, major) && copy.loaded) Judge(copy.state);
  }
  // The input as [u16 hash length][uncompressed state][hashes] of a loaded copy with empty fields.
  if (size >= 2) {
    size_t hash_size = std::min<size_t>(size - 2, size_t(data[0]) | size_t(data[1]) << 8);
    std::string_view raw = payload.substr(2, size - 2 - hash_size);
    std::string_view hashes = payload.substr(size - hash_size);
    std::string packed;
    Compress(Compression::kZstd, AsBytes(raw), 2, &packed);
    std::string p("\0\0\0\0\1\0\0\0\0\0", 10);
    PutVar(&p, raw.size());
    PutVar(&p, packed.size());
    p += packed;
    PutVar(&p, hashes.size());
    p += hashes;
    DigestCopy copy;
    if (DecodeDigestCopy(p, &copy, &error) && copy.loaded) Judge(copy.state);
  }
  return 0;
}
