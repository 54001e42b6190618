#!/usr/bin/python3
"""Bad input is reported, never a crash, for every command. Copies of Kafka-written partition
directories (with their log dir's checkpoint files) get random damage — flipped bits, truncation,
inserted garbage, zeroed runs — in any of their files, and every command runs on them: verify, dump,
compact, reindex, diff (against the undamaged original), lso, repair --dry-run and repair --salvage.
Each must exit with a documented code (0-3, never a signal), print one JSON document (or, for dump,
JSON lines) on stdout, and name a file in every problem it reports. The originals stay untouched.

The seed is fixed so a failure repeats; KLF_SWEEP_SEED and KLF_SWEEP_CASES change it. (A longer run
of this sweep under AddressSanitizer is recorded in docs/ROBUSTNESS.md.)
"""
import json
import os
import random
import shutil

from klf_e2e import ORACLE, check, copy_fixture, is_segment, process, snapshot, temp_dir, finish

SEED = int(os.environ.get("KLF_SWEEP_SEED", "20261202"))
CASES = int(os.environ.get("KLF_SWEEP_CASES", "40"))
rng = random.Random(SEED)


def partition_dirs():
    out = []
    for root, _, files in os.walk(ORACLE):
        if any(is_segment(f) for f in files):
            out.append(root)
    return sorted(out)


def damage(path):
    with open(path, "rb") as f:
        b = bytearray(f.read())
    if not b:
        return "empty, left"
    action = rng.choice(["flip", "flip", "truncate", "garbage", "zero-run"])
    if action == "flip":
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif action == "truncate":
        del b[rng.randrange(len(b)):]
    elif action == "garbage":
        at = rng.randrange(len(b))
        b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
    else:
        at = rng.randrange(len(b))
        n = rng.randint(1, 64)
        b[at:at + n] = bytes(min(n, len(b) - at))
    with open(path, "wb") as f:
        f.write(b)
    return action


def problems_name_files(doc, where):
    """Every object with an 'error' or 'problems' entry names its file."""
    if isinstance(doc, dict):
        if "error" in doc and "position" in doc:
            check(doc.get("file"), f"{where}: error without a file: {doc}")
        for p in doc.get("problems", []) if isinstance(doc.get("problems"), list) else []:
            check(isinstance(p, dict) and p.get("file"), f"{where}: problem without a file: {p}")
        for v in doc.values():
            if isinstance(v, (dict, list)):
                problems_name_files(v, where)
    elif isinstance(doc, list):
        for v in doc:
            problems_name_files(v, where)


sources = partition_dirs()
check(len(sources) >= 30, f"only {len(sources)} partition directories under {ORACLE}")
before = snapshot(ORACLE)
runs = nonzero = 0
for case in range(CASES):
    src = rng.choice(sources)
    with temp_dir("klf-sweep-") as tmp:
        logdir = os.path.join(tmp, "logs")
        os.makedirs(logdir)
        part = copy_fixture(src, os.path.join(logdir, os.path.basename(src)))
        parent = os.path.dirname(src)
        for n in os.listdir(parent):
            if "checkpoint" in n and os.path.isfile(os.path.join(parent, n)):
                shutil.copy(os.path.join(parent, n), logdir)
                os.chmod(os.path.join(logdir, n), 0o644)
        files = sorted(os.path.join(part, n) for n in os.listdir(part))
        files += sorted(os.path.join(logdir, n) for n in os.listdir(logdir) if os.path.isfile(os.path.join(logdir, n)))
        done = [f"{os.path.basename(f)}: {damage(f)}" for f in rng.sample(files, min(len(files), rng.randint(1, 3)))]
        out = os.path.join(tmp, "out")
        commands = [
            ["verify", "--json", logdir],
            ["dump", "--json", "--records", part],
            ["compact", "--json", part, "--out", out + "-compact", "--config", "cleanup.policy=compact",
             "--config", "min.cleanable.dirty.ratio=0"],
            ["reindex", "--json", part, "--out", out + "-reindex"],
            ["diff", "--json", part, src],
            ["lso", "--json", part],
            ["repair", "--json", "--dry-run", "--target", part, "--replica", src],
            ["repair", "--json", "--salvage", part, "--out", out + "-salvage"],
        ]
        for args in commands:
            p = process(args)
            where = f"case {case} (seed {SEED}) {src} [{'; '.join(done)}]: klf {args[0]}"
            runs += 1
            nonzero += p.returncode != 0
            if not check(0 <= p.returncode <= 3, f"{where}: exit {p.returncode}, stderr {p.stderr[-600:]}"):
                continue
            try:
                docs = [json.loads(l) for l in p.stdout.splitlines()] if args[0] == "dump" else [json.loads(p.stdout)]
            except ValueError as e:
                check(False, f"{where}: stdout is not JSON ({e}): {p.stdout[:300]!r} stderr {p.stderr[-300:]}")
                continue
            problems_name_files(docs, where)

check(snapshot(ORACLE) == before, "the fixtures changed")
check(runs == 8 * CASES, f"{runs} runs")
check(nonzero > CASES, f"only {nonzero} of {runs} runs noticed the damage")
print(f"{CASES} damaged copies, {runs} runs, {nonzero} with a non-zero exit")
finish()
