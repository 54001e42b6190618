#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy: a function's cognitive complexity at most 25) on the .cc files a change
# touches: those that differ from BASE (default: the commit before HEAD), using BUILD_DIR's
# compile_commands.json. A function above the threshold must be split, or say in a comment why not
# (then add `// NOLINT(readability-function-cognitive-complexity)` on its first line).
#   scripts/tidy.sh [BASE] [BUILD_DIR]      (make tidy BASE=origin/main)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD~1}
build=${2:-build}
tidy=$(command -v clang-tidy-14 || command -v clang-tidy)
mapfile -t files < <(git diff --name-only --diff-filter=AM "$base" -- '*.cc' | grep -v -E '_(test|fuzz|bench)\.cc$' || true)
if [ ${#files[@]} -eq 0 ]; then echo "tidy: no .cc file changed since $base"; exit 0; fi
status=0
for f in "${files[@]}"; do
  out=$("$tidy" -p "$build" --quiet "$f" 2>/dev/null | grep -E 'warning:' || true)
  if [ -n "$out" ]; then echo "$out"; status=1; fi
done
echo "tidy: ${#files[@]} files checked since $base"
exit $status
