package main

import (
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/logsink"
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
func newTestBoost(t *testing.T, clock *atomic.Int64) (*procsBoost, *fakeProcs) {
	clock.Store(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).UnixNano())
	procs := &fakeProcs{procs: 1}
	start := time.Unix(0, clock.Load())
	b := &procsBoost{set: procs.set, restore: func() { procs.set(1) }, now: func() time.Time { return time.Unix(0, clock.Load()) }, start: start,
		idleAfter: time.Hour, log: slog.New(slog.DiscardHandler)}
	t.Cleanup(b.stop)
	return b, procs
}

// The boost raises GOMAXPROCS on the first batch, once, and restores it
// after idleAfter without batches, not before; stop ends it for good.
func TestProcsBoost(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	b, procs := newTestBoost(t, &clock)

	b.batch(3)
	b.batch(5)
	if n, calls := procs.get(); n != 2 || !slices.Equal(calls, []int{2}) {
		t.Fatalf("after batches: GOMAXPROCS %d, calls %v; want 2, [2]", n, calls)
	}
	clock.Add(int64(30 * time.Minute))
	b.batch(1)
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
	b.batch(1)
	b.stop()
	b.batch(1)
	b.check()
	if n, calls := procs.get(); n != 1 || !slices.Equal(calls, []int{2, 1, 2, 1}) {
		t.Errorf("raise, stop, then a batch: GOMAXPROCS %d, calls %v; want 1, [2 1 2 1]", n, calls)
	}
}

// A batch that arrives while check is lowering (it saw the boost still on,
// so it did not raise) makes check raise again.
func TestProcsBoostBatchDuringCheck(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	b, procs := newTestBoost(t, &clock)
	b.batch(1)
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

func TestNewProcsBoostNotNeeded(t *testing.T) {
	t.Parallel()
	if b := newProcsBoost(2, slog.New(slog.DiscardHandler)); b != nil {
		t.Errorf("a boost with GOMAXPROCS already 2")
	}
}

// The real binary on one CPU: with a journal, the first create raises
// GOMAXPROCS; with :memory:, or with GOMAXPROCS set explicitly, nothing does.
func TestRunBoostsProcsForJournalWrites(t *testing.T) {
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("taskset is not installed")
	}
	dir := t.TempDir()
	tests := []struct {
		name        string
		env         map[string]string
		wantBoosted bool
	}{
		{"journal", map[string]string{"PETSTORE_DATA": filepath.Join(dir, "a.jsonl")}, true},
		{"memory", map[string]string{"PETSTORE_DATA": memoryPath}, false},
		{"journal with GOMAXPROCS=1", map[string]string{"PETSTORE_DATA": filepath.Join(dir, "b.jsonl"), "GOMAXPROCS": "1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startBinary(t, tt.env, withPrefix(taskset, "-c", "0"))
			resp, body := send(t, newClient(t), "POST", p.url("/v1/categories"), binKey, `{"name":"dog"}`, nil)
			wantStatus(t, "create", resp, body, http.StatusCreated)
			// The boost is logged before the create's 201; the access line
			// of the create follows within the log's flush delay.
			if p.waitLog(10*logsink.FlushDelay, func(l logLine) bool { return l["msg"] == "request" }) == nil {
				t.Fatalf("no access line for the create")
			}
			boosted := p.waitLog(0, func(l logLine) bool {
				msg, _ := l["msg"].(string)
				return strings.HasPrefix(msg, "journal writes: GOMAXPROCS raised") && l["gomaxprocs"] == float64(2)
			}) != nil
			if boosted != tt.wantBoosted {
				t.Errorf("GOMAXPROCS raised: got %v, want %v", boosted, tt.wantBoosted)
			}
		})
	}
}
