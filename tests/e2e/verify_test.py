#!/usr/bin/python3
"""klf verify end to end: JSON shape, exit codes (0 clean / warnings only, 1 on an error, 2 usage, 3 unreadable),
text format, inputs byte-identical after the run. Damage is applied to copies of the kafka-oracle fixtures; the
positions come from Kafka's own dump of them (<dir>.dump.txt), not from klf."""
import json
import os
import shutil
import tempfile

from klf_e2e import ORACLE, check, finish, run
from klf_e2e import snapshot as tree_hash


def verify(*args):
    return run("verify", *args)


def verify_json(path):
    rc, out, err = verify("--json", path)
    try:
        return rc, json.loads(out)
    except ValueError:
        check(False, f"--json output of {path} is not JSON: {out[:200]!r} {err[:200]!r}")
        return rc, {"problems": []}


def batch_positions(dump_txt, segment):
    """(position, size) of each batch of `segment` in Kafka's dump."""
    out, cur = [], None
    for line in open(dump_txt):
        if line.startswith("segment "):
            cur = line.split()[1]
        elif line.startswith("batch ") and cur == segment:
            f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
            out.append((int(f["position"]), int(f["size"])))
    return out


with tempfile.TemporaryDirectory() as tmp:
    # Clean fixtures, read-only inputs: exit 0, exact JSON shape, nothing modified.
    before = tree_hash(ORACLE)
    for d in ["a-keyed", "b-txn/txn-0", "x-legacy/legacy-0", "c-compact/pass2",
              "replicas/aborted-to-committed/broker2"]:
        rc, j = verify_json(os.path.join(ORACLE, d))
        check(rc == 0, f"{d}: exit {rc}, expected 0")
        check(set(j) >= {"problems", "filesChecked", "bytesChecked"}, f"{d}: JSON keys {sorted(j)}")
        check(isinstance(j["filesChecked"], int) and j["filesChecked"] > 0, f"{d}: filesChecked")
        check(isinstance(j["bytesChecked"], int) and j["bytesChecked"] > 0, f"{d}: bytesChecked")
        for p in j["problems"]:
            check(set(p) == {"file", "position", "check", "message", "severity"}, f"{d}: problem keys {sorted(p)}")
            check(p["severity"] in ("error", "warning", "info"), f"{d}: severity {p['severity']}")
            check(p["severity"] != "error", f"{d}: unexpected error {p}")
    # Broker 2 fetched the compacted leader's log: its gaps are reported as info, not corruption.
    rc, j = verify_json(os.path.join(ORACLE, "replicas/aborted-to-committed/broker2"))
    gaps = [p for p in j["problems"] if p["check"] == "offset-gap"]
    check(gaps and all(p["severity"] == "info" for p in gaps), "broker2: offset gaps as info")
    check(tree_hash(ORACLE) == before, "verify modified the oracle fixtures")

    # A flipped payload byte: one CRC error at the batch's CRC field, exit 1, in text and JSON.
    src = os.path.join(ORACLE, "a-keyed/keyed-none-0")
    part = os.path.join(tmp, "keyed-none-0")
    shutil.copytree(src, part)
    batches = batch_positions(os.path.join(ORACLE, "a-keyed/keyed-none-0.dump.txt"), "00000000000000000014.log")
    pos, size = batches[2]
    log = os.path.join(part, "00000000000000000014.log")
    data = bytearray(open(log, "rb").read())
    data[pos + 70] ^= 0x01
    open(log, "wb").write(data)
    damaged = tree_hash(part)
    rc, j = verify_json(part)
    check(rc == 1, f"CRC flip: exit {rc}, expected 1")
    crc = [p for p in j["problems"] if p["check"] == "batch-crc"]
    check(len(crc) == 1 and crc[0]["file"].endswith("00000000000000000014.log") and crc[0]["position"] == pos + 17
          and crc[0]["severity"] == "error", f"CRC flip: {j['problems']}")
    rc, out, err = verify(part)
    check(rc == 1, "text mode exit 1")
    check(f"error   {log}:{pos + 17} batch-crc:" in out, f"text line: {out!r}")
    check("1 error" in err, f"summary on stderr: {err!r}")
    check(tree_hash(part) == damaged, "verify modified its (damaged) input")

    # Warnings only (a zero-filled tail on the active segment, a leftover .swap): exit 0.
    shutil.rmtree(part)
    shutil.copytree(src, part)
    last = os.path.join(part, "00000000000000000024.log")
    size_before = os.path.getsize(last)
    with open(last, "ab") as fh:
        fh.write(b"\0" * 65536)
    shutil.copy(os.path.join(part, "00000000000000000014.log"), os.path.join(part, "00000000000000000014.log.swap"))
    rc, j = verify_json(part)
    check(rc == 0, f"warnings only: exit {rc}")
    tails = [p for p in j["problems"] if p["check"] == "zero-tail"]
    check(len(tails) == 1 and tails[0]["position"] == size_before and tails[0]["severity"] == "warning"
          and "65536" in tails[0]["message"], f"zero tail: {tails}")
    check(any(p["check"] == "leftover-file" and p["file"].endswith(".swap") for p in j["problems"]), "leftover .swap")

    # A single file is verified too (its segment's .log and indexes).
    rc, j = verify_json(os.path.join(ORACLE, "b-txn/txn-0/00000000000000000007.txnindex"))
    check(rc == 0 and j["filesChecked"] >= 2, f"single txnindex file: exit {rc} {j.get('filesChecked')}")

    # Unreadable input: exit 3; usage error: exit 2.
    rc, _, err = verify(os.path.join(tmp, "does-not-exist"))
    check(rc == 3, f"missing path: exit {rc}")
    check("does-not-exist" in err, "missing path named on stderr")
    rc, _, _ = verify()
    check(rc == 2, f"no PATH: exit {rc}")

# Kafka 4.x, transaction version 2: every state Kafka wrote and cleaned (markers at the data's epoch + 1,
# a producer-id rollover, horizons) and every broker of its three-broker timeline (Kafka: nothing
# diverged) verify clean, no error and no warning.
from klf_e2e import FIX  # noqa: E402

K4 = os.path.join(FIX, "kafka4")
for d in [os.path.join(K4, "tv2-txn", s) for s in ("written", "cleaned-pass1", "cleaned-pass2", "cleaned-pass3")] + \
        [os.path.join(K4, "tv2-replicas", "timeline-04", b) for b in ("broker1", "broker2", "broker3")]:
    before = tree_hash(d)
    rc, j = verify_json(d)
    bad = [p for p in j["problems"] if p.get("severity") in ("error", "warning")]
    check(rc == 0 and not bad, f"{os.path.relpath(d, K4)}: exit {rc}, {bad[:3]}")
    check(tree_hash(d) == before, f"{os.path.relpath(d, K4)}: verify changed its input")

finish()
