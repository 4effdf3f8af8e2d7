package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The harness of the tests that run the service for real: in this process
// through run (startRun, runToError, runCommand), or as the built binary
// (startBinary, binary_test.go). Both wait for readiness the same way
// (waitHealthy) and capture stderr in a logCapture; the tests talk to them
// over TCP (send, wantStatus) and read their JSON log lines (parseLogLines,
// findLog).

// e2eKey is the API key of the in-process services. It stands for a secret:
// tests check it never reaches a log, and never print it themselves.
const e2eKey = "e2e-Secret-Kq7Zp2Xv9Lm4"

// Bounds on waiting for the service; generous, since they only matter when
// something is broken (a start that reads megabytes from etcd on a machine
// busy with the rest of the suite can take 10 s).
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 15 * time.Second // more than defaultGrace
	defaultGrace = 10 * time.Second // PETSTORE_SHUTDOWN_GRACE's default
)

// logCapture is a service's stderr: a lockedBuffer that also reports, once,
// the address of the "listening" log line.
type logCapture struct {
	lockedBuffer
	listening chan string // receives the listen address, once

	scan    sync.Mutex
	pending []byte // the start of a line not yet complete
	sent    bool
}

func newLogCapture() *logCapture {
	return &logCapture{listening: make(chan string, 1)}
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.lockedBuffer.Write(p)
	c.scan.Lock()
	defer c.scan.Unlock()
	if c.sent {
		return len(p), nil
	}
	c.pending = append(c.pending, p...)
	for {
		line, rest, complete := bytes.Cut(c.pending, []byte{'\n'})
		if !complete {
			break
		}
		c.pending = rest
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "listening" {
			c.listening <- rec.Addr
			c.sent = true
			c.pending = nil
			break
		}
	}
	return len(p), nil
}

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
	stderr *logCapture
	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned
	err    error         // run's result, once done is closed
}

// startRunning calls run with env and args in a goroutine.
func startRunning(env map[string]string, args []string, lim limits) *service {
	ctx, cancel := context.WithCancel(context.Background())
	svc := &service{stderr: newLogCapture(), cancel: cancel, done: make(chan struct{})}
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
	case svc.addr = <-svc.stderr.listening:
	case <-svc.done:
		t.Fatalf("run returned before listening: %v", svc.err)
	case <-time.After(startTimeout):
		t.Fatalf("no listening line on stderr within %v", startTimeout)
	}
	if host, _, err := net.SplitHostPort(svc.addr); err != nil || host != "127.0.0.1" {
		t.Fatalf("listening address: got %q, want 127.0.0.1:port", svc.addr)
	}
	svc.roots = tlsRoots(t, env)
	waitHealthy(t, svc.url(""), svc.roots, svc.done)
	return svc
}

// runToError runs the program with args and env, which must make it fail
// at start, and returns its stderr and error. A run still going after 5 s
// started half-configured: the test fails.
func runToError(t *testing.T, args []string, env map[string]string) (*logCapture, error) {
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

func (svc *service) url(path string) string { return schemeOf(svc.roots) + svc.addr + path }

// schemeOf is the scheme of a service whose TLS certificate roots trusts
// (nil: plain HTTP), with its "://".
func schemeOf(roots *x509.CertPool) string {
	if roots != nil {
		return "https://"
	}
	return "http://"
}

// tlsRoots returns a pool that trusts the certificate file of env (the
// certificate itself, or the CA of tests that rotate it, when it is the
// file's last one), or nil when env serves plain HTTP.
func tlsRoots(t testing.TB, env map[string]string) *x509.CertPool {
	t.Helper()
	file := env["PETSTORE_TLS_CERT_FILE"]
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data) {
		t.Fatalf("%s holds no certificate", file)
	}
	return roots
}

// waitHealthy polls base+/healthz, a bounded number of times within a
// deadline, until it answers 200; exited closing first fails the test.
// The listener is bound before the listening line is written, so the first
// attempt normally succeeds.
func waitHealthy(t *testing.T, base string, roots *x509.CertPool, exited <-chan struct{}) {
	t.Helper()
	transport := &http.Transport{Proxy: nil, DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: roots}}
	client := &http.Client{Timeout: time.Second, Transport: transport}
	deadline := time.Now().Add(startTimeout)
	backoff := 5 * time.Millisecond
	var last string
	for attempt := 0; attempt < 100 && time.Now().Before(deadline); attempt++ {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("status %d, body %s", resp.StatusCode, redactAll(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case <-exited:
			t.Fatalf("the service exited while waiting for /healthz")
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
	t.Fatalf("%s/healthz did not answer 200 within %v; last: %s", base, startTimeout, last)
}

// newClient returns an HTTP client that talks to 127.0.0.1 directly (no
// proxy) and waits for "100 Continue" before sending a body that expects it.
func newClient(t *testing.T) *http.Client {
	transport := &http.Transport{
		Proxy:                 nil,
		ExpectContinueTimeout: 10 * time.Second,
		DisableCompression:    true,
	}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: 10 * time.Second}
}

// redact hides the in-process services' key in text that a test prints.
func redact(s string) string { return strings.ReplaceAll(s, e2eKey, "<key>") }

// redactAll hides every test key in text a test prints.
func redactAll(s string) string {
	for _, k := range []string{binKey, e2eKey, testKey, testKey2} {
		s = strings.ReplaceAll(s, k, "<key>")
	}
	return s
}

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

// newAPIRequest makes a request to the API: key "" sends no
// Authorization header, and a body is sent as application/json.
func newAPIRequest(ctx context.Context, method, url, key, body string) (*http.Request, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// send makes one request and returns the answer and its body; header
// holds headers to add.
func send(t *testing.T, client *http.Client, method, url, key, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := newAPIRequest(context.Background(), method, url, key, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %s", method, url, redactAll(err.Error()))
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp, got
}

// wantStatus checks an answer's status and JSON content type, and that an
// error answer is an Error body (see checkErrorBody).
func wantStatus(t *testing.T, what string, resp *http.Response, body []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s: status: got %d, want %d; body %s", what, resp.StatusCode, status, redactAll(string(body)))
	}
	if status >= 400 {
		checkErrorBody(t, status, resp.Header, body)
	} else if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type: got %q, want application/json", what, ct)
	}
}

// logLine is one JSON log line, decoded.
type logLine map[string]any

// parseLogLines checks that every stderr line is a JSON object and returns
// them decoded. It prints lines only with the key redacted.
func parseLogLines(t *testing.T, lines []string) []logLine {
	t.Helper()
	if len(lines) == 0 {
		t.Fatalf("stderr is empty")
	}
	out := make([]logLine, 0, len(lines))
	for i, line := range lines {
		var l logLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Errorf("stderr line %d is not a JSON object (%v): %s", i+1, err, redact(line))
			continue
		}
		out = append(out, l)
	}
	return out
}

// checkNoSecrets checks that no stderr line carries a key that was sent or
// anything of an Authorization header.
func checkNoSecrets(t *testing.T, lines []string, secrets ...string) {
	t.Helper()
	hide := func(line string) string {
		for _, s := range secrets {
			line = strings.ReplaceAll(line, s, "<secret>")
		}
		return line
	}
	for i, line := range lines {
		for j, s := range secrets {
			if strings.Contains(line, s) {
				t.Errorf("stderr line %d contains secret #%d: %s", i+1, j+1, hide(line))
			}
		}
		if strings.Contains(strings.ToLower(line), "bearer") {
			t.Errorf("stderr line %d mentions Bearer: %s", i+1, hide(line))
		}
	}
}

// findLog returns the first log line with the given msg and attributes.
func findLog(logs []logLine, msg string, attrs map[string]any) logLine {
next:
	for _, l := range logs {
		if l["msg"] != msg {
			continue
		}
		for k, v := range attrs {
			if l[k] != v {
				continue next
			}
		}
		return l
	}
	return nil
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
