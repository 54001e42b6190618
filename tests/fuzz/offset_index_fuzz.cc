// libFuzzer target: .index parsing (spec §8). Whatever the bytes, the parser reports instead of
// crashing, keeps only whole entries, and what it returns re-encodes to the bytes it came from.
#include <cstdlib>
#include <string>

#include "segment_reader/index_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  klf::Bytes bytes(data, size);
  klf::CollectingSink sink;
  int64_t base = size >= 1 ? int64_t(data[0]) * 1000 : 0;
  klf::OffsetIndex idx = klf::ParseOffsetIndex("fuzz.index", bytes, base, &sink);
  if (idx.entries.size() + idx.unused_slots != size / klf::kOffsetIndexEntrySize) abort();
  std::string re;
  for (const auto& e : idx.entries) klf::EncodeOffsetIndexEntry(e, base, &re);
  if (re != std::string(reinterpret_cast<const char*>(data), re.size())) abort();
  for (const auto& p : sink.problems) {
    if (p.file != "fuzz.index" || p.position > size) abort();
  }
  return 0;
}
