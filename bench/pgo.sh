#!/usr/bin/env bash
# bench/pgo.sh (make pgo): makes default.pgo, the CPU profile that go build
# uses by itself for profile-guided optimisation of the main package. It
# builds petstore with -tags cpuprofile and -pgo=off, runs it pinned to
# CPU 0 under wrk on CPU 1 (64 connections, DURATION each) with the mix of
# make bench-load: on a journal of 100 categories the whole list, a page,
# a look-up by name, a get by id and durable creates; then in memory,
# creates and the list. The two profiles are merged into default.pgo.
#
#   make pgo                # DURATION=5s
#   go build -pgo=off -o /tmp/off.bin . && go build -o /tmp/pgo.bin . && bench/ab.sh /tmp/off.bin /tmp/pgo.bin
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-18556}
DURATION=${DURATION:-5s}
. bench/lib.sh
go build -tags cpuprofile -pgo=off -o "$OUT/pgo.bin" .
journal100 2 "$OUT/pgo-list.jsonl"
rm -f "$OUT"/pgo-*.pprof "$OUT"/pgo-*.log "$OUT/pgo-list.jsonl.torn"

# profile NAME DATA: petstore on DATA, writing its CPU profile to
# $OUT/pgo-NAME.pprof when stop ends it.
profile() {
	stop
	PGO_CPU_PROFILE="$OUT/pgo-$1.pprof" PETSTORE_ADDR="127.0.0.1:$PORT" PETSTORE_API_KEYS="$KEY" PETSTORE_DATA="$2" \
		taskset -c 0 "$OUT/pgo.bin" 2>"$OUT/pgo-$1.log" &
	pid=$!
	up petstore "$OUT/pgo-$1.log"
}
load() { taskset -c 1 wrk -t1 -c64 -d"$DURATION" -H "Authorization: Bearer $KEY" "$@" >/dev/null; }

profile journal "$OUT/pgo-list.jsonl"
load "$BASE/v1/categories"
load "$BASE/v1/categories?limit=10&after=50"
load "$BASE/v1/categories?name=CATEGORY-00000000050"
load "$BASE/v1/categories/42"
load -s bench/post.lua "$BASE/v1/categories"
profile memory :memory:
load -s bench/post.lua "$BASE/v1/categories"
load "$BASE/v1/categories?limit=100"
stop
# Merged beside it first: a merge that fails leaves an earlier default.pgo as it was.
go tool pprof -proto "$OUT/pgo-journal.pprof" "$OUT/pgo-memory.pprof" >"$OUT/pgo-merged.pgo"
mv "$OUT/pgo-merged.pgo" default.pgo
rm -f "$OUT"/pgo-*.pprof "$OUT"/pgo-*.log "$OUT/pgo-list.jsonl" "$OUT/pgo-list.jsonl.torn" "$OUT/pgo.bin"
echo "default.pgo: $(wc -c <default.pgo) bytes; go build uses it by itself"
