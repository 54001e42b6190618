#!/usr/bin/python3
"""klf diff --html rendered in headless Chromium at 1400 px: the report of a diverged set (Kafka's
aborted-to-committed), a healthy one (lost-tombstone-healthy-control), one partition with several
findings (random-replicas timeline-11) and a log-dir diff of a real cluster (several partitions, empty
ones, lag). From the element boxes of the rendered page: no two texts of a timeline overlap and every text
stays inside its timeline; the offset ticks are round (1-2-5 steps); the time axis is ISO-8601 UTC; every
finding of `klf diff --json` on the same input has its row in the findings table and a label on each
affected replica's bar. Also: two hanging transactions with a pinned LSO (timeline-05) and two unrelated
clusters' log dirs (52 unrelated_logs findings, which have no offsets). KLF_DIFF_HTML_ALL=1 adds three
more sets (a Kafka 4 timeline, two more real clusters' log dirs). The page is self-contained (nothing fetched) and opens with the overview.

`klf triage --html` (issue 19) over the log dirs of timeline-11, timeline-05, real-hiage and real-unrelated: the
overview names the version, the command line, every input, the generation time (ISO-8601 UTC) and the counts of
`klf triage --json`; the ranked table has one row per partition of the JSON that is not a single copy with
nothing found, in the JSON's order, each linking to its section; healthy partitions are one count line; in the
rendered page no two timeline texts overlap or leave their timeline, and every finding of the triage JSON has its
row (kind, offsets, partition) in its partition's section.

Boxes come without a browser driver: the page is copied, this test's own <script> is appended (it opens
every <details>, then writes getBoundingClientRect() of every timeline text into <pre id="test-boxes">),
and `chromium --dump-dom` prints the DOM after the load. Screenshots are kept next to the klf binary.
Without chromium the rendering checks are skipped with a message."""
import html
import json
import math
import os
import re
import shutil
import subprocess

from klf_e2e import FIX, KLF, REAL, REPLICAS, check, finish, run, snapshot, temp_dir

ORACLE = os.path.join(FIX, "kafka-oracle")
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$")

CASES = {
    # name: (inputs, want exit, want findings in total, want a time axis)
    "aborted-to-committed": ([os.path.join(REPLICAS, "aborted-to-committed", b, "foo-0")
                              for b in ("broker1", "broker2", "broker3")], 1, 1, True),
    "healthy-control": ([os.path.join(REPLICAS, "lost-tombstone-healthy-control", b, "foo-0")
                         for b in ("broker1", "broker2", "broker3")], 0, 0, True),
    "timeline-11": ([os.path.join(ORACLE, "random-replicas", "timeline-11", b) for b in ("broker1", "broker2", "broker3")],
                    1, 3, True),
    "real-hiage": ([os.path.join(REAL, "hiage__kafka-raft", "data", b) for b in ("kafka1", "kafka2", "kafka3")],
                   0, 2, True),
    # two hanging transactions and a pinned LSO on one replica
    "timeline-05": ([os.path.join(ORACLE, "random-replicas", "timeline-05", b) for b in ("broker1", "broker2", "broker3")],
                    1, 2, True),
    # 52 partitions of two different clusters: unrelated_logs, a finding without offsets, in each
    "real-unrelated": ([os.path.join(REAL, "greenlemonT__kafka-temp", "data", b) for b in ("kafka", "kafka1")],
                       1, None, False),
}
EXTRA = {
    "tv2-timeline-04": ([os.path.join(FIX, "kafka4", "tv2-replicas", "timeline-04", b)
                         for b in ("broker1", "broker2", "broker3")], 0, 0, True),
    "real-greenlemonT": ([os.path.join(REAL, "greenlemonT__kafka-temp", "data", b) for b in ("kafka1", "kafka2", "kafka3")],
                         0, None, True),
    "real-cesaralcancio": ([os.path.join(REAL, "cesaralcancio__study-kafka", "data", b)
                            for b in ("kafka1", "kafka2", "kafka3", "kafka4", "kafka5")], 0, None, True),
}
if os.environ.get("KLF_DIFF_HTML_ALL"):
    CASES.update(EXTRA)

PROBE = """
<script>
window.addEventListener('load', function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var out = {svgs: [], rows: []};
  document.querySelectorAll('svg.timeline').forEach(function (svg) {
    var b = svg.getBoundingClientRect(), texts = [];
    svg.querySelectorAll('text').forEach(function (t) {
      var r = t.getBoundingClientRect();
      texts.push({cls: t.getAttribute('class') || '', text: t.firstChild ? t.firstChild.nodeValue : '',
                  finding: t.getAttribute('data-finding'), x: r.left, y: r.top, w: r.width, h: r.height});
    });
    var section = svg.closest('.partition');
    out.svgs.push({partition: section ? section.id : '', x: b.left, y: b.top, w: b.width, h: b.height, texts: texts});
  });
  document.querySelectorAll('tr.finding').forEach(function (tr) {
    out.rows.push({id: tr.id, kind: tr.dataset.kind, offsets: tr.dataset.offsets, partition: tr.dataset.partition});
  });
  var pre = document.createElement('pre');
  pre.id = 'test-boxes';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(tmp, *args):
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
             "--user-data-dir=" + os.path.join(tmp, "profile")]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=180)


def overlap(a, b):
    dx = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
    dy = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
    return dx > 0.5 and dy > 0.5


def round_step(step):
    if step <= 0:
        return False
    e = 10 ** int(math.floor(math.log10(step)))
    return step in (e, 2 * e, 5 * e)


def offsets_text(f):
    if not f["offsets"]:
        return ""
    a, b = f["offsets"]
    return str(a) if a == b else f"{a}..{b}"


def check_page(name, page, inputs, j):
    check(page.startswith("<!DOCTYPE html>\n<!-- klf-output 1"), f"{name}: the page lacks its marker comment")
    for bad in ("src=\"http", "href=\"http", "src='http", "href='http", "@import", "url(http", "<link"):
        check(bad not in page, f"{name}: the page fetches from the network: {bad}")
    check("<svg" in page and "<style>" in page and "<script>" in page, f"{name}: inline SVG, CSS, JS")
    check("NaN" not in page and "inf" not in re.findall(r'width="([^"]*)"', page), f"{name}: NaN in the page")
    widths = [float(w) for w in re.findall(r'<rect[^>]* width="([-0-9.]+)"', page)]
    check(all(w > 0 for w in widths), f"{name}: a rect of zero or negative width")
    gen = re.search(r"<th>generated</th><td><time>([^<]*)</time>", page)
    check(gen and ISO.match(gen.group(1)), f"{name}: no ISO-8601 UTC generation time in the overview")
    check(re.search(r"<th>klf version</th><td>[0-9][^<]*</td>", page), f"{name}: no klf version in the overview")
    cmd = re.search(r'<code class="cmdline">(.*?)</code>', page)
    plain = re.sub(r"<[^>]+>", "", cmd.group(1)) if cmd else ""
    check(cmd and "diff" in plain and "--html" in plain and all(i in plain for i in inputs),
          f"{name}: the command line is not in the overview: {plain}")
    check("<h2>Findings by kind</h2>" in page, f"{name}: no findings-by-kind table")
    partitions = j["partitions"] if "partitions" in j else [j]
    check(f"<tr><th>partitions compared</th><td>{len(partitions)} " in page, f"{name}: partitions compared")
    for kind in {f["kind"] for p in partitions for f in p["findings"]}:
        check(f'<td class="kind">{kind}</td>' in page, f"{name}: {kind} not in the findings by kind")


def check_boxes(name, boxes, j, want_time):
    partitions = j["partitions"] if "partitions" in j else [j]
    check(len(boxes["svgs"]) == len(partitions), f"{name}: {len(boxes['svgs'])} timelines for {len(partitions)} partitions")
    for svg in boxes["svgs"]:
        where = f"{name} {svg['partition']}"
        texts = [t for t in svg["texts"] if t["text"]]
        for t in texts:
            check(t["w"] > 0 and t["h"] > 0, f"{where}: text {t['text']!r} not rendered")
            check(svg["x"] - 0.5 <= t["x"] and t["x"] + t["w"] <= svg["x"] + svg["w"] + 0.5 and
                  svg["y"] - 0.5 <= t["y"] and t["y"] + t["h"] <= svg["y"] + svg["h"] + 0.5,
                  f"{where}: text {t['text']!r} outside its timeline")
        for i in range(len(texts)):
            for k in range(i + 1, len(texts)):
                check(not overlap(texts[i], texts[k]), f"{where}: {texts[i]['text']!r} overlaps {texts[k]['text']!r}")
        ticks = [int(t["text"]) for t in texts if t["cls"] == "tick"]
        check(len(ticks) >= 1, f"{where}: no offset tick")
        steps = {b - a for a, b in zip(ticks, ticks[1:])}
        check(len(steps) <= 1 and all(round_step(s) and ticks[0] % s == 0 for s in steps),
              f"{where}: offset ticks not on 1-2-5 steps: {ticks}")
        times = [t["text"] for t in texts if t["cls"] == "ttick"]
        check(all(ISO.match(t) for t in times), f"{where}: time axis not ISO-8601 UTC: {times}")
        empty = any(t["cls"] == "note" and t["text"].startswith("empty") for t in texts)
        if want_time and not empty and svg["partition"] == "partition-0":
            check(len(times) >= 2, f"{where}: no time axis ({times})")
    print(f"{name}: {len(boxes['svgs'])} timelines, {sum(len(s['texts']) for s in boxes['svgs'])} texts, "
          f"{len(boxes['rows'])} finding rows checked")
    # A pinned last stable offset is labelled on its replica's bar.
    pinned = sum(1 for p in partitions for r in p["replicas"] if r["lastStableOffset"] < r["highWatermark"])
    lso = sum(1 for svg in boxes["svgs"] for t in svg["texts"] if "lso" in t["cls"].split() and t["w"] > 0)
    check(lso == pinned, f"{name}: {lso} pinned-LSO labels, {pinned} replicas with LSO below HW in the JSON")
    # Every finding of the JSON: its row and a label per affected replica.
    rows = {r["id"]: r for r in boxes["rows"]}
    total = sum(len(p["findings"]) for p in partitions)
    check(len(rows) == total, f"{name}: {len(rows)} finding rows on the page, {total} in the JSON")
    labels, more = {}, {}
    for svg in boxes["svgs"]:
        for t in svg["texts"]:
            if t["finding"] and t["w"] > 0:
                labels.setdefault(t["finding"], []).append(t)
            m = re.match(r"\+(\d+) more finding", t["text"] or "")
            if m and "more" in t["cls"].split():  # past the lanes the bar has room for: counted, not drawn
                more[svg["partition"]] = more.get(svg["partition"], 0) + int(m.group(1))
    for pi, p in enumerate(partitions):
        unlabelled = 0
        for fi, f in enumerate(p["findings"]):
            fid = f"p{pi}-f{fi}"
            row = rows.get("finding-" + fid)
            check(row and row["kind"] == f["kind"] and row["offsets"] == offsets_text(f) and
                  row["partition"] == p["partition"],
                  f"{name}: finding {fi} of {p['partition']} ({f['kind']} {f['offsets']}) not in the table: {row}")
            # A band and a label on each affected replica (a label alone for a finding without offsets).
            got = labels.get(fid, [])
            check(all(f["kind"] in t["text"] for t in got), f"{name}: finding {fid}'s labels do not name {f['kind']}")
            check(len(got) <= len(f["affectedReplicas"]), f"{name}: finding {fid} labelled twice on a replica")
            unlabelled += len(f["affectedReplicas"]) - len(got)
        check(unlabelled == more.get(f"partition-{pi}", 0),
              f"{name} {p['partition']}: {unlabelled} finding labels missing from the timeline, "
              f"{more.get(f'partition-{pi}', 0)} counted in '+N more' labels")

with temp_dir("klf-diff-html-") as tmp:
    if CHROMIUM is None:
        print("SKIP: chromium not installed (scripts/install-deps.sh installs it); HTML not rendered, "
              "only the page's text is checked")
    for name, (inputs, want_rc, want_findings, want_time) in CASES.items():
        roots = {os.path.dirname(os.path.dirname(i)) if i.endswith("foo-0") else os.path.dirname(i) for i in inputs}
        before = {r: snapshot(r) for r in roots}
        page_path = os.path.join(tmp, name + ".html")
        rc, out, err = run("diff", "--json", "--html", page_path, *inputs)
        check(rc == want_rc, f"{name}: exit {rc}, want {want_rc} ({err[-300:]})")
        if not os.path.exists(page_path):
            check(False, f"{name}: no page written")
            continue
        j = json.loads(out)
        partitions = j["partitions"] if "partitions" in j else [j]
        check(want_findings is None or sum(len(p["findings"]) for p in partitions) == want_findings,
              f"{name}: findings in the JSON")
        page = open(page_path, encoding="utf-8").read()
        check_page(name, page, inputs, j)
        check(all(snapshot(r) == before[r] for r in roots), f"{name}: inputs modified")
        if CHROMIUM is None:
            continue
        probe = os.path.join(tmp, name + "-probe.html")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(page + PROBE)
        p = chromium(tmp, "--window-size=1400,1000", "--virtual-time-budget=3000", "--dump-dom", "file://" + probe)
        check(p.returncode == 0, f"{name}: chromium --dump-dom exit {p.returncode}: {p.stderr[-500:]}")
        m = re.search(r'<pre id="test-boxes">(.*?)</pre>', p.stdout, re.S)
        if not check(m, f"{name}: the probe wrote no boxes (did the page's load finish?)"):
            continue
        check_boxes(name, json.loads(html.unescape(m.group(1))), j, want_time)
        shot = os.path.join(tmp, name + ".png")
        p = chromium(tmp, "--window-size=1400,1600", "--screenshot=" + shot, "file://" + page_path)
        if check(os.path.exists(shot) and open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
                 f"{name}: screenshot not written: {p.stderr[-500:]}"):
            keep = os.path.join(os.path.dirname(KLF), f"diff-html-{name}.png")
            shutil.copyfile(shot, keep)
            print("screenshot:", keep)

# --- klf triage --html: the capture's index page ---------------------------------------------------
TRIAGE = {
    "timeline-11": [os.path.join(ORACLE, "random-replicas", "timeline-11", b) for b in ("broker1", "broker2", "broker3")],
    "timeline-05": [os.path.join(ORACLE, "random-replicas", "timeline-05", b) for b in ("broker1", "broker2", "broker3")],
    "real-hiage": [os.path.join(REAL, "hiage__kafka-raft", "data", b) for b in ("kafka1", "kafka2", "kafka3")],
    "real-unrelated": [os.path.join(REAL, "greenlemonT__kafka-temp", "data", b) for b in ("kafka", "kafka1")],
}


def check_triage_page(name, page, inputs, j):
    check(page.startswith("<!DOCTYPE html>\n<!-- klf-output 1"), f"{name}: the page lacks its marker comment")
    for bad in ("src=\"http", "href=\"http", "@import", "url(http", "<link"):
        check(bad not in page, f"{name}: the page fetches from the network: {bad}")
    gen = re.search(r"<th>generated</th><td><time>([^<]*)</time>", page)
    check(gen and ISO.match(gen.group(1)), f"{name}: no ISO-8601 UTC generation time")
    check(re.search(r"<th>klf version</th><td>[0-9][^<]*</td>", page), f"{name}: no klf version")
    cmd = re.search(r'<code class="cmdline">(.*?)</code>', page)
    plain = html.unescape(re.sub(r"<[^>]+>", "", cmd.group(1))) if cmd else ""
    check(cmd and "triage" in plain and "--html" in plain and all(i in plain for i in inputs),
          f"{name}: the command line is not in the overview: {plain}")
    c = j["counts"]
    want = (f"{c['partitions']} partitions: {c['compared']} compared, {c['singleCopy']} single-copy; {c['diverged']} "
            f"diverged, {c['pinned']} pinned, {c['damaged']} damaged, {c['lagging']} lagging, {c['healthy']} healthy")
    check(want in page, f"{name}: counts {want!r} not in the overview")
    check(f"Healthy: {c['healthy']} partition" in page, f"{name}: no healthy count line")
    rows = re.findall(r'<tr class="triage-row" data-partition="([^"]*)"><td>(\d+)</td><td><a href="#(triage-\d+)">', page)
    ranked = [p["partition"] for p in j["partitions"] if p["status"] != "single_copy"]
    check([html.unescape(r[0]) for r in rows] == ranked, f"{name}: ranked rows {[r[0] for r in rows]} != {ranked}")
    check([int(r[1]) for r in rows] == list(range(1, len(rows) + 1)), f"{name}: ranks not 1..n")
    for r in rows:
        check(f'id="{r[2]}"' in page, f"{name}: the link #{r[2]} has no target")


with temp_dir("klf-triage-html-") as tmp:
    for name, inputs in TRIAGE.items():
        before = {r: snapshot(r) for r in inputs}
        page_path = os.path.join(tmp, name + ".html")
        rc, out, err = run("triage", "--json", "--html", page_path, *inputs)
        rc_plain, out_plain, _ = run("triage", "--json", *inputs)
        check(rc == rc_plain and out == out_plain, f"{name}: --html changes the JSON or the exit code")
        if not check(os.path.exists(page_path), f"{name}: no page written ({err[-300:]})"):
            continue
        j = json.loads(out)
        page = open(page_path, encoding="utf-8").read()
        check_triage_page(name, page, inputs, j)
        check(all(snapshot(r) == before[r] for r in inputs), f"{name}: inputs modified")
        # A second run refuses to replace the page without --force, and replaces it with --force.
        rc2, _, err2 = run("triage", "--html", page_path, *inputs)
        check(rc2 == 2 and "--force" in err2, f"{name}: existing page replaced without --force ({rc2})")
        rc2, _, _ = run("triage", "--html", page_path, "--force", *inputs)
        check(rc2 == rc, f"{name}: --force exit {rc2}")
        if CHROMIUM is None:
            continue
        probe = os.path.join(tmp, name + "-probe.html")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(page + PROBE)
        p = chromium(tmp, "--window-size=1400,1000", "--virtual-time-budget=3000", "--dump-dom", "file://" + probe)
        m = re.search(r'<pre id="test-boxes">(.*?)</pre>', p.stdout, re.S)
        if not check(m, f"{name}: the probe wrote no boxes"):
            continue
        boxes = json.loads(html.unescape(m.group(1)))
        with_findings = [p for p in j["partitions"] if p["findings"]]
        check(len(boxes["svgs"]) == len(with_findings),
              f"{name}: {len(boxes['svgs'])} timelines, {len(with_findings)} partitions with diff findings")
        for svg in boxes["svgs"]:
            texts = [t for t in svg["texts"] if t["text"]]
            for t in texts:
                check(t["w"] > 0 and t["h"] > 0 and svg["x"] - 0.5 <= t["x"] and
                      t["x"] + t["w"] <= svg["x"] + svg["w"] + 0.5 and svg["y"] - 0.5 <= t["y"] and
                      t["y"] + t["h"] <= svg["y"] + svg["h"] + 0.5, f"{name}: text {t['text']!r} outside its timeline")
            for a in range(len(texts)):
                for b in range(a + 1, len(texts)):
                    check(not overlap(texts[a], texts[b]), f"{name}: {texts[a]['text']!r} overlaps {texts[b]['text']!r}")
        # Every finding of the triage JSON: its row in its partition's section (ids as klf diff --html gives them).
        rows = {r["id"]: r for r in boxes["rows"]}
        total = sum(len(p["findings"]) for p in j["partitions"])
        check(len(rows) == total, f"{name}: {len(rows)} finding rows, {total} findings in the JSON")
        for pi, p in enumerate(j["partitions"]):
            for fi, f in enumerate(p["findings"]):
                row = rows.get(f"finding-p{pi}-f{fi}")
                check(row and row["kind"] == f["kind"] and row["offsets"] == offsets_text(f) and
                      row["partition"] == p["partition"], f"{name}: finding {fi} of {p['partition']} not on the page: {row}")
        print(f"triage {name}: {len(boxes['svgs'])} timelines, {total} findings checked")
        shot = os.path.join(tmp, name + "-triage.png")
        chromium(tmp, "--window-size=1400,1600", "--screenshot=" + shot, "file://" + page_path)
        if os.path.exists(shot):
            shutil.copyfile(shot, os.path.join(os.path.dirname(KLF), f"triage-html-{name}.png"))

finish()
