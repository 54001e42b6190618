#!/usr/bin/python3
"""klf repair --salvage end to end, on copies of directories Kafka wrote (kafka-oracle a-keyed/keyed-none-0
and b-txn/txn-0) damaged the ways the C++ damage corpus does (tests/support/damage_corpus.h): a flipped
CRC-covered byte, a cut inside a batch, a lying length, a zero-filled tail, a flipped baseOffset or
partitionLeaderEpoch (outside the CRC), a maxTimestamp rewritten under a recomputed CRC, a segment
renamed below the one before it, and a damaged index only.

For each: `klf repair --salvage DIR --out OUT --json` exits 1 when it dropped something (0 when the .log
files were intact), the first drop starts at the damaged batch (its position from Kafka's dump, the
<dir>.dump.txt beside the fixture), every batch before it is in OUT byte for byte, `klf verify --json OUT`
exits 0 with no error or warning, and the input is untouched."""
import json
import os
import re

from klf_e2e import ORACLE, check, copy_fixture, finish, non_info, run, snapshot, temp_dir


def kafka_batches(dump_txt):
    """{segment file: [(position, size, baseOffset, lastOffset), ...]} from Kafka's dump."""
    out, seg = {}, None
    for line in open(dump_txt, encoding="utf-8"):
        m = re.match(r"segment (\S+) ", line)
        if m:
            seg = m.group(1)
            out[seg] = []
            continue
        if line.startswith("batch ") and seg:
            f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
            out[seg].append((int(f["position"]), int(f["size"]), int(f["baseOffset"]), int(f["lastOffset"])))
    return out


def crc32c(data):
    # CRC-32C (Castagnoli, reflected 0x82F63B78): Python's standard library has no CRC-32C.
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def flip(data, at, mask=0xFF):
    b = bytearray(data)
    b[at] ^= mask
    return bytes(b)


def put(data, at, value, width):
    b = bytearray(data)
    b[at:at + width] = value.to_bytes(width, "big", signed=value < 0)
    return bytes(b)


def rewrite_under_crc(data, pos, size, field, value, width):
    b = put(data, pos + field, value, width)
    return put(b, pos + 17, crc32c(b[pos + 21:pos + size]), 4)


def cases(segs):
    logs = sorted(segs)
    first, mid, last = logs[0], logs[len(logs) // 2], logs[-1]
    p, s, base, lastoff = segs[mid][1]  # the middle segment's second batch
    p0, s0, _, _ = segs[first][0]
    p1, s1, _, _ = segs[first][1]
    yield "crc-byte", mid, lambda d: flip(d, p + 40), (mid, p)
    yield "cut-mid-batch", mid, lambda d: d[:p + s // 2], (mid, p)
    yield "lying-length", first, lambda d: put(d, p1 + 8, s1 - 12 + 100, 4), (first, p1)
    yield "zero-tail", last, lambda d: d + b"\0" * 4096, (last, None)
    yield "base-offset", mid, lambda d: flip(d, p + 7), (mid, p)
    yield "epoch-huge", mid, lambda d: flip(d, p + 13), (mid, p)
    yield "epoch-negative", mid, lambda d: flip(d, p + 12), (mid, p)
    yield "max-timestamp", first, lambda d: rewrite_under_crc(
        d, p0, s0, 35, int.from_bytes(d[p0 + 35:p0 + 43], "big") - 500, 8), (first, p0)
    yield "index-only", first.replace(".log", ".index"), lambda d: put(d, 4, 100000, 4) if len(d) >= 8 else d, None


with temp_dir("klf-salvage-e2e-") as tmp:
    for fixture in ("a-keyed/keyed-none-0", "b-txn/txn-0"):
        src = os.path.join(ORACLE, fixture)
        segs = kafka_batches(src + ".dump.txt")
        name = os.path.basename(src)
        for case, file, damage, where in cases(segs):
            label = f"{fixture} {case}"
            work = os.path.join(tmp, fixture.replace("/", "_") + "-" + case)
            d = copy_fixture(src, os.path.join(work, "in", name))
            path = os.path.join(d, file)
            if not os.path.exists(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            with open(path, "wb") as f:
                f.write(damage(data))
            before = snapshot(d)
            out = os.path.join(work, "out")
            rc, o, e = run("repair", "--salvage", d, "--out", out, "--json")
            check(snapshot(d) == before, f"{label}: salvage modified its input")
            if not check(rc in (0, 1) and o, f"{label}: salvage exit {rc}: {e}"):
                continue
            r = json.loads(o)
            drops = r["dropped"]
            check(rc == (1 if drops else 0), f"{label}: exit {rc} with {len(drops)} drops")
            part = r["out"]
            # The copy verifies clean.
            vrc, vo, ve = run("verify", "--json", part)
            v = json.loads(vo) if vo.strip() else {"problems": [{"severity": "error", "message": ve}]}
            bad = non_info(v["problems"])
            check(vrc == 0 and not bad, f"{label}: verify of the salvaged copy: exit {vrc} {bad[:3]}")
            if where is None:
                check(not drops, f"{label}: dropped {drops} although every .log batch is intact")
                continue
            seg, pos = where
            if pos is None:
                pos = len(data)  # bytes added after the last batch
            check(drops and os.path.basename(drops[0]["file"]) == seg and drops[0]["position"] == pos
                  and not drops[0]["wholeSegment"],
                  f"{label}: first drop {drops[:1]}, want {seg} from {pos} (Kafka's batch position)")
            # Everything before the damaged batch is kept byte for byte; later segments are deleted.
            for log in sorted(segs):
                kept = os.path.join(part, log)
                with open(os.path.join(src, log), "rb") as f:
                    orig = f.read()
                if log < seg:
                    check(os.path.exists(kept) and open(kept, "rb").read() == orig, f"{label}: {log} changed")
                elif log == seg:
                    check(os.path.exists(kept) and open(kept, "rb").read() == orig[:pos],
                          f"{label}: {log} is not the {pos} bytes before the damage")
                else:
                    check(not os.path.exists(kept), f"{label}: {log} kept after a truncated segment")
                    check(any(os.path.basename(x["file"]) == log and x["wholeSegment"] for x in drops),
                          f"{label}: deleted {log} not reported")
            last_kept = [b for log in sorted(segs) if log < seg for b in segs[log]]
            last_kept += [b for b in segs[seg] if b[0] + b[1] <= pos]
            if last_kept:
                check(r["logEndOffset"] == last_kept[-1][3] + 1, f"{label}: log end {r['logEndOffset']}")

    # A segment renamed below the one before it: its name conflicts with the log, it goes whole.
    src = os.path.join(ORACLE, "a-keyed/keyed-none-0")
    d = copy_fixture(src, os.path.join(tmp, "rename", "in", "keyed-none-0"))
    for ext in (".log", ".index", ".timeindex"):
        os.rename(os.path.join(d, "00000000000000000024" + ext), os.path.join(d, "00000000000000000010" + ext))
    rc, o, e = run("repair", "--salvage", d, "--out", os.path.join(tmp, "rename", "out"), "--json")
    check(rc == 1, f"rename: exit {rc} {e}")
    if o.strip():
        r = json.loads(o)
        check(r["dropped"] and r["dropped"][0]["position"] == 0, f"rename: drops {r['dropped']}")
        vrc, vo, ve = run("verify", "--json", r["out"])
        check(vrc == 0 and not non_info(json.loads(vo)["problems"]), f"rename: verify exit {vrc} {vo[:300]}")

finish()
