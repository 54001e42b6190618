#!/usr/bin/python3
"""klf diff's incident window of a lost marker (issue 19), checked against the timelines' own records of
what happened, never against klf's own diff:

* Kafka's aborted-to-committed (kafka-oracle/replicas, truth.json `timeline` steps): broker2 shut down before
  the ABORT (step 8, offset 44) and started after the leader cleaned it. The window's hole holds offset 44; the
  ABORT's write time (the step's clock) lies between the timestamps of broker2's records around the hole; the
  window says broker2 was behind until at least T1 + delete.retention.ms, which is before its broker-start step;
  the outage (shutdown to start) is at least the `atLeastMs` of the delete.retention.ms prevention entry.
* Kafka's random timelines (kafka-oracle/random-replicas timeline-04, -05, -11; truth.json `divergenceTruth.
  lostRecords`, `outages`): for every lost_abort / lost_commit / hanging_transaction window, a COMMIT/ABORT of
  that producer that the truth says the broker lost lies in the hole (or, when the window names several holes,
  at or after it); a `markerOffset` is such a lost marker; the lost marker's writtenAtMs lies between the
  window's record timestamps; `behindUntilAtLeastMs` is no later than the leader's removal of that marker and
  than the broker's return; the outage lasted at least `atLeastMs`.
* The simulator's timelines (fixtures/aborted-to-committed.json, committed-to-aborted.json,
  hanging-transaction.json, `klf simulate --json` steps): the marker step's offset lies in the hole, its clock
  between the window's record timestamps, the broker's `down` step no later than the marker and its `up` step no
  earlier than `behindUntilAtLeastMs`, the outage at least delete.retention.ms long.
* Lost tombstones, on the simulator's lost-tombstone.json (and a variant where broker3's cleaner has not removed the
  tombstone yet): the tombstone's produce step offset lies in the window's hole and in its `lostRange` (or is its
  `lostOffset`, held by broker3, with that record's timestamp), the key's record was written before it, the window's
  `behindUntilAtLeastMs` is no later than the leader's pass that removed the tombstone and the broker's `up` step, and
  the outage lasted at least the prevention's `atLeastMs`.
* Kafka's random timelines lose tombstones only without a visible effect (truth.json `lostRecords`: superseded, in an
  aborted transaction, or with no older value on the broker): klf reports no lost_tombstone there, and the rule the
  window rests on holds in Kafka's truth: a tombstone its delete horizon removed left the leader at least
  delete.retention.ms after it was written, and the broker fetched its offset after that (back after the removal),
  holding no record at that offset.
* delete.retention.ms comes from --delete-retention-ms (the truth's topic config), else the sentence says it is
  not in the files; producer.id.expiration.ms is named as not preventing; text shows ISO-8601 UTC beside epoch ms;
  the JSON's existing fields are those without the window (additive only).
"""
import json
import os
import re

from klf_e2e import FIX, REPLICAS, SRC, check, finish, run, temp_dir

ORACLE = os.path.join(FIX, "kafka-oracle")
TXN_KINDS = ("lost_abort", "lost_commit", "hanging_transaction")


def windows_of(j):
    parts = j["partitions"] if "partitions" in j else [j]
    for p in parts:
        for f in p["findings"]:
            if "incidentWindow" in f:
                yield p, f


# --- aborted-to-committed: the timeline's steps -------------------------------------------------------
base = os.path.join(REPLICAS, "aborted-to-committed")
truth = json.load(open(os.path.join(base, "truth.json")))
dr = int(truth["config"]["topic foo"]["delete.retention.ms"])
steps = truth["timeline"]
abort = [s for s in steps if s["action"] == "end-txn" and "ABORT" in s.get("what", "")][0]
down = [s for s in steps if s["action"] == "broker-shutdown" and s.get("broker") == 2][0]
up = [s for s in steps if s["action"] == "broker-start" and s.get("broker") == 2][0]
dirs = [os.path.join(base, b, "foo-0") for b in ("broker1", "broker2", "broker3")]
rc, o, e = run("diff", "--json", "--delete-retention-ms", str(dr), *dirs)
j = json.loads(o)
found = list(windows_of(j))
check(len(found) == 1 and found[0][1]["kind"] == "lost_abort", f"aborted-to-committed: {[(f['kind']) for _, f in found]}")
for p, f in found:
    w = f["incidentWindow"]
    check(len(w) == 1 and w[0]["name"] == "broker2", f"aborted-to-committed: windows {w}")
    w = w[0]
    check(w["hole"][0] <= abort["offset"] <= w["hole"][1], f"hole {w['hole']} lacks the ABORT at {abort['offset']}")
    check(w["lastBefore"]["timestamp"] <= abort["clockMs"] <= w["firstAfter"]["timestamp"],
          f"ABORT written at {abort['clockMs']}, window {w['lastBefore']} .. {w['firstAfter']}")
    check(w["behindUntilAtLeastMs"] == w["fromMs"] + dr and w["behindUntilAtLeastMs"] <= up["clockMs"],
          f"behind until at least {w['behindUntilAtLeastMs']}, broker2 started at {up['clockMs']}")
    prev = {x["setting"]: x for x in f["prevention"]}
    check(prev["delete.retention.ms"]["prevents"] and prev["delete.retention.ms"]["atLeastMs"] == dr and
          up["clockMs"] - down["clockMs"] >= dr, f"prevention {prev}")
    check(not prev["producer.id.expiration.ms"]["prevents"], "producer.id.expiration.ms named as preventing")
# Additive: the findings without the two new fields are the findings of a run that has them too.
rc2, o2, _ = run("diff", "--json", *dirs)
j2 = json.loads(o2)
strip = lambda fs: [{k: v for k, v in f.items() if k not in ("incidentWindow", "prevention")} for f in fs]
check(strip(j["findings"]) == strip(j2["findings"]), "the window changed other fields")
w2 = j2["findings"][0]["incidentWindow"][0]
check(w2["deleteRetentionMs"] is None and w2["behindUntilAtLeastMs"] is None and
      "not in the files given" in w2["sentence"], f"without --delete-retention-ms: {w2}")
rc, o, e = run("diff", "--delete-retention-ms", str(dr), *dirs)
lines = [l for l in o.splitlines() if l.startswith("  incident window: ")]
check(len(lines) == 1 and re.search(r"\d{13} \(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z\)", lines[0]),
      f"text: incident window with ISO-8601 UTC beside epoch ms: {lines}")
check(any(l.startswith("  prevention: delete.retention.ms") for l in o.splitlines()), "text: prevention line")
with temp_dir("klf-incident-html-") as tmp:  # the page: the same sentences under the finding's evidence
    page = os.path.join(tmp, "a2c.html")
    rc, o, e = run("diff", "--json", "--html", page, "--delete-retention-ms", str(dr), *dirs)
    text = open(page, encoding="utf-8").read()
    check('<div class="incident"><b>incident window:</b>' in text and "prevention:" in text and
          re.search(r"\d{13} \(\d{4}-\d\d-\d\dT", text), "html: no incident window with wall-clock times")

# --- Kafka's random timelines: divergenceTruth.lostRecords and outages ---------------------------------
total = 0
for tl in ("timeline-04", "timeline-05", "timeline-11"):
    base = os.path.join(ORACLE, "random-replicas", tl)
    truth = json.load(open(os.path.join(base, "truth.json")))
    dr = int(truth["config"]["topic foo"]["delete.retention.ms"])
    outages = {o["broker"]: o for o in truth["outages"]}
    lost = [r for r in truth["divergenceTruth"]["lostRecords"] if r["kind"] in ("commit", "abort")]
    rc, o, e = run("diff", "--json", "--delete-retention-ms", str(dr),
                   *[os.path.join(base, b) for b in ("broker1", "broker2", "broker3")])
    j = json.loads(o)
    kinds = [f["kind"] for p in (j["partitions"] if "partitions" in j else [j]) for f in p["findings"]
             if f["kind"] in TXN_KINDS]
    found = list(windows_of(j))
    check(len(found) == len(kinds), f"{tl}: {len(found)} windows for {len(kinds)} transaction findings")
    for p, f in found:
        for w in f["incidentWindow"]:
            total += 1
            where = f"{tl} {f['kind']} producer {f['producerId']} on {w['name']}"
            out = outages.get(w["name"])
            if not check(out, f"{where}: no outage of {w['name']} in the truth"):
                continue
            mine = [r for r in lost if r["broker"] == w["name"] and r["producerId"] == f["producerId"]]
            lo, hi = w["hole"]
            inside = [r for r in mine if lo <= r["offset"] <= hi] if w["holesBeforeNextRecord"] == 1 else \
                [r for r in mine if r["offset"] >= lo]
            if not check(inside, f"{where}: no marker the truth says was lost in hole {w['hole']} "
                                 f"({[r['offset'] for r in mine]})"):
                continue
            if w["markerOffset"] is not None:
                check(w["markerOffset"] in [r["offset"] for r in inside], f"{where}: markerOffset {w['markerOffset']}")
            r = inside[0] if w["markerOffset"] is None else [x for x in inside if x["offset"] == w["markerOffset"]][0]
            if w["holesBeforeNextRecord"] == 1:
                check(w["lastBefore"]["timestamp"] <= r["writtenAtMs"] <= w["firstAfter"]["timestamp"],
                      f"{where}: marker written {r['writtenAtMs']} outside {w['lastBefore']}..{w['firstAfter']}")
            check(w["behindUntilAtLeastMs"] <= r["removedFromLeaderAtMs"] and
                  w["behindUntilAtLeastMs"] <= out["backAtMs"],
                  f"{where}: behind until at least {w['behindUntilAtLeastMs']}, removed {r['removedFromLeaderAtMs']}, "
                  f"back {out['backAtMs']}")
        prev = {x["setting"]: x for x in f["prevention"]}
        check(prev["delete.retention.ms"]["atLeastMs"] == dr and
              all(outages[w["name"]]["durationMs"] >= dr for w in f["incidentWindow"]),
              f"{tl}: prevention {prev['delete.retention.ms']}")
check(total >= 4, f"only {total} windows checked")
print(f"{total} incident windows checked against the random timelines' truth")

# --- the simulator's timelines: its own steps ---------------------------------------------------------
with temp_dir("klf-incident-sim-") as tmp:
    sim_windows = 0
    for name in ("aborted-to-committed", "committed-to-aborted", "hanging-transaction"):
        tl = os.path.join(SRC, "fixtures", name + ".json")
        dr = json.load(open(tl))["config"]["delete.retention.ms"]
        out = os.path.join(tmp, name)
        rc, o, e = run("simulate", "--json", tl, "--out", out)
        steps = json.loads(o)["steps"]
        parts = [os.path.join(out, f"broker{b}", "foo-0") for b in (1, 2, 3)]
        rc, o, e = run("diff", "--json", "--delete-retention-ms", str(dr), *parts)
        j = json.loads(o)
        for p, f in windows_of(j):
            for w in f["incidentWindow"]:
                sim_windows += 1
                broker = int(w["name"].replace("broker", ""))
                where = f"simulate {name}: {f['kind']} on {w['name']}"
                down = [s for s in steps if s["op"] == "down" and s["detail"]["broker"] == broker]
                up = [s for s in steps if s["op"] == "up" and s["detail"]["broker"] == broker]
                markers = [s for s in steps if s["op"] in ("commit", "abort") and down and up and
                           down[0]["step"] < s["step"] < up[0]["step"] and
                           w["hole"][0] <= s["detail"]["markerOffset"] <= w["hole"][1]]
                if not check(down and up and markers, f"{where}: no marker step in hole {w['hole']}: {down} {up}"):
                    continue
                m = markers[0]
                check(w["lastBefore"]["timestamp"] <= m["clockMs"] <= w["firstAfter"]["timestamp"],
                      f"{where}: marker at {m['clockMs']} outside {w['lastBefore']}..{w['firstAfter']}")
                check(down[0]["clockMs"] <= m["clockMs"] and w["behindUntilAtLeastMs"] <= up[0]["clockMs"] and
                      up[0]["clockMs"] - down[0]["clockMs"] >= dr,
                      f"{where}: down {down[0]['clockMs']}, up {up[0]['clockMs']}, behind until {w['behindUntilAtLeastMs']}")
    check(sim_windows >= 3, f"simulator: {sim_windows} windows")
    print(f"{sim_windows} incident windows checked against the simulator's steps")

# --- lost tombstones: the simulator's lost-tombstone timeline, and a variant where broker3 still holds it -------------
def tombstone_windows(j):
    return [(f, w) for _, f in windows_of(j) if f["kind"] == "lost_tombstone" for w in f["incidentWindow"]]


with temp_dir("klf-incident-tomb-") as tmp:
    base_tl = json.load(open(os.path.join(SRC, "fixtures", "lost-tombstone.json")))
    dr = base_tl["config"]["delete.retention.ms"]
    variant = json.loads(json.dumps(base_tl))
    cleans = [e for e in variant["events"] if e["op"] == "clean"]
    cleans[2]["brokers"] = [1]  # the pass past the horizon runs on the leader only
    for e in cleans[3:]:
        e["brokers"] = [1, 2]  # broker3 never cleans the tombstone away
    variant_path = os.path.join(tmp, "lost-tombstone-held.json")
    json.dump(variant, open(variant_path, "w"))
    tomb_windows = 0
    for name, tl, held in (("lost-tombstone", os.path.join(SRC, "fixtures", "lost-tombstone.json"), False),
                           ("lost-tombstone-held", variant_path, True)):
        out = os.path.join(tmp, name)
        rc, o, e = run("simulate", "--json", tl, "--out", out)
        steps = json.loads(o)["steps"]
        tomb = [s for s in steps if s["op"] == "produce" and "<tombstone>" in s["text"]][0]
        t_off = tomb["detail"]["firstOffset"]
        down = [s for s in steps if s["op"] == "down" and s["detail"]["broker"] == 2][0]
        up = [s for s in steps if s["op"] == "up" and s["detail"]["broker"] == 2][0]
        removed = [s for s in steps if s["op"] == "clean" and s["detail"].get("broker") == 1 and
                   s["detail"].get("tombstonesRemoved", 0) > 0 and s["step"] > tomb["step"]][0]
        parts = [os.path.join(out, f"broker{b}", "foo-0") for b in (1, 2, 3)]
        rc, o, e = run("diff", "--json", "--delete-retention-ms", str(dr), *parts)
        found = tombstone_windows(json.loads(o))
        if not check(len(found) == 1 and found[0][1]["name"] == "broker2", f"{name}: tombstone windows {found}"):
            continue
        f, w = found[0]
        tomb_windows += 1
        where = f"simulate {name}"
        check(w["lost"] == "tombstone" and w["hole"][0] <= t_off <= w["hole"][1],
              f"{where}: the tombstone at {t_off} is not in hole {w['hole']}")
        check(w["keyRecord"]["offset"] == f["offsets"][0] and w["keyRecord"]["timestamp"] <= tomb["clockMs"],
              f"{where}: key record {w['keyRecord']} vs the tombstone written at {tomb['clockMs']}")
        check(w["lastBefore"]["timestamp"] <= tomb["clockMs"] <= w["firstAfter"]["timestamp"],
              f"{where}: tombstone written {tomb['clockMs']} outside {w['lastBefore']}..{w['firstAfter']}")
        if held:
            check(w["lostOffset"] == t_off and w["lostOn"].endswith("broker3/foo-0") and
                  abs(w["lostTimestamp"] - tomb["clockMs"]) <= 1000,
                  f"{where}: lostOffset {w['lostOffset']} on {w['lostOn']} at {w['lostTimestamp']}")
            check(w["behindUntilAtLeastMs"] == w["lostTimestamp"] + dr, f"{where}: behind until {w['behindUntilAtLeastMs']}")
        else:
            check(w["lostOffset"] is None and w["lostRange"][0] <= t_off <= w["lostRange"][1],
                  f"{where}: the tombstone at {t_off} is not in lostRange {w['lostRange']}")
            check(w["behindUntilAtLeastMs"] == w["keyRecord"]["timestamp"] + dr,
                  f"{where}: behind until {w['behindUntilAtLeastMs']}")
        check(w["behindUntilAtLeastMs"] <= removed["clockMs"] and w["behindUntilAtLeastMs"] <= up["clockMs"],
              f"{where}: behind until at least {w['behindUntilAtLeastMs']}, leader removed it at {removed['clockMs']}, "
              f"broker2 up at {up['clockMs']}")
        prev = {x["setting"]: x for x in f["prevention"]}
        check(list(prev) == ["delete.retention.ms"] and prev["delete.retention.ms"]["atLeastMs"] == dr and
              up["clockMs"] - down["clockMs"] >= dr, f"{where}: prevention {prev}")
        rc, o, e = run("diff", "--json", *parts)
        w2 = tombstone_windows(json.loads(o))[0][1]
        check(w2["behindUntilAtLeastMs"] is None and "not in the files given" in w2["sentence"],
              f"{where}: without --delete-retention-ms: {w2['sentence']}")
        rc, o, e = run("diff", "--delete-retention-ms", str(dr), *parts)
        check(any(l.startswith("  incident window: broker2 never fetched the tombstone") and
                  re.search(r"\d{13} \(\d{4}-\d\d-\d\dT", l) for l in o.splitlines()),
              f"{where}: text incident window with wall-clock times")
    check(tomb_windows == 2, f"simulator: {tomb_windows} tombstone windows")
    print(f"{tomb_windows} tombstone incident windows checked against the simulator's steps")

# --- Kafka's random timelines: lost tombstones without a visible effect, and the rule the window rests on ---------
horizon_checked = 0
for tl in ("timeline-04", "timeline-05", "timeline-11"):
    base = os.path.join(ORACLE, "random-replicas", tl)
    truth = json.load(open(os.path.join(base, "truth.json")))
    dr = int(truth["config"]["topic foo"]["delete.retention.ms"])
    tombs = [r for r in truth["divergenceTruth"]["lostRecords"] if r["kind"] == "tombstone"]
    check(tombs and not truth["divergenceTruth"]["staleKeys"] and
          all(r["visibleEffect"].startswith("none") for r in tombs), f"{tl}: the truth's lost tombstones changed nothing")
    rc, o, e = run("diff", "--json", "--delete-retention-ms", str(dr),
                   *[os.path.join(base, b) for b in ("broker1", "broker2", "broker3")])
    j = json.loads(o)
    kinds = [f["kind"] for p in (j["partitions"] if "partitions" in j else [j]) for f in p["findings"]]
    check("lost_tombstone" not in kinds, f"{tl}: klf reports a lost tombstone Kafka says changed nothing: {kinds}")
    rc, o, e = run("dump", "--json", "--records", os.path.join(base, "broker2", "foo-0"))
    held = {r["offset"] for l in o.splitlines() if l.startswith("{") for r in json.loads(l).get("records", [])}
    check(len(held) > 10, f"{tl}: broker2's records read: {len(held)}")
    for r in tombs:
        check(r["offset"] not in held, f"{tl}: broker2 holds the tombstone at {r['offset']} that Kafka says it lost")
        if r["leaderRemovalReason"].startswith("delete horizon passed"):
            horizon_checked += 1
            check(r["removedFromLeaderAtMs"] >= r["writtenAtMs"] + dr and
                  r["brokerBackAtMs"] >= r["removedFromLeaderAtMs"],
                  f"{tl}: tombstone {r['offset']} written {r['writtenAtMs']}, removed {r['removedFromLeaderAtMs']}, "
                  f"broker back {r['brokerBackAtMs']}")
check(horizon_checked >= 3, f"only {horizon_checked} horizon-removed tombstones in the truth")
print(f"{horizon_checked} Kafka tombstones removed by their horizon: removed >= written + delete.retention.ms")

finish()
