#!/usr/bin/python3
"""`make package` (issue 20 item 6): the .deb installs into a scratch root with dpkg and its klf runs
from there; the static klf needs no shared library (readelf finds no NEEDED entry) and runs from an
empty directory with an empty environment; its output on bytes Kafka wrote equals the regular build's
(the static build computes CRC-32C with Boost.CRC instead of ISA-L, so the CRC verdicts are compared).
The static klf reads captures (issue 19: libarchive linked statically): a .tar.gz and a .zip of Kafka's
aborted-to-committed log dirs give what the directories give (triage, diff, verify, dump), a zip's mtimes
compared at its DOS times' two seconds.

Usage: tests/package/package_test.py BUILD_PACKAGE_DIR   (make package-test runs it after make package)
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(os.path.dirname(SRC), "shared", "fixtures")
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))
from capture_archives import make_capture  # noqa: E402
failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def main():
    pkg = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(SRC, "build-package"))
    debs = glob.glob(os.path.join(pkg, "klf_*.deb"))
    if not check(len(debs) == 1, f"one klf .deb in {pkg}: {debs}"):
        return
    deb, static = debs[0], os.path.join(pkg, "klf-static")
    info = run(["dpkg-deb", "--field", deb, "Package", "Version", "Depends"]).stdout
    check("Package: klf" in info and "Depends" not in info, f"package fields (no dependencies):\n{info}")
    contents = run(["dpkg-deb", "--contents", deb]).stdout
    for path in ("./usr/bin/klf", "./usr/share/man/man1/klf.1.gz", "./usr/share/doc/klf/README.md"):
        check(path in contents, f"the package holds {path}")

    # The static binary: no dynamic section needs anything.
    needed = run(["readelf", "-d", static]).stdout
    check("NEEDED" not in needed, f"readelf -d klf-static: no NEEDED entry ({needed.strip()[:200]})")
    check("statically linked" in run(["file", "-L", static]).stdout, "file: statically linked")

    with tempfile.TemporaryDirectory(prefix="klf-package-") as tmp:
        # dpkg -i into a scratch root (its own admin dir), then klf from there.
        root = os.path.join(tmp, "root")
        admin = os.path.join(root, "var", "lib", "dpkg")
        os.makedirs(os.path.join(admin, "info"))
        os.makedirs(os.path.join(admin, "updates"))
        open(os.path.join(admin, "status"), "w").close()
        p = run(["dpkg", f"--root={root}", f"--admindir={admin}", "--force-not-root", "--force-script-chrootless",
                 "--no-triggers", "-i", deb])
        check(p.returncode == 0, f"dpkg -i into a scratch root: exit {p.returncode} {p.stderr[-500:]}")
        klf = os.path.join(root, "usr", "bin", "klf")
        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        p = run([klf, "--version"], cwd=empty, env={})
        check(p.returncode == 0 and p.stdout.startswith("klf "), f"installed klf --version: {p.stdout!r} {p.stderr!r}")
        import gzip
        with gzip.open(os.path.join(root, "usr", "share", "man", "man1", "klf.1.gz"), "rt") as f:
            man = f.read()
        check(man.startswith(".\\\"") or ".TH KLF" in man, "the man page is roff (help2man's)")
        check(all(c in man for c in ("dump", "verify", "diff", "repair", "lso")), "the man page lists the subcommands")

        # The same answers as the regular build on bytes Kafka wrote, CRCs included.
        regular = os.path.join(SRC, "build", "klf")
        part = os.path.join(FIX, "kafka-oracle", "a-keyed", "keyed-zstd-0")
        for args in (["dump", "--json", "--records", part], ["verify", "--json", part]):
            a = run([klf, *args], cwd=empty, env={})
            check(a.returncode in (0, 1) and '"crcValid":false' not in a.stdout.replace(" ", ""),
                  f"static klf {args[0]}: exit {a.returncode}, every CRC valid")
            if os.access(regular, os.X_OK):
                b = run([regular, *args])
                check(a.stdout == b.stdout and a.returncode == b.returncode,
                      f"static and regular klf {args[0]} print the same")
        rs = os.path.join(FIX, "kafka-oracle", "replicas", "aborted-to-committed")
        args = ["diff", "--json", *[os.path.join(rs, b, "foo-0") for b in ("broker1", "broker2", "broker3")]]
        a = run([klf, *args], cwd=empty, env={})
        if os.access(regular, os.X_OK):
            b = run([regular, *args])
            check(a.returncode == 1 and a.stdout == b.stdout, "static and regular klf diff print the same finding")
        damaged = os.path.join(tmp, "damaged")
        shutil.copytree(part, damaged)
        log = sorted(glob.glob(os.path.join(damaged, "*.log")))[0]
        with open(log, "r+b") as f:
            f.seek(70)
            b = f.read(1)
            f.seek(70)
            f.write(bytes([b[0] ^ 0xFF]))
        a = run([klf, "verify", damaged], cwd=empty, env={})
        check(a.returncode == 1 and "crc" in a.stdout.lower(), f"static klf finds a flipped byte: exit {a.returncode}")
        check_captures(klf, rs, tmp, empty)


def seconds(text):
    """JSON text with every "fileMtimeMs" value truncated to a DOS time's two seconds (a zip's resolution)."""
    return re.sub(r'("fileMtimeMs": ?)(\d+)', lambda m: m.group(1) + str(int(m.group(2)) // 2000 * 2000), text)


def check_captures(klf, replica_set, tmp, cwd):
    """The static klf on a .tar.gz and a .zip of a replica set prints what it prints on the directories."""
    parent, top = os.path.split(replica_set)
    dirs = [os.path.join(replica_set, b) for b in ("broker1", "broker2", "broker3")]
    one = os.path.join(dirs[1], "foo-0")
    commands = {
        "triage": ["triage", "--json", *dirs],
        "diff": ["diff", "--json", *dirs],
        "verify": ["verify", "--json", *dirs],
        "dump": ["dump", "--deep-iteration", "--print-data-log", one],
    }
    want = {k: run([klf, *args], cwd=cwd, env={}) for k, args in commands.items()}
    check(want["diff"].returncode == 1 and "lost_abort" in want["diff"].stdout,
          f"static klf diff on the directories finds the lost ABORT: exit {want['diff'].returncode}")
    for kind in ("tar.gz", "zip"):
        cap = make_capture(parent, top, kind, tmp)
        prefix = f"{cap}/{top}"
        for what, args in commands.items():
            got = run([klf, *[a.replace(replica_set, prefix) for a in args]], cwd=cwd, env={})
            stdout, expected = got.stdout.replace(prefix, replica_set), want[what].stdout
            if kind == "zip":
                stdout, expected = seconds(stdout), seconds(expected)
            ok = (got.returncode == want[what].returncode and stdout == expected and
                  got.stderr.replace(prefix, replica_set) == want[what].stderr)
            check(ok, f"static klf {what} on the .{kind} capture prints what it prints on the directories" +
                  ("" if ok else f": exit {got.returncode} vs {want[what].returncode}; {stdout[:300]!r} vs "
                                 f"{expected[:300]!r}; stderr {got.stderr[:300]!r}"))
        # The archive alone stands for the log dirs it holds.
        got = run([klf, "diff", "--json", cap], cwd=cwd, env={})
        stdout = got.stdout.replace(prefix, replica_set)
        check(got.returncode == 1 and (seconds(stdout) if kind == "zip" else stdout) ==
              (seconds(want["diff"].stdout) if kind == "zip" else want["diff"].stdout),
              f"static klf diff on the .{kind} capture alone: exit {got.returncode}")
        os.remove(cap)



if __name__ == "__main__":
    main()
    print(f"package: {len(failures)} failed" if failures else "package: all checks passed")
    sys.exit(1 if failures else 0)
