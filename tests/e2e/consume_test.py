#!/usr/bin/python3
"""klf consume end to end, against Kafka's own answers (never against klf's own output).

* Every broker of kafka-oracle/replicas/* and kafka-oracle/random-replicas/* (truth.json, Kafka's reload
  of each broker dir): the records of `klf consume --isolation read_committed` / `read_uncommitted`
  equal Kafka's `readCommitted` / `readUncommitted` lists (offset, key, value, timestamp, producer id,
  transactional), in JSON and in text; once through the broker's log dir with --partition.
* kafka4/tv2-txn, every state (written, cleaned-pass1..3): the records equal Kafka's consumer fetches
  (truth/<state>.json fetchTxnCommitted / fetchHighWatermark: offset, timestamp, timestampType, key,
  value, leader epoch, headers); with --offsets A:B, Kafka's list restricted to A..B.
* The JSON summary object: Kafka's log start, high watermark, LSO; the end offset is the LSO or HW.
* Damage: a batch whose CRC fails (one byte flipped in a copy, at a batch Kafka's dump places) ends what
  is served there: the records before it equal Kafka's list cut at that batch, exit 1, stderr names the
  file and the CRC field's byte position. Damage beyond the LSO leaves read_committed whole (exit 0).
* Usage errors exit 2, a missing directory 3; inputs untouched.
"""
import glob
import json
import os
import re
import shutil

from klf_e2e import FIX, ORACLE, check, copy_fixture, finish, flip_byte, process, snapshot, temp_dir

TV2 = os.path.join(FIX, "kafka4", "tv2-txn")


def consume_json(args):
    """(records, summary, completed process) of `klf consume --json ARGS`."""
    p = process(["consume", "--json", *args])
    objs = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    records = [o for o in objs if o.get("type") == "record"]
    summaries = [o for o in objs if o.get("type") == "summary"]
    check(len(summaries) == 1 and objs and objs[-1].get("type") == "summary",
          f"klf consume {' '.join(args)}: want one summary object, last; got {len(summaries)}")
    check(len(records) + len(summaries) == len(objs), f"klf consume {' '.join(args)}: objects of unknown type")
    return records, (summaries[0] if summaries else {}), p


TEXT_LINE = re.compile(r"^offset: (\d+) (\w+): (-?\d+)(?: \((\S+)\))? key: (.*) value: (.*) headers: \[(.*)\]$")


def consume_text_offsets(args):
    p = process(["consume", *args])
    offsets = []
    for line in p.stdout.splitlines():
        m = TEXT_LINE.match(line)
        check(m is not None, f"klf consume {' '.join(args)}: text line {line!r}")
        if m:
            offsets.append(int(m.group(1)))
    return offsets, p


def replica_record(r):
    return (r["offset"], r["key"], r["value"], r["timestamp"], r["producerId"], r["transactional"])


def klf_replica_record(r):
    return (r["offset"], r["key"], r["value"], r["timestamp"], r["producerId"], r["isTransactional"])


def test_replica_sets():
    """Every broker of Kafka's replica sets: both isolation levels equal Kafka's record lists."""
    sets = sorted(glob.glob(os.path.join(ORACLE, "replicas", "*", "truth.json")) +
                  glob.glob(os.path.join(ORACLE, "random-replicas", "*", "truth.json")))
    check(len(sets) >= 6, f"only {len(sets)} replica sets")
    brokers = 0
    for truth_path in sets:
        truth = json.load(open(truth_path))
        base = os.path.dirname(truth_path)
        before = snapshot(base)
        tp = truth.get("topicPartition", "foo-0")
        for name, b in sorted(truth["brokers"].items()):
            part = os.path.join(base, name, tp)
            brokers += 1
            for isolation, key in (("read_committed", "readCommitted"), ("read_uncommitted", "readUncommitted")):
                where = f"{part} {isolation}"
                records, summary, p = consume_json(["--isolation", isolation, part])
                check(p.returncode == 0, f"{where}: exit {p.returncode}: {p.stderr}")
                got = [klf_replica_record(r) for r in records]
                want = [replica_record(r) for r in b[key]]
                if got != want:
                    diff = [(g, w) for g, w in zip(got, want) if g != w][:3]
                    check(False, f"{where}: {len(got)} records vs Kafka's {len(want)}; first differences {diff}")
                check(summary.get("logStartOffset") == b["logStartOffset"] and
                      summary.get("highWatermark") == b["highWatermark"] and
                      summary.get("lastStableOffset") == b["lastStableOffset"],
                      f"{where}: summary {summary}")
                check(summary.get("endOffset") == (b["lastStableOffset"] if key == "readCommitted" else b["highWatermark"]),
                      f"{where}: endOffset {summary.get('endOffset')}")
                check(summary.get("records") == len(want) and summary.get("damage") is None, f"{where}: summary {summary}")
                check(all(r["topic"] == "foo" and r["partition"] == 0 for r in records), f"{where}: topic/partition")
                offsets, p = consume_text_offsets(["--isolation", isolation, part])
                check(p.returncode == 0 and offsets == [w[0] for w in want], f"{where}: text offsets differ from Kafka's")
        # The broker's log dir with --partition: the same records.
        b1 = os.path.join(base, "broker1")
        records, _, p = consume_json(["--isolation", "read_committed", b1, "--partition", tp])
        check(p.returncode == 0 and [klf_replica_record(r) for r in records] ==
              [replica_record(r) for r in truth["brokers"]["broker1"]["readCommitted"]],
              f"{b1} --partition {tp}: records differ from Kafka's")
        check(snapshot(base) == before, f"{base}: inputs modified")
    check(brokers >= 18, f"only {brokers} brokers compared")


def tv2_record(r):
    return (r["offset"], r["timestamp"], r["timestampType"], r["key"], r["value"], r["leaderEpoch"],
            [(h["key"], h["value"]) for h in r["headers"]])


def klf_tv2_record(r):
    return (r["offset"], r["timestamp"], r["timestampType"], r["key"], r["value"], r["partitionLeaderEpoch"],
            [(h["key"], h["value"]) for h in r["headers"]])


def test_tv2_txn():
    """kafka4/tv2-txn, every state: Kafka's consumer fetches, whole and by --offsets ranges."""
    before = snapshot(TV2)
    states = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(TV2, "truth", "*.json")))
    check(len(states) == 4, f"tv2-txn states {states}")
    for state in states:
        truth = json.load(open(os.path.join(TV2, "truth", state + ".json")))
        part = os.path.join(TV2, state, "tv2-txn-0")
        for isolation, key in (("read_committed", "fetchTxnCommitted"), ("read_uncommitted", "fetchHighWatermark")):
            want = [tv2_record(r) for r in truth[key]["records"]]
            records, summary, p = consume_json(["--isolation", isolation, part])
            got = [klf_tv2_record(r) for r in records]
            check(p.returncode == 0 and got == want,
                  f"{part} {isolation}: exit {p.returncode}, {len(got)} records vs Kafka's {len(want)}: "
                  f"{[(g, w) for g, w in zip(got, want) if g != w][:2]}")
            check(summary.get("lastStableOffset") == truth["lastStableOffset"] and
                  summary.get("highWatermark") == truth["highWatermark"], f"{part}: summary {summary}")
            for a, b in ((0, 10), (7, 7), (13, 30), (22, 45), (40, 100), (20, None)):
                rng = f"{a}:{'' if b is None else b}"
                records, _, p = consume_json(["--isolation", isolation, "--offsets", rng, part])
                sub = [w for w in want if w[0] >= a and (b is None or w[0] <= b)]
                check(p.returncode == 0 and [klf_tv2_record(r) for r in records] == sub,
                      f"{part} {isolation} --offsets {rng}: {[r['offset'] for r in records]} vs Kafka's "
                      f"{[w[0] for w in sub]}")
    check(snapshot(TV2) == before, f"{TV2}: inputs modified")


def test_damage():
    """A batch that fails its CRC ends what is served; beyond the LSO it changes nothing served."""
    truth = json.load(open(os.path.join(TV2, "truth", "written.json")))
    committed = [r["offset"] for r in truth["fetchTxnCommitted"]["records"]]
    uncommitted = [r["offset"] for r in truth["fetchHighWatermark"]["records"]]
    with temp_dir("klf-consume-e2e-") as tmp:
        # Kafka's dump (dump/written/00000000000000000018.log.txt) puts the batch of offsets 22-23 at
        # byte 243 of segment 18 (107 bytes); a v2 batch's CRC-32C field is at byte 17 of it.
        copy = copy_fixture(os.path.join(TV2, "written"), os.path.join(tmp, "a"))
        seg = os.path.join(copy, "tv2-txn-0", "00000000000000000018.log")
        flip_byte(seg, 243 + 80)
        for isolation, want in (("read_committed", committed), ("read_uncommitted", uncommitted)):
            records, summary, p = consume_json(["--isolation", isolation, os.path.join(copy, "tv2-txn-0")])
            check(p.returncode == 1, f"damaged {isolation}: exit {p.returncode}, want 1")
            check([r["offset"] for r in records] == [o for o in want if o < 22],
                  f"damaged {isolation}: {[r['offset'] for r in records]}")
            check(f"{seg}: position {243 + 17}" in p.stderr, f"damaged {isolation}: stderr {p.stderr!r}")
            d = summary.get("damage") or {}
            check(d.get("file") == seg and d.get("position") == 243 + 17 and summary.get("truncatedByDamage") is True,
                  f"damaged {isolation}: summary {summary}")
            offsets, p = consume_text_offsets(["--isolation", isolation, os.path.join(copy, "tv2-txn-0")])
            check(p.returncode == 1 and offsets == [o for o in want if o < 22], f"damaged {isolation} text")
        # Damage in the first batch of segment 49: at or above the LSO (46), below the high watermark (53).
        copy = copy_fixture(os.path.join(TV2, "written"), os.path.join(tmp, "b"))
        flip_byte(os.path.join(copy, "tv2-txn-0", "00000000000000000049.log"), 70)
        records, summary, p = consume_json(["--isolation", "read_committed", os.path.join(copy, "tv2-txn-0")])
        check(p.returncode == 0 and [r["offset"] for r in records] == committed,
              f"damage beyond the LSO: exit {p.returncode}, {len(records)} records")
        records, summary, p = consume_json(["--isolation", "read_uncommitted", os.path.join(copy, "tv2-txn-0")])
        check(p.returncode == 1 and [r["offset"] for r in records] == [o for o in uncommitted if o < 49],
              f"damage below the HW: exit {p.returncode}, {[r['offset'] for r in records]}")
        # A torn tail of the last segment: Kafka's dump puts its last batch (offset 52) at byte 233 of segment
        # 49, 77 bytes long; 10 bytes cut. Routine when it was never served (the checkpointed high watermark
        # is at most what is left), lost served records when the checkpoint says 53.
        copy = copy_fixture(os.path.join(TV2, "written"), os.path.join(tmp, "c"))
        last = os.path.join(copy, "tv2-txn-0", "00000000000000000049.log")
        with open(last, "r+b") as f:
            f.truncate(233 + 77 - 10)
        records, summary, p = consume_json(["--isolation", "read_uncommitted", os.path.join(copy, "tv2-txn-0")])
        check(p.returncode == 1 and [r["offset"] for r in records] == [o for o in uncommitted if o < 52] and
              f"{last}: position 233" in p.stderr, f"torn tail below the checkpointed HW: exit {p.returncode} {p.stderr!r}")
        with open(os.path.join(copy, "replication-offset-checkpoint"), "w") as f:
            f.write("0\n1\ntv2-txn 0 50\n")
        records, summary, p = consume_json(["--isolation", "read_uncommitted", os.path.join(copy, "tv2-txn-0")])
        check(p.returncode == 0 and [r["offset"] for r in records] == [o for o in uncommitted if o < 50] and
              summary.get("highWatermark") == 50, f"torn tail above the HW: exit {p.returncode} {summary}")


def test_usage_and_unreadable():
    part = os.path.join(TV2, "written", "tv2-txn-0")
    for args in (["consume", part], ["consume", "--isolation", "serializable", part],
                 ["consume", "--isolation", "read_committed", "--offsets", "9:3", part],
                 ["consume", "--isolation", "read_committed", os.path.join(part, "00000000000000000000.log")]):
        p = process(args)
        check(p.returncode == 2, f"klf {' '.join(args)}: exit {p.returncode}, want 2")
    p = process(["consume", "--isolation", "read_committed", "--json", "/nonexistent/foo-0"])
    check(p.returncode == 3 and "/nonexistent/foo-0" in p.stderr, f"missing dir: exit {p.returncode} {p.stderr!r}")
    check(p.stdout.strip() and json.loads(p.stdout.strip().splitlines()[-1]).get("exitCode") == 3,
          "missing dir: the JSON error object on stdout")


if __name__ == "__main__":
    from klf_e2e import run_tests
    run_tests(globals())
