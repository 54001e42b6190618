#!/usr/bin/python3
"""Wall-clock times in text and HTML (issue 19 item 6): every epoch-ms value that is a wall-clock time is
followed by its ISO-8601 UTC time, `1700000000000 (2023-11-14T22:13:20.000Z)`, computed here with Python's
datetime, independently of klf; JSON never changes: its integers stay integers and its sentences keep the
raw numbers. Values that are no wall-clock time (-1 "no timestamp") print the raw number only.

* klf lso: the open-transaction lines and the explanation (Kafka's random timeline-05, broker2 pinned);
* klf diff: the transaction.max.timeout.ms fact (timeline-11 with a 1 s time-out) in text and HTML, raw in
  JSON, also when one run writes both;
* klf simulate: the clock of every step; klf compact --explain: the delete horizons it stamps;
* klf txn describe: lastUpdate; klf consume: record timestamps (legacy magic 0: -1, raw only).
* klf dump's text stays kafka-dump-log.sh's lines (dump-log-segments.md: same line formats, so existing
  scripts keep working): no ISO time there.
"""
import datetime
import json
import os
import re

from klf_e2e import FIX, ORACLE, SRC, check, finish, run, temp_dir

RANDOM = os.path.join(ORACLE, "random-replicas")


def iso(ms):
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def check_times(where, text, pattern, min_count=1):
    """Every match of `pattern` (group 1: the number) is followed by its ISO time; at least min_count."""
    n = 0
    for m in re.finditer(pattern + r"(?: \(([0-9T:.\-Z]+)\))?", text):
        ms = int(m.group(1))
        want = iso(ms) if 0 <= ms < 253402300800000 else None
        check(m.group(2) == want, f"{where}: {m.group(0)!r}: want {want}")
        n += 1
    check(n >= min_count, f"{where}: {n} times found, want at least {min_count}")


ISO_ANYWHERE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")

# --- lso --------------------------------------------------------------------------------------
part = os.path.join(RANDOM, "timeline-05", "broker2", "foo-0")
rc, text, _ = run("lso", part)
check(rc == 1, f"lso {part}: exit {rc}")
check_times("lso text", text, r"last timestamp (-?\d+)", 3)
check_times("lso text", text, r"idle [^;]* at (-?\d+)", 1)
rc, out, _ = run("lso", "--json", part)
j = json.loads(out)
check(not ISO_ANYWHERE.search(out), "lso --json: an ISO time in the JSON")
for t in j["openTransactions"]:
    check(isinstance(t["lastTimestamp"], int) and f"last timestamp {t['lastTimestamp']} ({iso(t['lastTimestamp'])})" in text,
          f"lso: open transaction {t['producerId']}'s last timestamp in the text")

# --- diff -------------------------------------------------------------------------------------
dirs = [os.path.join(RANDOM, "timeline-11", b, "foo-0") for b in ("broker1", "broker2", "broker3")]
args = ["--transaction-max-timeout-ms", "1000", *dirs]
rc, text, _ = run("diff", *args)
check_times("diff text", text, r"\(timestamp (-?\d+)", 2)
rc, out, _ = run("diff", "--json", *args)
check("(timestamp " in out and not ISO_ANYWHERE.search(out), "diff --json: raw numbers in the facts, no ISO time")
with temp_dir("klf-wall-clock-") as tmp:
    html = os.path.join(tmp, "r.html")
    rc, out2, _ = run("diff", "--json", "--html", html, *args)
    check(out2 == out, "diff --json --html: the JSON differs from --json alone")
    page = open(html, encoding="utf-8").read()
    check_times("diff HTML", page, r"\(timestamp (-?\d+)", 2)

    # --- simulate -------------------------------------------------------------------------------
    rc, text, err = run("simulate", os.path.join(SRC, "fixtures", "hanging-transaction.json"), "--out",
                        os.path.join(tmp, "sim"))
    check(rc in (0, 1), f"simulate: exit {rc} {err}")
    steps = [l for l in text.splitlines() if re.match(r"^\s+\d+ \d+ ", l)]
    check(len(steps) > 10, f"simulate: {len(steps)} step lines")
    for l in steps:
        check_times("simulate step", l, r"^\s+\d+ (\d+)")
    check_times("simulate header", text.splitlines()[0], r"clock (\d+)")

    # --- compact --explain ----------------------------------------------------------------------
    rc, text, err = run("compact", os.path.join(ORACLE, "c-compact", "pass0-before", "compact-demo-0"), "--out",
                        os.path.join(tmp, "c"), "--now", "1700000600000", "--explain")
    check(rc == 0, f"compact: exit {rc} {err}")
    check_times("compact --explain", text, r"deleteHorizonMs=(-?\d+)", 1)

# --- txn describe -------------------------------------------------------------------------------
rc, text, err = run("txn", "describe", os.path.join(FIX, "kafka4", "txn-state", "written"))
check(rc in (0, 1), f"txn describe: exit {rc} {err}")
check_times("txn describe", text, r"lastUpdate (-?\d+)", 5)

# --- consume ------------------------------------------------------------------------------------
rc, text, _ = run("consume", "--isolation", "read_uncommitted", os.path.join(ORACLE, "x-legacy", "legacy-0"))
check(rc == 0, f"consume legacy: exit {rc}")
check_times("consume legacy", text, r"(?:CreateTime|LogAppendTime|NoTimestampType): (-?\d+)", 10)
check("NoTimestampType: -1 key:" in text, "consume: magic 0's -1 prints raw, without an ISO time")

# --- dump's text stays kafka-dump-log's -----------------------------------------------------------
rc, text, _ = run("dump", "--records", os.path.join(ORACLE, "b-txn", "txn-0"))
check(rc == 0 and not ISO_ANYWHERE.search(text), "dump text: an ISO time in kafka-dump-log's lines")

finish()
