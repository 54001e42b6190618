#!/usr/bin/python3
"""klf simulate with transaction version 2 and the coordinator's log (issue 17 item 5, issue 18): the
TV2 timelines in fixtures/ run, every broker gets a __transaction_state-0 that klf decodes, and the
evidence works end to end: `klf txn find-hanging` names the open transaction with the coordinator's
outcome, and `klf diff` turns a finding that is suspected without the coordinator's log into a certain
one with the outcome the timeline actually gave the transaction. Expectations come from the
simulator's own record of each commit and abort (its --json steps), never from klf diff's output."""
import json
import os

from klf_e2e import SRC, check, process, run_tests, snapshot, temp_dir

TIMELINES = os.path.join(SRC, "fixtures")
BROKERS = ("broker1", "broker2", "broker3")


def simulate(name, out):
    p = process(["simulate", os.path.join(TIMELINES, name + ".json"), "--out", out, "--json"])
    check(p.returncode in (0, 1), f"{name}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def transactions(doc, producer):
    """What the timeline did with `producer`'s transactions, from the run's steps: the data offsets of
    each, its producer id and epochs, and 'commit' or 'abort'."""
    out, data = [], []
    for s in doc["steps"]:
        d = s["detail"]
        if d.get("producer") != producer:
            continue
        if s["op"] == "produce":
            data += range(d["firstOffset"], d["lastOffset"] + 1)
        elif s["op"] in ("commit", "abort") and "markerOffset" in d:
            out.append({"offsets": data, "producerId": d["producerId"], "dataEpoch": d["dataEpoch"],
                        "markerEpoch": d["markerEpoch"], "outcome": s["op"]})
            data = []
    return out


def outcome_of(txns, offset):
    for t in txns:
        if offset in t["offsets"]:
            return t["outcome"]
    return None


def check_coordinator_logs(name, out, txns):
    """Every broker holds __transaction_state-0; klf decodes it without a problem, and the transactional
    id's PrepareCommit/PrepareAbort records carry the marker epochs the run wrote."""
    for b in BROKERS:
        d = os.path.join(out, b)
        check(os.path.isdir(os.path.join(d, "__transaction_state-0")), f"{name}: {b} has no __transaction_state-0")
        p = process(["txn", "describe", "--json", d])
        check(p.returncode == 0, f"{name}: txn describe {b}: exit {p.returncode}: {p.stderr}")
        j = json.loads(p.stdout)
        check(j["problems"] == [], f"{name}: {b}: {j['problems']}")
        records = [r for t in j["transactionalIds"] for r in t["records"]]
        prepares = [(r["producerId"], r["producerEpoch"], r["state"])
                    for r in records if r["state"].startswith("Prepare")]
        expected = [(t["producerId"], t["markerEpoch"], "PrepareCommit" if t["outcome"] == "commit" else "PrepareAbort")
                    for t in txns]
        check(prepares == expected, f"{name}: {b}: the coordinator's decisions {prepares}, the run's {expected}")
        check(all(r.get("clientTransactionVersion") == 2 for r in records), f"{name}: {b}: not all records TV2")


def findings(out, *options):
    dirs = [os.path.join(out, b, "foo-0") for b in BROKERS]
    p = process(["diff", "--json", *options, *dirs])
    check(p.returncode in (0, 1), f"diff {options}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def audit(name, out, t, broker="broker3"):
    """`klf txn audit` of the three brokers names exactly one finding: `broker` lacks the marker of the
    run's transaction `t` (certain: it fetched past it), with the coordinator's outcome."""
    p = process(["txn", "audit", "--json", *[os.path.join(out, b) for b in BROKERS]])
    check(p.returncode == 1, f"{name}: audit: exit {p.returncode}: {p.stderr}")
    j = json.loads(p.stdout)
    got = [(f["kind"], f["certainty"], f["path"], f["producerId"], f["markerEpoch"], f["coordinatorOutcome"])
           for f in j["findings"]]
    expected = [("missing-marker", "certain", os.path.join(out, broker, "foo-0"), t["producerId"], t["markerEpoch"],
                 t["outcome"])]
    check(got == expected, f"{name}: audit {got}, expected {expected}")
    check(j["markersChecked"] == j["markersAgree"], f"{name}: audit: a marker contradicts: {j['findings']}")


def test_tv2_hanging_transaction():
    name = "tv2-hanging-transaction"
    with temp_dir() as root:
        out = os.path.join(root, "out")
        doc = simulate(name, out)
        txns = transactions(doc, "P")
        check(len(txns) == 1 and txns[0]["outcome"] == "commit", f"{name}: the run's transactions {txns}")
        t1 = txns[0]
        check(t1["markerEpoch"] == t1["dataEpoch"] + 1, f"{name}: TV2 marker epoch {t1}")
        check_coordinator_logs(name, out, txns)
        before = snapshot(out)

        # find-hanging on broker 3 (it missed the COMMIT): the open transaction, committed by the coordinator.
        p = process(["txn", "find-hanging", "--json", os.path.join(out, "broker3")])
        check(p.returncode == 1, f"{name}: find-hanging broker3: exit {p.returncode}: {p.stderr}")
        h = json.loads(p.stdout)["hanging"]
        check(len(h) == 1, f"{name}: find-hanging broker3: {h}")
        if h:
            h = h[0]
            check((h["producerId"], h["producerEpoch"], h["firstOffset"]) ==
                  (t1["producerId"], t1["dataEpoch"], t1["offsets"][0]), f"{name}: hanging {h}, the run's T1 {t1}")
            c = h["coordinator"]
            check(c["verdict"] == "committed" and c["certainty"] == "certain" and c["transactionalId"] == "orders-tx",
                  f"{name}: coordinator {c}")
            check(h["next"].startswith("do not abort"), f"{name}: next step {h['next']}")
        for b in ("broker1", "broker2"):
            p = process(["txn", "find-hanging", "--json", os.path.join(out, b)])
            check(p.returncode == 0 and json.loads(p.stdout)["hanging"] == [], f"{name}: {b} hangs: {p.stdout}")

        # diff: the hang is certain either way; the outcome only the coordinator's log can give.
        without = [f for f in findings(out, "--no-txn-log")["findings"] if f["kind"] == "hanging_transaction"]
        full = findings(out)
        with_log = [f for f in full["findings"] if f["kind"] == "hanging_transaction"]
        check(sorted(full["txnLog"]) == [os.path.join(out, b, "__transaction_state-0") for b in BROKERS],
              f"{name}: txnLog {full['txnLog']}")
        check(len(without) == 1 and without[0]["outcome"] == "unknown", f"{name}: without the log: {without}")
        check(len(with_log) == 1 and with_log[0]["certainty"] == "certain" and
              with_log[0]["outcome"] == t1["outcome"], f"{name}: with the log: {with_log}")
        for f in with_log:
            check(f["recordsAtStake"] == t1["offsets"], f"{name}: at stake {f['recordsAtStake']}")
            check(any(x["replica"] == "coordinator" and "__transaction_state-0" in x["file"] for x in f["facts"]),
                  f"{name}: no fact from the coordinator's log: {f['facts']}")
        audit(name, out, t1)
        check(snapshot(out) == before, f"{name}: find-hanging, diff or audit changed the brokers")


def test_tv2_committed_to_aborted():
    name = "tv2-committed-to-aborted"
    with temp_dir() as root:
        out = os.path.join(root, "out")
        doc = simulate(name, out)
        txns = transactions(doc, "P")
        check([t["outcome"] for t in txns] == ["commit", "abort"], f"{name}: the run's transactions {txns}")
        check(all(t["markerEpoch"] == t["dataEpoch"] + 1 for t in txns) and
              txns[1]["dataEpoch"] == txns[0]["markerEpoch"], f"{name}: TV2 epochs {txns}")
        check_coordinator_logs(name, out, txns)
        t1 = txns[0]
        b3 = doc["replicas"][2]
        check(t1["offsets"][0] in b3["hiddenOffsets"], f"{name}: broker3 should hide T1's committed record")

        def lost(doc):
            return [f for f in doc["findings"] if f["kind"] in ("lost_commit", "lost_abort", "hanging_transaction")]

        without = lost(findings(out, "--no-txn-log"))
        check(len(without) == 1 and without[0]["kind"] == "lost_commit" and without[0]["certainty"] == "suspected" and
              without[0]["outcome"] == "unknown" and without[0]["recordsAtStake"] == t1["offsets"],
              f"{name}: without the coordinator's log: {without}")
        check(all(r.endswith(os.path.join("broker3", "foo-0")) for f in without for r in f["affectedReplicas"]),
              f"{name}: affected replicas {[f['affectedReplicas'] for f in without]}")
        for options in ([], ["--txn-log", os.path.join(out, "broker3", "__transaction_state-0")]):
            with_log = lost(findings(out, *options))
            check(len(with_log) == 1, f"{name} {options}: {with_log}")
            for f in with_log:
                check(f["kind"] == "lost_commit" and f["certainty"] == "certain", f"{name} {options}: {f}")
                check(f["recordsAtStake"] and all(outcome_of(txns, o) == f["outcome"] for o in f["recordsAtStake"]),
                      f"{name} {options}: outcome {f['outcome']} of {f['recordsAtStake']}, the run's {txns}")
                check(f["recordsAtStake"] == t1["offsets"], f"{name} {options}: at stake {f['recordsAtStake']}")
        audit(name, out, t1)


run_tests(globals())
