"""Hostile inputs that once made klf allocate without bound (issue 15): small or sparse files whose
counts and lengths claim far more than they hold. Each case is generated here in a temporary
directory (no large file is stored: sparse files come from truncate), then every command that reads
it runs under `prlimit --as` with a timeout. Each run must end by itself with a documented exit code
(0, 1 or 3; never a signal, never an allocation failure), within the memory ceiling README.md
documents (peak RSS from wait4, what /usr/bin/time -v reports), and name the hostile file where it
reports a problem.

A sanitizer build (KLF_BINARY built with -DKLF_SANITIZE=ON, or `make tsan-test`'s ThreadSanitizer
build) reserves terabytes of shadow address space and counts shadow pages in its RSS: there the
address-space limit and the RSS ceiling are skipped (and said so); exit codes, signals, timeouts and
sanitizer reports are still checked.

KLF_HOSTILE_SCALE (default 1; 0.25 for a sanitizer build) scales the record and header counts;
KLF_HOSTILE_CASES (comma-separated case_* names) runs only those cases."""
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import time

import crc32c
import zstandard

from klf_e2e import KLF, SANITIZER_MARKS, check, fail, finish, temp_dir

AS_LIMIT = 2 << 30                        # prlimit --as: an allocation failure shows as an abort
MIB = 1 << 20
# README.md "Memory": 256 MiB plus one batch (its bytes, at most 64 MiB, and when compressed its records
# section decompressed, at most the 256 MiB cap) for the commands that decode records. The hostile
# batches here are small on disk, so their bytes are not added.
CEILING_DECODE = 256 * MIB + 256 * MIB
CEILING = 256 * MIB
TIMEOUT = 300
TOPIC = "hostile-0"


def sanitizer_build():
    """Whether KLF_BINARY is built with ASan or TSan (the binary names __asan_init or __tsan_init).
    Read in chunks; the answer is passed to the per-command children in the environment."""
    if "KLF_HOSTILE_SAN" not in os.environ:
        found, tail = False, b""
        with open(KLF, "rb") as f:
            while not found and (chunk := f.read(16 << 20)):
                found = b"__asan_init" in tail + chunk or b"__tsan_init" in tail + chunk
                tail = chunk[-16:]
        os.environ["KLF_HOSTILE_SAN"] = "1" if found else "0"
    return os.environ["KLF_HOSTILE_SAN"] == "1"


SAN = sanitizer_build()
# A sanitized klf is several times slower: a quarter of the records and headers (still far past what
# the bounds allow) unless KLF_HOSTILE_SCALE says otherwise.
SCALE = float(os.environ.get("KLF_HOSTILE_SCALE", "0.25" if SAN else "1"))


# ---------------------------------------------------------------------------------------------
# Kafka v2 batches (spec kafka-on-disk-format.md §4), written here so that counts can lie.

def varint(v):
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def record(offset_delta, key=None, value=b"", header_count=0, headers=b""):
    body = b"\x00" + varint(0) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(header_count) + headers
    return varint(len(body)) + body


def batch(base_offset, count, section, codec=0, last_offset_delta=None, timestamp=1700000000000):
    """A v2 batch holding `count` records whose (compressed) records section is `section`."""
    last = count - 1 if last_offset_delta is None else last_offset_delta
    after_crc = struct.pack(">hiqqqhii", codec, last, timestamp, timestamp, -1, -1, -1, count) + section
    crc = crc32c.crc32c(after_crc)
    head = struct.pack(">qiib", base_offset, 4 + 1 + 4 + len(after_crc), 0, 2) + struct.pack(">I", crc)
    return head + after_crc


def zstd_stream(pieces):
    """zstd frame of the concatenated pieces (an iterable of bytes), without holding them all."""
    c = zstandard.ZstdCompressor(level=3).compressobj()
    out = [c.compress(p) for p in pieces]
    out.append(c.flush())
    return b"".join(out)


def partition(root, name=TOPIC):
    d = os.path.join(root, name)
    os.makedirs(d)
    return d


def log_path(d, base=0):
    return os.path.join(d, "%020d.log" % base)


def next_segment(d, base):
    """An active segment after the hostile one, so that the cleaner (compact) cleans the hostile one."""
    with open(log_path(d, base), "wb") as f:
        f.write(batch(base, 1, record(0, key=b"k", value=b"v")))


# ---------------------------------------------------------------------------------------------
# The cases. Each returns the partition directory and the file a problem report should name.

def case_many_headers(root):
    """One zstd batch, one record with 131 M empty headers (2 bytes each): 22 KB on disk."""
    n = int(131_000_000 * SCALE)
    head = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(n)
    body_len = len(head) + 2 * n
    chunk = b"\x00\x01" * MIB

    def pieces():
        yield varint(body_len) + head
        left = n
        while left:
            k = min(left, MIB)
            yield chunk if k == MIB else b"\x00\x01" * k
            left -= k
    d = partition(root)
    with open(log_path(d), "wb") as f:
        f.write(batch(0, 1, zstd_stream(pieces()), codec=4))
    next_segment(d, 1)
    return d, log_path(d)


def case_tiny_records(root):
    """24 M records of 7-9 bytes in zstd batches of 1 M (the per-batch decode bound): a few MB that
    expand to 24 M records (per-record state of diff: ~100 bytes each)."""
    per_batch = 1 << 20
    batches = max(1, int(24 * SCALE))
    section = zstd_stream(record(i) for i in range(per_batch))
    d = partition(root)
    with open(log_path(d), "wb") as f:
        for b in range(batches):
            f.write(batch(b * per_batch, per_batch, section, codec=4))
    next_segment(d, batches * per_batch)
    return d, log_path(d)


def small_log(d):
    """Ten valid batches of one record each."""
    with open(log_path(d), "wb") as f:
        for i in range(10):
            f.write(batch(i, 1, record(0, key=b"k%d" % i, value=b"v")))


def case_absurd_index(root):
    """A 64 MiB .index (and .timeindex) of random entries next to a small valid log."""
    d = partition(root)
    small_log(d)
    for ext in (".index", ".timeindex"):
        with open(os.path.join(d, "%020d%s" % (0, ext)), "wb") as f:
            for _ in range(64):
                f.write(os.urandom(MIB))
    return d, os.path.join(d, "%020d.index" % 0)


def case_sparse_index(root):
    """The active segment's preallocated 2 GiB .index and .timeindex (Kafka rounds the size down to
    whole entries): sparse, all zeros."""
    d = partition(root)
    small_log(d)
    for ext, entry in ((".index", 8), (".timeindex", 12)):
        with open(os.path.join(d, "%020d%s" % (0, ext)), "wb") as f:
            f.truncate((2 << 30) // entry * entry)
    return d, None


def case_sparse_txnindex(root):
    """A sparse, zero-filled 2 GiB .txnindex (it is never preallocated: 63 M zero entries)."""
    d = partition(root)
    small_log(d)
    with open(os.path.join(d, "%020d.txnindex" % 0), "wb") as f:
        f.truncate(2 << 30)
    return d, os.path.join(d, "%020d.txnindex" % 0)


def case_length_claim(root):
    """A valid log whose next entry claims 2 GiB, in a sparse file of 2 GiB + 4 KiB."""
    d = partition(root)
    small_log(d)
    with open(log_path(d), "r+b") as f:
        f.seek(0, os.SEEK_END)
        f.write(struct.pack(">qib", 10, 0x7FFFFFF0, 0) + b"\x02")
        f.truncate((2 << 30) + 4096)
    return d, log_path(d)


CASES = [case_many_headers, case_tiny_records, case_absurd_index, case_sparse_index, case_sparse_txnindex,
         case_length_claim]


# ---------------------------------------------------------------------------------------------

def run_limited(args, stdout_to_null=False):
    """klf ARGS under prlimit --as (not for sanitizer builds) with a timeout: (exit code or -signal,
    stdout, stderr, peak RSS in bytes, seconds)."""
    cmd = [KLF, *args]
    if not SAN:
        cmd = ["prlimit", "--as=%d" % AS_LIMIT, "--"] + cmd
    out_file = open(os.devnull, "wb") if stdout_to_null else subprocess.PIPE
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=out_file, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        fail(f"klf {' '.join(args)}: no result after {TIMEOUT} s (killed)")
    # communicate() has reaped the child; run_isolated gives each command a fresh Python process, so
    # the largest ru_maxrss of its children is this command's (prlimit execs klf in place).
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if stdout_to_null:
        out_file.close()
    out = (out or b"").decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    return p.returncode, out, err, rss, time.monotonic() - t0


def commands(d, scratch):
    """Every command that reads a partition directory: (name, args, stdout to /dev/null, ceiling)."""
    twin = os.path.join(scratch, "twin", TOPIC)
    if not os.path.exists(twin):
        shutil.copytree(d, twin)
    out = lambda name: os.path.join(scratch, "out-" + name)
    return [
        ("dump --records --json", ["dump", "--records", "--json", d], True, CEILING_DECODE),
        ("dump --records", ["dump", "--records", "--bytes", "hex", d], True, CEILING_DECODE),
        ("verify", ["verify", "--json", d], False, CEILING_DECODE),
        ("lso", ["lso", "--json", d], False, CEILING),
        ("diff", ["diff", "--json", d, twin], False, CEILING_DECODE + 2048 * MIB),
        ("repair", ["repair", "--replica", twin, "--target", d, "--out", out("repair"), "--json"], False,
         CEILING_DECODE + 2048 * MIB),
        ("repair --salvage", ["repair", "--salvage", d, "--out", out("salvage"), "--json"], False, CEILING_DECODE),
        ("compact", ["compact", d, "--out", out("compact"), "--config", "cleanup.policy=compact", "--json"], False,
         CEILING_DECODE + (128 + 64) * MIB),
        ("reindex", ["reindex", d, "--out", out("reindex"), "--json"], False, CEILING_DECODE),
    ]


def run_case(make):
    with temp_dir("klf-hostile-") as root:
        t0 = time.monotonic()
        d, hostile_file = make(root)
        size = sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d))
        print(f"{make.__name__}: generated in {time.monotonic() - t0:.1f} s, {size} bytes (apparent)")
        for name, args, to_null, ceiling in commands(d, root):
            rc, out, err, rss, secs = run_isolated(args, to_null)
            print(f"  {name}: exit {rc}, {secs:.1f} s, peak RSS {rss / MIB:.0f} MiB")
            what = f"{make.__name__}: klf {' '.join(args)}"
            check(not any(m in err for m in SANITIZER_MARKS), f"{what}: sanitizer report: {err[-2000:]}")
            check(rc in (0, 1, 3), f"{what}: exit {rc} (a signal or an undocumented code); stderr: {err[-1500:]}")
            check("bad_alloc" not in err and "terminate called" not in err, f"{what}: allocation failure: {err[-500:]}")
            if not SAN:
                check(rss <= ceiling, f"{what}: peak RSS {rss / MIB:.0f} MiB above the ceiling {ceiling / MIB:.0f} MiB")
            if hostile_file and name == "verify" and rc == 1:
                try:
                    report = json.loads(out)
                    named = [p for p in report["problems"] if p["file"] == hostile_file and "position" in p]
                    check(named, f"{what}: no problem names {hostile_file} with a position")
                except ValueError:
                    fail(f"{what}: stdout is not JSON: {out[:300]}")


def run_isolated(args, to_null):
    """run_limited in a fresh Python child, so that its RUSAGE_CHILDREN peak is this command's."""
    code = ("import json, sys; sys.path.insert(0, %r); import hostile_memory_test as t; "
            "r = t.run_limited(%r, %r); print(json.dumps(r))") % (os.path.dirname(os.path.abspath(__file__)), args, to_null)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT + 60)
    try:
        rc, out, err, rss, secs = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        fail(f"klf {' '.join(args)}: runner failed: {p.stderr[-1500:]}")
        return -1, "", "", 0, 0
    return rc, out, err, rss, secs


def main():
    if SAN:
        print("sanitizer build: prlimit --as and the RSS ceiling are skipped (shadow memory)")
    only = os.environ.get("KLF_HOSTILE_CASES")
    for make in CASES:
        if only and make.__name__ not in only.split(","):
            continue
        run_case(make)
    finish()


if __name__ == "__main__":
    main()
