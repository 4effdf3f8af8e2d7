package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// journalStore keeps categories in a journal file (see journal.go) and in
// memory. It is safe for concurrent use. Create returns only after the
// category's record is written and synced; creates that arrive while a
// write is under way share the next write and sync (group commit).
type journalStore struct {
	idx  *index // written by the group writer's goroutine only
	j    *journal
	w    *groupWriter
	keys *idempotencyTable
	now  func() time.Time
	max  int64 // categories at most

	// failed holds the error that stopped the journal, once a write could
	// not be undone; from then on creates fail until a restart.
	failed atomic.Pointer[error]

	onCommit func(n int, took time.Duration) // see storeOptions

	// Scratch space of the writer goroutine.
	seen    map[string]struct{}
	records []byte
}

// maxBatch bounds how many creates share one journal write and sync.
const maxBatch = 1024

// openJournalStore opens the journal at path and replays it.
func openJournalStore(path string, opts storeOptions) (*journalStore, error) {
	j, data, err := openJournal(path, opts.syncDir, opts.readOnly)
	if err != nil {
		return nil, err
	}
	keys := newIdempotencyTable(opts.idempotencyTTL, opts.now)
	idx, err := j.replay(data, keys, opts.log)
	if err != nil {
		j.close()
		return nil, err
	}
	if opts.maxCategories <= 0 {
		opts.maxCategories = defaultMaxCategories
	}
	s := &journalStore{idx: idx, j: j, keys: keys, now: opts.now, max: opts.maxCategories, seen: make(map[string]struct{}), onCommit: opts.onCommit}
	s.w = newGroupWriter(maxBatch, s.commit, opts.onBatch)
	return s, nil
}

func (s *journalStore) List(context.Context) (*snapshot, error) { return s.idx.snapshot(), nil }

func (s *journalStore) Get(_ context.Context, id int64) ([]byte, error) {
	return getFrom(s.idx.snapshot(), id)
}

func (s *journalStore) Create(_ context.Context, nc NewCategory) (created, error) {
	return createKeyed(s.keys, s.idx, nc, s.w.do)
}

// commit makes a batch durable with one journal write, then applies it.
// It runs on the group writer's goroutine.
func (s *journalStore) commit(batch []*createRequest) {
	if err := s.Health(); err != nil {
		failBatch(batch, err)
		return
	}
	var accepted int
	s.records, accepted = assignBatch(s.idx, batch, s.seen, s.records[:0], s.now(), s.max)
	if accepted == 0 {
		return
	}
	start := time.Now()
	if err := s.j.append(s.records); err != nil {
		if s.j.broken {
			failure := fmt.Errorf("journal unusable after a failed write, restart the service: %w", err)
			s.failed.Store(&failure)
		}
		failBatch(batch, err)
		return
	}
	if s.onCommit != nil {
		s.onCommit(accepted, time.Since(start))
	}
	applyBatch(s.idx, batch)
}

func (s *journalStore) Health() error {
	if err := s.failed.Load(); err != nil {
		return *err
	}
	return nil
}

func (s *journalStore) Close() error {
	s.w.close()
	return s.j.close()
}
