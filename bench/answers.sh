#!/usr/bin/env bash
# bench/answers.sh [list|page|create|durable]: where petstore's instructions per answer
# go beyond the bare server's (bench/baseline), group by group and function
# by function. Each server runs under valgrind's callgrind (which counts
# instructions, so the figures do not move with the machine's load), is
# warmed up, then answers N requests from curl (8 connections; 20,000)
# while callgrind counts; bench/answercost sums each
# instruction into the function of the binary that holds it and prints the
# tables of docs/performance.md. Needs valgrind and curl.
#
#   bench/answers.sh            # the list of 100 (a minute or two)
#   bench/answers.sh page       # a page of 100 from 100,000 categories
#                               # (the bare server writes the same bytes)
#   bench/answers.sh create     # creates, petstore on :memory:
#   bench/answers.sh durable    # creates, petstore on a journal (the bare
#                               # server's stay in memory)
#   BINARY=/tmp/old.bin bench/answers.sh   # another petstore build
#
# Only the servers' user-space instructions are counted: the kernel's
# work (half of a list's CPU time) is bench/gap.sh's. Valgrind hides the
# CPU's SHA instructions, so the API key's SHA-256 counts here about ten
# times the instructions it takes on a CPU that has them.
set -euo pipefail
[ -z "${TRACE:-}" ] || set -x
cd "$(dirname "$0")/.."
SCENARIO=${1:-list}
N=${N:-20000}
PORT=${PORT:-18098}
NAME=bench/answers.sh
. bench/pair.sh valgrind callgrind_control curl awk
# BINARY=FILE profiles that petstore binary (an older build, say)
# in place of the working tree's.
[ -z "${BINARY:-}" ] || cp "$BINARY" "$work/petstore"
case $SCENARIO in
list | page | create | durable) ;;
*) say "usage: bench/answers.sh [list|page|create|durable]"; exit 2 ;;
esac
awk 'BEGIN { print "{\"format\":\"petstore-categories\",\"version\":1}"
	for (i = 1; i <= 100; i++) printf "{\"id\":%d,\"name\":\"category-%011d\"}\n", i, i }' >"$work/cats.jsonl"
url="http://127.0.0.1:$PORT/v1/categories"
case $SCENARIO in
list) data="$work/cats.jsonl" ;;
page)
	awk 'BEGIN { print "{\"format\":\"petstore-categories\",\"version\":1}"
		for (i = 1; i <= 100000; i++) printf "{\"id\":%d,\"name\":\"category-%011d\"}\n", i, i }' >"$work/big.jsonl"
	data="$work/big.jsonl"
	url="$url?limit=100&after=50000"
	;;
create) data=:memory: ;;
durable) data="$work/durable.jsonl" ;;
esac
# requests FIRST COUNT: a curl config of COUNT requests, creates of the
# names FIRST... for create. curl, not wrk: wrk ends with requests under
# way, and a write to a connection it closed raises SIGPIPE, which
# callgrind cannot follow.
requests() {
	(
		umask 077 # the config holds the (throwaway) key
		awk -v first="$1" -v count="$2" -v scenario="$SCENARIO" -v url="$url" -v key="$KEY" 'BEGIN {
			for (i = first; i < first + count; i++) {
				if (i > first)
					print "next"
				# next resets every option, so each request has its own
				printf "url = \"%s\"\noutput = \"/dev/null\"\nwrite-out = \"%%{http_code}\\n\"\nheader = \"Authorization: Bearer %s\"\n", url, key
				if (scenario == "create" || scenario == "durable")
					printf "header = \"Content-Type: application/json\"\ndata = \"{\\\"name\\\":\\\"load-%d\\\"}\"\n", i
			}
		}' >"$work/requests"
	)
}
load() { # FIRST COUNT: sends them on 8 connections, prints the answers that succeeded
	requests "$1" "$2"
	curl -s --no-progress-meter --parallel --parallel-max 8 -K "$work/requests" |
		awk '/^2/ { n++ } !/^2/ { bad++ } END { if (bad) print bad " answers failed" > "/dev/stderr"; print n + 0 }'
}
profile() { # petstore | baseline
	# asyncpreemptoff: callgrind cannot follow the runtime's preemption
	# signals. GOGC is left as each server has it.
	if [ "$1" = petstore ]; then
		PETSTORE_ADDR="127.0.0.1:$PORT" PETSTORE_API_KEYS="$KEY" PETSTORE_DATA="$data" GODEBUG=asyncpreemptoff=1 \
			valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$work/$1.cg" "$work/petstore" >/dev/null 2>"$work/$1.log" &
	else
		BASELINE_ADDR="127.0.0.1:$PORT" BASELINE_LIST="$work/list.json" GODEBUG=asyncpreemptoff=1 \
			valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$work/$1.cg" "$work/baseline" >/dev/null 2>"$work/$1.log" &
	fi
	server=$!
	await_up "http://127.0.0.1:$PORT/healthz" 200 "$work/$1.log"
	# The bare server answers every GET with these bytes, a page's too.
	[ "$1" = baseline ] || curl -fs -H "Authorization: Bearer $KEY" "$url" >"$work/list.json"
	load 1 2000 >/dev/null # warm up: connections, buffers, the heap's size
	callgrind_control -z "$server" >/dev/null 2>&1
	answers=$(load 2001 "$N")
	callgrind_control -d "$server" >/dev/null 2>&1
	stop
	say "$1: $answers answers counted"
	echo "$answers" >"$work/$1.answers"
}
profile petstore
profile baseline
n=$(cat "$work/petstore.answers")
m=$(cat "$work/baseline.answers")
go run ./bench/answercost -n "$n" -m "$m" \
	"petstore=$work/petstore.cg.1,$work/petstore" "bare server=$work/baseline.cg.1,$work/baseline"
