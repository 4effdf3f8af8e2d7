#!/usr/bin/env bash
# bench/procs.sh: the GOMAXPROCS policy behind procsBoost, measured. petstore
# pinned to one CPU (taskset, as a one-CPU container would pin it), wrk on the
# other; three policies, alternating round by round:
#   boost  - the default: one P, raised to 2 while the journal is written
#   one-P  - GOMAXPROCS=1: no boost
#   two-P  - GOMAXPROCS=2: a second P all the time
# for GET of 100 categories and durable creates at 64 connections.
#
#   bench/procs.sh                 # ROUNDS=3 DURATION=4s
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-4s}
PORT=${PORT:-18570}
. bench/lib.sh
go build -o "$OUT/petstore" .
journal100 2 "$OUT/procs-list.jsonl"

# start POLICY DATA
start() {
	stop
	local procs=""
	case $1 in one-P) procs=1 ;; two-P) procs=2 ;; esac
	env ${procs:+GOMAXPROCS=$procs} PETSTORE_ADDR="127.0.0.1:$PORT" PETSTORE_API_KEYS="$KEY" PETSTORE_DATA="$2" \
		taskset -c 0 "$OUT/petstore" 2>/dev/null &
	pid=$!
	up petstore
}

# load ARGS...: prints "requests/s p99_ms"
load() {
	taskset -c 1 wrk -t1 -c64 -d"$DURATION" --latency -H "Authorization: Bearer $KEY" "$@" | awk '
		/Requests\/sec:/ { rps = $2 }
		$1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); p = v / 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v); p = v } else { sub(/s$/, "", v); p = v * 1000 } }
		END { printf "%.0f %.2f\n", rps, p }'
}

declare -A RPS P99
for round in $(seq 1 "$ROUNDS"); do
	for policy in boost one-P two-P; do
		start "$policy" "$OUT/procs-list.jsonl"
		read -r r p < <(load "$BASE/v1/categories")
		RPS[get $policy]+="$r "; P99[get $policy]+="$p "
		rm -f "$OUT/procs-durable.jsonl"
		start "$policy" "$OUT/procs-durable.jsonl"
		read -r r p < <(load -s bench/post.lua "$BASE/v1/categories")
		RPS[post $policy]+="$r "; P99[post $policy]+="$p "
		echo "round $round $policy done" >&2
	done
done
stop
rm -f "$OUT/procs-durable.jsonl" "$OUT/procs-durable.jsonl.torn" "$OUT/procs-list.jsonl"
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
printf '| %-22s | %8s | %10s | %8s | %10s |\n' policy "GET r/s" "GET p99 ms" "POST r/s" "POST p99 ms"
printf '|%s|%s|%s|%s|%s|\n' "------------------------" "---------:" "-----------:" "---------:" "-----------:"
for policy in boost one-P two-P; do
	printf '| %-22s | %8s | %10s | %8s | %10s |\n' "$policy" \
		"$(echo "${RPS[get $policy]}" | median)" "$(echo "${P99[get $policy]}" | median)" \
		"$(echo "${RPS[post $policy]}" | median)" "$(echo "${P99[post $policy]}" | median)"
done
