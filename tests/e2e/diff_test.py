#!/usr/bin/python3
"""klf diff end to end: Kafka's own three-replica sets (kafka-oracle/replicas, truth.json) give
exactly the findings Kafka's timeline implies, real brokers' replicas give lag at most, an unrelated
cluster's logs are called unrelated, the JSON has the cli.md shape, exit codes follow cli.md, inputs
stay untouched, and the --html page is self-contained and shows the findings in headless Chromium."""
import json
import os
import shutil
import subprocess

from klf_e2e import KLF, REAL, REPLICAS, SRC, check, fail, finish, run, snapshot, temp_dir


def klf(*args):
    return run("diff", *args)


def brokers(scenario):
    base = os.path.join(REPLICAS, scenario)
    return [os.path.join(base, b, "foo-0") for b in ("broker1", "broker2", "broker3")]


# --- Kafka's aborted-to-committed: one lost_abort, producer 2000, offset 43, broker2 ---------------
a2c = brokers("aborted-to-committed")
truth = json.load(open(os.path.join(REPLICAS, "aborted-to-committed", "truth.json")))
before = snapshot(os.path.join(REPLICAS, "aborted-to-committed"))
rc, out, err = klf("--json", *a2c)
check(rc == 1, f"aborted-to-committed: exit {rc}, want 1 ({err})")
j = json.loads(out)
check(j["partition"] == truth["topicPartition"], f"partition {j['partition']}")
check([r["path"] for r in j["replicas"]] == a2c, "replica paths")
for r, name in zip(j["replicas"], ("broker1", "broker2", "broker3")):
    t = truth["brokers"][name]
    for field in ("logStartOffset", "logEndOffset", "lastStableOffset", "cleanerCheckpoint", "highWatermark"):
        check(r[field] == t[field], f"{name} {field}: {r[field]} != Kafka's {t[field]}")
    check(r["readCommittedRecords"] == len(t["readCommitted"]), f"{name} read_committed count")
    check(r["liveKeys"] == len(t["finalKeyValues"]), f"{name} live keys")
check(len(j["findings"]) == 1, f"want exactly one finding, got {json.dumps(j['findings'], indent=1)}")
if j["findings"]:
    f = j["findings"][0]
    for field in ("kind", "key", "offsets", "producerId", "producerEpoch", "affectedReplicas", "healthyReplicas",
                  "evidence", "impact"):
        check(field in f, f"finding lacks {field}")
    check(f["kind"] == "lost_abort", f"kind {f['kind']}")
    check(f["producerId"] == 2000 and f["producerEpoch"] == 0, "producer 2000 epoch 0")
    check(f["offsets"][0] == truth["keyOffsets"]["poison (T1 data)"] == 43, f"offsets {f['offsets']}")
    check(f["offsets"][1] == truth["keyOffsets"]["T2 COMMIT"], f"offsets {f['offsets']}")
    check(f["key"] == "poison", f"key {f['key']}")
    check(f["affectedReplicas"] == [a2c[1]], f"affected {f['affectedReplicas']}")
    check(f["healthyReplicas"] == [a2c[0], a2c[2]], f"healthy {f['healthyReplicas']}")
    check("43" in f["evidence"] and "46" in f["evidence"], f"evidence names the offsets: {f['evidence']}")

rc, out, err = klf("--json", "--bytes", "hex", *a2c)
check(json.loads(out)["findings"][0]["key"] == b"poison".hex(), "--bytes hex key")
# Evidence sentences follow --bytes too: the poison record's key and value as hex, not as text.
ev = json.loads(out)["findings"][0]["evidence"]
check(f"{b'poison'.hex()}={b'SHOULD_NOT_SEE_THIS'.hex()}" in ev and "poison=" not in ev, f"--bytes hex evidence: {ev}")
rc, out, err = klf(*a2c)
check(rc == 1 and "LOST_ABORT" in out and "broker2" in out and "poison=SHOULD_NOT_SEE_THIS" in out,
      f"text output names the lost abort: {out}")
check(snapshot(os.path.join(REPLICAS, "aborted-to-committed")) == before, "inputs modified")

# --- the healthy control: nothing ----------------------------------------------------------------
rc, out, err = klf("--json", *brokers("lost-tombstone-healthy-control"))
check(rc == 0, f"healthy control exit {rc}")
check(json.loads(out)["findings"] == [], f"healthy control findings: {out}")

# --- real brokers' replicas: lag at most ---------------------------------------------------------
for base, names in (("cesaralcancio__study-kafka/data", ["kafka1", "kafka2", "kafka3", "kafka4", "kafka5"]),
                    ("ducphongphung__BigData_VietStock/data", ["kafka1", "kafka2", "kafka3"]),
                    ("hiage__kafka-raft/data", ["kafka1", "kafka2", "kafka3"]),
                    ("greenlemonT__kafka-temp/data", ["kafka1", "kafka2", "kafka3"])):
    dirs = [os.path.join(REAL, base, n) for n in names]
    rc, out, err = klf("--json", *dirs)
    check(rc == 0, f"{base}: exit {rc} ({err})")
    j = json.loads(out)
    check(len(j["partitions"]) > 0, f"{base}: no partition compared")
    kinds = {f["kind"] for f in j["findings"]}
    check(kinds <= {"missing_range"}, f"{base}: {kinds}")
    if base.startswith("greenlemonT") or base.startswith("hiage"):
        # Their metadata logs differ in length: reported as lag of the shorter ones.
        lag = [f for f in j["findings"] if f["partition"] == "__cluster_metadata-0"]
        check(len(lag) >= 1, f"{base}: metadata log lag not reported")

# data/kafka is a different single-node cluster: unrelated, never lost markers.
g = os.path.join(REAL, "greenlemonT__kafka-temp/data")
rc, out, err = klf("--json", os.path.join(g, "kafka"), os.path.join(g, "kafka1"))
check(rc == 1, f"unrelated: exit {rc}")
j = json.loads(out)
kinds = {f["kind"] for f in j["findings"]}
check(kinds == {"unrelated_logs"}, f"unrelated: {kinds}")
rc, out, err = klf(os.path.join(g, "kafka", "__cluster_metadata-0"), os.path.join(g, "kafka1", "__cluster_metadata-0"))
check(rc == 1 and "UNRELATED_LOGS" in out, f"unrelated metadata logs: {out}")

# --- the simulator's scenarios (fixtures/<scenario>.json, `klf simulate`): each gives exactly the finding
# it is named after and no other divergence when replicas compact alone, and nothing when coordinated ----
SCENARIOS = {"lost-tombstone": "lost_tombstone", "aborted-to-committed": "lost_abort",
             "committed-to-aborted": "lost_commit", "hanging-transaction": "hanging_transaction",
             "healthy-control": None}
has_simulate = any(line.split()[:1] == ["simulate"] for line in run("--help")[1].splitlines())
if not has_simulate:
    print("SKIP: klf simulate is not in this binary; simulator scenarios not diffed")
for scenario, kind in SCENARIOS.items():
    timeline = os.path.join(SRC, "fixtures", scenario + ".json")
    if not has_simulate or not os.path.exists(timeline):
        continue
    for mode in ("uncoordinated", "coordinated"):
        with temp_dir("klf-diff-sim-") as sim:
            out_dir = os.path.join(sim, "out")
            rc, _, err = run("simulate", timeline, "--out", out_dir, "--mode", mode)
            if rc not in (0, 1):
                fail(f"simulate {scenario} {mode}: exit {rc} {err[-300:]}")
                continue
            dirs = sorted(os.path.join(out_dir, b, "foo-0") for b in os.listdir(out_dir)
                          if os.path.isdir(os.path.join(out_dir, b, "foo-0")))
            rc, out, err = klf("--json", *dirs)
            found = [f for f in json.loads(out)["findings"] if f["kind"] != "missing_range"]
            want = [kind] if kind and mode == "uncoordinated" else []
            check([f["kind"] for f in found] == want,
                  f"simulated {scenario} ({mode}): want {want}, got {[(f['kind'], f['evidence']) for f in found]}")
            check(rc == (1 if want else 0), f"simulated {scenario} ({mode}): exit {rc}")

# --- usage and unreadable inputs -----------------------------------------------------------------
rc, out, err = klf(a2c[0])
check(rc == 2, f"one replica: exit {rc}")
rc, out, err = klf(a2c[0], "/nonexistent/foo-0")
check(rc == 3, f"missing replica: exit {rc}")
# A partition directory among log directories names the partition to take from them (one PATH rule
# for diff, lso and repair: cli/partition_paths.h): the same verdict as the two partition directories.
rc, out, err = klf("--json", a2c[0], os.path.dirname(a2c[1]))
rc2, out2, err2 = klf("--json", a2c[0], a2c[1])
check(rc == rc2 and [f["kind"] for f in json.loads(out)["findings"]] == [f["kind"] for f in json.loads(out2)["findings"]],
      f"partition dir mixed with a log dir: exit {rc} vs {rc2}")
rc, out, err = klf(a2c[0], a2c[0])
check(rc == 2 and "same directory" in err, f"the same replica twice: exit {rc} {err}")

# --- the HTML report -----------------------------------------------------------------------------
with temp_dir("klf-diff-e2e-") as tmp:
    html = os.path.join(tmp, "report.html")
    rc, out, err = klf("--html", html, *a2c)
    check(rc == 1 and os.path.exists(html), f"--html: exit {rc} {err}")
    page = open(html, encoding="utf-8").read()
    check("lost_abort" in page and "broker2" in page and "poison" in page, "page names the finding")
    for bad in ("src=\"http", "href=\"http", "src='http", "@import", "url(http"):
        check(bad not in page, f"page fetches from the network: {bad}")
    check("<svg" in page and "<style>" in page and "<script>" in page, "inline SVG, CSS, JS")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("SKIP: chromium not installed (scripts/install-deps.sh installs it); HTML not rendered")
    else:
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--user-data-dir=" + os.path.join(tmp, "profile")]
        p = subprocess.run([chromium, *flags, "--dump-dom", "file://" + html], capture_output=True, text=True,
                           timeout=120)
        dom = p.stdout
        check(p.returncode == 0, f"chromium --dump-dom exit {p.returncode}: {p.stderr[-500:]}")
        check('class="finding divergence"' in dom and "lost_abort" in dom and "finding-band" in dom,
              "rendered DOM shows the finding row and its timeline band")
        shot = os.path.join(tmp, "report.png")
        p = subprocess.run([chromium, *flags, "--window-size=1400,900", "--screenshot=" + shot, "file://" + html],
                           capture_output=True, text=True, timeout=120)
        check(os.path.exists(shot) and open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
              f"screenshot not written: {p.stderr[-500:]}")
        if os.path.exists(shot):
            keep = os.path.join(os.path.dirname(KLF), "diff-report-screenshot.png")
            shutil.copyfile(shot, keep)
            print("screenshot:", keep)

finish()
