#!/usr/bin/python3
"""End-to-end tests of `klf txn describe` and `klf txn find-hanging` (issue 18 item 2).

Ground truth (fixtures/kafka4, written by Kafka's own code at 4.0.0-SNAPSHOT):
  * txn-state/written/__transaction_state-0 and txn-state/truth/records.json: every record of the
    coordinator's log as Kafka's serializers wrote and its JSON converters print it;
  * tv2-txn/written/tv2-txn-0 and tv2-txn/truth/written.json: a data partition and what Kafka's
    LogLoader loads from it (openTransactions, lastStableOffset, highWatermark).
A broker log dir holding both is built in a temporary directory. The coordinator's verdict the test
expects is derived here from records.json by the rule written out below, not from klf's code.

Environment (set by CTest): KLF_BINARY, KLF_FIXTURES_DIR, KLF_SOURCE_DIR.
"""
import json
import os

from klf_e2e import FIX, check, copy_fixture, process, run_tests, snapshot, temp_dir

KAFKA4 = os.path.join(FIX, "kafka4")
TXN_STATE = os.path.join(KAFKA4, "txn-state")
TV2 = os.path.join(KAFKA4, "tv2-txn")


def load(path):
    with open(path) as f:
        return json.load(f)


def log_dir(root):
    """A broker log dir with the coordinator's partition and the data partition; returns its path."""
    d = os.path.join(root, "broker1")
    os.makedirs(d)
    copy_fixture(os.path.join(TXN_STATE, "written", "__transaction_state-0"), os.path.join(d, "__transaction_state-0"))
    copy_fixture(os.path.join(TV2, "written", "tv2-txn-0"), os.path.join(d, "tv2-txn-0"))
    return d


def expected_outcome(records, producer_id, epoch, partition):
    """The coordinator's decision on the transaction of (producer_id, epoch) on `partition`: the
    transactional id's Ongoing record at that epoch listing the partition, then its next
    PrepareCommit/PrepareAbort listing it. Under transaction version 2 the decision's epoch is above
    the data's (the epoch is bumped at the end of every transaction): then it is certain."""
    def partitions(r):
        ps = r["value"].get("transactionPartitions") or []
        return {f"{p['topic']}-{i}" for p in ps for i in p["partitionIds"]}

    by_id = {}
    for r in records:
        by_id.setdefault(r["key"]["transactionalId"], []).append(r)
    for tid, rs in by_id.items():
        for i, r in enumerate(rs):
            v = r.get("value")
            if not v or r["state"] != "Ongoing" or v["producerId"] != producer_id or v["producerEpoch"] != epoch:
                continue
            if partition not in partitions(r):
                continue
            for later in rs[i + 1:]:
                if later.get("value") and later["state"] in ("PrepareCommit", "PrepareAbort"):
                    outcome = "committed" if later["state"] == "PrepareCommit" else "aborted"
                    return tid, outcome, later["value"]["producerEpoch"] > epoch
    return None, "no-record", False


def test_find_hanging_names_the_coordinators_decision():
    records = load(os.path.join(TXN_STATE, "truth", "records.json"))
    truth = load(os.path.join(TV2, "truth", "written.json"))
    with temp_dir() as root:
        d = log_dir(root)
        before = snapshot(d)
        p = process(["txn", "find-hanging", "--json", d])
        check(p.returncode == 1, f"find-hanging: exit {p.returncode}, expected 1 (a hanging transaction)\n{p.stderr}")
        j = json.loads(p.stdout)
        open_txns = truth["openTransactions"]
        check(len(j["hanging"]) == len(open_txns),
              f"find-hanging: {len(j['hanging'])} hanging, Kafka's loader has {len(open_txns)} open transactions")
        for t, h in zip(open_txns, j["hanging"]):
            check((h["producerId"], h["producerEpoch"], h["firstOffset"]) ==
                  (t["producerId"], t["producerEpoch"], t["firstOffset"]),
                  f"find-hanging: {h} is not Kafka's open transaction {t}")
            check(h["lastStableOffset"] == truth["lastStableOffset"] and h["highWatermark"] == truth["highWatermark"],
                  f"find-hanging: LSO/HW {h['lastStableOffset']}/{h['highWatermark']}, Kafka's "
                  f"{truth['lastStableOffset']}/{truth['highWatermark']}")
            check(h["pinsLso"] == (truth["lastStableOffset"] == t["firstOffset"] < truth["highWatermark"]),
                  f"find-hanging: pinsLso {h['pinsLso']}")
            tid, outcome, certain = expected_outcome(records, t["producerId"], t["producerEpoch"], "tv2-txn-0")
            c = h["coordinator"]
            check(c["verdict"] == outcome, f"find-hanging: verdict {c['verdict']}, the coordinator's records say {outcome}")
            check(c["certainty"] == ("certain" if certain else "suspected"), f"find-hanging: certainty {c['certainty']}")
            check(c["transactionalId"] == tid, f"find-hanging: transactionalId {c['transactionalId']}, expected {tid}")
            check(all(e["producerId"] == t["producerId"] for e in c["evidence"] if not e.get("tombstone")),
                  f"find-hanging: evidence of another producer: {c['evidence']}")
            check(any(e["state"] == "Ongoing" for e in c["evidence"]), "find-hanging: no Ongoing record in the evidence")
            check(outcome != "aborted" or "abort --topic tv2-txn --partition 0 --start-offset" in h["next"],
                  f"find-hanging: the next step of an aborted transaction names no abort command: {h['next']}")
            check(outcome != "committed" or h["next"].startswith("do not abort"), f"find-hanging: next {h['next']}")
        text = process(["txn", "find-hanging", d])
        check(text.returncode == 1, f"find-hanging (text): exit {text.returncode}")
        check("coordinator: " in text.stdout and "next: " in text.stdout, f"find-hanging (text): {text.stdout}")
        check(snapshot(d) == before, "find-hanging changed its input")


def test_without_the_coordinator_nothing_is_decided():
    with temp_dir() as root:
        d = os.path.join(root, "broker1")
        os.makedirs(d)
        copy_fixture(os.path.join(TV2, "written", "tv2-txn-0"), os.path.join(d, "tv2-txn-0"))
        p = process(["txn", "find-hanging", "--json", d])
        check(p.returncode == 1, f"find-hanging without coordinator: exit {p.returncode}")
        j = json.loads(p.stdout)
        check(j["coordinatorPartitions"] == [], f"coordinatorPartitions {j['coordinatorPartitions']}")
        for h in j["hanging"]:
            check(h["coordinator"]["verdict"] == "no-record" and h["coordinator"]["certainty"] == "suspected",
                  f"without the coordinator's log a verdict was given: {h['coordinator']}")
            check("do not decide it" in h["next"], f"next: {h['next']}")


def test_describe_lists_every_transactional_id():
    records = load(os.path.join(TXN_STATE, "truth", "records.json"))
    ids = {r["key"]["transactionalId"] for r in records}
    with temp_dir() as root:
        d = log_dir(root)
        p = process(["txn", "describe", "--json", d])
        check(p.returncode == 0, f"describe: exit {p.returncode}\n{p.stderr}")
        j = json.loads(p.stdout)
        got = {t["transactionalId"] for t in j["transactionalIds"]}
        check(got == ids, f"describe: ids {sorted(got)}, records.json has {sorted(ids)}")
        n = sum(len(t["records"]) for t in j["transactionalIds"])
        check(n == len(records), f"describe: {n} records, records.json has {len(records)}")
        by_offset = {r["offset"]: r for r in records}
        for t in j["transactionalIds"]:
            for r in t["records"]:
                e = by_offset.get(r["offset"])
                if not check(e is not None, f"describe: a record at offset {r['offset']} Kafka did not write"):
                    continue
                if r.get("tombstone"):
                    check(e.get("value") is None, f"describe: offset {r['offset']} is no tombstone")
                    continue
                check((r["state"], r["producerId"], r["producerEpoch"]) ==
                      (e["state"], e["value"]["producerId"], e["value"]["producerEpoch"]),
                      f"describe: offset {r['offset']}: {r} vs Kafka's {e['state']} {e['value']}")
        text = process(["txn", "describe", d])
        check(text.stdout.rstrip().endswith(f"{len(ids)} transactional ids in 1 __transaction_state partitions"),
              f"describe (text): {text.stdout[-300:]}")


def test_lso_names_the_coordinators_decision():
    """`klf lso` on the data partition finds the coordinator's partition in the same log dir (or
    takes it with --txn-log) and adds its decision to the open transaction; --no-txn-log leaves it out.
    A coordinator's log from another directory, with no meta.properties on either side, is not shown to
    be of the partition's cluster (producer ids repeat across clusters): its decision is suspected
    unless --same-cluster vouches for it."""
    records = load(os.path.join(TXN_STATE, "truth", "records.json"))
    truth = load(os.path.join(TV2, "truth", "written.json"))
    with temp_dir() as root:
        d = log_dir(root)
        part = os.path.join(d, "tv2-txn-0")
        before = snapshot(d)
        elsewhere = os.path.join(TXN_STATE, "written")
        for args, shown in ((["lso", "--json", part], True),
                            (["lso", "--json", "--txn-log", elsewhere, "--same-cluster", part], True),
                            (["lso", "--json", "--txn-log", elsewhere, part], False)):
            p = process(args)
            check(p.returncode == 1, f"{args}: exit {p.returncode}, expected 1 (pinned)\n{p.stderr}")
            j = json.loads(p.stdout)
            check(j["lastStableOffset"] == truth["lastStableOffset"], f"{args}: LSO {j['lastStableOffset']}")
            check(len(j["txnLog"]) == 1, f"{args}: txnLog {j.get('txnLog')}")
            check(len(j["openTransactions"]) == len(truth["openTransactions"]),
                  f"{args}: {len(j['openTransactions'])} open transactions")
            for t, o in zip(truth["openTransactions"], j["openTransactions"]):
                tid, outcome, certain = expected_outcome(records, t["producerId"], t["producerEpoch"], "tv2-txn-0")
                c = o["coordinator"]
                if not check(c is not None, f"{args}: no coordinator verdict for {t}"):
                    continue
                certain = certain and shown
                check((c["verdict"], c["certain"], c["transactionalId"]) == (outcome, certain, tid),
                      f"{args}: coordinator {c['verdict']}/{c['certain']}/{c['transactionalId']}, "
                      f"the records say {outcome}/{certain}/{tid}")
                check(shown or outcome not in ("committed", "aborted") or "--same-cluster" in c["why"],
                      f"{args}: an unproven cluster is not named: {c['why']}")
                check(outcome != "aborted" or "abort --topic tv2-txn --partition 0" in c["advice"],
                      f"{args}: advice {c['advice']}")
        p = process(["lso", "--json", "--no-txn-log", part])
        j = json.loads(p.stdout)
        check(j["txnLog"] == [] and all(o["coordinator"] is None for o in j["openTransactions"]),
              f"--no-txn-log: {j.get('txnLog')} {[o.get('coordinator') for o in j['openTransactions']]}")
        text = process(["lso", part])
        check("coordinator: " in text.stdout and "next: " in text.stdout, f"lso (text): {text.stdout}")
        check(snapshot(d) == before, "lso changed its input")


def test_repair_takes_the_coordinators_log():
    """`klf repair` finds the coordinator's partition in the replicas' log dirs (or takes --txn-log) and
    reports it; --no-txn-log leaves it out; an --out inside an explicit --txn-log is refused (it is an
    input); nothing given is changed. (Which outcome a coordinator's record proves is unit-tested in
    tests/repair and tests/diff: no Kafka-written replica set here has a decision to repair.)"""
    with temp_dir() as root:
        d = log_dir(root)
        other = os.path.join(root, "broker2")
        os.makedirs(other)
        copy_fixture(os.path.join(TV2, "written", "tv2-txn-0"), os.path.join(other, "tv2-txn-0"))
        coord = copy_fixture(os.path.join(TXN_STATE, "written"), os.path.join(root, "coord"))
        before = snapshot(root)
        base = ["repair", "--dry-run", "--json", "--replica", os.path.join(other, "tv2-txn-0"),
                "--target", os.path.join(d, "tv2-txn-0"), "--out", os.path.join(root, "out")]
        for extra, expected in (([], [os.path.join(d, "__transaction_state-0")]),
                                (["--txn-log", coord], [os.path.join(coord, "__transaction_state-0")]),
                                (["--no-txn-log"], [])):
            p = process(base + extra)
            check(p.returncode in (0, 1), f"repair {extra}: exit {p.returncode}\n{p.stderr}")
            j = json.loads(p.stdout)
            got = [os.path.realpath(x) for x in j.get("txnLog", [None])]
            check(got == [os.path.realpath(x) for x in expected], f"repair {extra}: txnLog {j.get('txnLog')}")
        p = process(["repair", "--json", "--replica", os.path.join(other, "tv2-txn-0"), "--target",
                     os.path.join(d, "tv2-txn-0"), "--txn-log", coord, "--out", os.path.join(coord, "out")])
        check(p.returncode == 2, f"--out inside --txn-log: exit {p.returncode}, expected 2\n{p.stdout}")
        check(snapshot(root) == before, "repair changed its input")


def dump_batches(dump_dir):
    """Every batch kafka-dump-log printed for a partition: (baseOffset, lastOffset, producerId,
    producerEpoch, isControl, marker type or None), in offset order."""
    import glob
    import re
    out = []
    for path in sorted(glob.glob(os.path.join(dump_dir, "*.log.txt"))):
        batch = None
        for line in open(path):
            m = re.match(r"baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*producerId: (-?\d+) producerEpoch: (-?\d+) "
                         r".*isControl: (\w+)", line)
            if m:
                batch = [int(m[1]), int(m[2]), int(m[4]), int(m[5]), m[6] == "true", None, int(m[3])]
                out.append(batch)
                continue
            m = re.search(r"endTxnMarker: (\w+)", line)
            if m and batch is not None:
                batch[5] = m[1]
    return sorted(out)


def test_audit_against_kafkas_records():
    """`klf txn audit` holds the coordinator's transaction-version-2 decisions (records.json, as Kafka's
    converters print them) against the markers of the data partition (what kafka-dump-log printed for
    it). Expected here from those two files alone: a marker at a decision's producer id and epoch of
    the other type contradicts it; a decision listing the partition whose data (at its Ongoing
    record's epoch) is there with no marker at its epoch is a missing marker, certain only when a later
    batch of the producer follows the data. (The two fixtures were written as separate scenarios, so
    some of their transactions disagree: exactly what the audit must name.)"""
    records = load(os.path.join(TXN_STATE, "truth", "records.json"))
    batches = dump_batches(os.path.join(TV2, "dump", "written"))
    decisions = []
    ongoing = {}
    for r in records:
        v, tid = r.get("value"), r["key"]["transactionalId"]
        if not v:
            ongoing.pop(tid, None)
            continue
        if r["state"] == "Ongoing":
            ongoing[tid] = v
            continue
        if r["state"] in ("PrepareCommit", "PrepareAbort") and v.get("clientTransactionVersion", 0) >= 2:
            o = ongoing.get(tid)
            data_epoch = o["producerEpoch"] if o and o["producerId"] == v["producerId"] else v["producerEpoch"] - 1
            parts = {f"{p['topic']}-{i}" for p in (v.get("transactionPartitions") or []) for i in p["partitionIds"]}
            decisions.append((v["producerId"], v["producerEpoch"], r["state"] == "PrepareCommit", data_epoch, parts))
        ongoing.pop(tid, None)
    expected, checked = set(), 0
    for pid, epoch, commit, data_epoch, parts in decisions:
        markers = [b for b in batches if b[4] and b[2] == pid and b[3] == epoch and b[5] in ("COMMIT", "ABORT")]
        checked += len(markers)
        for b in markers:
            if (b[5] == "COMMIT") != commit:
                expected.add(("contradicts", "certain", pid, epoch))
        data = [b for b in batches if not b[4] and b[2] == pid and b[3] == data_epoch and b[6] > 0]
        if not markers and data and "tv2-txn-0" in parts:
            later = any(b[2] == pid and b[0] > data[-1][1] for b in batches)
            expected.add(("missing-marker", "certain" if later else "suspected", pid, epoch))
    check(expected, "the fixtures give the audit nothing to find: the test proves nothing")
    with temp_dir() as root:
        d = log_dir(root)
        before = snapshot(d)
        p = process(["txn", "audit", "--json", d])
        check(p.returncode == 1, f"audit: exit {p.returncode}, expected 1\n{p.stderr}")
        j = json.loads(p.stdout)
        got = {(f["kind"], f["certainty"], f["producerId"], f["markerEpoch"]) for f in j["findings"]}
        check(got == expected, f"audit findings {sorted(got)}, expected {sorted(expected)}")
        check(j["markersChecked"] == checked, f"markersChecked {j['markersChecked']}, expected {checked}")
        check(all(f["facts"] and f["coordinatorRecord"]["file"] for f in j["findings"]),
              "every finding names both sides' evidence")
        text = process(["txn", "audit", d])
        check("contradicts (certain)" in text.stdout and "coordinator: " in text.stdout, f"audit text: {text.stdout}")
        # The same partition's log dir with a meta.properties of another cluster than the coordinator's.
        other = os.path.join(root, "broker2")
        copy_fixture(os.path.join(TV2, "written"), other)
        with open(os.path.join(other, "meta.properties"), "w") as f:
            f.write("version=1\ncluster.id=another-cluster\nnode.id=2\n")
        with open(os.path.join(d, "meta.properties"), "w") as f:
            f.write("version=1\ncluster.id=this-cluster\nnode.id=1\n")
        p = process(["txn", "audit", "--json", d, other])
        j = json.loads(p.stdout)
        check(j["otherCluster"] == [os.path.join(other, "tv2-txn-0")] and
              all(f["path"] != os.path.join(other, "tv2-txn-0") for f in j["findings"]),
              f"another cluster's copy: otherCluster {j.get('otherCluster')}")
        os.remove(os.path.join(d, "meta.properties"))
        check(snapshot(d) == before, "audit changed its input")


def test_errors():
    p = process(["txn", "find-hanging", "--json", "/nonexistent/klf-txn"])
    check(p.returncode == 3, f"find-hanging on a missing path: exit {p.returncode}, expected 3")
    j = json.loads(p.stdout)
    check(j.get("exitCode") == 3 and "/nonexistent/klf-txn" in j.get("error", ""), f"error object: {j}")
    with temp_dir() as root:
        d = os.path.join(root, "broker1")
        os.makedirs(d)
        copy_fixture(os.path.join(TV2, "written", "tv2-txn-0"), os.path.join(d, "tv2-txn-0"))
        p = process(["txn", "describe", d])
        check(p.returncode == 2 and "__transaction_state" in p.stderr,
              f"describe without a coordinator partition: exit {p.returncode}: {p.stderr}")


if __name__ == "__main__":
    run_tests(globals())
