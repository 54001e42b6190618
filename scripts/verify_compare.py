#!/usr/bin/env python3
"""Runs `klf verify` with two binaries over every partition directory, log directory and `.log` file under
a fixtures tree (and any extra directories, e.g. `klf-bench gen --batch-bytes` output with large batches),
plus damaged copies, and compares exit code, stdout and stderr byte for byte (text and --json).

  scripts/verify_compare.py OLD_KLF NEW_KLF [--fixtures DIR] [--extra DIR ...] [--damaged N] [--seed S]

Damaged copies (of the N partitions with the largest .log, and of every extra partition): the .log
truncated inside a batch; a byte flipped in a batch header; a byte flipped in a batch's CRC-covered
bytes (random, and in the middle of the largest compressed batch, and of the largest uncompressed one);
and a run of record bytes set to 0xff with the batch CRC-32C recomputed, so the CRC holds and the record
walk finds the damage (in the first and in a later 16 KiB piece of a large batch).

Prints one line per difference and a summary; exit 1 if any run differs. A change to verify's reading
path must leave every run identical (docs/ARCHITECTURE.md: decisions and bytes unchanged).
"""
import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_dirs  # noqa: E402


def crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


TABLE = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    t = TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def partition_dirs(root):
    return fixture_dirs.partition_dirs(root, lambda f: f.endswith(".log"))


def log_files(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def batches(data):
    """(position, total size, magic, attributes) of each entry while the framing holds."""
    out = []
    pos = 0
    while pos + 17 <= len(data):
        size = struct.unpack(">i", data[pos + 8:pos + 12])[0]
        if size < 14 or pos + 12 + size > len(data):
            break
        magic = data[pos + 16]
        attr = data[pos + 22] if magic == 2 and size >= 49 else (data[pos + 17] if magic < 2 else 0)
        out.append((pos, 12 + size, magic, attr))
        pos += 12 + size
    return out


def run(binary, args):
    p = subprocess.run([binary, "verify"] + args, capture_output=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def compare(old, new, args, label, counts, diffs):
    a = run(old, args)
    b = run(new, args)
    counts["runs"] += 1
    counts["exit1"] += a[0] == 1
    if a != b:
        diffs.append(label + " " + " ".join(args))
        print("DIFF:", label, " ".join(args), "exit", a[0], b[0], file=sys.stderr)


def damage(src_dir, rng, work, n):
    """Damaged copies of the partition at src_dir: yields (label, dir)."""
    logs = [f for f in log_files(src_dir) if os.path.getsize(f) > 0]
    if not logs:
        return
    victim = max(logs, key=os.path.getsize)
    with open(victim, "rb") as fh:
        data = fh.read()
    bs = batches(data)
    if not bs:
        return
    v2 = [b for b in bs if b[2] == 2 and b[1] > 61]
    cases = []
    pos, total, _, _ = rng.choice(bs)
    cases.append(("truncate", lambda d: d[:pos + rng.randrange(1, total)]))
    hp, _, _, _ = rng.choice(bs)
    hoff = rng.randrange(0, 61 if bs[0][2] == 2 else 17)
    cases.append(("header-%d" % hoff, lambda d: flip(d, hp + hoff)))
    if v2:
        p2, t2, _, _ = rng.choice(v2)
        cases.append(("covered", lambda d: flip(d, p2 + rng.randrange(21, t2))))
    compressed = [b for b in v2 if b[3] & 7]
    if compressed:
        pc, tc, _, _ = max(compressed, key=lambda b: b[1])
        cases.append(("compressed-middle", lambda d: flip(d, pc + 61 + (tc - 61) // 2)))
    plain = [b for b in v2 if not b[3] & 7]
    if plain:
        pp, tp, _, _ = max(plain, key=lambda b: b[1])
        cases.append(("plain-middle", lambda d: flip(d, pp + 61 + (tp - 61) // 2)))
        for where in (61 + rng.randrange(0, min(tp - 61, 16384)), 61 + 16384 + 100, tp // 2, tp - 3):
            if where < tp:
                cases.append(("recrc-%d" % where, lambda d, w=where: flip_recrc(d, pp, tp, pp + w)))
    for name, f in cases:
        dst = os.path.join(work, "d%d" % n[0])
        n[0] += 1
        shutil.copytree(src_dir, dst, symlinks=True)
        os.chmod(os.path.join(dst, os.path.basename(victim)), 0o644)
        with open(os.path.join(dst, os.path.basename(victim)), "wb") as fh:
            fh.write(f(bytearray(data)))
        yield name, dst


def flip(d, at):
    if at < len(d):
        d[at] ^= 0x5A
    return d


def flip_recrc(d, pos, total, at):
    """Sets 600 bytes from `at` (records) to 0xff and stores the batch's recomputed CRC-32C: the CRC holds,
    and the run (longer than the generated records) breaks a record's framing for the walk to find."""
    if at >= len(d) or pos + total > len(d):
        return d
    for k in range(at, min(at + 600, pos + total)):
        d[k] = 0xFF
    crc = crc32c(bytes(d[pos + 21:pos + total]))
    d[pos + 17:pos + 21] = struct.pack(">I", crc)
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--fixtures", default="/work/shared/fixtures")
    ap.add_argument("--extra", nargs="*", default=[])
    ap.add_argument("--damaged", type=int, default=40)
    ap.add_argument("--seed", type=int, default=20)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    counts = {"runs": 0, "exit1": 0, "targets": 0, "damaged": 0}
    diffs = []
    parts = partition_dirs(a.fixtures)
    extra = [p for e in a.extra for p in partition_dirs(e)]
    logdirs = sorted({os.path.dirname(p) for p in parts + extra})
    targets = [("partition", p) for p in parts + extra] + [("logdir", d) for d in logdirs]
    targets += [("file", f) for p in parts + extra for f in log_files(p)]
    for kind, t in targets:
        counts["targets"] += 1
        compare(a.old, a.new, [t], kind, counts, diffs)
        compare(a.old, a.new, ["--json", t], kind, counts, diffs)
    for d in logdirs:
        compare(a.old, a.new, ["--threads", "1", "--json", d], "logdir", counts, diffs)
    by_size = sorted(parts, key=lambda p: -sum(os.path.getsize(f) for f in log_files(p)))
    victims = by_size[:a.damaged] + extra
    work = tempfile.mkdtemp(prefix="verify-compare-")
    n = [0]
    try:
        for src in victims:
            for name, dst in damage(src, rng, work, n):
                counts["damaged"] += 1
                for args in ([dst], ["--json", dst]):
                    compare(a.old, a.new, args, "damaged:" + name, counts, diffs)
                for f in log_files(dst):
                    compare(a.old, a.new, ["--json", f], "damaged-file:" + name, counts, diffs)
                shutil.rmtree(dst)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("targets %d, damaged copies %d, runs %d (each with both binaries; %d with exit 1), differences %d" %
          (counts["targets"], counts["damaged"], counts["runs"], counts["exit1"], len(diffs)))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
