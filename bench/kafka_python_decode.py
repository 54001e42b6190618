#!/usr/bin/python3
"""The peer for decode throughput: kafka-python (Debian python3-kafka 2.0.2) decoding a segment.

Usage: /usr/bin/python3 bench/kafka_python_decode.py FILE [--max-bytes N] [--repeat R]

Reads the first N bytes of FILE cut at a batch boundary (kafka-python is too slow for whole 256 MiB
files in a benchmark), then, like klf's decode: every batch's CRC-32C is checked
(DefaultRecordBatch.validate_crc, which uses the C extension of python3-crc32c when installed, as
kafka-python itself does) and every record is parsed with its offset, timestamp, key, value and
headers touched. The read is outside the timed part; the best of R runs is reported.
Prints one JSON line: bytes, batches, records, seconds, MBps (decimal MB of file bytes per second).
"""
import json
import struct
import sys
import time

from kafka.record.memory_records import MemoryRecords
import kafka.record.util as kafka_util


def whole_batches(data):
    pos = 0
    while pos + 17 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        end = pos + 12 + length
        if end > len(data):
            break
        pos = end
    return data[:pos]


def decode(data):
    records = MemoryRecords(data)
    batches = n = 0
    checksum = 0
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        batches += 1
        if not batch.validate_crc():
            raise SystemExit("bad CRC in batch %d" % batches)
        for rec in batch:
            n += 1
            checksum += rec.offset + rec.timestamp
            if rec.key is not None:
                checksum += len(rec.key)
            if rec.value is not None:
                checksum += len(rec.value)
            for k, v in rec.headers:
                checksum += len(k) + (len(v) if v is not None else 0)
    return batches, n, checksum


def main():
    args = sys.argv[1:]
    max_bytes = 32 << 20
    repeat = 1
    path = None
    i = 0
    while i < len(args):
        if args[i] == "--max-bytes":
            max_bytes = int(args[i + 1]); i += 2
        elif args[i] == "--repeat":
            repeat = int(args[i + 1]); i += 2
        else:
            path = args[i]; i += 1
    if path is None:
        raise SystemExit(__doc__)
    with open(path, "rb") as f:
        data = whole_batches(f.read(max_bytes))
    best = best_cpu = None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        batches, n, checksum = decode(data)
        s, c = time.perf_counter() - t0, time.process_time() - c0
        best = s if best is None else min(best, s)
        best_cpu = c if best_cpu is None else min(best_cpu, c)
    print(json.dumps({"command": "kafka-python", "file": path, "bytes": len(data), "batches": batches,
                      "records": n, "seconds": round(best, 4), "cpu_seconds": round(best_cpu, 4),
                      "MBps": round(len(data) / 1e6 / best, 1),
                      "crc32c": "c-extension" if kafka_util.crc32c_c else "pure-python",
                      "checksum": checksum}))


if __name__ == "__main__":
    main()
