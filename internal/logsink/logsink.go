// Package logsink is a stderr for logs that never blocks a request. Lines
// are appended to a buffer that one writer goroutine writes out in batches;
// while the destination does not drain, lines past a bound are dropped, and
// a warning counts them once it drains again. Every line is either written
// or counted.
package logsink

import (
	"bytes"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Sink is stderr for the logs. One goroutine, the writer, owns the
// writes to stderr; the lines of requests and of everything else are only
// appended to a buffer, so a stderr that stops draining (a stuck log
// collector, a full pipe) never blocks a request: once maxBuffered bytes
// wait, further lines are dropped and counted, and when a write goes
// through again a warning says how many were lost.
//
// Access lines are written in batches, so that a request does not cost a
// write system call: the writer takes the buffer when it reaches flushSize,
// flushDelay after its first line, or at Close. Every other line (start,
// warnings, errors) goes through Direct, which wakes the writer at once;
// all lines share the one buffer, so they keep their order.
//
// Measured with `make bench-load`: writing each access line on its own cost
// petstore 15–25% of its GET throughput on one CPU.
type Sink struct {
	mu           sync.Mutex
	buf          []byte // lines waiting for the writer
	limit        int    // buffered bytes that wake the writer
	max          int    // buffered bytes beyond which lines are dropped
	delay        time.Duration
	timer        *time.Timer // wakes the writer delay after the first buffered line
	droppedLines int
	droppedBytes int
	closed       bool // the writer has been told to finish; see Close

	w         io.Writer     // written by the writer goroutine only, until it ends
	warn      *slog.Logger  // the drop warnings, written by the writer to w
	wake      chan struct{} // capacity 1: the writer has something to do
	done      chan struct{} // closed when the writer has ended
	closeWait time.Duration // how long Close waits for a stuck stderr
}

// FlushSize and FlushDelay are how much and how long access lines wait
// before they are written, for New.
const (
	FlushSize  = 32 << 10
	FlushDelay = 100 * time.Millisecond
)

// How much may wait while stderr does not drain, and how long Close waits
// for it.
const (
	// bufferedBatches is how many flushes' worth the sink holds while
	// stderr does not drain, before it drops lines.
	bufferedBatches = 8
	closeWait       = time.Second
)

// New returns a sink that writes to w in batches of about limit bytes, at
// most delay after their first line, and buffers at most 8×limit bytes while
// w does not take them. Its warnings about dropped lines are JSON lines of
// log/slog, like the lines it carries.
func New(w io.Writer, limit int, delay time.Duration) *Sink {
	s := &Sink{
		w: w, warn: slog.New(slog.NewJSONHandler(w, nil)),
		limit: limit, max: bufferedBatches * limit, delay: delay, buf: make([]byte, 0, limit),
		wake: make(chan struct{}, 1), done: make(chan struct{}), closeWait: closeWait,
	}
	s.timer = time.AfterFunc(time.Hour, s.notify)
	s.timer.Stop()
	go s.writeLoop()
	return s
}

// notify wakes the writer, without waiting.
func (s *Sink) notify() {
	select {
	case s.wake <- struct{}{}:
	default: // already awake or about to be
	}
}

// Write buffers p, one or more whole log lines.
func (s *Sink) Write(p []byte) (int, error) { return s.add(p, false) }

// add buffers p and wakes the writer when now is set or the buffer is full.
func (s *Sink) add(p []byte, now bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.writeClosed(p)
		return len(p), nil
	}
	// A line alone is taken whatever its size, so that a long line is
	// never lost to a stderr that drains.
	if len(s.buf) > 0 && len(s.buf)+len(p) > s.max {
		s.droppedLines += bytes.Count(p, []byte{'\n'})
		s.droppedBytes += len(p)
		return len(p), nil
	}
	if len(s.buf) == 0 && !now {
		s.timer.Reset(s.delay)
	}
	s.buf = append(s.buf, p...)
	if now || len(s.buf) >= s.limit {
		s.notify()
	}
	return len(p), nil
}

// writeClosed handles a line that comes after Close: it is written at once
// if the writer finished, and dropped if Close gave up on a stuck stderr.
// Callers hold mu.
func (s *Sink) writeClosed(p []byte) {
	select {
	case <-s.done:
		s.w.Write(p) // a log that cannot be written has nowhere to report it
	default:
	}
}

// writeLoop is the writer goroutine: each time it is woken it takes what is
// buffered, leaving its previous buffer in its place, and writes it.
func (s *Sink) writeLoop() {
	defer close(s.done)
	out := make([]byte, 0, s.limit)
	for range s.wake {
		s.mu.Lock()
		out, s.buf = s.buf, out[:0]
		lines, size := s.droppedLines, s.droppedBytes
		s.droppedLines, s.droppedBytes = 0, 0
		closed := s.closed
		s.mu.Unlock()
		if len(out) > 0 {
			s.w.Write(out) // a log that cannot be written has nowhere to report it
		}
		if lines > 0 {
			// They were dropped after the lines just written and before
			// any still buffered, so the warning stands where they were.
			s.warn.Warn("log: lines dropped because stderr was not draining", "lines", lines, "bytes", size)
		}
		if closed {
			return
		}
	}
}

// Close writes out what is buffered, waiting at most closeWait for a stderr
// that does not drain; what it could not write is lost. Later lines are
// written at once.
func (s *Sink) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.timer.Stop()
	s.mu.Unlock()
	s.notify()
	wait := time.NewTimer(s.closeWait)
	defer wait.Stop()
	select {
	case <-s.done:
	case <-wait.C: // stderr is stuck: do not hold up the exit for it
	}
}

// Direct returns a writer that buffers like Write but wakes the writer at
// once, for lines that should not wait (start, warnings, errors).
func (s *Sink) Direct() io.Writer { return directWriter{s} }

// directWriter writes through its sink at once; see Sink.Direct.
type directWriter struct{ s *Sink }

func (d directWriter) Write(p []byte) (int, error) { return d.s.add(p, true) }
