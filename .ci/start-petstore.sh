# Sourced by the client checks: start_petstore BINARY KEY LOG starts the
# binary on a free loopback port with an in-memory store and the key, sets
# pid and addr, and fails with its log if it does not say it is listening
# within 10 s. The caller's EXIT trap kills $pid. (grep -s: the log may not
# exist yet when the first look comes.)
start_petstore() {
	local bin=$1 key=$2 log=$3
	# Only these PETSTORE_ variables: not CI's PETSTORE_TEST_* nor a developer's own.
	env $(compgen -e | grep '^PETSTORE_' | sed 's/^/-u /') \
		PETSTORE_DATA=:memory: PETSTORE_ADDR=127.0.0.1:0 PETSTORE_API_KEYS="$key" "$bin" 2> "$log" &
	pid=$!
	addr=""
	for _ in $(seq 100); do
		addr=$(grep -so '"msg":"listening","addr":"[^"]*"' "$log" | sed 's/.*"addr":"\([^"]*\)"/\1/' || true)
		[ -n "$addr" ] && return 0
		kill -0 "$pid" || { cat "$log" >&2; return 1; }
		sleep 0.1
	done
	echo "petstore did not start" >&2
	cat "$log" >&2
	return 1
}
