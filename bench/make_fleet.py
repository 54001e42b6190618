#!/usr/bin/env python3
"""Builds a capture of BROKERS broker log dirs, each holding PARTITIONS copies of one Kafka-written
partition directory (default: kafka-oracle/a-keyed/keyed-none-0) as fleet-<n>, with the log-dir
checkpoint files (cleaner, recovery point, replication, log start) listing every partition, as a
broker writes them. For the fleet-scale benchmarks (docs/PERFORMANCE.md): klf diff / verify / triage
over thousands of partitions.

  bench/make_fleet.py OUT [--partitions 2000] [--brokers 3] [--source DIR]
"""
import argparse
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SOURCE = os.path.join(HERE, "..", "..", "shared", "fixtures", "kafka-oracle", "a-keyed", "keyed-none-0")


def checkpoint(path, entries):
    with open(path, "w") as f:
        f.write("0\n%d\n" % len(entries))
        for topic, part, off in entries:
            f.write("%s %d %d\n" % (topic, part, off))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--source", default=DEFAULT_SOURCE)
    a = ap.parse_args()
    src = os.path.abspath(a.source)
    logs = sorted(f for f in os.listdir(src) if f.endswith(".log"))
    # The log end offset: the next offset after the last segment's last batch is not needed exactly;
    # the high watermark and recovery point are the last segment's base offset plus what the source's
    # parent replication-offset-checkpoint says for it, if anything.
    hw = 0
    parent = os.path.dirname(src)
    name = os.path.basename(src)
    topic0, part0 = name.rsplit("-", 1)
    rp = os.path.join(parent, "replication-offset-checkpoint")
    if os.path.exists(rp):
        for line in open(rp).read().splitlines()[2:]:
            t, p, o = line.split()
            if t == topic0 and int(p) == int(part0):
                hw = int(o)
    for b in range(1, a.brokers + 1):
        d = os.path.join(a.out, "broker%d" % b)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "meta.properties"), "w") as f:
            f.write("version=0\nbroker.id=%d\ncluster.id=fleet\n" % b)  # ZooKeeper-era layout: version 0 has broker.id
        entries = []
        for n in range(a.partitions):
            pd = os.path.join(d, "fleet-%d" % n)
            if not os.path.exists(pd):
                shutil.copytree(src, pd)
            entries.append(("fleet", n, hw))
        for cp in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                   "log-start-offset-checkpoint"):
            checkpoint(os.path.join(d, cp), entries if cp != "log-start-offset-checkpoint"
                       else [(t, p, 0) for t, p, _ in entries])
        checkpoint(os.path.join(d, "cleaner-offset-checkpoint"), [(t, p, 0) for t, p, _ in entries])
    print("%s: %d brokers x %d partitions of %s (%d segments each)" % (a.out, a.brokers, a.partitions, src, len(logs)))


if __name__ == "__main__":
    main()
