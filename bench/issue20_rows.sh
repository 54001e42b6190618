#!/bin/bash
# Issue 20's table, each row side by side in one run (bench/side_by_side.py: interleaved runs, medians,
# ratios pair by pair), plus triage of 3 x 4,000 partitions from directories and from digests.
#
#   bench/issue20_rows.sh NEW_KLF OLD_KLF KLF_BENCH DATA WORK [ROWS]
#
# NEW_KLF / OLD_KLF: the binaries to compare (before/after rows); KLF_BENCH: build/bench/klf-bench;
# DATA: `make bench` data (bench/out/data-scale1: log1g-live10-none, replica2, replica3, seg256-none);
# WORK: scratch space (the 256 MiB compaction inputs, the large-batch segment, the fleets and outputs are
# made there once).
# ROWS: any of "verify-threads verify-floor compact compact-codec diff diff5 triage" (default: all).
set -euo pipefail
NEW=$1 OLD=$2 KB=$3 DATA=$4 WORK=$5
ROWS=${6:-"verify-threads verify-floor compact compact-codec diff diff5 triage"}
HERE=$(cd "$(dirname "$0")" && pwd)
SBS="python3 $HERE/side_by_side.py"
NOW=1761000000000
mkdir -p "$WORK"
want() { [[ " $ROWS " == *" $1 "* ]]; }
warm() { cat "$@" > /dev/null 2>&1 || true; }

# Inputs made once, each only for the rows that read it.
if want compact || want compact-codec; then
  for c in none zstd lz4; do
    [ -d "$WORK/c256-$c" ] || "$KB" gen --out "$WORK/c256-$c/bench-0" --bytes 268435456 --live 0.1 \
      --segment-bytes 33554432 --codec $c --seed 42 > "$WORK/c256-$c.json"
  done
fi
if want verify-threads; then
  [ -d "$WORK/fleet2000" ] || python3 "$HERE/make_fleet.py" "$WORK/fleet2000" --partitions 2000 --brokers 1
fi
if want triage; then
  [ -d "$WORK/fleet4000" ] || python3 "$HERE/make_fleet.py" "$WORK/fleet4000" --partitions 4000 --brokers 3
fi
R1=$DATA/log1g-live10-none/bench-0 R2=$DATA/replica2/bench-0 R3=$DATA/replica3/bench-0
if want diff5; then
  for i in 4 5; do  # two more byte copies (hard links: the same bytes, no disk)
    [ -d "$WORK/replica$i/bench-0" ] || { mkdir -p "$WORK/replica$i"; cp -al "$R3" "$WORK/replica$i/bench-0"; }
  done
fi

if want verify-threads; then
  echo "## verify of one log dir of 2,000 partitions, --threads 1 vs 2, before and after"
  B=$WORK/fleet2000/broker1
  $SBS 9 "$NEW verify --threads 1 $B" "$NEW verify --threads 2 $B" "$OLD verify --threads 1 $B" \
    "$OLD verify --threads 2 $B"
  for k in "$NEW" "$OLD"; do
    strace -f -c -o "$WORK/strace.txt" "$k" verify --threads 1 "$B" > /dev/null
    echo "system calls ($k): $(awk '/total$/ {print $4}' "$WORK/strace.txt")"
  done
fi

if want verify-floor; then
  # Two workloads: the `make bench` segment (4-16 KiB batches, a producer's batch.size) and one of large
  # batches (0.5-1 MiB of records each, made once in WORK). Floor, NEW, OLD side by side; then the walk
  # alone in thread CPU time (klf-bench check: framing + CRC vs framing + CRC + the check-only walk).
  [ -d "$WORK/seg256-big" ] || "$KB" gen --out "$WORK/seg256-big/bench-0" --bytes 268435456 --batch-bytes 512K \
    --seed 42 > "$WORK/seg256-big.json"
  for f in "$DATA/seg256-none/bench-0/00000000000000000000.log" "$WORK/seg256-big/bench-0/00000000000000000000.log"; do
    echo "## verify of $f vs the read + CRC-32C floor, after vs before"
    warm "$f"
    $SBS 11 "$KB floor $f" "$NEW verify --threads 1 $f" "$OLD verify --threads 1 $f"
    "$KB" check "$f" --repeat 7 | tail -1
  done
fi

if want compact; then
  echo "## compact vs cp -r (uncompressed, 10% live): 256 MiB (8 segments), then 1 GiB"
  for in in "$WORK/c256-none/bench-0" "$R1"; do
    warm "$in"/*
    o=$WORK/compact-out
    $SBS 5 "rm -rf $o; sync ;; cp -r $in $o" \
      "rm -rf $o; sync ;; $NEW compact $in --out $o --now $NOW --config cleanup.policy=compact"
    rm -rf "$o"
  done
fi

if want compact-codec; then
  echo "## compact of zstd / lz4 input vs the decompress + recompress floor (256 MiB, 10% live)"
  for c in zstd lz4; do
    in=$WORK/c256-$c/bench-0
    warm "$in"/*
    o=$WORK/compact-out
    $SBS 3 "sh -c 'for f in $in/*.log; do $KB recompress \$f --keep 0.1; done'" \
      "rm -rf $o; sync ;; $NEW compact $in --out $o --now $NOW --config cleanup.policy=compact" \
      "rm -rf $o; sync ;; cp -r $in $o"
    rm -rf "$o"
  done
fi

if want diff; then
  echo "## diff of three 1 GiB replicas (the log, two byte copies), after vs before"
  warm "$R1"/* "$R2"/* "$R3"/*
  $SBS 3 "$NEW diff --json $R1 $R2 $R3" "$OLD diff --json $R1 $R2 $R3"
  echo "## diff of the 1 GiB log, a byte copy, a klf-compacted copy, after vs before"
  $SBS 3 "$NEW diff --json $R1 $R2 $DATA/replica-compacted/bench-0" \
    "$OLD diff --json $R1 $R2 $DATA/replica-compacted/bench-0"
fi

if want diff5; then
  echo "## diff of five 1 GiB replicas (the log, four byte copies), after vs before"
  R4=$WORK/replica4/bench-0 R5=$WORK/replica5/bench-0
  $SBS 1 "$NEW diff --json $R1 $R2 $R3 $R4 $R5" "$OLD diff --json $R1 $R2 $R3 $R4 $R5"
fi

if want triage; then
  echo "## triage of 3 x 4,000 partitions: from the log dirs, and from their digests"
  F=$WORK/fleet4000
  for b in broker1 broker2 broker3; do
    rm -f "$WORK/$b.kdg"
    /usr/bin/time -f "digest $b: %e s wall, %U user, %S sys, %M KiB peak" \
      "$NEW" digest --keep-priority --jobs 2 "$F/$b" --out "$WORK/$b.kdg" > /dev/null
  done
  ls -l "$WORK"/broker*.kdg
  $SBS 3 "$NEW triage --json $F/broker1 $F/broker2 $F/broker3" \
    "$NEW triage --json $WORK/broker1.kdg $WORK/broker2.kdg $WORK/broker3.kdg" \
    "$OLD triage --json $F/broker1 $F/broker2 $F/broker3"
fi
