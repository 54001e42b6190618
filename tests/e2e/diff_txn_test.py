#!/usr/bin/python3
"""klf diff's transaction verdicts (issue 17) against Kafka's truth: no finding on the TV2 three-broker
timeline where Kafka says nothing diverged; on the seeded random timelines no certain finding that
truth.json contradicts and every loss with a visible effect named (certain or suspected); no divergence
on any multi-broker set of real brokers; every transaction finding carries certainty, outcome, facts
(each with a file and byte position that really hold what it says), recordsAtStake and, when the
outcome is unknown, settleWith, in the JSON, the text and the HTML."""
import json
import os
import re

from klf_e2e import FIX, ORACLE, REAL, check, finish, run, snapshot, temp_dir

TXN_KINDS = {"lost_abort", "lost_commit", "hanging_transaction"}


def brokers(base):
    return [os.path.join(base, b, "foo-0") for b in ("broker1", "broker2", "broker3")]


def name_of(path):
    return os.path.basename(os.path.dirname(path))


def dump_batches(log_file, cache={}):
    if log_file not in cache:
        rc, out, err = run("dump", "--json", "--records", log_file)
        cache[log_file] = [json.loads(line) for line in out.splitlines() if line.strip()]
    return cache[log_file]


def check_fact(where, fact):
    """A fact names a replica, a file in it and a byte position there; a marker or .txnindex entry
    it names really is at that position (read back with klf dump, whose decoding e2e_dump_test checks
    against kafka-dump-log)."""
    for field in ("replica", "file", "position", "fact"):
        check(field in fact, f"{where}: fact lacks {field}: {fact}")
    if not fact.get("file"):
        return
    check(fact["file"].startswith(fact["replica"]), f"{where}: fact file {fact['file']} not in {fact['replica']}")
    check(os.path.exists(fact["file"]), f"{where}: fact file {fact['file']} does not exist")
    if fact["position"] is None or not os.path.exists(fact["file"]):
        return
    check(0 <= fact["position"] < max(1, os.path.getsize(fact["file"])) or os.path.getsize(fact["file"]) == 0,
          f"{where}: position {fact['position']} outside {fact['file']}")
    m = re.search(r"holds the (COMMIT|ABORT) of producer (\d+) \(epoch -?\d+\) at offset (\d+)", fact["fact"])
    if m and fact["file"].endswith(".log"):
        batch = [b for b in dump_batches(fact["file"]) if b.get("position") == fact["position"]]
        check(len(batch) == 1, f"{where}: no batch at {fact['file']}:{fact['position']}")
        if batch:
            b = batch[0]
            check(b["isControl"] and b["producerId"] == int(m.group(2)) and b["baseOffset"] == int(m.group(3)) and
                  b["records"] and b["records"][0]["control"]["type"] == m.group(1),
                  f"{where}: {fact['file']}:{fact['position']} is not the {m.group(1)} at {m.group(3)}: {b}")
    if fact["file"].endswith(".txnindex"):
        rc, out, err = run("dump", "--json", fact["file"])
        entries = [json.loads(line) for line in out.splitlines() if line.strip()]
        check(any(e.get("position") == fact["position"] for e in entries),
              f"{where}: no .txnindex entry at {fact['file']}:{fact['position']}")


def check_shape(where, f):
    if f["kind"] not in TXN_KINDS:
        return
    check(f.get("certainty") in ("certain", "suspected"), f"{where}: certainty {f.get('certainty')}")
    check(f.get("outcome") in ("commit", "abort", "unknown"), f"{where}: outcome {f.get('outcome')}")
    check(isinstance(f.get("recordsAtStake"), list) and f["recordsAtStake"] and
          all(isinstance(o, int) for o in f["recordsAtStake"]), f"{where}: recordsAtStake {f.get('recordsAtStake')}")
    check(isinstance(f.get("facts"), list) and f["facts"], f"{where}: facts {f.get('facts')}")
    for fact in f.get("facts") or []:
        check_fact(where, fact)
    if f.get("outcome") == "unknown":
        check(isinstance(f.get("settleWith"), str) and "__transaction_state" in f["settleWith"],
              f"{where}: settleWith {f.get('settleWith')}")


def leader_outcome(truth, offset):
    """The outcome Kafka's leader gave the transaction whose data holds `offset`."""
    for t in truth["writes"]["transactions"]:
        if any(a <= offset <= b for a, b in t["dataBatches"]):
            return {"committed": "commit", "aborted": "abort"}.get(t["outcome"], t["outcome"])
    return None


# --- kafka4/tv2-replicas/timeline-04: Kafka says nothing diverged -> no finding, exit 0 --------------
tv2 = os.path.join(FIX, "kafka4", "tv2-replicas", "timeline-04")
before = snapshot(tv2)
rc, out, err = run("diff", "--json", *brokers(tv2))
check(rc == 0, f"tv2-replicas timeline-04: exit {rc} ({err})")
check(json.loads(out)["findings"] == [] if out else False, f"tv2-replicas timeline-04 findings: {out[:2000]}")
rc, out, err = run("diff", *brokers(tv2))
check(rc == 0 and "no findings" in out, f"tv2-replicas timeline-04 text: {out[-500:]}")
check(snapshot(tv2) == before, "tv2-replicas inputs modified")

# --- the seeded random timelines: no certain finding that Kafka's truth contradicts, every loss with a
# visible effect named ----------------------------------------------------------------------------
for timeline in sorted(os.listdir(os.path.join(ORACLE, "random-replicas"))):
    base = os.path.join(ORACLE, "random-replicas", timeline)
    if not os.path.isdir(base):
        continue
    truth = json.load(open(os.path.join(base, "truth.json")))
    dt = truth["divergenceTruth"]
    dirs = brokers(base)
    rc, out, err = run("diff", "--json", *dirs)
    j = json.loads(out)
    findings = j["findings"]
    divergent = [f for f in findings if f["divergence"]]
    check(rc == (1 if divergent else 0), f"{timeline}: exit {rc} with {len(divergent)} divergence findings")
    for k, f in enumerate(findings):
        where = f"{timeline} finding {k} ({f['kind']})"
        check_shape(where, f)
        affected = [name_of(p) for p in f["affectedReplicas"]]
        if f["kind"] in ("lost_abort", "lost_commit") and f["certainty"] == "certain":
            for o in f["recordsAtStake"]:
                check(leader_outcome(truth, o) == f["outcome"],
                      f"{where}: certain {f['outcome']} of offset {o}, Kafka's leader: {leader_outcome(truth, o)}")
        if f["kind"] == "hanging_transaction":
            for b in affected:
                opens = truth["brokers"][b]["openTransactions"]
                check(any(t["producerId"] == f["producerId"] and t["firstOffset"] == f["offsets"][0] for t in opens),
                      f"{where}: {b} has no open transaction of {f['producerId']} at {f['offsets'][0]} in Kafka's reload")
            check(not truth["brokers"]["broker1"]["openTransactions"], f"{where}: open on the leader too")
        if f["kind"] in TXN_KINDS and f["certainty"] == "certain" and f["outcome"] in ("commit", "abort"):
            for o in f["recordsAtStake"]:
                check(leader_outcome(truth, o) == f["outcome"], f"{where}: outcome of {o} contradicts Kafka")
        if f["kind"] == "lost_tombstone":
            check(not dt["diverged"] or dt["staleKeys"], f"{where}: lost_tombstone where Kafka has no stale key")

    def named(kind, broker, offsets=(), producer=None, first=None):
        for f in findings:
            if f["kind"] != kind or broker not in [name_of(p) for p in f["affectedReplicas"]]:
                continue
            if producer is not None and f["producerId"] != producer:
                continue
            if first is not None and f["offsets"][0] != first:
                continue
            if all(o in f.get("recordsAtStake", []) for o in offsets):
                return True
        return False

    # Records a broker's read_committed view misjudges (Kafka's reload of each broker).
    for m in dt["misjudgedTransactionalRecords"]:
        kind = "lost_commit" if m["actualOutcome"] == "committed" else "lost_abort"
        check(named(kind, m["broker"], [m["offset"]], m["producerId"]),
              f"{timeline}: {m['broker']} misjudges offset {m['offset']} ({m['actualOutcome']}) and no {kind} names it")
    # Every transaction left open on a follower.
    for b, info in truth["brokers"].items():
        if info["role"] == "leader":
            continue
        for t in info["openTransactions"]:
            check(named("hanging_transaction", b, producer=t["producerId"], first=t["firstOffset"]),
                  f"{timeline}: {b}'s open transaction of {t['producerId']} at {t['firstOffset']} not named")
    # Every lost record with a visible effect.
    for lost in dt["lostRecords"]:
        effect = lost.get("visibleEffect", "")
        if effect.startswith("none"):
            continue
        b = lost["broker"]
        if lost["kind"] == "tombstone":
            check(any(f["kind"] == "lost_tombstone" and b in [name_of(p) for p in f["affectedReplicas"]] and
                      f["key"] == lost["key"] for f in findings), f"{timeline}: lost tombstone {lost} not named")
        elif "left open" in effect:
            check(named("hanging_transaction", b, producer=lost["producerId"], first=lost["txnFirstOffset"]),
                  f"{timeline}: {effect} not named")
        else:
            offs = [int(x) for x in re.findall(r"\d+", effect.split("]")[0].split("[")[-1])] if "[" in effect else []
            kind = "lost_commit" if lost["kind"] == "commit" else "lost_abort"
            check(named(kind, b, offs, lost["producerId"]), f"{timeline}: {effect} not named as {kind}")

    # The text and the HTML say the same.
    rc_t, text, _ = run("diff", *dirs)
    check(rc_t == rc, f"{timeline}: text exit {rc_t} != json exit {rc}")
    for f in findings:
        if f["kind"] in TXN_KINDS:
            check(f"certainty: {f['certainty']}" in text, f"{timeline}: text lacks 'certainty: {f['certainty']}'")
            if f.get("settleWith"):
                check("settle with: " in text, f"{timeline}: text lacks settle with")
    with temp_dir("klf-diff-txn-") as tmp:
        html = os.path.join(tmp, "r.html")
        rc_h, _, err = run("diff", "--html", html, *dirs)
        page = open(html, encoding="utf-8").read() if os.path.exists(html) else ""
        for f in findings:
            if f["kind"] in TXN_KINDS:
                check(f'<td class="certainty">{f["certainty"]}</td>' in page, f"{timeline}: HTML lacks the certainty")
                check('<ul class="facts">' in page, f"{timeline}: HTML lacks the facts")

# --- real brokers: no divergence finding (certain or suspected) on any multi-broker set ------------
for base, names in (("cesaralcancio__study-kafka/data", ["kafka1", "kafka2", "kafka3", "kafka4", "kafka5"]),
                    ("ducphongphung__BigData_VietStock/data", ["kafka1", "kafka2", "kafka3"]),
                    ("hiage__kafka-raft/data", ["kafka1", "kafka2", "kafka3"]),
                    ("greenlemonT__kafka-temp/data", ["kafka1", "kafka2", "kafka3"])):
    rc, out, err = run("diff", "--json", *[os.path.join(REAL, base, n) for n in names])
    check(rc == 0, f"{base}: exit {rc} ({err[-300:]})")
    j = json.loads(out) if out else {"findings": [{"kind": "?"}]}
    bad = [f for f in j["findings"] if f.get("divergence", True) or f["kind"] in TXN_KINDS]
    check(not bad, f"{base}: {[(f['kind'], f.get('certainty')) for f in bad]}")

finish()
