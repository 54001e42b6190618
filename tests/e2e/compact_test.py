#!/usr/bin/python3
"""klf compact end to end: every cleaner pass Kafka ran (fixtures/kafka-oracle/cleaner-passes) is
reproduced by the klf binary from the command line described in that folder's README, the input
stays untouched, --json has the cli.md shape, and a second run is idempotent."""
import json
import os
import shutil
import tempfile

from klf_e2e import FIX as FIXTURES, fail, finish, snapshot
from klf_e2e import process as run

FIX = os.path.join(FIXTURES, "kafka-oracle", "cleaner-passes")


def load_mtimes():
    m = {}
    with open(os.path.join(FIX, "mtimes.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            path, ms = line.rstrip("\n").split("\t")
            m[path] = int(ms)
    return m


def copy_with_mtimes(case, dst, mtimes):
    src = os.path.join(FIX, case, "before")
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        os.chmod(root, 0o755)
        for n in files:
            p = os.path.join(root, n)
            os.chmod(p, 0o644)
            rel = os.path.join(case, "before", os.path.relpath(p, dst))
            if rel in mtimes:
                ns = mtimes[rel] * 1000000
                os.utime(p, ns=(ns, ns))


def dir_files(d):
    res = {}
    for root, _, files in os.walk(d):
        for n in files:
            if n == ".klf-output" and root == d:
                continue  # klf's output marker (README "Conventions"): not one of Kafka's files
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                res[os.path.relpath(p, d)] = f.read()
    return res


# Every output file must be byte-identical to Kafka's, re-compressed batches included (our codec
# libraries at their default levels produce Kafka's bytes for these cases). fixtures/README.md allows
# re-compressed bytes to differ; should a codec library update change them, the C++ oracle test
# (tests/compactor/oracle_test.cc) still compares those batches decoded.

mtimes = load_mtimes()
cases = sorted(d for d in os.listdir(FIX) if os.path.isdir(os.path.join(FIX, d)))
if len(cases) < 10:
    fail("expected the 10 cleaner-passes cases, found %d" % len(cases))
with tempfile.TemporaryDirectory() as tmp:
    for case in cases:
        c = json.load(open(os.path.join(FIX, case, "case.json")))
        before = os.path.join(tmp, case, "before")
        copy_with_mtimes(case, before, mtimes)
        before_state = snapshot(before)
        out = os.path.join(tmp, case, "out")
        args = ["compact", os.path.join(before, c["partitionDir"]), "--out", out, "--now", str(c["nowMs"]),
                "--only-if-eligible", "--json"]
        for k, v in c["config"].items():
            args += ["--config", "%s=%s" % (k, v)]
        r = run(args)
        if r.returncode != 0:
            fail("%s: exit %d: %s" % (case, r.returncode, r.stderr))
            continue
        j = json.loads(r.stdout)
        for key in ["cleanedRange", "recordsRead", "recordsRetained", "bytesRead", "bytesWritten",
                    "tombstonesRemoved", "markersRemoved", "segments"]:
            if key not in j:
                fail("%s: --json lacks %s" % (case, key))
        summary = dict(kv.split("=", 1) for kv in c["cleanSummary"].split() if "=" in kv)
        if c["expectCleaned"] and j["cleanedRange"] != [int(summary["firstDirtyOffset"]), int(summary["endOffset"])]:
            fail("%s: cleanedRange %s, Kafka cleaned [%s, %s)" % (case, j["cleanedRange"], summary["firstDirtyOffset"],
                                                                 summary["endOffset"]))
        if j["recordsRead"] != int(summary["messagesRead"]) or j["recordsRetained"] != int(summary["messagesWritten"]):
            fail("%s: records read/retained %d/%d, Kafka %s/%s" % (case, j["recordsRead"], j["recordsRetained"],
                                                                   summary["messagesRead"], summary["messagesWritten"]))
        if snapshot(before) != before_state:
            fail("%s: the input directory changed" % case)
        ours, kafka = dir_files(out), dir_files(os.path.join(FIX, case, "after"))
        if set(ours) != set(kafka):
            fail("%s: files differ: only klf %s, only Kafka %s" % (case, sorted(set(ours) - set(kafka)),
                                                                 sorted(set(kafka) - set(ours))))
        for name in sorted(set(ours) & set(kafka)):
            if ours[name] == kafka[name]:
                continue
            fail("%s: %s differs from Kafka's" % (case, name))
        # Idempotence: the broker would not pick the cleaned log again at the same time, and the
        # output of a second run equals the first.
        out2 = os.path.join(tmp, case, "out2")
        args2 = [a if a != os.path.join(before, c["partitionDir"]) else os.path.join(out, c["partitionDir"])
                 for a in args]
        args2[args2.index(out)] = out2
        r2 = run(args2)
        if r2.returncode != 0:
            fail("%s: second run exit %d: %s" % (case, r2.returncode, r2.stderr))
            continue
        j2 = json.loads(r2.stdout)
        if j2["passes"][0]["cleaned"]:
            # A second broker pass may legitimately run (e.g. the map filled up); it must then make progress.
            if j2["cleanedRange"][1] <= j["cleanedRange"][1] and not j["passes"][0]["offsetMap"]["filled"]:
                fail("%s: second pass cleaned again without progress" % case)
        elif dir_files(out2) != dir_files(out):
            fail("%s: a second run that did not clean changed files" % case)
        print("ok", case)

    # --out refuses an existing non-empty directory (cli.md) and leaves it alone.
    case = cases[0]
    c = json.load(open(os.path.join(FIX, case, "case.json")))
    r = run(["compact", os.path.join(tmp, case, "before", c["partitionDir"]), "--out", os.path.join(tmp, case, "out"),
             "--now", str(c["nowMs"])])
    if r.returncode == 0:
        fail("compact into an existing non-empty --out succeeded")
    # Usage errors exit 2.
    r = run(["compact", os.path.join(tmp, case, "before", c["partitionDir"]), "--out", os.path.join(tmp, "x"),
             "--config", "no.such.property=1"])
    if r.returncode != 2:
        fail("unknown --config property: exit %d, expected 2" % r.returncode)

    # A log damaged where the cleaner reads: exit 1, nothing written, and --json names the damage.
    part = os.path.join(tmp, case, "before", c["partitionDir"])
    first_log = os.path.join(part, sorted(n for n in os.listdir(part) if n.endswith(".log"))[0])
    with open(first_log, "r+b") as f:
        f.seek(16)
        f.write(b"\x07")  # the first batch's magic byte
    bad_out = os.path.join(tmp, "damaged-out")
    r = run(["compact", part, "--out", bad_out, "--now", str(c["nowMs"]), "--json",
             "--config", "cleanup.policy=compact", "--config", "min.cleanable.dirty.ratio=0"])
    if r.returncode != 1:
        fail("damaged log: exit %d, expected 1 (stderr %s)" % (r.returncode, r.stderr))
    try:
        j = json.loads(r.stdout)
        if j.get("out") is not None or not j.get("error"):
            fail("damaged log: --json %r" % j)
        if not any(p["file"] == first_log and p["position"] == 0 and p["severity"] == "error" for p in j["problems"]):
            fail("damaged log: no error at %s position 0 in %r" % (first_log, j["problems"]))
    except ValueError:
        fail("damaged log: stdout is not JSON: %r" % r.stdout[:300])
    if os.path.exists(bad_out):
        fail("damaged log: --out was created")

# Kafka 4.x, transaction version 2 (fixtures/kafka4/tv2-txn, issue 17 item 5): the three cleaner rounds
# Kafka ran, each from the state before it at its own clock with the scenario's log config, and without
# a cleaner checkpoint (the rounds cleaned from offset 0 each time: kafka4/tv2-txn/README.md). Every
# file Kafka left must come out byte for byte: markers at the data's epoch + 1, their delete horizons,
# the .txnindex entries that go with them, the producer snapshots.
K4 = os.path.join(FIXTURES, "kafka4", "tv2-txn")
with open(os.path.join(K4, "scenario.json")) as f:
    scenario = json.load(f)
configs = []
for k, v in sorted(scenario["logConfig"].items()):
    if k != "file.delete.delay.ms":  # not a cleaner setting
        configs += ["--config", "%s=%s" % (k, v)]
configs += ["--config", "min.cleanable.dirty.ratio=0.01"]
state = "written"
with tempfile.TemporaryDirectory(prefix="klf-compact-tv2-") as tmp:
    for i, rnd in enumerate(scenario["cleanerRounds"]):
        src = os.path.join(tmp, "in%d" % i)
        shutil.copytree(os.path.join(K4, state), src)
        ckpt = os.path.join(src, "cleaner-offset-checkpoint")
        if os.path.exists(ckpt):
            os.remove(ckpt)
        out = os.path.join(tmp, "out%d" % i)
        part = scenario["topicPartition"]  # "tv2-txn-0"
        r = run(["compact", os.path.join(src, part), "--out", out, "--now", str(rnd["cleanerTimeMs"]), *configs])
        if r.returncode != 0:
            fail("tv2-txn %s: exit %d: %s" % (rnd["state"], r.returncode, r.stderr[-500:]))
            break
        want = dir_files(os.path.join(K4, rnd["state"], part))
        got = dir_files(os.path.join(out, part))
        for name, data in sorted(want.items()):
            if got.get(name) != data:
                fail("tv2-txn %s: %s differs from Kafka's" % (rnd["state"], name))
        state = rnd["state"]

# --explain names a marker by its type (COMMIT / ABORT), as Kafka's dump does, not by its key's bytes.
import re  # noqa: E402

BTXN = os.path.join(FIXTURES, "kafka-oracle", "b-txn")
markers = {}
with open(os.path.join(BTXN, "txn-0.dump.txt")) as f:
    for line in f:
        m = re.search(r"record offset=(\d+) .*controlType=(COMMIT|ABORT)", line)
        if m:
            markers[int(m.group(1))] = m.group(2)
with tempfile.TemporaryDirectory(prefix="klf-compact-explain-") as tmp:
    src = os.path.join(tmp, "txn-0")
    shutil.copytree(os.path.join(BTXN, "txn-0"), src)
    r = run(["compact", src, "--out", os.path.join(tmp, "out"), "--now", "1700000600000", "--config",
             "segment.bytes=500", "--config", "cleanup.policy=compact", "--explain"])
    shown = {int(m.group(1)): m.group(2) for m in re.finditer(r"record offset=(\d+) (COMMIT|ABORT) marker", r.stdout)}
    if not markers or shown != markers:
        fail("--explain markers %r, Kafka's dump %r" % (shown, markers))

finish()
