#!/usr/bin/python3
"""End-to-end tests of `klf dump` against bytes klf did not write.

Ground truth:
  * kafka-oracle/**/X.dump.txt: Kafka's own view of every batch, record, index entry, producer
    snapshot, txn-index entry, leader-epoch-checkpoint and partition.metadata of directory X;
  * kafka-python/X.log.expected.json: what kafka-python decodes from X.log (bytes in base64);
  * the text checkpoint files themselves (parsed here by Kafka's rules, spec §11).
Damaged copies (truncated, flipped CRC-covered byte, zero tail, zeroed header mid-file) must give
error objects naming file and position, exit code 1, and the dump must go on after the damage.

Environment (set by CTest): KLF_BINARY, KLF_FIXTURES_DIR, KLF_SOURCE_DIR.
"""
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile

from klf_e2e import FIX as FIXTURES, KLF, ORACLE, check, fail, klf_text, run_tests

PYTHON_VECTORS = os.path.join(FIXTURES, "kafka-python")


def run(args, expect_rc=None):
    """Runs `klf ARGS` (bytes output); a failure when the exit code is not `expect_rc`."""
    p = subprocess.run([KLF] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if expect_rc is not None and p.returncode != expect_rc:
        fail("klf %s: exit %d, expected %d\nstderr: %s" %
             (" ".join(args), p.returncode, expect_rc, p.stderr.decode(errors="replace")[-2000:]))
    return p


def dump_json(args, expect_rc=0):
    """`klf dump --json ARGS`: the JSON objects of its output lines, and the process."""
    p = run(["dump", "--json"] + args, expect_rc)
    objs = []
    for n, line in enumerate(p.stdout.decode("utf-8").splitlines()):
        try:
            objs.append(json.loads(line))
        except ValueError as e:
            fail("klf dump --json %s: line %d is not JSON (%s): %r" % (" ".join(args), n + 1, e, line[:300]))
    return objs, p


# ---------------------------------------------------------------------------------------------
# Parser of the oracle's dump.txt (format described in fixtures/README.md: one line per batch,
# record, index entry ...; key=value tokens; byte strings as "text", 0xHEX or null).

TOKEN = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\[[^\]]*\]|\S+)')


def oracle_bytes(v):
    """Oracle rendering of a byte string -> bytes (None for null)."""
    if v == "null":
        return None
    if v.startswith('"'):
        return v[1:-1].replace('\\"', '"').replace("\\\\", "\\").encode("utf-8")
    if v.startswith("0x"):
        return bytes.fromhex(v[2:])
    raise AssertionError("unknown byte rendering %r" % v)


def oracle_headers(v):
    # [h1:"x",h2:""] -> [(b"h1", b"x"), (b"h2", b"")]
    out = []
    for m in re.finditer(r'([^,\[\]:]+):("(?:[^"\\]|\\.)*"|0x[0-9a-fA-F]*|null)', v):
        out.append((m.group(1).encode(), oracle_bytes(m.group(2))))
    return out


def parse_oracle(path):
    """Returns {partition_name: {"logs": {file: [batch]}, "index": {file: [(o,p)]}, ...}}."""
    parts = {}
    cur = None
    section = None  # (kind, file)
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line:
                continue
            if line.startswith("# partition-dir "):
                cur = parts.setdefault(line.split(" ", 2)[2], {
                    "logs": {}, "offset-index": {}, "time-index": {}, "txn-index": {},
                    "producer-snapshot": {}, "files": {}})
                continue
            if not line.startswith("  "):
                words = line.split(" ")
                kind = words[0]
                if kind == "segment":
                    section = ("logs", words[1])
                    cur["logs"][words[1]] = []
                elif kind in ("offset-index", "time-index", "txn-index", "producer-snapshot", "file"):
                    key = "files" if kind == "file" else kind
                    section = (key, words[1])
                    cur[key][words[1]] = []
                elif kind == "batch":
                    batch = dict(TOKEN.findall(line))
                    batch["records"] = []
                    cur["logs"][section[1]].append(batch)
                else:
                    raise AssertionError("%s: unknown line %r" % (path, line))
                continue
            body = line.strip()
            if section[0] == "logs":
                check(body.startswith("record "), "%s: expected a record line: %r" % (path, line))
                cur["logs"][section[1]][-1]["records"].append(dict(TOKEN.findall(body)))
            elif section[0] == "files":
                cur["files"][section[1]].append(body)
            else:
                cur[section[0]][section[1]].append(dict(TOKEN.findall(body)))
    return parts


def oracle_sets():
    """(dump.txt path, directory to run klf on, {partition name: partition dir path})."""
    for root, _, files in os.walk(ORACLE):
        for name in sorted(files):
            if not name.endswith(".dump.txt"):
                continue
            target = os.path.join(root, name[:-len(".dump.txt")])
            if os.path.isdir(target):
                yield os.path.join(root, name), target


def partition_path(target, part):
    return target if os.path.basename(target) == part else os.path.join(target, part)


# ---------------------------------------------------------------------------------------------
# Comparisons


def as_int(v):
    return None if v in ("null", "none") else int(v)


def compare_batch(o, k, where):
    magic = int(o["magic"])
    check(k["magic"] == magic, where + ": magic")
    legacy = magic < 2
    expect = {
        "baseOffset": int(o["baseOffset"]),
        "lastOffset": int(o["lastOffset"]),
        "position": int(o["position"]),
        "sizeInBytes": int(o["size"]),
        "compression": o["compression"],
        "crc": int(o["crc"]),
        "crcValid": o["isValid"] == "true",
        # cli.md: fields a magic does not have are null; the oracle prints Kafka's defaults for them.
        "recordCount": None if legacy else int(o["count"]),
        "timestampType": None if magic == 0 else o["timestampType"],
        "maxTimestamp": None if magic == 0 else int(o["maxTimestamp"]),
        "producerId": None if legacy else int(o["producerId"]),
        "producerEpoch": None if legacy else int(o["producerEpoch"]),
        "baseSequence": None if legacy else int(o["baseSequence"]),
        "lastSequence": None if legacy else int(o["lastSequence"]),
        "isTransactional": None if legacy else o["isTransactional"] == "true",
        "isControl": None if legacy else o["isControl"] == "true",
        "partitionLeaderEpoch": None if legacy else int(o["partitionLeaderEpoch"]),
        "deleteHorizonMs": as_int(o["deleteHorizonMs"]),
    }
    if legacy:
        check(o["count"] == "null" and o["producerId"] == "-1" and o["partitionLeaderEpoch"] == "-1",
              where + ": oracle legacy defaults")
    for field, value in expect.items():
        check(k.get(field, "MISSING") == value,
              "%s: %s is %r, Kafka says %r" % (where, field, k.get(field, "MISSING"), value))
    if not legacy and expect["deleteHorizonMs"] is None:
        # Without the delete-horizon bit the first timestamp is the base timestamp (spec §4.3).
        check(isinstance(k["baseTimestamp"], int), where + ": baseTimestamp")
    recs = k.get("records")
    check(recs is not None, where + ": no records with --records")
    check(len(recs) == len(o["records"]),
          "%s: %d records, Kafka has %d" % (where, len(recs), len(o["records"])))
    for ro, rk in zip(o["records"], recs):
        rw = "%s offset %s" % (where, ro["offset"])
        check(rk["offset"] == int(ro["offset"]), rw + ": offset")
        ts = int(ro["timestamp"])
        check(rk["timestamp"] == (None if magic == 0 else ts), rw + ": timestamp %r vs %r" % (rk["timestamp"], ts))
        key = oracle_bytes(ro["key"])
        value = oracle_bytes(ro["value"])
        check(rk["key"] == (None if key is None else key.hex()), rw + ": key %r vs %r" % (rk["key"], key))
        check(rk["value"] == (None if value is None else value.hex()), rw + ": value %r vs %r" % (rk["value"], value))
        if legacy:
            check(rk["headers"] is None and rk["sequence"] is None, rw + ": legacy record has no headers/sequence")
        else:
            check(rk["sequence"] == int(ro["sequence"]), rw + ": sequence")
            want = oracle_headers(ro.get("headers", "[]"))
            # Header keys are strings (cli.md): text whatever --bytes says; values follow --bytes (hex here).
            got = [(h["key"], None if h["value"] is None else bytes.fromhex(h["value"])) for h in rk["headers"]]
            want = [(klf_text(k), v) for k, v in want]
            check(got == want, rw + ": headers %r vs %r" % (got, want))
        if "controlType" in ro:
            c = rk.get("control")
            check(c is not None, rw + ": control record without 'control'")
            check(c["type"] == ro["controlType"], rw + ": control type %r vs %r" % (c["type"], ro["controlType"]))
            check(c["coordinatorEpoch"] == int(ro["coordinatorEpoch"]), rw + ": coordinatorEpoch")
        else:
            check("control" not in rk, rw + ": data record has 'control'")


def by_file(objs, kind):
    out = {}
    for o in objs:
        if o.get("type") == kind:
            out.setdefault(os.path.normpath(o["file"]), []).append(o)
    return out


def test_oracle_dirs_match_kafka():
    """Every batch, record and entry of every kafka-oracle directory equals Kafka's dump.txt."""
    count_sets = count_batches = 0
    for dump_txt, target in oracle_sets():
        oracle = parse_oracle(dump_txt)
        objs, _ = dump_json(["--records", "--bytes", "hex", target], expect_rc=0)
        check(not [o for o in objs if "error" in o], "%s: unexpected problems: %r" %
              (target, [o for o in objs if "error" in o][:3]))
        batches = by_file(objs, "batch")
        kinds = {k: by_file(objs, k + "-entry") for k in ("offset-index", "time-index", "txn-index",
                                                          "producer-snapshot", "leader-epoch")}
        seen_logs = set()
        for part, data in oracle.items():
            pdir = partition_path(target, part)
            for seg, obatches in data["logs"].items():
                f = os.path.normpath(os.path.join(pdir, seg))
                seen_logs.add(f)
                kb = batches.get(f, [])
                check(len(kb) == len(obatches), "%s: %d batches, Kafka has %d" % (f, len(kb), len(obatches)))
                for ob, b in zip(obatches, kb):
                    compare_batch(ob, b, "%s@%s" % (f, ob["position"]))
                    count_batches += 1
            for name, entries in data["offset-index"].items():
                f = os.path.normpath(os.path.join(pdir, name))
                got = [(e["offset"], e["logPosition"]) for e in kinds["offset-index"].get(f, [])]
                want = [(int(e["offset"]), int(e["position"])) for e in entries]
                check(got == want, "%s: %r vs Kafka %r" % (f, got, want))
            for name, entries in data["time-index"].items():
                f = os.path.normpath(os.path.join(pdir, name))
                got = [(e["timestamp"], e["offset"]) for e in kinds["time-index"].get(f, [])]
                want = [(int(e["timestamp"]), int(e["offset"])) for e in entries]
                check(got == want, "%s: %r vs Kafka %r" % (f, got, want))
            for name, entries in data["txn-index"].items():
                f = os.path.normpath(os.path.join(pdir, name))
                got = [(e["producerId"], e["firstOffset"], e["lastOffset"], e["lastStableOffset"])
                       for e in kinds["txn-index"].get(f, [])]
                want = [(int(e["producerId"]), int(e["firstOffset"]), int(e["lastOffset"]),
                         int(e["lastStableOffset"])) for e in entries]
                check(got == want, "%s: %r vs Kafka %r" % (f, got, want))
            for name, entries in data["producer-snapshot"].items():
                f = os.path.normpath(os.path.join(pdir, name))
                got = [(e["producerId"], e["producerEpoch"], e["firstSequence"], e["lastSequence"],
                        e["firstOffset"], e["lastOffset"], e["lastTimestamp"], e["coordinatorEpoch"],
                        e["currentTxnFirstOffset"]) for e in kinds["producer-snapshot"].get(f, [])]
                want = []
                for e in entries:
                    has_batch = int(e["lastDataOffset"]) >= 0
                    want.append((int(e["producerId"]), int(e["epoch"]),
                                 int(e["firstSeq"]) if has_batch else None,
                                 int(e["lastSeq"]) if has_batch else None,
                                 int(e["firstDataOffset"]) if has_batch else None,
                                 int(e["lastDataOffset"]) if has_batch else None,
                                 int(e["lastTimestamp"]), int(e["coordinatorEpoch"]),
                                 as_int(e["currentTxnFirstOffset"])))
                check(got == want, "%s: %r vs Kafka %r" % (f, got, want))
            lec = data["files"].get("leader-epoch-checkpoint")
            if lec is not None:
                f = os.path.normpath(os.path.join(pdir, "leader-epoch-checkpoint"))
                want = [tuple(int(x) for x in l.split()) for l in lec[2:]]
                got = [(e["epoch"], e["startOffset"]) for e in kinds["leader-epoch"].get(f, [])]
                check(got == want, "%s: %r vs Kafka %r" % (f, got, want))
            pm = data["files"].get("partition.metadata")
            if pm is not None:
                f = os.path.normpath(os.path.join(pdir, "partition.metadata"))
                got = [o for o in objs if o.get("type") == "partition-metadata" and os.path.normpath(o["file"]) == f]
                want_id = [l.split(":", 1)[1].strip() for l in pm if l.startswith("topic_id")][0]
                check(len(got) == 1 and got[0]["topicId"] == want_id and got[0]["version"] == 0,
                      "%s: %r vs Kafka %r" % (f, got, pm))
        extra = set(batches) - seen_logs
        check(not extra, "%s: klf dumped logs Kafka did not: %r" % (target, sorted(extra)))
        count_sets += 1
    check(count_sets >= 30, "only %d oracle dump.txt sets found under %s" % (count_sets, ORACLE))
    check(count_batches > 500, "only %d batches compared" % count_batches)


def read_offset_checkpoint(path):
    # Spec §11.1/§11.2: version line, count line, then "<topic> <partition> <offset>" lines.
    with open(path) as f:
        lines = [l for l in f.read().splitlines()]
    if not lines:
        return []
    check(lines[0] == "0", path + ": version")
    if len(lines) < 2:
        return []
    n = int(lines[1])
    entries = [l.split() for l in lines[2:2 + n]]
    return [(t, int(p), int(o)) for t, p, o in entries]


def test_log_dir_checkpoints():
    """A broker log dir: every log-dir checkpoint file's entries, as the files say."""
    logdir = os.path.join(ORACLE, "replicas/aborted-to-committed/broker1")
    objs, _ = dump_json([logdir])
    names = ["cleaner-offset-checkpoint", "log-start-offset-checkpoint", "recovery-point-offset-checkpoint",
             "replication-offset-checkpoint"]
    for name in names:
        f = os.path.join(logdir, name)
        want = read_offset_checkpoint(f)
        got = [(o["topic"], o["partition"], o["offset"]) for o in objs
               if o.get("type") == "offset-checkpoint-entry" and os.path.normpath(o["file"]) == os.path.normpath(f)]
        check(sorted(got) == sorted(want), "%s: %r vs file %r" % (f, got, want))
        check(all(o["checkpoint"] == name for o in objs if o.get("type") == "offset-checkpoint-entry"
                  and os.path.normpath(o["file"]) == os.path.normpath(f)), f + ": checkpoint name")
        # The same file given by name.
        single, _ = dump_json([f])
        check([(o["topic"], o["partition"], o["offset"]) for o in single] == got, f + ": alone")


def test_every_file_type_alone():
    """Each kind of file can be given by name and yields only its own objects."""
    pdir = os.path.join(ORACLE, "b-txn/txn-0")
    expected_type = {".log": "batch", ".index": "offset-index-entry", ".timeindex": "time-index-entry",
                     ".txnindex": "txn-index-entry", ".snapshot": "producer-snapshot-entry",
                     "leader-epoch-checkpoint": "leader-epoch-entry", "partition.metadata": "partition-metadata"}
    seen = set()
    for name in sorted(os.listdir(pdir)):
        suffix = name if "." not in name or name == "partition.metadata" else name[name.index("."):]
        want = expected_type.get(suffix)
        if want is None:
            continue
        objs, _ = dump_json([os.path.join(pdir, name)])
        types = {o["type"] for o in objs}
        check(types <= {want}, "%s: types %r" % (name, types))
        check(all(o["file"] == os.path.join(pdir, name) for o in objs), name + ": file field")
        if objs:
            seen.add(want)
        # Text mode names the file too.
        p = run(["dump", os.path.join(pdir, name)], 0)
        check(p.stdout.decode().startswith("Dumping " + os.path.join(pdir, name)), name + ": text header")
    check(seen == set(expected_type.values()), "file types with entries: %r" % sorted(seen))


def test_text_mode_kafka_lines():
    """Text mode prints kafka-dump-log's batch and record lines (spec dump-log-segments.md §3)."""
    log = os.path.join(ORACLE, "b-txn/txn-0/00000000000000000007.log")
    oracle = parse_oracle(os.path.join(ORACLE, "b-txn/txn-0.dump.txt"))["txn-0"]["logs"]["00000000000000000007.log"]
    p = run(["dump", "--records", log], 0)
    lines = p.stdout.decode().splitlines()
    check(lines[0] == "Dumping " + log and lines[1] == "Log starting offset: 7", "header lines: %r" % lines[:2])
    batch_lines = [l for l in lines if l.startswith("baseOffset: ")]
    check(len(batch_lines) == len(oracle), "batch lines")
    for l, o in zip(batch_lines, oracle):
        fields = dict(re.findall(r"(\w+): (\S+)", l))
        for k in ("baseOffset", "lastOffset", "count", "producerId", "producerEpoch", "crc"):
            check(fields[k] == o[k], "%s: %s %s vs %s" % (log, k, fields[k], o[k]))
        check(fields["size"] == o["size"] and fields["isvalid"] == o["isValid"], log + ": size/isvalid")
        check(fields["deleteHorizonMs"] == "OptionalLong.empty", log + ": OptionalLong rendering")
    check(any("endTxnMarker: COMMIT coordinatorEpoch: 0" in l for l in lines), "COMMIT marker line")
    check(any("endTxnMarker: ABORT coordinatorEpoch: 0" in l for l in lines), "ABORT marker line")
    check(any(l.startswith("| offset: 8 ") and "key: poison-key2 payload: poison SHOULD_NOT_SEE_THIS" in l
              for l in lines), "record line with key and payload")
    check("Non-consecutive" not in p.stdout.decode() + p.stderr.decode(), "no non-consecutive offsets noise")
    # Without --records: batch lines only.
    p = run(["dump", log], 0)
    check(not any(l.startswith("| ") for l in p.stdout.decode().splitlines()), "record lines without --records")


def test_kafka_python_bytes_exact():
    """--bytes base64 and hex are exact for batches kafka-python wrote (its expected.json)."""
    n = 0
    for name in sorted(os.listdir(PYTHON_VECTORS)):
        if not name.endswith(".log"):
            continue
        expected = json.load(open(os.path.join(PYTHON_VECTORS, name + ".expected.json")))
        for fmt in ("base64", "hex"):
            objs, _ = dump_json(["--records", "--bytes", fmt, os.path.join(PYTHON_VECTORS, name)])
            batches = [o for o in objs if o["type"] == "batch"]
            got = [r for b in batches for r in b["records"]]
            want = [r for b in expected for r in b["records"]]
            check(len(got) == len(want), "%s: %d records vs %d" % (name, len(got), len(want)))

            def conv(v):
                if v is None:
                    return None
                return v if fmt == "base64" else base64.b64decode(v).hex()
            for g, w in zip(got, want):
                where = "%s --bytes %s offset %d" % (name, fmt, w["offset"])
                check(g["offset"] == w["offset"], where + ": offset")
                check(g["key"] == conv(w["key"]), where + ": key %r vs %r" % (g["key"], conv(w["key"])))
                check(g["value"] == conv(w["value"]), where + ": value")
                gh = g["headers"] or []
                check([(h["key"], h["value"]) for h in gh] ==
                      [(klf_text(hk.encode()), conv(hv)) for hk, hv in w["headers"]],
                      where + ": headers %r vs %r" % (gh, w["headers"]))
                n += 1
            for b, w in zip(batches, expected):
                check(b["magic"] == w["magic"] and b["compression"] == w["compression"], name + ": batch")
                check(b["crcValid"] is True, name + ": crcValid")
    check(n > 20, "only %d records compared" % n)


def test_text_bytes_escaping():
    """--bytes text: valid UTF-8 as is, other bytes as \\xNN; null is JSON null."""
    # Control records have binary keys: 00 00 00 01 for COMMIT (spec §5.3).
    log = os.path.join(ORACLE, "b-txn/txn-0/00000000000000000007.log")
    objs, _ = dump_json(["--records", log])
    commit = [o for o in objs if o["type"] == "batch" and o["isControl"]][0]["records"][0]
    check(commit["key"] == "\\x00\\x00\\x00\\x01", "control key in text mode: %r" % commit["key"])
    tomb = None
    for dump_txt, target in oracle_sets():
        if "a-keyed" in target:
            objs, _ = dump_json(["--records", target])
            for o in objs:
                for r in o.get("records") or []:
                    if r["value"] is None:
                        tomb = r
            break
    check(tomb is not None and tomb["key"] is not None, "a tombstone with a null value")


def test_offsets_filter():
    """--offsets A:B keeps exactly the batches overlapping [A, B]."""
    pdir = os.path.join(ORACLE, "b-txn/txn-0")
    all_objs, _ = dump_json([pdir])
    all_batches = [o for o in all_objs if o["type"] == "batch"]
    check(len(all_batches) >= 10, "%s: only %d batches dumped" % (pdir, len(all_batches)))
    objs, _ = dump_json(["--offsets", "5:9", pdir])
    check(len([o for o in objs if o["type"] == "batch"]) >= 2, "--offsets 5:9 kept fewer than two batches")
    for a, b in ((5, 9), (0, 0), (8, 8), (14, 100), (100, 200), (3, 3)):
        objs, _ = dump_json(["--offsets", "%d:%d" % (a, b), pdir])
        got = [(o["file"], o["position"]) for o in objs if o["type"] == "batch"]
        want = [(o["file"], o["position"]) for o in all_batches if o["lastOffset"] >= a and o["baseOffset"] <= b]
        check(got == want, "--offsets %d:%d: %r vs %r" % (a, b, got, want))
        for o in objs:
            if o["type"] in ("offset-index-entry", "time-index-entry"):
                check(a <= o["offset"] <= b, "--offsets %d:%d: index entry %r" % (a, b, o))
    objs, _ = dump_json(["--offsets", "10:", pdir])
    check(all(o["lastOffset"] >= 10 for o in objs if o["type"] == "batch") and
          len([o for o in objs if o["type"] == "batch"]) == len([o for o in all_batches if o["lastOffset"] >= 10]),
          "--offsets 10:")
    objs, _ = dump_json(["--offsets", ":4", pdir])
    check([o["position"] for o in objs if o["type"] == "batch"] ==
          [o["position"] for o in all_batches if o["baseOffset"] <= 4], "--offsets :4")


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def tree_hashes(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[p] = (sha(p), os.stat(p).st_mtime_ns)
    return out


def copy_partition(tmp, rel):
    dst = os.path.join(tmp, os.path.basename(rel))
    shutil.copytree(os.path.join(ORACLE, rel), dst)
    return dst


def log_batches(objs, f):
    return [o for o in objs if o["type"] == "batch" and o["file"] == f]


def errors(objs, f=None):
    return [o for o in objs if "error" in o and (f is None or o["file"] == f)]


def test_damaged_copies():
    """Truncated, flipped-CRC, zero-tail and zeroed-header copies: error objects with file and
    position, exit 1, and the rest of the data still dumped."""
    with tempfile.TemporaryDirectory() as tmp:
        pdir = copy_partition(tmp, "b-txn/txn-0")
        clean, _ = dump_json(["--records", pdir])
        log0 = os.path.join(pdir, "00000000000000000000.log")
        log7 = os.path.join(pdir, "00000000000000000007.log")
        b0 = log_batches(clean, log0)
        b7 = log_batches(clean, log7)
        size0 = os.path.getsize(log0)

        # 1. Truncated: the last batch of segment 0 loses 10 bytes.
        with open(log0, "r+b") as f:
            f.truncate(size0 - 10)
        objs, p = dump_json(["--records", pdir], expect_rc=1)
        errs = errors(objs, log0)
        check(len(errs) == 1, "truncated: one problem reported once: %r" % errs)
        check(errs[0]["position"] == b0[-1]["position"], "truncated: position %r vs last batch %d" %
              (errs[0]["position"], b0[-1]["position"]))
        check(str(b0[-1]["sizeInBytes"] - 10) in errs[0]["error"] or "remain" in errs[0]["error"],
              "truncated: message gives byte counts: %r" % errs[0]["error"])
        check([b["position"] for b in log_batches(objs, log0)] == [b["position"] for b in b0[:-1]],
              "truncated: batches before the tail")
        check(len(log_batches(objs, log7)) == len(b7), "truncated: next segment still dumped")
        run(["dump", pdir], 1)  # text mode: same exit code

        # 2. Flipped CRC-covered byte (inside the records of batch 2 of segment 7).
        with open(log0, "wb") as f:
            f.write(open(os.path.join(ORACLE, "b-txn/txn-0/00000000000000000000.log"), "rb").read())
        victim = b7[1]
        with open(log7, "r+b") as f:
            f.seek(victim["position"] + 40)
            c = f.read(1)
            f.seek(victim["position"] + 40)
            f.write(bytes([c[0] ^ 0x01]))
        objs, _ = dump_json(["--records", pdir], expect_rc=1)
        errs = errors(objs, log7)
        check(errs, "flipped CRC: a problem")
        check(all(victim["position"] <= e["position"] < victim["position"] + victim["sizeInBytes"] for e in errs),
              "flipped CRC: positions inside the damaged batch: %r" % errs)
        got = log_batches(objs, log7)
        check(len(got) == len(b7), "flipped CRC: every batch still dumped")
        check(got[1]["crcValid"] is False and all(b["crcValid"] for i, b in enumerate(got) if i != 1),
              "flipped CRC: crcValid only false for the damaged batch")
        check(got[2]["records"] == b7[2]["records"], "flipped CRC: later batches decode")

        # 3. Zero tail (a preallocated segment after a crash).
        with open(log7, "wb") as f:
            f.write(open(os.path.join(ORACLE, "b-txn/txn-0/00000000000000000007.log"), "rb").read())
            f.write(b"\0" * 4096)
        objs, _ = dump_json([pdir], expect_rc=1)
        errs = errors(objs, log7)
        check(len(errs) == 1 and errs[0]["position"] == b7[-1]["position"] + b7[-1]["sizeInBytes"],
              "zero tail: one problem at the end of the data: %r" % errs)
        check("4096" in errs[0]["error"], "zero tail: byte count in the message: %r" % errs[0]["error"])
        check(len(log_batches(objs, log7)) == len(b7), "zero tail: all batches")

        # 4. A zeroed header in the middle: reported, then dumping resumes at the next batch.
        with open(log7, "wb") as f:
            f.write(open(os.path.join(ORACLE, "b-txn/txn-0/00000000000000000007.log"), "rb").read())
        with open(log7, "r+b") as f:
            f.seek(b7[1]["position"])
            f.write(b"\0" * 17)
        objs, _ = dump_json(["--records", pdir], expect_rc=1)
        errs = errors(objs, log7)
        check(errs and all(e["file"] == log7 and isinstance(e["position"], int) for e in errs),
              "zeroed header: problems name file and position: %r" % errs)
        got = [b["position"] for b in log_batches(objs, log7)]
        check(got == [b["position"] for i, b in enumerate(b7) if i != 1],
              "zeroed header: resumes after the damaged batch: %r" % got)

        # Text mode prints problems with file and position too.
        p = run(["dump", pdir], 1)
        check(re.search(re.escape(log7) + r": position \d+: (error|warning): ", p.stdout.decode()),
              "text mode problem line")


def test_usage_and_unreadable():
    run([], 2)
    run(["nosuchcommand"], 2)
    run(["dump"], 2)
    run(["dump", "--bytes", "octal", ORACLE], 2)
    run(["dump", "--offsets", "9:3", ORACLE], 2)
    run(["dump", "--offsets", "x", ORACLE], 2)
    run(["dump", "--no-such-flag", ORACLE], 2)
    p = run(["dump", "/nonexistent/klf-test/00000000000000000000.log"], 3)
    check("/nonexistent/klf-test/00000000000000000000.log" in p.stderr.decode(), "missing file named on stderr")
    check(len(p.stderr.decode().strip().splitlines()) == 1, "one line on stderr: %r" % p.stderr)
    # A missing path among good ones: the good ones are still dumped, exit 3.
    good = os.path.join(ORACLE, "b-txn/txn-0/00000000000000000015.log")
    objs, _ = dump_json(["/nonexistent/x.log", good], expect_rc=3)
    # The missing path is the JSON error object of README "Conventions", a line where it was given.
    check(len(objs) == 3 and objs[0].get("type") == "error" and objs[0].get("command") == "dump"
          and objs[0].get("exitCode") == 3 and "/nonexistent/x.log" in objs[0].get("error", ""),
          "missing path: no error object first: %r" % objs[:1])
    check(len(objs) == 3 and all(o.get("type") == "batch" for o in objs[1:]), "good path dumped after a missing one")
    for args in (["--help"], ["dump", "--help"]):
        p = run(args, 0)
        check(b"dump" in p.stdout, "help text")
    p = run(["dump", "--help"], 0)
    for opt in (b"--records", b"--json", b"--bytes", b"--offsets"):
        check(opt in p.stdout, "dump --help mentions %r" % opt)
    p = run(["--version"], 0)
    check(p.stdout.startswith(b"klf "), "version")


def test_inputs_unchanged():
    """Running every dump mode over fixtures leaves every byte and mtime as it was."""
    roots = [os.path.join(ORACLE, "replicas"), os.path.join(ORACLE, "b-txn"), PYTHON_VECTORS]
    before = {}
    for r in roots:
        before.update(tree_hashes(r))
    for r in roots:
        run(["dump", r if r == PYTHON_VECTORS else os.path.join(r, os.listdir(r)[0])])
    for sub in ("replicas/aborted-to-committed/broker2", "b-txn/txn-0"):
        run(["dump", "--records", "--json", os.path.join(ORACLE, sub)], 0)
        run(["dump", "--records", "--bytes", "hex", os.path.join(ORACLE, sub)], 0)
    after = {}
    for r in roots:
        after.update(tree_hashes(r))
    check(before == after, "fixture files changed: %r" %
          sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)))


def test_poison_visible_on_broker2():
    """The demo's story: broker 2 still holds the poison record, without its ABORT marker."""
    d = os.path.join(ORACLE, "replicas/aborted-to-committed")
    poison = {}
    aborts = {}
    for b in ("broker1", "broker2", "broker3"):
        objs, _ = dump_json(["--records", os.path.join(d, b, "foo-0")])
        recs = [(o, r) for o in objs if o["type"] == "batch" for r in o["records"]]
        poison[b] = [r for o, r in recs if r["value"] and "SHOULD_NOT_SEE_THIS" in r["value"]]
        aborts[b] = [r for o, r in recs if r.get("control") and r["control"]["type"] == "ABORT"]
    check(poison["broker2"] and not aborts["broker2"], "broker2 has poison without ABORT")


def test_random_damage_never_crashes():
    """Random byte flips, truncations and garbage in logs of every codec and magic: klf dump never
    crashes, prints only JSON lines, exits 0 or 1, and every problem names the file and a position
    inside it."""
    import random
    rng = random.Random(20261202)
    sources = [os.path.join(ORACLE, "x-legacy/legacy-0/00000000000000000000.log"),
               os.path.join(ORACLE, "x-legacy/legacy-0/00000000000000000013.log"),
               os.path.join(ORACLE, "b-txn/txn-0/00000000000000000007.log")]
    sources += [os.path.join(ORACLE, "a-keyed/keyed-%s-0/00000000000000000000.log" % c)
                for c in ("gzip", "snappy", "lz4", "zstd")]
    runs = objects = 0
    with tempfile.TemporaryDirectory() as tmp:
        for src in sources:
            check(os.path.exists(src), "missing fixture " + src)
            data = open(src, "rb").read()
            for i in range(40):
                b = bytearray(data)
                action = rng.choice(["flip", "flip", "flip", "truncate", "garbage", "zero-run"])
                if action == "flip":
                    for _ in range(rng.randint(1, 4)):
                        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
                elif action == "truncate":
                    del b[rng.randrange(len(b)):]
                elif action == "garbage":
                    at = rng.randrange(len(b))
                    b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
                else:
                    at = rng.randrange(len(b))
                    n = rng.randint(1, 64)
                    b[at:at + n] = bytes(min(n, len(b) - at))
                f = os.path.join(tmp, "%020d.log" % (runs % 7))
                with open(f, "wb") as out:
                    out.write(bytes(b))
                for mode in (["--json", "--records"], ["--records", "--bytes", "hex"]):
                    p = subprocess.run([KLF, "dump"] + mode + [f], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    where = "%s %s #%d (%s)" % (src, mode, i, action)
                    check(p.returncode in (0, 1), "%s: exit %d, stderr %r" % (where, p.returncode, p.stderr[-500:]))
                    if mode[0] == "--json":
                        errors = 0
                        for line in p.stdout.decode("utf-8").splitlines():
                            o = json.loads(line)
                            objects += 1
                            check(o["file"] == f, where + ": file")
                            if "error" in o:
                                check(0 <= o["position"] <= len(b), where + ": position %r" % o["position"])
                                check(o.get("severity") in ("error", "warning", "info"), where + ": severity")
                                errors += o.get("severity") == "error"
                        # Errors make the exit code 1; warnings (a torn tail that recovery truncates) and
                        # notes are printed and leave it 0, as in verify.
                        check((p.returncode == 1) == (errors > 0),
                              "%s: exit %d with %d error objects" % (where, p.returncode, errors))
                runs += 1
    check(runs == 40 * len(sources), "runs")
    check(objects > 2 * runs, "only %d JSON objects in %d damaged dumps" % (objects, runs))


def test_kraft_snapshot_file():
    """A KRaft snapshot written by a real broker (spec §13): v2 batches framed by SNAPSHOT_HEADER and
    SNAPSHOT_FOOTER control records; the name gives end offset and epoch."""
    d = os.path.join(FIXTURES, "real/ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/"
                               "kafka-data/__cluster_metadata-0")
    f = os.path.join(d, "00000000000000007364-0000000001.checkpoint")
    objs, _ = dump_json(["--records", f])
    batches = [o for o in objs if o["type"] == "batch"]
    check(batches and all(b["crcValid"] for b in batches), "snapshot batches with valid CRCs")
    first, last = batches[0]["records"][0], batches[-1]["records"][-1]
    check(first["control"]["type"] == "SNAPSHOT_HEADER" and first["control"]["coordinatorEpoch"] is None,
          "first record: %r" % first.get("control"))
    check(last["control"]["type"] == "SNAPSHOT_FOOTER", "last record: %r" % last.get("control"))
    check(all(r["key"] is None for b in batches if not b["isControl"] for r in b["records"]),
          "metadata records have null keys")
    p = run(["dump", "--records", f], 0)
    out = p.stdout.decode()
    # kafka-dump-log prints a snapshot's control records with their JSON (dump-log-segments.md §3.2).
    check("Snapshot end offset: 7364, epoch: 1" in out and " SnapshotHeader {" in out and " SnapshotFooter {" in out
          and '"lastContainedLogTimestamp":' in out, "text mode snapshot header and footer")


def test_per_record_matches_kafka():
    """--json --per-record: one object per record (kcat -J style) with its batch's producer and flags, equal to
    Kafka's dump.txt record by record over every kafka-oracle directory; other entries keep their objects."""
    count = 0
    for dump_txt, target in oracle_sets():
        oracle = parse_oracle(dump_txt)
        objs, _ = dump_json(["--per-record", "--bytes", "hex", target], expect_rc=0)
        check(not [o for o in objs if o.get("type") == "batch"], target + ": batch objects with --per-record")
        txn_entries = sum(len(e) for d in oracle.values() for e in d["txn-index"].values())
        check(len([o for o in objs if o.get("type") == "txn-index-entry"]) == txn_entries,
              target + ": the .txnindex entries Kafka lists are still dumped as their own objects")
        records = by_file(objs, "record")
        for part, data in oracle.items():
            pdir = partition_path(target, part)
            topic, partition = part.rsplit("-", 1)
            for seg, obatches in data["logs"].items():
                f = os.path.normpath(os.path.join(pdir, seg))
                want = [(ob, ro) for ob in obatches for ro in ob["records"]]
                got = records.get(f, [])
                check(len(got) == len(want), "%s: %d record objects, Kafka has %d records" % (f, len(got), len(want)))
                for (ob, ro), r in zip(want, got):
                    where = "%s offset %s" % (f, ro["offset"])
                    magic = int(ob["magic"])
                    key, value = oracle_bytes(ro["key"]), oracle_bytes(ro["value"])
                    check(r["topic"] == topic and r["partition"] == int(partition), where + ": topic/partition")
                    check(r["position"] == int(ob["position"]), where + ": batch position")
                    check(r["offset"] == int(ro["offset"]), where + ": offset")
                    check(r["timestamp"] == (None if magic == 0 else int(ro["timestamp"])), where + ": timestamp")
                    check(r["key"] == (None if key is None else key.hex()), where + ": key")
                    check(r["value"] == (None if value is None else value.hex()), where + ": value")
                    if magic < 2:
                        check(r["producerId"] is None and r["isTransactional"] is None and r["isControl"] is None
                              and r["headers"] is None, where + ": legacy fields are null")
                    else:
                        check(r["producerId"] == int(ob["producerId"]) and
                              r["producerEpoch"] == int(ob["producerEpoch"]) and
                              r["isTransactional"] == (ob["isTransactional"] == "true") and
                              r["isControl"] == (ob["isControl"] == "true") and
                              r["sequence"] == int(ro["sequence"]), where + ": batch fields %r vs %r" % (r, ob))
                        got_h = [(h["key"], None if h["value"] is None else bytes.fromhex(h["value"])) for h in r["headers"]]
                        want_h = [(klf_text(k), v) for k, v in oracle_headers(ro.get("headers", "[]"))]
                        check(got_h == want_h, where + ": headers %r vs %r" % (got_h, want_h))
                    if "controlType" in ro:
                        check((r.get("control") or {}).get("type") == ro["controlType"], where + ": control type")
                    else:
                        check("control" not in r, where + ": data record has 'control'")
                    count += 1
    check(count > 2000, "only %d records compared" % count)
    # Text output is unchanged by --per-record: kafka-dump-log's lines.
    log = os.path.join(ORACLE, "b-txn/txn-0/00000000000000000007.log")
    check(run(["dump", "--per-record", log], 0).stdout == run(["dump", "--records", log], 0).stdout,
          "text output with --per-record differs from --records")


run_tests(globals())
