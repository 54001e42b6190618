#include "segment_reader/compression.h"

#include <lz4.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace klf {

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kGzip: return "gzip";
    case Compression::kSnappy: return "snappy";
    case Compression::kLz4: return "lz4";
    case Compression::kZstd: return "zstd";
  }
  return "unknown";
}

std::optional<Compression> CompressionFromName(std::string_view name) {
  for (int id = 0; id <= 4; ++id) {
    if (name == CompressionName(Compression(id))) return Compression(id);
  }
  return std::nullopt;
}

std::optional<Compression> CompressionFromId(int id) {
  if (id < 0 || id > 4) return std::nullopt;
  return Compression(id);
}

namespace {

std::string CapMessage(size_t max_output) {
  return "decompressed size exceeds the " + std::to_string(max_output) + "-byte cap";
}

// A per-thread buffer whose bytes are not initialised: decompressors write into it and the result is
// copied into the caller's string once. (Growing a std::string zero-fills the new bytes first: for a
// 10 KiB batch that was a 64 KiB memset per decompression, more than the copy.) Kept between calls up
// to kKeptScratchBytes; a larger one is freed after the call that needed it.
constexpr size_t kKeptScratchBytes = size_t(4) << 20;

class Scratch {
 public:
  // At least `n` writable bytes; the first `keep` bytes of the current buffer are preserved.
  static uint8_t* Get(size_t n, size_t keep = 0) {
    Scratch& s = Instance();
    if (n > s.size_) {
      std::unique_ptr<uint8_t[]> bigger(
          new uint8_t[n]);  // NOLINT(cppcoreguidelines-avoid-c-arrays): uninitialised on purpose
      if (keep > 0) std::memcpy(bigger.get(), s.data_.get(), keep);
      s.data_ = std::move(bigger);
      s.size_ = n;
    }
    return s.data_.get();
  }
  static size_t size() { return Instance().size_; }
  // Frees a buffer grown past kKeptScratchBytes.
  static void Trim() {
    Scratch& s = Instance();
    if (s.size_ > kKeptScratchBytes) {
      s.data_.reset();
      s.size_ = 0;
    }
  }

 private:
  static Scratch& Instance() {
    thread_local Scratch s;
    return s;
  }
  std::unique_ptr<uint8_t[]> data_;  // NOLINT(cppcoreguidelines-avoid-c-arrays): see Get
  size_t size_ = 0;
};

// Output that grows geometrically (in the thread's Scratch) but never beyond max_output + 1 bytes:
// reaching the extra byte means the cap was exceeded. Finish copies what was produced into `out`.
class CappedOutput {
 public:
  CappedOutput(std::string* out, size_t max_output) : out_(out), max_(max_output) { out_->clear(); }
  // Makes room for more output; returns the writable region (empty when the cap + 1 is reached).
  std::pair<uint8_t*, size_t> Room() {
    size_t limit = max_ >= SIZE_MAX - 1 ? SIZE_MAX - 1 : max_ + 1;
    if (used_ == room_) {
      if (room_ >= limit) return {nullptr, 0};
      size_t grow = room_ < 65536 ? 65536 : room_;
      size_t target = room_ + grow;
      if (target > limit || target < room_) target = limit;
      // A scratch buffer already larger (from an earlier call) is used whole, up to the limit.
      target = std::max(target, std::min(Scratch::size(), limit));
      data_ = Scratch::Get(target, used_);
      room_ = target;
    }
    return {data_ + used_, room_ - used_};
  }
  void Produced(size_t n) { used_ += n; }
  bool Exceeded() const { return used_ > max_; }
  size_t used() const { return used_; }
  void Finish() {
    out_->assign(reinterpret_cast<const char*>(data_), used_);
    Scratch::Trim();
  }

 private:
  std::string* out_;
  size_t max_;
  uint8_t* data_ = nullptr;
  size_t room_ = 0;  // writable bytes at data_
  size_t used_ = 0;
};

// ---------------------------------------------------------------------------------------------
// gzip (spec §7.1). zlib does the inflating; the member loop follows java.util.zip.GZIPInputStream:
// after a member's trailer, if more bytes follow and they start a well-formed gzip header, another
// member is read; otherwise the rest is ignored.

// Parses a gzip member header at `p` (RFC 1952) as GZIPInputStream.readHeader does; returns false
// when Java would throw (which, for a second or later member, makes it ignore the trailing bytes).
bool LooksLikeGzipHeader(const uint8_t* p, size_t n) {
  if (n < 10 || p[0] != 0x1f || p[1] != 0x8b || p[2] != 8) return false;
  uint8_t flg = p[3];
  size_t pos = 10;
  if (flg & 4) {  // FEXTRA
    if (n < pos + 2) return false;
    size_t xlen = size_t(p[pos]) | size_t(p[pos + 1]) << 8;
    pos += 2 + xlen;
    if (pos > n) return false;
  }
  for (int bit : {8, 16}) {  // FNAME, FCOMMENT: zero-terminated
    if (!(flg & bit)) continue;
    while (pos < n && p[pos] != 0) ++pos;
    if (pos >= n) return false;
    ++pos;
  }
  if (flg & 2) {  // FHCRC: low 16 bits of the CRC-32 of the header
    if (n < pos + 2) return false;
    uint32_t crc = uint32_t(crc32(0L, p, uInt(pos))) & 0xffff;
    if (crc != (uint32_t(p[pos]) | uint32_t(p[pos + 1]) << 8)) return false;
  }
  return true;
}

// NOLINTNEXTLINE(readability-function-cognitive-complexity): zlib's stream states, each with its error, plus the decompression cap
bool GzipDecompress(Bytes input, size_t max_output, std::string* out, std::string* error) {
  CappedOutput o(out, max_output);
  if (!LooksLikeGzipHeader(input.data(), input.size())) {
    *error = input.size() < 10 ? "gzip: stream shorter than a gzip header" : "gzip: not in GZIP format (bad header)";
    return false;
  }
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    *error = "gzip: cannot initialise zlib";
    return false;
  }
  const uint8_t* next = input.data();
  size_t left = input.size();
  bool ok = true;
  while (true) {
    uInt feed = left > (1u << 30) ? (1u << 30) : uInt(left);
    zs.next_in = const_cast<Bytef*>(next);
    zs.avail_in = feed;
    auto [room, room_size] = o.Room();
    if (room_size == 0) {
      *error = "gzip: " + CapMessage(max_output);
      ok = false;
      break;
    }
    uInt give = room_size > (1u << 30) ? (1u << 30) : uInt(room_size);
    zs.next_out = room;
    zs.avail_out = give;
    int ret = inflate(&zs, Z_NO_FLUSH);
    o.Produced(give - zs.avail_out);
    size_t consumed = feed - zs.avail_in;
    next += consumed;
    left -= consumed;
    if (o.Exceeded()) {
      *error = "gzip: " + CapMessage(max_output);
      ok = false;
      break;
    }
    if (ret == Z_STREAM_END) {
      // Another member only if a valid header follows (GZIPInputStream.readTrailer).
      if (left > 0 && LooksLikeGzipHeader(next, left)) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (ret == Z_OK) continue;
    if (ret == Z_BUF_ERROR && left == 0) {
      *error = "gzip: unexpected end of stream (truncated at compressed byte " + std::to_string(input.size()) + ")";
      ok = false;
      break;
    }
    if (ret == Z_BUF_ERROR) continue;  // output full; loop makes more room
    *error = std::string("gzip: corrupt data at compressed byte ") + std::to_string(next - input.data()) + ": " +
             (zs.msg ? zs.msg : "inflate error " + std::to_string(ret));
    ok = false;
    break;
  }
  inflateEnd(&zs);
  o.Finish();
  return ok;
}

void GzipCompress(Bytes input, std::string* out) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  // Level 6 = Deflater.DEFAULT_COMPRESSION; windowBits 15 and memLevel 8 as java.util.zip.Deflater.
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  gz_header h;
  std::memset(&h, 0, sizeof h);
  h.os = 0xff;  // JDK >= 16 writes OS = 255 (JDK-8244706); MTIME 0, no name, no extra
  deflateSetHeader(&zs, &h);
  out->clear();
  out->resize(deflateBound(&zs, uLong(input.size())) + 64);
  zs.next_in = const_cast<Bytef*>(input.data());
  zs.avail_in = uInt(input.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = uInt(out->size());
  deflate(&zs, Z_FINISH);
  out->resize(zs.total_out);
  deflateEnd(&zs);
}

// ---------------------------------------------------------------------------------------------
// snappy (spec §7.2): xerial snappy-java framing around raw snappy blocks.

constexpr uint8_t kSnappyMagic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr uint32_t kSnappyMagicHead = 0x82534E41;
constexpr uint32_t kSnappyMaxChunk = 512u << 20;

bool SnappyRawBlock(const uint8_t* p, size_t n, size_t max_output, std::string* out, std::string* error, size_t at) {
  size_t len = 0;
  if (!snappy::GetUncompressedLength(reinterpret_cast<const char*>(p), n, &len)) {
    *error = "snappy: corrupt block at compressed byte " + std::to_string(at) + " (bad length prefix)";
    return false;
  }
  if (len > max_output || out->size() > max_output - len) {
    *error = "snappy: " + CapMessage(max_output);
    return false;
  }
  size_t old = out->size();
  out->resize(old + len);
  if (!snappy::RawUncompress(reinterpret_cast<const char*>(p), n, out->data() + old)) {
    *error = "snappy: corrupt block at compressed byte " + std::to_string(at);
    return false;
  }
  return true;
}

bool SnappyDecompress(Bytes input, size_t max_output, std::string* out, std::string* error) {
  out->clear();
  const uint8_t* p = input.data();
  size_t n = input.size();
  if (n == 0) {
    *error = "snappy: cannot decompress empty stream";
    return false;
  }
  // SnappyInputStream.readHeader: no (complete) xerial header => the whole input is one raw block.
  if (n < 16 || std::memcmp(p, kSnappyMagic, 8) != 0) return SnappyRawBlock(p, n, max_output, out, error, 0);
  size_t pos = 16;
  while (true) {
    if (n - pos < 4) break;  // EOF (even inside a length word) ends the stream quietly
    uint32_t len = LoadBE32(p + pos);
    if (len == kSnappyMagicHead) {  // a concatenated stream: the rest of its 16-byte header follows
      if (n - pos < 16) {
        *error = "snappy: insufficient header size in a concatenated stream at byte " + std::to_string(pos);
        return false;
      }
      if (std::memcmp(p + pos, kSnappyMagic, 8) != 0) break;  // not a valid header: end of stream
      pos += 16;
      continue;
    }
    if (int32_t(len) < 0 || len > kSnappyMaxChunk) {
      *error = "snappy: invalid chunk length " + std::to_string(int32_t(len)) + " at byte " + std::to_string(pos);
      return false;
    }
    pos += 4;
    if (n - pos < len) {
      *error = "snappy: failed to read chunk at byte " + std::to_string(pos - 4) + ": needs " + std::to_string(len) +
               " bytes, " + std::to_string(n - pos) + " remain";
      return false;
    }
    if (!SnappyRawBlock(p + pos, len, max_output, out, error, pos)) return false;
    pos += len;
  }
  return true;
}

void SnappyCompress(Bytes input, std::string* out) {
  out->assign(reinterpret_cast<const char*>(kSnappyMagic), 8);
  PutBE32(out, 1);  // version
  PutBE32(out, 1);  // minimum compatible version
  std::string block;
  for (size_t pos = 0; pos < input.size(); pos += 32768) {
    size_t len = std::min<size_t>(32768, input.size() - pos);
    block.resize(snappy::MaxCompressedLength(len));
    size_t clen = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(input.data() + pos), len, block.data(), &clen);
    PutBE32(out, uint32_t(clen));
    out->append(block.data(), clen);
  }
}

// ---------------------------------------------------------------------------------------------
// lz4 (spec §7.3). The frame is parsed here: Kafka's magic-0 frames carry a header checksum computed
// over the wrong bytes, which LZ4F_decompress rejects, and Kafka accepts a narrower set of frames.
//
// XXH32 is hand-written because Debian's liblz4 does not export its xxhash symbols (they are
// static/namespaced inside the library) and there is no separate libxxhash dependency; it is used
// only for the one-byte frame header checksum and the optional block checksums.

constexpr uint32_t kP1 = 2654435761u, kP2 = 2246822519u, kP3 = 3266489917u, kP4 = 668265263u, kP5 = 374761393u;
inline uint32_t Rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
inline uint32_t LoadLE32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline void PutLE32(std::string* out, uint32_t v) {
  char b[4] = {char(v), char(v >> 8), char(v >> 16), char(v >> 24)};
  out->append(b, 4);
}

}  // namespace

uint32_t Xxh32(const uint8_t* p, size_t len, uint32_t seed) {
  const uint8_t* end = p + len;
  uint32_t h;
  if (len >= 16) {
    uint32_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    const uint8_t* limit = end - 16;
    do {
      v1 = Rotl(v1 + LoadLE32(p) * kP2, 13) * kP1;
      v2 = Rotl(v2 + LoadLE32(p + 4) * kP2, 13) * kP1;
      v3 = Rotl(v3 + LoadLE32(p + 8) * kP2, 13) * kP1;
      v4 = Rotl(v4 + LoadLE32(p + 12) * kP2, 13) * kP1;
      p += 16;
    } while (p <= limit);
    h = Rotl(v1, 1) + Rotl(v2, 7) + Rotl(v3, 12) + Rotl(v4, 18);
  } else {
    h = seed + kP5;
  }
  h += uint32_t(len);
  while (p + 4 <= end) {
    h = Rotl(h + LoadLE32(p) * kP3, 17) * kP4;
    p += 4;
  }
  while (p < end) {
    h = Rotl(h + (*p) * kP5, 11) * kP1;
    ++p;
  }
  h ^= h >> 15;
  h *= kP2;
  h ^= h >> 13;
  h *= kP3;
  h ^= h >> 16;
  return h;
}

namespace {

// NOLINTNEXTLINE(readability-function-cognitive-complexity): the LZ4 frame format (Kafka's KafkaLZ4BlockInputStream): one check per header field
bool Lz4Decompress(Bytes input, int magic, size_t max_output, std::string* out, std::string* error) {
  out->clear();
  const uint8_t* p = input.data();
  size_t n = input.size();
  // Lz4BlockInputStream.readHeader
  if (n < 6) {
    *error = "lz4: stream ended prematurely (frame header needs 6 bytes, have " + std::to_string(n) + ")";
    return false;
  }
  if (LoadLE32(p) != 0x184D2204) {
    *error = "lz4: stream unsupported (invalid magic bytes)";
    return false;
  }
  uint8_t flg = p[4], bd = p[5];
  int version = flg >> 6;
  bool block_independence = flg & 0x20, block_checksum = flg & 0x10, content_size = flg & 0x08,
       content_checksum = flg & 0x04;
  if ((flg & 0x03) != 0) {
    *error = "lz4: frame descriptor reserved/dictionary-id bits set (FLG 0x" + HexEncode(Bytes(p + 4, 1)) + ")";
    return false;
  }
  if (version != 1) {
    *error = "lz4: unsupported frame version " + std::to_string(version);
    return false;
  }
  if (!block_independence) {
    *error = "lz4: dependent blocks are not supported (FLG block independence bit clear)";
    return false;
  }
  if ((bd & 0x8F) != 0) {
    *error = "lz4: frame descriptor BD reserved bits set (BD 0x" + HexEncode(Bytes(p + 5, 1)) + ")";
    return false;
  }
  int size_code = (bd >> 4) & 7;
  if (size_code < 4) {
    *error = "lz4: unsupported block size code " + std::to_string(size_code);
    return false;
  }
  size_t block_max = size_t(1) << (8 + 2 * size_code);  // 4: 64 KiB ... 7: 4 MiB
  size_t pos = 6;
  if (content_size) {
    if (n - pos < 8) {
      *error = "lz4: stream ended prematurely in the content size field";
      return false;
    }
    pos += 8;
  }
  if (n - pos < 1) {
    *error = "lz4: stream ended prematurely before the header checksum";
    return false;
  }
  if (magic != 0) {
    // KAFKA-3160: magic 0 frames were written with a checksum over the wrong bytes; Kafka skips
    // the check for them and verifies FLG..(content size) for the others.
    uint8_t hc = uint8_t((Xxh32(p + 4, pos - 4, 0) >> 8) & 0xff);
    if (hc != p[pos]) {
      *error = "lz4: stream frame descriptor corrupted (header checksum 0x" + HexEncode(Bytes(p + pos, 1)) +
               ", expected 0x" + HexEncode(Bytes(&hc, 1)) + ")";
      return false;
    }
  }
  pos += 1;
  while (true) {
    if (n - pos < 4) {
      *error = "lz4: stream ended prematurely at byte " + std::to_string(pos) + " (no block size or end mark)";
      return false;
    }
    uint32_t word = LoadLE32(p + pos);
    size_t word_pos = pos;
    pos += 4;
    size_t size = word & 0x7fffffff;
    bool raw = word & 0x80000000u;
    if (size == 0) {  // end mark
      if (content_checksum) {
        if (n - pos < 4) {
          *error = "lz4: stream ended prematurely in the content checksum";
          return false;
        }
        pos += 4;  // Kafka reads it but does not verify it
      }
      break;  // bytes after the end mark are ignored
    }
    if (size > block_max) {
      *error = "lz4: block at byte " + std::to_string(word_pos) + " has size " + std::to_string(size) +
               ", more than the frame's block maximum " + std::to_string(block_max);
      return false;
    }
    if (n - pos < size) {
      *error = "lz4: stream ended prematurely in the block at byte " + std::to_string(word_pos);
      return false;
    }
    const uint8_t* block = p + pos;
    pos += size;
    if (block_checksum) {
      if (n - pos < 4) {
        *error = "lz4: stream ended prematurely in a block checksum";
        return false;
      }
      if (Xxh32(block, size, 0) != LoadLE32(p + pos)) {
        *error = "lz4: block checksum mismatch for the block at byte " + std::to_string(word_pos);
        return false;
      }
      pos += 4;
    }
    size_t old = out->size();
    if (raw) {
      if (size > max_output - old) {
        *error = "lz4: " + CapMessage(max_output);
        return false;
      }
      out->append(reinterpret_cast<const char*>(block), size);
      continue;
    }
    // A block decompresses to at most block_max bytes (Kafka's buffer is that size); into the thread's
    // scratch buffer, then appended (no zero-fill of block_max bytes per block).
    char* room = reinterpret_cast<char*>(Scratch::Get(block_max));
    int got = LZ4_decompress_safe(reinterpret_cast<const char*>(block), room, int(size), int(block_max));
    if (got < 0) {
      *error = "lz4: corrupt block at byte " + std::to_string(word_pos);
      return false;
    }
    out->append(room, size_t(got));
    if (out->size() > max_output) {
      *error = "lz4: " + CapMessage(max_output);
      return false;
    }
  }
  return true;
}

void Lz4Compress(Bytes input, int magic, std::string* out) {
  // Lz4BlockOutputStream: FLG 0x60 (version 1, independent blocks), BD 0x40 (64 KiB blocks).
  static const uint8_t kHeader[6] = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40};
  out->assign(reinterpret_cast<const char*>(kHeader), 6);
  // KAFKA-3160: for magic 0 Kafka hashes the magic bytes too.
  uint8_t hc =
      magic == 0 ? uint8_t((Xxh32(kHeader, 6, 0) >> 8) & 0xff) : uint8_t((Xxh32(kHeader + 4, 2, 0) >> 8) & 0xff);
  out->push_back(char(hc));
  constexpr size_t kBlock = 65536;
  thread_local std::string buf(size_t(LZ4_compressBound(int(kBlock))), '\0');  // reused: no 64 KiB zero-fill per batch
  for (size_t pos = 0; pos < input.size(); pos += kBlock) {
    size_t len = std::min(kBlock, input.size() - pos);
    // lz4-java's fast compressor for the default level 9: LZ4_compress_default.
    int c =
        LZ4_compress_default(reinterpret_cast<const char*>(input.data() + pos), buf.data(), int(len), int(buf.size()));
    if (c <= 0 || size_t(c) >= len) {  // incompressible: stored with bit 31 set
      PutLE32(out, uint32_t(len) | 0x80000000u);
      out->append(reinterpret_cast<const char*>(input.data() + pos), len);
    } else {
      PutLE32(out, uint32_t(c));
      out->append(buf.data(), size_t(c));
    }
  }
  PutLE32(out, 0);  // end mark
}

// ---------------------------------------------------------------------------------------------
// zstd (spec §7.4): streaming decompression; libzstd handles concatenated and skippable frames.

bool ZstdDecompress(Bytes input, size_t max_output, std::string* out, std::string* error) {
  CappedOutput o(out, max_output);
  // One decompression context per thread, reused: creating one costs more than decoding a batch.
  thread_local std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> context(ZSTD_createDStream(), ZSTD_freeDStream);
  ZSTD_DStream* ds = context.get();
  if (ds == nullptr) {
    *error = "zstd: cannot create decompression stream";
    return false;
  }
  ZSTD_DCtx_reset(ds, ZSTD_reset_session_and_parameters);
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  size_t last = 0;
  bool ok = true;
  while (true) {
    auto [room, room_size] = o.Room();
    if (room_size == 0) {
      *error = "zstd: " + CapMessage(max_output);
      ok = false;
      break;
    }
    ZSTD_outBuffer ob{room, room_size, 0};
    last = ZSTD_decompressStream(ds, &ob, &in);
    o.Produced(ob.pos);
    if (ZSTD_isError(last)) {
      *error = std::string("zstd: corrupt data near compressed byte ") + std::to_string(in.pos) + ": " +
               ZSTD_getErrorName(last);
      ok = false;
      break;
    }
    if (o.Exceeded()) {
      *error = "zstd: " + CapMessage(max_output);
      ok = false;
      break;
    }
    if (last == 0 && in.pos == in.size) break;         // a frame ended exactly at the end of the input
    if (in.pos == in.size && ob.pos < ob.size) break;  // input used up mid-frame: truncated
  }
  if (ok && last != 0) {
    *error = "zstd: truncated frame (input ended inside a frame)";
    ok = false;
  }
  o.Finish();
  return ok;
}

void ZstdCompress(Bytes input, std::string* out) {
  // zstd-jni's stream: level 3, no checksum, content size unknown up front (the frame is started by
  // a plain write), then a flush and the end of the frame on close.
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> context(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx* cc = context.get();
  ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 0);
  out->clear();
  // The staging buffer is reused like the context: zero-filling 128 KiB per batch cost more than
  // compressing a small batch.
  thread_local std::string buf(ZSTD_CStreamOutSize(), '\0');
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  for (ZSTD_EndDirective mode : {ZSTD_e_continue, ZSTD_e_flush, ZSTD_e_end}) {
    while (true) {
      ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
      size_t rem = ZSTD_compressStream2(cc, &ob, &in, mode);
      out->append(buf.data(), ob.pos);
      if (ZSTD_isError(rem)) break;
      if (mode == ZSTD_e_continue ? in.pos == in.size : rem == 0) break;
    }
  }
}

}  // namespace

bool Decompress(Compression codec, Bytes input, int magic, size_t max_output, std::string* out, std::string* error) {
  switch (codec) {
    case Compression::kNone:
      if (input.size() > max_output) {
        *error = CapMessage(max_output);
        return false;
      }
      out->assign(reinterpret_cast<const char*>(input.data()), input.size());
      return true;
    case Compression::kGzip: return GzipDecompress(input, max_output, out, error);
    case Compression::kSnappy: return SnappyDecompress(input, max_output, out, error);
    case Compression::kLz4: return Lz4Decompress(input, magic, max_output, out, error);
    case Compression::kZstd: return ZstdDecompress(input, max_output, out, error);
  }
  *error = "unknown compression codec";
  return false;
}

size_t CompressedBound(Compression codec, size_t n) {
  auto blocks = [n](size_t block) { return (n + block - 1) / block; };
  switch (codec) {
    case Compression::kNone: return n;
    // deflateBound (what GzipCompress sizes its buffer by, plus 64) is compressBound with the gzip
    // wrapper's 18 bytes instead of zlib's 6.
    case Compression::kGzip: return size_t(compressBound(uLong(n))) + 12 + 64;
    // The 16-byte xerial header; each 32 KiB block with its 4-byte length.
    case Compression::kSnappy:
      return 16 + n / 32768 * (4 + snappy::MaxCompressedLength(32768)) +
             (n % 32768 != 0 ? 4 + snappy::MaxCompressedLength(n % 32768) : 0);
    // The 7-byte frame header and 4-byte end mark; each 64 KiB block with its 4-byte size, stored
    // as it is when it does not compress.
    case Compression::kLz4: return 7 + 4 + n + 4 * blocks(65536);
    // One frame: ZSTD_compressBound, plus the block the flush may end early and the end's empty one.
    case Compression::kZstd: return ZSTD_compressBound(n) + 64;
  }
  return n;
}

void Compress(Compression codec, Bytes input, int magic, std::string* out) {
  switch (codec) {
    case Compression::kNone: out->assign(reinterpret_cast<const char*>(input.data()), input.size()); return;
    case Compression::kGzip: GzipCompress(input, out); return;
    case Compression::kSnappy: SnappyCompress(input, out); return;
    case Compression::kLz4: Lz4Compress(input, magic, out); return;
    case Compression::kZstd: ZstdCompress(input, out); return;
  }
}

}  // namespace klf
