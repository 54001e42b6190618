#!/usr/bin/env python3
"""Runs commands in turn, A B C A B C ..., after one warm-up each, and prints for each its median (and
min-max) wall time, CPU time (user + system from wait4) and peak RSS (ru_maxrss), and for each command
after the first the median of the run-by-run ratios to the first (docs/PERFORMANCE.md: figures of one
run on a shared machine are compared as ratios of interleaved runs).

  bench/side_by_side.py RUNS 'COMMAND' ['COMMAND' ...]

A COMMAND is run by /bin/sh with its output discarded. 'PREPARE ;; COMMAND' runs PREPARE (untimed)
before every run of COMMAND, e.g. 'rm -rf /tmp/out; sync ;; cp -r in /tmp/out'.
"""
import os
import statistics
import subprocess
import sys
import time


def run(spec):
    prepare, _, cmd = spec.rpartition(";;")
    if prepare.strip():
        subprocess.run(prepare, shell=True, check=False)
    start = time.perf_counter()
    p = subprocess.Popen(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "user": ru.ru_utime, "sys": ru.ru_stime,
            "rss": ru.ru_maxrss / 1024.0, "status": status}


def main():
    runs = int(sys.argv[1])
    specs = sys.argv[2:]
    for s in specs:
        run(s)
    res = [[] for _ in specs]
    for _ in range(runs):
        for i, s in enumerate(specs):
            res[i].append(run(s))
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} runs={runs} "
          f"loadavg={open('/proc/loadavg').read().split()[:3]}")
    for i, s in enumerate(specs):
        r = res[i]
        med = lambda k: statistics.median(x[k] for x in r)
        line = (f"[{i}] wall {med('wall'):.3f} ({min(x['wall'] for x in r):.3f}-{max(x['wall'] for x in r):.3f}) "
                f"cpu {med('cpu'):.3f} user {med('user'):.3f} sys {med('sys'):.3f} "
                f"peak {max(x['rss'] for x in r):.1f} MiB")
        if any(x["status"] != 0 for x in r):
            line += " EXIT-STATUS-NONZERO"
        if i > 0:
            rw = statistics.median(r[k]["wall"] / res[0][k]["wall"] for k in range(runs))
            rc = statistics.median(r[k]["cpu"] / max(res[0][k]["cpu"], 1e-9) for k in range(runs))
            line += f" | /[0]: wall {rw:.2f} cpu {rc:.2f}"
        print(line + " :: " + s.rpartition(";;")[2].strip(), flush=True)


if __name__ == "__main__":
    main()
