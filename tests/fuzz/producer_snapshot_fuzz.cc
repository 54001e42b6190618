// libFuzzer target: producer snapshot parsing (spec §10). A snapshot that parses re-encodes to
// exactly its bytes; JavaHashMapOrder of its producer ids is a permutation of the distinct ids. Loaded
// into ProducerStateManager (as the compactor, diff and the simulator load it) at extreme clocks and
// expiration times, every producer kept is one of the snapshot's entries (a batch-less one as Kafka
// reads it: AsLoaded) that has not expired, every unexpired producer is kept, and removing expired
// producers again changes nothing.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "segment_reader/producer_snapshot.h"
#include "partition/producer_state.h"

namespace {

// What an entry becomes in the state, as Kafka's readSnapshot reads it: one whose lastOffset is
// negative has no batch metadata, so it is written back with lastSeq -1, lastOffset -1, offsetDelta 0;
// a negative currentTxnFirstOffset is no open transaction, written back as -1.
klf::ProducerSnapshotEntry AsLoaded(klf::ProducerSnapshotEntry e) {
  if (!e.has_batch()) {
    e.last_sequence = -1;
    e.last_offset = -1;
    e.offset_delta = 0;
  }
  if (e.current_txn_first_offset < 0) e.current_txn_first_offset = -1;
  return e;
}

void CheckLoad(const klf::ProducerSnapshot& snap, int64_t now, int64_t expiration_ms) {
  klf::ProducerStateManager state(klf::ProducerStateOptions{expiration_ms});
  state.LoadSnapshot(snap, now);
  for (const auto& e : snap.entries) {
    bool expired = state.IsProducerExpired(klf::ProducerStateEntry::FromSnapshotEntry(e), now);
    const klf::ProducerStateEntry* kept = state.Find(e.producer_id);
    if (!expired && !kept) abort();
  }
  for (const auto& [pid, entry] : state.producers()) {
    klf::ProducerSnapshotEntry back = entry.ToSnapshotEntry();
    bool found = false;
    for (const auto& e : snap.entries) found = found || (AsLoaded(e) == back && !state.IsProducerExpired(entry, now));
    if (!found) abort();
  }
  size_t before = state.producers().size();
  state.RemoveExpiredProducers(now);
  if (state.producers().size() != before) abort();
  (void)state.LastStableOffset(std::numeric_limits<int64_t>::max());
  (void)state.EncodeSnapshot();
}

}  // namespace

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
  if (ok) {
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
    for (int64_t now : {kMin, int64_t(-1), int64_t(0), int64_t(1700000000000), kMax})
      for (int64_t expiration : {int64_t(0), int64_t(86400000), kMax}) CheckLoad(snap, now, expiration);
  }
  return 0;
}
