package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLogSinkBuffersUntilFull(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	s := newLogSink(&out, 20, time.Hour)
	s.Write([]byte("line one\n")) // 9 bytes
	if got := out.String(); got != "" {
		t.Fatalf("written before the buffer filled: %q", got)
	}
	s.Write([]byte("line two\n"))
	s.Write([]byte("line three\n")) // 29 bytes ≥ 20: flush
	waitFor(t, "the full buffer to be written", func() bool { return out.String() == "line one\nline two\nline three\n" })
	s.Write([]byte("line four\n"))
	s.Close()
	if got := out.String(); !strings.HasSuffix(got, "line three\nline four\n") {
		t.Fatalf("Close did not flush: %q", got)
	}
	s.Write([]byte("after close\n"))
	if got := out.String(); !strings.HasSuffix(got, "after close\n") {
		t.Errorf("a line after Close was not written at once: %q", got)
	}
}

func TestLogSinkFlushesAfterDelay(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	s := newLogSink(&out, 1<<20, 20*time.Millisecond)
	defer s.Close()
	s.Write([]byte("request line\n"))
	waitFor(t, "the delayed flush", func() bool { return out.String() == "request line\n" })
}

// A direct line is written at once, after the buffered ones.
func TestLogSinkDirectKeepsOrder(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	s := newLogSink(&out, 1<<20, time.Hour)
	defer s.Close()
	s.Write([]byte("access 1\n"))
	s.Direct().Write([]byte("error\n"))
	waitFor(t, "the direct line", func() bool { return strings.Contains(out.String(), "error\n") })
	s.Write([]byte("access 2\n"))
	if got, want := out.String(), "access 1\nerror\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Access lines of answers below 500 go to the access log (buffered in
// production); those of 500s go to the error log, written at once.
func TestServerErrorsSkipTheAccessLog(t *testing.T) {
	t.Parallel()
	var access lockedBuffer
	panicking := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	env := newTestEnv(t, withAccessLogTo(&access), withRoute(route{method: "GET", path: "/v1/test-panic", handler: panicking}))
	env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{"Authorization": "Bearer " + testKey, "X-Request-Id": "ok-1"}})
	env.do(t, request{method: "GET", path: "/v1/test-panic", header: map[string]string{"Authorization": "Bearer " + testKey, "X-Request-Id": "boom-1"}})
	if !strings.Contains(access.String(), `"request_id":"ok-1"`) || strings.Contains(access.String(), "boom-1") {
		t.Errorf("access log: got %s, want the 200 line only", &access)
	}
	if !strings.Contains(env.logs.String(), `"request_id":"boom-1"`) || strings.Contains(env.logs.String(), `"request_id":"ok-1"`) {
		t.Errorf("error log: got %s, want the 500 line only", env.logs)
	}
}

// stuckWriter is a stderr nobody reads: every Write blocks until release
// is closed.
type stuckWriter struct {
	release chan struct{}
	out     lockedBuffer
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	return w.out.Write(p)
}

// withSink logs through sink exactly as run does.
func withSink(sink *logSink) testOption {
	return func(d *deps, _ *[]route) {
		d.log, d.access = slog.New(slog.NewJSONHandler(sink.Direct(), nil)), sink
	}
}

// While stderr does not drain, requests are still answered, access lines
// and direct lines (a 500's) alike; the lines that did not fit are dropped,
// and once it drains a warning counts them: every line is either written or
// counted.
func TestLogSinkStuckStderrBlocksNoRequest(t *testing.T) {
	t.Parallel()
	w := &stuckWriter{release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(w.release) }) }
	sink := newLogSink(w, 1<<10, time.Millisecond)
	t.Cleanup(sink.Close)
	t.Cleanup(release) // first, on a failure too, or the writer never ends
	panicking := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	env := newTestEnv(t, withSink(sink), withRoute(route{method: "GET", path: "/v1/test-panic", handler: panicking}))

	const requests = 300
	wantLines := 0
	for i := range requests {
		req, status := request{method: "GET", path: "/v1/categories"}, http.StatusOK
		wantLines++
		switch {
		case i%50 == 0:
			req.path, status = "/v1/test-panic", http.StatusInternalServerError
			wantLines++ // "handler panicked", then the request's ERROR line
		case i%2 == 0:
			req.path, status = "/v1/categories/999", http.StatusNotFound
		}
		answered := make(chan int, 1)
		go func() { answered <- env.do(t, req).Code }()
		select {
		case code := <-answered:
			if code != status {
				t.Fatalf("request %d (%s): got %d, want %d", i, req.path, code, status)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d (%s) not answered within 10 s while stderr is stuck", i, req.path)
		}
	}

	release()
	written, dropped := 0, 0
	count := func() bool {
		written, dropped = 0, 0
		for _, line := range strings.Split(strings.TrimSpace(w.out.String()), "\n") {
			var l logLine
			if json.Unmarshal([]byte(line), &l) != nil {
				continue
			}
			if n, ok := l["lines"].(float64); ok && l["level"] == "WARN" && strings.Contains(l["msg"].(string), "dropped") {
				dropped += int(n)
				continue
			}
			written++
		}
		return written+dropped == wantLines
	}
	waitFor(t, "every line written or counted as dropped", count)
	if dropped == 0 {
		t.Errorf("no line was dropped (%d written): the test did not fill the buffer", written)
	}
}

// A sink whose stderr never drains does not hold up Close for longer than
// closeWait.
func TestLogSinkCloseGivesUpOnStuckStderr(t *testing.T) {
	t.Parallel()
	w := &stuckWriter{release: make(chan struct{})}
	t.Cleanup(func() { close(w.release) })
	sink := newLogSink(w, 1<<10, time.Hour)
	sink.closeWait = 10 * time.Millisecond
	sink.Direct().Write([]byte("stuck\n"))
	sink.Write([]byte("waiting\n"))
	closed := make(chan struct{})
	go func() { sink.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waiting for a stuck stderr after 10 s")
	}
	sink.Write([]byte("after close\n")) // dropped: it must not block either
}

// Buffering a line allocates nothing (the access line's cost is counted by
// BenchmarkAccessLine and TestListAllocationsIndependentOfSize).
func TestLogSinkWriteAllocatesNothing(t *testing.T) {
	sink := newLogSink(io.Discard, logFlushSize, logFlushDelay)
	defer sink.Close()
	line := []byte(`{"time":"2026-01-02T03:04:05.123456789Z","level":"INFO","msg":"request","method":"GET","route":"GET /v1/categories","path":"/v1/categories","status":200,"bytes":4101,"duration_ms":0.011,"request_id":"a1b2c3d4e5f6-17"}` + "\n")
	if allocs := testing.AllocsPerRun(10_000, func() { sink.Write(line) }); allocs != 0 {
		t.Errorf("allocations per line: got %v, want 0", allocs)
	}
}

// The binary answers every request while nobody reads its stderr pipe, and
// says how many lines it dropped once the pipe drains.
func TestBinaryStuckStderrBlocksNoRequest(t *testing.T) {
	t.Parallel()
	p := startBinary(t, nil)
	p.pauseStderr()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	// Lines of about 2 KiB (a 404's path is in its line): 400 of them are
	// 800 KiB, more than the pipe (64 KiB), the writer's batch and the
	// sink's buffer (bufferedBatches × logFlushSize) hold together.
	long := "/v1/no-such-path/" + strings.Repeat("x", 2<<10)
	for i := range 400 {
		path, want := long, http.StatusNotFound
		if i%4 == 0 {
			path, want = "/v1/categories", http.StatusOK
		}
		resp, body := send(t, client, "GET", p.url(path), binKey, "", nil)
		wantStatus(t, fmt.Sprintf("request %d while stderr is not read", i), resp, body, want)
	}
	p.resumeStderr()
	warning := p.waitLog(10*time.Second, func(l logLine) bool {
		n, _ := l["lines"].(float64)
		return l["level"] == "WARN" && strings.Contains(fmt.Sprint(l["msg"]), "dropped") && n > 0
	})
	if warning == nil {
		t.Fatalf("no warning about dropped lines once stderr drained; stderr ends:\n%s", tail(redactAll(p.stderr.String()), 2000))
	}
	p.stop(t)
}

// tail returns at most the last n bytes of s.
func tail(s string, n int) string { return s[max(0, len(s)-n):] }
