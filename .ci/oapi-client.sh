#!/usr/bin/env bash
# The OpenAPI 3.0 document works with the generator it exists for: generate
# a Go client from `petstore -openapi-3.0` with a pinned oapi-codegen, in a
# throwaway module (never petstore's go.mod), build .ci/oapiclient against
# it, and run it against the built binary (list, create, get, 400, 401,
# 404, 409). Needs the Go module proxy, like staticcheck.
set -euo pipefail
cd "$(dirname "$0")/.."
OAPI_CODEGEN=github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

go build -o "$work/petstore" .
"$work/petstore" -openapi-3.0 > "$work/openapi-3.0.json"
mkdir -p "$work/mod/client"
cp .ci/oapiclient/main.go "$work/mod/"
(
	cd "$work/mod"
	go mod init example.com/oapiclient >/dev/null 2>&1
	go run "$OAPI_CODEGEN" -generate types,client -package client "$work/openapi-3.0.json" > client/client.go
	go mod tidy >/dev/null 2>&1
	go build -o "$work/oapiclient" .
)

key=oapi-client-check-key-0123456789
PETSTORE_DATA=:memory: PETSTORE_ADDR=127.0.0.1:0 PETSTORE_API_KEYS=$key "$work/petstore" 2> "$work/petstore.log" &
pid=$!
addr=""
for _ in $(seq 100); do
	addr=$(grep -o '"msg":"listening","addr":"[^"]*"' "$work/petstore.log" | sed 's/.*"addr":"\([^"]*\)"/\1/' || true)
	[ -n "$addr" ] && break
	kill -0 "$pid" || { cat "$work/petstore.log" >&2; exit 1; }
	sleep 0.1
done
[ -n "$addr" ] || { echo "petstore did not start" >&2; cat "$work/petstore.log" >&2; exit 1; }
"$work/oapiclient" "http://$addr/v1" "$key"
