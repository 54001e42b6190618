#!/usr/bin/python3
"""klf triage end to end (issue 19, item 1), on data klf did not write:

* the real multi-broker captures (fixtures/real, PROVENANCE.md): every partition held by one broker only
  is listed, nothing diverges, and the counts add up; the partition lists are computed here from the
  directory names, not from klf;
* Kafka's seeded three-broker timelines (kafka-oracle/random-replicas): triage calls a partition
  diverged exactly when Kafka's truth says the brokers' final key->value maps differ;
* --jobs 1 and --jobs 2 give the same JSON; the inputs are not modified; a PATH that is not a log
  directory is a usage error."""
import json
import os
import random
import re
import shutil

from klf_e2e import ORACLE, REAL, check, flip_byte, process, run_tests, snapshot, temp_dir, triage_json

MULTI = {
    "cesaralcancio__study-kafka/data": ["kafka1", "kafka2", "kafka3", "kafka4", "kafka5"],
    "ducphongphung__BigData_VietStock/data": ["kafka1", "kafka2", "kafka3"],
    "hiage__kafka-raft/data": ["kafka1", "kafka2", "kafka3"],
    "greenlemonT__kafka-temp/data": ["kafka1", "kafka2", "kafka3"],
}
PARTITION = re.compile(r"^.+-\d+$")


def live_partitions(log_dir):
    """Partition directories as Kafka names live ones: <topic>-<n>, no -delete/-future/-stray suffix."""
    return {n for n in os.listdir(log_dir)
            if os.path.isdir(os.path.join(log_dir, n)) and PARTITION.match(n) and "." not in n.split("-")[-1]}


def test_real_multi_broker_captures():
    for base, brokers in sorted(MULTI.items()):
        dirs = [os.path.join(REAL, base, b) for b in brokers]
        before = snapshot(os.path.join(REAL, base))
        p, j = triage_json(dirs)
        if j is None:
            continue
        held = {}
        for d in dirs:
            for name in live_partitions(d):
                held.setdefault(name, []).append(d)
        single = sorted(n for n, ds in held.items() if len(ds) == 1)
        c = j["counts"]
        check(c["partitions"] == len(held), f"{base}: {c['partitions']} partitions, the directories hold {len(held)}")
        check(sorted(j["singleCopy"]) == single, f"{base}: single-copy {sorted(j['singleCopy'])[:5]} vs {single[:5]}")
        check(c["singleCopy"] == len(single), f"{base}: singleCopy count {c['singleCopy']}")
        check(c["diverged"] == 0, f"{base}: {c['diverged']} diverged: "
              f"{[x['partition'] for x in j['partitions'] if x['diverged']]}")
        check(c["compared"] + c["singleCopy"] + c["unreadable"] >= c["partitions"], f"{base}: counts {c}")
        check(p.returncode in (0, 1), f"{base}: exit {p.returncode} {p.stderr[-300:]}")
        check(before == snapshot(os.path.join(REAL, base)), f"{base}: triage modified its input")
        # The text form says the same counts.
        t = process(["triage", *dirs], timeout=600)
        check(f"{c['partitions']} partitions:" in t.stdout and f"{c['singleCopy']} single-copy" in t.stdout,
              f"{base}: text summary {t.stdout[:300]}")


def test_kafka_timelines_diverge_as_kafka_says():
    base = os.path.join(ORACLE, "random-replicas")
    for t in sorted(os.listdir(base)):
        truth_file = os.path.join(base, t, "truth.json")
        if not os.path.isfile(truth_file):
            continue
        with open(truth_file) as f:
            truth = json.load(f)
        differs = bool(truth["divergence"]["finalKeyValuesDiffer"])
        dirs = [os.path.join(base, t, b) for b in ("broker1", "broker2", "broker3")]
        p, j = triage_json(dirs)
        if j is None:
            continue
        check(j["counts"]["partitions"] == 1 and j["counts"]["compared"] == 1, f"{t}: counts {j['counts']}")
        diverged = [x for x in j["partitions"] if x["diverged"]]
        check(bool(diverged) == differs, f"{t}: Kafka says the key maps differ: {differs}; triage: "
              f"{[(x['partition'], [f['kind'] for f in x['findings']]) for x in j['partitions']]}")
        if differs and diverged:
            check(diverged[0]["status"] == "diverged" and j["partitions"][0] is diverged[0],
                  f"{t}: the diverged partition is ranked first")
            check(p.returncode == 1, f"{t}: exit {p.returncode} (want 1)")
            text = process(["triage", *dirs]).stdout
            check("DIVERGED  foo-0" in text and "klf diff" in text, f"{t}: text {text[:400]}")


def test_jobs_do_not_change_the_answer():
    dirs = [os.path.join(REAL, "cesaralcancio__study-kafka/data", b) for b in ("kafka1", "kafka2", "kafka3")]
    _, one = triage_json(dirs, "--jobs", "1")
    _, two = triage_json(dirs, "--jobs", "2")
    check(one == two, "--jobs 1 and --jobs 2 differ")


def damaged_brokers(work):
    """Copies of Kafka's three brokers of aborted-to-committed, with damage verify and the load both meet."""
    src = os.path.join(ORACLE, "replicas", "aborted-to-committed")
    dirs = []
    for b in ("broker1", "broker2", "broker3"):
        shutil.copytree(os.path.join(src, b), os.path.join(work, b))
        dirs.append(os.path.join(work, b))

    def logs(d):
        return sorted(os.path.join(d, "foo-0", n) for n in os.listdir(os.path.join(d, "foo-0")) if n.endswith(".log"))

    flip_byte(logs(dirs[0])[0], 100)                                    # a CRC that fails
    last = logs(dirs[1])[-1]
    os.truncate(last, os.path.getsize(last) - 3)                     # a torn tail
    flip_byte(logs(dirs[1])[1][:-4] + ".index", 4)                      # an index entry pointing nowhere
    open(os.path.join(dirs[1], "foo-0", "notes.txt"), "w").write("x")      # a stray file (the scan's)
    seg = logs(dirs[2])[2]
    os.remove(seg)
    os.mkdir(seg)                                                    # a segment that cannot be read
    with open(os.path.join(dirs[2], "replication-offset-checkpoint"), "a") as f:
        f.write("not a checkpoint line\n")                          # the log dir's own file
    return dirs


def triage_matches_verify_and_digests(name, dirs, work):
    """Triage's damage per copy is what `klf verify` of the log dir reports in the copy's directory, the log
    dirs' other errors and first unreadable file are its log-dir problems, and digests of the same brokers
    give the same. Returns triage's JSON."""
    _, j = triage_json(dirs)
    if j is None:
        return None
    copies = {c["path"]: c for p in j["partitions"] for c in p["copies"]}
    expected_log_dir = []
    for d in dirs:
        v = json.loads(process(["verify", "--json", d]).stdout)
        claimed = []
        for part in sorted(path for path in copies if os.path.dirname(path) == d):
            mine = [x for x in v["problems"] if x["severity"] != "info" and
                    (x["file"] == part or os.path.dirname(x["file"]) == part)]
            claimed += mine
            errors = [x for x in mine if x["severity"] == "error"]
            c = copies[part]
            first = f"{errors[0]['file']}:{errors[0]['position']} {errors[0]['check']}: {errors[0]['message']}" \
                if errors else None
            check((c["errors"], c["warnings"], c["firstError"]) == (len(errors), len(mine) - len(errors), first),
                  f"{name}: {part}: triage {c['errors']} errors, {c['warnings']} warnings, first {c['firstError']!r}; "
                  f"verify {len(errors)}, {len(mine) - len(errors)}, {first!r}")
        expected_log_dir += [f"{x['file']}:{x['position']} {x['check']}: {x['message']}" for x in v["problems"]
                             if x["severity"] == "error" and x not in claimed]
        expected_log_dir += [u if isinstance(u, str) else u.get("reason", json.dumps(u)) for u in v["unreadable"]][:1]
    check(j["logDirProblems"] == expected_log_dir,
          f"{name}: log-dir problems {j['logDirProblems']}, verify's {expected_log_dir}")
    outs = []
    for i, d in enumerate(dirs):
        out = os.path.join(work, f"{i}.kdg")
        p = process(["digest", "--json", "--out", out, d])
        check(p.returncode == 0, f"{name}: digest {d}: exit {p.returncode} {p.stderr[-300:]}")
        outs.append(out)
    _, k = triage_json(outs)
    if k is not None:
        counts = dict(k["counts"])
        counts.pop("undecided", None)
        check(counts == j["counts"], f"{name}: counts: dirs {j['counts']}, digests {counts}")
        check(k["logDirProblems"] == j["logDirProblems"],
              f"{name}: log-dir problems: dirs {j['logDirProblems']}, digests {k['logDirProblems']}")
        for p, q in zip(j["partitions"], k["partitions"]):
            for c, e in zip(p["copies"], q["copies"]):
                for f in ("errors", "warnings", "firstError", "loaded"):
                    check(c[f] == e[f], f"{name}: {c['path']} {f}: dirs {c[f]!r}, digest {e[f]!r}")
    return j


def test_damage_per_copy_is_what_verify_reports():
    """Triage verifies each copy on the pass that loads it (one read) and gives what verify gives."""
    with temp_dir() as work:
        dirs = damaged_brokers(work)
        before = [snapshot(d) for d in dirs]
        j = triage_matches_verify_and_digests("damaged brokers", dirs, work)
        if j is None:
            return
        copies = {c["path"]: c for p in j["partitions"] for c in p["copies"]}
        check(sum(c["errors"] for c in copies.values()) >= 3, f"damage not found: {copies}")
        check(before == [snapshot(d) for d in dirs], "triage or digest modified its input")
        # The same copies named ./broker1 and ../work/broker2 (a copy's damage was once reported as a
        # log-dir problem when its log dir was not given in normal form).
        rel = ["./" + os.path.basename(dirs[0]), os.path.join("..", os.path.basename(work), os.path.basename(dirs[1])),
               dirs[2]]
        p = process(["triage", "--json", *rel], cwd=work)
        r = json.loads(p.stdout)
        errors = {os.path.normpath(os.path.join(work, c["path"])): c["errors"]
                  for part in r["partitions"] for c in part["copies"]}
        for d in dirs:
            part = os.path.join(d, "foo-0")
            check(errors.get(part) == copies[part]["errors"],
                  f"{d} given relative: {errors.get(part)} errors, {copies[part]['errors']} given whole")
        check(len(r["logDirProblems"]) == len(j["logDirProblems"]),
              f"relative log dirs: {r['logDirProblems']}, whole: {j['logDirProblems']}")


def test_random_damage_per_copy_is_what_verify_reports():
    """The same on seeded random damage (bit flips, cuts, appended bytes, removed files, a directory or a
    stray file in place of a file) to the brokers of each Kafka-made replica set."""
    rng = random.Random(int(os.environ.get("KLF_SWEEP_SEED", "20261207")))
    src = os.path.join(ORACLE, "replicas")
    sets = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for case in range(int(os.environ.get("KLF_SWEEP_CASES", "12"))):
        name = sets[case % len(sets)]
        with temp_dir() as work:
            dirs = []
            for b in sorted(b for b in os.listdir(os.path.join(src, name)) if os.path.isdir(os.path.join(src, name, b))):
                shutil.copytree(os.path.join(src, name, b), os.path.join(work, b))
                dirs.append(os.path.join(work, b))
            files = sorted(os.path.join(r, n) for d in dirs for r, _, names in os.walk(d) for n in names)
            done = []
            for _ in range(rng.randint(1, 3)):
                f = rng.choice(files)
                if not os.path.isfile(f) or os.path.getsize(f) == 0:
                    continue
                size, k = os.path.getsize(f), rng.random()
                if k < 0.45:
                    flip_byte(f, rng.randrange(size), 1 << rng.randrange(8))
                    done.append(f"flip {f}")
                elif k < 0.7:
                    os.truncate(f, rng.randrange(size))
                    done.append(f"cut {f}")
                elif k < 0.8:
                    os.remove(f)
                    done.append(f"remove {f}")
                elif k < 0.88:
                    os.remove(f)
                    os.mkdir(f)
                    done.append(f"directory for {f}")
                elif k < 0.94:
                    with open(f, "ab") as h:
                        h.write(bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))))
                    done.append(f"append to {f}")
                else:
                    open(os.path.join(os.path.dirname(f), "stray.txt"), "w").write("x")
                    done.append(f"stray next to {f}")
            triage_matches_verify_and_digests(f"case {case} {name} ({'; '.join(done)})", dirs, work)


def test_refuses_what_is_not_a_log_dir():
    p = process(["triage", "--json", os.path.join(ORACLE, "a-keyed", "keyed-none-0")])
    check(p.returncode == 2 and p.stderr.startswith("klf triage: "), f"{p.returncode} {p.stderr}")
    check(json.loads(p.stdout)["command"] == "triage", "JSON error object")


if __name__ == "__main__":
    run_tests(globals())
