// Package procs raises GOMAXPROCS to 2 while a journal is being written
// and puts it back once writes have stopped for a while.
//
// The journal's writer goroutine blocks in write and fdatasync. With a
// single P (a process limited to one CPU, by taskset or a cpuset) Go lets
// requests wait behind that system call: pinned to one CPU, 64 concurrent
// durable creates had a p99 of 40–840 ms with one P and 9.6 ms with two
// (make bench-load). But a second P on one CPU costs reads: GET of 100
// categories fell from 28k to 24.5k requests/s and its p99 rose from 5 ms
// to 18 ms. So the second P is there only while creates are being made
// durable.
//
// A Boost is safe for concurrent use. GOMAXPROCS belongs to the process:
// run one Boost, and one petstore, per process.
package procs

import (
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const (
	boostedProcs   = 2
	boostIdleAfter = 10 * time.Second
)

// Boost raises GOMAXPROCS on a journal batch (Batch) and restores the
// runtime's default once no batch came for 10 s, or at Stop.
type Boost struct {
	set       func(int) int // runtime.GOMAXPROCS
	restore   func()        // back to the runtime's own default
	now       func() time.Time
	start     time.Time // lastBatch counts from here, on the monotonic clock
	idleAfter time.Duration
	log       *slog.Logger

	lastBatch atomic.Int64 // time since start of the latest batch
	boosted   atomic.Bool

	mu      sync.Mutex // serialises raising, lowering and stopping
	timer   *time.Timer
	stopped bool
}

// New returns a boost for a process whose GOMAXPROCS is base, or nil when
// base is 2 or more already and there is nothing to do. It logs each
// raise and each restore to log.
func New(base int, log *slog.Logger) *Boost {
	if base >= boostedProcs {
		return nil
	}
	// Restoring with SetDefaultGOMAXPROCS, not GOMAXPROCS(base), gives the
	// runtime back its own choice, which follows the CPU limit (cgroup quota
	// or affinity) as it changes.
	return &Boost{set: runtime.GOMAXPROCS, restore: runtime.SetDefaultGOMAXPROCS, now: time.Now, start: time.Now(), idleAfter: boostIdleAfter, log: log}
}

func (b *Boost) since() int64 { return int64(b.now().Sub(b.start)) }

// Batch is called by the journal writer before each batch (of any size):
// it raises GOMAXPROCS if it is not raised already. It costs an atomic
// store when it is.
func (b *Boost) Batch(int) {
	b.lastBatch.Store(b.since())
	if b.boosted.Load() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.boosted.Load() && !b.stopped {
		b.raise()
	}
}

// raise sets the second P and arranges a check. Callers hold mu.
func (b *Boost) raise() {
	b.set(boostedProcs)
	b.boosted.Store(true)
	b.log.Info("journal writes: GOMAXPROCS raised so that fsyncs do not stall requests", "gomaxprocs", boostedProcs)
	if b.timer == nil {
		b.timer = time.AfterFunc(b.idleAfter, b.check)
	} else {
		b.timer.Reset(b.idleAfter)
	}
}

// check lowers GOMAXPROCS once no batch came for idleAfter, else looks again.
func (b *Boost) check() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || !b.boosted.Load() {
		return
	}
	seen := b.lastBatch.Load()
	if idle := time.Duration(b.since() - seen); idle < b.idleAfter {
		b.timer.Reset(b.idleAfter - idle)
		return
	}
	b.restore()
	b.boosted.Store(false)
	b.log.Info("journal writes stopped: GOMAXPROCS restored to the runtime's default", "gomaxprocs", b.set(0))
	// A batch that came while we decided saw boosted still true and did not
	// raise: raise again for it.
	if b.lastBatch.Load() != seen {
		b.raise()
	}
}

// Stop restores GOMAXPROCS and ends the boost: later batches change nothing.
func (b *Boost) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
	if b.boosted.Load() {
		b.restore()
		b.boosted.Store(false)
	}
}
