#!/usr/bin/env bash
# bench/gap.sh: where an answer costs petstore more than the bare server
# (bench/baseline). Each server runs pinned to CPU 0, wrk to CPU 1
# (CONNS connections, DURATION), the contestants alternating for ROUNDS rounds
# (then the medians); for each, per answer: CPU time in user space and in
# the kernel (from /proc/PID/stat), context switches of all its threads
# (/proc/PID/task/*/status), the TCP segments sent (nstat), and, in a
# second, shorter run under strace -c -f, the system calls of every kind;
# and the share of CPU 0's time it spent idle, waiting on a disk (iowait)
# or not (/proc/stat): creates whose clients all wait on a sync leave it so.
# Time per answer moves with the machine; the system calls do not.
#
#   bench/gap.sh                 # GET of the list of 100: petstore, baseline
#   bench/gap.sh create          # creates: petstore durable (a fresh journal
#                                # each run), petstore :memory:, baseline
#   ROUNDS=3 DURATION=5s CONNS=64 are the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-list}
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-64}
PORT=${PORT:-18097}
NAME=bench/gap.sh
case "$MODE" in
list) contestants="petstore baseline" ;;
create) contestants="durable memory baseline" ;;
*) echo "usage: bench/gap.sh [list|create]" >&2; exit 2 ;;
esac
. bench/pair.sh wrk strace taskset curl awk
awk 'BEGIN { print "{\"format\":\"petstore-categories\",\"version\":1}"
	for (i = 1; i <= 100; i++) printf "{\"id\":%d,\"name\":\"category-%011d\"}\n", i, i }' >"$work/cats.jsonl"
start() { # petstore | durable | memory | baseline
	stop
	local data
	case "$1" in
	petstore) data="$work/cats.jsonl" ;;
	durable) data="$work/durable.jsonl"; rm -f "$data" ;;
	memory) data=:memory: ;;
	esac
	if [ "$1" = baseline ]; then
		BASELINE_ADDR="127.0.0.1:$PORT" BASELINE_LIST="$work/list.json" taskset -c 0 "$work/baseline" 2>/dev/null &
	else
		PETSTORE_ADDR="127.0.0.1:$PORT" PETSTORE_API_KEYS="$KEY" PETSTORE_DATA="$data" \
			taskset -c 0 "$work/petstore" 2>"$work/access.log" &
	fi
	server=$!
	await_up "http://127.0.0.1:$PORT/healthz"
}
# load CONNS DURATION: wrk on CPU 1 against the server; its report on stdout.
load() {
	local script=()
	[ "$MODE" = list ] || script=(-s bench/post.lua)
	taskset -c 1 wrk -t1 -c"$1" -d"$2" -H "Authorization: Bearer $KEY" "${script[@]}" "http://127.0.0.1:$PORT/v1/categories"
}
ticks() { awk '{ print $14, $15 }' "/proc/$server/stat"; }
cpu0() { awk '$1 == "cpu0" { print $5, $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; } # idle iowait all
switches() { cat /proc/"$server"/task/*/status | awk '/^voluntary_ctxt/ { v += $2 } /^nonvoluntary_ctxt/ { n += $2 } END { print v, n }'; }
hz=$(getconf CLK_TCK)

start petstore
curl -fs -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/v1/categories" >"$work/list.json"
# segments: TCP segments sent on the machine, both ends of the loopback
# connections (nstat, from iproute2; "-" without it).
export NSTAT_HISTORY="$work/nstat"
segments() { if command -v nstat >/dev/null; then nstat "$@" TcpOutSegs | awk '$1 == "TcpOutSegs" { print $2 }'; fi; }
echo "$MODE, $CONNS connections, $ROUNDS rounds of $DURATION:"
header() { printf '%-10s %10s %12s %12s %10s %10s %10s %8s %8s\n' server "answers/s" "user µs/ans" "sys µs/ans" "vol cs/ans" "inv cs/ans" "segs/ans" "idle %" "iowait %"; }
header
for round in $(seq 1 "$ROUNDS"); do
	for who in $contestants; do
		start "$who"
		segments -n
		read -r u0 s0 < <(ticks)
		read -r v0 n0 < <(switches)
		read -r i0 w0 a0 < <(cpu0)
		rps=$(load "$CONNS" "$DURATION" | awk '/^Requests\/sec/ { print $2 } /^ +[0-9]+ requests in/ { print "n", $1 > "/dev/stderr" }' 2>"$work/n")
		read -r u1 s1 < <(ticks)
		read -r v1 n1 < <(switches)
		read -r i1 w1 a1 < <(cpu0)
		segs=$(segments)
		n=$(awk '{ print $2 }' "$work/n")
		awk -v who="$who" -v rps="$rps" -v n="$n" -v hz="$hz" -v u="$((u1 - u0))" -v s="$((s1 - s0))" -v v="$((v1 - v0))" -v nv="$((n1 - n0))" -v segs="${segs:--}" \
			-v idle="$((i1 - i0))" -v iowait="$((w1 - w0))" -v all="$((a1 - a0))" \
			'BEGIN { printf "%-10s %10.0f %12.2f %12.2f %10.3f %10.3f %10s %8.1f %8.1f\n", who, rps, u / hz * 1e6 / n, s / hz * 1e6 / n, v / n, nv / n, segs == "-" ? "-" : sprintf("%.2f", segs / n), 100 * idle / all, 100 * iowait / all }' |
			tee -a "$work/rounds"
	done
done
if [ "$ROUNDS" -gt 1 ]; then
	echo "medians of the $ROUNDS rounds:"
	header
	for who in $contestants; do
		m=()
		for col in 2 3 4 5 6 7 8 9; do # the middle value of each column
			m+=("$(awk -v who="$who" -v c="$col" '$1 == who { print $c }' "$work/rounds" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')")
		done
		printf '%-10s %10s %12s %12s %10s %10s %10s %8s %8s\n' "$who" "${m[@]}"
	done
fi
echo
# Creates are traced at CONNS connections, as loaded: how many share a
# batch's write and sync depends on it.
traced=8
[ "$MODE" = list ] || traced=$CONNS
echo "system calls per answer (strace -c -f, $traced connections for 3 s):"
for who in $contestants; do
	start "$who"
	strace -c -f -qq -o "$work/$who.strace" -p "$server" &
	tracer=$!
	sleep 0.5 # strace attaches to every thread
	kill -0 "$tracer" 2>/dev/null || { say "bench/gap.sh: strace could not attach to the server"; exit 1; }
	answers=$(load "$traced" 3s | awk '/requests in/ { print $1 }')
	kill -INT "$tracer"
	wait "$tracer" 2>/dev/null || true
	echo "$who ($answers answers):"
	awk -v n="$answers" '$1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" { printf "  %-16s %7.3f\n", $NF, $4 / n }' "$work/$who.strace" | sort -k2 -nr | sed -n 1,12p
done
