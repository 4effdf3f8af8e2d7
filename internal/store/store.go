package store

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"petstore/internal/catalog"
)

// Options are what every store is opened with; the zero value is usable.
type Options struct {
	// Log receives the store's warnings and errors; nil discards them.
	Log *slog.Logger
	// OnBatch, when set, is called before each group commit with the
	// number of creates it holds.
	OnBatch func(n int)
	// OnCommit, when set, is told of each commit that made creates
	// durable: how many, and how long the write took.
	OnCommit func(n int, took time.Duration)
	// IdempotencyTTL is how long an Idempotency-Key is kept after its
	// create; 0 is DefaultIdempotencyTTL.
	IdempotencyTTL time.Duration
	// Now is the clock of key expiry; nil is time.Now (tests move theirs).
	Now func() time.Time
	// ReadOnly opens a journal to read it only (export and import): no
	// torn tail cut, no header written or rewritten.
	ReadOnly bool
	// MaxCategories bounds the catalogue: a create beyond it is refused
	// with catalog.ErrQuotaExceeded; 0 is DefaultMaxCategories.
	MaxCategories int64
}

// DefaultMaxCategories is the bound on the catalogue unless Options set
// one: the worst case it allows on disk and in memory is in
// docs/operations.md, "Catalogue size".
const DefaultMaxCategories = 1_000_000

// DefaultIdempotencyTTL is how long an Idempotency-Key is kept after its
// create unless Options set another time.
const DefaultIdempotencyTTL = 24 * time.Hour

// withDefaults returns opts with every zero field that has a default set.
func (opts Options) withDefaults() Options {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IdempotencyTTL <= 0 {
		opts.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if opts.MaxCategories <= 0 {
		opts.MaxCategories = DefaultMaxCategories
	}
	return opts
}

// Created is what a store answers a create with.
type Created struct {
	ID       int64
	JSON     []byte // the category's JSON, as listed
	Replayed bool   // an earlier create with the same Idempotency-Key, answered again
}

// createRequest is one create on its way through a store.
type createRequest struct {
	nc   catalog.NewCategory
	key  string    // FoldName(nc.Name)
	at   time.Time // when it was committed
	cat  catalog.Category
	body []byte
	err  error
	done chan struct{} // closed when the group writer is done with it

	// replayOf is the category an earlier create with the same
	// Idempotency-Key made, found while committing (the etcd store).
	replayOf int64

	// takenInBatch: err is the name taken by a create of the same batch,
	// which is not stored until the batch is.
	takenInBatch bool
}

func newCreateRequest(nc catalog.NewCategory) *createRequest {
	return &createRequest{nc: nc, key: catalog.FoldName(nc.Name)}
}

// assignBatch decides ids and uniqueness for a batch of creates against x,
// committed at now: each accepted request gets its category and its time;
// the others get their error. Creates that would take the catalogue past
// maxCategories get catalog.ErrQuotaExceeded. seen is scratch space.
// Nothing changes in x until applyBatch. It returns how many it accepted.
func assignBatch(x *catalog.Index, batch []*createRequest, seen map[string]*createRequest, now time.Time, maxCategories int64) int {
	clear(seen)
	next := x.LastID()
	accepted := 0
	// A key's time is its create's commit, rounded up to the second as the
	// journal keeps it: it expires at the same time before and after a
	// restart, and never sooner than the TTL after the create.
	at := now.Add(time.Second - 1).Truncate(time.Second)
	for _, req := range batch {
		if holder, dup := seen[req.key]; dup {
			req.err = catalog.NameTaken(req.nc.Name, holder.cat.ID, holder.cat.Name)
			req.takenInBatch = true
			continue
		}
		if id, name, taken := x.Holder(req.key); taken {
			req.err = catalog.NameTaken(req.nc.Name, id, name)
			continue
		}
		if int64(x.Len()+accepted) >= maxCategories {
			req.err = catalog.ErrQuotaExceeded
			continue
		}
		if next == math.MaxInt64 {
			// Wrapping would hand out a negative id, which the next
			// replay refuses; failing the create keeps the file sound.
			req.err = catalog.ErrIDsExhausted
			continue
		}
		seen[req.key] = req
		next++
		req.cat = req.nc.WithID(next)
		req.at = at
		accepted++
	}
	return accepted
}

// applyBatch adds the accepted creates of a batch to x and publishes them.
func applyBatch(x *catalog.Index, batch []*createRequest) {
	for _, req := range batch {
		if req.err == nil {
			req.body, _ = x.Add(req.key, req.cat)
		}
	}
	x.Publish()
}

// failBatch gives err to every create of the batch that has no error yet.
// Those refused for a name the batch itself would have taken get a
// definite failure instead: the name is not taken after all, and nothing of
// theirs was written, whatever became of the batch.
func failBatch(batch []*createRequest, err error) {
	for _, req := range batch {
		switch {
		case req.err == nil:
			req.err = err
		case req.takenInBatch:
			req.err = fmt.Errorf("%w: the create whose name this one asked for failed", catalog.ErrUnavailable)
		}
	}
}

// getFrom returns the JSON of category id in snap, or a
// *catalog.NotFoundError.
func getFrom(snap *catalog.Snapshot, id int64) ([]byte, error) {
	if body, ok := snap.Get(id); ok {
		return body, nil
	}
	return nil, catalog.NotFound(id)
}
