#!/usr/bin/env bash
# `make demo`: replay the "aborted-to-committed" incident offline with `klf simulate` (three brokers,
# one partition, Kafka's own cleaner rules), show that the replicas diverged, that coordinated
# compaction would have prevented it, and let `klf diff` (and `klf lso`, when built) explain it.
#
# Usage: [KEEP=1] scripts/demo.sh path/to/klf
# Everything is written to a temporary directory that is deleted on exit, or kept with KEEP=1 (`make
# demo KEEP=1`) so that the follow-up commands it suggests can be run on it.
set -euo pipefail

KLF=${1:?usage: scripts/demo.sh path/to/klf}
KLF=$(cd "$(dirname "$KLF")" && pwd)/$(basename "$KLF")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TIMELINES=$REPO/fixtures

if [ ! -x "$KLF" ]; then
  echo "demo: klf binary not found at $KLF (run 'make' first)" >&2
  exit 3
fi
if [ ! -f "$TIMELINES/aborted-to-committed.json" ]; then
  echo "demo: timeline not found at $TIMELINES/aborted-to-committed.json" >&2
  exit 3
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/klf-demo.XXXXXX")
if [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$WORK"' EXIT; fi
cd "$WORK"

rule() { printf '%*s\n' 100 '' | tr ' ' '='; }
say() { printf '%s\n' "$@"; }
has() { "$KLF" "$1" --help > /dev/null 2>&1; }

rule
say "klf demo: would this outage have diverged our replicas?" \
    "" \
    "fixtures/aborted-to-committed.json is a timeline: three brokers replicate foo-0; producer 2000" \
    "writes poison=SHOULD_NOT_SEE_THIS in a transaction; broker 2 goes offline; the producer ABORTs" \
    "and then commits good=data; brokers 1 and 3 compact three times (the aborted batch goes, the" \
    "ABORT marker is stamped, then removed after delete.retention.ms); broker 2 comes back." \
    "" \
    "klf simulate replays it in well under a second, writing each broker's log directory in Kafka's" \
    "format, with each broker's cleaner running alone - Kafka's rules."
rule
say "" "\$ klf simulate fixtures/aborted-to-committed.json --out incident"
"$KLF" simulate "$TIMELINES/aborted-to-committed.json" --out incident || true

say "" ""
rule
say "The same timeline with coordinated compaction (markers removable only below MXRO = min over" \
    "replicas of the first unstable offset; tombstones only below MTRO): broker 2's absence holds the" \
    "ABORT back until it has returned and received it."
rule
say "" "\$ klf simulate fixtures/aborted-to-committed.json --mode coordinated --out coordinated"
"$KLF" simulate "$TIMELINES/aborted-to-committed.json" --mode coordinated --out coordinated |
  grep -E "held back: 0 tombstones, [1-9]|^coordination|^divergence|^verdict" || true

if has diff; then
  say "" ""
  rule
  say "klf diff on the three replicas the uncoordinated run left on disk:"
  rule
  say "" "\$ klf diff incident/broker1/foo-0 incident/broker2/foo-0 incident/broker3/foo-0"
  "$KLF" diff incident/broker1/foo-0 incident/broker2/foo-0 incident/broker3/foo-0 || true
else
  say "" "(klf diff is not built yet; the poison record on broker 2, as kafka-dump-log.sh would show it:)"
  "$KLF" dump --records incident/broker2/foo-0 | grep -B1 SHOULD_NOT_SEE_THIS || true
fi

if has lso; then
  say "" ""
  rule
  say "A lost COMMIT plus its empty batch: fixtures/hanging-transaction.json pins broker 3's last stable" \
      "offset. klf lso explains it:"
  rule
  "$KLF" simulate "$TIMELINES/hanging-transaction.json" --out hanging > /dev/null || true
  say "" "\$ klf lso hanging/broker3/foo-0"
  "$KLF" lso hanging/broker3/foo-0 || true
fi

if has txn; then
  say "" ""
  rule
  say "Kafka 4.x (transaction version 2): fixtures/tv2-committed-to-aborted.json also writes the" \
      "coordinator's __transaction_state-0 on every broker. Its decisions, held against every copy's" \
      "markers, name the COMMIT broker 3 lost, for certain:"
  rule
  "$KLF" simulate "$TIMELINES/tv2-committed-to-aborted.json" --out tv2 > /dev/null || true
  say "" "\$ klf txn audit tv2/broker1 tv2/broker2 tv2/broker3"
  "$KLF" txn audit tv2/broker1 tv2/broker2 tv2/broker3 || true
fi

say ""
rule
say "Other timelines: fixtures/lost-tombstone.json, committed-to-aborted.json, hanging-transaction.json" \
    "and healthy-control.json (the lagging broker returns in time). Write your own: README.md," \
    "'klf simulate'."
if [ "${KEEP:-0}" = 1 ]; then
  say "" "The output is kept in $WORK. Try, from there:" \
      "  cd $WORK" \
      "  $KLF verify incident/broker2" \
      "  $KLF diff --html report.html incident/broker1 incident/broker2 incident/broker3" \
      "  $KLF repair --dry-run --target incident/broker2/foo-0 --replica incident/broker1/foo-0 --replica incident/broker3/foo-0" \
      "  $KLF lso hanging/broker3/foo-0" \
      "  $KLF repair --dry-run --target tv2/broker3/foo-0 --replica tv2/broker1/foo-0 --replica tv2/broker2/foo-0" \
      "  $KLF consume --isolation read_committed incident/broker2/foo-0 | grep poison"
else
  say "The output was written to $WORK and is deleted on exit (make demo KEEP=1 keeps it)."
fi
rule
