// libFuzzer target: arbitrary bytes as a digest's partition section (digest/digest.h DecodeDigestCopy).
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace klf;
  std::string_view payload(reinterpret_cast<const char*>(data), size);
  DigestCapture capture;
  std::string error;
  (void)DecodeDigestCapture(payload, &capture, &error);
  DigestCopy copy;
  if (!DecodeDigestCopy(payload, &copy, &error) || !copy.loaded) return 0;
  std::vector<ReplicaState> rs = {copy.state, copy.state};
  std::string why;
  int64_t first = -1, last = -1;
  if (!RestoreElidedRecords(&rs, &why, &first, &last)) return 0;
  rs[0].label = "a";
  rs[1].label = "b";
  (void)DiffReplicas(rs);
  (void)ExplainLso(rs[0], {rs[1]}, LsoOptions());
  return 0;
}
