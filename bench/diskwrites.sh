#!/bin/sh
# bench/diskwrites.sh [CREATES]: how many writes the disk does for one
# batch of durable creates (a journal write and its fsync), with and
# without Idempotency-Keys: BenchmarkCreate (store=durable, clients=64) runs
# CREATES creates (default 100000) in a temporary directory, and the
# block device under that directory counts its completed writes
# (/sys/class/block/<dev>/stat, Linux). Run it alone: the count is the
# whole device's.
#
#	bench/diskwrites.sh    # about 10 seconds
set -eu
cd "$(dirname "$0")/.."
CREATES=${1:-100000}
OUT=bench/out
mkdir -p "$OUT"
TMP=$(go env GOTMPDIR)
TMP=${TMP:-${TMPDIR:-/tmp}}
DEV=$(basename "$(df --output=source "$TMP" | tail -1)")
STAT=/sys/class/block/$DEV/stat
[ -r "$STAT" ] || { echo "diskwrites.sh: $TMP is on $DEV, which has no $STAT (not a block device)" >&2; exit 1; }
go test -c -o "$OUT/petstore.test" .
for keys in false true; do
	before=$(awk '{ print $5 }' "$STAT") # writes completed
	line=$("$OUT/petstore.test" -test.run '^$' -test.benchtime "${CREATES}x" \
		-test.bench "BenchmarkCreate\$/store=durable/keys=$keys/clients=64\$" | grep '^Benchmark')
	after=$(awk '{ print $5 }' "$STAT")
	echo "$line" | awk -v w=$((after - before)) -v n="$CREATES" -v keys="$keys" '{
		for (i = 1; i < NF; i++) if ($(i + 1) == "creates/batch") per = $i
		printf "keys=%s: %d creates, %.2f a batch, %d disk writes: %.2f a batch\n", keys, n, per, w, w / (n / per)
	}'
done
