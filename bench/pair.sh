# bench/pair.sh: what the bench scripts that run petstore beside another server share. Source it
# with NAME set (for messages) and the tools the script needs as arguments:
# it checks them, builds petstore and the baseline into a temporary
# directory $work (removed on exit), sets KEY (never printed), and stop
# stops the server whose pid is in $server; await_up waits for it to answer.
say() { printf '%s\n' "$*" >&2; }
for tool in "$@"; do
	command -v "$tool" >/dev/null 2>&1 || { say "$NAME: $tool is required (apt-get install $tool)"; exit 1; }
done
work=$(mktemp -d)
server=""
# end PID: stops process PID (none when empty) and waits for it.
end() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
stop() {
	end "$server"
	server=""
}
# await_up URL [TRIES [LOG]]: waits, TRIES tenths of a second at most (100),
# until URL (a server's /healthz) answers; exits, with the end of LOG, if
# the process $server ends first or it does not answer in time.
await_up() {
	local tries=${2:-100}
	for _ in $(seq 1 "$tries"); do
		curl -fsk -o /dev/null "$1" && return 0
		kill -0 "$server" 2>/dev/null || break
		sleep 0.1
	done
	say "$NAME: the server did not answer $1 within $((tries / 10)) s, or exited"
	[ -z "${3:-}" ] || tail -n 5 "$3" >&2
	exit 1
}
trap 'stop; rm -rf "$work"' EXIT
say "building petstore and the baseline"
go build -o "$work/petstore" .
go build -o "$work/baseline" ./bench/baseline
KEY="bench-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
