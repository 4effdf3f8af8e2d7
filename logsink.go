package main

import (
	"io"
	"sync"
	"time"
)

// logSink is stderr for the logs. Access log lines are buffered and written
// in batches, so that a request does not cost a write system call: a batch
// goes out when it reaches flushSize, flushDelay after its first line, or at
// Close. Every other line (start, warnings, errors) goes through Direct,
// which writes at once, after whatever is buffered, so lines keep their order.
//
// Measured with `make bench-load`: writing each access line on its own cost
// petstore 15–25% of its GET throughput on one CPU.
type logSink struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	timer *time.Timer // flushes flushDelay after the first buffered line
	delay time.Duration
	limit int
}

// How long and how much access lines wait before they are written.
const (
	logFlushSize  = 32 << 10
	logFlushDelay = 100 * time.Millisecond
)

// newLogSink returns a sink that writes to w in batches of about limit
// bytes, at most delay after their first line.
func newLogSink(w io.Writer, limit int, delay time.Duration) *logSink {
	s := &logSink{w: w, limit: limit, delay: delay, buf: make([]byte, 0, limit)}
	s.timer = time.AfterFunc(time.Hour, s.Flush)
	s.timer.Stop()
	return s
}

// Write buffers p, one or more whole log lines.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) == 0 {
		s.timer.Reset(s.delay)
	}
	s.buf = append(s.buf, p...)
	if len(s.buf) >= s.limit {
		s.flushLocked()
	}
	return len(p), nil
}

// Flush writes out what is buffered.
func (s *logSink) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *logSink) flushLocked() {
	if len(s.buf) == 0 {
		return
	}
	s.timer.Stop()
	s.w.Write(s.buf) // a log that cannot be written has nowhere to report it
	s.buf = s.buf[:0]
}

// Close flushes what is buffered. Later lines are written at once.
func (s *logSink) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	s.limit = 0
}

// Direct returns a writer that writes at once, after the buffered lines.
func (s *logSink) Direct() io.Writer { return directWriter{s} }

// directWriter writes through its sink at once; see logSink.Direct.
type directWriter struct{ s *logSink }

func (d directWriter) Write(p []byte) (int, error) {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	d.s.flushLocked()
	return d.s.w.Write(p)
}
