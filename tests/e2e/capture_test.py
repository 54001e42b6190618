#!/usr/bin/python3
"""Captures as they arrive (issue 19, item 2): `.tar`, `.tar.gz`, `.tar.zst` and `.zip` archives of
broker log directories, read in place by every command (segment_reader/capture.h).

* The captures are built here from the fixtures (nothing large is committed): Kafka's replica sets
  (kafka-oracle/replicas, random-replicas, kafka4/tv2-replicas) and a real five-broker capture
  (fixtures/real). For each archive kind, `klf triage --json`, `klf diff --json`, `klf verify --json`
  and `klf dump` of the archive give byte for byte what they give for the directories, once the path
  prefix (archive/top-dir -> fixture dir) is swapped back.
* A path into a capture works where a directory does (`cap.tar.zst/broker2/foo-0`: dump, lso,
  consume), and outputs still go to real directories (`klf reindex cap.tar/broker1/foo-0 --out DIR`).
* Hostile archives (a `../` member, an absolute member, a symbolic link, a hard link, a FIFO, a
  duplicate name, control bytes in a name, a zip with `../`) are refused with exit 3 and a message
  naming the member; nothing is written anywhere (the scratch directory is unchanged).
* Inputs (the fixtures and the archives) are not modified."""
import io
import json
import os
import re
import shutil
import tarfile
import zipfile

from capture_archives import make_capture
from klf_e2e import FIX, ORACLE, REAL, check, process, run_tests, snapshot, temp_dir

KINDS = ("tar", "tar.gz", "tar.zst", "zip")

SETS = {
    # name: (parent directory, top-level directory put in the archive)
    "aborted-to-committed": (os.path.join(ORACLE, "replicas"), "aborted-to-committed"),
    "random-timeline-01": (os.path.join(ORACLE, "random-replicas"), "timeline-01"),
    "kafka4-timeline-04": (os.path.join(FIX, "kafka4", "tv2-replicas"), "timeline-04"),
    "real-study-kafka": (os.path.join(REAL, "cesaralcancio__study-kafka"), "data"),
}


def broker_dirs(d):
    return sorted(os.path.join(d, n) for n in os.listdir(d)
                  if n.startswith(("broker", "kafka")) and os.path.isdir(os.path.join(d, n)))


def out(args):
    p = process(args, timeout=600)
    return p.returncode, p.stdout, p.stderr


def seconds(text):
    """JSON text with every "fileMtimeMs" value truncated to a DOS time's two seconds."""
    return re.sub(r'("fileMtimeMs": )(\d+)', lambda m: m.group(1) + str(int(m.group(2)) // 2000 * 2000), text)


def test_same_findings_as_the_directories():
    with temp_dir() as tmp:
        for name, (parent, top) in sorted(SETS.items()):
            dirs = broker_dirs(os.path.join(parent, top))
            real_prefix = os.path.join(parent, top)
            before = snapshot(real_prefix)
            want = {
                "triage": out(["triage", "--json", *dirs]),
                "diff": out(["diff", "--json", *dirs]),
                "verify": out(["verify", "--json", *dirs]),
            }
            one = os.path.join(dirs[0], sorted(n for n in os.listdir(dirs[0]) if n.endswith("-0"))[0])
            want["dump"] = out(["dump", "--deep-iteration", "--print-data-log", one])
            for kind in KINDS:
                cap = make_capture(parent, top, kind, tmp)
                cap_before = snapshot(tmp)
                prefix = f"{cap}/{top}"

                def same(what, got):
                    code, stdout, stderr = got
                    stdout = stdout.replace(prefix, real_prefix)
                    stderr = stderr.replace(prefix, real_prefix)
                    expected = want[what]
                    if kind == "zip":
                        # A zip (as Python's zipfile writes it) keeps a member's mtime as a DOS time, to two
                        # seconds; a directory to the nanosecond: diff's raw segment mtime (incidentWindow's
                        # fileMtimeMs) is compared at the archive's resolution.
                        stdout, expected = seconds(stdout), (expected[0], seconds(expected[1]), expected[2])
                    check((code, stdout, stderr) == expected,
                          f"{name} .{kind}: klf {what} differs from the directories: exit {code} vs "
                          f"{want[what][0]}; stdout {stdout[:400]!r} vs {want[what][1][:400]!r}; stderr {stderr[:300]!r}")

                # The archive alone stands for the log directories it holds.
                same("triage", out(["triage", "--json", cap]))
                same("diff", out(["diff", "--json", cap]))
                same("verify", out(["verify", "--json", cap]))
                same("dump", out(["dump", "--deep-iteration", "--print-data-log",
                                  one.replace(real_prefix, prefix)]))
                # Paths inside it, one per broker, work as well.
                cap_dirs = [d.replace(real_prefix, prefix) for d in dirs]
                same("triage", out(["triage", "--json", *cap_dirs]))
                check(snapshot(tmp) == cap_before, f"{name} .{kind}: the scratch directory changed")
                os.remove(cap)
            check(snapshot(real_prefix) == before, f"{name}: the fixture changed")


def test_paths_inside_a_capture():
    parent, top = SETS["aborted-to-committed"]
    with temp_dir() as tmp:
        cap = make_capture(parent, top, "tar.zst", tmp)
        part = f"{cap}/{top}/broker2/foo-0"
        real = os.path.join(parent, top, "broker2", "foo-0")
        for args in (["lso", "--json", "{}"], ["consume", "--isolation", "read_committed", "{}"],
                     ["dump", "--files", "{}/00000000000000000000.log"]):
            got = out([a.replace("{}", part) for a in args])
            want = out([a.replace("{}", real) for a in args])
            check((got[0], got[1].replace(part, real)) == (want[0], want[1]),
                  f"klf {args[0]} on a partition inside a capture differs: {got[0]} {got[1][:300]} / {want[1][:300]}")
        # An output is a real directory; the input may be a capture.
        dest = os.path.join(tmp, "reindexed")
        code, stdout, stderr = out(["reindex", part, "--out", dest])
        want_dest = os.path.join(tmp, "reindexed-from-dir")
        want_code, _, _ = out(["reindex", real, "--out", want_dest])
        check(code == want_code, f"reindex from a capture: exit {code} (want {want_code}): {stderr}")
        if code == 0:
            check(snapshot(dest) and {k: v[0] for k, v in snapshot(dest).items()} ==
                  {k: v[0] for k, v in snapshot(want_dest).items()},
                  "reindex from a capture wrote other bytes than from the directory")
        # A member that is not there, and the archive's own missing paths.
        code, _, stderr = out(["dump", f"{cap}/{top}/broker2/foo-0/00000000000000000099.log"])
        check(code == 3 and "no such" in stderr, f"missing member: {code} {stderr}")


def test_coordinator_log_and_single_files():
    """`klf txn describe` of the coordinator's log in a capture whose one top-level directory is the log
    dir, and `klf verify` of one file inside a capture."""
    parent, top = os.path.join(FIX, "kafka4", "txn-state"), "written"
    real = os.path.join(parent, top)
    with temp_dir() as tmp:
        cap = make_capture(parent, top, "tar.zst", tmp)
        want = out(["txn", "describe", "--json", real])
        got = out(["txn", "describe", "--json", cap])
        check((got[0], got[1].replace(f"{cap}/{top}", real)) == want[:2],
              f"txn describe of a capture: exit {got[0]} / {want[0]}: {got[1][:300]} / {want[1][:300]} {got[2]}")
        seg = "__transaction_state-0/00000000000000000000.log"
        want = out(["verify", "--json", os.path.join(real, seg)])
        got = out(["verify", "--json", f"{cap}/{top}/{seg}"])
        check((got[0], got[1].replace(f"{cap}/{top}", real)) == want[:2],
              f"verify of a file in a capture: {got[0]} / {want[0]}: {got[1][:300]} / {want[1][:300]} {got[2]}")


def test_compact_reads_a_capture():
    """`klf compact` of a partition inside a .tar.gz writes what it writes from the directory (Kafka's
    compaction demo, cleaned)."""
    parent, top = ORACLE + "/c-compact", "pass0-before"
    args = ["--now", "1700000600000", "--config", "segment.bytes=400", "--config", "cleanup.policy=compact"]
    with temp_dir() as tmp:
        for kind in ("tar", "tar.gz"):
            cap = make_capture(parent, top, kind, tmp)
            a, b = os.path.join(tmp, f"from-dir-{kind}"), os.path.join(tmp, f"from-cap-{kind}")
            want = out(["compact", os.path.join(parent, top, "compact-demo-0"), "--out", a, *args])
            got = out(["compact", f"{cap}/{top}/compact-demo-0", "--out", b, *args])
            check(got[0] == want[0] == 0, f"compact .{kind}: exit {got[0]} / {want[0]}: {got[2]} {want[2]}")
            check(got[1].replace(b, a) == want[1], f"compact .{kind}: report differs: {got[1]!r} / {want[1]!r}")
            sa, sb = snapshot(a), snapshot(b)
            check({k: v[0] for k, v in sa.items()} == {k: v[0] for k, v in sb.items()},
                  f"compact .{kind}: other bytes written from the capture")


def hostile_tar(path, members):
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as t:
        for name, kind, extra in members:
            ti = tarfile.TarInfo(name)
            if kind == "file":
                data = b"\0" * 12
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
                continue
            ti.type = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE,
                       "dir": tarfile.DIRTYPE, "chr": tarfile.CHRTYPE}[kind]
            if extra:
                ti.linkname = extra
            t.addfile(ti)


HOSTILE = {
    "dotdot": ([("b1/foo-0/../../../../tmp/klf-escaped", "file", None)], "b1/foo-0/../../../../tmp/klf-escaped",
               "'..'"),
    "absolute": ([("/tmp/klf-escaped-abs", "file", None)], "/tmp/klf-escaped-abs", "absolute"),
    "symlink": ([("b1/foo-0", "dir", None), ("b1/foo-0/00000000000000000000.log", "sym", "/etc/shadow")],
                "b1/foo-0/00000000000000000000.log", "symbolic link"),
    "hardlink": ([("b1/meta.properties", "file", None), ("b1/foo-0/00000000000000000000.log", "hard", "/etc/shadow")],
                 "b1/foo-0/00000000000000000000.log", "hard link"),
    "fifo": ([("b1/foo-0/00000000000000000000.log", "fifo", None)], "b1/foo-0/00000000000000000000.log", "FIFO"),
    "device": ([("b1/foo-0/00000000000000000000.log", "chr", None)], "b1/foo-0/00000000000000000000.log", "device"),
    "duplicate": ([("b1/foo-0/00000000000000000000.log", "file", None),
                   ("./b1/foo-0/00000000000000000000.log", "file", None)], "./b1/foo-0/00000000000000000000.log",
                  "second member"),
    "control-bytes": ([("b1/foo-0/\x1b[2J.log", "file", None)], "b1/foo-0/\\x1b[2J.log", "control"),
}


def test_hostile_archives_are_refused_by_name():
    with temp_dir() as tmp:
        scratch = os.path.join(tmp, "scratch")
        os.mkdir(scratch)
        for case, (members, shown, why) in sorted(HOSTILE.items()):
            cap = os.path.join(scratch, f"{case}.tar")
            hostile_tar(cap, members)
            before = snapshot(tmp)
            for args in (["triage", cap], ["verify", cap], ["dump", cap + "/b1"], ["diff", cap],
                         ["triage", "--json", cap]):
                p = process(args, timeout=60)
                check(p.returncode == 3, f"{case}: klf {' '.join(args)}: exit {p.returncode} (want 3): {p.stderr}")
                check(f'member "{shown}"' in p.stderr and why in p.stderr and "refused" in p.stderr,
                      f"{case}: klf {args[0]}: message does not name the member: {p.stderr!r}")
                check("\x1b" not in p.stderr, f"{case}: a control byte reached the terminal")
            check(snapshot(tmp) == before, f"{case}: something was written")
        check(not os.path.exists("/tmp/klf-escaped") and not os.path.exists("/tmp/klf-escaped-abs"),
              "a member escaped the archive")
        # A zip with a `../` member; a file that is no archive.
        z = os.path.join(scratch, "evil.zip")
        with zipfile.ZipFile(z, "w") as zf:
            zf.writestr("../evil/meta.properties", "x")
        p = process(["triage", z], timeout=60)
        check(p.returncode == 3 and 'member "../evil/meta.properties"' in p.stderr, f"zip: {p.returncode} {p.stderr}")
        junk = os.path.join(scratch, "junk.tar.zst")
        with open(junk, "wb") as f:
            f.write(b"not an archive at all" * 100)
        p = process(["triage", junk], timeout=60)
        check(p.returncode == 3 and junk in p.stderr and "archive" in p.stderr, f"junk: {p.returncode} {p.stderr}")
        p = process(["triage", "--json", junk], timeout=60)
        check(json.loads(p.stdout).get("command") == "triage", f"JSON error object: {p.stdout}")


def test_truncated_compressed_capture():
    """A .tar.zst cut short: an error naming the archive, never a crash or a hang."""
    parent, top = SETS["aborted-to-committed"]
    with temp_dir() as tmp:
        cap = make_capture(parent, top, "tar.zst", tmp)
        size = os.path.getsize(cap)
        with open(cap, "r+b") as f:
            f.truncate(size // 2)
        p = process(["triage", "--json", cap], timeout=120)
        check(p.returncode in (1, 3) and p.returncode is not None, f"truncated: exit {p.returncode} {p.stderr[:300]}")
        check(p.returncode != 3 or cap in p.stderr, f"truncated: the message does not name the archive: {p.stderr}")


if __name__ == "__main__":
    if shutil.which("zstd") is None:
        print("SKIP: the zstd command is not installed (scripts/install-deps.sh test)")
        raise SystemExit(0)
    run_tests(globals())
