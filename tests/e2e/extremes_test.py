#!/usr/bin/python3
"""Extreme 64-bit values reach klf's arithmetic as Java longs, never as undefined behaviour.

Kafka computes offsets, timestamps and clocks as Java longs, which wrap. A batch's baseOffset lies
outside its CRC, so a damaged or hostile segment can hold any value there and still pass the CRC; the
clock flags (--now, --pass-interval-ms) and the retention settings take any long; a timeline's clock may
start anywhere. Every command runs on such values here and must exit with a documented code (0-3).
Under `make test SAN=1` (UBSan with -fno-sanitize-recover) a signed overflow is a sanitizer report,
which klf_e2e counts as a failure whatever the exit code.
"""
import json
import os
import struct

from klf_e2e import ORACLE, check, copy_fixture, process, snapshot, temp_dir, finish

MIN, MAX = -(2 ** 63), 2 ** 63 - 1
CLOCKS = [MIN, MIN + 1, -1, 0, MAX - 1, MAX]


def documented(args):
    p = process(args)
    check(p.returncode in (0, 1, 2, 3), f"klf {' '.join(args)}: exit {p.returncode}: {p.stderr[-500:]}")
    return p


def patch_base_offsets(log, value):
    """Sets every batch's baseOffset (bytes 0-7, outside the CRC) to `value`."""
    with open(log, "r+b") as f:
        data = bytearray(f.read())
        pos = 0
        while pos + 12 <= len(data):
            length = struct.unpack_from(">i", data, pos + 8)[0]
            struct.pack_into(">q", data, pos, value)
            if length <= 0:
                break
            pos += 12 + length
        f.seek(0)
        f.write(data)


def test_clock_flags():
    src = os.path.join(ORACLE, "b-txn", "txn-0")
    before = snapshot(src)
    with temp_dir() as tmp:
        for now in CLOCKS:
            out = os.path.join(tmp, f"out-{now}")
            documented(["compact", src, "--out", out, "--now", str(now)])
            documented(["compact", src, "--out", out + "-passes", "--now", str(now), "--passes", "3",
                        "--pass-interval-ms", str(MAX)])
            documented(["compact", src, "--out", out + "-cfg", "--now", str(now),
                        "--config", f"delete.retention.ms={MAX}", "--config", f"min.compaction.lag.ms={MAX}",
                        "--config", f"max.compaction.lag.ms={MAX}", "--config", f"producer.id.expiration.ms={MAX}"])
            documented(["lso", "--json", src, "--now", str(now)])
            documented(["lso", src, "--now", str(now), "--producer-id-expiration-ms", str(MAX)])
    check(snapshot(src) == before, "an input changed")


def test_base_offsets_outside_the_crc():
    for value in (MAX, MAX - 3, MIN, -1):
        with temp_dir() as tmp:
            logdir = os.path.join(tmp, "logs")
            part = copy_fixture(os.path.join(ORACLE, "a-keyed", "keyed-none-0"), os.path.join(logdir, "keyed-none-0"))
            healthy = copy_fixture(os.path.join(ORACLE, "a-keyed", "keyed-none-0"), os.path.join(tmp, "h", "keyed-none-0"))
            for name in sorted(os.listdir(part)):
                if name.endswith(".log"):
                    patch_base_offsets(os.path.join(part, name), value)
            before = snapshot(logdir)
            documented(["dump", "--records", "--json", part])
            documented(["dump", "--records", part])
            documented(["verify", "--json", part])
            documented(["compact", part, "--out", os.path.join(tmp, "c"), "--now", "1700172800000"])
            documented(["reindex", part, "--out", os.path.join(tmp, "r")])
            documented(["lso", "--json", part])
            documented(["diff", "--json", part, healthy])
            documented(["repair", "--salvage", part, "--out", os.path.join(tmp, "s")])
            documented(["repair", "--replica", healthy, "--target", part, "--out", os.path.join(tmp, "p")])
            check(snapshot(logdir) == before, f"baseOffset {value}: an input changed")


def test_timeline_clock_extremes():
    src = os.path.join(os.environ.get("KLF_SOURCE_DIR", "."), "fixtures", "healthy-control.json")
    with open(src) as f:
        timeline = json.load(f)
    for start in (MIN, MAX - 1000, MAX):
        for step in (1, MAX):
            t = dict(timeline)
            t["start_ms"] = start
            t["record_step_ms"] = step
            t["events"] = [dict(e) for e in timeline["events"]]
            for e in t["events"]:
                if e.get("op") == "advance":
                    e["ms"] = MAX
            with temp_dir() as tmp:
                path = os.path.join(tmp, "t.json")
                with open(path, "w") as f:
                    json.dump(t, f)
                documented(["simulate", path, "--out", os.path.join(tmp, "out")])


test_clock_flags()
test_base_offsets_outside_the_crc()
test_timeline_clock_extremes()
finish()
