// libFuzzer target: every text-file parser of partition and log directories (spec §1.1, §11):
// offset checkpoints, leader-epoch-checkpoint, partition.metadata, meta.properties,
// .kafka_cleanshutdown and partition directory names. What parses re-encodes to text that parses to
// the same entries.
#include <cstdlib>
#include <string>
#include <string_view>

#include "segment_reader/checkpoints.h"
#include "segment_reader/layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  klf::CollectingSink sink;

  std::vector<klf::OffsetCheckpointEntry> offsets;
  if (klf::ParseOffsetCheckpoint("fuzz-cp", text, &offsets, &sink)) {
    std::vector<klf::OffsetCheckpointEntry> again;
    klf::CollectingSink s2;
    // Topic tokens never contain whitespace, so the encoding parses back to the same entries.
    if (!klf::ParseOffsetCheckpoint("re", klf::EncodeOffsetCheckpoint(offsets), &again, &s2) || again != offsets) {
      abort();
    }
  }
  std::vector<klf::LeaderEpochEntry> epochs;
  if (klf::ParseLeaderEpochCheckpoint("fuzz-lec", text, &epochs, &sink)) {
    std::vector<klf::LeaderEpochEntry> again;
    klf::NullSink null;
    if (!klf::ParseLeaderEpochCheckpoint("re", klf::EncodeLeaderEpochCheckpoint(epochs), &again, &null) ||
        again != epochs) {
      abort();
    }
  }
  klf::PartitionMetadata pm;
  if (klf::ParsePartitionMetadata("fuzz-pm", text, &pm, &sink)) {
    klf::PartitionMetadata again;
    klf::NullSink null;
    if (!klf::ParsePartitionMetadata("re", klf::EncodePartitionMetadata(pm), &again, &null) ||
        again.topic_id != pm.topic_id || again.version != pm.version) {
      abort();
    }
  }
  klf::MetaProperties mp;
  klf::ParseMetaProperties("fuzz-mp", text, &mp, &sink);
  (void)mp.node_id();
  klf::CleanShutdown cs;
  klf::ParseCleanShutdown("fuzz-cs", text, &cs, &sink);
  if (auto tp = klf::ParsePartitionDirName(std::string(text)); tp && tp->partition < 0) abort();
  (void)klf::ClassifyFileName(text);
  for (const auto& p : sink.problems) {
    if (p.position > size) abort();
  }
  return 0;
}
