"""Archives of a directory tree as an operator sends them (tar, tar.gz, tar.zst, zip), for the tests that
read captures: tests/e2e/capture_test.py and tests/package/package_test.py. Needs no klf and no fixtures."""
import os
import subprocess
import tarfile
import zipfile


def make_capture(parent, top, kind, out_dir):
    """Archives parent/top (with `top/` as the members' first component) as out_dir/cap.KIND."""
    path = os.path.join(out_dir, f"{top}.{kind}")
    if kind in ("tar", "tar.gz"):
        with tarfile.open(path, "w:gz" if kind == "tar.gz" else "w") as t:
            t.add(os.path.join(parent, top), arcname=top)
    elif kind == "tar.zst":
        plain = os.path.join(out_dir, f"{top}.plain.tar")
        with tarfile.open(plain, "w") as t:
            t.add(os.path.join(parent, top), arcname=top)
        subprocess.run(["zstd", "-q", "-f", plain, "-o", path], check=True)
        os.remove(plain)
    else:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for root, dirs, files in os.walk(os.path.join(parent, top)):
                dirs.sort()
                for f in sorted(files):
                    full = os.path.join(root, f)
                    z.write(full, os.path.relpath(full, parent))
    return path
