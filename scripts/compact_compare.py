#!/usr/bin/env python3
"""Runs `klf compact` with two binaries over every partition directory (and log directory) under a
fixtures tree, in several modes and clocks, plus seeded damaged copies, and compares what they leave:
exit code, stdout (--json and text), stderr, and the output directory (names, bytes, mtimes).

  scripts/compact_compare.py OLD_KLF NEW_KLF [--fixtures DIR] [--damaged N] [--seed S]

Prints one line per difference and a summary; exit 1 if any run differs. A refactoring of the
compactor must leave every run identical (docs/ARCHITECTURE.md: decisions and bytes unchanged).
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_dirs import SEGMENT, partition_dirs  # noqa: E402

NOWS = ["1700000600000", "1700172800000", "1900000000000"]




def log_dirs(parts):
    return sorted({os.path.dirname(p) for p in parts})


def variants(target, siblings):
    """Argument lists for one target (a partition or log directory)."""
    out = []
    for now in NOWS:
        out.append(["--now", now, "--json"])
    out.append(["--now", NOWS[0], "--config", "segment.bytes=400", "index.interval.bytes=128", "--explain", "--json"])
    out.append(["--now", NOWS[1], "--passes", "3", "--pass-interval-ms", "3600000"])  # text output
    out.append(["--now", NOWS[2], "--only-if-eligible", "--json", "--config", "min.cleanable.dirty.ratio=0.01"])
    out.append(["--now", NOWS[0], "--config", "segment.index.bytes=64", "log.cleaner.dedupe.buffer.size=4096", "--json"])
    out.append(["--now", NOWS[1], "--mode", "coordinated", "--json"] + (["--replica"] + siblings if siblings else []))
    return out


def listing(root):
    rows = []
    for d, subdirs, files in os.walk(root):
        subdirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            st = os.stat(p)
            with open(p, "rb") as fh:
                data = fh.read()
            # Segment files carry their source's time (the cleaner reads it back); the others are stamped now.
            mtime = int(st.st_mtime * 1000) if re.search(r"\.(log|index|timeindex)$", f) else None
            rows.append((os.path.relpath(p, root), mtime, data))
    return rows


def run(klf, target, args, out):
    r = subprocess.run([klf, "compact", target, "--out", out] + args, capture_output=True, timeout=600)
    # The staging directory's name (<out>.tmp-<pid>-<random>) differs from run to run.
    norm = lambda b: re.sub(re.escape(out) + r"\.tmp-\d+-\w+", "<STAGE>", b.decode("utf-8", "replace")).replace(out, "<OUT>")
    return r.returncode, norm(r.stdout), norm(r.stderr), listing(out) if os.path.isdir(out) else None


def compare(old, new, target, args, work, stats):
    a = run(old, target, args, os.path.join(work, "a"))
    b = run(new, target, args, os.path.join(work, "b"))
    stats["runs"] += 1
    stats["rc"][a[0]] = stats["rc"].get(a[0], 0) + 1
    same = True
    for name, x, y in (("exit code", a[0], b[0]), ("stdout", a[1], b[1]), ("stderr", a[2], b[2]),
                       ("output directory", a[3], b[3])):
        if x != y:
            same = False
            print(f"DIFF {name}: klf compact {target} {' '.join(args)}")
            if name != "output directory":
                print(f"  old: {str(x)[:400]!r}\n  new: {str(y)[:400]!r}")
            else:
                xa = {r[0]: r[1:] for r in (x or [])}
                ya = {r[0]: r[1:] for r in (y or [])}
                for k in sorted(set(xa) | set(ya)):
                    if xa.get(k) != ya.get(k):
                        show = lambda r: "absent" if r is None else f"mtime {r[0]}, {len(r[1])} bytes"
                        print(f"  {k}: old {show(xa.get(k))}, new {show(ya.get(k))}")
    if not same:
        stats["diffs"] += 1
    for s in ("a", "b"):
        shutil.rmtree(os.path.join(work, s), ignore_errors=True)


def damage(src, dst, rng):
    """A copy of partition dir `src` at `dst` with one file damaged; returns what was done."""
    shutil.copytree(src, dst, copy_function=shutil.copy2)
    files = sorted(f for f in os.listdir(dst) if f.endswith((".log", ".index", ".timeindex", ".txnindex")))
    f = rng.choice(files)
    p = os.path.join(dst, f)
    size = os.path.getsize(p)
    how = rng.choice(["truncate", "zero", "garbage", "garbage", "append-zeros"])
    st = os.stat(p)
    with open(p, "r+b") as fh:
        if how == "truncate" and size > 0:
            n = rng.randrange(size)
            fh.truncate(n)
            what = f"truncated to {n}"
        elif how == "zero" and size > 0:
            pos = rng.randrange(size)
            n = rng.randint(1, 64)
            fh.seek(pos)
            fh.write(b"\0" * min(n, size - pos))
            what = f"zeroed {n} at {pos}"
        elif how == "append-zeros":
            fh.seek(size)
            n = rng.choice([7, 12, 100, 4096])
            fh.write(b"\0" * n)
            what = f"{n} zeros appended"
        elif size > 0:
            pos = rng.randrange(size)
            n = rng.randint(1, 8)
            fh.seek(pos)
            fh.write(bytes(rng.randrange(256) for _ in range(min(n, size - pos))))
            what = f"{n} garbage bytes at {pos}"
        else:
            what = "empty file left"
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    return f"{f}: {what}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--fixtures", default="/work/shared/fixtures")
    ap.add_argument("--damaged", type=int, default=30)
    ap.add_argument("--seed", type=int, default=16)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="compact-compare-")
    stats = {"runs": 0, "diffs": 0, "rc": {}}
    parts = partition_dirs(a.fixtures)
    for p in parts:
        name = os.path.basename(p)
        parent = os.path.dirname(os.path.dirname(p))
        siblings = [os.path.join(parent, b, name) for b in sorted(os.listdir(parent))
                    if os.path.join(parent, b, name) != p and os.path.isdir(os.path.join(parent, b, name))]
        vs = variants(p, siblings[:2])
        if "/real/" in p:  # 1,200 small directories from public repositories: the clocks and one text run
            vs = vs[:3] + vs[4:5]
        for args in vs:
            compare(a.old, a.new, p, args, work, stats)
    for d in log_dirs(parts):
        for args in variants(d, [])[:3]:
            compare(a.old, a.new, d, args, work, stats)
    targets = stats["runs"]
    print(f"fixtures: {len(parts)} partition dirs, {len(log_dirs(parts))} log dirs, {targets} runs, {stats['diffs']} differ")
    rng = random.Random(a.seed)
    pool = [p for p in parts if os.path.getsize(p) >= 0 and not p.startswith(os.path.join(a.fixtures, "real"))] or parts
    dstats = {"runs": 0, "diffs": 0, "rc": {}}
    for i in range(a.damaged):
        src = rng.choice(pool)
        dst = os.path.join(work, f"damaged-{i}", os.path.basename(src))
        what = damage(src, dst, rng)
        for args in (["--now", NOWS[0], "--json"], ["--now", NOWS[2], "--config", "segment.bytes=400", "--explain"]):
            before = dstats["diffs"]
            compare(a.old, a.new, dst, args, work, dstats)
            if dstats["diffs"] != before:
                print(f"  (damaged copy of {src}: {what})")
        shutil.rmtree(os.path.join(work, f"damaged-{i}"))
    print(f"damaged: {a.damaged} copies, {dstats['runs']} runs, {dstats['diffs']} differ, exit codes {dstats['rc']}")
    print(f"fixture exit codes {stats['rc']}")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if stats["diffs"] or dstats["diffs"] else 0


if __name__ == "__main__":
    sys.exit(main())
