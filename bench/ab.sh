#!/usr/bin/env bash
# bench/ab.sh OLD NEW: two petstore binaries, alternating round by round
# under the same wrk load as make bench-load (server pinned to CPU 0, wrk
# to CPU 1), for GET of 100 categories, creates in memory and durable
# creates at 64 connections. Prints each round's NEW/OLD ratio and the
# means: a before/after comparison that drift on a noisy machine hits alike.
#
#   git worktree add /tmp/old <commit> && (cd /tmp/old && go build -o /tmp/old.bin .)
#   go build -o /tmp/new.bin . && bench/ab.sh /tmp/old.bin /tmp/new.bin   # ROUNDS=4 DURATION=4s
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1 NEW=$2
ROUNDS=${ROUNDS:-4}
DURATION=${DURATION:-4s}
PORT=${PORT:-18555}
. bench/lib.sh
journal100 1 "$OUT/ab-list.v1" # version 1: both old and new petstores read it
start() { # BIN DATA
	stop
	cp "$OUT/ab-list.v1" "$OUT/ab-list.jsonl"
	rm -f "$OUT/ab-durable.jsonl" "$OUT/ab-durable.jsonl.torn"
	PETSTORE_ADDR="127.0.0.1:$PORT" PETSTORE_API_KEYS="$KEY" PETSTORE_DATA="$2" taskset -c 0 "$1" 2>/dev/null &
	pid=$!
	up "$1"
}
rate() { taskset -c 1 wrk -t1 -c64 -d"$DURATION" -H "Authorization: Bearer $KEY" "$@" | awk '/Requests\/sec/ { print $2 }'; }
for scenario in get post-memory post-durable; do
	sum=0
	for round in $(seq 1 "$ROUNDS"); do
		for who in old new; do
			bin=$OLD
			[ "$who" = new ] && bin=$NEW
			case $scenario in
			get) start "$bin" "$OUT/ab-list.jsonl"; r=$(rate "$BASE/v1/categories") ;;
			post-memory) start "$bin" :memory:; r=$(rate -s bench/post.lua "$BASE/v1/categories") ;;
			post-durable) start "$bin" "$OUT/ab-durable.jsonl"; r=$(rate -s bench/post.lua "$BASE/v1/categories") ;;
			esac
			[ "$who" = old ] && o=$r || n=$r
		done
		ratio=$(awk -v n="$n" -v o="$o" 'BEGIN { printf "%.3f", n / o }')
		echo "$scenario round $round: old $o, new $n requests/s: new/old $ratio"
		sum=$(awk -v s="$sum" -v r="$ratio" 'BEGIN { print s + r }')
	done
	awk -v s="$sum" -v n="$ROUNDS" -v sc="$scenario" 'BEGIN { printf "%s: mean new/old %.2f\n", sc, s / n }'
done
stop
rm -f "$OUT/ab-list.v1" "$OUT/ab-list.jsonl" "$OUT/ab-durable.jsonl" "$OUT/ab-durable.jsonl.torn"
