package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"petstore/internal/catalog"
	"time"
)

// Store is what the handlers need of the place categories are kept. Three
// stores implement it: memoryStore (PETSTORE_DATA=:memory:), journalStore
// (a journal file, the default) and etcdStore (an etcd cluster). All are
// safe for concurrent use, and so must be any other. They return the
// errors of internal/catalog, which errors.go turns into answers.
//
// Reads never wait for writes: List returns an immutable snapshot of the
// encoded list. Create returns once the category is as durable as the store
// makes it; a create that fails leaves the store, the id sequence and what is
// stored as they were.
type Store interface {
	// List returns every category, sorted by id.
	List(ctx context.Context) (*catalog.Snapshot, error)
	// Get returns the JSON of one category, or a *catalog.NotFoundError.
	Get(ctx context.Context, id int64) ([]byte, error)
	// Create stores a new category and returns its id and JSON. A name
	// taken already, ignoring case, is a *catalog.NameTakenError. With an
	// Idempotency-Key (nc.Key), the key is stored in the same durable
	// write as the category; a key stored before answers that create again
	// (replayed), or refuses: catalog.ErrKeyReused, catalog.ErrKeyInUse.
	Create(ctx context.Context, nc catalog.NewCategory) (created, error)
	// Health returns why the store cannot take creates now, or nil. It
	// never waits for a write.
	Health() error
	// Close waits for the creates under way and releases the store. The
	// journal and etcd stores refuse creates after it (catalog.ErrStopping).
	Close() error
}

// storeOptions are what openStore passes on to the store it opens.
type storeOptions struct {
	log *slog.Logger
	// onBatch, when set, is called before each group commit with the number
	// of creates it holds (see procsBoost).
	onBatch func(n int)
	// onCommit, when set, is told of each commit that made creates
	// durable: how many, and how long the write took (see commitMetrics).
	onCommit func(n int, took time.Duration)
	// idempotencyTTL is how long an Idempotency-Key is kept after its
	// create; 0 is defaultIdempotencyTTL.
	idempotencyTTL time.Duration
	// now is the clock of key expiry; nil is time.Now (tests move theirs).
	now func() time.Time
	// readOnly opens a journal to read it only (petstore -export and
	// -import): no torn tail cut, no header written or rewritten.
	readOnly bool
	// etcd configures the store when PETSTORE_DATA is an etcd:// URL.
	etcd etcdConfig
	// maxCategories bounds the catalogue: a create beyond it is refused
	// with catalog.ErrQuotaExceeded; 0 is defaultMaxCategories.
	maxCategories int64
}

// defaultMaxCategories is PETSTORE_MAX_CATEGORIES unless set: the worst
// case it allows on disk and in memory is in docs/operations.md, "Catalogue size".
const defaultMaxCategories = 1_000_000

// openStore opens the store that PETSTORE_DATA names: ":memory:", an
// etcd:// or etcds:// URL (configured by opts.etcd), or the path of a
// journal file.
func openStore(data string, opts storeOptions) (Store, error) {
	if opts.log == nil {
		opts.log = slog.New(slog.DiscardHandler)
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	if opts.idempotencyTTL <= 0 {
		opts.idempotencyTTL = defaultIdempotencyTTL
	}
	if opts.maxCategories <= 0 {
		opts.maxCategories = defaultMaxCategories
	}
	if data == memoryPath {
		return newMemoryStore(opts), nil
	}
	if isEtcdURL(data) {
		return openEtcdStore(opts.etcd, opts)
	}
	return openJournalStore(data, opts)
}

// memoryPath is the PETSTORE_DATA value that keeps data in memory only.
const memoryPath = ":memory:"

// created is what a store answers a create with.
type created struct {
	id       int64
	json     []byte // the category's JSON, as listed
	replayed bool   // an earlier create with the same Idempotency-Key, answered again
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
}

func newCreateRequest(nc catalog.NewCategory) *createRequest {
	return &createRequest{nc: nc, key: catalog.FoldName(nc.Name)}
}

// assignBatch decides ids and uniqueness for a batch of creates against x,
// committed at now: each accepted request gets its category and its record
// (a journal line) is appended to records; the others get their error.
// Creates that would take the catalogue past maxCategories get
// catalog.ErrQuotaExceeded. seen is scratch space. Nothing changes in x until
// applyBatch.
func assignBatch(x *catalog.Index, batch []*createRequest, seen map[string]struct{}, records []byte, now time.Time, maxCategories int64) ([]byte, int) {
	clear(seen)
	next := x.LastID()
	accepted := 0
	// A key's time is its create's commit, rounded up to the second as the
	// journal keeps it: it expires at the same time before and after a
	// restart, and never sooner than the TTL after the create.
	at := now.Add(time.Second - 1).Truncate(time.Second)
	for _, req := range batch {
		if _, dup := seen[req.key]; dup || x.Has(req.key) {
			req.err = catalog.NameTaken(req.nc.Name)
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
		seen[req.key] = struct{}{}
		next++
		req.cat = catalog.Category{ID: next, Name: req.nc.Name, Description: req.nc.Description, HasDescription: req.nc.HasDescription}
		req.at = at
		records = catalog.AppendRecord(records, req.cat, req.nc.Key, req.at)
		accepted++
	}
	return records, accepted
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

// createPath is the one create path of every store: a create with an
// Idempotency-Key the table knows is answered from it, a new key is
// claimed for its create and settled by the outcome, and a create without
// a key goes straight to commit. Its fields are the store's own steps,
// set once when the store opens.
type createPath struct {
	keys *idempotencyTable
	// get reads a category an earlier create of a key made.
	get func(ctx context.Context, id int64) ([]byte, error)
	// taken, if set, answers a keyed create without a commit when it can:
	// done reports that it did, with the category to replay, or err.
	taken func(ctx context.Context, nc catalog.NewCategory) (replayOf int64, done bool, err error)
	// ready, if set, says why no create can be committed now, or nil.
	ready func() error
	// commit makes the create durable, refuses it, or finds that an
	// earlier create with its key made a category (req.replayOf).
	commit func(*createRequest)
}

// create runs the create of nc. The JSON of what it made is req.body, or
// nil if the store has it yet to read (the etcd store's cache).
func (k *createPath) create(ctx context.Context, nc catalog.NewCategory) (created, error) {
	key := nc.Key
	if key != nil {
		switch outcome, id := k.keys.claim(key); outcome {
		case claimDone:
			return k.replay(ctx, nc, id)
		case claimInFlight:
			return created{}, catalog.ErrKeyInUse
		}
		if k.taken != nil {
			if id, done, err := k.taken(ctx, nc); done {
				k.keys.release(key)
				if err != nil {
					return created{}, err
				}
				return k.replay(ctx, nc, id)
			}
		}
	}
	if k.ready != nil {
		if err := k.ready(); err != nil {
			if key != nil {
				k.keys.release(key)
			}
			return created{}, err
		}
	}
	req := newCreateRequest(nc)
	k.commit(req)
	if key != nil {
		if req.err != nil || req.replayOf != 0 {
			// Failed: a retry starts afresh. Made elsewhere: the store
			// keeps that key (and its expiry); a retry asks it again.
			k.keys.release(key)
		} else {
			k.keys.done(key, req.cat.ID, req.at)
		}
	}
	switch {
	case req.err != nil:
		return created{}, req.err
	case req.replayOf != 0:
		return k.replay(ctx, nc, req.replayOf)
	}
	return created{id: req.cat.ID, json: req.body}, nil
}

// replay answers nc with category id, which an earlier create with the
// same Idempotency-Key made: again, if nc asks for that category
// (catalog.NewCategory.SameAs), or catalog.ErrKeyReused.
func (k *createPath) replay(ctx context.Context, nc catalog.NewCategory, id int64) (created, error) {
	made, err := k.get(ctx, id)
	if errors.Is(err, catalog.ErrNotFound) {
		// Not the client's 404: the key names a category the store
		// should hold.
		return created{}, fmt.Errorf("Idempotency-Key names category %d, which is not stored: %v", id, err)
	}
	if err != nil {
		return created{}, err
	}
	if !nc.SameAs(made, id) {
		return created{}, catalog.ErrKeyReused
	}
	return created{id: id, json: made, replayed: true}, nil
}

// failBatch gives err to every create of the batch that has no error yet.
func failBatch(batch []*createRequest, err error) {
	for _, req := range batch {
		if req.err == nil {
			req.err = err
		}
	}
}
