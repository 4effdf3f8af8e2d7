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
. .ci/start-petstore.sh
start_petstore "$work/petstore" "$key" "$work/petstore.log"
"$work/oapiclient" "http://$addr/v1" "$key"
