// libFuzzer target: the offsets decoder of klf dump (segment_reader/internal_topics.h).
// Input: one flags byte (bit 0: null key, bit 1: null value), a big-endian uint16 key length, the
// key, then the value. A record that decodes has text and a JSON object that prints and parses
// back; one that does not has a reason. Neither may read out of bounds, crash or allocate more than
// a small multiple of the input (libFuzzer's -rss_limit_mb).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "segment_reader/internal_topics.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t flags = data[0];
  const size_t key_size = std::min<size_t>(size - 3, size_t(data[1]) << 8 | data[2]);
  klf::Bytes rest(data + 3, size - 3);
  klf::Record r;
  r.offset = 42;
  if (!(flags & 1)) r.key = rest.subspan(0, key_size);
  if (!(flags & 2)) r.value = rest.subspan(key_size);
  klf::DecodedRecord out;
  std::string error;
  if (klf::DecodeInternalRecord(klf::TopicDecoder::kOffsets, r, &out, &error)) {
    if (!out.json.is_object() || !out.value_text) abort();
    if (klf::OrderedJson::parse(klf::CompactJson(out.json), nullptr, false).is_discarded()) abort();
  } else if (error.empty()) {
    abort();
  }
  return 0;
}
