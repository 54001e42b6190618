#!/usr/bin/python3
"""Consistent manners (issue 19, items 5 and 6), each from the command line, on data klf did not write
(Kafka's own partition directories in kafka-oracle, batches built by kafka-python).

Covered: the same directory twice is refused by diff, lso and repair; CLI parse errors name the
subcommand; `klf verify .` names the real directory; repeated problems roll up per check, and `--all`
lists each; warnings never change dump's exit code; `--bytes text` escapes TAB and DEL; header keys never
follow `--bytes`; kafka-dump-log's flags (--files, --deep-iteration, --print-data-log,
--skip-record-metadata, --max-bytes, --verify-index-only, --index-sanity-check, the decoder flags);
`simulate` names an unknown op and gives line and column of bad JSON; lso and repair take a log dir plus
`--partition T-P`."""
import json
import os
import shutil
import struct

from kafka.record.default_records import DefaultRecordBatchBuilder

from klf_e2e import KLF, ORACLE, FIX, check, copy_fixture, process, run_tests, temp_dir

KEYED = os.path.join(ORACLE, "a-keyed")
KEYED0 = os.path.join(KEYED, "keyed-none-0")
SEG0 = os.path.join(KEYED0, "00000000000000000000")


def dump_lines(out):
    return [l for l in out.splitlines() if l and not l.startswith("Dumping ")]


def test_same_directory_twice_is_refused():
    same = KEYED0 + "/"
    for args, command in ((["diff", KEYED0, same], "diff"),
                          (["lso", KEYED0, "--replica", same], "lso"),
                          (["repair", "--dry-run", "--target", KEYED0, "--replica", same], "repair")):
        p = process(args + ["--json"])
        check(p.returncode == 2, f"{command} X X: exit {p.returncode} (want 2) {p.stderr}")
        check(p.stderr.startswith(f"klf {command}: ") and "same directory" in p.stderr,
              f"{command} X X: message {p.stderr!r}")
        j = json.loads(p.stdout)
        check(j["command"] == command and j["exitCode"] == 2, f"{command} X X: JSON {j}")


def test_parse_errors_name_the_subcommand():
    p = process(["diff", "--no-such-flag", KEYED0, KEYED0])
    check(p.returncode == 2 and p.stderr.startswith("klf diff: "), f"{p.returncode} {p.stderr!r}")
    check("klf diff --help" in p.stderr, f"should point at the subcommand's help: {p.stderr!r}")


def test_verify_dot_names_the_real_directory():
    p = subprocess_in(KEYED, ["verify", "--json", "."])
    j = json.loads(p.stdout)
    files = {x["file"] for x in j["problems"]}
    # "." is named as the directory it is (the fixtures may lie behind a symlink: compare real paths).
    real = os.path.realpath(KEYED)
    check(files and all(os.path.realpath(os.path.dirname(f)) == real for f in files) and
          not any(f.startswith("./") for f in files), f"files named {sorted(files)[:3]}")


def subprocess_in(cwd, args):
    import subprocess
    return subprocess.run([KLF, *args], capture_output=True, text=True, cwd=cwd)


def test_repeated_problems_roll_up():
    # A log dir holding Kafka's kafka-dump-log outputs beside the partitions: five unknown files.
    p = process(["verify", KEYED])
    lines = [l for l in p.stdout.splitlines() if "unknown-file" in l]
    check(len(lines) == 4, f"3 lines then one roll-up, got {lines}")
    check(lines and "5 x unknown-file in 1 directory" in lines[-1] and "--all" in lines[-1], f"roll-up {lines[-1:]}")
    p = process(["verify", "--all", KEYED])
    lines = [l for l in p.stdout.splitlines() if "unknown-file" in l]
    check(len(lines) == 5 and not any(" x unknown-file" in l for l in lines), f"--all: {lines}")
    j = json.loads(process(["verify", "--json", KEYED]).stdout)
    check(sum(x["check"] == "unknown-file" for x in j["problems"]) == 5, "JSON lists every problem")


def test_warnings_never_change_dumps_exit_code():
    with temp_dir() as tmp:
        part = copy_fixture(KEYED0, os.path.join(tmp, "keyed-none-0"))
        # The active (last) segment: a zero tail of a rolled one would be an error.
        log = os.path.join(part, sorted(n for n in os.listdir(part) if n.endswith(".log"))[-1])
        with open(log, "ab") as f:
            f.write(b"\0" * 40)  # a zero-filled tail: Kafka's recovery truncates it as routine
        p = process(["dump", "--json", log])
        kinds = [json.loads(l).get("severity") for l in p.stdout.splitlines() if '"severity"' in l]
        check("warning" in kinds and "error" not in kinds, f"a warning expected, got {kinds}")
        check(p.returncode == 0, f"dump with only warnings: exit {p.returncode} (want 0)")
        v = process(["verify", part])
        check(v.returncode == 0, f"verify with only warnings: exit {v.returncode}")


def one_batch_log(path, key, value, headers):
    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=2**20)
    b.append(0, 1700000000000, key, value, headers)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(bytes(b.build()))


def test_text_escapes_tab_and_del_and_header_keys_stay_text():
    with temp_dir() as tmp:
        log = os.path.join(tmp, "t-0", "00000000000000000000.log")
        one_batch_log(log, b"k\tey\x7f", b"v\x01", [("h\tkey", b"\x00\xff")])
        p = process(["dump", "--records", log])
        rec = [l for l in p.stdout.splitlines() if l.startswith("| offset: 0")]
        check(rec and "key: k\\x09ey\\x7f payload: v\\x01" in rec[0], f"text escapes: {rec}")
        check(rec and "headerKeys: [h\\x09key]" in rec[0], f"header key in text: {rec}")
        for fmt in ("hex", "base64"):
            p = process(["dump", "--records", "--json", "--bytes", fmt, log])
            r = [json.loads(l) for l in p.stdout.splitlines() if '"records"' in l][0]["records"][0]
            check(r["headers"][0]["key"] == "h\\x09key", f"--bytes {fmt}: header key {r['headers'][0]['key']!r}")
            want = "00ff" if fmt == "hex" else "AP8="
            check(r["headers"][0]["value"] == want, f"--bytes {fmt}: header value {r['headers'][0]['value']!r}")
            check(r["key"] == ("6b0965797f" if fmt == "hex" else "awlleX8="), f"--bytes {fmt}: key {r['key']!r}")


def test_kafka_dump_log_flags():
    log = SEG0 + ".log"
    plain = process(["dump", log])
    files = process(["dump", "--files", f"{log},{SEG0}.index"])
    check(files.returncode == 0 and files.stdout.startswith(plain.stdout) and "offset: " in files.stdout,
          "--files a,b dumps both, in order")
    deep = dump_lines(process(["dump", "--deep-iteration", log]).stdout)
    recs = [l for l in deep if l.startswith("| offset:")]
    check(recs and not any(" key: " in l or " payload: " in l for l in recs),
          f"--deep-iteration: record lines without key and payload: {recs[:1]}")
    data = dump_lines(process(["dump", "--print-data-log", log]).stdout)
    check(data == dump_lines(process(["dump", "--records", log]).stdout), "--print-data-log is --records")
    skip = dump_lines(process(["dump", "--skip-record-metadata", log]).stdout)
    check(any(l.startswith("| key: k0 payload: ") for l in skip) and not any("offset: 0 Create" in l for l in skip
                                                                              if l.startswith("|")),
          f"--skip-record-metadata: {skip[:3]}")
    # --max-bytes: the first two batches' sizes, as kafka-dump-log's own test does.
    batches = [l for l in dump_lines(plain.stdout) if l.startswith("baseOffset:")]
    sizes = [int(l.split(" size: ")[1].split()[0]) for l in batches[:2]]
    two = [l for l in dump_lines(process(["dump", "--max-bytes", str(sum(sizes)), log]).stdout)
           if l.startswith("baseOffset:")]
    check(two == batches[:2], f"--max-bytes {sum(sizes)}: {len(two)} batch lines (want 2)")
    only = process(["dump", "--verify-index-only", SEG0 + ".index"])
    check(only.returncode == 0 and "position:" not in only.stdout, f"--verify-index-only: {only.stdout[:200]}")
    sane = process(["dump", "--index-sanity-check", SEG0 + ".index", SEG0 + ".timeindex"])
    check(sane.stdout.count("passed sanity check.") == 2, f"--index-sanity-check: {sane.stdout}")
    with temp_dir() as tmp:
        bad = os.path.join(tmp, "keyed-none-0", "00000000000000000000.index")
        os.makedirs(os.path.dirname(bad))
        with open(SEG0 + ".index", "rb") as f:
            data_bytes = f.read()
        with open(bad, "wb") as f:
            f.write(data_bytes + b"\1\2\3")  # not a whole number of 8-byte entries
        p = process(["dump", "--index-sanity-check", bad])
        check(p.returncode == 1 and "sanity check" in p.stdout and "passed" not in p.stdout,
              f"a failing sanity check: exit {p.returncode} {p.stdout}")
    txn = os.path.join(FIX, "kafka4", "txn-state", "written")
    logs = sorted(os.path.join(r, n) for r, _, fs in os.walk(txn) for n in fs if n.endswith(".log"))
    if check(logs, "kafka4 txn-state has a .log"):
        a = dump_lines(process(["dump", "--transaction-log-decoder", logs[0]]).stdout)
        b = dump_lines(process(["dump", "--records", "--decoder", "transaction-log", logs[0]]).stdout)
        check(a == b and any("payload: " in l for l in a), "--transaction-log-decoder = --records --decoder")
    p = process(["dump", "--offsets-decoder", "--decoder", "none", log])
    check(p.returncode == 2, f"two decoders: exit {p.returncode}")


def test_simulate_names_bad_op_and_json_position():
    with temp_dir() as tmp:
        t = os.path.join(tmp, "t.json")
        with open(t, "w") as f:
            f.write('{"events": [{"op": "produce", "producer": "p"},\n  {"op": "explode"}]}')
        p = process(["simulate", t, "--out", os.path.join(tmp, "o")])
        check(p.returncode == 2 and 'unknown "op" "explode"' in p.stderr, f"{p.returncode} {p.stderr!r}")
        with open(t, "w") as f:
            f.write('{"events": [\n  {"op": "produce",,}\n]}')
        p = process(["simulate", t, "--out", os.path.join(tmp, "o")])
        check(p.returncode == 2 and "line 2, column" in p.stderr, f"{p.returncode} {p.stderr!r}")


def test_log_dir_plus_partition():
    # A log dir of several partitions without --partition: every one of them (issue 19), none pinned here.
    lso_all = process(["lso", "--json", KEYED])
    j = json.loads(lso_all.stdout)
    names = sorted(n for n in os.listdir(KEYED) if os.path.isdir(os.path.join(KEYED, n)))
    check(lso_all.returncode == 0 and [p["partition"] for p in j["partitions"]] == names and
          j["counts"]["partitions"] == len(names) == j["counts"]["healthy"],
          f"lso over a log dir of several partitions: {lso_all.returncode} {j.get('counts')} {lso_all.stderr!r}")
    by_name = process(["lso", "--json", KEYED, "--partition", "keyed-none-0"])
    direct = process(["lso", "--json", KEYED0])
    check(by_name.returncode == direct.returncode == 0, f"{by_name.returncode} {by_name.stderr}")
    check(json.loads(by_name.stdout) == json.loads(direct.stdout), "lso LOGDIR --partition = lso PARTITION_DIR")
    p = process(["lso", KEYED, "--partition", "nope-7"])
    check(p.returncode == 2 and "nope-7" in p.stderr, f"unknown partition: {p.returncode} {p.stderr!r}")
    with temp_dir() as tmp:
        other = copy_fixture(KEYED, os.path.join(tmp, "b2"))
        p = process(["repair", "--dry-run", "--json", "--target", other, "--replica", KEYED,
                     "--partition", "keyed-gzip-0"])
        check(p.returncode == 0, f"repair --partition: exit {p.returncode} {p.stderr}")


def test_diff_over_log_dirs_counts_and_only_findings():
    """diff over broker log dirs ends with the counts (text and JSON, over every partition compared);
    --only-findings leaves the partitions without a finding out of the listing, not out of the counts.
    Expected counts come from Kafka's truth: timeline-11 diverged on broker2 (truth.json), and a log dir
    compared with a byte copy of itself has nothing to find."""
    t11 = os.path.join(FIX, "kafka-oracle", "random-replicas", "timeline-11")
    with temp_dir() as tmp:
        # Two brokers: timeline-11's foo-0 of broker1 and broker2, plus a healthy keyed partition copied to both.
        b1, b2 = os.path.join(tmp, "b1"), os.path.join(tmp, "b2")
        copy_fixture(os.path.join(t11, "broker1"), b1)
        copy_fixture(os.path.join(t11, "broker2"), b2)
        copy_fixture(KEYED0, os.path.join(b1, os.path.basename(KEYED0)))
        copy_fixture(KEYED0, os.path.join(b2, os.path.basename(KEYED0)))
        with open(os.path.join(t11, "truth.json")) as f:
            diverged = 1 if json.load(f)["divergenceTruth"]["diverged"] else 0  # Kafka's word on foo-0
        full = process(["diff", "--json", b1, b2])
        j = json.loads(full.stdout)
        check(diverged == 1, "timeline-11 diverged (truth.json): the test needs a diverged partition")
        check(j["counts"] == {"compared": 2, "diverged": diverged, "lagging": 0, "healthy": 2 - diverged},
              f"counts {j.get('counts')}")
        check(len(j["partitions"]) == 2 and j["onlyFindings"] is False, f"partitions {len(j['partitions'])}")
        only = json.loads(process(["diff", "--json", "--only-findings", b1, b2]).stdout)
        check([p["partition"] for p in only["partitions"]] == ["foo-0"] and only["counts"] == j["counts"] and
              only["findings"] == j["findings"], f"--only-findings JSON: {[p['partition'] for p in only['partitions']]}")
        text = process(["diff", "--only-findings", b1, b2])
        check(text.returncode == 1 and "partition foo-0" in text.stdout and "keyed-none-0" not in text.stdout and
              "2 partitions compared: 1 diverged" in text.stdout and "1 healthy partitions not shown" in text.stdout,
              f"--only-findings text: {text.stdout[-400:]}")


if __name__ == "__main__":
    run_tests(globals())
