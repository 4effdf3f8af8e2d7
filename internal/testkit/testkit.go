// Package testkit holds what the tests of several petstore packages share:
// a buffer that concurrent writers (a log) and the test may use at once, a
// bounded wait for a condition, a lock that runs floods one at a time
// across packages, the number of parallel tests of packages whose tests
// wait on processes more than on the CPU, and a clock a test moves by hand.
// Only tests import it; the petstore binary is internal/petstoretest's.
package testkit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// Exclusive makes the rest of the test run alone among the tests of every
// package that ask for the same name, as go test runs packages in parallel
// processes: floods of connections each need the machine's CPUs to hold
// their own timing bounds. It waits for the others, then holds an flock of
// a file in the temporary directory until the test ends.
func Exclusive(t testing.TB, name string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "petstore-test-"+name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() }) // closing the file releases the lock
}

// RaiseParallel lets up to n of the package's parallel tests run at once
// rather than GOMAXPROCS, unless -test.parallel was given: for a package
// whose long tests wait on processes they started (etcd members, the
// binary, a browser, another language's client) or on timers they must
// wait out, not on the CPU, and whose floods wait their turn for
// Exclusive. A TestMain calls it after flag.Parse and before m.Run.
func RaiseParallel(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
}

// Clock is a clock a test moves by hand; it starts at a fixed instant.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock at 2026-11-23 12:00 UTC.
func NewClock() *Clock {
	c := &Clock{}
	c.ns.Store(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

// Now is the clock's time, for code that takes a func() time.Time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
