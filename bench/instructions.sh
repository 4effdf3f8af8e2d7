#!/usr/bin/env bash
# bench/instructions.sh OLD [BENCH...]: instructions per operation of Go
# benchmarks at commit OLD and in the working tree, counted by valgrind's
# callgrind, which counts instructions rather than time: the same on a busy
# machine as on a quiet one. Each benchmark runs at N and 2N operations;
# the difference, divided by N, leaves out the set-up. Prints one line per
# benchmark with both counts and new/old. Needs valgrind (apt-get install
# valgrind). It measures the handler path (middleware, auth, decoding, the
# store), not the kernel's or the connection layer's work: wrk in
# bench/ab.sh measures those.
#
#   bench/instructions.sh 876cb95
#   N=2000 bench/instructions.sh HEAD~3 'BenchmarkList$/categories=100$'
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1
shift
N=${N:-5000}
[ $# -gt 0 ] || set -- 'BenchmarkList$/categories=100$' \
	'BenchmarkCreate$/store=memory/keys=false/clients=1$' \
	'BenchmarkCreate$/store=durable/keys=false/clients=1$'
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/old" "$OLD"
(cd "$work/old" && go test -c -o "$work/old.test" .)
go test -c -o "$work/new.test" .
count() { # BINARY BENCH OPS: instructions of the whole run
	# asyncpreemptoff: callgrind cannot follow the runtime's preemption signals;
	# GOGC=off: collections, paced by the clock, would make counts vary run to run.
	GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$1" -test.run '^$' -test.bench "$2" -test.benchtime "$3x" 2>&1 |
		awk '/Collected :/ { print $NF }'
}
for bench in "$@"; do
	per() { # BINARY: instructions per operation
		a=$(count "$1" "$bench" "$N")
		b=$(count "$1" "$bench" $((2 * N)))
		awk -v a="$a" -v b="$b" -v n="$N" 'BEGIN { printf "%.0f", (b - a) / n }'
	}
	o=$(per "$work/old.test")
	n=$(per "$work/new.test")
	awk -v o="$o" -v n="$n" -v b="$bench" 'BEGIN { printf "%s: old %d, new %d instructions/op: new/old %.3f\n", b, o, n, n / o }'
done
