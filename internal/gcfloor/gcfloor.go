// Package gcfloor keeps the garbage collector from running every few
// megabytes of allocation while the heap is small.
//
// With GOGC=100 the runtime collects when the heap reaches twice what the
// last collection left live, but at 4 MiB at least. petstore keeps about
// 1 MiB live with a small catalogue, and every request allocates some
// 3 KiB that dies with it (net/http's request, header maps and buffers):
// a collection every 700 or so answers, 6 % of a GET's instructions under
// load (docs/performance.md, "Where a list's time goes"). A floor moves
// the next collection to Floor bytes of heap while twice the live heap is
// less than that, by setting the GC percent after each collection: with a
// large catalogue the percent stays 100, and the heap grows as it did. The
// percent also scales the runtime's own 4 MiB minimum, so it stays at or
// below Floor/40 KiB (800 for 32 MiB).
//
// The percent belongs to the process: run one floor per process. An
// operator's GOGC is for the caller to honour, by not starting one.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Floor is the heap size petstore lets the runtime reach before it
// collects: 32 MiB, a few times the resident size of a petstore with a
// small catalogue, and a collection every 10,000 or so answers.
const Floor = 32 << 20

// runtimeMinimum is the runtime's own floor at GOGC=100. It scales with
// the percent: a percent p sets it to 4 MiB × p/100, so a percent above
// Floor/40 KiB would raise the goal above Floor however little is live.
const runtimeMinimum = 4 << 20

// A Tuner sets the GC percent after each collection until Stop.
type Tuner struct {
	floor   uint64
	initial int // the percent at Start, put back at Stop

	mu      sync.Mutex
	stopped bool
	percent int
	samples []metrics.Sample
	cycles  int // collections seen, for tests
}

// Start begins to keep the heap goal at floor bytes, or twice the live
// heap when that is more, from the next collection on; Stop ends it.
func Start(floor uint64) *Tuner {
	initial := debug.SetGCPercent(100)
	debug.SetGCPercent(initial)
	t := &Tuner{floor: floor, initial: initial, percent: initial, samples: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
	}}
	t.arm()
	return t
}

// sentinel is an object nothing refers to, whose cleanup tells the Tuner
// that a collection has run. It holds a pointer so as not to be put in
// the tiny allocator's blocks, which are freed only together.
type sentinel struct {
	_ *byte
	_ [2]uint64
}

func (t *Tuner) arm() {
	runtime.AddCleanup(new(sentinel), (*Tuner).collected, t)
}

// collected runs after each collection: it sets the percent for the next
// and arms itself again. Setting the percent takes the heap's lock; it
// does not stop the world.
func (t *Tuner) collected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.cycles++
	metrics.Read(t.samples)
	want := Percent(t.samples[0].Value.Uint64(), t.samples[1].Value.Uint64()+t.samples[2].Value.Uint64(), t.floor)
	if want != t.percent {
		debug.SetGCPercent(want)
		t.percent = want
	}
	t.arm()
}

// Percent is the GC percent that puts the next collection at floor bytes
// of heap, when live bytes of heap survived the last one and roots bytes
// of goroutine stacks and globals are scanned besides: the runtime's goal
// is live + (live + roots) × percent/100, and at least 4 MiB ×
// percent/100. It is 100, Go's default, once that puts the goal at floor
// or above (twice live is floor or more, or nearly).
func Percent(live, roots, floor uint64) int {
	if live >= floor {
		return 100
	}
	p := float64(floor-live) * 100 / float64(max(live+roots, 1))
	p = min(p, float64(floor)*100/runtimeMinimum, 1e6) // the runtime keeps it in an int32
	return max(100, int(p))
}

// Stop puts back the percent of Start; collections after it change
// nothing.
func (t *Tuner) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetGCPercent(t.initial)
	}
}
