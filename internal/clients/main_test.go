// Package clients tests petstore from the outside, with clients that are
// not Go's as well as Go's: curl, Python's http.client and urllib, Node's
// http and fetch, and Prism as a validating proxy in front. It builds the
// binary from the tree (or runs PETSTORE_TEST_BINARY) and talks to it on
// 127.0.0.1 only. A client that is not installed is skipped loudly, or is a
// failure with PETSTORE_TEST_REQUIRE_CLIENTS=1 (set by .ci/run).
package clients

import (
	"bufio"
	"crypto/rand"
	"errors"
	"flag"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/internal/testkit"
)

// TestMain runs the tests, more of them at once than GOMAXPROCS
// (testkit.RaiseParallel): they wait on the binary and on other languages'
// clients. It removes the binary it built.
func TestMain(m *testing.M) {
	flag.Parse()
	testkit.RaiseParallel(8)
	code := m.Run()
	built.Remove()
	os.Exit(code)
}

// built is the binary the tests build on first use.
var built testkit.Binary

// petstoreBinary returns the petstore binary to test: PETSTORE_TEST_BINARY, or one
// built from this tree.
func petstoreBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("PETSTORE_TEST_BINARY"); bin != "" {
		if testing.Short() {
			t.Skip("runs the binary")
		}
		return bin
	}
	return built.Path(t)
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

// service is a petstore process a test started.
type service struct {
	url    string // http://127.0.0.1:PORT, or https://…
	addr   string // 127.0.0.1:PORT
	pid    int
	exited chan struct{} // closed once the process has exited
}

// start runs petstore on a free port of 127.0.0.1, with the two keys and
// an in-memory store, and stops it at the end of the test.
func start(t testing.TB) *service { return startWith(t, nil) }

// startWith is start with env added to petstore's environment.
func startWith(t testing.TB, env map[string]string) *service {
	t.Helper()
	cmd := exec.Command(petstoreBinary(t))
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PETSTORE_") }),
		"PETSTORE_ADDR=127.0.0.1:0", "PETSTORE_DATA=:memory:",
		"PETSTORE_API_KEYS="+writeKey+":write,"+readKey+":read")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	scheme := "http://"
	if env["PETSTORE_TLS_CERT_FILE"] != "" {
		scheme = "https://"
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	addr := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			if _, rest, ok := strings.Cut(lines.Text(), `"msg":"listening","addr":"`); ok {
				a, _, _ := strings.Cut(rest, `"`)
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return &service{url: scheme + a, addr: a, pid: cmd.Process.Pid, exited: exited}
	case <-time.After(15 * time.Second):
		t.Fatal("petstore did not say it was listening within 15 s")
	}
	return nil
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
