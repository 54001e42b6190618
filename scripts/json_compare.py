#!/usr/bin/env python3
"""Runs every klf command with two binaries over a corpus of fixtures and damaged copies and compares
what they print: exit code, stdout and stderr, byte for byte (and, for commands that write --out, the
files written). For a change to how output is printed (e.g. one JSON printer for every command), which
must leave every byte of every command unchanged: --json and the text default alike.

  scripts/json_compare.py OLD_KLF NEW_KLF [--fixtures DIR] [--jobs N] [--real N] [--seed S]

The corpus: every partition directory and log directory of kafka-oracle/ and kafka4/ (dump, verify,
consume, lso, reindex, compact, repair --salvage), N partition directories and every log directory of
real/, the replica sets (diff, lso --replica, repair --dry-run and to --out, triage, txn find-hanging
and audit, digest then triage of the digests), txn describe over __transaction_state, the simulate
timelines of fixtures/*.json in both modes, error paths (missing paths, usage errors) and damaged
copies: directory names with invalid UTF-8, quotes, backslashes and control characters, truncated and
overwritten segments. Runs that write --out use the same --out path for both binaries (removed in
between), so paths in the output agree. Prints one line per difference and a summary; exit 1 if any
run differs. Every --json run is made once more with stderr merged into stdout (2>&1), so that
the order of the JSON and the error lines is compared as well.
"""
import argparse
import concurrent.futures
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_dirs import SEGMENT, partition_dirs  # noqa: E402

STAGE = re.compile(rb"\.tmp-\d+-[A-Za-z0-9]+")
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))




def tree(root):
    """Names and bytes of the files under root (None if absent)."""
    if not os.path.exists(root):
        return None
    rows = []
    for d, subdirs, files in os.walk(root):
        subdirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                rows.append((os.path.relpath(p, root), fh.read()))
    return rows


class Runner:
    def __init__(self, old, new, scratch):
        self.old, self.new, self.scratch = old, new, scratch
        self.count = 0
        self.differ = []
        self.seq = 0
        self.exits = {}
        self.stats = {"JSON on stdout": 0, "JSON with \\xNN (invalid UTF-8)": 0, "JSON with control escapes": 0,
                      "JSON with a double": 0}

    def one(self, binary, args, out, merged=False):
        if out:
            shutil.rmtree(out, ignore_errors=True)
            if os.path.exists(out):
                os.remove(out)
        if merged:  # 2>&1 into one pipe: the order of stdout and stderr lines is compared too
            p = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        else:
            p = subprocess.run([binary] + args, capture_output=True, timeout=600)
        # Staging directories are named <out>.tmp-<pid>-<random>: different in every run.
        stdout, stderr = (None if x is None else STAGE.sub(b".tmp-<STAGE>", x) for x in (p.stdout, p.stderr))
        if args[0] == "digest":  # the time it took (a double, checked by tests/cli/write_json_test.cc)
            stdout = re.sub(rb'"seconds":[-+.0-9eE]+', b'"seconds":<T>', stdout)
            stdout = re.sub(rb" in [0-9.]+ s;", b" in <T> s;", stdout)
        written = tree(out) if out else None
        if out and os.path.isdir(out):
            shutil.rmtree(out, ignore_errors=True)
        elif out and os.path.exists(out):
            os.remove(out)
        return p.returncode, stdout, stderr, written

    def run(self, args, out=None):
        """args: the command line; out: a path both runs write (substituted for {OUT} in args)."""
        if out == "dir" or out == "file":
            self.seq += 1
            out = os.path.join(self.scratch, f"out{self.seq}")
            args = [out if a == "{OUT}" else a.replace("{OUT}", out) for a in args]
        return args, out

    def compare(self, args, out, merged=False):
        a = self.one(self.old, args, out, merged)
        b = self.one(self.new, args, out, merged)
        if merged:
            if a != b:
                return f"DIFF merged stdout+stderr: klf {' '.join(map(repr, args))}"
            return None
        key = (args[0] if args[0] != "txn" else "txn " + args[1], a[0])
        self.exits[key] = self.exits.get(key, 0) + 1
        json_out = a[1][:1] in (b"{", b"[")
        self.stats["JSON on stdout"] += json_out
        self.stats["JSON with \\xNN (invalid UTF-8)"] += json_out and b"\\\\x" in a[1]
        self.stats["JSON with control escapes"] += json_out and re.search(rb"\\[nt]|\\u00", a[1]) is not None
        self.stats["JSON with a double"] += json_out and re.search(rb":-?[0-9]+\.[0-9]", a[1]) is not None
        if a != b:
            what = [n for n, x, y in zip(("exit", "stdout", "stderr", "files"), a, b) if x != y]
            return f"DIFF {'/'.join(what)}: klf {' '.join(map(repr, args))}"
        return None


def corpus(f, rng, real_sample, scratch):
    """(args, out) pairs; out is None, "dir" (args hold {OUT}) or "file"."""
    runs = []
    ours = partition_dirs(os.path.join(f, "kafka-oracle")) + partition_dirs(os.path.join(f, "kafka4"))
    real = partition_dirs(os.path.join(f, "real"))
    parts = ours + sorted(rng.sample(real, min(real_sample, len(real))))
    log_dirs = sorted({os.path.dirname(p) for p in ours + real})
    singles = sorted(glob.glob(os.path.join(f, "kafka-python", "*.log")))
    now = "1700172800000"

    for p in parts:
        data = not os.path.basename(p).startswith("__")
        runs += [(["dump", "--json", p], None), (["dump", p], None), (["dump", "--records", "--json", p], None),
                 (["dump", "--records", "--per-record", "--json", "--bytes", "hex", p], None),
                 (["verify", "--json", p], None), (["verify", p], None)]
        for iso in ("read_committed", "read_uncommitted"):
            runs.append((["consume", "--isolation", iso, "--json", p], None))
        runs.append((["consume", "--isolation", "read_committed", p], None))
        runs += [(["lso", "--json", "--now", now, p], None), (["lso", p], None),
                 (["reindex", p, "--out", "{OUT}", "--json"], "dir"), (["reindex", p, "--out", "{OUT}"], "dir"),
                 (["repair", "--salvage", p, "--out", "{OUT}", "--json"], "dir"),
                 (["repair", "--salvage", p, "--out", "{OUT}"], "dir")]
        if data:
            runs += [(["compact", p, "--out", "{OUT}", "--now", now, "--json"], "dir"),
                     (["compact", p, "--out", "{OUT}", "--now", now, "--explain", "--json",
                       "--config", "segment.bytes=400", "min.cleanable.dirty.ratio=0.01"], "dir"),
                     (["compact", p, "--out", "{OUT}", "--now", now, "--explain"], "dir")]
    for s in singles:
        runs += [(["dump", "--json", "--records", s], None), (["dump", s], None), (["verify", "--json", s], None)]
    for d in log_dirs:
        runs += [(["verify", "--json", d], None), (["verify", d], None),
                 (["lso", "--json", "--now", now, d], None), (["lso", d], None),
                 (["compact", d, "--out", "{OUT}", "--now", now, "--json"], "dir"),
                 (["compact", d, "--out", "{OUT}", "--now", now], "dir"),
                 (["triage", "--json", "--now", now, d], None), (["triage", d], None),
                 (["txn", "find-hanging", "--json", d], None), (["txn", "find-hanging", d], None),
                 (["txn", "audit", "--json", d], None), (["digest", d, "--out", "{OUT}", "--json"], "file")]
    for t in sorted(glob.glob(os.path.join(f, "**", "__transaction_state-*"), recursive=True)):
        if os.path.isdir(t):
            runs += [(["txn", "describe", "--json", t], None), (["txn", "describe", t], None)]

    runs += replica_set_runs(sets_of(f), now)
    for t in sorted(glob.glob(os.path.join(SRC, "fixtures", "*.json"))):
        for mode in ("uncoordinated", "coordinated"):
            runs += [(["simulate", t, "--mode", mode, "--out", "{OUT}", "--json"], "dir"),
                     (["simulate", t, "--mode", mode, "--out", "{OUT}", "--records"], "dir")]
    runs += error_runs(parts[0], scratch)
    return runs


def sets_of(f):
    sets = sorted(glob.glob(os.path.join(f, "kafka-oracle", "replicas", "*")) +
                  glob.glob(os.path.join(f, "kafka-oracle", "random-replicas", "timeline-*")) +
                  glob.glob(os.path.join(f, "kafka4", "tv2-replicas", "timeline-*")))
    return [s for s in sets if os.path.isdir(s)]


def replica_set_runs(sets, now):
    runs = []
    for s in sets:
        brokers = sorted(glob.glob(os.path.join(s, "broker*")))
        brokers = [b for b in brokers if os.path.isdir(b)]
        if not brokers:
            continue
        part = sorted({os.path.basename(p) for b in brokers for p in partition_dirs(b)
                       if not os.path.basename(p).startswith("__")})
        for name in part:
            dirs = [os.path.join(b, name) for b in brokers if os.path.isdir(os.path.join(b, name))]
            if len(dirs) < 2:
                continue
            others = sum((["--replica", d] for d in dirs[1:]), [])
            runs += [(["diff", "--json"] + dirs, None), (["diff"] + dirs, None),
                     (["diff", "--json", "--now", "1800000000000", "--bytes", "base64"] + dirs, None),
                     (["diff", "--json", "--html", "{OUT}"] + dirs, "file"),
                     (["lso", "--json", "--now", now, dirs[0]] + others, None), (["lso", dirs[0]] + others, None)]
            for target in dirs:
                rest = sum((["--replica", d] for d in dirs if d != target), [])
                runs += [(["repair", "--target", target, "--dry-run", "--json"] + rest, None),
                         (["repair", "--target", target, "--dry-run"] + rest, None),
                         (["repair", "--target", target, "--out", "{OUT}", "--json"] + rest, "dir"),
                         (["repair", "--target", target, "--out", "{OUT}"] + rest, "dir"),
                         (["repair", "--target", target, "--rebuild-from", dirs[0], "--dry-run", "--json"], None)]
        runs += [(["diff", "--json"] + brokers, None), (["diff", "--only-findings"] + brokers, None),
                 (["triage", "--json", "--now", now] + brokers, None), (["triage"] + brokers, None),
                 (["txn", "find-hanging", "--json"] + brokers, None), (["txn", "audit", "--json"] + brokers, None),
                 (["txn", "audit"] + brokers, None)]
    return runs


def error_runs(part, scratch):
    missing = os.fsdecode(os.fsencode(scratch) + b"/no\xff such\ndir")
    runs = []
    for cmd in (["dump"], ["verify"], ["diff"], ["lso"], ["triage"], ["txn", "find-hanging"], ["txn", "audit"],
                ["txn", "describe"], ["consume", "--isolation", "read_committed"]):
        runs += [(cmd + ["--json", missing], None), (cmd + [missing], None)]
    runs += [(["reindex", missing, "--out", "{OUT}", "--json"], "dir"),
             (["compact", missing, "--out", "{OUT}", "--json"], "dir"),
             (["simulate", missing, "--out", "{OUT}", "--json"], "dir"),
             (["digest", missing, "--out", "{OUT}", "--json"], "file"),
             (["repair", "--salvage", missing, "--out", "{OUT}", "--json"], "dir"),
             (["diff", "--json", part], None), (["diff", "--json", "--bogus", part], None),
             (["dump", "--json", "--bytes", "nope", part], None), (["compact", "--json", part], None),
             (["verify", "--json"], None), (["lso", "--json", part, "--now", "x"], None),
             (["compact", part, "--out", part, "--json"], None), (["reindex", part, "--out", part, "--json"], None)]
    return runs


def damaged(f, scratch, rng):
    """Copies with hostile names and damaged bytes; returns (partition dirs, replica sets)."""
    base = os.path.join(scratch, "damaged")
    names = [b"bad\xff\xfe name", b"ctl\n\t\x01\x1f\x7f", b'q"uo\\te', "utf8-\u00e9\U0001F600".encode(), b"cut\xe2\x82"]
    srcs = sorted(glob.glob(os.path.join(f, "kafka-oracle", "replicas", "*")) +
                  glob.glob(os.path.join(f, "kafka-oracle", "random-replicas", "timeline-0[14]")))
    parts, sets = [], []
    for i, s in enumerate(srcs):
        name = names[i % len(names)]
        d = os.fsencode(os.path.join(base, f"{i}-")) + name
        d = os.fsdecode(d)
        shutil.copytree(s, d, ignore=shutil.ignore_patterns("*.dump.txt", "*.json", "*.log.txt"))
        sets.append(d)
        for k, p in enumerate(partition_dirs(d)):
            parts.append(p)
            files = sorted(x for x in glob.glob(os.path.join(p, "*")) if os.path.getsize(x) > 0)
            if k == 0 or not files:
                continue  # one broker intact
            victim = rng.choice(files)
            size = os.path.getsize(victim)
            with open(victim, "r+b") as fh:
                mode = (i + k) % 3
                if mode == 0:
                    fh.truncate(rng.randrange(size))
                elif mode == 1:
                    at = rng.randrange(size)
                    fh.seek(at)
                    fh.write(bytes(rng.randrange(256) for _ in range(min(8, size - at))))
                else:
                    at = rng.randrange(size)
                    fh.seek(at)
                    fh.write(b"\0" * min(64, size - at))
        # A file name that is not UTF-8 inside the partition directory, and an odd segment name.
        first = partition_dirs(d)[0]
        open(os.fsdecode(os.fsencode(first) + b"/stray\xff\n.txt"), "w").close()
        open(os.path.join(first, "99999999999999999999.log"), "w").close()
    return parts, sets


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--fixtures", default=os.path.join(SRC, "..", "shared", "fixtures"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--real", type=int, default=40, help="partition directories of real/ to run one by one")
    ap.add_argument("--seed", type=int, default=16)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    scratch = tempfile.mkdtemp(prefix="json_compare-")
    try:
        runs = corpus(os.path.abspath(a.fixtures), rng, a.real, scratch)
        dparts, dsets = damaged(os.path.abspath(a.fixtures), scratch, rng)
        now = "1700172800000"
        for p in dparts:
            runs += [(["dump", "--json", "--records", p], None), (["dump", p], None), (["verify", "--json", p], None),
                     (["verify", p], None), (["consume", "--isolation", "read_committed", "--json", p], None),
                     (["lso", "--json", "--now", now, p], None),
                     (["reindex", p, "--out", "{OUT}", "--json"], "dir"),
                     (["compact", p, "--out", "{OUT}", "--now", now, "--json"], "dir"),
                     (["repair", "--salvage", p, "--out", "{OUT}", "--json"], "dir")]
        runs += replica_set_runs(dsets, now)
        for s in dsets:
            for b in sorted(glob.glob(os.path.join(s, "broker*"))):
                runs += [(["verify", "--json", b], None), (["lso", "--json", "--now", now, b], None),
                         (["triage", "--json", "--now", now, b], None),
                         (["digest", b, "--out", "{OUT}", "--json"], "file")]

        # The simulator's broker log dirs (written once, by OLD) of every timeline, as replica sets; and a
        # log dir holding kafka4's coordinator partition beside its data partition (txn's own fixture).
        sims = []
        for t in sorted(glob.glob(os.path.join(SRC, "fixtures", "*.json"))):
            out = os.path.join(scratch, "sim-" + os.path.basename(t)[:-5])
            subprocess.run([a.old, "simulate", t, "--out", out], capture_output=True, check=False)
            if os.path.isdir(out):
                sims.append(out)
        runs += replica_set_runs(sims, now)
        for s in sims:
            brokers = sorted(glob.glob(os.path.join(s, "broker*")))
            runs += [(["txn", "audit"] + brokers, None), (["txn", "find-hanging"] + brokers, None),
                     (["txn", "describe", "--json"] + brokers, None)]
        txn_dir = os.path.join(scratch, "txn-broker1")
        k4 = os.path.join(os.path.abspath(a.fixtures), "kafka4")
        shutil.copytree(os.path.join(k4, "txn-state", "written", "__transaction_state-0"),
                        os.path.join(txn_dir, "__transaction_state-0"))
        shutil.copytree(os.path.join(k4, "tv2-txn", "written", "tv2-txn-0"), os.path.join(txn_dir, "tv2-txn-0"))
        part = os.path.join(txn_dir, "tv2-txn-0")
        for cmd in (["txn", "find-hanging"], ["txn", "audit"], ["txn", "describe"], ["lso"], ["triage"], ["verify"]):
            runs += [(cmd + ["--json", txn_dir], None), (cmd + [txn_dir], None)]
        runs += [(["lso", "--json", part, "--txn-log", txn_dir], None), (["lso", part, "--txn-log", txn_dir], None),
                 (["consume", "--isolation", "read_committed", "--json", part], None),
                 (["diff", "--json", part, os.path.join(k4, "tv2-txn", "cleaned-pass1", "tv2-txn-0"),
                   "--txn-log", txn_dir], None)]

        # Digests (made once, by OLD: they are inputs here) of every broker of the replica sets, then
        # triage of the digests, alone and mixed with a log dir.
        for k, s in enumerate(sets_of(os.path.abspath(a.fixtures)) + dsets[:3]):
            brokers = sorted(b for b in glob.glob(os.path.join(s, "broker*")) if os.path.isdir(b))
            digests = []
            for n, b in enumerate(brokers):
                out = os.path.join(scratch, f"digest{k}-{n}")
                subprocess.run([a.old, "digest", b, "--out", out, "--now", now], capture_output=True, check=False)
                if os.path.exists(out):
                    digests.append(out)
            if digests:
                runs += [(["triage", "--json", "--now", now] + digests, None), (["triage", "--now", now] + digests, None),
                         (["triage", "--json", "--now", now] + digests[1:] + brokers[:1], None)]
        runner = Runner(a.old, a.new, scratch)
        prepared = [runner.run(args, out) for args, out in runs]
        merged = sum(1 for args, out in prepared if "--json" in args)
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            # Every --json run once more with stderr merged into stdout (2>&1).
            prepared += [(args, out, True) for args, out in prepared if "--json" in args]
            for line in pool.map(lambda r: runner.compare(*r), prepared):
                if line:
                    print(line, flush=True)
                    runner.differ.append(line)
        print("runs by command and exit code:", ", ".join(f"{c} {e}: {n}" for (c, e), n in sorted(runner.exits.items())))
        print("; ".join(f"{k}: {v}" for k, v in runner.stats.items()))
        print(f"compared {len(prepared)} runs ({len(prepared) - merged}: exit code, stdout, stderr, files written; "
              f"{merged} --json runs again with stderr merged into stdout), {len(runner.differ)} differ")
        return 1 if runner.differ else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
