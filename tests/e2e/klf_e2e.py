"""Shared helpers of the end-to-end tests (tests/e2e/*_test.py): running the klf binary, collecting
failures, temporary directories, writable copies of the read-only fixtures, input snapshots.

CTest runs each *_test.py with KLF_BINARY, KLF_FIXTURES_DIR and KLF_SOURCE_DIR set (tests/CMakeLists.txt);
this module is not a test itself (its name does not end in _test.py)."""
import contextlib
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import traceback

KLF = os.environ["KLF_BINARY"]
FIX = os.environ["KLF_FIXTURES_DIR"]
SRC = os.environ.get("KLF_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ORACLE = os.path.join(FIX, "kafka-oracle")
REPLICAS = os.path.join(ORACLE, "replicas")
REAL = os.path.join(FIX, "real")

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    return bool(cond)


# What AddressSanitizer, LeakSanitizer and UBSan print when the binary is a sanitizer build
# (`make test SAN=1`), and ThreadSanitizer in `make tsan-test`'s build. Such a report may come with an
# exit code the test accepts (ASan exits 1 by default, as klf does on a found problem), so its text is
# checked as well.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "WARNING: ThreadSanitizer")


def process(args, timeout=None, wrapper=(), cwd=None):
    """Runs `klf ARGS` (a list); the completed process, for tests that read its fields. A sanitizer
    report on stderr is a failure, whatever the exit code. With `timeout` (seconds) a run still going
    after it is killed and is a failure (a hang); its returncode is then None. `wrapper` is a command
    prefix (e.g. ["setpriv", "--reuid=nobody", ...] to run klf as another user); `cwd` the directory
    to run it in."""
    try:
        p = subprocess.run([*wrapper, os.path.abspath(KLF), *args], capture_output=True, text=True, timeout=timeout,
                           cwd=cwd)
    except subprocess.TimeoutExpired:
        fail(f"klf {' '.join(args)}: still running after {timeout} s (a hang); killed")
        return subprocess.CompletedProcess([KLF, *args], None, "", "")
    check(not any(m in p.stderr for m in SANITIZER_MARKS),
          f"klf {' '.join(args)}: sanitizer report on stderr: {p.stderr[-2000:]}")
    return p


def run(*args):
    """Runs `klf ARGS...`: (exit code, stdout, stderr)."""
    p = process(args)
    return p.returncode, p.stdout, p.stderr


def run_json(*args):
    """Runs `klf ARGS...` (ARGS should include --json): (exit code, parsed stdout or None, stderr)."""
    rc, o, e = run(*args)
    try:
        return rc, json.loads(o) if o.strip() else None, e
    except ValueError:
        fail(f"klf {' '.join(args)}: stdout is not JSON: {o[:300]}")
        return rc, None, e


def triage_json(inputs, *extra):
    """Runs `klf triage --json EXTRA... INPUTS...` (log dirs, captures or digests): (the completed
    process, its parsed JSON or None); stdout that is not JSON is a failure."""
    p = process(["triage", "--json", *extra, *inputs], timeout=600)
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        check(False, f"triage {inputs}: stdout is not JSON: {p.stdout[:300]} {p.stderr[:300]}")
        return p, None


def klf_text(b):
    """What `--bytes text` prints for bytes b (and what header keys always print as, cli.md): well-formed
    UTF-8 as is; every other byte and every control character (TAB and DEL included) as \\xNN. Written
    here from the rule, not from klf's code, so the tests judge klf's renderer."""
    out, i = [], 0
    while i < len(b):
        c = b[i]
        if c < 0x80:
            out.append("\\x%02x" % c if c < 0x20 or c == 0x7F else chr(c))
            i += 1
            continue
        n = 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else 4 if 0xF0 <= c <= 0xF4 else 0
        try:
            out.append(b[i:i + n].decode("utf-8") if n and i + n <= len(b) else None)
        except UnicodeDecodeError:
            out.append(None)
        if out[-1] is None:
            out[-1] = "\\x%02x" % c
            i += 1
        else:
            i += n
    return "".join(out)


def is_segment(name):
    """A Kafka segment file name: 20 decimal digits then .log (fixture trees also hold a run.log)."""
    return len(name) == 24 and name.endswith(".log") and name[:20].isdigit()


def snapshot(d):
    """Every file under d (relative path) -> (sha256, mtime_ns): inputs must be untouched by a run.
    Entries that are not regular files (a FIFO, a symlink, possibly a loop, a directory named like a
    file) are recorded by type, target and mtime, never opened."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in files + dirs:
            p = os.path.join(root, n)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    out[os.path.relpath(p, d)] = (hashlib.sha256(f.read()).hexdigest(), st.st_mtime_ns)
            elif stat.S_ISLNK(st.st_mode):
                out[os.path.relpath(p, d)] = ("symlink", os.readlink(p))
            elif not stat.S_ISDIR(st.st_mode):
                out[os.path.relpath(p, d)] = (stat.S_IFMT(st.st_mode), st.st_mtime_ns)
    return out


@contextlib.contextmanager
def temp_dir(prefix="klf-e2e-"):
    """A temporary directory removed afterwards."""
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def flip_byte(path, position, mask=0xFF):
    """Flips the bits of `mask` in the byte at `position` of the file at `path`."""
    with open(path, "r+b") as f:
        f.seek(position)
        c = f.read(1)
        f.seek(position)
        f.write(bytes([c[0] ^ mask]))


def copy_fixture(src, dst):
    """A writable copy of a (read-only) fixture directory; returns dst."""
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            p = os.path.join(root, n)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    return dst


def non_info(problems):
    """The problems of a `klf verify --json` report that are errors or warnings."""
    return [p for p in problems if p.get("severity", "error") != "info"]


def finish():
    """Prints the verdict and exits non-zero when any check failed."""
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


def run_tests(namespace):
    """For test modules written as test_* functions: runs each in name order (an exception fails that
    test and the others still run), then finish()."""
    tests = [v for k, v in sorted(namespace.items()) if k.startswith("test_") and callable(v)]
    for t in tests:
        before = len(failures)
        try:
            t()
        except Exception:
            fail(f"{t.__name__} raised:\n{traceback.format_exc()}")
        print("PASS" if len(failures) == before else "FAIL", t.__name__)
    finish()
