package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/internal/apikey"
	"petstore/internal/logsink"
	"petstore/internal/petstoretest"
)

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
func withSink(sink *logsink.Sink) testOption {
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
	sink := logsink.New(w, 1<<10, time.Millisecond)
	t.Cleanup(sink.Close)
	t.Cleanup(release) // first, on a failure too, or the writer never ends
	panicking := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	env := newTestEnv(t, withSink(sink), withRoute(route{method: "GET", path: "/v1/test-panic", handler: panicking, scope: apikey.Read}))

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
			var l petstoretest.LogLine
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

// The binary answers every request while nobody reads its stderr pipe, and
// says how many lines it dropped once the pipe drains.
func TestBinaryStuckStderrBlocksNoRequest(t *testing.T) {
	t.Parallel()
	p := petstoretest.Start(t, nil)
	p.PauseStderr()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	// Lines of about 2 KiB (a 404's path is in its line): 400 of them are
	// 800 KiB, more than the pipe (64 KiB), the writer's batch and the
	// sink's buffer (8 × logsink.FlushSize) hold together.
	long := "/v1/no-such-path/" + strings.Repeat("x", 2<<10)
	for i := range 400 {
		path, want := long, http.StatusNotFound
		if i%4 == 0 {
			path, want = "/v1/categories", http.StatusOK
		}
		resp, body := petstoretest.Send(t, client, "GET", p.URL(path), petstoretest.Key, "", nil)
		petstoretest.WantStatus(t, fmt.Sprintf("request %d while stderr is not read", i), resp, body, want)
	}
	p.ResumeStderr()
	warning := p.WaitLog(10*time.Second, func(l petstoretest.LogLine) bool {
		n, _ := l["lines"].(float64)
		return l["level"] == "WARN" && strings.Contains(fmt.Sprint(l["msg"]), "dropped") && n > 0
	})
	if warning == nil {
		t.Fatalf("no warning about dropped lines once stderr drained; stderr ends:\n%s", tail(petstoretest.Redact(p.Stderr.String()), 2000))
	}
	p.Stop(t)
}

// tail returns at most the last n bytes of s.
func tail(s string, n int) string { return s[max(0, len(s)-n):] }
