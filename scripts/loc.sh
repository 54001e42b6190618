#!/usr/bin/env bash
# Lines of production code: the tracked .cc/.h files outside tests/, bench/, scripts/ and docs/,
# counting lines that are neither blank nor only a comment (// lines and /* ... */ blocks).
# Usage: scripts/loc.sh [COMMIT] [--by-dir]   (default HEAD; --by-dir prints one count per top folder)
set -euo pipefail
rev=HEAD
by_dir=0
for a in "$@"; do
  case "$a" in
  --by-dir) by_dir=1 ;;
  *) rev="$a" ;;
  esac
done
git ls-tree -r --name-only "$rev" | grep -E '\.(cc|h)$' | grep -vE '^(tests|bench|scripts|docs)/' |
  while read -r f; do
    git show "$rev:$f" | awk -v f="$f" '
      { line = $0 }
      inblock { if (line ~ /\*\//) { inblock = 0; sub(/.*\*\//, "", line) } else next }
      { sub(/^[ \t]+/, "", line) }
      line ~ /^\/\*/ && line !~ /\*\// { inblock = 1; next }
      line == "" || line ~ /^\/\// || line ~ /^\/\*.*\*\/$/ { next }
      { n++ }
      END { split(f, p, "/"); print p[1], n + 0 }'
  done | awk -v by_dir="$by_dir" '{ t[$1] += $2; s += $2 }
    END { if (by_dir) for (d in t) print d, t[d]; print "total", s }' | sort
