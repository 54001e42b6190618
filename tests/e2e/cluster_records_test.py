#!/usr/bin/python3
"""End-to-end tests of the cluster's own records as input to `klf diff` and `klf compact` (issue 18
items 4 and 5): the KRaft metadata log (topic and broker configs, each partition's leader/ISR history)
and `__consumer_offsets` (which consumer groups read past a divergence, and where they must rewind to).

Every segment, snapshot and index byte below was written by Kafka's own code:
  * kafka-oracle/replicas/aborted-to-committed: three brokers' copies of one partition, where broker2
    serves the aborted `poison` record at offset 43 as committed (truth.json);
  * kafka4/cluster-metadata/written/__cluster_metadata-0 (topic `tv2-txn`, its partition 0's ISR shrink,
    expand and leader change) and its dump/ (kafka-dump-log --cluster-metadata-decoder);
  * kafka4/consumer-offsets/written/__consumer_offsets-0 (groups committing on `orders-0`) and
    truth/records.json (every record as Kafka's converters print it);
  * kafka4/tv2-txn/written/tv2-txn-0, a partition of the same fixture cluster as the metadata log.
What could not be had from Kafka's bytes: no Kafka-written diverged replica set belongs to a topic that
the kafka4 metadata or offsets partitions name (the replica sets are all of topic `foo`). So the
captures below rename the replicas' partition directories (`foo-0` -> `orders-0`, `tv2-txn-0`) and the
topic in their log dirs' checkpoint text files; the segment bytes are untouched. The groups and the
history the test expects are derived here from Kafka's decoded output, not from klf's code.

Environment (set by CTest): KLF_BINARY, KLF_FIXTURES_DIR, KLF_SOURCE_DIR.
"""
import datetime
import json
import os
import re

from klf_e2e import FIX, REAL, REPLICAS, check, copy_fixture, run, run_json, run_tests, snapshot, temp_dir

KAFKA4 = os.path.join(FIX, "kafka4")
A2C = os.path.join(REPLICAS, "aborted-to-committed")
METADATA = os.path.join(KAFKA4, "cluster-metadata")
OFFSETS = os.path.join(KAFKA4, "consumer-offsets")
TV2 = os.path.join(KAFKA4, "tv2-txn")


def load(path):
    with open(path) as f:
        return json.load(f)


def iso(ms):
    t = datetime.datetime.fromtimestamp(ms // 1000, tz=datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (ms % 1000)


def capture(root, topic, offsets=False, metadata=False):
    """Three broker log dirs holding the aborted-to-committed replicas as `<topic>-0`; broker1 also holds
    Kafka's __consumer_offsets-0, broker2 its __cluster_metadata-0. Returns the log dirs."""
    dirs = []
    for b in ("broker1", "broker2", "broker3"):
        d = copy_fixture(os.path.join(A2C, b), os.path.join(root, b))
        os.rename(os.path.join(d, "foo-0"), os.path.join(d, topic + "-0"))
        for name in os.listdir(d):
            if name.endswith("checkpoint"):
                p = os.path.join(d, name)
                with open(p) as f:
                    text = f.read()
                with open(p, "w") as f:
                    f.write(re.sub(r"(?m)^foo ", topic + " ", text))
        dirs.append(d)
    if offsets:
        copy_fixture(os.path.join(OFFSETS, "written", "__consumer_offsets-0"), os.path.join(dirs[0], "__consumer_offsets-0"))
    if metadata:
        copy_fixture(os.path.join(METADATA, "written", "__cluster_metadata-0"), os.path.join(dirs[1], "__cluster_metadata-0"))
    return dirs


def committed_offsets(topic, partition):
    """group -> offset on topic-partition, replayed from Kafka's decoding (truth/records.json) as the group
    coordinator replays it: the latest OffsetCommit wins, a tombstone deletes, a transactional commit waits
    for its producer's marker (COMMIT applies it, ABORT drops it)."""
    want, pending = {}, {}
    for r in load(os.path.join(OFFSETS, "truth", "records.json")):
        if r["control"]:
            p = pending.pop(r["producerId"], {})
            if r["controlType"] == "COMMIT":
                want.update(p)
            continue
        if r.get("recordType") not in (0, 1):
            continue
        key = json.loads(r["decodedKey"])["data"]
        k = (key["group"], key["topic"], key["partition"])
        if r["decodedValue"] == "<DELETE>":
            want.pop(k, None)
        elif r["transactional"]:
            pending.setdefault(r["producerId"], {})[k] = json.loads(r["decodedValue"])["data"]["offset"]
        else:
            want[k] = json.loads(r["decodedValue"])["data"]["offset"]
    return {g: o for (g, t, p), o in want.items() if t == topic and p == partition}


def metadata_history(partition):
    """The PartitionRecord / PartitionChangeRecord records of tv2-txn partition `partition` in the log, as
    kafka-dump-log printed them: (offset, timestamp, data)."""
    out = []
    line = re.compile(r"^\| offset: (\d+) CreateTime: (\d+) .* payload: (\{.*\})$")
    for name in ("00000000000000000000.log.txt", "00000000000000000021.log.txt"):
        with open(os.path.join(METADATA, "dump", "written", name)) as f:
            for l in f:
                m = line.match(l.rstrip("\n"))
                if not m:
                    continue
                p = json.loads(m.group(3))
                if p["type"] in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") and p["data"]["partitionId"] == partition:
                    out.append((int(m.group(1)), int(m.group(2)), p["data"]))
    return out


def test_diff_names_the_groups_that_read_past_a_divergence():
    truth = load(os.path.join(A2C, "truth.json"))
    first = truth["keyOffsets"]["poison (T1 data)"]
    groups = committed_offsets("orders", 0)
    past = {g: o for g, o in groups.items() if o > first}
    check(len(past) >= 1 and len(past) < len(groups), f"the fixtures should give groups on both sides: {groups}")
    fixtures_before = snapshot(A2C), snapshot(OFFSETS)
    with temp_dir() as root:
        dirs = capture(root, "orders", offsets=True)
        before = snapshot(root)
        rc, j, err = run_json("diff", "--json", *dirs)
        check(rc == 1, f"exit {rc}, want 1 ({err})")
        check(j["offsetsLog"] == [os.path.join(dirs[0], "__consumer_offsets-0")], f"offsetsLog {j.get('offsetsLog')}")
        findings = [f for f in j["findings"] if f["divergence"]]
        check(len(findings) == 1 and findings[0]["kind"] == "lost_abort", f"findings {findings}")
        got = {g["group"]: g for g in findings[0]["consumerGroups"]}
        check({g: x["committedOffset"] for g, x in got.items()} == past, f"groups {got}, want {past}")
        check(all(x["rewindTo"] == first for x in got.values()), f"rewindTo {got}")
        # Text: one line per group, with the offset to rewind to.
        rc, out, err = run("diff", *dirs)
        for g, o in past.items():
            check(f"consumer group {g}: committed offset {o} " in out and f"rewind to {first}" in out,
                  f"text lacks group {g}: {out}")
        for g in set(groups) - set(past):
            check(f"consumer group {g}:" not in out, f"group {g} did not read past {first}: {out}")
        # Given explicitly (the fixture itself, read-only), the same answer; --no-offsets-log: none.
        rc, j2, err = run_json("diff", "--json", "--offsets-log", os.path.join(OFFSETS, "written"),
                               *[os.path.join(d, "orders-0") for d in dirs])
        check(j2 is not None and {g["group"] for g in j2["findings"][0]["consumerGroups"]} == set(past),
              f"--offsets-log: {j2 and j2['findings']}")
        rc, j3, err = run_json("diff", "--json", "--no-offsets-log", *dirs)
        check(j3["offsetsLog"] == [] and j3["findings"][0]["consumerGroups"] is None, "--no-offsets-log")
        rc, out, err = run("diff", "--offsets-log", os.path.join(root, "nowhere"), *dirs)
        check(rc == 3 and "nowhere" in err, f"a missing --offsets-log: exit {rc} {err}")
        check(snapshot(root) == before, "the capture was modified")
    check((snapshot(A2C), snapshot(OFFSETS)) == fixtures_before, "fixtures modified")


def test_diff_says_plainly_when_no_consumer_offsets_was_found():
    with temp_dir() as root:
        dirs = capture(root, "orders")
        rc, out, err = run("diff", *dirs)
        check("no __consumer_offsets found" in out, f"text: {out}")
        rc, j, err = run_json("diff", "--json", *dirs)
        check(j["offsetsLog"] == [] and all(f["consumerGroups"] is None for f in j["findings"]), "json")


def test_diff_shows_the_leader_and_isr_history():
    want = metadata_history(0)
    check([o for o, _, _ in want] == [15, 21, 23, 24], f"the fixture's history: {want}")
    with temp_dir() as root:
        dirs = capture(root, "tv2-txn", metadata=True)
        before = snapshot(root)
        rc, j, err = run_json("diff", "--json", *[os.path.join(d, "tv2-txn-0") for d in dirs])
        check(rc == 1, f"exit {rc} ({err})")
        h = j["leaderIsrHistory"]
        check(h is not None and h["topicId"] == want[0][2]["topicId"], f"history {h}")
        events = h["events"] if h else []
        check([(e["offset"], e["timestamp"]) for e in events] == [(o, t) for o, t, _ in want],
              f"events {[(e['offset'], e['timestamp']) for e in events]}")
        # Each record's change, replayed from Kafka's decoding: isr when given, leader when given
        # (then the leader epoch is one more).
        isr, leader, epoch = None, None, None
        for e, (o, t, d) in zip(events, want):
            if "replicas" in d and "leaderEpoch" in d:
                isr, leader, epoch = d["isr"], d["leader"], d["leaderEpoch"]
            else:
                isr = d.get("isr", isr)
                if "leader" in d:
                    leader, epoch = d["leader"], epoch + 1
            check((e["isr"], e["leader"], e["leaderEpoch"]) == (isr, leader, epoch), f"offset {o}: {e}")
            check(e["time"] == iso(t), f"offset {o}: time {e['time']} != {iso(t)}")
        check(h and h["current"]["leader"] == leader and h["current"]["isr"] == isr, f"current {h and h['current']}")
        rc, out, err = run("diff", *[os.path.join(d, "tv2-txn-0") for d in dirs])
        check("broker 3 left the ISR" in out and "broker 3 rejoined the ISR" in out and "leader broker 1 -> broker 2" in out,
              f"text: {out}")
        for o, t, _ in want:
            check(f"offset {o}  {iso(t)} ({t})" in out, f"text lacks offset {o} at {iso(t)} ({t})")
        rc, j, err = run_json("diff", "--json", "--no-metadata-log", *dirs)
        check(j["metadataLog"] is None and j["partitions"][0]["leaderIsrHistory"] is None, "--no-metadata-log")
        check(snapshot(root) == before, "the capture was modified")
        # Given explicitly: a log dir holding it.
        rc, j, err = run_json("diff", "--json", "--metadata-log", os.path.join(METADATA, "written"),
                              *[os.path.join(d, "tv2-txn-0") for d in dirs])
        check(j and j["leaderIsrHistory"] and len(j["leaderIsrHistory"]["events"]) == len(want), "--metadata-log")


def test_diff_incident_window_takes_delete_retention_from_the_metadata_log_only_when_it_is_there():
    """The lost ABORT's incident window (issue 19) compares the outage with the topic's delete.retention.ms
    when the metadata log holds it. Kafka's metadata log of kafka4 sets no delete.retention.ms for tv2-txn
    and no cluster-wide log.cleaner.delete.retention.ms (its ConfigRecords in Kafka's own dump), so the
    window says it is not in the files; --delete-retention-ms gives it; the brokers' producer.id.expiration.ms
    in force is named beside the producer.id.expiration.ms entry."""
    names = set()  # every ConfigRecord's name in Kafka's own dump of the metadata log (kafka-dump-log.sh)
    dump = os.path.join(METADATA, "dump", "written")
    for n in os.listdir(dump):
        with open(os.path.join(dump, n), encoding="utf-8", errors="replace") as f:
            names.update(re.findall(r'"CONFIG_RECORD".*?"name":"([^"]+)"', f.read()))
    check(names, "the fixture's dump names no ConfigRecord")
    check("delete.retention.ms" not in names and "log.cleaner.delete.retention.ms" not in names,
          f"the fixture's configs: {sorted(names)}")
    with temp_dir() as root:
        dirs = capture(root, "tv2-txn", metadata=True)
        parts = [os.path.join(d, "tv2-txn-0") for d in dirs]
        rc, j, err = run_json("diff", "--json", *parts)
        windows = [w for f in j["findings"] for w in f.get("incidentWindow", [])]
        check(len(windows) == 1 and windows[0]["deleteRetentionMs"] is None and
              "not in the files given" in windows[0]["sentence"], f"windows {windows}")
        prev = {p["setting"]: p for f in j["findings"] for p in f.get("prevention", [])}
        check(prev and prev["producer.id.expiration.ms"]["currentMs"] == 86400000, f"prevention {prev}")
        rc, j, err = run_json("diff", "--json", "--delete-retention-ms", "600000", *parts)
        windows = [w for f in j["findings"] for w in f.get("incidentWindow", [])]
        check(len(windows) == 1 and windows[0]["deleteRetentionMs"] == 600000 and
              windows[0]["behindUntilAtLeastMs"] == windows[0]["fromMs"] + 600000, f"windows {windows}")


def test_compact_takes_the_topic_configs_from_the_metadata_log():
    fixtures_before = snapshot(TV2), snapshot(METADATA)
    with temp_dir() as root:
        logs = os.path.join(root, "logs")
        copy_fixture(os.path.join(TV2, "written"), logs)
        copy_fixture(os.path.join(METADATA, "written", "__cluster_metadata-0"), os.path.join(logs, "__cluster_metadata-0"))
        before = snapshot(logs)
        part = os.path.join(logs, "tv2-txn-0")
        now = "1735700000000"
        rc, j, err = run_json("compact", part, "--out", os.path.join(root, "a"), "--now", now, "--json")
        check(rc == 0, f"exit {rc} ({err})")
        used = {c["key"]: c for c in j["configsFromMetadataLog"]}
        check(used.get("cleanup.policy", {}).get("value") == "compact" and used["cleanup.policy"]["applied"],
              f"cleanup.policy from the metadata log: {used}")
        check(used["cleanup.policy"]["scope"] == "topic tv2-txn", f"scope {used['cleanup.policy']}")
        check(j["metadataLog"]["dir"] == os.path.join(logs, "__cluster_metadata-0"), f"metadataLog {j['metadataLog']}")
        check(j["wouldClean"], "the topic is compacted by its metadata config")
        # The same as giving that config by hand without the metadata log.
        rc, k, err = run_json("compact", part, "--out", os.path.join(root, "b"), "--now", now, "--json",
                              "--no-metadata-log", "--config", "cleanup.policy=compact", "--config", "log.cleaner.threads=2")
        for field in ("cleanedRange", "recordsRetained", "bytesWritten", "segments"):
            check(j[field] == k[field], f"{field}: {j[field]} != {k[field]}")
        check(k["metadataLog"] is None and k["configsFromMetadataLog"] == [], "--no-metadata-log")
        # An explicit --config wins, and says so.
        rc, k, err = run_json("compact", part, "--out", os.path.join(root, "c"), "--now", now, "--json",
                              "--config", "cleanup.policy=delete")
        over = {c["key"]: c for c in k["configsFromMetadataLog"]}["cleanup.policy"]
        check(over["overriddenBy"] == "flag" and not over["applied"] and not k["wouldClean"], f"override {over}")
        rc, out, err = run("compact", part, "--out", os.path.join(root, "d"), "--now", now)
        check("cleanup.policy=compact  [topic tv2-txn;" in out, f"text: {out}")
        check(snapshot(logs) == before, "the log dir was modified")
    check((snapshot(TV2), snapshot(METADATA)) == fixtures_before, "fixtures modified")


def test_real_brokers_history_matches_their_own_files():
    """Real KRaft brokers: every partition's history names the topic id its partition.metadata holds (the
    broker wrote it from the metadata log), its replicas include each broker (meta.properties node.id)
    that holds a copy, and the report gives each replica that broker id."""
    base = os.path.join(REAL, "hiage__kafka-raft", "data")
    if not os.path.isdir(base):
        return
    brokers = [os.path.join(base, b) for b in ("kafka1", "kafka2", "kafka3")]
    before = snapshot(base)
    rc, j, err = run_json("diff", "--json", *brokers)
    check(rc == 0 and j is not None, f"exit {rc} ({err})")
    node = {}
    for b in brokers:
        with open(os.path.join(b, "meta.properties")) as f:
            node[b] = int(dict(l.strip().split("=", 1) for l in f if "=" in l)["node.id"])
    checked = 0
    for p in j["partitions"]:
        if p["partition"].startswith("__cluster_metadata"):
            continue
        h = p["leaderIsrHistory"]
        check(h is not None, f"{p['partition']}: no history")
        if h is None:
            continue
        for r in p["replicas"]:
            broker = os.path.dirname(r["path"])
            check(r["brokerId"] == node[broker], f"{r['path']}: brokerId {r['brokerId']}")
            with open(os.path.join(r["path"], "partition.metadata")) as f:
                topic_id = dict(l.strip().split(": ", 1) for l in f if ": " in l)["topic_id"]
            check(h["topicId"] == topic_id, f"{r['path']}: topic id {h['topicId']} != {topic_id}")
            check(node[broker] in h["current"]["replicas"], f"{r['path']}: broker {node[broker]} not a replica")
        check(h["events"] and h["events"][0]["kind"] == "created", f"{p['partition']}: {h['events'][:1]}")
        checked += 1
    check(checked > 0, "no partition checked")
    check(snapshot(base) == before, "inputs modified")


run_tests(globals())
