#!/bin/sh
# bench/benchstat.sh: prints the path of benchstat, installing it with
# `go install` (a pinned version) if it is missing.
set -eu
BIN=$(go env GOBIN)
BIN=${BIN:-$(go env GOPATH)/bin}
BENCHSTAT=$(command -v benchstat || echo "$BIN/benchstat")
[ -x "$BENCHSTAT" ] || go install golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da >&2
echo "$BENCHSTAT"
