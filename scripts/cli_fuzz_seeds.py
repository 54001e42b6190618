#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/cli_fuzz.cc from Kafka-written fixture directories.

  scripts/cli_fuzz_seeds.py FIXTURES_DIR OUT_DIR

Each seed packs one broker set (or one partition directory, copied to all three brokers) in the
harness's format: a command byte, an 8-byte --now, then [replica][name length][name][length u16][data]
entries. Files over 60 KiB are left out (the harness reads at most 64 KiB inputs)."""
import os
import struct
import sys

LOG_DIR_FILES = {"recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                 "log-start-offset-checkpoint", "cleaner-offset-checkpoint", "meta.properties"}


def entries(replica, broker_dir, partition_dir):
    out = b""
    for d, names in ((broker_dir, LOG_DIR_FILES), (partition_dir, None)):
        if d is None:
            continue
        for n in sorted(os.listdir(d)):
            p = os.path.join(d, n)
            if not os.path.isfile(p) or (names is not None and n not in names):
                continue
            data = open(p, "rb").read()
            if len(data) > 60000:
                continue
            out += struct.pack("<BB", replica, len(n)) + n.encode() + struct.pack("<H", len(data)) + data
    return out


def seed(commands, now, parts):
    body = b"".join(entries(i, b, p) for i, (b, p) in enumerate(parts))
    return struct.pack("<Bq", commands, now) + body


def main():
    fix, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    oracle = os.path.join(fix, "kafka-oracle")
    sets = {
        "aborted-to-committed": os.path.join(oracle, "replicas", "aborted-to-committed"),
        "lost-tombstone": os.path.join(oracle, "replicas", "lost-tombstone-healthy-control"),
    }
    singles = {
        "txn": os.path.join(oracle, "b-txn", "txn-0"),
        "legacy": os.path.join(oracle, "x-legacy", "legacy-0"),
        "keyed-zstd": os.path.join(oracle, "a-keyed", "keyed-zstd-0"),
        "keyed-gzip": os.path.join(oracle, "a-keyed", "keyed-gzip-0"),
    }
    n = 0
    # Every command (0-7) appears in some seed, with and without --json.
    for name, root in sets.items():
        parts = [(os.path.join(root, b), os.path.join(root, b, "foo-0")) for b in ("broker2", "broker1", "broker3")]
        for c in range(8):
            open(os.path.join(out, f"{name}-{c}"), "wb").write(seed(c | (4 << 3) | ((c & 1) << 6), 1700000600000, parts))
            n += 1
    for name, d in singles.items():
        for c in range(8):
            open(os.path.join(out, f"{name}-{c}"), "wb").write(seed(c | (((c + 1) % 8) << 3) | ((c & 1) << 6), 1700172800000,
                                                                   [(None, d)]))
            n += 1
    print(f"{n} seeds in {out}")


main()
