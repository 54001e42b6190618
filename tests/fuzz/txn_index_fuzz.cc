// libFuzzer target: .txnindex parsing (spec §9).
#include <cstdlib>
#include <string>

#include "segment_reader/index_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  klf::Bytes bytes(data, size);
  klf::CollectingSink sink;
  klf::TxnIndex idx = klf::ParseTxnIndex("fuzz.txnindex", bytes, &sink);
  if (idx.entries.size() > size / klf::kTxnIndexEntrySize) abort();
  std::string re;
  for (const auto& e : idx.entries) klf::EncodeAbortedTxn(e, &re);
  if (re != std::string(reinterpret_cast<const char*>(data), re.size())) abort();
  for (const auto& p : sink.problems) {
    if (p.position > size) abort();
  }
  return 0;
}
