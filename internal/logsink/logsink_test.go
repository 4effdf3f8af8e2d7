package logsink

import (
	"io"
	"strings"
	"testing"
	"time"

	"petstore/internal/testkit"
)

// lockedBuffer is safe for the writer goroutine and a test reading it at
// once.
type lockedBuffer = testkit.LockedBuffer

// waitFor polls cond for up to 10 s.
var waitFor = testkit.WaitFor

func TestSinkBuffersUntilFull(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	s := New(&out, 20, time.Hour)
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

func TestSinkFlushesAfterDelay(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	s := New(&out, 1<<20, 20*time.Millisecond)
	defer s.Close()
	s.Write([]byte("request line\n"))
	waitFor(t, "the delayed flush", func() bool { return out.String() == "request line\n" })
}

// A direct line is written at once, after the buffered ones.
func TestSinkDirectKeepsOrder(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	s := New(&out, 1<<20, time.Hour)
	defer s.Close()
	s.Write([]byte("access 1\n"))
	s.Direct().Write([]byte("error\n"))
	waitFor(t, "the direct line", func() bool { return strings.Contains(out.String(), "error\n") })
	s.Write([]byte("access 2\n"))
	if got, want := out.String(), "access 1\nerror\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
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

// A sink whose stderr never drains does not hold up Close for longer than
// closeWait.
func TestSinkCloseGivesUpOnStuckStderr(t *testing.T) {
	t.Parallel()
	w := &stuckWriter{release: make(chan struct{})}
	t.Cleanup(func() { close(w.release) })
	sink := New(w, 1<<10, time.Hour)
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
func TestSinkWriteAllocatesNothing(t *testing.T) {
	sink := New(io.Discard, FlushSize, FlushDelay)
	defer sink.Close()
	line := []byte(`{"time":"2026-01-02T03:04:05.123456789Z","level":"INFO","msg":"request","method":"GET","route":"GET /v1/categories","path":"/v1/categories","status":200,"bytes":4101,"duration_ms":0.011,"request_id":"a1b2c3d4e5f6-17"}` + "\n")
	if allocs := testing.AllocsPerRun(10_000, func() { sink.Write(line) }); allocs != 0 {
		t.Errorf("allocations per line: got %v, want 0", allocs)
	}
}
