#!/usr/bin/python3
"""Hostile output paths and the error contract (issue 15, README "Conventions", docs/ROBUSTNESS.md).

Each test builds its inputs in a fresh temporary directory (broker log dirs written by `klf simulate`
from a bundled timeline, then copied into a plain folder), runs klf with a hostile --out / --html /
timeline, and checks: the documented exit code and message (naming both paths), with --json one JSON
error object {"error", "command", "exitCode"} on stdout, no input byte or mtime changed, and nothing
written outside --out (the whole temporary tree is compared before and after a refused run).

Covered: diff --html over a segment; compact --out over another partition of the input's log dir,
over a --replica's log dir, inside the input's log dir; simulate --out holding the timeline; a
timeline topic that climbs out of --out; --out as a symlink to an input and below a symlink into an
input's log dir; --force over a directory or file klf did not write; exit codes of compact on a
damaged log and of simulate; the JSON error object of every --json command; scratch space of a
simulate run killed by SIGTERM (removed by the handler) or SIGKILL (removed by the next run)."""
import glob
import json
import os
import shutil
import signal
import subprocess
import time

from klf_e2e import KLF, SRC, check, process, run_tests, snapshot, temp_dir

TIMELINE = os.path.join(SRC, "fixtures", "aborted-to-committed.json")
SHM = "/dev/shm"


def tree(d):
    """Every file (digest, mtime) and every directory and symlink under d: nothing may appear, vanish or
    change in a refused run."""
    dirs, links = [], {}
    for root, ds, fs in os.walk(d):
        for n in ds + fs:
            p = os.path.join(root, n)
            if os.path.islink(p):
                links[os.path.relpath(p, d)] = os.readlink(p)
            elif os.path.isdir(p):
                dirs.append(os.path.relpath(p, d))
    return snapshot(d), sorted(dirs), links


def make_brokers(tmp):
    """tmp/in/broker{1,2,3}: three replicas of foo-0 (broker 2 lost an ABORT), with their log-dir files."""
    sim = os.path.join(tmp, "sim")
    p = process(["simulate", TIMELINE, "--out", sim])
    assert p.returncode == 1, f"simulate: exit {p.returncode} {p.stderr}"
    inp = os.path.join(tmp, "in")
    for b in (1, 2, 3):
        shutil.copytree(os.path.join(sim, f"broker{b}"), os.path.join(inp, f"broker{b}"))
    shutil.rmtree(sim)
    return [os.path.join(inp, f"broker{b}") for b in (1, 2, 3)]


def refused(args, tmp, command, names=(), code=2):
    """Runs klf ARGS (with --json added) and checks that it refused with exit `code`, one JSON error
    object naming `names`, the same message on stderr, and the whole of tmp untouched."""
    before = tree(tmp)
    p = process(args + ["--json"])
    where = "klf " + " ".join(args)
    check(p.returncode == code, f"{where}: exit {p.returncode}, want {code}; stderr {p.stderr}")
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    if check(isinstance(doc, dict), f"{where}: stdout is not one JSON object: {p.stdout!r}"):
        check(doc.get("command") == command and doc.get("exitCode") == code and isinstance(doc.get("error"), str),
              f"{where}: error object {doc}")
        for n in names:
            check(n in doc.get("error", ""), f"{where}: the error does not name {n}: {doc.get('error')}")
            check(n in p.stderr, f"{where}: stderr does not name {n}: {p.stderr}")
    # CLI11's parse errors (a missing required option) print "klf: ..." before any command runs.
    check(p.stderr.startswith((f"klf {command}: ", "klf: ")), f"{where}: stderr {p.stderr!r}")
    check(tree(tmp) == before, f"{where}: the temporary tree changed (an input, or something outside --out)")
    return p


def test_diff_html_over_a_segment():
    with temp_dir() as tmp:
        b1, b2, _ = make_brokers(tmp)
        seg = sorted(glob.glob(os.path.join(b1, "foo-0", "*.log")))[0]
        args = ["diff", "--html", seg, os.path.join(b1, "foo-0"), os.path.join(b2, "foo-0")]
        refused(args, tmp, "diff", [seg, os.path.join(b1, "foo-0")])
        refused(args + ["--force"], tmp, "diff", [seg])
        # The log dir's own files (a checkpoint) are inputs too.
        refused(["diff", "--html", os.path.join(b2, "replication-offset-checkpoint"), os.path.join(b1, "foo-0"),
                 os.path.join(b2, "foo-0"), "--force"], tmp, "diff", [b2])


def test_diff_html_replaces_only_its_own_report():
    with temp_dir() as tmp:
        b1, b2, _ = make_brokers(tmp)
        parts = [os.path.join(b1, "foo-0"), os.path.join(b2, "foo-0")]
        html = os.path.join(tmp, "report.html")
        p = process(["diff", "--html", html, *parts])
        check(p.returncode == 1 and os.path.isfile(html), f"diff --html: exit {p.returncode} {p.stderr}")
        check("<!-- klf-output 1" in open(html).read(300), "the report has no klf marker")
        refused(["diff", "--html", html, *parts], tmp, "diff", [html, "--force"])
        p = process(["diff", "--html", html, *parts, "--force"])
        check(p.returncode == 1, f"diff --html --force over its own report: exit {p.returncode} {p.stderr}")
        mine = os.path.join(tmp, "mine.html")
        with open(mine, "w") as f:
            f.write("<html>my notes</html>\n")
        refused(["diff", "--html", mine, *parts, "--force"], tmp, "diff", [mine, "not a klf output"])
        check(not [n for n in os.listdir(tmp) if ".tmp-" in n], f"temporary files left: {os.listdir(tmp)}")


def test_compact_out_over_another_partition_of_the_log_dir():
    with temp_dir() as tmp:
        b1, _, _ = make_brokers(tmp)
        other = os.path.join(b1, "bar-0")
        shutil.copytree(os.path.join(b1, "foo-0"), other)
        refused(["compact", os.path.join(b1, "foo-0"), "--out", other, "--force"], tmp, "compact", [other, b1])
        refused(["compact", os.path.join(b1, "foo-0"), "--out", b1, "--force"], tmp, "compact", [b1])


def test_coordinated_compact_out_over_a_replica():
    with temp_dir() as tmp:
        b1, b2, b3 = make_brokers(tmp)
        args = ["compact", "--mode", "coordinated", os.path.join(b1, "foo-0"), "--replica", os.path.join(b2, "foo-0"),
                "--replica", os.path.join(b3, "foo-0"), "--force", "--out"]
        refused(args + [b2], tmp, "compact", [b2])
        refused(args + [os.path.join(b3, "foo-0")], tmp, "compact", [os.path.join(b3, "foo-0")])


def test_out_inside_an_input_log_dir():
    with temp_dir() as tmp:
        b1, b2, b3 = make_brokers(tmp)
        p1, p2, p3 = (os.path.join(b, "foo-0") for b in (b1, b2, b3))
        inside = os.path.join(b1, "klf-out")
        refused(["compact", p1, "--out", inside], tmp, "compact", [inside, b1])
        refused(["reindex", p1, "--out", inside], tmp, "reindex", [inside, b1])
        refused(["reindex", p1, "--out", os.path.join(p1, "sub")], tmp, "reindex", [p1])
        refused(["repair", "--replica", p2, "--replica", p3, "--target", p1, "--out", inside], tmp, "repair", [b1])
        refused(["repair", "--replica", p1, "--replica", p3, "--target", p2, "--out", os.path.join(b1, "x")],
                tmp, "repair", [b1])
        refused(["repair", "--salvage", p1, "--out", inside], tmp, "repair", [b1])
        # Beside the log dirs is fine.
        p = process(["reindex", p1, "--out", os.path.join(tmp, "ok")])
        check(p.returncode == 0, f"reindex beside the inputs: exit {p.returncode} {p.stderr}")


def test_simulate_out_holding_the_timeline():
    with temp_dir() as tmp:
        folder = os.path.join(tmp, "timelines")
        os.makedirs(folder)
        t = shutil.copy(TIMELINE, folder)
        refused(["simulate", t, "--out", folder, "--force"], tmp, "simulate", [folder, t])
        refused(["simulate", t, "--out", tmp, "--force"], tmp, "simulate", [t])
        refused(["simulate", t, "--out", t, "--force"], tmp, "simulate", [t])


def test_timeline_topic_cannot_climb_out_of_out():
    with temp_dir() as tmp:
        doc = json.load(open(TIMELINE))
        for topic in ("../../../../elsewhere/victim", "..", "a/b", "x" * 250, "caf\u00e9"):
            doc["topic"] = topic
            t = os.path.join(tmp, "t.json")
            with open(t, "w") as f:
                json.dump(doc, f)
            out = os.path.join(tmp, "deep", "a", "b", "out")
            p = refused(["simulate", t, "--out", out], tmp, "simulate", ["topic"])
            check("Topic.validate" in p.stderr, f"topic {topic!r}: {p.stderr}")
            check(not os.path.exists(os.path.join(tmp, "deep")), f"topic {topic!r}: --out's parents were created")
        check(not glob.glob(os.path.join(tmp, "**", "victim*"), recursive=True), "a victim directory appeared")


def test_symlinked_out():
    with temp_dir() as tmp:
        b1, _, _ = make_brokers(tmp)
        p1 = os.path.join(b1, "foo-0")
        link = os.path.join(tmp, "link-to-input")
        os.symlink(p1, link)
        refused(["compact", p1, "--out", link, "--force"], tmp, "compact", [link, p1])
        refused(["reindex", p1, "--out", link, "--force"], tmp, "reindex", [link, "resolves to"])
        logdir_link = os.path.join(tmp, "link-to-logdir")
        os.symlink(b1, logdir_link)
        refused(["reindex", p1, "--out", os.path.join(logdir_link, "new"), "--force"], tmp, "reindex", [b1])
        # The input named through a link, the output directly inside it.
        refused(["reindex", link, "--out", os.path.join(p1, "x")], tmp, "reindex", [link])
        # A link to a fresh place is written through: the target gets the output, the link stays.
        target = os.path.join(tmp, "target")
        os.makedirs(target)
        os.symlink(target, os.path.join(tmp, "out-link"))
        p = process(["reindex", p1, "--out", os.path.join(tmp, "out-link")])
        check(p.returncode == 0 and os.path.islink(os.path.join(tmp, "out-link")), f"{p.returncode} {p.stderr}")
        check(os.path.isfile(os.path.join(target, ".klf-output")), "the link's target did not get the output")


def test_force_replaces_only_klf_outputs():
    with temp_dir() as tmp:
        b1, b2, b3 = make_brokers(tmp)
        p1, p2, p3 = (os.path.join(b, "foo-0") for b in (b1, b2, b3))
        precious = os.path.join(tmp, "precious")
        os.makedirs(precious)
        with open(os.path.join(precious, "notes.txt"), "w") as f:
            f.write("mine")
        for args, command in (
                (["compact", p1, "--out", precious, "--force"], "compact"),
                (["reindex", p1, "--out", precious, "--force"], "reindex"),
                (["repair", "--replica", p1, "--replica", p3, "--target", p2, "--out", precious, "--force"], "repair"),
                (["repair", "--salvage", p1, "--out", precious, "--force"], "repair"),
                (["simulate", TIMELINE, "--out", precious, "--force"], "simulate")):
            refused(args, tmp, command, [precious, "not a klf output"])
        # A previous klf output is replaced with --force, and only with it.
        out = os.path.join(tmp, "out")
        for args, command, ok in (
                (["compact", p1, "--out", out], "compact", 0),
                (["reindex", p1, "--out", out], "reindex", 0),
                (["repair", "--replica", p1, "--replica", p3, "--target", p2, "--out", out], "repair", 0),
                (["simulate", TIMELINE, "--out", out], "simulate", 1)):
            shutil.rmtree(out, ignore_errors=True)
            p = process(args)
            check(p.returncode == ok and os.path.isfile(os.path.join(out, ".klf-output")),
                  f"{command}: first run exit {p.returncode} {p.stderr}")
            refused(args, tmp, command, [out, "--force"])
            p = process(args + ["--force"])
            check(p.returncode == ok, f"{command} --force over its own output: exit {p.returncode} {p.stderr}")
            check(sorted(os.listdir(tmp)) == ["in", "out", "precious"], f"{command}: left {os.listdir(tmp)}")


def test_compact_on_a_damaged_log_exits_1():
    with temp_dir() as tmp:
        b1, _, b3 = make_brokers(tmp)
        p1, p3 = os.path.join(b1, "foo-0"), os.path.join(b3, "foo-0")
        segs = sorted(glob.glob(os.path.join(p1, "*.log")))
        with open(segs[0], "r+b") as f:
            f.seek(16)
            magic = f.read(1)
            f.seek(16)
            f.write(b"\x07")  # the first batch's magic byte
        out = os.path.join(tmp, "out")
        config = ["--config", "cleanup.policy=compact", "--config", "min.cleanable.dirty.ratio=0"]
        for args in ([p1], [p1, "--mode", "coordinated", "--replica", p3]):
            p = refused(["compact", *args, "--out", out, *config], tmp, "compact", [], code=1)
            doc = json.loads(p.stdout)
            check(doc.get("out", 0) is None and doc.get("problems"), f"damaged compact {args}: JSON {doc}")
        # Zeroed bytes inside a later segment of a --replica (the first segment repaired): coordinated mode
        # could not read that replica's records and exited 3.
        with open(segs[0], "r+b") as f:
            f.seek(16)
            f.write(magic)
        with open(segs[-1], "r+b") as f:
            f.seek(70)
            f.write(bytes(40))
        refused(["compact", p3, "--mode", "coordinated", "--replica", p1, "--out", out, *config], tmp, "compact", [],
                code=1)


def test_simulate_exit_codes():
    with temp_dir() as tmp:
        refused(["simulate", os.path.join(tmp, "missing.json"), "--out", os.path.join(tmp, "o")], tmp, "simulate",
                ["missing.json"], code=3)
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{"events": [{"op": "down", "broker": 7}]}')
        refused(["simulate", bad, "--out", os.path.join(tmp, "o")], tmp, "simulate", ["event 0"], code=2)
        refused(["simulate", TIMELINE, "--out", os.path.join(tmp, "o"), "--mode", "sideways"], tmp, "simulate",
                ["sideways"], code=2)
        p = process(["simulate", TIMELINE, "--out", os.path.join(tmp, "o"), "--json"])
        check(p.returncode == 1 and json.loads(p.stdout)["divergence"]["diverged"], "diverged: exit 1")


def test_every_json_command_prints_one_error_object():
    with temp_dir() as tmp:
        missing = os.path.join(tmp, "missing")
        os.makedirs(os.path.join(tmp, "foo-0"))  # an empty partition directory
        cases = [
            (["reindex", missing, "--out", os.path.join(tmp, "o")], "reindex", 3),
            (["repair", "--replica", missing, "--target", missing, "--out", os.path.join(tmp, "o")], "repair", 3),
            (["repair", "--target", missing, "--out", os.path.join(tmp, "o")], "repair", 2),
            (["lso", missing], "lso", 3),
            (["consume", "--isolation", "read_committed", missing], "consume", 3),
            (["consume", "--isolation", "read_committed", os.path.join(tmp, "foo-0"), "--offsets", "5:1"], "consume",
             2),
            (["diff", missing, missing], "diff", 3),
            (["simulate", missing, "--out", os.path.join(tmp, "o")], "simulate", 3),
            (["compact", missing, "--out", os.path.join(tmp, "o"), "--config", "bogus=1"], "compact", 2),
            (["compact", missing, "--out", os.path.join(tmp, "o")], "compact", 3),
            (["compact", os.path.join(tmp, "foo-0"), "--mode", "coordinated", "--replica", missing, "--out",
              os.path.join(tmp, "o")], "compact", 3),
            (["verify", missing], "verify", 3),
            (["compact", missing], "compact", 2),  # CLI11: --out is required
            (["frobnicate"], "klf", 2),
        ]
        for args, command, code in cases:
            refused(args, tmp, command, [], code=code)
        # dump is JSON Lines: the error object is a line of the stream.
        p = process(["dump", "--json", missing])
        lines = [json.loads(l) for l in p.stdout.splitlines()]
        check(p.returncode == 3 and len(lines) == 1 and lines[0].get("command") == "dump"
              and lines[0].get("exitCode") == 3 and missing in lines[0].get("error", "")
              and lines[0].get("type") == "error" and lines[0].get("file") == missing, f"dump: {p.stdout!r}")


def wait_for(pred, seconds=20):
    end = time.time() + seconds
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.01)
    return False


def slow_timeline(tmp):
    """A timeline that keeps klf simulate busy for a while (plenty of traffic and cleaner passes)."""
    doc = {"name": "slow", "config": {"cleanup.policy": "compact", "segment.bytes": 1024,
                                      "min.cleanable.dirty.ratio": "0.01"},
           "producers": {"Q": {}},
           "events": [e for _ in range(400) for e in ({"op": "traffic", "producer": "Q", "key_prefix": "k",
                                                        "key_count": 20, "count": 40}, {"op": "clean"})]}
    t = os.path.join(tmp, "slow.json")
    with open(t, "w") as f:
        json.dump(doc, f)
    return t


def scratch_of(pid):
    return glob.glob(os.path.join(SHM, f"klf-simulate-{pid}-*"))


def test_killed_simulate_leaves_no_scratch():
    if not os.path.isdir(SHM):
        print("skipped: no /dev/shm")
        return
    with temp_dir() as tmp:
        t = slow_timeline(tmp)
        # klf leaves a signal its caller ignores ignored (nohup): then it cannot be tested here.
        sigs = [s for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) if signal.getsignal(s) != signal.SIG_IGN]
        for sig in sigs:
            out = os.path.join(tmp, "out")
            p = subprocess.Popen([KLF, "simulate", t, "--out", out], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            started = wait_for(lambda: scratch_of(p.pid))
            p.send_signal(sig)
            try:
                rc = p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
            if not check(started, f"{sig.name}: the run ended before it was killed; make the timeline longer"):
                continue
            check(rc == -sig, f"{sig.name}: exit {rc}, want killed by the signal")
            check(not scratch_of(p.pid), f"{sig.name}: {scratch_of(p.pid)} left behind")
            check(os.listdir(tmp) == ["slow.json"], f"{sig.name}: left {os.listdir(tmp)}")
        # SIGKILL cannot be handled: the next run removes what the dead one left.
        p = subprocess.Popen([KLF, "simulate", t, "--out", os.path.join(tmp, "out")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        started = wait_for(lambda: scratch_of(p.pid))
        p.kill()
        p.wait()
        if check(started, "SIGKILL: the run ended before it was killed"):
            check(scratch_of(p.pid), "SIGKILL: expected leftovers to clean")
            staging = [n for n in os.listdir(tmp) if n.startswith(f"out.tmp-{p.pid}-")]
            q = process(["simulate", TIMELINE, "--out", os.path.join(tmp, "out")])
            check(q.returncode == 1, f"next run: exit {q.returncode} {q.stderr}")
            check(not scratch_of(p.pid), f"the next run left {scratch_of(p.pid)}")
            check(sorted(os.listdir(tmp)) == ["out", "slow.json"], f"left {os.listdir(tmp)} (staging was {staging})")


if __name__ == "__main__":
    run_tests(globals())
