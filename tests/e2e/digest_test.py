#!/usr/bin/python3
"""klf digest end to end (issue 20 item 5, docs/SCALE.md):

* findings from digests are identical to findings from directories: on every Kafka-made replica set of
  the fixtures (kafka-oracle/replicas, kafka-oracle/random-replicas, kafka4/tv2-replicas, the real
  multi-broker captures) and on the simulator's timelines, `klf triage --json` over one digest per
  broker, over one digest of all log dirs, and over digests mixed with directories, gives the same
  counts, statuses, copies and findings (kind, offsets, replicas, producer, certainty, outcome) as over
  the directories. Only the sentences that quote key and value bytes may differ (a digest holds none),
  and digest copies carry "digest" and findings "fetch" (files and offsets to get for klf diff);
* a damaged, truncated, foreign or newer-major digest is refused with an error naming the file and the
  byte position: never a finding;
* version 1 digests (tests/digest/v1, written by klf before format 2) are still read: their findings
  are those from the directories, and damage in them is refused as in a version 2 digest;
* --resume continues an interrupted digest; the output guard refuses --out inside a log dir; inputs are
  not modified."""
import json
import os
import shutil
import struct
import subprocess

from klf_e2e import KLF, ORACLE, REAL, SRC, FIX, check, process, run_tests, snapshot, temp_dir, triage_json

SETS = []
for base in (os.path.join(ORACLE, "replicas"), os.path.join(ORACLE, "random-replicas"),
             os.path.join(FIX, "kafka4", "tv2-replicas")):
    if os.path.isdir(base):
        for t in sorted(os.listdir(base)):
            dirs = [os.path.join(base, t, b) for b in ("broker1", "broker2", "broker3")]
            if all(os.path.isdir(d) for d in dirs):
                SETS.append((os.path.relpath(os.path.join(base, t), FIX), dirs))
MULTI = {
    "cesaralcancio__study-kafka/data": ["kafka1", "kafka2", "kafka3", "kafka4", "kafka5"],
    "ducphongphung__BigData_VietStock/data": ["kafka1", "kafka2", "kafka3"],
    "hiage__kafka-raft/data": ["kafka1", "kafka2", "kafka3"],
    "greenlemonT__kafka-temp/data": ["kafka1", "kafka2", "kafka3"],
}
for base, brokers in sorted(MULTI.items()):
    dirs = [os.path.join(REAL, base, b) for b in brokers]
    if all(os.path.isdir(d) for d in dirs):
        SETS.append(("real/" + base, dirs))

FINDING_FIELDS = ("kind", "divergence", "offsets", "producerId", "affectedReplicas", "healthyReplicas",
                  "certainty", "outcome")
# Sentences a digest states without key/value bytes: compared only for findings that quote none.
BYTE_QUOTING = ("lost_tombstone", "divergent_record", "lost_abort", "lost_commit", "hanging_transaction")


def digest(dirs, out, *extra):
    p = process(["digest", "--json", "--out", out, *extra, *dirs], timeout=600)
    check(p.returncode == 0, f"digest {dirs}: exit {p.returncode}: {p.stderr[-400:]}")
    return json.loads(p.stdout) if p.returncode == 0 else None


def comparable(j):
    """What must be identical: counts, statuses, copies and findings (minus byte-quoting sentences)."""
    parts = []
    for p in j["partitions"]:
        copies = [{k: v for k, v in c.items() if k != "digest"} for c in p["copies"]]
        findings = []
        for f in p["findings"]:
            x = {k: f[k] for k in FINDING_FIELDS}
            if f["kind"] not in BYTE_QUOTING:
                x["evidence"], x["impact"] = f["evidence"], f["impact"]
            findings.append(x)
        parts.append({k: p[k] for k in ("partition", "status", "diverged", "pinned", "damaged", "lagging")} |
                     {"copies": copies, "findings": findings})
    counts = dict(j["counts"])
    if counts.pop("undecided", 0):
        check(False, f"undecided partitions: {[p['partition'] for p in j['partitions'] if 'undecided' in p]}")
    return {"logDirs": j["logDirs"], "brokers": j["brokers"], "counts": counts, "singleCopy": j["singleCopy"],
            "logDirProblems": j["logDirProblems"], "partitions": parts}


def same(name, a, b, what):
    ca, cb = comparable(a), comparable(b)
    if ca != cb:
        for k in ca:
            if ca[k] != cb.get(k):
                check(False, f"{name} ({what}): {k} differs:\n dirs:   {json.dumps(ca[k])[:1500]}\n digest: "
                      f"{json.dumps(cb.get(k))[:1500]}")
                return
    check(True, "")


def compare_set(name, dirs, work):
    before = [snapshot(d) for d in dirs]
    p0, j0 = triage_json(dirs)
    if j0 is None:
        return
    # One digest per broker (how a fleet runs it).
    outs = []
    for i, d in enumerate(dirs):
        out = os.path.join(work, f"{i}.kdg")
        if digest([d], out) is None:
            return
        outs.append(out)
    p1, j1 = triage_json(outs)
    if j1 is None:
        return
    check(p0.returncode == p1.returncode, f"{name}: exit {p0.returncode} from dirs, {p1.returncode} from digests")
    same(name, j0, j1, "a digest per broker")
    check(j1.get("digests") == outs, f"{name}: digests listed {j1.get('digests')}")
    for part in j1["partitions"]:
        for c in part["copies"]:
            check(c.get("digest") in outs, f"{name}: copy without its digest {c}")
        for f in part["findings"]:
            if f["divergence"]:
                check(f.get("fetch"), f"{name}: {part['partition']} {f['kind']}: no files named to fetch")
    # One digest of every log dir (a host with several disks), and digests mixed with directories.
    both = os.path.join(work, "all.kdg")
    if digest(dirs, both) is not None:
        p2, j2 = triage_json([both])
        if j2 is not None:
            same(name, j0, j2, "one digest of all log dirs")
    p3, j3 = triage_json([outs[0], *dirs[1:]])
    if j3 is not None:
        same(name, j0, j3, "a digest and directories")
    check(before == [snapshot(d) for d in dirs], f"{name}: digest or triage modified its input")


def test_fixture_replica_sets_same_findings():
    check(len(SETS) >= 8, f"only {len(SETS)} replica sets found under {FIX}")
    for name, dirs in SETS:
        with temp_dir() as work:
            compare_set(name, dirs, work)


def test_simulator_timelines_same_findings():
    for tl in sorted(os.listdir(os.path.join(SRC, "fixtures"))):
        if not tl.endswith(".json"):
            continue
        for mode in ("uncoordinated", "coordinated"):
            with temp_dir() as work:
                out = os.path.join(work, "sim")
                p = process(["simulate", os.path.join(SRC, "fixtures", tl), "--mode", mode, "--out", out, "--json"])
                if p.returncode not in (0, 1):
                    check(False, f"simulate {tl}: exit {p.returncode} {p.stderr[-300:]}")
                    continue
                dirs = sorted(os.path.join(out, d) for d in os.listdir(out) if os.path.isdir(os.path.join(out, d)))
                compare_set(f"simulated {tl} {mode}", dirs, work)


def test_damaged_digests_are_refused():
    name, dirs = SETS[0]
    with temp_dir() as work:
        good = os.path.join(work, "good.kdg")
        if digest(dirs, good) is None:
            return
        data = open(good, "rb").read()
        bad = os.path.join(work, "bad.kdg")

        def refused(blob, what, expect_text=None):
            with open(bad, "wb") as f:
                f.write(blob)
            p = process(["triage", "--json", bad], timeout=60)
            check(p.returncode in (2, 3), f"{what}: exit {p.returncode}, expected a refusal")
            try:
                j = json.loads(p.stdout)
            except ValueError:
                check(False, f"{what}: stdout is not JSON: {p.stdout[:200]}")
                return
            check("partitions" not in j and "error" in j, f"{what}: findings from a bad digest: {p.stdout[:300]}")
            check(bad in j.get("error", ""), f"{what}: error does not name the file: {j}")
            if expect_text:
                check(expect_text in j.get("error", ""), f"{what}: error {j.get('error')!r} lacks {expect_text!r}")

        # Truncated at a sample of lengths (the unit test cuts at every byte of a small digest).
        step = max(1, len(data) // 97)
        for n in list(range(8, len(data), step)) + [len(data) - 1]:
            refused(data[:n], f"truncated to {n} bytes", "byte")
        # Bit flips spread over the file.
        for pos in range(0, len(data), max(1, len(data) // 61)):
            blob = bytearray(data)
            blob[pos] ^= 0x10
            refused(bytes(blob), f"bit flip at byte {pos}")
        # A newer major version.
        check(data[8:12] == struct.pack("<HH", 2, 1), f"digest format {data[8:12].hex()}, expected 2.1")
        blob = bytearray(data)
        blob[8:10] = struct.pack("<H", 3)
        refused(bytes(blob), "major version 3", "digest format version 3.1 is newer than this klf reads (1.0 and 2.x)")
        # A foreign file.
        p = process(["triage", "--json", os.path.join(SRC, "README.md")], timeout=60)
        check(p.returncode == 2 and "nor a klf digest" in p.stdout, f"foreign file: {p.returncode} {p.stdout[:300]}")


V1_DIGESTS = {  # tests/digest/v1/NAME.kdg: the log dirs it was made of, relative to the fixtures
    "aborted-to-committed": [f"kafka-oracle/replicas/aborted-to-committed/broker{i}" for i in (1, 2, 3)],
    "lost-tombstone-healthy-control":
        [f"kafka-oracle/replicas/lost-tombstone-healthy-control/broker{i}" for i in (1, 2, 3)],
    "real-ducphongphung": [f"real/ducphongphung__BigData_VietStock/data/kafka{i}" for i in (1, 2, 3)],
}


def test_version_1_digests_still_read():
    for name, dirs in V1_DIGESTS.items():
        if not all(os.path.isdir(os.path.join(FIX, d)) for d in dirs):
            check(False, f"{name}: fixture log dirs {dirs} missing under {FIX}")
            continue
        path = os.path.join(SRC, "tests", "digest", "v1", name + ".kdg")
        data = open(path, "rb").read()
        check(data[8:12] == struct.pack("<HH", 1, 0), f"{path}: not a version 1.0 digest")
        p0 = process(["triage", "--json", *dirs], timeout=600, cwd=FIX)
        p1 = process(["triage", "--json", path], timeout=600, cwd=FIX)
        check(p0.returncode == p1.returncode, f"{name}: exit {p0.returncode} from dirs, {p1.returncode} from v1")
        try:
            j0, j1 = json.loads(p0.stdout), json.loads(p1.stdout)
        except ValueError:
            check(False, f"{name}: triage output is not JSON: {p0.stdout[:200]} {p1.stdout[:200]}")
            continue
        same(name, j0, j1, "a version 1 digest")
        check(j1["counts"]["partitions"] > 0, f"{name}: no partition judged from {path}")
        # Damage in a version 1 digest is refused too.
        with temp_dir() as work:
            bad = os.path.join(work, "bad.kdg")
            for what, blob in (("truncated", data[:len(data) // 2]),
                               ("bit flip", data[:200] + bytes([data[200] ^ 4]) + data[201:])):
                with open(bad, "wb") as f:
                    f.write(blob)
                p = process(["triage", "--json", bad], timeout=60)
                check(p.returncode in (2, 3) and bad in p.stdout and "partitions" not in p.stdout,
                      f"{name} {what}: exit {p.returncode}: {p.stdout[:300]}")
            # A version 1 digest cut before its trailer is not continued by --resume (nor changed).
            out = os.path.join(work, "out.kdg")
            partial = data[:len(data) - 21]
            with open(out + ".partial", "wb") as f:
                f.write(partial)
            p = process(["digest", "--json", "--resume", "--out", out, *dirs], timeout=60, cwd=FIX)
            check(p.returncode == 2 and "digest format 1.0: --resume continues only a 2.1 digest" in p.stdout,
                  f"{name}: --resume of a version 1 partial: exit {p.returncode}: {p.stdout[:300]}")
            check(open(out + ".partial", "rb").read() == partial and not os.path.exists(out),
                  f"{name}: --resume changed a version 1 partial")


def test_resume_and_guard():
    name, dirs = SETS[0]
    with temp_dir() as work:
        full = os.path.join(work, "full.kdg")
        digest(dirs, full)
        # An interrupted run: the partial file cut inside its last section.
        out = os.path.join(work, "resumed.kdg")
        data = open(full, "rb").read()
        with open(out + ".partial", "wb") as f:
            f.write(data[:len(data) - 40])
        j = digest(dirs, out, "--resume")
        if j is not None:
            check(j["resumedCopies"] >= 1, f"resume: {j}")
            check(not os.path.exists(out + ".partial"), "resume: the partial file is left")
            _, a = triage_json([full])
            _, b = triage_json([out])
            if a and b:
                same("resume", a, b, "resumed digest")
        # --out inside an input is refused; an existing non-digest file is not replaced.
        p = process(["digest", "--out", os.path.join(dirs[0], "x.kdg"), dirs[0]])
        check(p.returncode == 2 and "x.kdg" in p.stderr, f"--out inside a log dir: {p.returncode} {p.stderr}")
        other = os.path.join(work, "other.txt")
        with open(other, "w") as f:
            f.write("keep me")
        p = process(["digest", "--force", "--out", other, dirs[0]])
        check(p.returncode == 2 and open(other).read() == "keep me", f"non-digest --out replaced: {p.stderr}")
        p = process(["digest", "--out", full, dirs[0]])
        check(p.returncode == 2, f"existing digest replaced without --force: {p.returncode}")
        p = process(["digest", "--force", "--io-rate", "1000000", "--out", full, dirs[0]])
        check(p.returncode == 0, f"--force over a digest: {p.returncode} {p.stderr}")
        # Options must match: a digest made with --now is refused by a triage without it.
        p = process(["digest", "--now", "1700000000000", "--out", os.path.join(work, "now.kdg"), dirs[0]])
        p = process(["triage", os.path.join(work, "now.kdg")])
        check(p.returncode == 2 and "--now" in p.stderr, f"options mismatch: {p.returncode} {p.stderr}")


def test_plain_logs_kept_as_batches_and_undecided_named():
    """A plain log (no transactions, nothing removed) is kept as batch identities: its digest is a small
    share of the data. Two plain copies whose batches differ cannot be settled from digests: triage says
    "undecided" (never a finding it cannot prove) and names the files to fetch; byte copies agree."""
    bench = os.path.join(os.path.dirname(KLF), "bench", "klf-bench")
    if not os.path.exists(bench):
        print("SKIP test_plain_logs_kept_as_batches_and_undecided_named: no klf-bench built")
        return
    with temp_dir() as work:
        dirs = []
        for i, seed in enumerate((1, 1, 2)):
            d = os.path.join(work, f"broker{i + 1}")
            os.makedirs(d)
            subprocess.run([bench, "gen", "--out", os.path.join(d, "plain-0"), "--bytes", "2000000", "--seed",
                            str(seed)], check=True, capture_output=True)
            dirs.append(d)
        outs = []
        for i, d in enumerate(dirs):
            j = digest([d], os.path.join(work, f"{i}.kdg"))
            if j is None:
                return
            check(j["digestBytes"] < j["dataBytes"] / 100, f"plain log digest {j['digestBytes']} of {j['dataBytes']}")
            outs.append(os.path.join(work, f"{i}.kdg"))
        # broker1 and broker2 hold the same bytes: the same (empty) findings as from the directories.
        p0, j0 = triage_json(dirs[:2])
        p1, j1 = triage_json(outs[:2])
        if j0 and j1:
            same("plain byte copies", j0, j1, "a digest per broker")
        # broker3 holds other records: the directories say unrelated_logs; the digests cannot tell which
        # records differ, so they say undecided and name the files, and exit 1.
        p0, j0 = triage_json(dirs)
        p1, j1 = triage_json(outs)
        if j0 and j1:
            check(j0["counts"]["diverged"] == 1, f"directories: {j0['counts']}")
            check(j1["counts"]["diverged"] == 0 and j1["counts"]["undecided"] == 1, f"digests: {j1['counts']}")
            part = j1["partitions"][0]
            check(part["status"] == "undecided" and part["findings"] == [], f"undecided partition: {part}")
            check(any(x.startswith("broker3") and "plain-0/00000000000000000000.log" in x for x in part["undecided"]["fetch"]),
                  f"undecided names no file: {part['undecided']}")
            check(p1.returncode == 1, f"undecided exit {p1.returncode}")
            t = process(["triage", *outs])
            check("UNDECIDED plain-0" in t.stdout and "fetch broker3 on " in t.stdout, f"text: {t.stdout}")


if __name__ == "__main__":
    run_tests(globals())
