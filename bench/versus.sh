#!/bin/sh
# bench/versus.sh COMMIT [ROUNDS]: durable creates at COMMIT against the
# working tree. BenchmarkCreate (store=durable, clients=64), with and
# without Idempotency-Keys, built at both, run one after the other in each
# round (the disk's speed drifts), then compared by benchstat.
#
#	bench/versus.sh 8bc52fd 12    # about 2 minutes
set -eu
cd "$(dirname "$0")/.."
COMMIT=$1
ROUNDS=${2:-12}
OUT=bench/out
mkdir -p "$OUT"
BENCHSTAT=$(bench/benchstat.sh)
TREE=$(mktemp -d)
trap 'git worktree remove --force "$TREE"' EXIT
git worktree add -q --detach "$TREE" "$COMMIT"
(cd "$TREE" && go test -c -o "$OLDPWD/$OUT/then.test" .)
go test -c -o "$OUT/now.test" .
: >"$OUT/versus.txt"
for i in $(seq "$ROUNDS"); do
	for code in then now; do
		for keys in false true; do
			"$OUT/$code.test" -test.run '^$' -test.benchtime 1s \
				-test.bench "BenchmarkCreate\$/store=durable/keys=$keys/clients=64\$" |
				grep '^Benchmark' | sed "s|^BenchmarkCreate/|BenchmarkCreate/code=$code/|"
		done
	done >>"$OUT/versus.txt"
done
"$BENCHSTAT" -col /code "$OUT/versus.txt"
