#!/usr/bin/python3
"""End-to-end tests of `klf dump`'s decoders for Kafka's internal topics (issue 18 item 1).

Ground truth (fixtures/kafka4, written by Kafka's own serializers at 4.0.0-SNAPSHOT):
  * <fixture>/dump/written/<file>.txt: kafka-dump-log.sh with the matching decoder; klf's batch and
    record lines must equal them line for line (a transaction's partitions compare as a set, since
    Kafka prints them in a Scala hash set's order: fixtures/kafka4/README.md);
  * <fixture>/truth/records.json: every key and value as Kafka's JSON converters print them; klf's
    "decoded" objects must equal them.
Real brokers' __consumer_offsets, __transaction_state and __cluster_metadata (fixtures/real, Kafka
2.x-3.x) must decode with no unknown type and no leftover byte.

Environment (set by CTest): KLF_BINARY, KLF_FIXTURES_DIR, KLF_SOURCE_DIR.
"""
import glob
import json
import os
import re
import shutil

from klf_e2e import FIX, REAL, check, fail, process, run_tests, temp_dir

KAFKA4 = os.path.join(FIX, "kafka4")
FIXTURES = {"txn-state": "__transaction_state-0", "consumer-offsets": "__consumer_offsets-0",
            "cluster-metadata": "__cluster_metadata-0"}


def klf(args, expect_rc=0):
    p = process(args)
    if expect_rc is not None and p.returncode != expect_rc:
        fail("klf %s: exit %s, expected %d\nstderr: %s" % (" ".join(args), p.returncode, expect_rc, p.stderr[-2000:]))
    return p


def json_lines(p):
    return [json.loads(line) for line in p.stdout.splitlines()]


PARTITIONS = re.compile(r"partitions=\[([^\]]*)\]")


def normalized(line):
    """A record line with its transaction partition set sorted (Kafka prints a hash set's order)."""
    return PARTITIONS.sub(lambda m: "partitions=[" + ",".join(sorted(filter(None, m.group(1).split(",")))) + "]", line)


def data_lines(text):
    return [normalized(l) for l in text.splitlines() if l.startswith("| ") or l.startswith("baseOffset: ")]


def test_text_lines_equal_kafka_dump_log():
    total = 0
    for fixture, partition in FIXTURES.items():
        for expected in sorted(glob.glob(os.path.join(KAFKA4, fixture, "dump", "written", "*.txt"))):
            name = os.path.basename(expected)[:-len(".txt")]
            if not (name.endswith(".log") or name.endswith(".checkpoint")):
                continue
            path = os.path.join(KAFKA4, fixture, "written", partition, name)
            p = klf(["dump", "--records", path])
            want = data_lines(open(expected).read())
            got = data_lines(p.stdout)
            check(len(want) > 0, f"{expected}: no record lines")
            if got != want:
                for i, (g, w) in enumerate(zip(got, want)):
                    if g != w:
                        fail(f"{fixture}/{name}: line {i + 1} differs:\n  klf:   {g}\n  kafka: {w}")
                        break
                else:
                    fail(f"{fixture}/{name}: {len(got)} lines, kafka-dump-log printed {len(want)}")
            total += len(want)
    print(f"  {total} batch and record lines equal kafka-dump-log's")


def decoded_by_offset(partition_dir):
    out = {}
    for o in json_lines(klf(["dump", "--json", "--records", partition_dir])):
        for r in o.get("records") or []:
            out[r["offset"]] = r
    return out


def test_json_equals_truth_transaction_log():
    truth = json.load(open(os.path.join(KAFKA4, "txn-state", "truth", "records.json")))
    got = decoded_by_offset(os.path.join(KAFKA4, "txn-state", "written", FIXTURES["txn-state"]))
    for t in truth:
        r = got.get(t["offset"])
        if not check(r is not None and r.get("decoded") is not None, f"txn-state offset {t['offset']}: not decoded"):
            continue
        d = r["decoded"]
        want = {"keyVersion": t["keyVersion"], "key": t["key"], "valueVersion": t["valueVersion"], "value": t["value"]}
        if "state" in t:
            want["state"] = t["state"]
        check(d == want, f"txn-state offset {t['offset']}: decoded {d}\n  truth {want}")
    check(len(got) == len(truth), f"txn-state: {len(got)} records, truth has {len(truth)}")
    print(f"  {len(truth)} __transaction_state records equal truth/records.json")


def test_json_equals_truth_offsets():
    truth = json.load(open(os.path.join(KAFKA4, "consumer-offsets", "truth", "records.json")))
    got = decoded_by_offset(os.path.join(KAFKA4, "consumer-offsets", "written", FIXTURES["consumer-offsets"]))
    for t in truth:
        r = got.get(t["offset"])
        if not check(r is not None, f"consumer-offsets offset {t['offset']}: missing"):
            continue
        if t["control"]:
            check(r.get("control", {}).get("type") == t["controlType"] and "decoded" not in r,
                  f"consumer-offsets offset {t['offset']}: marker {r}")
            continue
        d = r.get("decoded")
        if not check(d is not None, f"consumer-offsets offset {t['offset']}: not decoded"):
            continue
        key = json.loads(t["decodedKey"])
        check(d["recordType"] == t["recordType"] and str(d["recordType"]) == key["type"] and d["key"] == key["data"],
              f"consumer-offsets offset {t['offset']}: key {d['recordType']} {d['key']}\n  truth {key}")
        if t["decodedValue"] == "<DELETE>":
            check(d["value"] is None and d["valueVersion"] is None, f"consumer-offsets offset {t['offset']}: not a tombstone")
        else:
            value = json.loads(t["decodedValue"])
            check(str(d["valueVersion"]) == value["version"] and d["valueVersion"] == t["valueVersion"] and
                  d["value"] == value["data"],
                  f"consumer-offsets offset {t['offset']}: value {d['valueVersion']} {d['value']}\n  truth {value}")
    print(f"  {len(truth)} __consumer_offsets records equal truth/records.json")


def test_cluster_metadata_json():
    d = os.path.join(KAFKA4, "cluster-metadata", "written", FIXTURES["cluster-metadata"])
    objs = json_lines(klf(["dump", "--json", "--records", d]))
    types = set()
    for o in objs:
        for r in o.get("records") or []:
            check(r.get("decoded") is not None, f"{o['file']} offset {r['offset']}: not decoded")
            if r.get("decoded"):
                types.add(r["decoded"]["type"])
    for t in ("FEATURE_LEVEL_RECORD", "REGISTER_BROKER_RECORD", "PARTITION_CHANGE_RECORD", "LeaderChangeMessage",
              "SnapshotHeaderRecord", "SnapshotFooterRecord", "KRaftVersionRecord", "VotersRecord"):
        check(t in types, f"cluster-metadata: no {t} decoded (got {sorted(types)})")
    qs = [o for o in objs if o.get("type") == "quorum-state"]
    check(len(qs) == 1 and qs[0]["data"] == json.load(open(os.path.join(d, "quorum-state"))),
          f"quorum-state: {qs}")
    p = klf(["dump", os.path.join(d, "quorum-state")])
    check("leaderId: 3001 leaderEpoch: 2" in p.stdout, f"quorum-state text: {p.stdout}")


def test_decoder_none_and_forced():
    log = os.path.join(KAFKA4, "txn-state", "written", FIXTURES["txn-state"], "00000000000000000000.log")
    objs = json_lines(klf(["dump", "--json", "--records", "--decoder", "none", log]))
    check(all("decoded" not in r for o in objs for r in o.get("records") or []), "--decoder none: records decoded")
    check("key: \\x00\\x00" in klf(["dump", "--records", "--decoder", "none", log]).stdout, "--decoder none: raw text")
    # A copy in a directory whose name is no internal topic: auto decodes nothing, a forced decoder does.
    with temp_dir() as tmp:
        copy = os.path.join(tmp, "copy.log")
        shutil.copyfile(log, copy)
        objs = json_lines(klf(["dump", "--json", "--records", copy]))
        check(all("decoded" not in r for o in objs for r in o.get("records") or []), "auto on a user topic: decoded")
        p = klf(["dump", "--records", "--decoder", "transaction-log", copy])
        check("key: transaction_metadata::transactionalId=app-tv0 payload: producerId:3000" in p.stdout,
              f"--decoder transaction-log: {p.stdout[:500]}")


def test_wrong_decoder_is_a_problem_with_raw_bytes():
    """Strict: a record that does not decode is a problem naming file and position; its raw bytes are
    still printed, and the dump goes on."""
    log = os.path.join(KAFKA4, "txn-state", "written", FIXTURES["txn-state"], "00000000000000000000.log")
    p = klf(["dump", "--json", "--records", "--decoder", "cluster-metadata", log], expect_rc=1)
    objs = json_lines(p)
    errors = [o for o in objs if o.get("type") == "error"]
    batches = [o for o in objs if o.get("type") == "batch"]
    check(len(errors) == 15 and all(e["check"] == "internal-record" and e["file"] == log for e in errors),
          f"wrong decoder: {len(errors)} problems: {errors[:2]}")
    check(sorted(e["position"] for e in errors) == sorted(b["position"] for b in batches), "problem positions")
    check(all(r["decoded"] is None and r["value"] is not None for b in batches for r in b["records"]),
          "wrong decoder: raw values not kept")
    p = klf(["dump", "--records", "--decoder", "offsets", log], expect_rc=1)
    check(re.search(r"position 0: error: record at offset 0 \(offsets decoder\): key: .*\[internal-record\]", p.stdout),
          f"wrong decoder text: {p.stdout[:800]}")
    check("key: \\x00\\x00\\x00\\x07app-tv0" in p.stdout, "wrong decoder text: raw key not printed")


def test_real_brokers_decode():
    dirs = []
    for root, ds, fs in os.walk(REAL):
        dirs += [os.path.join(root, d) for d in ds
                 if d.startswith(("__consumer_offsets-", "__transaction_state-", "__cluster_metadata-"))]
        dirs += [os.path.join(root, f) for f in fs if f == "bootstrap.checkpoint"]
    counts = {}
    for d in sorted(dirs):
        p = klf(["dump", "--json", "--records", d], expect_rc=None)
        for o in json_lines(p):
            if o.get("type") == "error":
                check(o["check"] != "internal-record", f"{o['file']} position {o['position']}: {o['error']}")
            for r in o.get("records") or []:
                topic = "bootstrap" if o["file"].endswith("bootstrap.checkpoint") else \
                    os.path.basename(os.path.dirname(o["file"])).rsplit("-", 1)[0]
                if check(r.get("decoded") is not None, f"{o['file']} offset {r['offset']}: not decoded"):
                    counts[topic] = counts.get(topic, 0) + 1
    for topic in ("__consumer_offsets", "__transaction_state", "__cluster_metadata"):
        check(counts.get(topic, 0) > 0, f"real: no {topic} record decoded")
    print(f"  real brokers: {counts} records decoded, none unknown, no leftover byte")


# __remote_log_metadata: no Kafka-written partition is among the fixtures, so the records are encoded
# here by hand from Kafka's JSON message definitions (storage/src/main/resources/message at the
# fixtures' commit: flexible version 0, compact strings, arrays and bytes, 16-byte uuids, empty tagged
# field sections), framed as AbstractApiMessageSerde.write frames them, and put in batches built by an
# independent client library (kafka-python). The expected text is the toString of the objects
# RemoteLogMetadataSerde.deserialize builds (RemoteLogSegmentMetadata, ...Update,
# RemotePartitionDeleteMetadata), as kafka-dump-log --remote-log-metadata-decoder prints them.
def _uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _cstring(s):
    b = s.encode()
    return _uvarint(len(b) + 1) + b


def _cbytes(b):
    return _uvarint(0) if b is None else _uvarint(len(b) + 1) + b


def _uuid_text(u):
    import base64
    return base64.urlsafe_b64encode(u).decode().rstrip("=")


def _topic_id_partition(name, uid, partition):
    import struct
    return _cstring(name) + uid + struct.pack(">i", partition) + _uvarint(0)


def _frame(api_key, body):
    return _uvarint(1) + _uvarint(api_key) + _uvarint(0) + body + _uvarint(0)


def _remote_records():
    """(value bytes, expected text or None for a record Kafka's deserializer refuses, expected type)."""
    import struct
    topic_id, seg_id = bytes(range(1, 17)), bytes(range(100, 116))
    tip = _topic_id_partition("orders", topic_id, 3)
    seg = tip + seg_id + _uvarint(0)
    tip_text = f"{_uuid_text(topic_id)}:orders-3"
    seg_text = f"RemoteLogSegmentId{{topicIdPartition={tip_text}, id={_uuid_text(seg_id)}}}"

    def segment(state, epochs, start=0, end=99, custom=None):
        body = seg + struct.pack(">qqiqq", start, end, 1, 1700000001000, 1700000002000)
        body += _uvarint(len(epochs) + 1) + b"".join(struct.pack(">iq", e, o) + _uvarint(0) for e, o in epochs)
        return _frame(0, body + struct.pack(">i", 4096) + _cbytes(custom) + struct.pack(">b", state))

    out = [
        (segment(0, [(2, 50), (0, 0)]),
         f"RemoteLogSegmentMetadata{{remoteLogSegmentId={seg_text}, startOffset=0, endOffset=99, brokerId=1, "
         f"maxTimestampMs=1700000001000, eventTimestampMs=1700000002000, segmentLeaderEpochs={{0=0, 2=50}}, "
         f"segmentSizeInBytes=4096, customMetadata=Optional.empty, state=COPY_SEGMENT_STARTED}}",
         "RemoteLogSegmentMetadataRecord"),
        (_frame(1, seg + struct.pack(">iq", 2, 1700000003000) + _cbytes(b"hello") + struct.pack(">b", 1)),
         f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={seg_text}, customMetadata=Optional[CustomMetadata{{5 "
         f"bytes}}], state=COPY_SEGMENT_FINISHED, eventTimestampMs=1700000003000, brokerId=2}}",
         "RemoteLogSegmentMetadataUpdateRecord"),
        (_frame(2, tip + struct.pack(">iqb", 0, 1700000004000, 0)),
         f"RemotePartitionDeleteMetadata{{topicPartition={tip_text}, state=DELETE_PARTITION_MARKED, "
         f"eventTimestampMs=1700000004000, brokerId=0}}",
         "RemotePartitionDeleteMetadataRecord"),
        (segment(7, [(0, 0)]), None, None),           # RemoteLogSegmentState.forId(7) throws
        (segment(0, []), None, None),                 # segmentLeaderEpochs can not be null or empty
        (segment(0, [(0, 0)], start=10, end=5), None, None),  # EndOffset below StartOffset
        (segment(0, [(0, 0)]) + b"\x00", None, None),  # a byte left over
    ]
    return out


def test_remote_log_metadata_decoder():
    from kafka.record.default_records import DefaultRecordBatchBuilder
    records = _remote_records()
    with temp_dir() as tmp:
        part = os.path.join(tmp, "__remote_log_metadata-0")
        os.makedirs(part)
        log = os.path.join(part, "00000000000000000000.log")
        with open(log, "wb") as f:
            for i, (value, _, _) in enumerate(records):
                b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=2**20)
                b.append(0, 1700000000000 + i, None, value, [])
                entry = bytearray(b.build())
                entry[0:8] = i.to_bytes(8, "big")  # base offset i, outside the CRC
                f.write(bytes(entry))
        p = klf(["dump", "--records", log], expect_rc=None)
        payloads = [l.split(" payload: ", 1)[1] if " payload: " in l else None
                    for l in p.stdout.splitlines() if l.startswith("| offset: ")]
        check(len(payloads) == len(records), f"{len(payloads)} record lines, {len(records)} records:\n{p.stdout}")
        for i, ((_, text, _), got) in enumerate(zip(records, payloads)):
            if text is not None:
                check(got == text, f"offset {i}: {got!r}\nexpected {text!r}")
        p = klf(["dump", "--json", "--records", log], expect_rc=None)
        check(p.returncode == 1, f"dump of refused records: exit {p.returncode}, expected 1")
        decoded = [r.get("decoded") for b in json_lines(p) if "records" in b for r in b["records"]]
        problems = [b for b in json_lines(p) if "error" in b or "severity" in b]
        for i, ((_, text, kind), d) in enumerate(zip(records, decoded)):
            if kind is None:
                check(d is None, f"offset {i}: a record Kafka refuses decoded as {d}")
            else:
                check(d is not None and d["type"] == kind and d["version"] == 0, f"offset {i}: decoded {d}")
        check(len(problems) >= 4, f"each refused record is a problem: {problems}")
        # Forced on the same bytes by name, as kafka-dump-log's flag does.
        p = klf(["dump", "--records", "--remote-log-metadata-decoder", log], expect_rc=None)
        check(records[0][1] in p.stdout, "--remote-log-metadata-decoder")


if __name__ == "__main__":
    run_tests(globals())
