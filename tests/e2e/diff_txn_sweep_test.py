#!/usr/bin/python3
"""klf diff's transaction verdicts on followers klf has not seen: for Kafka-written three-broker timelines
(kafka4/tv2-replicas, kafka-oracle/random-replicas), one COMMIT or ABORT at a time is cut out of a copy of
one broker (a follower that never received it). Against Kafka's truth.json: no certain lost_abort or
lost_commit is contradicted by the outcome the leader gave the records at stake, a certain
hanging_transaction names a producer that really lost a marker there, and where the copy held data of the
cut marker's transaction its loss is named: as hanging_transaction when the copy holds no later marker of
that producer, as lost_abort / lost_commit (certain or suspected) when the next one it holds has the other
outcome."""
import glob
import json
import os
import shutil

from klf_e2e import FIX, ORACLE, check, finish, run, temp_dir

CASES = [(os.path.join(FIX, "kafka4", "tv2-replicas", "timeline-04"), "broker3"),
         (os.path.join(FIX, "kafka4", "tv2-replicas", "timeline-04"), "broker1"),
         (os.path.join(ORACLE, "random-replicas", "timeline-01"), "broker2"),
         (os.path.join(ORACLE, "random-replicas", "timeline-04"), "broker3"),
         (os.path.join(ORACLE, "random-replicas", "timeline-11"), "broker3"),
         (os.path.join(ORACLE, "random-replicas", "timeline-01"), "broker1")]
OUTCOME = {"committed": "commit", "aborted": "abort"}


def batches_of(broker_dir):
    out = []
    for log in sorted(glob.glob(os.path.join(broker_dir, "foo-0", "*.log"))):
        rc, text, err = run("dump", "--json", "--records", log)
        for line in text.splitlines():
            b = json.loads(line)
            if "baseOffset" in b:
                b["file"] = log
                out.append(b)
    return out


for base, victim in CASES:
    truth = json.load(open(os.path.join(base, "truth.json")))
    txns = truth["writes"]["transactions"]
    by_marker = {t["markerOffset"]: t for t in txns if t.get("markerOffset") is not None}

    def leader_outcome(offset):
        for t in txns:
            if any(a <= offset <= b for a, b in t["dataBatches"]):
                return OUTCOME.get(t["outcome"])
        return None

    batches = batches_of(os.path.join(base, victim))
    markers = [b for b in batches if b["isControl"] and b["records"]]
    held = {}  # producer -> offsets of transactional data records the victim holds
    for b in batches:
        if b["isTransactional"] and not b["isControl"]:
            held.setdefault(b["producerId"], []).extend(r["offset"] for r in b["records"])
    named_losses = 0
    for m in markers:
        pid, off = m["producerId"], m["baseOffset"]
        t = by_marker.get(off)
        where = f"{os.path.basename(base)} {victim} without the {m['records'][0]['control']['type']} at {off}"
        with temp_dir("klf-diff-sweep-") as tmp:
            copy = os.path.join(tmp, victim)
            shutil.copytree(os.path.join(base, victim), copy)
            seg = os.path.join(copy, "foo-0", os.path.basename(m["file"]))
            os.chmod(seg, 0o644)
            data = open(seg, "rb").read()
            open(seg, "wb").write(data[:m["position"]] + data[m["position"] + m["sizeInBytes"]:])
            dirs = [os.path.join(copy if b == victim else os.path.join(base, b), "foo-0")
                    for b in ("broker1", "broker2", "broker3")]
            rc, out, err = run("diff", "--json", *dirs)
            if not check(rc in (0, 1) and out, f"{where}: exit {rc} {err[-300:]}"):
                continue
            findings = json.loads(out)["findings"]
        check(rc == (1 if any(f["divergence"] for f in findings) else 0), f"{where}: exit {rc}")
        on_victim = [f for f in findings if os.path.join(copy, "foo-0") in f["affectedReplicas"] and
                     f.get("producerId") == pid]
        for f in findings:
            if f["kind"] in ("lost_abort", "lost_commit") and f["certainty"] == "certain":
                for o in f["recordsAtStake"]:
                    check(leader_outcome(o) == f["outcome"],
                          f"{where}: certain {f['kind']} says {o} was {f['outcome']}, the leader: {leader_outcome(o)}")
        if t is None or t["producerId"] != pid:
            continue
        data_held = [o for o in held.get(pid, []) if any(a <= o <= b for a, b in t["dataBatches"])]
        if not data_held or not any(b["baseOffset"] > off for b in batches):
            continue  # never held its data, or the cut shortens the log: lag, not a lost marker
        later = [x for x in markers if x["producerId"] == pid and x["baseOffset"] > off]
        if not later:
            check(any(f["kind"] == "hanging_transaction" for f in on_victim),
                  f"{where}: the copy holds {data_held} of that transaction and no later marker: no hanging_transaction")
            named_losses += 1
            continue
        nxt = by_marker.get(later[0]["baseOffset"])
        if nxt is None or nxt["outcome"] == t["outcome"]:
            continue
        kind = "lost_abort" if t["outcome"] == "aborted" else "lost_commit"
        check(any(f["kind"] == kind and set(data_held) & set(f["recordsAtStake"]) for f in on_victim),
              f"{where}: the copy merges {data_held} into the {nxt['outcome']} transaction at {nxt['markerOffset']}: "
              f"no {kind} names them ({[(f['kind'], f.get('certainty')) for f in on_victim]})")
        named_losses += 1
    print(f"{os.path.basename(base)} {victim}: {len(markers)} markers cut, {named_losses} losses that must be named")

finish()
