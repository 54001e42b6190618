#!/usr/bin/python3
"""klf simulate end to end: the five bundled timelines (fixtures/*.json) under Kafka's rules and
coordinated ones; each named divergence is visible in the per-replica read_committed lists, key->value
maps and LSOs of --json; the generated broker directories pass `klf verify`, and `klf diff` (an
independent implementation) agrees on which runs diverged; `klf compact --mode coordinated` holds back
the tombstone a lagging replica still needs while Kafka's rules remove it; usage errors."""
import json
import os
import shutil
import tempfile

from klf_e2e import SRC, check, fail, finish
from klf_e2e import process as run

TIMELINES = os.path.join(SRC, "fixtures")


def simulate(name, mode, out):
    p = run(["simulate", os.path.join(TIMELINES, name + ".json"), "--mode", mode, "--out", out, "--json"])
    if p.returncode not in (0, 1):
        fail(f"{name} {mode}: exit {p.returncode}: {p.stderr}")
        return None, p.returncode
    return json.loads(p.stdout), p.returncode


def replica(doc, broker):
    return doc["replicas"][broker - 1]


def serves(r, key, value):
    return any(x["key"] == key and x["value"] == value for x in r["readCommitted"])


def first_offset(doc, producer):
    for s in doc["steps"]:
        if s["op"] == "produce" and s["detail"].get("producer") == producer:
            return s["detail"]["firstOffset"]
    raise AssertionError("no produce by " + producer)


def check_shape(doc, name, mode):
    for k in ("timeline", "mode", "out", "steps", "replicas", "coordination", "divergence"):
        check(k in doc, f"{name} {mode}: --json lacks {k}")
    check(doc["mode"] == mode, f"{name}: mode {doc['mode']}")
    check(len(doc["replicas"]) == 3, f"{name}: {len(doc['replicas'])} replicas")
    for r in doc["replicas"]:
        for k in ("broker", "path", "logEndOffset", "highWatermark", "lastStableOffset", "cleanerCheckpoint",
                  "mcco", "mxfo", "openTransactions", "abortedTransactions", "readCommitted", "keyValues"):
            check(k in r, f"{name} {mode}: replica lacks {k}")
        check(os.path.isdir(r["path"]), f"{name}: {r['path']} missing")
        logdir = os.path.dirname(r["path"])
        for f in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                  "meta.properties"):
            check(os.path.isfile(os.path.join(logdir, f)), f"{name}: {logdir}/{f} missing")


def check_divergence(doc, name):
    b1, b2, b3 = (replica(doc, b) for b in (1, 2, 3))
    div = doc["divergence"]
    if name == "lost-tombstone":
        check(b2["keyValues"].get("K") == "V" and serves(b2, "K", "V"), "lost-tombstone: broker2 should serve K=V")
        check("K" not in b1["keyValues"] and "K" not in b3["keyValues"], "lost-tombstone: K must be gone on 1 and 3")
        check(list(div["keyValues"]) == ["K"], f"lost-tombstone: divergent keys {list(div['keyValues'])}")
    elif name == "aborted-to-committed":
        check(serves(b2, "poison", "SHOULD_NOT_SEE_THIS") and serves(b2, "good", "data"),
              "aborted-to-committed: broker2 should serve poison and good")
        for r in (b1, b3):
            check(not serves(r, "poison", "SHOULD_NOT_SEE_THIS") and serves(r, "good", "data"),
                  f"aborted-to-committed: broker{r['broker']} should serve good=data only")
        check(div["keyValues"].get("poison", {}).get("broker2") == "SHOULD_NOT_SEE_THIS", "poison not in divergence")
    elif name == "committed-to-aborted":
        t1 = first_offset(doc, "P")
        check(serves(b2, "order-1", "committed") and not serves(b3, "order-1", "committed"),
              "committed-to-aborted: broker2 serves T1, broker3 hides it")
        check(t1 in b3["hiddenOffsets"] and t1 not in b2["hiddenOffsets"], "committed-to-aborted: hidden offsets")
        check(any(a["firstOffset"] == t1 for a in b3["abortedTransactions"]),
              "committed-to-aborted: broker3 aborted range should start at T1")
        check(div["visibility"] == [{"offset": t1, "servedBy": [2], "hiddenBy": [3]}],
              f"committed-to-aborted: visibility {div['visibility']}")
        check(div["keyValues"] == {}, "committed-to-aborted: latest values agree (scenarios.md §6)")
    elif name == "hanging-transaction":
        t1 = first_offset(doc, "P")
        check(b3["lastStableOffset"] == t1, f"hanging: broker3 LSO {b3['lastStableOffset']} != {t1}")
        check(b3["openTransactions"] == [{"producerId": 2000, "firstOffset": t1}], "hanging: open txn on broker3")
        check(all(x["offset"] < t1 for x in b3["readCommitted"]), "hanging: read_committed must stop at T1")
        for r in (b1, b2):
            check(r["lastStableOffset"] == r["logEndOffset"] and not r["openTransactions"], "hanging: healthy LSO")
        check(div["lastStableOffsets"].get("broker3") == t1, "hanging: LSO divergence")
    check(div["diverged"], f"{name}: should diverge uncoordinated")


def main():
    work = tempfile.mkdtemp(prefix="klf-simulate-e2e-")
    try:
        diff_ok = run(["diff", "--help"]).returncode == 0
        for name in ("lost-tombstone", "aborted-to-committed", "committed-to-aborted", "hanging-transaction",
                     "healthy-control"):
            for mode in ("uncoordinated", "coordinated"):
                out = os.path.join(work, f"{name}-{mode}")
                doc, rc = simulate(name, mode, out)
                if doc is None:
                    continue
                check_shape(doc, name, mode)
                should_diverge = mode == "uncoordinated" and name != "healthy-control"
                check(rc == (1 if should_diverge else 0), f"{name} {mode}: exit {rc}")
                if should_diverge:
                    check_divergence(doc, name)
                else:
                    check(not doc["divergence"]["diverged"], f"{name} {mode}: diverged: {doc['divergence']}")
                    for r in doc["replicas"]:
                        check(not r["openTransactions"], f"{name} {mode}: open transaction on broker{r['broker']}")
                        check(not serves(r, "poison", "SHOULD_NOT_SEE_THIS"), f"{name} {mode}: poison served")
                if mode == "coordinated":
                    c = doc["coordination"]
                    check(c["mtro"] is not None and c["mxro"] is not None, f"{name}: MTRO/MXRO never computed")
                    check(all(x["mcco"] is not None for x in c["replicas"]), f"{name}: a replica never reported")
                # Every broker directory is valid Kafka data.
                for b in (1, 2, 3):
                    v = run(["verify", os.path.join(out, f"broker{b}")])
                    check(v.returncode == 0, f"{name} {mode}: verify broker{b}: exit {v.returncode}\n{v.stdout[-500:]}")
                # klf diff judges the same runs diverged (or not).
                if diff_ok:
                    d = run(["diff"] + [os.path.join(out, f"broker{b}", "foo-0") for b in (1, 2, 3)])
                    check(d.returncode == (1 if should_diverge else 0), f"{name} {mode}: klf diff exit {d.returncode}")
                # Text output names the verdict.
                t = run(["simulate", os.path.join(TIMELINES, name + ".json"), "--mode", mode, "--out",
                         os.path.join(work, "text"), "--force"])
                check(("verdict: DIVERGED" in t.stdout) == should_diverge, f"{name} {mode}: text verdict")

        # klf compact --mode coordinated on real directories, mid-incident: broker 2 is down and still
        # holds K=V; broker 1 stamped the tombstone. After the horizon Kafka's cleaner removes it; the
        # coordinated one keeps it because broker 2's MCCO is below it.
        mid = {
            "name": "mid-incident", "record_step_ms": 200,
            "config": {"cleanup.policy": "compact", "segment.bytes": 1024, "index.interval.bytes": 128,
                       "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": 600000},
            "producers": {"Q1": {"producer_id": 1000, "idempotent": True}},
            "events": [
                {"op": "produce", "producer": "Q1", "records": [["K", "V"]]},
                {"op": "traffic", "producer": "Q1", "key_prefix": "user-", "key_count": 12, "until_roll": True},
                {"op": "clean"},
                {"op": "down", "broker": 2},
                {"op": "produce", "producer": "Q1", "records": [["K", None]]},
                {"op": "traffic", "producer": "Q1", "key_prefix": "user-", "key_count": 12, "until_roll": True},
                {"op": "advance", "ms": 60000},
                {"op": "clean", "brokers": [1, 3]},
                {"op": "advance", "ms": 700000},
                {"op": "traffic", "producer": "Q1", "key_prefix": "user-", "key_count": 12, "until_roll": True},
            ],
        }
        tl = os.path.join(work, "mid.json")
        with open(tl, "w") as f:
            json.dump(mid, f)
        out = os.path.join(work, "mid")
        p = run(["simulate", tl, "--out", out, "--json"])
        check(p.returncode == 0, f"mid-incident: exit {p.returncode} {p.stderr}")
        now = json.loads(p.stdout)["endClockMs"]
        parts = [os.path.join(out, f"broker{b}", "foo-0") for b in (1, 2, 3)]
        k = run(["compact", parts[0], "--out", os.path.join(work, "k"), "--now", str(now), "--json",
                 "--config", "cleanup.policy=compact", "--config", "delete.retention.ms=600000",
                 "--config", "segment.bytes=1024", "--config", "index.interval.bytes=128"])
        check(k.returncode == 0, f"compact uncoordinated: exit {k.returncode} {k.stderr}")
        kj = json.loads(k.stdout)
        check(kj["tombstonesRemoved"] == 1, f"Kafka's rules remove the tombstone: {kj['tombstonesRemoved']}")
        c = run(["compact", parts[0], "--out", os.path.join(work, "c"), "--now", str(now), "--json",
                 "--config", "cleanup.policy=compact", "--config", "delete.retention.ms=600000",
                 "--config", "segment.bytes=1024", "--config", "index.interval.bytes=128",
                 "--mode", "coordinated", "--replica", parts[1], "--replica", parts[2]])
        check(c.returncode == 0, f"compact coordinated: exit {c.returncode} {c.stderr}")
        cj = json.loads(c.stdout)
        check(cj["tombstonesRemoved"] == 0, f"coordinated keeps the tombstone: {cj['tombstonesRemoved']}")
        check(cj["passes"][0].get("tombstonesHeld") == 1, f"held: {cj['passes'][0].get('tombstonesHeld')}")
        co = cj.get("coordination", {})
        mccos = [r["mcco"] for r in co.get("replicas", [])]
        check(len(mccos) == 3 and co.get("mtro") == min(mccos), f"coordination report {co}")
        check(co.get("mtro") == json.loads(p.stdout)["replicas"][1]["mcco"], "MTRO = the lagging broker's MCCO")
        t = run(["compact", parts[0], "--out", os.path.join(work, "t"), "--now", str(now),
                 "--mode", "coordinated", "--replica", parts[1], "--replica", parts[2]])
        check("MTRO=" in t.stdout and "held back by coordination: tombstones=1" in t.stdout, "compact text output")
        check(run(["compact", parts[0], "--out", os.path.join(work, "u"), "--mode", "coordinated"]).returncode == 2,
              "coordinated without --replica is a usage error")

        # Usage and input errors.
        check(run(["simulate", tl, "--out", os.path.join(work, "x"), "--mode", "sideways"]).returncode == 2, "bad mode")
        check(run(["simulate", os.path.join(work, "nope.json"), "--out", os.path.join(work, "y")]).returncode == 3,
              "missing timeline")
        bad = os.path.join(work, "bad.json")
        with open(bad, "w") as f:
            f.write('{"events": [{"op": "down", "broker": 7}]}')
        p = run(["simulate", bad, "--out", os.path.join(work, "z")])
        check(p.returncode == 2 and "event 0" in p.stderr, f"invalid timeline: {p.returncode} {p.stderr}")
        check(not os.path.exists(os.path.join(work, "z")), "a failed run leaves no --out")
        p = run(["simulate", tl, "--out", out])
        check(p.returncode != 0 and os.path.isdir(out), "an existing --out is not replaced without --force")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
