#!/usr/bin/env bash
# The OpenAPI 3.1 document works with the generators TypeScript clients use:
# generate types from `petstore -openapi` with a pinned openapi-typescript,
# in a throwaway directory (nothing of it in the repository), compile
# .ci/tsclient/main.ts against them and openapi-fetch with tsc --strict,
# and run it with Node against the built binary: every operation of the
# document, list, create, get, 400, 401, 404, 409 and /livez as documented.
# Needs npm and its registry.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

go build -o "$work/petstore" .
"$work/petstore" -openapi > "$work/openapi.json"
cp .ci/tsclient/main.ts .ci/tsclient/tsconfig.json "$work/"
(
	cd "$work"
	printf '{"name":"tsclient","private":true,"type":"module"}\n' > package.json
	npm install --no-audit --no-fund --loglevel=error \
		openapi-typescript@7.13.0 openapi-fetch@0.17.0 typescript@5.9.3 @types/node@20.19.25 >/dev/null
	npx --no-install openapi-typescript openapi.json -o schema.ts
	npx --no-install tsc -p .
)

key=ts-client-check-key-0123456789
. .ci/start-petstore.sh
start_petstore "$work/petstore" "$key" "$work/petstore.log"
node "$work/out/main.js" "http://$addr" "$key"
