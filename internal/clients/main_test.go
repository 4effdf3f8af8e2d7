// Package clients tests petstore from the outside, with clients that are
// not Go's as well as Go's: curl, Python's http.client and urllib, Node's
// http and fetch, and Prism as a validating proxy in front. It runs the
// binary as internal/petstoretest does (built from the tree, or the one
// PETSTORE_TEST_BINARY names) and talks to it on 127.0.0.1 only. A client that is not installed is skipped loudly, or is a
// failure with PETSTORE_TEST_REQUIRE_CLIENTS=1 (set by .ci/run).
package clients

import (
	"crypto/rand"
	"errors"
	"flag"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"petstore/internal/petstoretest"
	"petstore/internal/testkit"
)

// TestMain runs the tests, more of them at once than GOMAXPROCS
// (testkit.RaiseParallel): they wait on the binary and on other languages'
// clients. It removes the binary it built.
func TestMain(m *testing.M) {
	flag.Parse()
	testkit.RaiseParallel(8)
	petstoretest.HideKeys(writeKey, readKey)
	code := m.Run()
	petstoretest.RemoveBinary()
	os.Exit(code)
}

// need returns the path of tool, or skips the test (fails it when
// PETSTORE_TEST_REQUIRE_CLIENTS=1) when it is not installed.
func need(t testing.TB, tool, install string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err == nil {
		return path
	}
	if os.Getenv("PETSTORE_TEST_REQUIRE_CLIENTS") == "1" {
		t.Fatalf("PETSTORE_TEST_REQUIRE_CLIENTS=1 but %s is not installed (%s)", tool, install)
	}
	t.Skipf("********** SKIPPED: %s is not installed, so petstore was NOT tested with it. Install it (%s), or run .ci/run, which does. **********", tool, install)
	return ""
}

// Keys of the petstore the tests start: one that may create, one that may
// only read.
var (
	writeKey = "w-" + rand.Text()
	readKey  = "r-" + rand.Text()
)

// start runs petstore on a free port of 127.0.0.1, with the two keys and
// an in-memory store, and stops it at the end of the test.
func start(t testing.TB) *petstoretest.Process { return startWith(t, nil) }

// startWith is start with env added to petstore's environment.
func startWith(t testing.TB, env map[string]string) *petstoretest.Process {
	t.Helper()
	all := map[string]string{"PETSTORE_API_KEYS": writeKey + ":write," + readKey + ":read"}
	maps.Copy(all, env)
	return petstoretest.Start(t, all)
}

// freePort returns a port of 127.0.0.1 that nothing listened on a moment
// ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitHTTP waits, at most within, until url answers anything over HTTP.
func waitHTTP(t testing.TB, url string, within time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(within)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within %v: %v", url, within, errors.Unwrap(err))
		}
		time.Sleep(200 * time.Millisecond) // polling a process we started, bounded
	}
}
