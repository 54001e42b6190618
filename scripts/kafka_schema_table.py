#!/usr/bin/env python3
"""Writes segment_reader/kafka_schemas.inc: the fields per version of the Kafka messages klf decodes.

Usage: scripts/kafka_schema_table.py KAFKA_CHECKOUT > segment_reader/kafka_schemas.inc

KAFKA_CHECKOUT is an apache/kafka source tree. The table is a compact restatement of the facts in
Kafka's JSON message definitions (name, type, versions, nullable/tagged versions, tag, default of
each field); the build does not need Kafka's files, and they are not copied into this repository.
The checked-in table was made from apache/kafka 1eb7644349cb07139d6a3c1ad1986979647cac99
(trunk 2024-10-25, 4.0.0-SNAPSHOT), the commit of the kafka4 fixtures.
"""
import json
import os
import re
import sys

MESSAGES = [
    # (group, path under the checkout)
    ("txn", "transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json"),
    ("txn", "transaction-coordinator/src/main/resources/common/message/TransactionLogValue.json"),
    ("consumer_protocol", "clients/src/main/resources/common/message/ConsumerProtocolSubscription.json"),
    ("consumer_protocol", "clients/src/main/resources/common/message/ConsumerProtocolAssignment.json"),
    ("raft_control", "clients/src/main/resources/common/message/LeaderChangeMessage.json"),
    ("raft_control", "clients/src/main/resources/common/message/SnapshotHeaderRecord.json"),
    ("raft_control", "clients/src/main/resources/common/message/SnapshotFooterRecord.json"),
    ("raft_control", "clients/src/main/resources/common/message/KRaftVersionRecord.json"),
    ("raft_control", "clients/src/main/resources/common/message/VotersRecord.json"),
]
GROUP_DIR = "group-coordinator/src/main/resources/common/message"
# __remote_log_metadata (TopicBasedRemoteLogMetadataManager): emitted last, so that adding them left the
# names of every struct above unchanged.
REMOTE_LOG_DIR = "storage/src/main/resources/message"
REMOTE_LOG_MESSAGES = ["RemoteLogSegmentMetadataRecord", "RemoteLogSegmentMetadataUpdateRecord",
                       "RemotePartitionDeleteMetadataRecord", "RemoteLogSegmentMetadataSnapshotRecord"]
METADATA_DIR = "metadata/src/main/resources/common/metadata"

MAX_VERSION = 32767


def strip_comments(text):
    out, i, in_str = [], 0, False
    while i < len(text):
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def versions(spec, default=None):
    """'3+' / '0-2' / '4' / 'none' -> (min, max); (1, 0) = none."""
    if spec is None:
        spec = default
    if spec is None or spec == "none":
        return (1, 0)
    if spec.endswith("+"):
        return (int(spec[:-1]), MAX_VERSION)
    if "-" in spec:
        a, b = spec.split("-")
        return (int(a), int(b))
    return (int(spec), int(spec))


PRIMS = {"bool": "kBool", "int8": "kInt8", "int16": "kInt16", "uint16": "kUint16", "int32": "kInt32",
         "uint32": "kUint32", "int64": "kInt64", "float64": "kFloat64", "string": "kString", "bytes": "kBytes",
         "uuid": "kUuid", "records": "kBytes"}


def camel(name):
    return name[0].lower() + name[1:]


class Emitter:
    def __init__(self):
        self.out = []
        self.counter = 0

    def struct(self, prefix, fields, common):
        """Emits the field array of a struct (children first); returns its C++ name."""
        rows = []
        for f in fields:
            t = f["type"]
            array = t.startswith("[]")
            base = t[2:] if array else t
            child = "nullptr"
            child_count = 0
            if base in PRIMS:
                ftype = PRIMS[base]
            else:
                ftype = "kStruct"
                sub = f.get("fields")
                if sub is None:
                    sub = common[base]
                child = self.struct(prefix + "_" + base, sub, common)
                child_count = len(sub)
            v = versions(f.get("versions") or f.get("taggedVersions"))
            nv = versions(f.get("nullableVersions"), "none")
            tv = versions(f.get("taggedVersions"), "none")
            tag = int(f.get("tag", -1))
            default = f.get("default")
            if default is None:
                if array:
                    default = ""
                elif ftype in ("kString",):
                    default = ""
                elif ftype == "kBool":
                    default = "false"
                elif ftype == "kStruct":
                    default = ""
                else:
                    default = "0"
            default = str(default).lower() if isinstance(default, bool) else str(default)
            rows.append('  {"%s", FieldType::%s, %s, %d, %d, %d, %d, %d, %d, %d, %s, %d, "%s"},' % (
                camel(f["name"]), ftype, "true" if array else "false", v[0], v[1], nv[0], nv[1], tag, tv[0], tv[1],
                child, child_count, default.replace("\\", "\\\\").replace('"', '\\"')))
        name = "k%s_%d" % (re.sub(r"[^A-Za-z0-9]", "_", prefix), self.counter)
        self.counter += 1
        if rows:
            self.out.append("inline constexpr SchemaField %s[] = {\n%s\n};" % (name, "\n".join(rows)))
            return name
        return "nullptr"

    def message(self, path):
        doc = json.loads(strip_comments(open(path).read()))
        common = {s["name"]: s["fields"] for s in doc.get("commonStructs", [])}
        fields = doc.get("fields", [])
        arr = self.struct(doc["name"], fields, common)
        v = versions(doc["validVersions"])
        fv = versions(doc.get("flexibleVersions"), "none")
        return doc, '{"%s", %d, %d, %d, %d, %d, %s, %d}' % (
            doc["name"], doc.get("apiKey", -1), v[0], v[1], fv[0], fv[1], arr, len(fields))


def snake_upper(s):
    out, prev_cap = [], True
    for c in s:
        if c.isupper():
            if not prev_cap:
                out.append("_")
            out.append(c.lower())
            prev_cap = True
        else:
            out.append(c)
            prev_cap = False
    return "".join(out).upper()


def main():
    root = sys.argv[1]
    e = Emitter()
    tables = {}
    for group, rel in MESSAGES:
        _, row = e.message(os.path.join(root, rel))
        tables.setdefault(group, []).append(row)
    # Group coordinator records: key and value per record type (the key's apiKey).
    keys, values = {}, {}
    for fn in sorted(os.listdir(os.path.join(root, GROUP_DIR))):
        if not fn.endswith(".json"):
            continue
        doc, row = e.message(os.path.join(root, GROUP_DIR, fn))
        name = doc["name"]
        if name.endswith("Key"):
            keys[name[:-3]] = (doc, row)
        elif name.endswith("Value"):
            values[name[:-5]] = (doc, row)
    group_rows = []
    for base, (kdoc, krow) in keys.items():
        vdoc, vrow = values[base]
        kv = versions(kdoc["validVersions"])
        types = [kdoc["apiKey"]] if "apiKey" in kdoc else list(range(kv[0], kv[1] + 1))
        for t in types:
            group_rows.append((t, "{%d, %s, %s}" % (t, krow, vrow)))
    group_rows.sort()
    meta_rows = []
    for fn in sorted(os.listdir(os.path.join(root, METADATA_DIR))):
        if not fn.endswith(".json"):
            continue
        doc, row = e.message(os.path.join(root, METADATA_DIR, fn))
        if doc.get("type") != "metadata":
            continue
        meta_rows.append((doc["apiKey"], '{"%s", %s}' % (snake_upper(doc["name"]), row)))
    meta_rows.sort()
    remote_rows = []
    for name in REMOTE_LOG_MESSAGES:
        doc, row = e.message(os.path.join(root, REMOTE_LOG_DIR, name + ".json"))
        remote_rows.append((doc["apiKey"], '{"%s", %s}' % (doc["name"], row)))
    remote_rows.sort()

    print("// Generated by scripts/kafka_schema_table.py from apache/kafka's JSON message definitions at")
    print("// 1eb7644349cb07139d6a3c1ad1986979647cac99 (4.0.0-SNAPSHOT). Do not edit; rerun the script.")
    print("// Field rows: name, type, array, versions min/max, nullable min/max, tag, tagged min/max,")
    print("// struct fields, struct field count, default.")
    print("// clang-format off")
    print("\n".join(e.out))
    print("inline constexpr MessageSchema kTransactionLogKeySchema = %s;" % tables["txn"][0])
    print("inline constexpr MessageSchema kTransactionLogValueSchema = %s;" % tables["txn"][1])
    print("inline constexpr MessageSchema kConsumerProtocolSubscriptionSchema = %s;" % tables["consumer_protocol"][0])
    print("inline constexpr MessageSchema kConsumerProtocolAssignmentSchema = %s;" % tables["consumer_protocol"][1])
    names = ["LeaderChange", "SnapshotHeader", "SnapshotFooter", "KRaftVersion", "Voters"]
    for n, row in zip(names, tables["raft_control"]):
        print("inline constexpr MessageSchema k%sSchema = %s;" % (n, row))
    print("inline constexpr GroupRecordSchema kGroupRecordSchemas[] = {\n%s\n};" %
          "\n".join("  " + r + "," for _, r in group_rows))
    print("inline constexpr MetadataRecordSchema kMetadataRecordSchemas[] = {\n%s\n};" %
          "\n".join("  " + r + "," for _, r in meta_rows))
    print("inline constexpr MetadataRecordSchema kRemoteLogMetadataRecordSchemas[] = {\n%s\n};" %
          "\n".join("  " + r + "," for _, r in remote_rows))
    print("// clang-format on")


if __name__ == "__main__":
    main()
