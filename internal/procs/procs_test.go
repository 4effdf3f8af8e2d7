package procs

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeProcs records GOMAXPROCS calls.
type fakeProcs struct {
	mu    sync.Mutex
	procs int
	calls []int
}

// set is runtime.GOMAXPROCS: n < 1 only asks.
func (f *fakeProcs) set(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.procs
	if n < 1 {
		return old
	}
	f.procs = n
	f.calls = append(f.calls, n)
	return old
}

func (f *fakeProcs) get() (int, []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs, slices.Clone(f.calls)
}

// newTestBoost returns a boost over fake GOMAXPROCS and a clock the test
// moves; its timer never fires on its own (checks are called directly).
func newTestBoost(t *testing.T, clock *atomic.Int64) (*Boost, *fakeProcs) {
	clock.Store(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).UnixNano())
	procs := &fakeProcs{procs: 1}
	start := time.Unix(0, clock.Load())
	b := &Boost{set: procs.set, restore: func() { procs.set(1) }, now: func() time.Time { return time.Unix(0, clock.Load()) }, start: start,
		idleAfter: time.Hour, log: slog.New(slog.DiscardHandler)}
	t.Cleanup(b.Stop)
	return b, procs
}

// The boost raises GOMAXPROCS on the first batch, once, and restores it
// after idleAfter without batches, not before; stop ends it for good.
func TestBoost(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	b, procs := newTestBoost(t, &clock)

	b.Batch(3)
	b.Batch(5)
	if n, calls := procs.get(); n != 2 || !slices.Equal(calls, []int{2}) {
		t.Fatalf("after batches: GOMAXPROCS %d, calls %v; want 2, [2]", n, calls)
	}
	clock.Add(int64(30 * time.Minute))
	b.Batch(1)
	clock.Add(int64(45 * time.Minute)) // 45 min since the last batch: not idle yet
	b.check()
	if n, _ := procs.get(); n != 2 {
		t.Fatalf("lowered 45 min after a batch, idleAfter is 1 h")
	}
	clock.Add(int64(15 * time.Minute))
	b.check()
	if n, calls := procs.get(); n != 1 || !slices.Equal(calls, []int{2, 1}) {
		t.Fatalf("after 1 h idle: GOMAXPROCS %d, calls %v; want 1, [2 1]", n, calls)
	}
	b.Batch(1)
	b.Stop()
	b.Batch(1)
	b.check()
	if n, calls := procs.get(); n != 1 || !slices.Equal(calls, []int{2, 1, 2, 1}) {
		t.Errorf("raise, stop, then a batch: GOMAXPROCS %d, calls %v; want 1, [2 1 2 1]", n, calls)
	}
}

// A batch that arrives while check is lowering (it saw the boost still on,
// so it did not raise) makes check raise again.
func TestBoostBatchDuringCheck(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	b, procs := newTestBoost(t, &clock)
	b.Batch(1)
	clock.Add(int64(2 * time.Hour))
	// The batch's store of lastBatch lands between check's read of it and
	// its decision, as a concurrent writer's could.
	inner := b.now
	var once sync.Once
	b.now = func() time.Time {
		now := inner()
		once.Do(func() { b.lastBatch.Store(int64(now.Sub(b.start)) + 1) })
		return now
	}
	b.check()
	if n, calls := procs.get(); n != 2 || !slices.Equal(calls, []int{2, 1, 2}) {
		t.Errorf("GOMAXPROCS %d, calls %v; want 2 again, [2 1 2]", n, calls)
	}
}

func TestNewNotNeeded(t *testing.T) {
	t.Parallel()
	if b := New(2, slog.New(slog.DiscardHandler)); b != nil {
		t.Errorf("a boost with GOMAXPROCS already 2")
	}
}
