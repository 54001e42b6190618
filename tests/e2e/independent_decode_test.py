#!/usr/bin/python3
"""Every batch and record of every .log that Kafka or a real broker wrote, decoded by two independent
decoders: `klf dump --json --records` and kafka-python (Debian python3-kafka, with python3-lz4,
-snappy and -zstandard). They must agree on each batch's magic, codec, CRC validity and v2 header
fields, and on each record's offset, timestamp, key, value and headers, byte for byte.

Sources: fixtures/real (115 non-empty segments of 15 public projects' brokers) and
fixtures/kafka-oracle (Kafka's storage code: every codec, magic 0/1/2, transactions, cleaned logs).
Run with /usr/bin/python3 (the interpreter that has the `kafka` package); CTest does.
"""
import json
import os

from kafka.record import MemoryRecords

from klf_e2e import FIX, check, fail, finish, is_segment, klf_text, process

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def hexed(b):
    return None if b is None else bytes(b).hex()


def python_view(path):
    """(batches, records) as kafka-python decodes the file."""
    with open(path, "rb") as f:
        records = MemoryRecords(f.read())
    batches, recs = [], []
    while True:
        b = records.next_batch()
        if b is None:
            break
        magic = b.magic if hasattr(b, "magic") else b._magic  # LegacyRecordBatch keeps it private
        batch = {"magic": magic, "compression": CODECS[b.compression_type], "crcValid": bool(b.validate_crc())}
        if magic == 2:
            # kafka-python 2.0.2 does not expose the producer fields; its unpacked header
            # (DefaultRecordBatch.HEADER_STRUCT) holds them.
            (_, _, leader_epoch, _, _, _, _, _, _, producer_id, producer_epoch, base_sequence,
             count) = b._header_data
            batch.update(baseOffset=b.base_offset, lastOffset=b.base_offset + b.last_offset_delta,
                         maxTimestamp=b.max_timestamp, partitionLeaderEpoch=leader_epoch, producerId=producer_id,
                         producerEpoch=producer_epoch, baseSequence=base_sequence, recordCount=count,
                         isTransactional=bool(b.is_transactional), isControl=bool(b.is_control_batch))
        batches.append(batch)
        for r in b:
            headers = [(klf_text(k.encode()), hexed(v)) for k, v in r.headers] if magic == 2 else None
            recs.append((r.offset, r.timestamp if magic > 0 else None, hexed(r.key), hexed(r.value), headers))
    return batches, recs


def klf_view(path):
    p = process(["dump", "--json", "--records", "--bytes", "hex", path])
    check(p.returncode == 0, f"{path}: klf dump exit {p.returncode}: {p.stderr[-500:]}")
    batches, recs = [], []
    for line in p.stdout.splitlines():
        o = json.loads(line)
        if o.get("type") != "batch":
            continue
        batch = {"magic": o["magic"], "compression": o["compression"], "crcValid": o["crcValid"]}
        if o["magic"] == 2:
            for k in ("baseOffset", "lastOffset", "maxTimestamp", "partitionLeaderEpoch", "producerId",
                      "producerEpoch", "baseSequence", "recordCount", "isTransactional", "isControl"):
                batch[k] = o[k]
        batches.append(batch)
        for r in o.get("records") or []:
            headers = None if r["headers"] is None else [(h["key"], h["value"]) for h in r["headers"]]
            recs.append((r["offset"], r["timestamp"], r["key"], r["value"], headers))
    return batches, recs


def logs_under(root):
    out = []
    for d, _, files in os.walk(root):
        out += [os.path.join(d, n) for n in files if is_segment(n) and os.path.getsize(os.path.join(d, n)) > 0]
    return sorted(out)


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i, x, y
    return min(len(a), len(b)), None, None


totals = {}
for source in ("real", "kafka-oracle"):
    logs = logs_under(os.path.join(FIX, source))
    n_batches = n_records = 0
    for path in logs:
        pb, pr = python_view(path)
        kb, kr = klf_view(path)
        if pb != kb:
            i, x, y = first_difference(pb, kb)
            fail(f"{path}: {len(kb)} batches vs kafka-python's {len(pb)}; batch #{i}: klf {y} vs {x}")
        if pr != kr:
            i, x, y = first_difference(pr, kr)
            fail(f"{path}: {len(kr)} records vs kafka-python's {len(pr)}; record #{i}: klf {y} vs {x}")
        n_batches += len(pb)
        n_records += len(pr)
    totals[source] = (len(logs), n_batches, n_records)
    print(f"{source}: {len(logs)} segments, {n_batches} batches, {n_records} records compared")

check(totals["real"][0] >= 100 and totals["real"][2] >= 200000, f"real: too little compared {totals['real']}")
check(totals["kafka-oracle"][0] >= 50, f"kafka-oracle: too little compared {totals['kafka-oracle']}")
finish()
