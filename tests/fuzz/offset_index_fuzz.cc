// libFuzzer target: .index parsing (spec §8). Whatever the bytes, the parser reports instead of
// crashing, keeps only whole entries, and what it returns re-encodes to the bytes it came from.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "segment_reader/index_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  klf::Bytes bytes(data, size);
  klf::CollectingSink sink;
  // The first byte picks the base offset: 0..127 thousands, 128..255 up to 2^63-1 (a file name can
  // say it).
  const int64_t first = size >= 1 ? int64_t(data[0]) : 0;
  const int64_t base = first < 128 ? first * 1000 : INT64_MAX - (255 - first);
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
