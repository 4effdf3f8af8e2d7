package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Store is what the handlers need of the place categories are kept. Two
// stores implement it: memoryStore (PETSTORE_DATA=:memory:) and
// journalStore (a journal file, the default). Both are safe for concurrent
// use, and so must be any other.
//
// Reads never wait for writes: List returns an immutable snapshot of the
// encoded list. Create returns once the category is as durable as the store
// makes it; a create that fails leaves the store, the id sequence and what is
// stored as they were.
type Store interface {
	// List returns every category, sorted by id.
	List(ctx context.Context) (*snapshot, error)
	// Get returns the JSON of one category, or errNotFound.
	Get(ctx context.Context, id int64) ([]byte, error)
	// Create stores a new category and returns it with its JSON. A name
	// taken already, ignoring case, is a conflict *apiError.
	Create(ctx context.Context, nc NewCategory) (Category, []byte, error)
	// Health returns why the store cannot take creates now, or nil. It
	// never waits for a write.
	Health() error
	// Close waits for the creates under way and releases the store.
	// Creates after Close fail.
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
	// syncDir fsyncs a directory; nil is the real one (tests watch it).
	syncDir func(dir string) error
	// etcd configures the store when PETSTORE_DATA is an etcd:// URL.
	etcd etcdConfig
}

// openStore opens the store that PETSTORE_DATA names: ":memory:", an
// etcd:// or etcds:// URL (configured by opts.etcd), or the path of a
// journal file.
func openStore(data string, opts storeOptions) (Store, error) {
	if opts.log == nil {
		opts.log = slog.New(slog.DiscardHandler)
	}
	if opts.syncDir == nil {
		opts.syncDir = syncDir
	}
	if data == memoryPath {
		return newMemoryStore(), nil
	}
	if isEtcdURL(data) {
		return openEtcdStore(opts.etcd, opts)
	}
	return openJournalStore(data, opts)
}

// memoryPath is the PETSTORE_DATA value that keeps data in memory only.
const memoryPath = ":memory:"

var (
	errNotFound     = errors.New("no such category")
	errStoreClosed  = errors.New("store is closed")
	errIDsExhausted = fmt.Errorf("no id left: the last category has id %d, the largest an id can be", int64(math.MaxInt64))
)

func errConflict(name string) error {
	return apiErrorf(codeConflict, "a category named %q already exists (names are compared ignoring case)", name)
}

// createRequest is one create on its way through a store.
type createRequest struct {
	nc   NewCategory
	key  string // foldName(nc.Name)
	cat  Category
	body []byte
	err  error
	done chan struct{} // closed when the group writer is done with it
}

func newCreateRequest(nc NewCategory) *createRequest {
	return &createRequest{nc: nc, key: foldName(nc.Name)}
}

// assignBatch decides ids and uniqueness for a batch of creates against x:
// each accepted request gets its category and its record (a journal line) is
// appended to records; the others get their error. seen is scratch space.
// Nothing changes in x until applyBatch.
func assignBatch(x *index, batch []*createRequest, seen map[string]struct{}, records []byte) ([]byte, int) {
	clear(seen)
	next := x.lastID()
	accepted := 0
	for _, req := range batch {
		if _, dup := seen[req.key]; dup || x.has(req.key) {
			req.err = errConflict(req.nc.Name)
			continue
		}
		if next == math.MaxInt64 {
			// Wrapping would hand out a negative id, which the next
			// replay refuses; failing the create keeps the file sound.
			req.err = errIDsExhausted
			continue
		}
		seen[req.key] = struct{}{}
		next++
		req.cat = Category{ID: next, Name: req.nc.Name, Description: req.nc.Description, HasDescription: req.nc.HasDescription}
		records = append(req.cat.appendJSON(records), '\n')
		accepted++
	}
	return records, accepted
}

// applyBatch adds the accepted creates of a batch to x and publishes them.
func applyBatch(x *index, batch []*createRequest) {
	for _, req := range batch {
		if req.err == nil {
			req.body, _ = x.add(req.key, req.cat)
		}
	}
	x.publish()
}

// failBatch gives err to every create of the batch that has no error yet.
func failBatch(batch []*createRequest, err error) {
	for _, req := range batch {
		if req.err == nil {
			req.err = err
		}
	}
}
