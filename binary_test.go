package main

import (
	"crypto/x509"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"petstore/internal/store"
	"petstore/internal/testkit"
)

// These helpers run the real petstore binary, for tests that need what only
// a process has: signals, exit codes, file limits, a stderr pipe, SIGKILL.
// The binary is built once per test run.

// binKey is the API key of the binaries tests start. Tests never print it.
const binKey = "bin-Secret-Tz8Wq3Rn6Yk1"

// testBinary is the binary the tests build on first use; TestMain removes it.
var testBinary testkit.Binary

// petstoreBinary builds the binary on first use and returns its path.
func petstoreBinary(t testing.TB) string {
	t.Helper()
	return testBinary.Path(t)
}

// binaryProcess is one petstore process a test started.
type binaryProcess struct {
	cmd    *exec.Cmd
	addr   string         // host:port it listens on
	roots  *x509.CertPool // trusts its TLS certificate; nil: plain HTTP
	stderr *logCapture    // everything it wrote on stderr, while read
	done   chan struct{}
	err    error // cmd.Wait's result, once done is closed

	paused chan struct{} // closed: stderr is read; see pauseStderr
	mu     sync.Mutex
}

// binaryOptions adjust how startBinary runs the binary.
type binaryOptions struct {
	prefix  []string // a command to run the binary under, e.g. taskset -c 0
	noReady bool     // return once started, without waiting for /healthz
}

// startBinary runs the petstore binary with env on top of a base
// configuration (127.0.0.1:0, :memory:, binKey), waits for its "listening"
// line and for /healthz to answer, and kills it at the end of the test if
// it is still running. GOMAXPROCS and PETSTORE_* are never inherited.
func startBinary(t *testing.T, env map[string]string, opts ...func(*binaryOptions)) *binaryProcess {
	t.Helper()
	var o binaryOptions
	for _, opt := range opts {
		opt(&o)
	}
	args := append(slices.Clone(o.prefix), petstoreBinary(t))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PETSTORE_") || strings.HasPrefix(kv, "GOMAXPROCS=")
	})
	base := map[string]string{"PETSTORE_ADDR": "127.0.0.1:0", "PETSTORE_DATA": store.MemoryPath, "PETSTORE_API_KEYS": binKey}
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
	p := &binaryProcess{cmd: cmd, roots: tlsRoots(t, env), stderr: newLogCapture(), done: make(chan struct{}), paused: make(chan struct{})}
	close(p.paused)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			p.mu.Lock()
			gate := p.paused
			p.mu.Unlock()
			<-gate
			n, err := pipe.Read(buf)
			p.stderr.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() {
		<-copied // Wait closes the pipe: read it to the end first
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.resumeStderr()
		if !p.exited() {
			cmd.Process.Kill()
			<-p.done
		}
	})

	select {
	case p.addr = <-p.stderr.listening:
	case <-p.done:
		t.Fatalf("petstore exited at start (%v); stderr:\n%s", p.err, redactAll(p.stderr.String()))
	case <-time.After(startTimeout):
		t.Fatalf("petstore wrote no listening line within %v; stderr:\n%s", startTimeout, redactAll(p.stderr.String()))
	}
	if !o.noReady {
		waitHealthy(t, p.url(""), p.roots, p.done)
	}
	return p
}

// withPrefix runs the binary under a command, such as taskset -c 0.
func withPrefix(command ...string) func(*binaryOptions) {
	return func(o *binaryOptions) { o.prefix = command }
}

func (p *binaryProcess) url(path string) string { return schemeOf(p.roots) + p.addr + path }

func (p *binaryProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process.
func (p *binaryProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("sending %v: %v", sig, err)
	}
}

// wait waits at most d for the process to exit and returns its exit code,
// or -1 if it was killed by a signal.
func (p *binaryProcess) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("petstore still running %v later", d)
	}
	return p.cmd.ProcessState.ExitCode()
}

// stop sends SIGTERM and checks that the process exits 0 within the
// shutdown grace and a second.
func (p *binaryProcess) stop(t *testing.T) {
	t.Helper()
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t, defaultGrace+time.Second); code != 0 {
		t.Fatalf("exit code after SIGTERM: got %d, want 0; stderr:\n%s", code, redactAll(p.stderr.String()))
	}
}

// pauseStderr stops reading the process's stderr, as a stuck log collector
// would; once the pipe's buffer is full, its writes block.
func (p *binaryProcess) pauseStderr() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.paused:
		p.paused = make(chan struct{})
	default:
	}
}

// resumeStderr reads stderr again.
func (p *binaryProcess) resumeStderr() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.paused:
	default:
		close(p.paused)
	}
}

// dialRaw opens a plain TCP connection to the process, closed at the end of
// the test.
func (p *binaryProcess) dialRaw(t *testing.T) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", p.addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// waitLog polls stderr, bounded by d, for a JSON log line that match
// accepts, and returns it, or nil when none came.
func (p *binaryProcess) waitLog(d time.Duration, match func(logLine) bool) logLine {
	deadline := time.Now().Add(d)
	for {
		for _, line := range p.stderr.Lines() {
			var l logLine
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
