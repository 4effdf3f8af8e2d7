package main

import (
	"net/http"
	"strings"
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
	if got, want := out.String(), "line one\nline two\nline three\n"; got != want {
		t.Fatalf("after filling: got %q, want %q", got, want)
	}
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
