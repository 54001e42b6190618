#!/usr/bin/env bash
# `make demo`: the bundled three-replica incident "aborted-to-committed", shown with klf dump and
# explained by klf diff.
#
# Usage: scripts/demo.sh path/to/klf
# The fixture (written by Kafka's own code, see ../shared/fixtures/README.md) is copied to a temporary
# directory first; klf never writes to its inputs, and the copy keeps the fixture pristine anyway.
set -euo pipefail

KLF=${1:?usage: scripts/demo.sh path/to/klf}
KLF=$(cd "$(dirname "$KLF")" && pwd)/$(basename "$KLF")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIXTURES=${KLF_FIXTURES_DIR:-$REPO/../shared/fixtures}
SRC=$FIXTURES/kafka-oracle/replicas/aborted-to-committed

if [ ! -x "$KLF" ]; then
  echo "demo: klf binary not found at $KLF (run 'make' first)" >&2
  exit 3
fi
if [ ! -d "$SRC" ]; then
  echo "demo: fixture not found at $SRC" >&2
  exit 3
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/klf-demo.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cp -r "$SRC" "$WORK/incident"
cd "$WORK"

rule() { printf '%*s\n' 100 '' | tr ' ' '='; }
say() { printf '%s\n' "$@"; }

rule
say "klf demo: one partition (foo-0), three brokers, and a transaction that was aborted on two of" \
    "them but is committed on the third." \
    "" \
    "What happened (the fixture's timeline, produced by Kafka's own storage code):" \
    "  1. Producer 2000 writes poison=SHOULD_NOT_SEE_THIS in a transaction; all three brokers have it." \
    "  2. Broker 2 goes offline. The producer ABORTs the transaction (the marker reaches brokers 1 and 3)," \
    "     then runs a second transaction (good=data) and COMMITs it." \
    "  3. Brokers 1 and 3 compact: the aborted poison batch is removed, then - once delete.retention.ms" \
    "     has passed - the ABORT marker itself." \
    "  4. Broker 2 returns and catches up from the leader, whose log no longer has the ABORT (offset 44):" \
    "     it fetches only good=data (45) and the COMMIT (46). Its own log still holds the poison (43) in" \
    "     an open transaction, so that COMMIT closes it: on broker 2 the poison is committed, and" \
    "     read_committed consumers fetching from broker 2 will see it." \
    "" \
    "Below: each broker's copy of foo-0 around the transaction (offsets 40-50), with 'klf dump'" \
    "(kafka-dump-log.sh's line format; producer snapshots and checkpoints included; drop --offsets for" \
    "everything), then what 'klf diff' makes of the three copies."
rule

for b in broker1 broker2 broker3; do
  say "" "\$ klf dump --records --offsets 40:50 incident/$b/foo-0"
  # Exit 1 would mean damage was found; this fixture has none, but show the dump regardless.
  "$KLF" dump --records --offsets 40:50 "incident/$b/foo-0" || true
done

say "" ""
rule
say "What to look for: the records of producer 2000 (the transactional producer) on each broker."
rule
for b in broker1 broker2 broker3; do
  say "" "$b:"
  "$KLF" dump --records "incident/$b/foo-0" |
    awk '/^baseOffset: / { pid = ($0 ~ / producerId: 2000 /) }
         pid && /^\| / {
           line = $0
           sub(/ CreateTime: [0-9]+ keySize: [0-9]+ valueSize: [0-9]+ sequence: -?[0-9]+ headerKeys: \[\]/, "", line)
           mark = (line ~ /SHOULD_NOT_SEE_THIS/) ? "   <-- the poison record" : ""
           if (line ~ /endTxnMarker: COMMIT/) mark = "   <-- COMMIT"
           if (line ~ /endTxnMarker: ABORT/) mark = "   <-- ABORT"
           print "  " line mark
         }'
  if "$KLF" dump --records "incident/$b/foo-0" | grep -q "SHOULD_NOT_SEE_THIS"; then
    say "  => the poison is still in the log and no ABORT marker follows it: the next COMMIT of producer" \
        "     2000 commits it. Its producer snapshot 00000000000000000044.snapshot above" \
        "     (currentTxnFirstOffset: OptionalLong[43]) shows that transaction still open at offset 44."
  else
    say "  => the aborted poison batch and, later, its ABORT marker were compacted away: consistent."
  fi
done

say "" ""
rule
say "\$ klf diff incident/broker1/foo-0 incident/broker2/foo-0 incident/broker3/foo-0"
rule
# diff exits 1 when it finds a divergence, which is the point here.
"$KLF" diff incident/broker1/foo-0 incident/broker2/foo-0 incident/broker3/foo-0 || true

say ""
rule
say "The replicas have diverged for good: no later compaction or fetch will bring the ABORT back to" \
    "broker 2. This is one of four such divergences klf looks for (lost tombstone, lost ABORT, lost" \
    "COMMIT, lost COMMIT plus its empty batch pinning the last stable offset)." \
    "" \
    "More: 'klf diff --json' or '--html FILE' for the same findings as data or a report, 'klf verify" \
    "incident/broker2' to check every file, 'klf compact' to run Kafka's cleaner offline on a copy." \
    "The fixture was copied to $WORK and is deleted on exit; the originals were never opened for writing."
rule
