// libFuzzer target: .timeindex parsing (spec §8).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "segment_reader/index_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  klf::Bytes bytes(data, size);
  klf::CollectingSink sink;
  // The last byte picks the base offset: 0..127 as is, 128..255 up to 2^63-1 (a file name can say it).
  const int64_t last = size >= 1 ? int64_t(data[size - 1]) : 0;
  const int64_t base = last < 128 ? last : INT64_MAX - (255 - last);
  klf::TimeIndex idx = klf::ParseTimeIndex("fuzz.timeindex", bytes, base, &sink);
  if (idx.entries.size() + idx.unused_slots != size / klf::kTimeIndexEntrySize) abort();
  std::string re;
  for (const auto& e : idx.entries) klf::EncodeTimeIndexEntry(e, base, &re);
  if (re != std::string(reinterpret_cast<const char*>(data), re.size())) abort();
  for (const auto& p : sink.problems) {
    if (p.position > size) abort();
  }
  return 0;
}
