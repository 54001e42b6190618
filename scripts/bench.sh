#!/usr/bin/env bash
# klf benchmarks (docs/PERFORMANCE.md): generates the data once, then measures klf beside its floor
# or peer in the same run, pinned to one core with a warm page cache.
#
#   scripts/bench.sh [BUILD_DIR]          (make bench)
#
# Environment:
#   BENCH_SCALE=0.0625   scale every data size (default 1: 256 MiB segments, 1 GiB logs)
#   BENCH_OUT=DIR        data and results (default bench/out, gitignored)
#   BENCH_RUNS=N         hyperfine runs per command (default 3; after one warm-up run)
#   BENCH_RUNS_HEAVY=N   runs for compact (default 3; page cache warmed by reading the inputs first; the
#                        unpinned compact/cp runs also get one warm-up run, and the report uses medians)
#   BENCH_RUNS_DIFF=N    runs for diff (default 1; it is the longest; its peak-RSS run is a second sample)
#   BENCH_CPU=N          the core everything is pinned to (default: the last one)
#   BENCH_ONLY="2 3"     run only these issue sections (2 decode, 3 verify, 4 write, 5 compact, 7 diff)
#
# Results: $BENCH_OUT/results/*.json (hyperfine, Google Benchmark, klf-bench, kafka-python, GNU time)
# and $BENCH_OUT/results/report.md (the tables of docs/PERFORMANCE.md, rendered by bench/report.py).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${1:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
SCALE=${BENCH_SCALE:-1}
OUT=${BENCH_OUT:-$ROOT/bench/out}
RUNS=${BENCH_RUNS:-3}
RUNS_HEAVY=${BENCH_RUNS_HEAVY:-3}
CPU=${BENCH_CPU:-$(( $(nproc) - 1 ))}
ONLY=${BENCH_ONLY:-"2 3 4 5 7"}
KLF="$BUILD_DIR/klf"
TOOL="$BUILD_DIR/bench/klf-bench"
DECODE_BENCH="$BUILD_DIR/bench/decode_bench"
PY=/usr/bin/python3
NOW=1761000000000  # --now for compact: fixed, so every run makes the same decisions

for tool in hyperfine taskset; do
  command -v "$tool" >/dev/null || { echo "bench: $tool missing (run scripts/install-deps.sh)" >&2; exit 1; }
done
cmake --build "$BUILD_DIR" --target klf klf-bench decode_bench -j "$(nproc)" >/dev/null

size() { awk -v s="$SCALE" -v b="$1" 'BEGIN { printf "%d", b * s }'; }
MiB=$((1 << 20))
SEG_BYTES=$(size $((256 * MiB)))
LOG_BYTES=$(size $((1024 * MiB)))
DATA="$OUT/data-scale$SCALE"
RES="$OUT/results"
WORK="$OUT/work"
mkdir -p "$DATA" "$RES" "$WORK"
pin() { taskset -c "$CPU" "$@"; }
note() { echo "== $*" >&2; }

# ---------------------------------------------------------------------------------------------
# Data (generated once per scale; deterministic: seed 42)
gen() {  # gen NAME ARGS... → $DATA/NAME/bench-0
  local name=$1; shift
  if [ ! -f "$DATA/$name.done" ]; then
    note "generating $name"
    rm -rf "${DATA:?}/$name"
    "$TOOL" gen --out "$DATA/$name/bench-0" --seed 42 "$@" > "$DATA/$name.json"
    touch "$DATA/$name.done"
  fi
}
for codec in none lz4 zstd; do gen "seg256-$codec" --bytes "$SEG_BYTES" --codec "$codec"; done
gen write-src --bytes "$LOG_BYTES" --segment-bytes 2147483647
for codec in none lz4 zstd; do
  gen "log1g-live10-$codec" --bytes "$LOG_BYTES" --codec "$codec" --live 0.1 --segment-bytes $((LOG_BYTES / 8))
done
# Replicas for diff: the 10%-live log itself, a byte copy of it, and a cleaned copy (klf compact).
if [ ! -f "$DATA/replicas.done" ]; then
  note "preparing replicas"
  rm -rf "$DATA/replica2" "$DATA/replica3" "$DATA/replica-compacted"
  mkdir -p "$DATA/replica2" "$DATA/replica3"
  cp -a "$DATA/log1g-live10-none/bench-0" "$DATA/replica2/"
  cp -a "$DATA/log1g-live10-none/bench-0" "$DATA/replica3/"
  "$KLF" compact "$DATA/log1g-live10-none/bench-0" --out "$DATA/replica-compacted" --now $NOW \
    --config cleanup.policy=compact > /dev/null
  touch "$DATA/replicas.done"
fi
SEG() { echo "$DATA/seg256-$1/bench-0/00000000000000000000.log"; }
R1="$DATA/log1g-live10-none/bench-0"
R2="$DATA/replica2/bench-0"
R3="$DATA/replica3/bench-0"
RC="$DATA/replica-compacted/bench-0"

# Machine facts for the report.
{
  echo "{\"date\": \"$(date -u +%FT%TZ)\", \"nproc\": $(nproc), \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\","
  echo " \"loadavg_start\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"scale\": $SCALE, \"runs\": $RUNS, \"runs_heavy\": $RUNS_HEAVY, \"runs_diff\": ${BENCH_RUNS_DIFF:-1}, \"pinned_cpu\": $CPU,"
  echo " \"kernel\": \"$(uname -r)\", \"mem_total_kb\": $(awk '/MemTotal/ {print $2}' /proc/meminfo),"
  echo " \"klf_commit\": \"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)\"}"
} > "$RES/machine.json"

hf() {  # hf NAME [hyperfine args...] — one core, warm cache (one warm-up run), RUNS measured runs
  local name=$1; shift
  note "hyperfine $name"
  pin hyperfine --style basic --warmup 1 --runs "$RUNS" --export-json "$RES/$name.json" "$@" >&2
}
hf_heavy() {  # the same for long commands: inputs read into the page cache first instead of a warm-up run
  local name=$1; shift
  note "hyperfine $name"
  pin hyperfine --style basic --runs "$RUNS_HEAVY" --export-json "$RES/$name.json" "$@" >&2
}
hf_heavy_all_cores() {  # unpinned, for commands that use a second thread (compact), with one warm-up run:
  local name=$1; shift  # on this VM the first write of 1 GiB into page cache freed moments ago (rm -rf)
  note "hyperfine $name (all cores)"  # can take 10x the next one (the host reclaims freed guest pages)
  hyperfine --style basic --warmup 1 --runs "$RUNS_HEAVY" --export-json "$RES/$name.json" "$@" >&2
}
warm() { find "$@" -type f -exec cat {} + > /dev/null; }
maxrss() {  # maxrss NAME CMD... — one pinned run: ru_maxrss (what GNU time -v reports) and the peaks of
  local name=$1; shift  # anonymous and file-backed resident pages (bench/peak_rss.py)
  note "peak RSS $name"
  ${NOPIN:-pin} "$PY" "$ROOT/bench/peak_rss.py" "$RES/rss-$name.json" --stdout "${STDOUT:-/dev/null}" -- "$@" 2>/dev/null
}
want() { [[ " $ONLY " == *" $1 "* ]]; }

# ---------------------------------------------------------------------------------------------
# Issue 2: decode with CRC and every record parsed; klf dump --records --json.
issue2() {
  for codec in none lz4 zstd; do
    f=$(SEG $codec)
    hf "decode-$codec" \
      -n floor "$TOOL floor $f" \
      -n floor-mmap "$TOOL floor $f --mmap" \
      -n decode "$TOOL decode $f" \
      -n decode-mmap "$TOOL decode $f --mmap" \
      -n dump-json "$KLF dump --records --json $f"
    note "kafka-python $codec"
    slice=$((32 * MiB)); [ "$codec" = zstd ] && slice=$((8 * MiB))
    pin "$PY" "$ROOT/bench/kafka_python_decode.py" "$f" --max-bytes "$slice" --repeat 3 > "$RES/python-$codec.json"
  done
  note "decode_bench (Google Benchmark)"
  KLF_BENCH_LOGS="$(SEG none):$(SEG lz4):$(SEG zstd)" pin "$DECODE_BENCH" --benchmark_out="$RES/decode_bench.json" \
    --benchmark_out_format=json --benchmark_min_time=1 >&2
}

# Issue 3: klf verify of the uncompressed segment (every record parsed) vs the floor.
issue3() {
  f=$(SEG none)
  hf verify \
    -n floor "$TOOL floor $f" \
    -n floor-mmap "$TOOL floor $f --mmap" \
    -n verify-log "$KLF verify --threads 1 $f" \
    -n verify-partition "$KLF verify --threads 1 $(dirname "$f")" \
    -n verify-headers-only "$KLF verify --threads 1 --headers-only $f"
}

# Issue 4: writing a 1 GiB segment with indexes vs cp of the same bytes.
issue4() {
  src="$DATA/write-src/bench-0/00000000000000000000.log"
  w="$WORK/write"
  hf write --prepare "rm -rf $w; mkdir -p $w; sync" \
    -n cp "cp $src $w/copy.log" \
    -n cp+fsync "cp $src $w/copy.log && sync $w/copy.log" \
    -n dd "dd if=$src of=$w/copy.log bs=1M status=none" \
    -n segment-writer-nosync "$TOOL write --in $src --out $w/seg --no-sync" \
    -n segment-writer "$TOOL write --in $src --out $w/seg" \
    -n reindex "$KLF reindex $DATA/write-src/bench-0 --out $w/reindex"
  rm -rf "$w"; mkdir -p "$w"
  "$TOOL" write --in "$src" --out "$w/seg" > "$RES/write-tool.json"
  rm -rf "$w"
}

# Issue 5: klf compact of the 1 GiB 10%-live log vs cp; peak RSS. klf compact uses a second thread
# (offset map halves, look-ahead lookups), so cp and compact run unpinned (both may use every core);
# compact is also timed pinned to one core.
issue5() {
  for codec in none lz4 zstd; do
    in="$DATA/log1g-live10-$codec/bench-0"
    o="$WORK/compact-$codec"
    warm "$in"
    hf_heavy_all_cores "compact-$codec" --prepare "rm -rf $o; sync" \
      -n cp "cp -r $in $o" \
      -n cp+fsync "cp -r $in $o && sync $o/*" \
      -n compact "$KLF compact $in --out $o --now $NOW --config cleanup.policy=compact"
    hf_heavy "compact1-$codec" --prepare "rm -rf $o; sync" \
      -n compact "$KLF compact $in --out $o --now $NOW --config cleanup.policy=compact"
    rm -rf "$o"
    NOPIN=" " STDOUT="$RES/compact-$codec-out.json" maxrss "compact-$codec" \
      "$KLF" compact "$in" --out "$o" --now $NOW --config cleanup.policy=compact --json
    rm -rf "$o"
  done
}

# Issue 7: klf diff of three 1 GiB replicas.
issue7() {
  warm "$R1" "$R2" "$R3" "$RC"
  RUNS_HEAVY=${BENCH_RUNS_DIFF:-1} hf_heavy diff \
    -n diff-3-full "$KLF diff $R1 $R2 $R3" \
    -n diff-2-full+compacted "$KLF diff $R1 $R2 $RC"
  maxrss diff-3-full "$KLF" diff "$R1" "$R2" "$R3"
  maxrss diff-2-full+compacted "$KLF" diff "$R1" "$R2" "$RC"
}

# Heavy sections first: the short, noise-sensitive decode/verify runs come last (a busy machine
# usually quietens over a long run).
for i in 5 7 4 3 2; do
  if want $i; then "issue$i"; fi
done

echo "{\"loadavg_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}" > "$RES/machine-end.json"
"$PY" "$ROOT/bench/report.py" "$RES" "$DATA" > "$RES/report.md"
note "report: $RES/report.md"
cat "$RES/report.md"
