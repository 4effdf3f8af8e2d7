// Package petstoretest runs the built petstore binary for tests and talks
// to it as a client would: for tests that need what only a process has
// (signals, exit codes, file limits, a stderr pipe, SIGKILL) or that run it
// beside the parts it meets in deployment. The binary is built once per
// test binary (BinaryPath), from this tree, as `make image` builds it, or
// is the one PETSTORE_TEST_BINARY names.
//
// It also holds what those tests and in-process ones share: the Error and
// Category bodies as a client decodes them, requests with a key (Send,
// WantStatus), the JSON log lines of stderr (LogCapture, ParseLogLines,
// FindLog, CheckNoSecrets) and the wait for readiness (WaitHealthy).
// Nothing in it is imported by petstore itself.
package petstoretest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"petstore/internal/rawjson"
	"petstore/internal/store"
	"petstore/internal/testkit"
)

// Key is the API key of the binaries Start runs. It stands for a secret:
// tests check it never reaches a log, and never print it themselves.
const Key = "bin-Secret-Tz8Wq3Rn6Yk1"

// Bounds on waiting for the service; generous, since they only matter when
// something is broken (a start that reads megabytes from etcd on a machine
// busy with the rest of the suite can take 10 s).
const (
	StartTimeout = 30 * time.Second
	DefaultGrace = 10 * time.Second // PETSTORE_SHUTDOWN_GRACE's default
)

// The binary built from the tree on first use, as `make image` builds it
// (static, -trimpath): the tests run what the image ships, and the image's
// build finds every package compiled.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// BinaryPath returns the binary to test: the file PETSTORE_TEST_BINARY
// names (an absolute path), or one built from this tree on first use. It
// skips the test under -short.
func BinaryPath(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the binary")
	}
	if bin := os.Getenv("PETSTORE_TEST_BINARY"); bin != "" {
		if !filepath.IsAbs(bin) {
			// Each package's tests run in its own directory, some commands
			// in another still: a relative path would name a different file
			// for each.
			t.Fatalf("PETSTORE_TEST_BINARY=%s: give an absolute path", bin)
		}
		return bin
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "petstore-test-bin-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "petstore")
		cmd := exec.Command("go", "build", "-trimpath", "-o", built.path, "petstore")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// RemoveBinary deletes the binary, if one was built; a TestMain calls it
// once every test has run.
func RemoveBinary() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// secrets are the keys Redact hides: Key and those of HideKeys.
var secrets = []string{Key}

// HideKeys adds keys for Redact to hide, and so for every helper here that
// prints what a service said. A TestMain calls it before m.Run with the
// keys its package's tests give their services.
func HideKeys(keys ...string) { secrets = append(secrets, keys...) }

// Redact hides in s every key of a test service: Key, those of HideKeys
// and the others given.
func Redact(s string, keys ...string) string {
	for _, k := range append(slices.Clone(secrets), keys...) {
		if k != "" {
			s = strings.ReplaceAll(s, k, "<key>")
		}
	}
	return s
}

// Process is one petstore process a test started.
type Process struct {
	Cmd    *exec.Cmd
	Addr   string         // host:port it listens on
	Roots  *x509.CertPool // trusts its TLS certificate; nil: plain HTTP
	Stderr *LogCapture    // everything it wrote on stderr, while read
	Done   chan struct{}
	Err    error // Cmd.Wait's result, once Done is closed

	keys   []string      // the API keys it was given, hidden in what it prints
	paused chan struct{} // closed: stderr is read; see PauseStderr
	mu     sync.Mutex
}

// Option adjusts how Start runs the binary.
type Option func(*options)

type options struct {
	prefix []string // a command to run the binary under, e.g. taskset -c 0
}

// WithPrefix runs the binary under a command, such as taskset -c 0.
func WithPrefix(command ...string) Option {
	return func(o *options) { o.prefix = command }
}

// Start runs the petstore binary with env on top of a base configuration
// (127.0.0.1:0, :memory:, Key), waits for its "listening" line and for
// /healthz to answer, and kills it at the end of the test if it is still
// running. GOMAXPROCS and PETSTORE_* are never inherited.
func Start(t testing.TB, env map[string]string, opts ...Option) *Process {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	args := append(slices.Clone(o.prefix), BinaryPath(t))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PETSTORE_") || strings.HasPrefix(kv, "GOMAXPROCS=")
	})
	base := map[string]string{"PETSTORE_ADDR": "127.0.0.1:0", "PETSTORE_DATA": store.MemoryPath, "PETSTORE_API_KEYS": Key}
	for k, v := range env {
		base[k] = v
	}
	for k, v := range base {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{
		Cmd: cmd, Roots: TLSRoots(t, env), Stderr: NewLogCapture(), Done: make(chan struct{}),
		keys: keysOf(base["PETSTORE_API_KEYS"]), paused: make(chan struct{}),
	}
	close(p.paused)
	go p.readStderrAndWait(pipe)
	t.Cleanup(func() {
		p.ResumeStderr()
		if !p.Exited() {
			cmd.Process.Kill()
			<-p.Done
		}
	})

	select {
	case p.Addr = <-p.Stderr.Listening:
	case <-p.Done:
		t.Fatalf("petstore exited at start (%v); stderr:\n%s", p.Err, p.redact(p.Stderr.String()))
	case <-time.After(StartTimeout):
		t.Fatalf("petstore wrote no listening line within %v; stderr:\n%s", StartTimeout, p.redact(p.Stderr.String()))
	}
	WaitHealthy(t, p.URL(""), p.Roots, p.Done)
	return p
}

// readStderrAndWait copies the process's stderr into p.Stderr while it is
// not paused, then waits for the process and closes p.Done.
func (p *Process) readStderrAndWait(pipe io.Reader) {
	buf := make([]byte, 4096)
	for {
		p.mu.Lock()
		gate := p.paused
		p.mu.Unlock()
		<-gate
		n, err := pipe.Read(buf)
		p.Stderr.Write(buf[:n])
		if err != nil {
			break
		}
	}
	p.Err = p.Cmd.Wait() // it closes the pipe: read it to the end first
	close(p.Done)
}

// keysOf returns the keys of a PETSTORE_API_KEYS value, without scopes.
func keysOf(value string) []string {
	var keys []string
	for _, entry := range strings.Split(value, ",") {
		key, _, _ := strings.Cut(strings.TrimSpace(entry), ":")
		keys = append(keys, key)
	}
	return keys
}

func (p *Process) redact(s string) string { return Redact(s, p.keys...) }

// URL is the process's base URL followed by path.
func (p *Process) URL(path string) string { return Scheme(p.Roots) + p.Addr + path }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.Done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatalf("sending %v: %v", sig, err)
	}
}

// Wait waits at most d for the process to exit and returns its exit code,
// or -1 if it was killed by a signal.
func (p *Process) Wait(t testing.TB, d time.Duration) int {
	t.Helper()
	select {
	case <-p.Done:
	case <-time.After(d):
		t.Fatalf("petstore still running %v later", d)
	}
	return p.Cmd.ProcessState.ExitCode()
}

// Stop sends SIGTERM and checks that the process exits 0 within the
// shutdown grace and a second.
func (p *Process) Stop(t testing.TB) {
	t.Helper()
	p.Signal(t, syscall.SIGTERM)
	if code := p.Wait(t, DefaultGrace+time.Second); code != 0 {
		t.Fatalf("exit code after SIGTERM: got %d, want 0; stderr:\n%s", code, p.redact(p.Stderr.String()))
	}
}

// PauseStderr stops reading the process's stderr, as a stuck log collector
// would; once the pipe's buffer is full, its writes block.
func (p *Process) PauseStderr() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.paused:
		p.paused = make(chan struct{})
	default:
	}
}

// ResumeStderr reads stderr again.
func (p *Process) ResumeStderr() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.paused:
	default:
		close(p.paused)
	}
}

// DialRaw opens a plain TCP connection to the process, closed at the end of
// the test.
func (p *Process) DialRaw(t testing.TB) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", p.Addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", p.Addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// WaitLog polls stderr, bounded by d, for a JSON log line that match
// accepts, and returns it, or nil when none came.
func (p *Process) WaitLog(d time.Duration, match func(LogLine) bool) LogLine {
	deadline := time.Now().Add(d)
	for {
		for _, line := range p.Stderr.Lines() {
			var l LogLine
			if json.Unmarshal([]byte(line), &l) == nil && match(l) {
				return l
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(10 * time.Millisecond) // polling a log, bounded by d
	}
}

// LogCapture is a service's stderr: a locked buffer that also reports,
// once, the address of the "listening" log line.
type LogCapture struct {
	testkit.LockedBuffer
	Listening chan string // receives the listen address, once

	scan    sync.Mutex
	pending []byte // the start of a line not yet complete
	sent    bool
}

// NewLogCapture returns an empty capture.
func NewLogCapture() *LogCapture {
	return &LogCapture{Listening: make(chan string, 1)}
}

func (c *LogCapture) Write(p []byte) (int, error) {
	c.LockedBuffer.Write(p)
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
			c.Listening <- rec.Addr
			c.sent = true
			c.pending = nil
			break
		}
	}
	return len(p), nil
}

// Scheme is the scheme and separator of a service's URLs: https:// when
// roots trusts its certificate, http:// when roots is nil.
func Scheme(roots *x509.CertPool) string {
	if roots != nil {
		return "https://"
	}
	return "http://"
}

// TLSRoots returns a pool trusting the certificate env gives the service
// (PETSTORE_TLS_CERT_FILE), or nil when it serves plain HTTP.
func TLSRoots(t testing.TB, env map[string]string) *x509.CertPool {
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

// WaitHealthy polls base+/healthz, a bounded number of times within a
// deadline, until it answers 200; exited closing first fails the test.
// The listener is bound before the listening line is written, so the first
// attempt normally succeeds.
func WaitHealthy(t testing.TB, base string, roots *x509.CertPool, exited <-chan struct{}) {
	t.Helper()
	transport := &http.Transport{Proxy: nil, DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: roots}}
	client := &http.Client{Timeout: time.Second, Transport: transport}
	deadline := time.Now().Add(StartTimeout)
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
			last = fmt.Sprintf("status %d, body %s", resp.StatusCode, Redact(string(body)))
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
	t.Fatalf("%s/healthz did not answer 200 within %v; last: %s", base, StartTimeout, last)
}

// NewClient returns an HTTP client that talks to 127.0.0.1 directly (no
// proxy) and waits for "100 Continue" before sending a body that expects it.
func NewClient(t *testing.T) *http.Client {
	transport := &http.Transport{
		Proxy:                 nil,
		ExpectContinueTimeout: 10 * time.Second,
		DisableCompression:    true,
	}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: 10 * time.Second}
}

// NewAPIRequest makes a request to the API: key "" sends no
// Authorization header, and a body is sent as application/json.
func NewAPIRequest(ctx context.Context, method, url, key, body string) (*http.Request, error) {
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

// Send makes one request and returns the answer and its body; header
// holds headers to add.
func Send(t *testing.T, client *http.Client, method, url, key, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := NewAPIRequest(context.Background(), method, url, key, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %s", method, url, Redact(err.Error(), key))
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp, got
}

// WantStatus checks an answer's status and JSON content type, and that an
// error answer is an Error body (see CheckErrorBody).
func WantStatus(t *testing.T, what string, resp *http.Response, body []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s: status: got %d, want %d; body %s", what, resp.StatusCode, status, Redact(string(body)))
	}
	if status >= 400 {
		CheckErrorBody(t, status, resp.Header, body)
	} else if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type: got %q, want application/json", what, ct)
	}
}

// ErrorBody is the Error body of the API.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

// CheckErrorBody checks an Error answer of any status: JSON content type, a
// UTF-8 JSON object of exactly code, message and status, status matching
// the HTTP status, a message. It reports problems with t.Errorf and returns
// false when the body could not be decoded at all.
func CheckErrorBody(t testing.TB, status int, header http.Header, body []byte) (ErrorBody, bool) {
	t.Helper()
	if ct := header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	var eb ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || !utf8.Valid(body) {
		t.Errorf("error body is not a UTF-8 JSON object of code, message and status (%v): %q", err, body)
		return ErrorBody{}, false
	}
	// Exactly these three members, once each (encoding/json has checked the
	// syntax; counting them needs no second decoding).
	if members, err := rawjson.Members(body, make([]rawjson.Member, 0, 4)); err != nil || len(members) != 3 ||
		members[0].Name == members[1].Name || members[1].Name == members[2].Name || members[0].Name == members[2].Name {
		t.Errorf("error body has members other than exactly code, message, status: %s", body)
	}
	if eb.Status != status {
		t.Errorf("body status: got %d, want the HTTP status %d", eb.Status, status)
	}
	if eb.Message == "" {
		t.Errorf("message is empty")
	}
	return eb, true
}

// Category is a Category as a client decodes it.
type Category struct {
	ID          int64   `json:"id"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// LogLine is one JSON log line, decoded.
type LogLine map[string]any

// ParseLogLines checks that every stderr line is a JSON object and returns
// them decoded. It prints lines only redacted.
func ParseLogLines(t *testing.T, lines []string) []LogLine {
	t.Helper()
	if len(lines) == 0 {
		t.Fatalf("stderr is empty")
	}
	out := make([]LogLine, 0, len(lines))
	for i, line := range lines {
		var l LogLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Errorf("stderr line %d is not a JSON object (%v): %s", i+1, err, Redact(line))
			continue
		}
		out = append(out, l)
	}
	return out
}

// CheckNoSecrets checks that no stderr line carries a key that was sent or
// anything of an Authorization header.
func CheckNoSecrets(t *testing.T, lines []string, secrets ...string) {
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

// FindLog returns the first log line with the given msg and attributes.
func FindLog(logs []LogLine, msg string, attrs map[string]any) LogLine {
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

// Memory returns the process's peak and current resident memory in bytes
// (VmHWM and VmRSS of /proc/PID/status; Linux only).
func (p *Process) Memory(t testing.TB) (peak, rss int64) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, line := range strings.Split(string(status), "\n") {
		name, value, _ := strings.Cut(line, ":")
		if name != "VmHWM" && name != "VmRSS" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 10, 64)
		if err != nil {
			t.Fatalf("%s %q in /proc/PID/status: %v", name, value, err)
		}
		if name == "VmHWM" {
			peak = kb << 10
		} else {
			rss = kb << 10
		}
		found++
	}
	if found != 2 {
		t.Fatal("no VmHWM and VmRSS in /proc/PID/status")
	}
	return peak, rss
}
