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
"""
import glob
import json
import os

from klf_e2e import REPLICAS, SRC, check, finish, run, snapshot, temp_dir

KEYS = {"lastStableOffset", "logEndOffset", "openTransactions", "pinnedBy", "explanation", "resolution"}

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
        cmd = f"kafka-transactions.sh --bootstrap-server <broker:9092> abort --topic foo --partition 0 --start-offset {first}"
        check(cmd in j["resolution"] and j.get("abortCommand") == cmd, f"abort command missing: {j['resolution']}")
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
        check("klf repair" in j["resolution"] and cmd in j["resolution"], f"resolution with replicas: {j['resolution']}")
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

finish()
