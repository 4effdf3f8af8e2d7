package main

import (
	"context"
	"errors"
	"fmt"

	"petstore/internal/catalog"
	"petstore/internal/store"
)

// Store is what the handlers need of the place categories are kept. Three
// stores of internal/store implement it: store.Memory
// (PETSTORE_DATA=:memory:), store.Journal (a journal file, the default) and
// store.Etcd (an etcd cluster). All are
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
	Create(ctx context.Context, nc catalog.NewCategory) (store.Created, error)
	// Health returns why the store cannot take creates now, or nil. It
	// never waits for a write.
	Health() error
	// RecordsRefused returns how many records the store found and did not
	// serve, not being valid categories (written by another writer).
	RecordsRefused() uint64
	// Close waits for the creates under way and releases the store. The
	// journal and etcd stores refuse creates after it (catalog.ErrStopping).
	Close() error
}

// openStore opens the store that PETSTORE_DATA names: ":memory:", an
// etcd:// or etcds:// URL (configured by etcdCfg), or the path of a
// journal file.
func openStore(data string, etcdCfg store.EtcdConfig, opts store.Options) (Store, error) {
	if data == store.MemoryPath {
		return store.NewMemory(opts), nil
	}
	if store.IsEtcdURL(data) {
		return store.OpenEtcd(etcdCfg, opts)
	}
	return store.OpenJournal(data, opts)
}

// storeError names the setting behind err, an error opening the store or
// reaching it: the stores speak of what failed, main of what to change.
func storeError(err error) error {
	switch {
	case errors.Is(err, store.ErrCAFile):
		return fmt.Errorf("PETSTORE_ETCD_CA_FILE: %w", err)
	case errors.Is(err, store.ErrStartTimeout):
		return fmt.Errorf("PETSTORE_DATA: %w; PETSTORE_ETCD_START_TIMEOUT sets how long to wait", err)
	}
	return fmt.Errorf("PETSTORE_DATA: %w", err)
}
