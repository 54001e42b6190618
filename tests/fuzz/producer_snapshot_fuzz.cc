// libFuzzer target: producer snapshot parsing (spec §10). A snapshot that parses re-encodes to
// exactly its bytes; JavaHashMapOrder of its producer ids is a permutation of the distinct ids.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "segment_reader/producer_snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  klf::Bytes bytes(data, size);
  klf::CollectingSink sink;
  klf::ProducerSnapshot snap;
  bool ok = klf::ParseProducerSnapshot("fuzz.snapshot", bytes, 0, &snap, &sink);
  if (ok != sink.problems.empty()) abort();
  if (ok && klf::EncodeProducerSnapshot(snap.entries) != std::string(reinterpret_cast<const char*>(data), size)) {
    abort();
  }
  std::vector<int64_t> ids;
  for (const auto& e : snap.entries) {
    ids.push_back(e.producer_id);
    (void)e.first_sequence();
  }
  std::vector<int64_t> order = klf::JavaHashMapOrder(ids);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::sort(order.begin(), order.end());
  if (order != ids) abort();
  return 0;
}
