// Package gcfloor keeps the garbage collector from running every few
// megabytes of allocation while the heap is small.
//
// With GOGC=100 the runtime collects when the heap reaches twice what the
// last collection left live, but at 4 MiB at least. petstore keeps about
// 1 MiB live with a small catalogue, and every request allocates some
// 3 KiB that dies with it (net/http's request, header maps and buffers):
// a collection every 700 or so answers, 7 % of a GET's instructions under
// load (docs/performance.md, "Where a list's time goes"). A floor moves
// the next collection to Floor bytes of heap while twice the live heap is
// less than that, by setting the GC percent after each collection: with a
// large catalogue the percent stays 100, and the heap grows as it did.
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

// maxPercent bounds the percent, for a live heap near nothing.
const maxPercent = 10_000

// A Tuner sets the GC percent after each collection until Stop.
type Tuner struct {
	floor   uint64
	initial int // the percent at Start, put back at Stop

	mu      sync.Mutex
	stopped bool
	percent int
	sample  []metrics.Sample
	cycles  int // collections seen, for tests
}

// Start begins to keep the heap goal at floor bytes or more, from the
// next collection on, and returns the Tuner; Stop ends it.
func Start(floor uint64) *Tuner {
	initial := debug.SetGCPercent(100)
	debug.SetGCPercent(initial)
	t := &Tuner{floor: floor, initial: initial, percent: initial,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
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
// and arms itself again.
func (t *Tuner) collected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.cycles++
	metrics.Read(t.sample)
	want := Percent(t.sample[0].Value.Uint64(), t.floor)
	// Setting the percent stops the world for a moment: only a change
	// of more than a quarter is worth one.
	if d := want - t.percent; d > t.percent/4 || -d > t.percent/4 {
		debug.SetGCPercent(want)
		t.percent = want
	}
	t.arm()
}

// Percent is the GC percent that puts the next collection at floor bytes
// of heap when live bytes survived the last one: 100 once twice live
// reaches floor.
func Percent(live, floor uint64) int {
	if live == 0 || float64(live)*2 >= float64(floor) {
		return 100
	}
	return int(min(float64(floor)/float64(live)*100-100, maxPercent))
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
