// Package storetest holds what the tests of the stores and of the HTTP
// service share to set a store up: a journal file written by hand, a hold
// on the journal's group writer, and a store's list. It imports no store,
// so that internal/store's own tests can use it too. Only tests import it.
package storetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"petstore/internal/catalog"
)

// JournalHeader is the journal's header line as petstore writes it now: the
// format is pinned here, not only where it is written.
const JournalHeader = `{"format":"petstore-categories","version":4}`

// WriteJournal writes a journal holding records, one per line, after the
// header, in a directory of the test's, and returns its path.
func WriteJournal(t testing.TB, records ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	content := JournalHeader + "\n"
	for _, r := range records {
		content += r + "\n"
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Lister is what Snapshot needs of a store.
type Lister interface {
	List(ctx context.Context) (*catalog.Snapshot, error)
}

// Snapshot returns what s lists now, failing the test on an error.
func Snapshot(t testing.TB, s Lister) *catalog.Snapshot {
	t.Helper()
	snap, err := s.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return snap
}

// Hold stops a journal's group writer on its first batch until released,
// so that a test can queue creates behind it and know exactly how they are
// batched. Its OnBatch goes into the store's Options.
type Hold struct {
	batches       chan int // the size of each batch the writer takes
	gate          chan struct{}
	first, closed sync.Once
}

// NewHold returns a hold that is released at the end of the test in any
// case, or the writer (and the store's Close) would stay stuck after a
// failed wait.
func NewHold(t testing.TB) *Hold {
	h := &Hold{batches: make(chan int, 1024), gate: make(chan struct{})}
	t.Cleanup(h.Release)
	return h
}

// OnBatch is the store's hook: it records the batch's size and, on the
// first batch, waits for Release.
func (h *Hold) OnBatch(n int) {
	h.batches <- n
	h.first.Do(func() { <-h.gate })
}

// Release lets the writer go on; it may be called more than once.
func (h *Hold) Release() { h.closed.Do(func() { close(h.gate) }) }

// NextBatch returns the size of the next batch the writer takes, failing
// the test after 10 s.
func (h *Hold) NextBatch(t testing.TB) int {
	t.Helper()
	select {
	case n := <-h.batches:
		return n
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for the writer to take a batch")
		return 0
	}
}
