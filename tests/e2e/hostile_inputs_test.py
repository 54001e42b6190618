#!/usr/bin/python3
"""Hostile inputs end to end (issue 15): every command on copies of a Kafka-written three-replica
partition (kafka-oracle replicas/aborted-to-committed) where broker 1 holds one odd entry:

  overflow-name      99999999999999999999.log (the offset overflows int64)
  non-digit-name     abc.log
  dir-log            segment 0's .log is a directory
  fifo-log           segment 0's .log is a FIFO
  loop-log           segment 0's .log is a symlink to itself
  fifo-checkpoint    the log directory's replication-offset-checkpoint is a FIFO
  big-checkpoint     replication-offset-checkpoint is a 250 MiB file (sparse: nothing is written)
  non-utf8-file      a segment copy named "\\xfe.log"
  non-utf8-dir       broker 1's log directory is named "broker\\xff1"

dump, verify, compact, reindex, diff, repair (broker 1 as a healthy replica), repair --salvage, lso,
consume, triage (of the log dirs, and of broker 1's digest), digest, txn find-hanging and txn audit run
on each, in text and --json mode, with a timeout (a hang fails). Each run must exit with the
documented code (below) -- never a signal --, print only UTF-8 (names that are not are escaped as
\\xNN), print JSON that parses, and name the odd file when it matters; the inputs are unchanged.

A file that exists but cannot be read (a FIFO, a directory, a symlink loop, no permission) is never
taken as absent: every command that needs it exits 3 naming it; salvage exits 1 reporting the offsets
it could not read. Odd names are warnings (verify exit as without them; dump counts warnings: 1).
klf digest records such a copy and exits 0 (the data's problems are triage's to report); klf triage of
the digest exits 3 naming it. The chmod 000 case runs klf as `nobody` (setpriv) when the test runs as
root, and is skipped with the reason printed otherwise.

The internal logs given as inputs -- --metadata-log (__cluster_metadata-0), --offsets-log
(__consumer_offsets-N), --txn-log and txn's PATHs (__transaction_state-N) -- meet the same odd entries
(overflow-name, non-digit-name, dir-log, fifo-log) in copies of kafka4's: every command that reads the
log names an odd name (a warning: the exit code is unchanged) and exits 3 naming an unreadable file;
the others, and triage's warnings, are unaffected. simulate gets a FIFO and a directory as its timeline, and an --out whose
name is not UTF-8."""
import json
import os
import shutil
import stat
import subprocess

from klf_e2e import FIX, KLF, REPLICAS, SRC, check, copy_fixture, fail, process, run_tests, snapshot, temp_dir

FIXTURE = os.path.join(REPLICAS, "aborted-to-committed")
KAFKA4 = os.path.join(FIX, "kafka4")
INTERNAL_LOGS = {  # input -> (kafka4 fixture log dir, its partition directory)
    "metadata": ("cluster-metadata", "__cluster_metadata-0"),
    "offsets": ("consumer-offsets", "__consumer_offsets-0"),
    "txn": ("txn-state", "__transaction_state-0"),
}
TIMEOUT = 120  # seconds per run; every run takes well under one
PART = "foo-0"
SEG0 = "00000000000000000000.log"
UNREADABLE = ("dir-log", "fifo-log", "loop-log", "fifo-checkpoint", "chmod-000")


def last_segment(part_dir):
    return sorted(n for n in os.listdir(part_dir) if n.endswith(".log"))[-1]


def damage(case, b1, part_name=PART):
    """Applies case `case` to broker 1's log directory b1 (its partition `part_name`); returns (b1, path of
    the odd entry)."""
    part = os.path.join(b1, part_name)
    seg0 = os.path.join(part, SEG0)
    if case == "overflow-name":
        odd = os.path.join(part, "99999999999999999999.log")
        shutil.copy(os.path.join(part, last_segment(part)), odd)
    elif case == "non-digit-name":
        odd = os.path.join(part, "abc.log")
        shutil.copy(os.path.join(part, last_segment(part)), odd)
    elif case == "dir-log":
        os.remove(seg0)
        os.mkdir(seg0)
        odd = seg0
    elif case == "fifo-log":
        os.remove(seg0)
        os.mkfifo(seg0)
        odd = seg0
    elif case == "loop-log":
        os.remove(seg0)
        os.symlink(SEG0, seg0)
        odd = seg0
    elif case in ("fifo-checkpoint", "big-checkpoint"):
        odd = os.path.join(b1, "replication-offset-checkpoint")
        os.remove(odd)
        if case == "fifo-checkpoint":
            os.mkfifo(odd)
        else:
            with open(odd, "wb") as f:
                f.truncate(250 << 20)
    elif case == "non-utf8-file":
        odd = os.path.join(part, os.fsdecode(b"\xfe.log"))
        shutil.copy(os.path.join(part, last_segment(part)), odd)
    elif case == "non-utf8-dir":
        renamed = os.path.join(os.path.dirname(b1), os.fsdecode(b"broker\xff1"))
        os.rename(b1, renamed)
        b1 = odd = renamed
    elif case == "chmod-000":
        os.chmod(seg0, 0)
        odd = seg0
    elif case != "clean":
        raise ValueError(case)
    else:
        odd = None
    return b1, odd


def shown(path):
    """How klf prints a name: bytes that are not UTF-8 as the text \\xNN."""
    return os.path.basename(os.fsencode(path)).decode("utf-8", "backslashreplace")


def commands(b1, b2, b3, out, txn):
    """name -> klf arguments (text mode; --json is added for the JSON run). `txn`: a log dir holding a
    __transaction_state partition, for txn audit."""
    p1, p2, p3 = (os.path.join(b, PART) for b in (b1, b2, b3))
    return {
        "dump": ["dump", p1],
        "dump-logdir": ["dump", b1],
        "verify": ["verify", p1],
        "verify-logdir": ["verify", b1],
        "compact": ["compact", p1, "--out", out + "-compact", "--config", "cleanup.policy=compact"],
        "reindex": ["reindex", p1, "--out", out + "-reindex"],
        "diff": ["diff", p1, p2, p3],
        "repair": ["repair", "--replica", p1, "--replica", p3, "--target", p2, "--out", out + "-repair"],
        "salvage": ["repair", "--salvage", p1, "--out", out + "-salvage"],
        "lso": ["lso", p1],
        "consume": ["consume", "--isolation", "read_committed", p1],
        "triage": ["triage", b1, b2, b3],
        "digest": ["digest", b1, "--out", out + "-digest"],
        "triage-digest": ["triage", out + "-digest", b2, b3],  # after digest (dicts keep their order)
        "find-hanging": ["txn", "find-hanging", p1],
        "audit": ["txn", "audit", txn, b1, b2, b3],
    }


def with_json(args):
    """args with --json after the (sub)command's name."""
    at = 2 if args[0] == "txn" else 1
    return [*args[:at], "--json", *args[at:]]


# Commands that never read the log directory's checkpoint files (they dump or rebuild the partition
# directory alone): a FIFO or oversized checkpoint beside it does not concern them.
IGNORES_LOGDIR_CHECKPOINTS = ("dump", "reindex")
# Commands that do not judge the data: digest records an unreadable or damaged copy for triage (exit 0
# when the digest was written).
RECORDS_FOR_TRIAGE = ("digest",)


def expected_exit(case, name, baseline):
    if case == "clean":
        return None  # the baseline itself
    if case in UNREADABLE:
        if (case == "fifo-checkpoint" and name in IGNORES_LOGDIR_CHECKPOINTS) or name in RECORDS_FOR_TRIAGE:
            return baseline
        return 1 if name == "salvage" else 3
    if case == "big-checkpoint":
        # Damage, reported (check "file-size") where the file is read, never read whole.
        if name in IGNORES_LOGDIR_CHECKPOINTS:
            return baseline
        return 1 if name in ("verify", "verify-logdir", "dump-logdir", "compact") else baseline
    # The file-name warning of overflow-name, non-digit-name and non-utf8-file is printed but, as every
    # warning in every command (issue 19), does not change the exit code.
    return baseline


def names_the_file(case, name, mode):
    """Runs whose output must name the odd entry."""
    if case in UNREADABLE or case == "big-checkpoint":
        if case in ("fifo-checkpoint", "big-checkpoint") and name in IGNORES_LOGDIR_CHECKPOINTS:
            return False
        if case == "big-checkpoint":
            return name in ("verify", "verify-logdir", "dump-logdir", "compact", "triage")
        return name not in RECORDS_FOR_TRIAGE
    if case == "non-utf8-dir":
        # Every input path these print holds the directory's name (verify, compact and reindex print
        # only problems and their outputs' paths; salvage's JSON names only its output).
        return name in ("dump", "dump-logdir", "diff", "repair", "lso") or (name == "salvage" and mode == "text")
    return name in ("dump", "dump-logdir", "verify", "verify-logdir")


def run_one(label, args, want, odd, wrapper=()):
    """Runs one klf command; checks exit, output encoding and shape, and that it names `odd`."""
    try:
        p = process(args, timeout=TIMEOUT, wrapper=wrapper)
    except UnicodeDecodeError as e:
        fail(f"{label}: output is not UTF-8 (a name printed unescaped?): {e}")
        return None
    if p.returncode is None:
        return None  # the hang is already a failure
    check(0 <= p.returncode <= 3, f"{label}: exit {p.returncode} (a signal?); stderr: {p.stderr[-800:]}")
    if want is not None:
        check(p.returncode == want, f"{label}: exit {p.returncode}, expected {want}; stderr: {p.stderr[-800:]}")
    if "--json" in args and p.stdout.strip():
        try:
            if args[0] in ("dump", "consume"):  # JSON Lines
                for line in p.stdout.splitlines():
                    json.loads(line)
            else:
                json.loads(p.stdout)
        except ValueError as e:
            fail(f"{label}: stdout is not JSON ({e}): {p.stdout[:300]!r}")
    if odd is not None:
        # In JSON the backslash of \xNN is itself escaped.
        check(shown(odd) in p.stdout + p.stderr or shown(odd).replace("\\", "\\\\") in p.stdout,
              f"{label}: no message names {shown(odd)}; stdout {p.stdout[:400]!r} stderr {p.stderr[-400:]!r}")
    return p


def run_case(tmp, case, baselines, wrapper=(), prepare=None):
    root = os.path.join(tmp, case)
    os.mkdir(root)
    brokers = [copy_fixture(os.path.join(FIXTURE, f"broker{i}"), os.path.join(root, f"broker{i}")) for i in (1, 2, 3)]
    b1, odd = damage(case, brokers[0])
    txn = copy_fixture(os.path.join(KAFKA4, "txn-state", "written"), os.path.join(root, "txn"))
    outs = os.path.join(tmp, case + "-out")
    os.mkdir(outs)
    if prepare:
        prepare(tmp, outs)
    before = snapshot(root)
    for mode in ("text", "json"):
        out = os.path.join(outs, mode)
        for name, args in commands(b1, brokers[1], brokers[2], out, txn).items():
            if mode == "json":
                args = with_json(args)
            label = f"{case}: klf {name} ({mode})"
            want = expected_exit(case, name, baselines.get(name, 0))
            p = run_one(label, args, want, odd if names_the_file(case, name, mode) else None, wrapper)
            if p is not None and case == "clean":
                baselines[name] = p.returncode
            if p is not None and case in UNREADABLE and name == "salvage" and mode == "json":
                doc = json.loads(p.stdout)
                if case == "fifo-checkpoint":
                    check(doc["unreadable"], f"{label}: the checkpoint is not listed as unreadable: {doc}")
                else:
                    drops = [d for d in doc["dropped"] if d.get("unreadable")]
                    check(len(drops) == 1 and drops[0]["firstOffset"] == 0 and drops[0]["lastOffset"] == 46,
                          f"{label}: offsets 0..46 of the unreadable segment are not reported dropped: {doc}")
            if p is not None and mode == "json" and case == "non-utf8-dir" and name == "lso":
                check(json.loads(p.stdout)["path"].endswith("broker\\xff1/" + PART), f"{label}: path {p.stdout[:300]}")
        if case in ("dir-log", "fifo-log", "loop-log", "fifo-checkpoint", "chmod-000"):
            # The odd file given by name.
            args = ["dump", "--json", odd] if mode == "json" else ["dump", odd]
            run_one(f"{case}: klf dump FILE ({mode})", args, 3, odd, wrapper)
    check(snapshot(root) == before, f"{case}: an input changed")


def test_every_command_on_every_hostile_entry():
    with temp_dir("klf-hostile-") as tmp:
        baselines = {}
        run_case(tmp, "clean", baselines)
        print("baseline exits:", baselines)
        for case in ("overflow-name", "non-digit-name", "dir-log", "fifo-log", "loop-log", "fifo-checkpoint",
                     "big-checkpoint", "non-utf8-file", "non-utf8-dir"):
            run_case(tmp, case, baselines)


def internal_log_commands(p, b, logs, out):
    """name -> (klf arguments, the internal logs it reads)."""
    return {
        "diff": (["diff", *p, "--metadata-log", logs["metadata"], "--offsets-log", logs["offsets"], "--txn-log",
                  logs["txn"]], ("metadata", "offsets", "txn")),
        "compact": (["compact", p[0], "--out", out + "-compact", "--metadata-log", logs["metadata"]], ("metadata",)),
        "lso": (["lso", p[0], "--txn-log", logs["txn"]], ("txn",)),
        "repair": (["repair", "--replica", p[0], "--replica", p[2], "--target", p[1], "--out", out + "-repair",
                    "--txn-log", logs["txn"]], ("txn",)),
        "find-hanging": (["txn", "find-hanging", logs["txn"], *b], ("txn",)),
        "audit": (["txn", "audit", logs["txn"], *b], ("txn",)),
        "describe": (["txn", "describe", logs["txn"]], ("txn",)),
        "triage": (["triage", *b, logs["metadata"], logs["offsets"], logs["txn"]], ("metadata", "offsets", "txn")),
        "verify": (["verify", logs["metadata"], logs["offsets"], logs["txn"]], ("metadata", "offsets", "txn")),
    }


def test_internal_logs_with_odd_entries():
    with temp_dir("klf-hostile-internal-") as tmp:
        baselines = {}
        for case in ("clean", "overflow-name", "non-digit-name", "dir-log", "fifo-log"):
            for which in (("metadata",) if case == "clean" else INTERNAL_LOGS):
                root = os.path.join(tmp, f"{case}-{which}")
                os.mkdir(root)
                b = [copy_fixture(os.path.join(FIXTURE, f"broker{i}"), os.path.join(root, f"broker{i}")) for i in (1, 2, 3)]
                logs = {k: copy_fixture(os.path.join(KAFKA4, v[0], "written"), os.path.join(root, k))
                        for k, v in INTERNAL_LOGS.items()}
                odd = damage(case, logs[which], INTERNAL_LOGS[which][1])[1]
                before = snapshot(root)
                for mode in ("text", "json"):
                    out = os.path.join(tmp, f"{case}-{which}-{mode}")
                    p = [os.path.join(x, PART) for x in b]
                    for name, (args, reads) in internal_log_commands(p, b, logs, out).items():
                        label = f"{case} in --{which}-log: klf {name} ({mode})"
                        if mode == "json":
                            args = with_json(args)
                        reader = which in reads
                        if case == "clean":
                            want, named = baselines.get((name, mode)), None
                        elif case in UNREADABLE:
                            want, named = (3, odd) if reader else (baselines[(name, mode)], None)
                        else:  # an odd name: a warning where the log is read; triage ranks findings, not warnings
                            want, named = baselines[(name, mode)], odd if reader and name != "triage" else None
                        r = run_one(label, args, want, named)
                        if r is not None and case == "clean":
                            baselines[(name, mode)] = r.returncode
                check(snapshot(root) == before, f"{case} in --{which}-log: an input changed")


def test_unreadable_segment_as_another_user():
    """chmod 000 does not stop root: klf runs as nobody (setpriv), when the test can arrange it."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        print("SKIP test_unreadable_segment_as_another_user:",
              "not root (cannot switch user)" if os.geteuid() != 0 else "setpriv is not installed")
        return
    wrapper = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
    probe = subprocess.run([*wrapper, "test", "-x", KLF], capture_output=True)
    if probe.returncode != 0:
        print("SKIP test_unreadable_segment_as_another_user: nobody cannot run", KLF)
        return

    def open_up(tmp, outs):
        # nobody must be able to traverse and read the copy (all but segment 0) and write the outputs.
        for root, dirs, files in os.walk(tmp):
            os.chmod(root, 0o777 if root.startswith(outs) else 0o755)
            for n in files:
                p = os.path.join(root, n)
                if os.stat(p).st_mode & 0o777:
                    os.chmod(p, 0o644)

    with temp_dir("klf-hostile-user-") as tmp:
        os.chmod(tmp, 0o755)
        baselines = {}
        run_case(tmp, "clean", baselines, wrapper, open_up)
        run_case(tmp, "chmod-000", baselines, wrapper, open_up)


def test_unlistable_partition_dir_in_a_log_dir():
    """A partition directory that cannot be listed, inside a log dir given whole: diff, lso, txn and triage
    exit 3 naming it (before, diff and lso dropped it unseen and compared the other copies). chmod 000
    does not stop root: klf then runs as nobody (setpriv), when the test can arrange it."""
    wrapper = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            print("SKIP test_unlistable_partition_dir_in_a_log_dir: setpriv is not installed")
            return
        wrapper = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
        if subprocess.run([*wrapper, "test", "-x", KLF], capture_output=True).returncode != 0:
            print("SKIP test_unlistable_partition_dir_in_a_log_dir: nobody cannot run", KLF)
            return
    with temp_dir("klf-hostile-unlistable-") as tmp:
        os.chmod(tmp, 0o755)
        b1, b2, b3 = (copy_fixture(os.path.join(FIXTURE, f"broker{i}"), os.path.join(tmp, f"broker{i}"))
                      for i in (1, 2, 3))
        for root, dirs, files in os.walk(tmp):
            os.chmod(root, 0o755)
            for n in files:
                os.chmod(os.path.join(root, n), 0o644)
        hidden = os.path.join(b2, PART)
        os.chmod(hidden, 0)
        try:
            for name, args in (("diff", ["diff", b1, b2, b3]), ("lso", ["lso", b2]), ("triage", ["triage", b1, b2, b3]),
                               ("find-hanging", ["txn", "find-hanging", b2])):
                for mode in ("text", "json"):
                    label = f"unlistable {PART}: klf {name} ({mode})"
                    p = run_one(label, with_json(args) if mode == "json" else args, 3, None, wrapper)
                    if p is not None:
                        check(hidden in p.stdout + p.stderr,
                              f"{label}: no message names {hidden}; stdout {p.stdout[:400]!r} stderr {p.stderr[-400:]!r}")
        finally:
            os.chmod(hidden, 0o755)


def test_compact_progresses_with_a_tiny_io_buffer():
    """log.cleaner.io.buffer.size=0 (ConfigDef allows it; Kafka's own growBuffers doubles 0 to 0 and never
    progresses) or a buffer share of 0 per cleaner thread: the buffer grows, the output is the same."""
    with temp_dir("klf-hostile-compact-") as tmp:
        part = os.path.join(copy_fixture(os.path.join(FIXTURE, "broker2"), os.path.join(tmp, "broker2")), PART)
        base = ["compact", "--json", part, "--config", "cleanup.policy=compact", "--config",
                "min.cleanable.dirty.ratio=0.01", "--now", "1800000000000"]

        def run(name, *config):
            out = os.path.join(tmp, name)
            p = process([*base, "--out", out, *config], timeout=TIMEOUT)
            if p.returncode is None or not check(p.returncode == 0, f"compact {config}: exit {p.returncode} {p.stderr}"):
                return None, None
            logs = sorted(n for n in os.listdir(os.path.join(out, PART)) if n.endswith(".log"))
            return json.loads(p.stdout)["cleanedRange"], [open(os.path.join(out, PART, n), "rb").read() for n in logs]

        want = run("default")
        check(want[0] is not None, f"the default run cleaned nothing: {want[0]}")
        for size in ("0", "1"):
            got = run("size" + size, "--config", "log.cleaner.io.buffer.size=" + size)
            check(got == want, f"log.cleaner.io.buffer.size={size}: cleaned {got[0]}, expected {want[0]} (or other bytes)")
        run("threads", "--config", "log.cleaner.threads=1000000")


def test_simulate_timeline_and_out():
    with temp_dir("klf-hostile-sim-") as tmp:
        fifo = os.path.join(tmp, "timeline.json")
        os.mkfifo(fifo)
        directory = os.path.join(tmp, "dir.json")
        os.mkdir(directory)
        for odd in (fifo, directory):
            for json_mode in ((), ("--json",)):
                run_one(f"simulate {shown(odd)}", ["simulate", *json_mode, odd, "--out", os.path.join(tmp, "o")], 3,
                        odd)
        timeline = os.path.join(SRC, "fixtures", "healthy-control.json")
        for json_mode in ((), ("--json",)):
            out = os.path.join(tmp, os.fsdecode(b"out\xff" + (b"j" if json_mode else b"t")))
            p = run_one(f"simulate --out {shown(out)}", ["simulate", *json_mode, timeline, "--out", out], 0, out)
            if p is not None and json_mode:
                check(json.loads(p.stdout)["out"].endswith("out\\xffj"), f"simulate: out {p.stdout[:200]}")


run_tests(globals())
