"""`klf diff` over broker log directories holds at most --jobs partitions' replicas in memory at once
(issue 15, "memory bounded by design"): each partition is loaded, diffed, printed into its small
result (text, JSON, the HTML page's section) and released before its worker loads another, so peak
memory grows with the largest partition times --jobs, not with the number of partitions.

Two brokers' log directories are generated here, each holding the same NPART partitions (hard links of
one segment: a few MB on disk) of 2 M tiny records each: one partition's replicas take ~300 MB of
per-record state, all of them together several GiB. Each diff runs under `prlimit --as=2G` (what the
issue asks of the memory cases); its peak RSS (wait4) is compared with the peak of a diff of ONE of the
partitions:
  - the premise: NPART partitions held at once would need more than the address-space limit, so a
    diff that kept them all could not finish (it did before the change: one partition's replicas were
    kept in a slot until everything printed);
  - over the log dirs, --jobs 1, text, --json and --json --html: exit 0 and peak RSS at most the one
    partition's peak plus a margin (an eighth of it plus 64 MiB: allocator slack, the kept reports);
  - --jobs 2: at most twice that.
The outputs are also checked to cover every partition (the counts line, the JSON's partitions, the
page's sections), so a run that skipped work cannot pass.

A sanitizer build counts shadow memory in RSS and reserves terabytes of address space: there the
limit and the RSS bounds are skipped (and said so), and fewer records are generated."""
import json
import os
import re

import hostile_memory_test as hm
from klf_e2e import check, fail, finish, temp_dir

MIB = 1 << 20
SAN = hm.SAN
RECORDS = (1 << 21) if not SAN else (1 << 18)  # per partition (per replica)
PER_BATCH = 1 << 20 if not SAN else 1 << 18
NPART = 12


def make_log_dirs(root):
    """broker1/ and broker2/, each with big-0 .. big-(NPART-1): one segment of RECORDS tiny records
    (zstd batches), hard-linked everywhere (inputs are only read)."""
    section = hm.zstd_stream(hm.record(i, value=b"v") for i in range(PER_BATCH))
    seg = os.path.join(root, "segment.log")
    with open(seg, "wb") as f:
        for b in range(RECORDS // PER_BATCH):
            f.write(hm.batch(b * PER_BATCH, PER_BATCH, section, codec=4))
    dirs = []
    for broker in ("broker1", "broker2"):
        log_dir = os.path.join(root, broker)
        for k in range(NPART):
            d = os.path.join(log_dir, "big-%d" % k)
            os.makedirs(d)
            os.link(seg, os.path.join(d, "%020d.log" % 0))
        dirs.append(log_dir)
    return dirs


def diff(args, what):
    """klf diff ARGS under prlimit (hostile_memory_test.run_isolated): (exit code, stdout, peak RSS)."""
    rc, out, err, rss, secs = hm.run_isolated(["diff", *args], False)
    print(f"  {what}: exit {rc}, {secs:.1f} s, peak RSS {rss / MIB:.0f} MiB")
    check(rc == 0, f"klf diff {' '.join(args)}: exit {rc}; stderr: {err[-1500:]}")
    check(not any(m in err for m in hm.SANITIZER_MARKS), f"klf diff {' '.join(args)}: sanitizer report: {err[-2000:]}")
    return rc, out, rss


def main():
    with temp_dir("klf-diff-memory-") as root:
        b1, b2 = make_log_dirs(root)
        _, _, one = diff([os.path.join(b1, "big-0"), os.path.join(b2, "big-0")], "one partition")
        margin = one // 8 + 64 * MIB
        if SAN:
            print("sanitizer build: prlimit --as and the RSS bounds are skipped (shadow memory)")
        else:
            check(NPART * one > hm.AS_LIMIT,
                  f"premise: {NPART} partitions of {one / MIB:.0f} MiB each must exceed the "
                  f"{hm.AS_LIMIT / MIB:.0f} MiB limit, or this test proves nothing")

        def bounded(rss, jobs, what):
            if not SAN:
                check(rss <= jobs * (one + margin),
                      f"{what}: peak RSS {rss / MIB:.0f} MiB over {jobs} x (one partition's {one / MIB:.0f} MiB "
                      f"+ {margin / MIB:.0f} MiB): replicas of more partitions than workers held at once")

        _, out, rss = diff(["--jobs", "1", b1, b2], "log dirs, --jobs 1, text")
        bounded(rss, 1, "text")
        check(f"{NPART} partitions compared: 0 diverged" in out, f"text: no counts line for {NPART}: {out[-500:]}")
        check(len(re.findall(r"^partition big-\d+: 2 replicas$", out, re.M)) == NPART,
              f"text: not every partition printed: {out[:500]}")

        _, out, rss = diff(["--json", "--jobs", "1", b1, b2], "log dirs, --jobs 1, --json")
        bounded(rss, 1, "--json")
        try:
            j = json.loads(out)
            check(len(j["partitions"]) == NPART and j["counts"]["compared"] == NPART,
                  f"--json: {len(j['partitions'])} partitions, counts {j['counts']}")
            check(all(r["readUncommittedRecords"] == RECORDS for p in j["partitions"] for r in p["replicas"]),
                  "--json: a replica's record count is not the generated one")
        except (ValueError, KeyError) as e:
            fail(f"--json: stdout is not the log-dir report ({e}): {out[:300]}")

        page = os.path.join(root, "report.html")
        _, out, rss = diff(["--json", "--html", page, "--jobs", "1", b1, b2], "log dirs, --jobs 1, --json --html")
        bounded(rss, 1, "--json --html")
        html = ""
        if check(os.path.exists(page), "--html: no page written"):
            with open(page, encoding="utf-8") as f:
                html = f.read()
        check(all(f'id="partition-{k}"' in html for k in range(NPART)), "--html: not every partition's section")

        _, out, rss = diff(["--jobs", "2", b1, b2], "log dirs, --jobs 2, text")
        bounded(rss, 2, "--jobs 2")
        check(f"{NPART} partitions compared" in out, f"--jobs 2: no counts line: {out[-300:]}")
    finish()


if __name__ == "__main__":
    main()
