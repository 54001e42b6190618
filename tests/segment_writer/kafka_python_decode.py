"""Decodes a .log file with kafka-python (Debian python3-kafka) and prints JSON on stdout:
one object per batch with its CRC validity and records (key/value/header values in base64).

Used by the segment_writer tests as an independent decoder of what klf writes.
Run with /usr/bin/python3 (the interpreter that has the `kafka` package).
"""
import base64
import json
import sys

from kafka.record import MemoryRecords


def b64(b):
    return None if b is None else base64.b64encode(bytes(b)).decode()


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    records = MemoryRecords(data)
    batches = []
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        # LegacyRecordBatch keeps its magic private in kafka-python 2.0.2.
        magic = batch.magic if hasattr(batch, "magic") else batch._magic
        out = {"magic": magic, "crcValid": bool(batch.validate_crc()), "records": []}
        if magic == 2:
            out["isControl"] = bool(batch.is_control_batch)
            out["isTransactional"] = bool(batch.is_transactional)
            out["baseOffset"] = batch.base_offset
        for r in batch:
            out["records"].append({
                "offset": r.offset,
                "timestamp": r.timestamp,
                "key": b64(r.key),
                "value": b64(r.value),
                "headers": [[k, b64(v)] for k, v in r.headers],
            })
        batches.append(out)
    json.dump({"batches": batches, "validBytes": records.valid_bytes(), "size": len(data)}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
