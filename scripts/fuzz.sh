#!/usr/bin/env bash
# Long libFuzzer runs of every decoder target (ASan + UBSan), for docs/ROBUSTNESS.md.
#   scripts/fuzz.sh BUILD_FUZZ_DIR SECONDS_PER_TARGET [RUNS_PER_TARGET]
# FUZZ_TARGETS="batch_fuzz zstd_fuzz" limits the run to those targets (default: every *_fuzz).
# FUZZ_MAX_LEN caps the input size (default 65536; see docs/ROBUSTNESS.md for the index targets).
# -close_fd_mask=3: cli_fuzz runs whole subcommands, which print; libFuzzer keeps its own stderr.
# Each target starts from its seed corpus (tests/fuzz/corpus/<target>) and writes new inputs to a
# scratch corpus under BUILD_FUZZ_DIR/fuzz-long/<target>, never into the source tree. Crashes are
# saved as BUILD_FUZZ_DIR/fuzz-long/<target>-crash-*. Prints one summary line per target.
set -euo pipefail
build=${1:?usage: fuzz.sh BUILD_FUZZ_DIR SECONDS [RUNS]}
seconds=${2:-600}
runs=${3:--1}
max_len=${FUZZ_MAX_LEN:-65536}
src=$(cd "$(dirname "$0")/.." && pwd)
out="$build/fuzz-long"
mkdir -p "$out"
status=0
for bin in "$build"/tests/*_fuzz; do
  name=$(basename "$bin")
  if [ -n "${FUZZ_TARGETS:-}" ] && [[ " $FUZZ_TARGETS " != *" $name "* ]]; then continue; fi
  mkdir -p "$out/$name"
  log="$out/$name.log"
  set +e
  ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$seconds" -runs="$runs" -max_len="$max_len" \
    -rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$out/$name-crash-" \
    "$out/$name" "$src/tests/fuzz/corpus/$name" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  secs=$(grep -o 'Done [0-9]* runs in [0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  echo "$name: exit $rc, $execs executions in $secs s, log $log"
  [ "$rc" -eq 0 ] || status=1
done
exit $status
