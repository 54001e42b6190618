#!/usr/bin/env bash
# Checks that every C++ source follows .clang-format (CTest runs it as format_check, so CI does).
#   scripts/check-format.sh [CLANG_FORMAT]      fix with: git ls-files '*.cc' '*.h' | xargs clang-format-14 -i
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=${1:-$(command -v clang-format-14 || command -v clang-format)}
if [ -d .git ] || git rev-parse --git-dir >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find . -path ./build\* -prune -o \( -name '*.cc' -o -name '*.h' \) -print)
fi
bad=()
for f in "${files[@]}"; do
  "$fmt" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "format_check: ${#bad[@]} of ${#files[@]} files do not follow .clang-format ($("$fmt" --version)):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "format_check: ${#files[@]} files follow .clang-format"
