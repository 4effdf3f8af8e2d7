#!/bin/sh
# bench/keys.sh [ROUNDS]: what an Idempotency-Key costs a durable create.
# BenchmarkCreate (store=durable, clients=64) with and without keys, one
# after the other in each round, the order swapped every round: a durable
# create waits for fsync, whose speed drifts on a shared disk, so the two
# are measured side by side rather than each in one block. Then benchstat
# compares them (installed with `go install` if missing), and the ratio of
# each round's pair is summed up.
#
#	bench/keys.sh 12    # about 1 minute
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${1:-12}
OUT=bench/out
mkdir -p "$OUT"
BENCHSTAT=$(bench/benchstat.sh)
go test -c -o "$OUT/petstore.test" .
run() {
	"$OUT/petstore.test" -test.run '^$' -test.benchtime 1s \
		-test.bench "BenchmarkCreate\$/store=durable/keys=$1/clients=64\$" | grep '^Benchmark'
}
: >"$OUT/keys.txt"
for i in $(seq "$ROUNDS"); do
	if [ $((i % 2)) = 1 ]; then run false; run true; else run true; run false; fi >>"$OUT/keys.txt"
done
"$BENCHSTAT" -col /keys "$OUT/keys.txt"
# Each round's own ratio, keyed over unkeyed sec/op: the drift of the disk
# between rounds cancels out.
awk '$1 ~ /keys=false/ { f = $3 } $1 ~ /keys=true/ { t = $3 }
	f && t { r[++n] = t / f; f = t = 0 }
	END {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (r[j] < r[i]) { x = r[i]; r[i] = r[j]; r[j] = x }
		m = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
		printf "keyed/unkeyed sec/op per round: median %.3f, min %.3f, max %.3f (%d rounds)\n", m, r[1], r[n], n
	}' "$OUT/keys.txt"
