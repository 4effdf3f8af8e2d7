package main

import (
	"context"
	"petstore/internal/catalog"
	"sync"
	"time"
)

// memoryStore keeps categories in memory only (PETSTORE_DATA=:memory:):
// nothing is written, and a restart starts empty. It is safe for
// concurrent use: creates take a mutex, reads take a snapshot.
type memoryStore struct {
	idx   *catalog.Index
	keyed createPath
	now   func() time.Time
	max   int64 // categories at most

	mu      sync.Mutex // serialises creates
	seen    map[string]struct{}
	records []byte // assignBatch's journal lines, unused here
	batch   [1]*createRequest
}

// newMemoryStore returns an empty memory store; of opts it uses the
// Idempotency-Key expiry and clock.
func newMemoryStore(opts storeOptions) *memoryStore {
	if opts.now == nil {
		opts.now = time.Now
	}
	if opts.maxCategories <= 0 {
		opts.maxCategories = defaultMaxCategories
	}
	s := &memoryStore{idx: catalog.NewIndex(0, 0), now: opts.now, max: opts.maxCategories, seen: make(map[string]struct{})}
	s.keyed = createPath{keys: newIdempotencyTable(opts.idempotencyTTL, opts.now), get: s.Get, commit: s.commit}
	return s
}

func (s *memoryStore) List(context.Context) (*catalog.Snapshot, error) { return s.idx.Snapshot(), nil }

func (s *memoryStore) Get(_ context.Context, id int64) ([]byte, error) {
	return getFrom(s.idx.Snapshot(), id)
}

func (s *memoryStore) Create(ctx context.Context, nc catalog.NewCategory) (created, error) {
	return s.keyed.create(ctx, nc)
}

// commit stores one create.
func (s *memoryStore) commit(req *createRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch[0] = req
	var accepted int
	s.records, accepted = assignBatch(s.idx, s.batch[:], s.seen, s.records[:0], s.now(), s.max)
	if accepted > 0 {
		applyBatch(s.idx, s.batch[:])
	}
	s.batch[0] = nil
}

func (s *memoryStore) Health() error { return nil }

func (s *memoryStore) Close() error { return nil }

// getFrom returns the JSON of category id in snap, or a
// *catalog.NotFoundError.
func getFrom(snap *catalog.Snapshot, id int64) ([]byte, error) {
	if body, ok := snap.Get(id); ok {
		return body, nil
	}
	return nil, catalog.NotFound(id)
}
