#!/usr/bin/env bash
# make bench-load: petstore against a bare net/http baseline (bench/baseline)
# on loopback. Each server is pinned to CPU 0 with taskset and wrk to CPU 1.
# Every scenario runs RUNS times for DURATION; the table shows medians and the
# ratios the performance targets are stated in. Takes about 3 minutes, and
# 2 more with etcd installed: then a 3-member cluster on loopback (pinned to
# the server's CPU too) adds the etcd store's rows; without etcd they are
# skipped with a warning.
#
#   make bench-load                      # RUNS=3 DURATION=5s
#   RUNS=5 DURATION=10s make bench-load
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-64}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PORT=${PORT:-18080}
OUT=bench/out
mkdir -p "$OUT"

say() { printf '%s\n' "$*" >&2; }

if ! command -v wrk >/dev/null 2>&1; then
	say "wrk is not installed; installing it with apt-get"
	sudo_cmd=""
	[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
	if ! { $sudo_cmd apt-get install -y wrk >/dev/null 2>&1 || { $sudo_cmd apt-get update >/dev/null 2>&1 && $sudo_cmd apt-get install -y wrk >/dev/null 2>&1; }; }; then
		say "bench-load: wrk is missing and could not be installed with apt-get; install wrk and run again"
		exit 1
	fi
fi
for tool in taskset curl awk; do
	command -v "$tool" >/dev/null 2>&1 || { say "bench-load: $tool is required"; exit 1; }
done
if [ "$(nproc)" -lt 2 ]; then
	say "bench-load: needs 2 CPUs (one for the server, one for wrk); this machine has $(nproc)"
	exit 1
fi

say "building petstore and the baseline"
go build -o "$OUT/petstore" .
go build -o "$OUT/baseline" ./bench/baseline

# A throwaway key for this run; it is never printed.
KEY="bench-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
AUTH="Authorization: Bearer $KEY"
BASE="http://127.0.0.1:$PORT"
TLS_BASE="https://127.0.0.1:$PORT"
server_pid=""

stop_server() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=""
	fi
}
etcd_pids=()
stop_etcd() {
	for pid in "${etcd_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${etcd_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	etcd_pids=()
}
trap 'stop_server; stop_etcd' EXIT

wait_ready() {
	for _ in $(seq 1 100); do
		kill -0 "$server_pid" 2>/dev/null || { say "bench-load: the server exited at start"; exit 1; }
		if curl -fs -o /dev/null "$BASE/healthz" || curl -fsk -o /dev/null "$TLS_BASE/healthz"; then
			# Answered: by our server, not by one that held the port before.
			kill -0 "$server_pid" 2>/dev/null || { say "bench-load: the server exited at start"; exit 1; }
			return 0
		fi
		sleep 0.1
	done
	say "bench-load: the server did not become ready in 10 s"
	exit 1
}

# port_free: nothing may answer on the port before a server starts, or the
# run would measure it.
port_free() {
	if curl -fs -o /dev/null --max-time 1 "$BASE/healthz" || curl -fsk -o /dev/null --max-time 1 "$TLS_BASE/healthz"; then
		say "bench-load: something already answers on 127.0.0.1:$PORT; stop it or set PORT"
		exit 1
	fi
}

# start_petstore DATA [LOG [VAR=VALUE...]]: petstore with every feature on
# (auth, access log, request ids, metrics, journal unless DATA is :memory:).
# The access log (buffered, a write per 32 KiB) goes to LOG, /dev/null by
# default so as not to fill the disk; VAR=VALUE adds to the environment.
start_petstore() {
	stop_server
	port_free
	local data=$1 log=${2:-/dev/null}
	shift $(($# < 2 ? $# : 2))
	env PETSTORE_ADDR="127.0.0.1:$PORT" PETSTORE_API_KEYS="$KEY" PETSTORE_DATA="$data" "$@" \
		taskset -c "$SERVER_CPU" "$OUT/petstore" 2>"$log" &
	server_pid=$!
	wait_ready
}

# start_baseline LIST_FILE
start_baseline() {
	stop_server
	port_free
	BASELINE_ADDR="127.0.0.1:$PORT" BASELINE_LIST="$1" taskset -c "$SERVER_CPU" "$OUT/baseline" 2>/dev/null &
	server_pid=$!
	wait_ready
}

# journal N FILE: a petstore journal of N categories named like benchmarks'.
journal() {
	awk -v n="$1" 'BEGIN {
		print "{\"format\":\"petstore-categories\",\"version\":1}"
		for (i = 1; i <= n; i++) printf "{\"id\":%d,\"name\":\"category-%011d\"}\n", i, i
	}' >"$2"
}

# load CONNS [wrk args...]: one wrk run; prints "requests/s p99_µs errors".
load() {
	local conns=$1
	shift
	local report
	# etcd refuses any Authorization header while its auth is off.
	local auth=(-H "$AUTH")
	[ "${LOAD_NOAUTH:-0}" = 1 ] && auth=()
	report=$(taskset -c "$LOAD_CPU" wrk -t1 -c"$conns" -d"$DURATION" --latency "${auth[@]}" "$@")
	awk '
		/Requests\/sec:/ { rps = $2 }
		$1 == "99%" {
			v = $2
			if (v ~ /us$/) { sub(/us$/, "", v); p99 = v }
			else if (v ~ /ms$/) { sub(/ms$/, "", v); p99 = v * 1000 }
			else if (v ~ /s$/) { sub(/s$/, "", v); p99 = v * 1000000 }
		}
		/Non-2xx or 3xx responses:/ { errors = $NF }
		/Socket errors:/ { errors = errors + 1 }
		END { printf "%.0f %.0f %d\n", rps, p99, errors }
	' <<<"$report"
}

# median of the numbers on stdin; the mean of the two middle ones for an even count.
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A RPS P99 RPS_RUNS P99_RUNS
# compare "wrk args" CONTESTANT...: RUNS rounds; in each round every
# contestant ("name|start command|connections[|its own wrk args[|noauth]]")
# gets a fresh server and one wrk run, so that drift in a noisy machine
# hits all of them alike. noauth sends no Authorization header.
compare() {
	local args=$1
	shift
	for run in $(seq 1 "$RUNS"); do
		for contestant in "$@"; do
			IFS='|' read -r name start conns own noauth <<<"$contestant"
			eval "$start"
			# shellcheck disable=SC2086 # args is a list of words
			local result
			if ! result=$(LOAD_NOAUTH=$([ "$noauth" = noauth ] && echo 1 || echo 0) load "$conns" ${own:-$args}); then
				say "bench-load: wrk failed: $name run $run"
				exit 1
			fi
			read -r rps p99 errors <<<"$result"
			if [ "${errors:-0}" -ne 0 ]; then
				say "bench-load: $name run $run had $errors failed or non-2xx/3xx answers; its numbers are not valid"
				exit 1
			fi
			say "  round $run: $name: $rps requests/s, p99 $p99 µs"
			RPS_RUNS[$name]+="$rps"$'\n'
			P99_RUNS[$name]+="$p99"$'\n'
		done
	done
	for contestant in "$@"; do
		IFS='|' read -r name _ _ <<<"$contestant"
		RPS[$name]=$(printf '%s' "${RPS_RUNS[$name]}" | median)
		P99[$name]=$(printf '%s' "${P99_RUNS[$name]}" | median)
	done
}

for n in 100 10000; do
	journal "$n" "$OUT/list-$n.jsonl"
	start_petstore "$OUT/list-$n.jsonl"
	curl -fs -H "$AUTH" "$BASE/v1/categories" >"$OUT/list-$n.json"
	say "GET /v1/categories with $n categories"
	if [ "$n" = 100 ]; then
		# Three more petstores: a rate limit too high ever to refuse (every
		# answer takes a token and carries RateLimit headers), the access
		# log written to a real file instead of /dev/null, and CORS on with
		# an allowed Origin on every request (every answer carries the CORS
		# headers).
		compare "$BASE/v1/categories" \
			"petstore GET $n|start_petstore $OUT/list-$n.jsonl|$CONNS" \
			"baseline GET $n|start_baseline $OUT/list-$n.json|$CONNS" \
			"petstore GET $n limited|start_petstore $OUT/list-$n.jsonl /dev/null PETSTORE_RATE_LIMIT=1000000000/s|$CONNS" \
			"petstore GET $n log file|rm -f $OUT/access.log; start_petstore $OUT/list-$n.jsonl $OUT/access.log|$CONNS" \
			"petstore GET $n CORS|start_petstore $OUT/list-$n.jsonl /dev/null PETSTORE_CORS_ORIGINS=https://app.example.com|$CONNS|-H Origin:https://app.example.com $BASE/v1/categories"
		rm -f "$OUT/access.log"
	else
		compare "$BASE/v1/categories" \
			"petstore GET $n|start_petstore $OUT/list-$n.jsonl|$CONNS" \
			"baseline GET $n|start_baseline $OUT/list-$n.json|$CONNS"
	fi
done

# HTTPS: the same binary and list over TLS (a throwaway self-signed ECDSA
# P-256 pair; wrk negotiates TLS 1.3 and keeps HTTP/1.1 connections alive),
# and HTTP/2 with h2load (nghttp2-client): one connection, 64 streams.
H2_RPS=""
if command -v openssl >/dev/null 2>&1; then
	(umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$OUT/tls-key.pem" -out "$OUT/tls-cert.pem" 2>/dev/null)
	start_tls() { start_petstore "$OUT/list-100.jsonl" /dev/null PETSTORE_TLS_CERT_FILE="$OUT/tls-cert.pem" PETSTORE_TLS_KEY_FILE="$OUT/tls-key.pem"; }
	say "GET /v1/categories with 100 categories over HTTP and over HTTPS"
	compare "$BASE/v1/categories" \
		"petstore GET 100 HTTP|start_petstore $OUT/list-100.jsonl|$CONNS" \
		"petstore GET 100 HTTPS|start_tls|$CONNS|$TLS_BASE/v1/categories"
	if command -v h2load >/dev/null 2>&1; then
		runs=""
		for run in $(seq 1 "$RUNS"); do
			start_tls
			report=$(taskset -c "$LOAD_CPU" h2load -t1 -c1 -m64 -D "${DURATION%s}" -H "$AUTH" "$TLS_BASE/v1/categories" 2>&1)
			if ! grep -q ' 0 failed, 0 errored, 0 timeout' <<<"$report" || grep -qE '[1-9][0-9]* [345]xx' <<<"$report"; then
				say "bench-load: h2load run $run had failures or non-2xx answers:"
				say "$report"
				exit 1
			fi
			rps=$(awk '/^finished in/ { gsub(",", "", $4); printf "%.0f\n", $4 }' <<<"$report")
			say "  round $run: petstore GET 100 HTTP/2 (h2load, 64 streams): $rps requests/s"
			runs+="$rps"$'\n'
		done
		H2_RPS=$(printf '%s' "$runs" | median)
	else
		say "bench-load: h2load not installed (apt-get install nghttp2-client); the HTTP/2 row is skipped"
	fi
	stop_server
	rm -f "$OUT/tls-key.pem" "$OUT/tls-cert.pem"
else
	say "bench-load: openssl not installed; the HTTPS rows are skipped"
fi

fresh_journal() { rm -f "$OUT/durable.jsonl" "$OUT/durable.jsonl.torn"; start_petstore "$OUT/durable.jsonl"; }
say "POST /v1/categories (a fresh server for every run, so every name is new)"
# The keyed creates (an Idempotency-Key on each) in the same round robin.
compare "-s bench/post.lua $BASE/v1/categories" \
	"petstore POST :memory: c$CONNS|start_petstore :memory:|$CONNS" \
	"baseline POST c$CONNS|start_baseline $OUT/list-100.json|$CONNS" \
	"petstore POST durable c$CONNS|fresh_journal|$CONNS" \
	"petstore POST durable c1|fresh_journal|1" \
	"petstore POST durable keys c$CONNS|fresh_journal|$CONNS|-s bench/post_keys.lua $BASE/v1/categories"
stop_server
rm -f "$OUT/durable.jsonl"

say "start-up with 1,000,000 categories"
journal 1000000 "$OUT/replay.jsonl"
stop_server
started=$(date +%s%N)
start_petstore "$OUT/replay.jsonl"
ready=$(date +%s%N)
STARTUP_MS=$(((ready - started) / 1000000))
RSS_KB=$(awk '/^VmRSS:/ { print $2 }' "/proc/$server_pid/status")
stop_server
say "a page of 100 and a look-up by name on 1,000,000 categories, and the whole list of 100"
compare "$BASE/v1/categories" \
	"petstore GET 100 again|start_petstore $OUT/list-100.jsonl|$CONNS" \
	"petstore page 100 of 1M|start_petstore $OUT/replay.jsonl|$CONNS|$BASE/v1/categories?limit=100&after=500000" \
	"petstore name= of 1M|start_petstore $OUT/replay.jsonl|$CONNS|$BASE/v1/categories?name=CATEGORY-00000500000"
stop_server
start_petstore :memory:
EMPTY_RSS_KB=$(awk '/^VmRSS:/ { print $2 }' "/proc/$server_pid/status")
stop_server
rm -f "$OUT/replay.jsonl"
RSS_PER_CATEGORY=$(awk -v r="$RSS_KB" 'BEGIN { printf "%.0f", r * 1024 / 1000000 }')
RSS_GROWTH_PER_CATEGORY=$(awk -v r="$RSS_KB" -v e="$EMPTY_RSS_KB" 'BEGIN { printf "%.0f", (r - e) * 1024 / 1000000 }')

# The etcd store: a 3-member cluster on loopback ports ETCD_PORT+1..+3
# (clients) and +11..+13 (peers), data in a fresh directory.
ETCD_PORT=${ETCD_PORT:-23700}
HAVE_ETCD=0
if command -v etcd >/dev/null 2>&1; then
	HAVE_ETCD=1
	etcd_dir=$(mktemp -d)
	initial="m1=http://127.0.0.1:$((ETCD_PORT + 11)),m2=http://127.0.0.1:$((ETCD_PORT + 12)),m3=http://127.0.0.1:$((ETCD_PORT + 13))"
	ENDPOINTS="127.0.0.1:$((ETCD_PORT + 1)),127.0.0.1:$((ETCD_PORT + 2)),127.0.0.1:$((ETCD_PORT + 3))"
	say "etcd: starting a 3-member cluster on $ENDPOINTS"
	for i in 1 2 3; do
		c="http://127.0.0.1:$((ETCD_PORT + i))" p="http://127.0.0.1:$((ETCD_PORT + 10 + i))"
		taskset -c "$SERVER_CPU" etcd --name "m$i" --data-dir "$etcd_dir/m$i" --listen-client-urls "$c" --advertise-client-urls "$c" \
			--listen-peer-urls "$p" --initial-advertise-peer-urls "$p" --initial-cluster "$initial" \
			--initial-cluster-token bench --initial-cluster-state new >"$etcd_dir/m$i.log" 2>&1 &
		etcd_pids+=($!)
	done
	for _ in $(seq 1 300); do
		healthy=0
		for i in 1 2 3; do
			curl -fs --max-time 1 "http://127.0.0.1:$((ETCD_PORT + i))/health" | grep -q '"health":"true"' && healthy=$((healthy + 1))
		done
		[ "$healthy" -eq 3 ] && break
		sleep 0.1
	done
	[ "$healthy" -eq 3 ] || { say "bench-load: etcd did not become healthy; see $etcd_dir"; exit 1; }
	ETCD_DATA="etcd://$ENDPOINTS"

	# GET 100: the same list, on :memory: (filled by 100 creates) and on etcd
	# (the journal imported).
	PETSTORE_DATA="$ETCD_DATA/get100" "$OUT/petstore" -import "$OUT/list-100.jsonl" 2>/dev/null
	memory_100() {
		start_petstore :memory:
		for i in $(seq 1 100); do
			curl -fs -o /dev/null -H "$AUTH" -H 'Content-Type: application/json' \
				-d "$(printf '{"name":"category-%011d"}' "$i")" "$BASE/v1/categories"
		done
	}
	say "GET /v1/categories with 100 categories: :memory: and etcd"
	compare "$BASE/v1/categories" \
		"petstore GET 100 :memory:|memory_100|$CONNS" \
		"petstore GET 100 etcd|start_petstore $ETCD_DATA/get100|$CONNS"

	# Creates: a fresh prefix for every run, so every name is new.
	prefixes=0
	fresh_etcd() { prefixes=$((prefixes + 1)); start_petstore "$ETCD_DATA/post$prefixes"; }
	# etcd's puts in the same round robin, petstore stopped: the cluster
	# slows as its data grows, and that must hit both alike.
	say "POST /v1/categories on etcd, and etcd's own single-key puts"
	compare "-s bench/post.lua $BASE/v1/categories" \
		"petstore POST etcd c$CONNS|fresh_etcd|$CONNS" \
		"petstore POST etcd c1|fresh_etcd|1" \
		"etcd put c$CONNS|stop_server|$CONNS|-s bench/etcd_put.lua http://127.0.0.1:$((ETCD_PORT + 1))/v3/kv/put|noauth"
	stop_server

	# Propagation: two petstores on one prefix; from a 201 on one to the
	# category in the other's list.
	say "propagation between two petstores on one prefix"
	go build -o "$OUT/propagation" ./bench/propagation
	start_petstore "$ETCD_DATA/propagation"
	PETSTORE_ADDR="127.0.0.1:$((PORT + 1))" PETSTORE_API_KEYS="$KEY" PETSTORE_DATA="$ETCD_DATA/propagation" \
		taskset -c "$SERVER_CPU" "$OUT/petstore" 2>/dev/null &
	second_pid=$!
	for _ in $(seq 1 100); do curl -fs -o /dev/null "http://127.0.0.1:$((PORT + 1))/healthz" && break; sleep 0.1; done
	read -r PROP_P50 PROP_P99 PROP_MAX < <(PETSTORE_API_KEYS="$KEY" taskset -c "$LOAD_CPU" "$OUT/propagation" "$BASE" "http://127.0.0.1:$((PORT + 1))" 500)
	kill "$second_pid"
	wait "$second_pid" 2>/dev/null || true
	stop_server
	stop_etcd
	rm -rf "$etcd_dir"
else
	say "************************************************************"
	say "* SKIPPED: the etcd rows (no etcd binary; apt-get install   *"
	say "* etcd-server): the etcd store was NOT measured.            *"
	say "************************************************************"
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
check() { awk -v r="$1" -v t="$2" -v op="$3" 'BEGIN { ok = (op == ">=" ? r >= t : r <= t); print (ok ? "ok" : "MISSED") }'; }

{
	echo "petstore bench-load, $(date -u +%Y-%m-%d), $(nproc) CPUs: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "server on CPU $SERVER_CPU, wrk -t1 on CPU $LOAD_CPU, $RUNS runs of $DURATION each, medians; $(go version | awk '{ print $3 }')"
	echo
	printf '| %-30s | %12s | %10s |\n' "scenario" "requests/s" "p99 µs"
	printf '|%s|%s|%s|\n' "--------------------------------" "-------------:" "-----------:"
	for name in "petstore GET 100" "baseline GET 100" "petstore GET 100 limited" "petstore GET 100 log file" "petstore GET 100 CORS" "petstore GET 10000" "baseline GET 10000" \
		"petstore POST :memory: c$CONNS" "baseline POST c$CONNS" "petstore POST durable c$CONNS" "petstore POST durable c1" "petstore POST durable keys c$CONNS" \
		"petstore GET 100 again" "petstore page 100 of 1M" "petstore name= of 1M"; do
		printf '| %-30s | %12s | %10s |\n' "$name" "${RPS[$name]}" "${P99[$name]}"
	done
	for name in "petstore GET 100 HTTP" "petstore GET 100 HTTPS"; do
		[ -n "${RPS[$name]:-}" ] && printf '| %-30s | %12s | %10s |\n' "$name" "${RPS[$name]}" "${P99[$name]}"
	done
	[ -n "$H2_RPS" ] && printf '| %-30s | %12s | %10s |\n' "petstore GET 100 HTTP/2 m64" "$H2_RPS" "-"
	echo "resident memory: $((EMPTY_RSS_KB / 1024)) MiB empty, $((RSS_KB / 1024)) MiB with 1,000,000 categories ($RSS_GROWTH_PER_CATEGORY bytes per category above empty)"
	echo
	printf '| %-58s | %6s | %6s | %-6s |\n' "target" "ratio" "goal" "result"
	printf '|%s|%s|%s|%s|\n' "------------------------------------------------------------" "-------:" "-------:" "--------"
	row() { printf '| %-58s | %6s | %6s | %-6s |\n' "$1" "$2" "$3 $4" "$(check "$2" "$4" "$3")"; }
	row "GET 100: petstore / baseline requests/s" "$(ratio "${RPS[petstore GET 100]}" "${RPS[baseline GET 100]}")" ">=" 0.9
	row "GET 100: petstore / baseline p99 latency" "$(ratio "${P99[petstore GET 100]}" "${P99[baseline GET 100]}")" "<=" 1.5
	row "GET 100 rate-limited (never refused) / not limited" "$(ratio "${RPS[petstore GET 100 limited]}" "${RPS[petstore GET 100]}")" ">=" 0.97
	row "GET 100 access log to a file / to /dev/null" "$(ratio "${RPS[petstore GET 100 log file]}" "${RPS[petstore GET 100]}")" ">=" 0.9
	row "GET 100 with CORS and an allowed Origin / without CORS" "$(ratio "${RPS[petstore GET 100 CORS]}" "${RPS[petstore GET 100]}")" ">=" 0.95
	row "GET 10000: petstore / baseline requests/s" "$(ratio "${RPS[petstore GET 10000]}" "${RPS[baseline GET 10000]}")" ">=" 0.9
	row "POST :memory: / baseline POST requests/s" "$(ratio "${RPS[petstore POST :memory: c$CONNS]}" "${RPS[baseline POST c$CONNS]}")" ">=" 0.8
	row "POST durable c$CONNS with Idempotency-Keys / without" "$(ratio "${RPS[petstore POST durable keys c$CONNS]}" "${RPS[petstore POST durable c$CONNS]}")" ">=" 0.9
	row "POST durable c$CONNS / POST :memory: c$CONNS" "$(ratio "${RPS[petstore POST durable c$CONNS]}" "${RPS[petstore POST :memory: c$CONNS]}")" ">=" 0.6
	row "start-up with 1,000,000 categories, seconds (to /healthz)" "$(awk -v m="$STARTUP_MS" 'BEGIN { printf "%.2f", m / 1000 }')" "<=" 2
	row "resident memory per category, bytes (whole process)" "$RSS_PER_CATEGORY" "<=" 300
	row "page of 100 from 1,000,000 / whole list of 100 requests/s" "$(ratio "${RPS[petstore page 100 of 1M]}" "${RPS[petstore GET 100 again]}")" ">=" 0.9
	row "name= on 1,000,000 / whole list of 100 requests/s" "$(ratio "${RPS[petstore name= of 1M]}" "${RPS[petstore GET 100 again]}")" ">=" 0.9
	if [ -n "${RPS[petstore GET 100 HTTPS]:-}" ]; then
		row "GET 100 HTTPS (TLS 1.3, HTTP/1.1) / HTTP requests/s" "$(ratio "${RPS[petstore GET 100 HTTPS]}" "${RPS[petstore GET 100 HTTP]}")" ">=" 0.8
	fi
	row "POST durable c$CONNS / POST durable c1" "$(ratio "${RPS[petstore POST durable c$CONNS]}" "${RPS[petstore POST durable c1]}")" ">=" 10
	if [ "$HAVE_ETCD" -eq 1 ]; then
		echo
		echo "etcd store ($(etcd --version | sed -n 1p)), 3 members on CPU $SERVER_CPU:"
		echo
		printf '| %-30s | %12s | %10s |\n' "scenario" "requests/s" "p99 µs"
		printf '|%s|%s|%s|\n' "--------------------------------" "-------------:" "-----------:"
		for name in "petstore GET 100 :memory:" "petstore GET 100 etcd" "petstore POST etcd c$CONNS" "petstore POST etcd c1" "etcd put c$CONNS"; do
			printf '| %-30s | %12s | %10s |\n' "$name" "${RPS[$name]}" "${P99[$name]}"
		done
		echo "propagation A→B (500 sequential creates): p50 $PROP_P50 µs, p99 $PROP_P99 µs, max $PROP_MAX µs"
		echo
		printf '| %-58s | %6s | %6s | %-6s |\n' "target" "ratio" "goal" "result"
		printf '|%s|%s|%s|%s|\n' "------------------------------------------------------------" "-------:" "-------:" "--------"
		row "GET 100: etcd / :memory: requests/s" "$(ratio "${RPS[petstore GET 100 etcd]}" "${RPS[petstore GET 100 :memory:]}")" ">=" 0.9
		row "POST etcd c$CONNS / POST etcd c1" "$(ratio "${RPS[petstore POST etcd c$CONNS]}" "${RPS[petstore POST etcd c1]}")" ">=" 5
		row "POST etcd c$CONNS / etcd single-key put c$CONNS" "$(ratio "${RPS[petstore POST etcd c$CONNS]}" "${RPS[etcd put c$CONNS]}")" ">=" 1
		row "propagation p99, ms" "$(awk -v u="$PROP_P99" 'BEGIN { printf "%.2f", u / 1000 }')" "<=" 1000
	fi
} | tee "$OUT/results.md"
