// libFuzzer target: the remote-log-metadata decoder of klf dump (segment_reader/internal_topics.h,
// `__remote_log_metadata`). Input: the record's value (its key is null, as TopicBasedRemoteLogMetadataManager
// writes it). A record that decodes has Kafka's toString text and a JSON object that prints and parses
// back; one that does not has a reason. Neither may read out of bounds, crash or allocate more than a
// small multiple of the input (libFuzzer's -rss_limit_mb).
#include <cstdlib>
#include <string>

#include "segment_reader/internal_topics.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  klf::Record r;
  r.offset = 42;
  r.value = klf::Bytes(data, size);
  klf::DecodedRecord out;
  std::string error;
  if (klf::DecodeInternalRecord(klf::TopicDecoder::kRemoteLogMetadata, r, &out, &error)) {
    if (!out.json.is_object() || !out.value_text || out.value_text->empty()) abort();
    if (klf::OrderedJson::parse(klf::CompactJson(out.json), nullptr, false).is_discarded()) abort();
  } else if (error.empty()) {
    abort();
  }
  return 0;
}
