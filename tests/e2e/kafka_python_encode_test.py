#!/usr/bin/python3
"""Differential test against an independent encoder: kafka-python (Debian python3-kafka with lz4,
snappy and zstandard) encodes random batches (magic 0, 1 and 2; every codec each magic allows; null,
empty and binary keys and values; v2 headers and producer fields), and `klf dump --json --records`
must give back exactly the records that went in, from the bytes alone.

kafka-python builds batches as a producer does, before the broker assigns offsets; the test stores
them as a broker would: a v2 batch's base offset and a legacy wrapper's offset (the last inner offset;
v1 inner offsets stay relative, v0 inner offsets are absolute) are set in the entry's offset field,
which no CRC covers. A fixed seed makes failures repeatable; KLF_ENCODE_SEED overrides it.
Run with /usr/bin/python3 (the interpreter that has the `kafka` package); CTest does.
"""
import json
import os
import random
import struct

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from klf_e2e import check, fail, finish, klf_text, process, temp_dir

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
SEED = int(os.environ.get("KLF_ENCODE_SEED", "20261202"))
rng = random.Random(SEED)


def random_bytes(max_len):
    """None, empty, text-like (compressible) or random binary bytes."""
    kind = rng.random()
    if kind < 0.1:
        return None
    if kind < 0.2:
        return b""
    n = rng.randint(1, max_len)
    if kind < 0.6:
        word = bytes(rng.choice(b"abcdefgh{}\":, ") for _ in range(rng.randint(1, 12)))
        return (word * (n // len(word) + 1))[:n]
    return bytes(rng.getrandbits(8) for _ in range(n))


def random_header_key():
    return "".join(rng.choice("abcXYZ_-.é€😀") for _ in range(rng.randint(0, 10)))


def build(magic, codec, base, n):
    """One batch of n records at offsets base..base+n-1: (entry bytes, expected batch, expected records)."""
    records = []
    ts0 = rng.randint(0, 1800000000000)
    for i in range(n):
        ts = ts0 + rng.randint(-1000, 100000)
        headers = []
        if magic == 2:
            headers = [(random_header_key(), random_bytes(64)) for _ in range(rng.choice((0, 0, 1, 3)))]
        records.append((base + i, ts, random_bytes(100), random_bytes(2000), headers))
    expected = {"magic": magic, "compression": codec, "crcValid": True}
    if magic == 2:
        pid = rng.choice((-1, rng.randint(0, 2**40)))
        epoch = -1 if pid < 0 else rng.randint(0, 32767)
        seq = -1 if pid < 0 else rng.randint(0, 2**31 - 1 - n)
        txn = pid >= 0 and rng.random() < 0.5
        b = DefaultRecordBatchBuilder(2, CODECS[codec], txn, pid, epoch, seq, batch_size=2**30)
        for off, ts, k, v, h in records:
            b.append(off - base, ts, k, v, h)
        entry = bytearray(b.build())
        struct.pack_into(">q", entry, 0, base)
        # kafka-python stores a batch uncompressed when compressing does not make it smaller; its
        # choice is in the attributes (big-endian int16 at byte 21, codec in the low 3 bits).
        expected["compression"] = {v: k for k, v in CODECS.items()}[struct.unpack_from(">h", entry, 21)[0] & 7]
        expected.update(baseOffset=base, lastOffset=base + n - 1, producerId=pid, producerEpoch=epoch,
                        baseSequence=seq, isTransactional=txn, isControl=False, recordCount=n,
                        maxTimestamp=max(r[1] for r in records))
    else:
        entries = bytearray()
        if codec == "none":
            for off, ts, k, v, _ in records:  # one entry per message, each with its own offset
                b = LegacyRecordBatchBuilder(magic, 0, batch_size=2**30)
                b.append(0, ts if magic else None, k, v)
                e = bytearray(b.build())
                struct.pack_into(">q", e, 0, off)
                entries += e
            return entries, [dict(expected) for _ in records], records
        b = LegacyRecordBatchBuilder(magic, CODECS[codec], batch_size=2**30)
        for i, (off, ts, k, v, _) in enumerate(records):
            b.append(off if magic == 0 else i, ts if magic else None, k, v)
        entries = bytearray(b.build())
        struct.pack_into(">q", entries, 0, base + n - 1)
        return entries, [expected], records
    return entry, [expected], records


def klf_dump(path):
    p = process(["dump", "--json", "--records", "--bytes", "hex", path])
    check(p.returncode == 0, f"{path}: klf dump exit {p.returncode}: {p.stderr[-500:]}")
    return [json.loads(line) for line in p.stdout.splitlines()]


def as_klf(record, magic):
    off, ts, k, v, h = record
    hex_or_none = lambda b: None if b is None else b.hex()
    headers = [(klf_text(hk.encode()), hex_or_none(hv)) for hk, hv in h] if magic == 2 else None
    return (off, ts if magic else None, hex_or_none(k), hex_or_none(v), headers)


cases = [(m, c) for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")] + \
        [(2, c) for c in ("none", "gzip", "snappy", "lz4", "zstd")]
compared = compressed_v2 = 0
with temp_dir() as tmp:
    for magic, codec in cases:
        where = f"magic {magic} {codec} (seed {SEED})"
        data, want_batches, want_records = bytearray(), [], []
        base = rng.randint(0, 2**40)
        for _ in range(40):
            n = rng.randint(1, 40)
            entry, batches, records = build(magic, codec, base, n)
            data += entry
            want_batches += batches
            want_records += records
            base += n + rng.choice((0, 0, 5))  # gaps, as compaction leaves
        path = os.path.join(tmp, "%020d.log" % 0)
        with open(path, "wb") as f:
            f.write(data)
        objs = klf_dump(path)
        errors = [o for o in objs if "error" in o]
        check(not errors, f"{where}: problems {errors[:3]}")
        got_batches = [o for o in objs if o.get("type") == "batch"]
        check(len(got_batches) == len(want_batches), f"{where}: {len(got_batches)} batches, wrote {len(want_batches)}")
        for i, (g, w) in enumerate(zip(got_batches, want_batches)):
            diff = {k: (g.get(k), v) for k, v in w.items() if g.get(k) != v}
            check(not diff, f"{where}: batch #{i}: (klf, written) {diff}")
        got = [(r["offset"], r["timestamp"], r["key"], r["value"],
                None if r["headers"] is None else [(h["key"], h["value"]) for h in r["headers"]])
               for b in got_batches for r in (b.get("records") or [])]
        want = [as_klf(r, magic) for r in want_records]
        if got != want:
            i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            fail(f"{where}: {len(got)} records, wrote {len(want)}; record #{i}: klf "
                 f"{got[i] if i < len(got) else None} vs written {want[i] if i < len(want) else None}")
        compared += len(want)
        compressed_v2 += sum(1 for b in want_batches if b["magic"] == 2 and b["compression"] != "none")
        print(f"{where}: {len(want_batches)} entries, {len(want)} records")

check(compared > 1000, f"only {compared} records compared")
check(compressed_v2 >= 40, f"only {compressed_v2} compressed v2 batches")
finish()
