#!/usr/bin/python3
"""Renders the results of scripts/bench.sh as the markdown tables of docs/PERFORMANCE.md.

Usage: bench/report.py RESULTS_DIR DATA_DIR
MB and GB are decimal (10^6, 10^9 bytes) of file bytes unless a column says otherwise; times are
wall-clock means of hyperfine runs (± standard deviation), whole process, pinned to one core.
"""
import json
import os
import sys

RES, DATA = sys.argv[1], sys.argv[2]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def hyperfine(name):
    d = load(os.path.join(RES, name + ".json"))
    if d is None:
        return None
    return {r["command"]: r for r in d["results"]}


def data_dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def gen_info(name):
    return load(os.path.join(DATA, name + ".json")) or {}


def t(r):
    return "%.3f ± %.3f" % (r["mean"], r["stddev"] or 0.0)


def t_med(r):
    """Median (min-max): for runs where one outlier (a VM page-reclaim stall) would swamp the mean."""
    ts = r.get("times") or [r["mean"]]
    return "%.3f (%.3f–%.3f)" % (r.get("median", r["mean"]), min(ts), max(ts))


def med(r):
    return r.get("median", r["mean"])


def cpu_s(r):
    return r.get("user", 0) + r.get("system", 0)


def cpu(r):
    return "%.2f" % cpu_s(r)


def mbps(nbytes, seconds):
    return nbytes / 1e6 / seconds


def status(ok):
    return "met" if ok else "**not met**"


out = []
p = out.append
m = load(os.path.join(RES, "machine.json")) or {}
me = load(os.path.join(RES, "machine-end.json")) or {}
p("Run %s, klf %s, %s × %s, kernel %s, %d GiB RAM; pinned to cpu %s; scale %s; %s hyperfine runs per "
  "command after one warm-up (compact: %s runs, diff: %s, inputs read beforehand); load average (1/5/15 min) %s at the start, %s at the end." % (
      m.get("date"), m.get("klf_commit"), m.get("nproc"), m.get("cpu"), m.get("kernel"),
      round(m.get("mem_total_kb", 0) / 2**20), m.get("pinned_cpu"), m.get("scale"), m.get("runs"), m.get("runs_heavy"), m.get("runs_diff"),
      m.get("loadavg_start"), me.get("loadavg_end")))
p("")

# ---- Issue 2
h_any = any(hyperfine("decode-" + c) for c in ("none", "lz4", "zstd"))
if h_any:
    p("### Decode (issue 2): every batch CRC-checked, every record parsed")
    p("")
    p("| codec | what | file MB | time s | CPU s | file MB/s | file MB per CPU-s | records/s (M) | record data MB/s | vs floor |")
    p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for codec in ("none", "lz4", "zstd"):
        h = hyperfine("decode-" + codec)
        if h is None:
            continue
        g = gen_info("seg256-" + codec)
        nbytes, nrec, rbytes = g.get("bytes", 0), g.get("records", 0), g.get("recordBytes", 0)
        floor = h.get("floor")
        for key, label in (("floor", "floor: read(2) + header walk + CRC-32C (klf-bench floor)"),
                           ("floor-mmap", "the same walk over a fresh mmap (klf-bench floor --mmap)"),
                           ("decode", "klf streaming LogReader + RecordDecoder (klf-bench decode)"),
                           ("decode-mmap", "klf LogReader over a mapping + RecordDecoder (klf-bench decode --mmap)"),
                           ("dump-json", "`klf dump --records --json > /dev/null`")):
            r = h.get(key)
            if r is None:
                continue
            s = r["mean"]
            p("| %s | %s | %.1f | %s | %s | **%.0f** | %.0f | %.2f | %.0f | %s |" % (
                codec, label, nbytes / 1e6, t(r), cpu(r), mbps(nbytes, s), mbps(nbytes, cpu_s(r)), nrec / s / 1e6,
                mbps(rbytes, s),
                "%.2f×" % (s / floor["mean"]) if floor else ""))
        py = load(os.path.join(RES, "python-%s.json" % codec))
        if py:
            ratio = rbytes / nbytes if nbytes else 1.0
            p("| %s | kafka-python 2.0.2 MemoryRecords, CRC (C crc32c) + every record, first %.0f MB slice, "
              "in-process | %.1f | %.3f | %s | **%.1f** | %s | %.3f | %.1f | |" % (
                  codec, py["bytes"] / 1e6, py["bytes"] / 1e6, py["seconds"],
                  "%.3f" % py["cpu_seconds"] if "cpu_seconds" in py else "", py["MBps"],
                  "%.1f" % mbps(py["bytes"], py["cpu_seconds"]) if "cpu_seconds" in py else "",
                  py["records"] / py["seconds"] / 1e6, py["MBps"] * ratio))
    p("")
    gb = load(os.path.join(RES, "decode_bench.json"))
    if gb:
        p("In-process (Google Benchmark `decode_bench`, same files, mapping already open, real time):")
        p("")
        p("| benchmark | real ms/iter | CPU ms/iter | file GB/s (real) | records/s (M) |")
        p("|---|---:|---:|---:|---:|")
        for b in gb["benchmarks"]:
            if b.get("run_type") == "aggregate":
                continue
            name = b["name"].split("/min_time")[0].split("/real_time")[0]
            unit = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b.get("time_unit", "ns")]
            real_s = b["real_time"] * unit
            gbps = b.get("bytes_per_second", 0) / 1e9
            recs = b.get("records", 0) / 1e6
            p("| %s | %.2f | %.2f | %.2f | %s |" % (name, b["real_time"], b["cpu_time"], gbps,
                                                    "%.1f" % recs if recs else ""))
        p("")

# ---- Issue 3
h = hyperfine("verify")
if h:
    g = gen_info("seg256-none")
    nbytes = g.get("bytes", 0)
    floor = h["floor"]
    p("### Verify (issue 3): `klf verify` of the uncompressed segment vs the floor")
    p("")
    p("| what | time s | CPU s | file MB/s | file MB per CPU-s | vs floor (time) | vs floor (CPU) | target ≤ 1.5× |")
    p("|---|---:|---:|---:|---:|---:|---:|---|")
    for key, label in (("floor", "floor (klf-bench floor)"),
                       ("floor-mmap", "the floor's walk over a fresh mmap (klf-bench floor --mmap)"),
                       ("verify-log", "`klf verify --threads 1 <.log>` (every record parsed)"),
                       ("verify-partition", "`klf verify --threads 1 <partition dir>` (+ .index/.timeindex/snapshot checks)"),
                       ("verify-headers-only", "`klf verify --headers-only <.log>` (framing + CRC only)")):
        r = h.get(key)
        if r is None:
            continue
        ratio = r["mean"] / floor["mean"]
        p("| %s | %s | %s | %.0f | %.0f | %.2f× | %.2f× | %s |" % (
            label, t(r), cpu(r), mbps(nbytes, r["mean"]), mbps(nbytes, cpu_s(r)), ratio, cpu_s(r) / cpu_s(floor),
            "" if key.startswith("floor") else status(ratio <= 1.5)))
    p("")

# ---- Issue 4
h = hyperfine("write")
if h:
    g = gen_info("write-src")
    nbytes = g.get("bytes", 0)
    wt = load(os.path.join(RES, "write-tool.json")) or {}
    p("### Segment writing (issue 4): a %.2f GB segment with its indexes vs `cp`" % (nbytes / 1e9))
    p("")
    p("| what | time s | CPU s | MB/s | vs cp (same durability) | target ≤ 2× |")
    p("|---|---:|---:|---:|---:|---|")
    rows = (("cp", "`cp` (page cache only)", "cp"),
            ("cp+fsync", "`cp && sync FILE` (fsync)", "cp+fsync"),
            ("dd", "`dd bs=1M` (copy through a user-space buffer)", "cp"),
            ("segment-writer-nosync", "SegmentWriter, fsync disabled (klf-bench write --no-sync)", "cp"),
            ("segment-writer", "SegmentWriter: .log + .index + .timeindex, fsync, rename (klf-bench write)", "cp+fsync"),
            ("reindex", "`klf reindex` of the partition (copy .log + rebuild indexes, snapshots; fsync)", "cp+fsync"))
    for key, label, base in rows:
        r = h.get(key)
        if r is None:
            continue
        ratio = r["mean"] / h[base]["mean"]
        p("| %s | %s | %s | %.0f | %s | %s |" % (label, t(r), cpu(r), mbps(nbytes, r["mean"]),
                                           "" if key == base else "%.2f× %s" % (ratio, base),
                                           "" if key.startswith("cp") or key == "dd" else status(ratio <= 2.0)))
    if wt:
        p("")
        p("The writer appended %s batches (one Append each) and wrote %s offset-index and %s time-index entries." % (
            wt.get("batches"), wt.get("indexEntries"), wt.get("timeIndexEntries")))
    p("")

# ---- Issue 5
rows = []
for codec in ("none", "lz4", "zstd"):
    h = hyperfine("compact-" + codec)
    if h is None:
        continue
    rss = load(os.path.join(RES, "rss-compact-%s.json" % codec)) or {}
    co = load(os.path.join(RES, "compact-%s-out.json" % codec)) or {}
    g = gen_info("log1g-live10-" + codec)
    one = hyperfine("compact1-" + codec)
    rows.append((codec, h, rss, co, g, one["compact"] if one else None))
if rows:
    p("### Compaction (issue 5): `klf compact` of a 10%-live log vs `cp -r`")
    p("")
    p("Memory limit: log.cleaner.dedupe.buffer.size (default 128 MiB) + 64 MiB = 192 MiB = 196608 kB. "
      "ru_maxrss is what `/usr/bin/time -v` prints (it includes the pages of memory-mapped input files); "
      "anon and file are the peaks of RssAnon and RssFile (bench/peak_rss.py).")
    p("")
    p("`cp -r` and `klf compact` run unpinned (klf uses a second thread: half of the offset map, and "
      "lookups ahead of the cleaning pass), after one warm-up run each; \"1 core\" is `klf compact` "
      "pinned to one core. Times are medians (min–max) and the ratios compare medians: on this VM the "
      "first write of 1 GiB into page cache freed moments before can take ten times the next one.")
    p("")
    p("| codec | log MB | records read → kept | `cp -r` s | `cp -r && sync` s | `klf compact` s | CPU s | 1 core s | compact MB/s | vs cp | vs cp+sync | target ≤ 3× | ru_maxrss kB | anon kB | file kB | ≤ 192 MiB |")
    p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|")
    for codec, h, rss, co, g, one in rows:
        nbytes = g.get("bytes", 0)
        c, k = h["cp"], h["compact"]
        ratio = med(k) / med(c)
        maxrss = rss.get("maxrss_kb")
        anon = rss.get("peak_anon_kb")
        verdict = "ru_maxrss %s; anon %s" % (
            "met" if maxrss is not None and maxrss <= 196608 else "**not met**",
            "met" if anon is not None and anon <= 196608 else "**not met**")
        cs = h.get("cp+fsync")
        p("| %s | %.0f | %s → %s | %s | %s | %s | %s | %s | %.0f | %.2f× | %s | %s | %s | %s | %s | %s |" % (
            codec, nbytes / 1e6, co.get("recordsRead"), co.get("recordsRetained"), t_med(c), t_med(cs) if cs else "",
            t_med(k), cpu(k), t_med(one) if one else "", mbps(nbytes, med(k)), ratio,
            "%.2f×" % (med(k) / med(cs)) if cs else "",
            status(ratio <= 3.0) if codec == "none" else "— (measured; the target is for uncompressed)", maxrss, anon, rss.get("peak_file_kb"), verdict))
    p("")

# ---- Issue 7
h = hyperfine("diff")
if h:
    p("### Replica diff (issue 7): `klf diff` of three replicas of the 1 GiB log")
    p("")
    p("| replicas | bytes read (all files) | time s | CPU s | MB/s | target < 10 s | ru_maxrss kB | anon kB | file kB |")
    p("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    sizes = {
        "diff-3-full": 3 * data_dir_bytes(os.path.join(DATA, "log1g-live10-none")),
        "diff-2-full+compacted": 2 * data_dir_bytes(os.path.join(DATA, "log1g-live10-none")) +
        data_dir_bytes(os.path.join(DATA, "replica-compacted")),
    }
    labels = {"diff-3-full": "original, byte copy, byte copy",
              "diff-2-full+compacted": "original, byte copy, klf-compacted copy"}
    for key in ("diff-3-full", "diff-2-full+compacted"):
        r = h.get(key)
        if r is None:
            continue
        rss = load(os.path.join(RES, "rss-%s.json" % key)) or {}
        p("| %s | %.0f MB | %s | %s | %.0f | %s | %s | %s | %s |" % (
            labels[key], sizes[key] / 1e6, t(r), cpu(r), mbps(sizes[key], r["mean"]), status(r["mean"] < 10.0),
            rss.get("maxrss_kb"), rss.get("peak_anon_kb"), rss.get("peak_file_kb")))
    p("")

print("\n".join(out))
