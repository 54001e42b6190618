#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy: a function's cognitive complexity at most 25) using BUILD_DIR's
# compile_commands.json, on the .cc files that differ from BASE (default: the commit before HEAD), or
# with --all on every .cc of the tree (CTest's tidy_check, so CI). A function above the threshold must
# be split, or say why not: `// NOLINTNEXTLINE(readability-function-cognitive-complexity): <why>` on the
# line above its name. A file clang-tidy cannot compile fails the check too.
#   scripts/tidy.sh [BASE|--all] [BUILD_DIR] [JOBS]      (make tidy BASE=origin/main; make tidy BASE=--all)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD~1}
build=${2:-build}
jobs=${3:-2}
tidy=$(command -v clang-tidy-14 || command -v clang-tidy)
if [ "$base" = "--all" ]; then
  mapfile -t files < <(git ls-files '*.cc' | grep -v -E '_(test|fuzz|bench)\.cc$')
  what="in the tree"
else
  mapfile -t files < <(git diff --name-only --diff-filter=AM "$base" -- '*.cc' | grep -v -E '_(test|fuzz|bench)\.cc$' || true)
  what="changed since $base"
fi
if [ ${#files[@]} -eq 0 ]; then echo "tidy: no .cc file $what"; exit 0; fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# One clang-tidy per file, `jobs` at a time; --quiet leaves the findings and compile errors only.
printf '%s\0' "${files[@]}" | xargs -0 -n1 -P"$jobs" "$tidy" -p "$build" --quiet >"$out" 2>/dev/null || true
status=0
if grep -E '(warning|error):' "$out"; then status=1; fi
echo "tidy: ${#files[@]} files $what checked ($([ $status = 0 ] && echo clean || echo findings above))"
exit $status
