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
		live, roots, floor uint64
		want               int
	}{
		{0, 0, 32 * mib, 800},             // nothing live: the runtime's own minimum, scaled to the floor
		{1 * mib, 0, 32 * mib, 800},       // 3,100 would put that minimum at 124 MiB
		{1 * mib, 3 * mib, 32 * mib, 775}, // 1 + 4 × 7.75 = 32
		{4 * mib, 0, 32 * mib, 700},       // 4 + 4 × 7 = 32
		{8 * mib, 0, 32 * mib, 300},       // 8 + 8 × 3 = 32
		{15 * mib, 1 * mib, 32 * mib, 106},
		{16 * mib, 0, 32 * mib, 100}, // twice live is the floor
		{16 * mib, 1 * mib, 32 * mib, 100},
		{32 * mib, 0, 32 * mib, 100},
		{200 * mib, 8 * mib, 32 * mib, 100}, // a large catalogue: as without a floor
		{0, 0, 0, 100},                      // no floor
		{30 * mib, 0, 64 * mib, 113},
		{100 * mib, 0, 64 * mib, 100},
		{1, 0, 1 << 62, 1_000_000}, // bounded: the runtime keeps the percent in an int32
	} {
		if got := Percent(tt.live, tt.roots, tt.floor); got != tt.want {
			t.Errorf("Percent(%d, %d, %d): got %d, want %d", tt.live, tt.roots, tt.floor, got, tt.want)
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

// With a small live heap the goal is the floor, not more; with a live heap
// of more than half the floor the percent is 100 again, also from the
// band just above 100 where a small change of the percent is still one;
// Stop puts back the percent it found, and collections after it change
// nothing.
func TestHeapGoalFollowsTheFloor(t *testing.T) {
	const floor = 64 << 20
	old := debug.SetGCPercent(150)
	defer debug.SetGCPercent(old)

	tu := Start(floor)
	collectUntilSeen(t, tu, 2)
	if got := read("/gc/gogc:percent"); got <= 150 {
		t.Fatalf("GC percent with a live heap of %d bytes: got %d, want it raised", read("/gc/heap/live:bytes"), got)
	}
	if goal := read("/gc/heap/goal:bytes"); goal < floor*9/10 || goal > floor*11/10 {
		t.Errorf("heap goal with a live heap of %d bytes: got %d MiB, want about %d", read("/gc/heap/live:bytes"), goal>>20, floor>>20)
	}

	// 30 MiB live, pointer-free: a percent of about 110.
	for range 30 {
		keep = append(keep, make([]byte, 1<<20))
	}
	collectUntilSeen(t, tu, 2)
	if got := read("/gc/gogc:percent"); got <= 100 || got > 120 {
		t.Errorf("GC percent with a live heap of %d bytes: got %d, want just above 100", read("/gc/heap/live:bytes"), got)
	}
	if goal := read("/gc/heap/goal:bytes"); goal > floor*11/10 {
		t.Errorf("heap goal with a live heap of %d bytes: got %d MiB, want about %d", read("/gc/heap/live:bytes"), goal>>20, floor>>20)
	}
	// 70 MiB live: twice that is above the floor.
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
