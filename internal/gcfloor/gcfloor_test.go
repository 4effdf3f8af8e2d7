package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 32 * mib, 100},                 // nothing measured yet
		{1 * mib, 32 * mib, 3100},          // goal 1 MiB × 32 = the floor
		{4 * mib, 32 * mib, 700},           // 4 MiB × 8
		{16 * mib, 32 * mib, 100},          // twice live is the floor already
		{200 * mib, 32 * mib, 100},         // a large catalogue: as without a floor
		{10 * 1024, 32 * mib, 10_000},      // a live heap near nothing: bounded
		{15 * mib, 32 * mib, 113},          // just under half the floor
		{1 * mib, 0, 100},                  // no floor
		{32*mib + 1, 32 * mib, 100},        // above the floor
		{32 * mib / 3, 32 * mib, 200},      // a third
		{1, 1 << 62, maxPercent},           // no overflow at the extremes
		{1 << 61, 1 << 62, 100},            // half of a huge floor
		{1<<61 - 1, 1 << 62, 100},          // rounding down to 100
		{3 * mib, 32 * mib, 966},           // 32/3 × 100 − 100, rounded down
		{5 * mib / 2, 32 * mib, 1180},      // 12.8 × 100 − 100
		{31 * mib / 2, 32 * mib, 106},      // 2.06 × 100 − 100
		{16*mib - 1, 32 * mib, 100},        // 2.0000001 × 100 − 100
		{16*mib + 1, 32 * mib, 100},        // above half
		{8 * mib, 32 * mib, 300},           // a quarter
		{32 * mib / 101, 32 * mib, 10_000}, // 101 × 100 − 100 = 10,000
	} {
		if got := Percent(tt.live, tt.floor); got != tt.want {
			t.Errorf("Percent(%d, %d): got %d, want %d", tt.live, tt.floor, got, tt.want)
		}
	}
}

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// cycles returns the collections the Tuner has seen.
func (t *Tuner) seen() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cycles
}

// collectUntilSeen runs collections until the Tuner has seen n more; its
// cleanups run after a collection, on a goroutine of their own.
func collectUntilSeen(t *testing.T, tu *Tuner, n int) {
	t.Helper()
	want := tu.seen() + n
	deadline := time.Now().Add(10 * time.Second)
	for tu.seen() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the tuner saw %d collections in 10 s, want %d", tu.seen(), want)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

var keep [][]byte

// With a small live heap the goal rises to the floor; with a live heap of
// more than half the floor the percent is 100 again; Stop puts back the
// percent it found, and collections after it change nothing.
func TestHeapGoalFollowsTheFloor(t *testing.T) {
	const floor = 64 << 20
	old := debug.SetGCPercent(150)
	defer debug.SetGCPercent(old)

	tu := Start(floor)
	collectUntilSeen(t, tu, 2)
	if got := read("/gc/gogc:percent"); got <= 150 {
		t.Fatalf("GC percent with a live heap of %d bytes: got %d, want it raised", read("/gc/heap/live:bytes"), got)
	}
	if goal := read("/gc/heap/goal:bytes"); goal < floor*9/10 {
		t.Errorf("heap goal: got %d bytes, want about %d", goal, floor)
	}

	// 40 MiB live, pointer-free: twice that is above the floor.
	for range 40 {
		keep = append(keep, make([]byte, 1<<20))
	}
	collectUntilSeen(t, tu, 2)
	if got := read("/gc/gogc:percent"); got != 100 {
		t.Errorf("GC percent with a live heap of %d bytes: got %d, want 100", read("/gc/heap/live:bytes"), got)
	}
	keep = nil
	collectUntilSeen(t, tu, 2)
	if got := read("/gc/gogc:percent"); got <= 150 {
		t.Errorf("GC percent once the heap is small again: got %d, want it raised", got)
	}

	tu.Stop()
	if got := read("/gc/gogc:percent"); got != 150 {
		t.Errorf("GC percent after Stop: got %d, want 150 (as at Start)", got)
	}
	for range 3 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := read("/gc/gogc:percent"); got != 150 {
		t.Errorf("GC percent after collections that followed Stop: got %d, want 150", got)
	}
	tu.Stop() // a second Stop changes nothing
}
