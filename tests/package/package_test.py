#!/usr/bin/python3
"""`make package` (issue 20 item 6): the .deb installs into a scratch root with dpkg and its klf runs
from there; the static klf needs no shared library (readelf finds no NEEDED entry) and runs from an
empty directory with an empty environment; its output on bytes Kafka wrote equals the regular build's
(the static build computes CRC-32C with Boost.CRC instead of ISA-L, so the CRC verdicts are compared).

Usage: tests/package/package_test.py BUILD_PACKAGE_DIR   (make package-test runs it after make package)
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(os.path.dirname(SRC), "shared", "fixtures")
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



if __name__ == "__main__":
    main()
    print(f"package: {len(failures)} failed" if failures else "package: all checks passed")
    sys.exit(1 if failures else 0)
