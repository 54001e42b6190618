"""klf reindex end to end.

1. Every partition directory Kafka wrote by appending only (kafka-oracle, never cleaned) is reindexed
   with index.interval.bytes=128 (the oracle's setting): every file of the output equals Kafka's file
   byte for byte, and nothing else is written; the input is untouched.
2. Every output .log decodes with kafka-python (python3-kafka) to the same records as the input.
3. kafka-python's own logs put in a partition directory reindex and still decode to what
   kafka-python expects (X.log.expected.json).
4. --out rules: a non-empty --out is refused (exit 2) unless it is a previous klf output and --force is
   given; the input itself is refused.

Run by CTest with KLF_BINARY and KLF_FIXTURES_DIR; needs /usr/bin/python3 with the `kafka` package.
"""
import base64
import hashlib
import json
import os
import shutil
import tempfile

from kafka.record import MemoryRecords

from klf_e2e import FIX as FIXTURES, ORACLE, check, finish
from klf_e2e import process as klf_process

UNCLEANED = [
    "a-keyed/keyed-none-0", "a-keyed/keyed-gzip-0", "a-keyed/keyed-snappy-0", "a-keyed/keyed-lz4-0",
    "a-keyed/keyed-zstd-0", "b-txn/txn-0", "x-legacy/legacy-0", "c-compact/pass0-before/compact-demo-0",
]


def run(*args):
    return klf_process(args)


# klf marks every output directory it writes (README "Conventions"); Kafka's directories have no such file.
MARKER = ".klf-output"


def kafka_files(path):
    return sorted(n for n in os.listdir(path) if n != MARKER)


def tree_digest(path):
    out = {}
    for name in kafka_files(path):
        with open(os.path.join(path, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def b64(b):
    return None if b is None else base64.b64encode(bytes(b)).decode()


def decode(path):
    with open(path, "rb") as f:
        records = MemoryRecords(f.read())
    batches = []
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        check(batch.validate_crc(), "%s: kafka-python finds a bad CRC" % path)
        batches.append([(r.offset, r.timestamp, b64(r.key), b64(r.value),
                         [(k, b64(v)) for k, v in r.headers]) for r in batch])
    return batches


def main():
    with tempfile.TemporaryDirectory(prefix="klf-reindex-e2e-") as tmp:
        # 1 + 2: the oracle directories.
        for name in UNCLEANED:
            src = os.path.join(ORACLE, name)
            copy = os.path.join(tmp, "in", name.replace("/", "_"))
            shutil.copytree(src, copy)
            before = tree_digest(copy)
            out_dir = os.path.join(tmp, "out", name.replace("/", "_"))
            r = run("reindex", copy, "--out", out_dir, "--config", "index.interval.bytes=128", "--json")
            check(r.returncode == 0, "%s: exit %d: %s" % (name, r.returncode, r.stderr))
            if r.returncode != 0:
                continue
            summary = json.loads(r.stdout)
            check(summary["problems"] == [], "%s: problems %s" % (name, summary["problems"]))
            # --out is a log directory (as in compact and repair): <topic>-<partition>/ and checkpoints.
            out = os.path.join(out_dir, os.path.basename(copy))
            check(summary["outPartitionDir"] == out, "%s: outPartitionDir %r" % (name, summary["outPartitionDir"]))
            check(kafka_files(out) == kafka_files(src),
                  "%s: files differ: %s vs %s" % (name, kafka_files(out), kafka_files(src)))
            check(os.path.isfile(os.path.join(out_dir, MARKER)), "%s: no klf output marker" % name)
            check("recovery-point-offset-checkpoint" in os.listdir(out_dir),
                  "%s: no log-dir checkpoints beside the partition: %s" % (name, os.listdir(out_dir)))
            check(tree_digest(out) == tree_digest(src), "%s: some file differs from Kafka's" % name)
            check(tree_digest(copy) == before, "%s: input was modified" % name)
            check(not [n for n in os.listdir(os.path.dirname(out_dir)) if ".tmp-" in n],
                  "%s: staging directory left behind" % name)
            for f in sorted(os.listdir(out)):
                if f.endswith(".log"):
                    check(decode(os.path.join(out, f)) == decode(os.path.join(src, f)),
                          "%s/%s: kafka-python decodes different records" % (name, f))

        # 3: kafka-python's logs in a partition directory.
        kp = os.path.join(FIXTURES, "kafka-python")
        for f in sorted(os.listdir(kp)):
            if not f.endswith(".log"):
                continue
            part = os.path.join(tmp, "kp-in", f[:-4] + "-0")
            os.makedirs(part)
            shutil.copy(os.path.join(kp, f), os.path.join(part, "00000000000000000000.log"))
            out = os.path.join(tmp, "kp-out", f[:-4] + "-0")
            r = run("reindex", part, "--out", out)
            out = os.path.join(out, f[:-4] + "-0")
            check(r.returncode == 0, "%s: exit %d: %s" % (f, r.returncode, r.stderr))
            with open(os.path.join(kp, f + ".expected.json")) as e:
                expected = json.load(e)
            got = decode(os.path.join(out, "00000000000000000000.log"))
            want = [[(x["offset"], x["timestamp"], x["key"], x["value"],
                      [(h["key"] if isinstance(h, dict) else h[0], h["value"] if isinstance(h, dict) else h[1])
                       for h in x["headers"]]) for x in b["records"]] for b in expected]
            check(got == want, "%s: reindexed log does not decode as kafka-python expects" % f)
            for ext in (".index", ".timeindex"):
                check(os.path.exists(os.path.join(out, "00000000000000000000" + ext)), "%s: no %s" % (f, ext))

        # 4: --out rules.
        src = os.path.join(ORACLE, "b-txn/txn-0")
        busy = os.path.join(tmp, "busy")
        os.makedirs(busy)
        with open(os.path.join(busy, "keep"), "w") as k:
            k.write("x")
        r = run("reindex", src, "--out", busy)
        check(r.returncode == 2, "non-empty --out: exit %d (want 2)" % r.returncode)
        check(os.listdir(busy) == ["keep"], "non-empty --out was touched")
        check("--force" in r.stderr, "refusal should mention --force: %r" % r.stderr)
        # --force replaces only a previous klf output, never a directory klf did not write.
        r = run("reindex", src, "--out", busy, "--force", "--config", "index.interval.bytes=128")
        check(r.returncode == 2, "--force over a non-klf directory: exit %d (want 2)" % r.returncode)
        check(os.listdir(busy) == ["keep"], "--force replaced a directory klf did not write")
        check("not a klf output" in r.stderr, "refusal should say why: %r" % r.stderr)
        prev = os.path.join(tmp, "prev")
        r = run("reindex", src, "--out", prev)
        check(r.returncode == 0, "first run: exit %d %s" % (r.returncode, r.stderr))
        r = run("reindex", src, "--out", prev, "--force", "--config", "index.interval.bytes=128")
        check(r.returncode == 0, "--force: exit %d %s" % (r.returncode, r.stderr))
        check(tree_digest(os.path.join(prev, "txn-0")) == tree_digest(src), "--force output differs from Kafka's files")
        copy = os.path.join(tmp, "self")
        shutil.copytree(src, copy)
        before = tree_digest(copy)
        r = run("reindex", copy, "--out", copy, "--force")
        check(r.returncode != 0, "writing over the input must be refused")
        check(tree_digest(copy) == before, "input modified by a refused run")
        r = run("reindex", os.path.join(tmp, "missing"), "--out", os.path.join(tmp, "x"))
        check(r.returncode == 3, "missing input: exit %d (want 3)" % r.returncode)
        r = run("reindex", src, "--out", os.path.join(tmp, "y"), "--config", "bogus=1")
        check(r.returncode == 2, "unknown --config: exit %d (want 2)" % r.returncode)

    finish()


if __name__ == "__main__":
    main()
