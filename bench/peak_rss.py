#!/usr/bin/python3
"""Runs a command and reports its peak memory, split into anonymous and file-backed pages.

Usage: bench/peak_rss.py OUT.json [--stdout FILE] -- COMMAND [ARGS...]   (stdout: FILE or /dev/null)

GNU time's "maximum resident set size" (getrusage ru_maxrss, the kernel's VmHWM) counts pages of
memory-mapped input files as well: klf reads segments through read-only mappings, whose pages are the
page cache's (clean, shared, reclaimable without I/O). To tell those from memory klf itself allocates,
this polls /proc/PID/status every 10 ms and records the peaks of RssAnon (heap, stacks, the offset map)
and RssFile (mapped file pages), beside ru_maxrss from wait4. Polling can miss a peak shorter than
10 ms; ru_maxrss cannot.
"""
import json
import os
import subprocess
import sys
import time


def status_kb(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("RssAnon", "RssFile", "RssShmem", "VmHWM"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def main():
    out_path = sys.argv[1]
    sep = sys.argv.index("--")
    cmd = sys.argv[sep + 1:]
    opts = sys.argv[2:sep]
    stdout_path = opts[opts.index("--stdout") + 1] if "--stdout" in opts else os.devnull
    stdout = open(stdout_path, "wb")
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout)
    peak = {"RssAnon": 0, "RssFile": 0, "VmHWM": 0}
    while True:
        s = status_kb(p.pid)
        for k in peak:
            peak[k] = max(peak[k], s.get(k, 0))
        pid, st, ru = os.wait4(p.pid, os.WNOHANG)
        if pid != 0:
            break
        time.sleep(0.01)
    elapsed = time.perf_counter() - t0
    stdout.close()
    result = {"command": cmd, "exit": os.waitstatus_to_exitcode(st), "elapsed_s": round(elapsed, 3),
              "user_s": round(ru.ru_utime, 3), "sys_s": round(ru.ru_stime, 3),
              "maxrss_kb": ru.ru_maxrss, "peak_anon_kb": peak["RssAnon"], "peak_file_kb": peak["RssFile"]}
    with open(out_path, "w") as f:
        json.dump(result, f)
        f.write("\n")
    print(json.dumps(result), file=sys.stderr)


if __name__ == "__main__":
    main()
