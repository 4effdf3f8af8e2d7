// Package testkit holds what the tests of several petstore packages share:
// a buffer that concurrent writers (a log) and the test may use at once,
// and a bounded wait for a condition. Only tests import it.
package testkit

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// LockedBuffer is a bytes.Buffer safe for concurrent use: a log written by
// the code under test and read by the test.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of what was written so far.
func (b *LockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Lines returns every complete line written so far.
func (b *LockedBuffer) Lines() []string {
	s := b.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}

// WaitFor polls cond until it holds, failing the test after 10 s.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond) // polling a condition, not synchronising by time
	}
}
