# bench/lib.sh: what bench/ab.sh and bench/procs.sh share. Source it after
# setting PORT; it sets OUT, KEY and BASE, and stops the server in $pid on
# exit.
OUT=bench/out
mkdir -p "$OUT"
command -v wrk >/dev/null || { echo "$0: wrk is required (apt-get install wrk)" >&2; exit 1; }
# A throwaway key for this run; it is never printed.
KEY="bench-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
BASE="http://127.0.0.1:$PORT"
pid=""

# stop stops the server started last, if any.
stop() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		pid=""
	fi
}
trap stop EXIT

# up NAME [LOG]: waits, at most 5 s, until the server in $pid answers
# /healthz at $BASE; otherwise says NAME did not start, with the end of
# LOG if given, and exits.
up() {
	for _ in $(seq 1 100); do curl -fs -o /dev/null "$BASE/healthz" && return 0; sleep 0.05; done
	echo "$0: $1 did not start" >&2
	[ -z "${2:-}" ] || tail -n 5 "$2" >&2
	exit 1
}

# journal100 VERSION FILE: a journal of 100 categories in format VERSION.
journal100() {
	awk -v v="$1" 'BEGIN { printf "{\"format\":\"petstore-categories\",\"version\":%d}\n", v
		for (i = 1; i <= 100; i++) printf "{\"id\":%d,\"name\":\"category-%011d\"}\n", i, i }' >"$2"
}
