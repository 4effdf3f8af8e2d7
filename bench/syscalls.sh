#!/usr/bin/env bash
# make bench-syscalls: write system calls per answer, petstore against the
# bare server (bench/baseline) answering the same bytes, counted with strace
# on the server while curl sends N requests one after the other on one
# keep-alive connection. Counts do not depend on the machine's load: each
# row is a fact. Rows: the list of 100, a page of 100, a look-up by name, a
# get by id, a create in memory and a durable create (with its pwrite64 and
# fdatasync), over HTTP/1.1 and HTTP/2 (TLS). Writes to the socket are
# counted apart from those to files (the access log, the journal).
#
#   make bench-syscalls          # N=300
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-300}
PORT=${PORT:-18090}
NAME=bench-syscalls
. bench/pair.sh strace curl openssl awk
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# start_petstore SCHEME DATA: petstore with every feature on, its access log
# to a file.
start_petstore() {
	stop
	local tls=()
	[ "$1" = https ] && tls=(PETSTORE_TLS_CERT_FILE="$work/cert.pem" PETSTORE_TLS_KEY_FILE="$work/key.pem")
	env PETSTORE_ADDR="127.0.0.1:$PORT" PETSTORE_API_KEYS="$KEY" PETSTORE_DATA="$2" "${tls[@]}" \
		"$work/petstore" 2>"$work/access.log" &
	server=$!
	await_up "$1://127.0.0.1:$PORT/healthz"
}
# start_baseline SCHEME FILE: the bare server answering FILE's bytes.
start_baseline() {
	stop
	local tls=()
	[ "$1" = https ] && tls=(BASELINE_TLS_CERT_FILE="$work/cert.pem" BASELINE_TLS_KEY_FILE="$work/key.pem")
	env BASELINE_ADDR="127.0.0.1:$PORT" BASELINE_LIST="$2" "${tls[@]}" "$work/baseline" 2>/dev/null &
	server=$!
	await_up "$1://127.0.0.1:$PORT/healthz"
}
# count SCHEME METHOD PATH: N requests on one connection, the server under
# strace; prints "socket_writes file_writes pwrite64 fdatasync" per request.
count() {
	local scheme=$1 method=$2 path=$3 proto=(--http1.1)
	[ "$scheme" = https ] && proto=(--http2)
	local args=()
	for i in $(seq 1 "$N"); do
		args+=(--next -fsk "${proto[@]}" -o /dev/null -H "Authorization: Bearer $KEY")
		if [ "$method" = POST ]; then
			args+=(-H 'Content-Type: application/json' -d "{\"name\":\"bench-$RANDOM-$i\"}")
		fi
		args+=("$scheme://127.0.0.1:$PORT$path")
	done
	curl -sk "${proto[@]}" -o /dev/null "$scheme://127.0.0.1:$PORT/healthz" # the server has settled
	strace -f -y -qq -e trace=write,writev,sendto,sendmsg,pwrite64,fdatasync,fsync -o "$work/trace" -p "$server" &
	local tracer=$!
	sleep 0.5 # strace attaches to every thread
	kill -0 "$tracer" 2>/dev/null || { say "bench-syscalls: strace could not attach to the server"; exit 1; }
	curl "${args[@]:1}" || { say "bench-syscalls: a $method $path was not answered with success"; exit 1; }
	sleep 0.2
	kill -INT "$tracer"
	wait "$tracer" 2>/dev/null || true
	awk -v n="$N" '
		/^[0-9]+ +(write|writev|sendto|sendmsg)\(/ { if ($0 ~ /socket:|TCP/) sock++; else file++ }
		/^[0-9]+ +pwrite64\(/ { pw++; file++ }
		/^[0-9]+ +(fdatasync|fsync)\(/ { sync++ }
		END { printf "%.2f %.2f %.2f %.2f\n", sock / n, file / n, pw / n, sync / n }' "$work/trace"
}

printf '%-26s %-8s %9s %9s %9s %9s %9s\n' answer proto bytes petstore bare "file/ans" "sync/ans"
for scheme in http https; do
	proto=HTTP/1.1
	[ "$scheme" = https ] && proto=HTTP/2
	awk 'BEGIN { print "{\"format\":\"petstore-categories\",\"version\":1}"
		for (i = 1; i <= 200; i++) printf "{\"id\":%d,\"name\":\"category-%011d\",\"description\":\"a category of the benchmark\"}\n", i, i }' >"$work/cats.jsonl"
	for row in "list of 100|/v1/categories?limit=100&after=100" "page of 100|/v1/categories?limit=100" \
		"look-up by name|/v1/categories?name=category-00000000042" "get by id|/v1/categories/42"; do
		IFS='|' read -r name path <<<"$row"
		[ "$name" = "list of 100" ] && path=/v1/categories && awk 'NR == 1 || NR > 101' "$work/cats.jsonl" >"$work/list100.jsonl"
		data=$work/cats.jsonl
		[ "$name" = "list of 100" ] && data=$work/list100.jsonl
		start_petstore "$scheme" "$data"
		curl -fsk -H "Authorization: Bearer $KEY" "$scheme://127.0.0.1:$PORT$path" >"$work/answer"
		read -r sock file _ _ < <(count "$scheme" GET "$path")
		start_baseline "$scheme" "$work/answer"
		read -r bare _ _ _ < <(count "$scheme" GET /v1/categories)
		printf '%-26s %-8s %9d %9s %9s %9s %9s\n' "$name" "$proto" "$(wc -c <"$work/answer")" "$sock" "$bare" "$file" -
	done
	for data in :memory: journal; do
		name="create in memory"
		[ "$data" = journal ] && name="create durable" && data=$work/create.jsonl && rm -f "$data"
		start_petstore "$scheme" "$data"
		read -r sock file pw sync < <(count "$scheme" POST /v1/categories)
		start_baseline "$scheme" /dev/null
		read -r bare _ _ _ < <(count "$scheme" POST /v1/categories)
		printf '%-26s %-8s %9s %9s %9s %9s %9s\n' "$name" "$proto" - "$sock" "$bare" "$file" "$sync"
	done
done
say "file/ans: writes to files (access log, journal: pwrite64 included) per answer; sync/ans: fdatasync per create"
