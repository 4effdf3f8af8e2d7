// Package bodybudget bounds the memory that request bodies hold at once,
// across all requests, so that a thousand clients each sending a large
// body cannot make the process hold a gigabyte, and so that no client can
// hold the others' bodies back.
//
// A body takes memory as its bytes arrive, block by block as its buffer
// grows (Read), so a body declared large and sent slowly holds only what
// has come. Three rules keep every body able to finish:
//
//   - Two bodies that each hold part of what they need never wait for each
//     other: the budget keeps a reserve of one largest body, which only one
//     body at a time may hold, and only it may take the last blocks.
//   - One API key may claim at most a quarter of the budget at once,
//     counted by its bodies' largest sizes, so one key's slow bodies cannot
//     hold another key's back; a body over its key's share waits in turn
//     with that key's other bodies and nobody else's.
//   - A body that must wait for memory first ends the bodies that have
//     waited on their clients the longest, those that have for StallAfter,
//     as many as it takes to serve every body waiting for memory (their
//     reads are given up, as a body sent too slowly is): however many keys
//     stall bodies, neither they nor the reserve hold another key's body
//     back for more than the moment that takes.
//
// Everything here is safe for concurrent use. A small body, the usual
// create, costs a lookup of its key's share, two compare-and-swaps, one
// short lock of its key's list of bodies and, when done, the same again.
package bodybudget

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Block is the unit in which bodies take memory.
const Block = 64 << 10

// StallAfter is how long a body must have waited on its client (no byte
// arrived) before a body that needs memory may end it.
const StallAfter = time.Second

var (
	// ErrWait: a body waited longer than the budget's maxWait for memory.
	ErrWait = errors.New("request body waited too long for memory")
	// ErrKeyWait: a body waited longer than maxWait for its key's share.
	ErrKeyWait = errors.New("request body waited too long for its API key's share of memory")
)

// Budget is the memory bodies may hold at once. A nil *Budget bounds
// nothing.
type Budget struct {
	largest  int64        // bytes of the largest body
	free     atomic.Int64 // blocks not taken
	reserve  int64        // blocks only the body holding the reserve may take
	reserved atomic.Bool  // a body holds the reserve
	perKey   int64        // blocks the bodies of one key may claim at once
	queue    waitLine     // bodies waiting for blocks
	demand   atomic.Int64 // blocks the bodies in queue wait for
	maxWait  time.Duration
	epoch    time.Time // progress times are counted from it

	shares   atomic.Pointer[map[[32]byte]*keyShare] // copied on write
	sharesMu sync.Mutex                             // serialises the writes
}

// keyShare is what the bodies of one API key have claimed, and the bodies
// being read, in the order they began.
type keyShare struct {
	claimed atomic.Int64
	queue   waitLine // bodies of this key waiting for its share

	mu     sync.Mutex
	bodies map[*Hold]struct{}
}

// Hold is what one body holds of a Budget, from Read until Release. Its
// zero value is ready.
type Hold struct {
	share    *keyShare    // nil until claimed
	claimed  int64        // blocks counted in share
	blocks   atomic.Int64 // blocks taken: the body's alone to change
	reserve  bool         // holds the budget's reserve
	deadline time.Time    // of the body's waits, set by the first

	progress atomic.Int64 // since the budget's epoch: when a byte last came; 0 while it waits for memory
	abort    func()       // ends the body's read (see Read)
	aborted  atomic.Bool
}

// New returns a budget of size bytes, rounded down to whole blocks, for
// bodies of at most largest bytes, which wait at most maxWait for memory.
// It must hold at least one largest body for every body to fit.
func New(size, largest int64, maxWait time.Duration) *Budget {
	blocks := max(1, size/Block)
	maxBlocks := blocksFor(largest + 1) // an undeclared body is read a byte past largest
	b := &Budget{largest: largest, reserve: min(maxBlocks, blocks), perKey: max(blocks/4, maxBlocks),
		queue: newWaitLine(), maxWait: maxWait, epoch: time.Now()}
	b.free.Store(blocks)
	b.shares.Store(&map[[32]byte]*keyShare{})
	return b
}

func blocksFor(bytes int64) int64 { return (bytes + Block - 1) / Block }

// Read reads all of body into memory taken from b, which it records in h,
// also on error; give it back with Release once the bytes are no longer
// needed. size is the declared length (at most the largest), or -1 when
// it is not declared: then up to a byte past the largest is read, so that
// a caller sees a body too large. key is the SHA-256 of the API key that
// sends the body. abort ends the read under way (a past read deadline),
// for a body that needs memory and finds this one stalled on its client.
func (b *Budget) Read(ctx context.Context, h *Hold, key [32]byte, body io.Reader, size int64, abort func()) ([]byte, error) {
	limit := size
	if size < 0 {
		limit = b.largestOr(1<<20) + 1
	}
	if b != nil && limit > 0 {
		if err := b.claim(ctx, h, key, blocksFor(limit), abort); err != nil {
			return nil, err
		}
	}
	var buf []byte
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			grown := min(max(2*int64(cap(buf)), Block), limit)
			if b != nil {
				if err := b.take(ctx, h, blocksFor(grown)-h.blocks.Load()); err != nil {
					return nil, err
				}
			}
			buf = append(make([]byte, 0, grown), buf...)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if n > 0 && b != nil {
			h.progress.Store(b.now())
		}
		if err == io.EOF {
			if size >= 0 && int64(len(buf)) < size {
				return nil, io.ErrUnexpectedEOF
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// largestOr returns the budget's largest body, or def without a budget.
func (b *Budget) largestOr(def int64) int64 {
	if b == nil {
		return def
	}
	return b.largest
}

func (b *Budget) now() int64 { return int64(time.Since(b.epoch)) | 1 }

// claim counts blocks against the share of key, waiting while that share
// is spent, records it in h, and lists h among the bodies being read.
func (b *Budget) claim(ctx context.Context, h *Hold, key [32]byte, blocks int64, abort func()) error {
	share := b.shareOf(key)
	if share.queue.waiting.Load() != 0 || !takeBelow(&share.claimed, blocks, b.perKey) {
		try := func() bool { return takeBelow(&share.claimed, blocks, b.perKey) }
		if err := share.queue.wait(ctx, b.deadline(h), try, ErrKeyWait); err != nil {
			return err
		}
	}
	h.share, h.claimed, h.abort = share, blocks, abort
	h.progress.Store(b.now())
	share.mu.Lock()
	share.bodies[h] = struct{}{}
	share.mu.Unlock()
	return nil
}

// take takes n more blocks for h. While the budget has none to spare, it
// first ends the body stalled longest (see endStalled), then waits.
func (b *Budget) take(ctx context.Context, h *Hold, n int64) error {
	if h.reserve {
		// The reserve holds all that a body may still need.
		if !takeAbove(&b.free, n, 0) {
			return ErrWait // only if the budget cannot hold a largest body
		}
		h.blocks.Add(n)
		return nil
	}
	if b.queue.waiting.Load() != 0 || !takeAbove(&b.free, n, b.reserve) {
		// Waiting for memory is not waiting on the client.
		h.progress.Store(0)
		b.demand.Add(n)
		defer func() { b.demand.Add(-n); h.progress.Store(b.now()) }()
		// Enough for every body in line, this one included, leaving the
		// reserve.
		b.endStalled(h, b.demand.Load()+b.reserve-b.free.Load())
		try := func() bool {
			if takeAbove(&b.free, n, b.reserve) {
				return true
			}
			if !h.reserve && b.reserved.CompareAndSwap(false, true) {
				h.reserve = true
			}
			return h.reserve && takeAbove(&b.free, n, 0)
		}
		if err := b.queue.wait(ctx, b.deadline(h), try, ErrWait); err != nil {
			return err
		}
	}
	h.blocks.Add(n)
	return nil
}

// endStalled ends the reads of the bodies, other than h, that have waited
// on their clients the longest, those that have for StallAfter, until they
// hold need blocks or more: each read fails and gives back what it holds.
func (b *Budget) endStalled(h *Hold, need int64) {
	for need > 0 {
		out, share := b.stalledLongest(h)
		if out == nil {
			return
		}
		// Under its share's lock, as Release takes it out: a body is
		// never ended once it has given back what it held.
		share.mu.Lock()
		if _, reading := share.bodies[out]; reading && out.aborted.CompareAndSwap(false, true) {
			need -= out.blocks.Load()
			if out.abort != nil {
				out.abort()
			}
		}
		share.mu.Unlock()
	}
}

// stalledLongest returns the body other than h that has waited on its
// client the longest, if one has for StallAfter and is not ended yet, and
// its key's share.
func (b *Budget) stalledLongest(h *Hold) (*Hold, *keyShare) {
	var out *Hold
	var outShare *keyShare
	oldest := b.now() - int64(StallAfter)
	for _, share := range *b.shares.Load() {
		share.mu.Lock()
		for other := range share.bodies {
			if p := other.progress.Load(); other != h && p != 0 && p <= oldest && !other.aborted.Load() {
				out, outShare, oldest = other, share, p
			}
		}
		share.mu.Unlock()
	}
	return out, outShare
}

// Release gives back all that h holds.
func (b *Budget) Release(h *Hold) {
	if b == nil {
		return
	}
	if h.share != nil {
		h.share.mu.Lock()
		delete(h.share.bodies, h)
		h.share.mu.Unlock()
	}
	blocks := h.blocks.Swap(0)
	if blocks > 0 {
		b.free.Add(blocks)
	}
	if h.reserve {
		b.reserved.Store(false)
	}
	if blocks > 0 || h.reserve {
		b.queue.signal()
	}
	if h.share != nil {
		h.share.claimed.Add(-h.claimed)
		h.share.queue.signal()
	}
	h.share, h.claimed, h.reserve = nil, 0, false
}

// Aborted reports whether h's read was ended to make room (see Read).
func (h *Hold) Aborted() bool { return h.aborted.Load() }

// Free returns the blocks not taken; Waiting how many bodies wait for
// memory; Reserved whether a body holds the reserve; PerKey the blocks one
// key's bodies may claim at once. For tests and metrics.
func (b *Budget) Free() int64    { return b.free.Load() }
func (b *Budget) Waiting() int64 { return b.queue.waiting.Load() }
func (b *Budget) Reserved() bool { return b.reserved.Load() }
func (b *Budget) PerKey() int64  { return b.perKey }

// deadline returns when the waits of h end, counted from its first.
func (b *Budget) deadline(h *Hold) time.Time {
	if h.deadline.IsZero() {
		h.deadline = time.Now().Add(b.maxWait)
	}
	return h.deadline
}

// shareOf returns the share of key. Keys are only those a request was
// accepted with, so the map stays as small as the set of keys.
func (b *Budget) shareOf(key [32]byte) *keyShare {
	if s, ok := (*b.shares.Load())[key]; ok {
		return s
	}
	b.sharesMu.Lock()
	defer b.sharesMu.Unlock()
	old := *b.shares.Load()
	if s, ok := old[key]; ok {
		return s
	}
	s := &keyShare{queue: newWaitLine(), bodies: make(map[*Hold]struct{})}
	m := make(map[[32]byte]*keyShare, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[key] = s
	b.shares.Store(&m)
	return s
}

// takeAbove takes n from c if at least floor is left.
func takeAbove(c *atomic.Int64, n, floor int64) bool {
	for {
		v := c.Load()
		if v-n < floor {
			return false
		}
		if c.CompareAndSwap(v, v-n) {
			return true
		}
	}
}

// takeBelow adds n to c if it stays at most limit.
func takeBelow(c *atomic.Int64, n, limit int64) bool {
	for {
		v := c.Load()
		if v+n > limit {
			return false
		}
		if c.CompareAndSwap(v, v+n) {
			return true
		}
	}
}

// waitLine is where readers wait for room, in turn: a large body is not
// passed over again and again by small ones.
type waitLine struct {
	turn    chan struct{} // one token: the waiter next in line
	room    chan struct{} // a release wakes the waiter in line
	waiting atomic.Int64  // readers in the line
}

func newWaitLine() waitLine {
	return waitLine{turn: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// wait calls try, in turn, until it succeeds, ctx ends (its error) or
// deadline passes (late).
func (q *waitLine) wait(ctx context.Context, deadline time.Time, try func() bool, late error) error {
	q.waiting.Add(1) // before trying again: a release now wakes us
	defer q.waiting.Add(-1)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case q.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return late
	}
	defer func() { <-q.turn }()
	for !try() {
		select {
		case <-q.room:
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return late
		}
	}
	return nil
}

// signal wakes the waiter in line, if there is one.
func (q *waitLine) signal() {
	if q.waiting.Load() > 0 {
		select {
		case q.room <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}
