# petstore: `make test` is what CI runs. Standard library only.
GO ?= go

.PHONY: run build test cover fmt-check vet lint-api bench bench-load bench-syscalls bench-bodies pgo cluster image faults faults-all

run:
	$(GO) run .

build:
	$(GO) build -o petstore .

# gofmt and vet checks, then every test (seed corpora of the fuzz tests
# included) under the race detector, then each benchmark once, as a smoke
# test, so that they cannot rot, and the CPU profile of builds for
# default.pgo (-tags cpuprofile). The tests run through testsummary, which
# prints go test's usual output and then a SKIPPED: block naming every
# group of skipped tests and why (etcd or promtool not installed, …).
test: fmt-check vet
	GO=$(GO) $(GO) run ./internal/cmd/testsummary -race -count=1 -timeout=180s ./...
	$(GO) test -run '^$$' -bench . -benchtime=1x -count=1 -timeout=180s ./...
	$(GO) vet -tags cpuprofile ./internal/cpuprofile && $(GO) test -race -tags cpuprofile -count=1 ./internal/cpuprofile

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

cover:
	$(GO) test -count=1 -coverprofile=cover.out ./...
	$(GO) tool cover -func=cover.out | tail -n 1

# Lint the OpenAPI documents the service serves (as `petstore -openapi` and
# `petstore -openapi-3.0` write them) with a pinned Redocly CLI, fetched by
# npx; it lints each as the version it declares, 3.1 and 3.0.3. Needs
# Node.js and npm.
REDOCLY ?= @redocly/cli@2.77.0
lint-api:
	@mkdir -p build
	$(GO) run . -openapi > build/openapi.json
	$(GO) run . -openapi-3.0 > build/openapi-3.0.json
	npx --yes $(REDOCLY) lint build/openapi.json build/openapi-3.0.json

# Go benchmarks (not part of `make test`, which runs each once as a smoke test).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The fault harness (faults/, a module of its own; docs/reliability.md):
# petstore on a journal with disk errors injected by strace and kill -9,
# and on a 3-member etcd cluster with 3 petstores behind per-member TCP
# proxies, every answer checked against what was stored. Needs Linux,
# root, etcd and strace. `make faults` runs the short set (about 2.5 min;
# CI runs it), `make faults-all` every scenario (about 6 min).
# FAULTS_FLAGS adds flags: -seed N, -out DIR, -scenarios a,b.
FAULTS_FLAGS ?=
faults: build
	cd faults && $(GO) vet ./... && $(GO) test -count=1 ./...
	$(GO) -C faults run . -bin $(CURDIR)/petstore $(FAULTS_FLAGS)

faults-all: build
	$(GO) -C faults run . -bin $(CURDIR)/petstore -set all $(FAULTS_FLAGS)

# Load test: petstore against a bare net/http baseline with wrk, each pinned
# to its own CPU; prints a table of medians and target ratios (bench/load.sh).
bench-load:
	bench/load.sh

# Write system calls per answer, petstore against the bare server answering
# the same bytes, counted with strace (bench/syscalls.sh; Linux).
bench-syscalls:
	bench/syscalls.sh

# default.pgo, the profile go build uses for profile-guided optimisation,
# taken from petstore under the load mix of bench-load (bench/pgo.sh).
pgo:
	bench/pgo.sh

# Peak memory of the binary while 1,000 connections each POST a 1 MiB body
# at once (bench/bodies; Linux, reads /proc/PID/status).
bench-bodies: build
	$(GO) run ./bench/bodies -bin ./petstore

# A local 3-member etcd cluster with two petstores on it (deploy/cluster.sh);
# Ctrl-C stops everything. DIR keeps its data between runs.
DIR ?= /tmp/petstore-cluster
cluster:
	deploy/cluster.sh $(DIR)

# The container image (Containerfile), tagged $(IMAGE), built with podman, or
# docker when podman is missing. The binary is built here (static: CGO off)
# and copied in with the host's CA bundle, the first of CA_BUNDLES found.
# PODMAN_FLAGS go before `build` (e.g. --cgroup-manager cgroupfs).
IMAGE ?= localhost/petstore:latest
CONTAINER_TOOL ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
CA_BUNDLES ?= /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/ca-bundle.pem /etc/ssl/cert.pem
CA_BUNDLE ?= $(firstword $(wildcard $(CA_BUNDLES)))
PODMAN_FLAGS ?=
image:
	@[ -n "$(CA_BUNDLE)" ] || { echo "make image: no CA bundle in $(CA_BUNDLES); set CA_BUNDLE=FILE"; exit 1; }
	rm -rf build/image
	mkdir -p build/image/volume/data
	chmod 0700 build/image/volume/data
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o build/image/petstore .
	cp $(CA_BUNDLE) build/image/ca-certificates.crt
	$(CONTAINER_TOOL) $(PODMAN_FLAGS) build -f Containerfile -t $(IMAGE) .
