#!/bin/bash
# Issue 16's side-by-side check (decode, verify, compact, diff within 5% of the commit before a change),
# then issue 20's floor rows, each row side by side in one run (bench/side_by_side.py).
#
#   bench/issue16_sides.sh NEW_KLF OLD_KLF KLF_BENCH DATA WORK [ROWS]
#
# Arguments as bench/issue20_rows.sh's; ROWS (issue 20's rows to run after) defaults to
# "verify-floor compact compact-codec". Run on a quiet host (no build running).
set -euo pipefail
NEW=$1 OLD=$2 KB=$3 D=$4 W=$5 ROWS=${6:-"verify-floor compact compact-codec"}
HERE=$(cd "$(dirname "$0")" && pwd)
SBS="python3 $HERE/side_by_side.py"
NOW=1761000000000
mkdir -p "$W"
uptime
echo "## issue 16: NEW (A) vs OLD (B)"
S=$D/seg256-none/bench-0/00000000000000000000.log
$SBS 7 "$NEW dump --records --json $S" "$OLD dump --records --json $S"
$SBS 7 "$NEW verify --threads 1 $D/log1g-live10-none/bench-0" "$OLD verify --threads 1 $D/log1g-live10-none/bench-0"
$SBS 5 "rm -rf $W/o16; sync ;; $NEW compact $D/log1g-live10-none/bench-0 --out $W/o16 --now $NOW --config cleanup.policy=compact" \
  "rm -rf $W/o16; sync ;; $OLD compact $D/log1g-live10-none/bench-0 --out $W/o16 --now $NOW --config cleanup.policy=compact"
rm -rf "$W/o16"
$SBS 5 "$NEW diff --json $D/log1g-live10-none/bench-0 $D/replica2/bench-0 $D/replica3/bench-0" \
  "$OLD diff --json $D/log1g-live10-none/bench-0 $D/replica2/bench-0 $D/replica3/bench-0"
echo "## issue 20 rows"
bash "$HERE/issue20_rows.sh" "$NEW" "$OLD" "$KB" "$D" "$W" "$ROWS"
uptime
