package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"petstore/internal/etcd/etcdtest"
	"petstore/internal/openapi/openapitest"
	"petstore/internal/petstoretest"
	"petstore/internal/store"
	"petstore/internal/testkit"
)

// TestMain runs the package's tests and removes the binary built for them
// (internal/petstoretest); after a passing run it checks that every status a
// handler test saw a route answer is documented for that operation in the
// OpenAPI document (observedStatuses).
// More parallel tests run at once than GOMAXPROCS (testkit.RaiseParallel):
// most of the long ones wait on the binary, etcd members, Chromium or
// podman.
func TestMain(m *testing.M) {
	flag.Parse()
	testkit.RaiseParallel(4)
	petstoretest.HideKeys(e2eKey, testKey, testKey2)
	code := m.Run()
	petstoretest.RemoveBinary()
	etcdtest.StopShared()
	if code == 0 {
		missing, checked, err := undocumentedStatuses()
		switch {
		case err != nil:
			fmt.Fprintln(os.Stderr, "FAIL: checking observed statuses:", err)
			code = 1
		case len(missing) > 0:
			fmt.Fprintln(os.Stderr, "FAIL: statuses observed in tests but not documented in the OpenAPI document:\n\t"+strings.Join(missing, "\n\t"))
			code = 1
		case checked == 0 && wholeSuiteRan():
			fmt.Fprintln(os.Stderr, "FAIL: the whole suite ran but no status was observed: is the access log still read?")
			code = 1
		}
	}
	os.Exit(code)
}

// Observed statuses. Every handler test's access log is read when the test
// ends (newTestEnv registers it), and TestMain checks, after all tests ran,
// that each status a route answered with is documented for its operation.
// A pattern without a method is a path's 405 handler: every operation of
// that path must document 405. Out of its sight: tests that send their log
// elsewhere (withLogTo, withAccessLogTo: benchmarks and log routing tests)
// and the end-to-end tests that go through run.
var observedStatuses = struct {
	sync.Mutex
	byRoute map[string]map[int]bool // log "route" → statuses
}{byRoute: map[string]map[int]bool{}}

func observeAccessLog(logs []byte) {
	observedStatuses.Lock()
	defer observedStatuses.Unlock()
	for line := range bytes.Lines(logs) {
		var rec struct {
			Msg    string `json:"msg"`
			Route  string `json:"route"`
			Status int    `json:"status"`
		}
		if json.Unmarshal(line, &rec) != nil || rec.Msg != "request" || rec.Route == "" {
			continue
		}
		if observedStatuses.byRoute[rec.Route] == nil {
			observedStatuses.byRoute[rec.Route] = map[int]bool{}
		}
		observedStatuses.byRoute[rec.Route][rec.Status] = true
	}
}

// undocumentedStatuses lists the observed statuses the document does not
// give for their operation.
func undocumentedStatuses() ([]string, int, error) {
	d := deps{store: store.NewMemory(store.Options{}), pets: deprecation{at: beforePetsSunset, sunset: afterPetsSunset}}
	table := routes(d, nil, nil, nil)
	_, body, err := newServer(d)
	if err != nil {
		return nil, 0, err
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, 0, err
	}
	documented := func(method, path string, status int) bool {
		docPath, inBase := strings.CutPrefix(path, "/v1")
		if !inBase {
			docPath = path
		}
		return openapitest.At(doc, "paths", docPath, strings.ToLower(method), "responses", strconv.Itoa(status)) != nil
	}

	observedStatuses.Lock()
	defer observedStatuses.Unlock()
	var missing []string
	checked := 0
	for pattern, statuses := range observedStatuses.byRoute {
		method, path, hasMethod := strings.Cut(pattern, " ")
		for status := range statuses {
			for _, rt := range table {
				if hasMethod && (rt.method != method || rt.path != path) || !hasMethod && rt.path != pattern {
					continue // not this route, or a route only a test registers
				}
				checked++
				if !documented(rt.method, rt.path, status) {
					missing = append(missing, fmt.Sprintf("%s %s answered %d (seen as route %q)", rt.method, rt.path, status, pattern))
				}
			}
		}
	}
	slices.Sort(missing)
	return missing, checked, nil
}

// wholeSuiteRan reports whether go test ran every test of the package: no
// -run, -skip, -list or -short chose some or none.
func wholeSuiteRan() bool {
	for _, name := range []string{"test.run", "test.skip", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}
