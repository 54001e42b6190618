#!/usr/bin/python3
"""klf lso end to end.

* Every broker of Kafka's own replica sets (kafka-oracle/replicas/*/truth.json): the last stable offset,
  log end offset and open transactions equal what Kafka reported after reloading the broker; no open
  transaction -> exit 0 and pinnedBy null.
* The hanging-transaction scenario of the simulator (fixtures/hanging-transaction.json): on the lagging
  broker the LSO is pinned by producer 2000 at the first offset of its committed-elsewhere transaction
  (the offset where that broker holds the order-1 record), exit 1, the explanation says that
  producer.id.expiration.ms does not lift it, and the abort command is the exact kafka-transactions.sh
  line; with --replica the healthy replicas are named as having decided it. On the healthy replicas, exit 0.
* JSON shape per cli.md; --now changes the idle time text only; inputs untouched.
* Issue 17 item 3, on Kafka's random three-replica timelines (kafka-oracle/random-replicas timeline-01, -04, -05,
  -11) and kafka4 (tv2-replicas timeline-04, tv2-txn): every open transaction Kafka reports (truth.json) is named
  with its producer id and first offset, each with the explicit abort form `--producer-id P --producer-epoch E
  --coordinator-epoch C` (never --start-offset) and the warning; E and C are at least what the leader (broker1)
  and the broker itself hold for that producer in Kafka's producer state. Without --replica lso says the values
  come from this replica alone; with the other brokers as --replica, every broker that holds the offset with no
  transaction of the producer open there is named as having decided it, and the resolution spells out
  re-replication from the leader (never `klf repair`).
* Over log dirs (issue 19): a broker log dir holding broker2's copy of each random timeline (as t01-0, t04-0, ...)
  and the leader broker1's copies in another: every partition is reported, pinned or not; the pinned ones are
  exactly those Kafka reports with LSO < HW (truth.json), each decided on the leader; counts add up; each
  partition's object equals `klf lso --json --partition` on it; --only-findings keeps only the pinned ones;
  --jobs 1 and 4 print the same; exit 1.
"""
import glob
import json
import os
import re

from klf_e2e import FIX, ORACLE, REPLICAS, SRC, check, copy_fixture, finish, run, snapshot, temp_dir

KEYS = {"lastStableOffset", "logEndOffset", "openTransactions", "pinnedBy", "explanation", "resolution"}
# The abort form that works on any replica (cli.md "lso"): topic, partition, producer id, epoch, coordinator epoch.
ABORT = re.compile(r"kafka-transactions\.sh --bootstrap-server (\S+) abort --topic (?:\S+) --partition \d+ "
                   r"--producer-id (\d+) --producer-epoch (\d+) --coordinator-epoch (\d+)")

# --- Kafka's replica sets: truth.json ------------------------------------------------------------
for truth_path in sorted(glob.glob(os.path.join(REPLICAS, "*", "truth.json"))):
    truth = json.load(open(truth_path))
    base = os.path.dirname(truth_path)
    before = snapshot(base)
    for name, b in truth["brokers"].items():
        part = os.path.join(base, name, truth["topicPartition"])
        rc, o, e = run("lso", "--json", part)
        j = json.loads(o)
        check(KEYS <= set(j), f"{part}: JSON keys {sorted(j)}")
        check(j["lastStableOffset"] == b["lastStableOffset"], f"{part}: LSO {j['lastStableOffset']} != {b['lastStableOffset']}")
        check(j["logEndOffset"] == b["logEndOffset"], f"{part}: LEO {j['logEndOffset']} != {b['logEndOffset']}")
        want_open = sorted((t["producerId"], t["firstOffset"]) for t in b["openTransactions"]) if b["openTransactions"] and isinstance(b["openTransactions"][0], dict) else []
        got_open = sorted((t["producerId"], t["firstOffset"]) for t in j["openTransactions"])
        check(got_open == want_open, f"{part}: open transactions {got_open} != {want_open}")
        pinned = b["lastStableOffset"] < b["highWatermark"]
        check(rc == (1 if pinned else 0), f"{part}: exit {rc}")
        check((j["pinnedBy"] is not None) == pinned, f"{part}: pinnedBy {j['pinnedBy']}")
    check(snapshot(base) == before, f"{base}: inputs modified")

# --- the simulator's hanging transaction ---------------------------------------------------------
with temp_dir("klf-lso-e2e-") as tmp:
    tl = os.path.join(SRC, "fixtures", "hanging-transaction.json")
    sim = os.path.join(tmp, "sim")
    rc, o, e = run("simulate", tl, "--out", sim)
    check(rc in (0, 1) and os.path.isdir(sim), f"simulate exit {rc}: {e}")
    parts = sorted(glob.glob(os.path.join(sim, "broker*", "foo-0")))
    rc, o, e = run("diff", "--json", *parts)
    hang = [f for f in json.loads(o)["findings"] if f["kind"] == "hanging_transaction"]
    check(len(hang) == 1, f"diff finds {len(hang)} hanging transactions")
    if hang:
        target = hang[0]["affectedReplicas"][0]
        healthy = [p for p in parts if p != target]
        # The offset where the target holds P's transactional record: found from the raw dump.
        first = None
        for log in sorted(glob.glob(os.path.join(target, "*.log"))):
            for line in run("dump", "--json", log)[1].splitlines():
                b = json.loads(line)
                if b.get("producerId") == 2000 and b.get("isTransactional") and not b.get("isControl"):
                    first = b["baseOffset"] if first is None else first
        before = snapshot(sim)
        rc, o, e = run("lso", "--json", target)
        j = json.loads(o)
        check(rc == 1, f"hanging target: exit {rc}, want 1")
        p = j["pinnedBy"] or {}
        check(p.get("producerId") == 2000 and p.get("producerEpoch") == 0 and p.get("firstOffset") == first,
              f"pinnedBy {p}, want producer 2000 epoch 0 from offset {first}")
        check(j["lastStableOffset"] == first, f"LSO {j['lastStableOffset']} != {first}")
        check(any(t["producerId"] == 2000 for t in j["openTransactions"]), "open transactions")
        cmd = j.get("abortCommand") or ""
        check(ABORT.fullmatch(cmd) and ABORT.fullmatch(cmd).group(2) == "2000", f"abort command {cmd!r}")
        pin = [t for t in j["openTransactions"] if t.get("pinsLso")]
        check(len(pin) == 1 and pin[0]["abortCommand"] == cmd and pin[0]["producerId"] == 2000,
              f"pinning transaction's command: {pin}")
        check("producer.id.expiration.ms" in j["explanation"] and "never" in j["explanation"],
              "explanation must say the open transaction never expires")
        rc, o, e = run("lso", "--json", os.path.dirname(target))
        check(rc == 1 and json.loads(o)["pinnedBy"]["firstOffset"] == first, "log dir with one partition")
        rc, o, e = run("lso", target)
        check(rc == 1 and cmd in o and "PINNED" in o, f"text output: {o}")
        args = []
        for h in healthy:
            args += ["--replica", h]
        rc, o, e = run("lso", "--json", *args, target)
        j = json.loads(o)
        check(len(j["replicas"]) == len(healthy) and all(r["state"] in ("decided", "marker", "empty_batch")
                                                          for r in j["replicas"]), f"replicas {j['replicas']}")
        check("re-replicate this replica from the leader" in j["resolution"] and "klf repair" not in j["resolution"],
              f"resolution with replicas: {j['resolution']}")
        rc, o, e = run("lso", "--json", "--bootstrap-server", "kafka1:9092", target)
        check("--bootstrap-server kafka1:9092 abort" in json.loads(o)["abortCommand"], "bootstrap server option")
        for h in healthy:
            rc, o, e = run("lso", "--json", h)
            check(rc == 0 and json.loads(o)["pinnedBy"] is None, f"healthy {h}: exit {rc} {o}")
        check(snapshot(sim) == before, "lso modified its input")
    rc, o, e = run("lso", os.path.join(tmp, "missing-0"))
    check(rc == 3, f"missing dir: exit {rc}, want 3")
    rc, o, e = run("lso")
    check(rc == 2, f"no PATH: exit {rc}, want 2")


# --- issue 17 item 3: every open transaction, the explicit abort form, epochs >= the leader's -----------------


def check_abort_entry(label, t, state_by_pid, leader_state_by_pid):
    """One openTransactions entry: the explicit abort form, its values, and E, C >= Kafka's producer state."""
    cmd = t.get("abortCommand") or ""
    m = ABORT.fullmatch(cmd)
    check(m is not None and "--start-offset" not in cmd, f"{label}: abort command {cmd!r}")
    if m is None:
        return
    pid, e, c = int(m.group(2)), int(m.group(3)), int(m.group(4))
    check(pid == t["producerId"], f"{label}: command names producer {pid}, not {t['producerId']}")
    check(e == t["producerEpochForAbort"] and c == t["coordinatorEpochForAbort"], f"{label}: command {cmd} vs {t}")
    for who, states in (("this broker", state_by_pid), ("the leader broker1", leader_state_by_pid)):
        st = states.get(pid)
        if st is None:
            continue  # the producer expired there: a marker of any epoch is accepted
        check(e >= st["epoch"], f"{label}: producer epoch {e} < {st['epoch']} held by {who}")
        check(c >= st["coordinatorEpoch"], f"{label}: coordinator epoch {c} < {st['coordinatorEpoch']} held by {who}")
    check("committed elsewhere" in t.get("warning", ""), f"{label}: warning {t.get('warning')!r}")


RANDOM = os.path.join(ORACLE, "random-replicas")
for tl in ("timeline-01", "timeline-04", "timeline-05", "timeline-11"):
    base = os.path.join(RANDOM, tl)
    truth = json.load(open(os.path.join(base, "truth.json")))
    before = snapshot(base)
    brokers = sorted(truth["brokers"])
    leader_state = {p["producerId"]: p for p in truth["brokers"]["broker1"]["producerState"]}
    for name in brokers:
        b = truth["brokers"][name]
        part = os.path.join(base, name, "foo-0")
        own_state = {p["producerId"]: p for p in b["producerState"]}
        want = sorted((t["producerId"], t["firstOffset"]) for t in b["openTransactions"])
        pinned = b["lastStableOffset"] < b["highWatermark"]
        others = [os.path.join(base, o, "foo-0") for o in brokers if o != name]
        replica_args = [a for o in others for a in ("--replica", o)]
        for args in ([], replica_args):
            label = f"{tl}/{name}{' with --replica' if args else ''}"
            rc, o, e = run("lso", "--json", *args, part)
            j = json.loads(o)
            check(rc == (1 if pinned else 0), f"{label}: exit {rc}")
            check(j["lastStableOffset"] == b["lastStableOffset"], f"{label}: LSO {j['lastStableOffset']}")
            got = sorted((t["producerId"], t["firstOffset"]) for t in j["openTransactions"])
            check(got == want, f"{label}: open transactions {got} != Kafka's {want}")
            if not want:
                check(j["abortCommand"] is None, f"{label}: abort command {j['abortCommand']} with nothing open")
            for t in j["openTransactions"]:
                tlabel = f"{label} producer {t['producerId']} from {t['firstOffset']}"
                check_abort_entry(tlabel, t, own_state, leader_state)
                if not args:
                    check(t["epochsFromThisReplicaOnly"] and "this replica alone" in t["epochsNote"],
                          f"{tlabel}: the note must say the values come from this replica alone: {t['epochsNote']}")
                    check(t["decidedOn"] is None, f"{tlabel}: decidedOn {t['decidedOn']} without --replica")
                    continue
                check(not t["epochsFromThisReplicaOnly"], f"{tlabel}: epochsFromThisReplicaOnly with --replica")
                # Kafka's truth: a broker holding the offset with no transaction of that producer open from it or
                # earlier has decided it.
                want_decided = sorted(
                    o for o in brokers if o != name
                    and truth["brokers"][o]["logStartOffset"] <= t["firstOffset"] < truth["brokers"][o]["logEndOffset"]
                    and not any(x["producerId"] == t["producerId"] and x["firstOffset"] <= t["firstOffset"]
                                for x in truth["brokers"][o]["openTransactions"]))
                check(sorted(t["decidedOn"]) == want_decided, f"{tlabel}: decidedOn {t['decidedOn']} != {want_decided}")
            if pinned:
                pin = [t for t in j["openTransactions"] if t["pinsLso"]]
                check(len(pin) == 1 and pin[0]["firstOffset"] == b["lastStableOffset"]
                      and j["abortCommand"] == pin[0]["abortCommand"], f"{label}: pinning transaction {pin}")
                res = j["resolution"]
                check("klf repair" not in res, f"{label}: resolution names klf repair: {res}")
                if args and any(t["decidedOn"] for t in j["openTransactions"]):
                    for step in ("re-replicate this replica from the leader", "Stop the broker",
                                 "out of the broker's log directory", "Start the broker", "kafka-reassign-partitions.sh"):
                        check(step in res, f"{label}: resolution lacks {step!r}: {res}")
            # Text output: one block per open transaction with its command and the warning.
            rc, o, e = run("lso", *args, part)
            check(o.count("\nopen transaction ") == len(want), f"{label}: text blocks {o.count(chr(10) + 'open transaction ')}")
            for t in j["openTransactions"]:
                check(t["abortCommand"] in o, f"{label}: text lacks {t['abortCommand']}")
            check(o.count("  warning: ") == len(want), f"{label}: text warnings")
    check(snapshot(base) == before, f"{base}: inputs modified")

# kafka4: TV2 replicas with nothing open; the TV2 partition whose producer 4000 stays open at the end.
K4 = os.path.join(FIX, "kafka4")
base = os.path.join(K4, "tv2-replicas", "timeline-04")
truth = json.load(open(os.path.join(base, "truth.json")))
for name, b in sorted(truth["brokers"].items()):
    part = os.path.join(base, name, "foo-0")
    rc, o, e = run("lso", "--json", part)
    j = json.loads(o)
    check(rc == 0 and j["openTransactions"] == [] and j["abortCommand"] is None and j["pinnedBy"] is None,
          f"tv2-replicas/{name}: exit {rc}, {j['openTransactions']}, {j['abortCommand']}")
    rc, o, e = run("lso", part)
    check(rc == 0 and "kafka-transactions.sh" not in o, f"tv2-replicas/{name}: text names a command: {o}")
for state in ("written", "cleaned-pass1", "cleaned-pass2", "cleaned-pass3"):
    truth = json.load(open(os.path.join(K4, "tv2-txn", "truth", state + ".json")))
    part = os.path.join(K4, "tv2-txn", state, "tv2-txn-0")
    states = {p["producerId"]: {"epoch": p["producerEpoch"], "coordinatorEpoch": p["coordinatorEpoch"]}
              for p in truth["producerStateEntries"]}
    rc, o, e = run("lso", "--json", part)
    j = json.loads(o)
    want = sorted((t["producerId"], t["firstOffset"]) for t in truth["openTransactions"])
    got = sorted((t["producerId"], t["firstOffset"]) for t in j["openTransactions"])
    check(rc == 1 and got == want, f"tv2-txn/{state}: exit {rc}, open {got} != {want}")
    for t in j["openTransactions"]:
        check_abort_entry(f"tv2-txn/{state} producer {t['producerId']}", t, states, states)
        want_epoch = [x["producerEpoch"] for x in truth["openTransactions"] if x["producerId"] == t["producerId"]]
        check(t["producerEpochForAbort"] == want_epoch[0], f"tv2-txn/{state}: E {t['producerEpochForAbort']} != {want_epoch}")

# --- over log dirs: every partition of the target's log dir -----------------------------------------
RANDOM = os.path.join(ORACLE, "random-replicas")
with temp_dir("klf-lso-logdirs-") as tmp:
    b2, b1 = os.path.join(tmp, "b2"), os.path.join(tmp, "b1")
    want_pinned = {}
    for tl in ("timeline-01", "timeline-04", "timeline-05", "timeline-11"):
        name = "t" + tl[-2:] + "-0"
        copy_fixture(os.path.join(RANDOM, tl, "broker2", "foo-0"), os.path.join(b2, name))
        copy_fixture(os.path.join(RANDOM, tl, "broker1", "foo-0"), os.path.join(b1, name))
        b = json.load(open(os.path.join(RANDOM, tl, "truth.json")))["brokers"]["broker2"]
        want_pinned[name] = b["lastStableOffset"] < b["highWatermark"]
    for d in (b1, b2):  # a broker log dir: the checkpoint files beside the partitions
        for f in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
            with open(os.path.join(d, f), "w") as out:
                out.write("0\n0\n")
    rc, o, e = run("lso", "--json", b2, "--replica", b1)
    j = json.loads(o)
    check(rc == 1, f"log dirs: exit {rc}, want 1 {e}")
    names = [p["partition"] for p in j["partitions"]]
    check(names == sorted(want_pinned), f"log dirs: partitions {names}")
    got_pinned = {p["partition"]: p["pinnedBy"] is not None for p in j["partitions"]}
    check(got_pinned == want_pinned, f"log dirs: pinned {got_pinned} != truth {want_pinned}")
    n = sum(want_pinned.values())
    c = j["counts"]
    check(c == {"partitions": 4, "pinned": n, "decidedElsewhere": n, "healthy": 4 - n, "unreadable": 0},
          f"log dirs: counts {c}")
    check(sorted(f["partition"] for f in j["findings"]) == sorted(k for k, v in want_pinned.items() if v) and
          all(f["kind"] == "pinned_lso" and f["decidedOn"] == ["b1"] and "--producer-id" in f["abortCommand"]
              for f in j["findings"]), f"log dirs: findings {j['findings']}")
    for p in j["partitions"]:
        rc1, o1, _ = run("lso", "--json", b2, "--replica", b1, "--partition", p["partition"])
        check(json.loads(o1) == p, f"log dirs: {p['partition']} differs from lso --partition")
    rc, o4, e = run("lso", "--json", "--jobs", "4", b2, "--replica", b1)
    rc, o1, e = run("lso", "--json", "--jobs", "1", b2, "--replica", b1)
    check(o4 == o1 == o, "log dirs: --jobs changes the output")
    rc, o, e = run("lso", "--json", "--only-findings", b2, "--replica", b1)
    j = json.loads(o)
    check(rc == 1 and [p["partition"] for p in j["partitions"]] == sorted(k for k, v in want_pinned.items() if v)
          and j["counts"]["partitions"] == 4 and j["onlyFindings"], f"--only-findings: {j['counts']}")
    rc, o, e = run("lso", b2, "--replica", b1)
    check(f"4 partitions: {n} pinned ({n} decided on another replica: a lost marker), {4 - n} not pinned, "
          "0 unreadable" in o, f"log dirs: text counts {o[-300:]}")
    for k, v in want_pinned.items():
        check((f"partition {k} (" in o) and ((f"partition {k} ({b2}/{k}): last stable offset" in o) != v),
              f"log dirs: text line of {k}")
    rc, o, e = run("lso", "--only-findings", b2)
    check(rc == 1 and "not shown: --only-findings" in o and "= high watermark" not in o, f"--only-findings text: {o[-300:]}")

finish()
