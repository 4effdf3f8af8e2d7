#!/usr/bin/env bash
# bench/etcdcost.sh: etcd's instructions per petstore create, against its
# instructions per single-key put through the same JSON gateway (what
# bench/etcd_put.lua sends). One etcd member runs under valgrind's
# callgrind, which counts instructions, so the figures do not move with
# the machine's load; petstore runs beside it, not counted. Each side is
# warmed up, then N requests (2,000) go out from curl on 64 connections,
# so that petstore's creates share txns as under load. Needs etcd,
# valgrind and curl; takes 3 to 10 minutes.
#
#   bench/etcdcost.sh
#   BINARY=/tmp/old.bin bench/etcdcost.sh   # another petstore build
#
# On 2 CPUs, etcd and petstore on one of them, creates are bound by CPU
# and most of etcd's is its gateway's (decoding and encoding JSON): so
# petstore's creates keep up with etcd's puts when etcd's instructions per
# create plus petstore's own stay below etcd's per put.
set -euo pipefail
[ -z "${TRACE:-}" ] || set -x
cd "$(dirname "$0")/.."
N=${N:-2000}
PORT=${PORT:-18097}
ETCD_PORT=${ETCD_PORT:-23790}
NAME=bench/etcdcost.sh
. bench/pair.sh etcd valgrind callgrind_control curl awk base64
[ -z "${BINARY:-}" ] || cp "$BINARY" "$work/petstore"
etcd_pid=""
stop_etcd() {
	end "$etcd_pid"
	etcd_pid=""
}
trap 'stop; stop_etcd; rm -rf "$work"' EXIT
client="http://127.0.0.1:$ETCD_PORT"

# requests KIND FIRST COUNT: a curl config of COUNT requests: petstore
# creates of the names load-FIRST..., or etcd puts of new keys
# /bench/put/FIRST... with a value the size of a category record.
requests() {
	local kind=$1 first=$2 count=$3
	(
		umask 077 # the config holds the (throwaway) key
		for ((i = first; i < first + count; i++)); do
			((i == first)) || echo next
			echo 'output = "/dev/null"'
			echo 'write-out = "%{http_code}\n"'
			echo 'header = "Content-Type: application/json"'
			if [ "$kind" = create ]; then
				echo "url = \"http://127.0.0.1:$PORT/v1/categories\""
				echo "header = \"Authorization: Bearer $KEY\""
				echo "data = \"{\\\"name\\\":\\\"load-$i\\\"}\""
			else
				k=$(printf '/bench/put/%d' "$i" | base64 -w0)
				v=$(printf '{"id":%d,"name":"category-%011d"}' "$i" "$i" | base64 -w0)
				echo "url = \"$client/v3/kv/put\""
				echo "data = \"{\\\"key\\\":\\\"$k\\\",\\\"value\\\":\\\"$v\\\"}\""
			fi
		done >"$work/requests"
	)
}
load() { # KIND FIRST COUNT: prints how many succeeded
	requests "$@"
	curl -s --no-progress-meter --parallel --parallel-max 64 -K "$work/requests" |
		awk '/^2/ { n++ } !/^2/ { bad[$1]++ } END { for (c in bad) print bad[c] " answers " c > "/dev/stderr"; print n + 0 }'
}
# start_etcd OUT: one fresh etcd member under callgrind, writing to OUT;
# fails if it does not become healthy.
start_etcd() {
	rm -rf "$work/etcd-data"
	# Long raft timeouts: under valgrind a heartbeat takes its time.
	GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$1" \
		etcd --name m1 --data-dir "$work/etcd-data" --heartbeat-interval 1000 --election-timeout 10000 \
		--listen-client-urls "$client" --advertise-client-urls "$client" \
		--listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
		--initial-cluster "m1=http://127.0.0.1:$((ETCD_PORT + 1))" >/dev/null 2>"$work/etcd.log" &
	etcd_pid=$!
	for _ in $(seq 1 600); do
		curl -fs --max-time 2 "$client/health" | grep -q '"health":"true"' && return 0
		kill -0 "$etcd_pid" 2>/dev/null || break
		sleep 0.2
	done
	stop_etcd
	return 1
}
# count_once KIND OUT: starts etcd (and petstore for creates), warms up,
# counts N requests of KIND, and prints "instructions_per_request
# requests"; fails, printing nothing, if etcd died under callgrind or a
# request failed.
count_once() {
	local kind=$1 out=$2
	start_etcd "$out" || return 1
	if [ "$kind" = create ]; then
		PETSTORE_ADDR="127.0.0.1:$PORT" PETSTORE_API_KEYS="$KEY" PETSTORE_DATA="etcd://127.0.0.1:$ETCD_PORT/cost" \
			"$work/petstore" >/dev/null 2>"$work/petstore.log" &
		server=$!
		await_up "http://127.0.0.1:$PORT/healthz" 300 "$work/petstore.log"
	fi
	load "$kind" 1 200 >/dev/null # warm up
	callgrind_control -z "$etcd_pid" >/dev/null 2>&1
	local done
	done=$(load "$kind" 201 "$N")
	callgrind_control -d "$etcd_pid" >/dev/null 2>&1
	local alive=0
	kill -0 "$etcd_pid" 2>/dev/null && alive=1
	if [ "$kind" = create ]; then
		curl -fs -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/metrics" |
			awk '/^petstore_store_commit_batch_size_(sum|count) / { v[$1] = $2 }
				END { printf "petstore: %d txns, %.1f creates each, warm-up included\n", v["petstore_store_commit_batch_size_count"],
					v["petstore_store_commit_batch_size_sum"] / v["petstore_store_commit_batch_size_count"] > "/dev/stderr" }'
	fi
	stop
	stop_etcd
	local total
	total=$(callgrind_annotate "$out.1" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
	[ "$alive" = 1 ] && [ "$done" = "$N" ] && [ -n "$total" ] || return 1
	echo "$((total / done)) $done"
}
# count KIND: etcd's instructions per request of KIND. Under callgrind
# etcd is some 50 times slower: now and then callgrind trips on one of its
# signals as it starts (an assertion in its signal handling), or a probe of
# petstore's waits more than its second for an answer, and petstore
# refuses creates (503) until the next probe is answered. Such a run is
# not counted: it runs again, up to 5 times.
count() {
	local try
	for try in 1 2 3 4 5; do
		rm -f "$work/etcd-$1.cg"*
		count_once "$1" "$work/etcd-$1.cg" && return 0
		say "$NAME: etcd did not start under callgrind, or a request failed; running the $1s again"
	done
	say "$NAME: 5 runs of $1s failed"
	exit 1
}
# Not in a subshell: the trap must know the processes count starts.
say "etcd's own single-key puts"
count put >"$work/put.count"
say "petstore creates"
count create >"$work/create.count"
read -r per_put puts <"$work/put.count"
read -r per_create creates <"$work/create.count"
printf '| %-44s | %9s | %14s |\n' "request" "counted" "etcd instr/req"
printf '|%s|%s|%s|\n' "----------------------------------------------" "----------:" "---------------:"
printf '| %-44s | %9d | %14d |\n' "etcd single-key put (bench/etcd_put.lua)" "$puts" "$per_put"
printf '| %-44s | %9d | %14d |\n' "petstore create (64 connections)" "$creates" "$per_create"
awk -v c="$per_create" -v p="$per_put" 'BEGIN { printf "etcd per create / per put: %.2f\n", c / p }'
