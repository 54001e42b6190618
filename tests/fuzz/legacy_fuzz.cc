// libFuzzer target: v0/v1 messages. The input is turned into one legacy entry with a correct CRC, so
// the fuzzer reaches the message and inner-message-set parsing instead of stopping at the checksum:
//   byte 0: bit 0 magic (0/1), bits 1-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4), bit 3 LogAppendTime,
//           bit 4: the rest is an inner message set to compress (else: the rest is the message body
//           after the attributes, verbatim)
//   bytes 1-8: wrapper offset
#include <cstddef>
#include <cstdint>
#include <string>

#include "segment_reader/batch.h"
#include "segment_reader/compression.h"
#include "segment_reader/crc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace klf;
  if (size < 9) return 0;
  int magic = data[0] & 1;
  int codec = (data[0] >> 1) & 3;
  bool log_append = data[0] & 8;
  bool compress_rest = data[0] & 16;
  uint64_t offset = LoadBE64(data + 1);
  Bytes rest(data + 9, size - 9);

  std::string body;  // from the magic byte on
  body.push_back(char(magic));
  body.push_back(char(codec | (magic == 1 && log_append ? 8 : 0)));
  if (compress_rest && codec != 0) {
    if (magic == 1) PutBE64(&body, 1700000000000ull);
    PutBE32(&body, uint32_t(-1));  // null key
    std::string value;
    Compress(Compression(codec), rest, magic, &value);
    PutBE32(&body, uint32_t(value.size()));
    body += value;
  } else {
    body.append(reinterpret_cast<const char*>(rest.data()), rest.size());
  }
  std::string entry;
  PutBE64(&entry, offset);
  PutBE32(&entry, uint32_t(body.size() + 4));
  PutBE32(&entry, Crc32(AsBytes(body)));
  entry += body;

  ReadOptions options;
  options.max_decompressed_bytes = 1 << 20;
  NullSink sink;
  LogReader reader("fuzz.log", AsBytes(entry), &sink, options);
  RecordDecoder decoder(options);
  BatchView batch;
  while (reader.Next(&batch)) {
    if (decoder.Decode(batch, "fuzz.log", &sink)) {
      const BatchHeader& h = decoder.header();
      if (h.magic < 2 && (!h.base_offset_known || h.record_count != int32_t(decoder.records().size())))
        __builtin_trap();
    }
  }
  return 0;
}
