"""The fixture directories the comparison scripts (compact_compare, json_compare, verify_compare) run over."""

import os
import re

SEGMENT = re.compile(r"^\d{20}\.log$")


def partition_dirs(root, is_segment=SEGMENT.match):
    """Every directory under root holding a file is_segment accepts, sorted."""
    out = []
    for d, subdirs, files in os.walk(root):
        subdirs.sort()
        if any(is_segment(f) for f in files):
            out.append(d)
    return sorted(out)
