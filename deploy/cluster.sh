#!/usr/bin/env bash
# A local etcd cluster with two petstores on it, in one command:
#
#   deploy/cluster.sh [DIR]        start 3 etcd members and 2 petstores on
#                                  127.0.0.1, print their URLs, and stop them
#                                  all on Ctrl-C
#   deploy/cluster.sh stop DIR     stop the ones a cluster.sh left running
#                                  (e.g. started with & or killed uncleanly)
#   deploy/cluster.sh leader DIR   print the pid of the etcd member that is
#                                  the leader now (its name goes to stderr)
#
# While it serves, a process that exits (an etcd member killed to watch a
# failover, say) is reported by name, and the others keep running; the
# script ends when every process has exited, or on Ctrl-C.
#
# DIR keeps everything: etcd's data, the logs, the API key (api-key, mode
# 600), the ports chosen at first start, and `env` (mode 600), a file to
# source for INSTANCE_A, INSTANCE_B, PETSTORE_API_KEYS, PETSTORE_DATA (the
# cluster, so that `petstore -export` reads it) and ETCDCTL_ENDPOINTS. Started
# again on the same DIR, the cluster comes back with its data and ports.
# Without DIR, a temporary directory is used (and kept, for the logs).
#
# Needs etcd (Debian: apt-get install etcd-server), curl, and go to build
# petstore. ETCD=/path/to/etcd picks another etcd binary, PETSTORE=/path/to/
# petstore a petstore already built.
set -euo pipefail
# DIR, PETSTORE and ETCD may be relative to where this is run from, so the
# script stays there; only the build runs in the repository.
root=$(cd "$(dirname "$0")/.." && pwd)

say() { printf '%s\n' "$*" >&2; }

# stop_pids DIR: stop the processes listed in DIR/pids, which only this
# script writes, and nothing else; wait (at most 10 s) until they are gone.
# A line of DIR/pids is "PID NAME [CLIENT_URL]".
stop_pids() {
	local dir=$1 pid what url alive
	local -a pids=() names=()
	[ -f "$dir/pids" ] || return 0
	while read -r pid what url; do pids+=("$pid"); names+=("$what"); done <"$dir/pids"
	rm -f "$dir/pids"
	for i in "${!pids[@]}"; do
		kill "${pids[$i]}" 2>/dev/null && say "stopped ${names[$i]} (pid ${pids[$i]})"
	done
	for _ in $(seq 1 100); do
		alive=0
		for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		[ "$alive" -eq 0 ] && return 0
		sleep 0.1
	done
	say "cluster.sh: still running 10 s after SIGTERM: ${pids[*]}"
}

# leader DIR: print the pid of the etcd member that leads now, and its name
# on stderr. Each member's JSON gateway says its own id and the leader's.
leader() {
	local dir=$1 pid what url status
	[ -f "$dir/pids" ] || { say "cluster.sh: no cluster runs in $dir"; return 1; }
	while read -r pid what url; do
		[ -n "$url" ] || continue
		status=$(curl -fs --max-time 2 -X POST -d '{}' "$url/v3/maintenance/status") || continue
		if [ "$(json_member "$status" member_id)" = "$(json_member "$status" leader)" ]; then
			say "$what ($url) leads"
			echo "$pid"
			return 0
		fi
	done <"$dir/pids"
	say "cluster.sh: no member of $dir answers as leader"
	return 1
}
# json_member JSON NAME: the first string value of member NAME.
json_member() { printf '%s' "$1" | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"; }

if [ "${1:-}" = "leader" ]; then
	[ -n "${2:-}" ] || { say "usage: deploy/cluster.sh leader DIR"; exit 2; }
	leader "$2"
	exit
fi

if [ "${1:-}" = "stop" ]; then
	[ -n "${2:-}" ] || { say "usage: deploy/cluster.sh stop DIR"; exit 2; }
	# A cluster.sh still serving DIR stops its own processes on SIGTERM;
	# wait for it, then for anything it left.
	if [ -f "$2/script.pid" ] && script=$(cat "$2/script.pid") && kill "$script" 2>/dev/null; then
		for _ in $(seq 1 150); do kill -0 "$script" 2>/dev/null || break; sleep 0.1; done
	fi
	stop_pids "$2"
	rm -f "$2/script.pid"
	exit 0
fi

ETCD=${ETCD:-etcd}
command -v "$ETCD" >/dev/null 2>&1 || { say "cluster.sh: $ETCD not found: apt-get install etcd-server, or set ETCD"; exit 1; }
for tool in curl go od; do
	command -v "$tool" >/dev/null 2>&1 || { say "cluster.sh: $tool is required"; exit 1; }
done

DIR=${1:-$(mktemp -d -t petstore-cluster.XXXXXX)}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
if [ -f "$DIR/script.pid" ] && kill -0 "$(cat "$DIR/script.pid")" 2>/dev/null; then
	say "cluster.sh: another cluster.sh serves $DIR (pid $(cat "$DIR/script.pid")); stop it first: deploy/cluster.sh stop $DIR"
	exit 1
fi
[ -f "$DIR/pids" ] && stop_pids "$DIR" # leftovers of an earlier run on DIR
echo $$ >"$DIR/script.pid"

# port_free PORT: nothing accepts connections on it.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Ports come from below the kernel's ephemeral range (32768-60999 on
# Linux), which it hands to outgoing connections: one taken from inside it
# could be given away between the pick and etcd's bind.
ephemeral_low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$ephemeral_low" -gt 12000 ] 2>/dev/null || ephemeral_low=32768
pick_port() {
	local p
	for _ in $(seq 1 100); do
		p=$((10000 + RANDOM % (ephemeral_low - 10000)))
		if port_free "$p" && ! grep -qw "$p" "$DIR/ports.new" 2>/dev/null; then
			echo "$p" | tee -a "$DIR/ports.new"
			return
		fi
	done
	say "cluster.sh: no free port found"
	exit 1
}
# The ports are chosen once per DIR: etcd's data remembers its peers' URLs.
if [ ! -f "$DIR/ports" ]; then
	rm -f "$DIR/ports.new"
	{
		for i in 1 2 3; do echo "CLIENT$i=$(pick_port)"; echo "PEER$i=$(pick_port)"; done
		echo "HTTP_A=$(pick_port)"
		echo "HTTP_B=$(pick_port)"
	} >"$DIR/ports.tmp"
	mv "$DIR/ports.tmp" "$DIR/ports"
	rm -f "$DIR/ports.new"
fi
# shellcheck disable=SC1091
. "$DIR/ports"

if [ ! -f "$DIR/api-key" ]; then
	(umask 077 && printf 'local-%s\n' "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" >"$DIR/api-key")
fi
KEY=$(cat "$DIR/api-key")
for port in "$CLIENT1" "$PEER1" "$CLIENT2" "$PEER2" "$CLIENT3" "$PEER3" "$HTTP_A" "$HTTP_B"; do
	port_free "$port" || { say "cluster.sh: port $port (chosen for $DIR) is in use; stop what holds it"; exit 1; }
done

cleanup() {
	stop_pids "$DIR"
	rm -f "$DIR/script.pid"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "${PETSTORE:-}" ]; then
	cp "$PETSTORE" "$DIR/petstore"
else
	say "building petstore"
	(cd "$root" && go build -o "$DIR/petstore" .)
fi

INITIAL="m1=http://127.0.0.1:$PEER1,m2=http://127.0.0.1:$PEER2,m3=http://127.0.0.1:$PEER3"
ENDPOINTS="127.0.0.1:$CLIENT1,127.0.0.1:$CLIENT2,127.0.0.1:$CLIENT3"
for i in 1 2 3; do
	client_var="CLIENT$i" peer_var="PEER$i"
	client="http://127.0.0.1:${!client_var}" peer="http://127.0.0.1:${!peer_var}"
	"$ETCD" --name "m$i" --data-dir "$DIR/m$i" \
		--listen-client-urls "$client" --advertise-client-urls "$client" \
		--listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
		--initial-cluster "$INITIAL" --initial-cluster-token petstore-local \
		--initial-cluster-state new >"$DIR/m$i.log" 2>&1 &
	echo "$! etcd-m$i $client" >>"$DIR/pids"
	disown $! # this script watches it (below); bash reports no job line when it is killed
done

# exited_now: say which process of DIR/pids has exited, with the end of
# its log, and fail; succeed while all run.
exited_now() {
	local pid what url log
	while read -r pid what url; do
		kill -0 "$pid" 2>/dev/null && continue
		log="$DIR/${what#etcd-}.log"
		say "cluster.sh: $what (pid $pid) exited at start; the end of $log:"
		tail -n 5 "$log" | sed 's/^/  /' >&2
		return 0
	done <"$DIR/pids"
	return 1
}

say "waiting for the etcd cluster"
for _ in $(seq 1 300); do
	exited_now && exit 1
	healthy=0
	for port in "$CLIENT1" "$CLIENT2" "$CLIENT3"; do
		curl -fs --max-time 1 "http://127.0.0.1:$port/health" | grep -q '"health":"true"' && healthy=$((healthy + 1))
	done
	[ "$healthy" -eq 3 ] && break
	sleep 0.1
done
[ "$healthy" -eq 3 ] || { say "cluster.sh: etcd not healthy within 30 s; see $DIR/m*.log"; exit 1; }

for name in A B; do
	port_var="HTTP_$name"
	PETSTORE_ADDR="127.0.0.1:${!port_var}" PETSTORE_API_KEYS_FILE="$DIR/api-key" \
		PETSTORE_DATA="etcd://$ENDPOINTS/petstore" "$DIR/petstore" 2>"$DIR/petstore-$name.log" &
	echo "$! petstore-$name" >>"$DIR/pids"
	disown $!
done
for port in "$HTTP_A" "$HTTP_B"; do
	for _ in $(seq 1 100); do
		curl -fs --max-time 1 -o /dev/null "http://127.0.0.1:$port/healthz" && break
		exited_now && exit 1
		sleep 0.1
	done
	curl -fs --max-time 1 -o /dev/null "http://127.0.0.1:$port/healthz" || { say "cluster.sh: petstore on $port did not start; see $DIR/petstore-*.log"; exit 1; }
done

cat >"$DIR/env" <<EOF
export INSTANCE_A=http://127.0.0.1:$HTTP_A
export INSTANCE_B=http://127.0.0.1:$HTTP_B
export PETSTORE_API_KEYS=$KEY
export PETSTORE_DATA=etcd://$ENDPOINTS/petstore
export ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$ENDPOINTS
EOF
chmod 600 "$DIR/env"

cat <<EOF
petstore on etcd is running. Everything lives in $DIR.
  etcd members:  $ENDPOINTS  (logs: $DIR/m1.log …)
  petstore A:    http://127.0.0.1:$HTTP_A  (log: $DIR/petstore-A.log)
  petstore B:    http://127.0.0.1:$HTTP_B  (log: $DIR/petstore-B.log)
  API key:       $KEY  (also in $DIR/api-key)
In another shell:
  . $DIR/env
  curl -s -X POST -H "Authorization: Bearer \$PETSTORE_API_KEYS" -H 'Content-Type: application/json' -d '{"name":"dog"}' \$INSTANCE_A/v1/categories
  curl -s -H "Authorization: Bearer \$PETSTORE_API_KEYS" \$INSTANCE_B/v1/categories
The etcd leader's pid: deploy/cluster.sh leader $DIR
Ctrl-C here stops all five processes (or: deploy/cluster.sh stop $DIR).
EOF

# Serve until interrupted or until every process has exited. One that exits
# (a member killed to watch a failover) is reported, and the others go on.
declare -A gone=()
while :; do
	alive=0
	while read -r pid what url; do
		if kill -0 "$pid" 2>/dev/null; then
			alive=$((alive + 1))
		elif [ -z "${gone[$pid]:-}" ]; then
			gone[$pid]=1
			say "cluster.sh: $what (pid $pid) exited; the others keep running (log: $DIR/${what#etcd-}.log)"
			tail -n 2 "$DIR/${what#etcd-}.log" | sed 's/^/  /' >&2
		fi
	done <"$DIR/pids"
	[ "$alive" -gt 0 ] || break
	sleep 1 &
	wait $! || true
done
say "cluster.sh: every process has exited (logs in $DIR)"
