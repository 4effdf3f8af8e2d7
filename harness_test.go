package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"petstore/internal/petstoretest"
)

// The harness of the tests that run the service for real in this process,
// through run (startRun, runToError, runCommand). Tests that run the built
// binary use internal/petstoretest, which this harness shares: both wait
// for readiness the same way (WaitHealthy) and capture stderr in a
// LogCapture; the tests talk to them over TCP (Send, WantStatus) and read
// their JSON log lines (ParseLogLines, FindLog).

// e2eKey is the API key of the in-process services. It stands for a secret:
// tests check it never reaches a log, and never print it themselves.
const e2eKey = "e2e-Secret-Kq7Zp2Xv9Lm4"

// stopTimeout bounds the wait for a service to stop: more than
// PETSTORE_SHUTDOWN_GRACE's default.
const stopTimeout = petstoretest.DefaultGrace + 5*time.Second

// baseEnv is the configuration every in-process service starts from. It
// names GOMAXPROCS, so that run leaves the test process's own alone (see
// internal/procs).
func baseEnv(dataPath string) map[string]string {
	return map[string]string{
		"PETSTORE_ADDR":     "127.0.0.1:0",
		"PETSTORE_DATA":     dataPath,
		"PETSTORE_API_KEYS": e2eKey,
		"GOMAXPROCS":        strconv.Itoa(runtime.GOMAXPROCS(0)),
	}
}

// service is one run of the program in a goroutine.
type service struct {
	addr   string         // host:port it listens on
	roots  *x509.CertPool // trusts its TLS certificate; nil: plain HTTP
	stderr *petstoretest.LogCapture
	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned
	err    error         // run's result, once done is closed
}

// startRunning calls run with env and args in a goroutine.
func startRunning(env map[string]string, args []string, lim limits) *service {
	ctx, cancel := context.WithCancel(context.Background())
	svc := &service{stderr: petstoretest.NewLogCapture(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(svc.done)
		svc.err = runWithLimits(ctx, args, environOf(env), io.Discard, svc.stderr, lim)
	}()
	return svc
}

// environOf is env as os.Environ would give it.
func environOf(env map[string]string) []string {
	var environ []string
	for name, value := range env {
		environ = append(environ, name+"="+value)
	}
	return environ
}

// startRun calls run with env in a goroutine, waits for its listening line
// and then for /healthz to answer 200. The service is stopped at the end of
// the test if the test has not stopped it. opts may shrink the server's
// limits (timeouts, grace) so that a test stays fast.
func startRun(t *testing.T, env map[string]string, opts ...func(*limits)) *service {
	t.Helper()
	lim := defaultLimits
	for _, opt := range opts {
		opt(&lim)
	}
	svc := startRunning(env, []string{"petstore"}, lim)
	t.Cleanup(func() {
		if err := svc.stop(); err != nil {
			t.Errorf("stopping the service at cleanup: %v", err)
		}
	})
	select {
	case svc.addr = <-svc.stderr.Listening:
	case <-svc.done:
		t.Fatalf("run returned before listening: %v", svc.err)
	case <-time.After(petstoretest.StartTimeout):
		t.Fatalf("no listening line on stderr within %v", petstoretest.StartTimeout)
	}
	if host, _, err := net.SplitHostPort(svc.addr); err != nil || host != "127.0.0.1" {
		t.Fatalf("listening address: got %q, want 127.0.0.1:port", svc.addr)
	}
	svc.roots = petstoretest.TLSRoots(t, env)
	petstoretest.WaitHealthy(t, svc.url(""), svc.roots, svc.done)
	return svc
}

// runToError runs the program with args and env, which must make it fail
// at start, and returns its stderr and error. A run still going after 5 s
// started half-configured: the test fails.
func runToError(t *testing.T, args []string, env map[string]string) (*petstoretest.LogCapture, error) {
	t.Helper()
	svc := startRunning(env, args, defaultLimits)
	select {
	case <-svc.done:
	case <-time.After(5 * time.Second):
		svc.stop()
		t.Fatalf("run did not fail within 5s; it started half-configured")
	}
	if svc.err == nil {
		t.Fatalf("run: got nil error, want it to fail at start")
	}
	return svc.stderr, svc.err
}

var errStillRunning = errors.New("run did not return in time")

// stop cancels run's context and waits, bounded, for it to return, and
// returns run's result. It can be called more than once.
func (svc *service) stop() error {
	svc.cancel()
	select {
	case <-svc.done:
		return svc.err
	case <-time.After(stopTimeout):
		return fmt.Errorf("%w: still running %v after cancel", errStillRunning, stopTimeout)
	}
}

func (svc *service) url(path string) string { return petstoretest.Scheme(svc.roots) + svc.addr + path }

// slowCreate is a POST whose body is held back after the key check.
type slowCreate struct {
	body   *io.PipeWriter
	status chan int
}

// startSlowCreate sends a create with Expect: 100-continue and returns once
// the server has said 100 Continue: it accepted the key and is reading the
// body, which finish sends.
func startSlowCreate(t *testing.T, client *http.Client, url, key string) *slowCreate {
	t.Helper()
	r, w := io.Pipe()
	t.Cleanup(func() { w.CloseWithError(errors.New("test over")) })
	got100 := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{Got100Continue: func() { once.Do(func() { close(got100) }) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	sc := &slowCreate{body: w, status: make(chan int, 1)}
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			sc.status <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sc.status <- resp.StatusCode
	}()
	select {
	case <-got100:
	case s := <-sc.status:
		t.Fatalf("the slow create was answered (%d) before it sent its body", s)
	case <-time.After(10 * time.Second):
		t.Fatalf("no 100 Continue within 10 s")
	}
	return sc
}

// finish sends the body and returns the answer's status (0: no answer).
func (sc *slowCreate) finish(body string) int {
	go func() {
		io.WriteString(sc.body, body)
		sc.body.Close()
	}()
	select {
	case s := <-sc.status:
		return s
	case <-time.After(10 * time.Second):
		return 0
	}
}

// runCommand runs petstore with args and env in-process, bounded in time,
// and returns its stdout, stderr and result.
func runCommand(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(t.Context(), append([]string{"petstore"}, args...), environOf(env), &stdout, &stderr)
	}()
	select {
	case err := <-done:
		return stdout.String(), stderr.String(), err
	case <-time.After(60 * time.Second):
		t.Fatalf("petstore %v still running after 60 s", args)
		return "", "", nil
	}
}
