package store

import (
	"context"
	"sync"
	"time"

	"petstore/internal/catalog"
)

// Memory keeps categories in memory only:
// nothing is written, and a restart starts empty. It is safe for
// concurrent use: creates take a mutex, reads take a snapshot.
type Memory struct {
	idx   *catalog.Index
	keyed createPath
	now   func() time.Time
	max   int64 // categories at most

	mu    sync.Mutex // serialises creates
	seen  map[string]*createRequest
	batch [1]*createRequest
}

// NewMemory returns an empty memory store; of opts it uses the
// Idempotency-Key expiry and clock, and the bound on the catalogue.
func NewMemory(opts Options) *Memory {
	opts = opts.withDefaults()
	s := &Memory{idx: catalog.NewIndex(0, 0), now: opts.Now, max: opts.MaxCategories, seen: make(map[string]*createRequest)}
	s.keyed = createPath{keys: newIdempotencyTable(opts.IdempotencyTTL, opts.Now), get: s.Get, commit: s.commit}
	return s
}

// List returns every category, sorted by id: an immutable snapshot that
// no later create changes.
func (s *Memory) List(context.Context) (*catalog.Snapshot, error) { return s.idx.Snapshot(), nil }

// Get returns the JSON of category id, or a *catalog.NotFoundError.
func (s *Memory) Get(_ context.Context, id int64) ([]byte, error) {
	return getFrom(s.idx.Snapshot(), id)
}

// Create stores nc and returns its id and JSON; see the package comment
// for Idempotency-Keys and the errors it returns.
func (s *Memory) Create(ctx context.Context, nc catalog.NewCategory) (Created, error) {
	return s.keyed.create(ctx, nc)
}

// commit stores one create.
func (s *Memory) commit(req *createRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch[0] = req
	if assignBatch(s.idx, s.batch[:], s.seen, s.now(), s.max) > 0 {
		applyBatch(s.idx, s.batch[:])
	}
	s.batch[0] = nil
}

// Health returns why creates cannot be taken now, or nil.
func (s *Memory) Health() error { return nil }

// Close does nothing: a memory store holds nothing to release.
func (s *Memory) Close() error { return nil }

// RecordsRefused returns 0: a memory store holds only what it was given.
func (s *Memory) RecordsRefused() uint64 { return 0 }
