package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"petstore/internal/catalog"
	"petstore/internal/journal"
	"petstore/internal/store"
	"petstore/internal/testkit"
)

// Stores for the tests that go through the mux, opened as run opens them
// (openStore): a journal written by hand, a journal whose group writer is
// held. internal/store's tests have their own helpers of the same names
// for the concrete stores: a package's test files are not compiled into
// another's tests.

// journalHeader is the journal's header line as petstore writes it now:
// the format is pinned here, not only where it is written.
const journalHeader = `{"format":"petstore-categories","version":4}`

func TestJournalHeaderIsTheCurrentVersion(t *testing.T) {
	if got := journal.Header(journal.Version); got != journalHeader {
		t.Errorf("journal.Header(journal.Version) = %s, want %s", got, journalHeader)
	}
}

// openTestStore opens the journal store at path and closes it at the end of
// the test.
func openTestStore(t testing.TB, path string, opts ...func(*store.Options)) *store.Journal {
	t.Helper()
	var o store.Options
	for _, opt := range opts {
		opt(&o)
	}
	s, err := openStore(path, store.EtcdConfig{}, o)
	if err != nil {
		t.Fatalf("openStore(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*store.Journal)
}

// withStoreLog sends the store's log lines to w.
func withStoreLog(w io.Writer) func(*store.Options) {
	return func(o *store.Options) { o.Log = slog.New(slog.NewJSONHandler(w, nil)) }
}

// mustStoreCreate creates a category named name in s and checks that the
// JSON answered is that category's.
func mustStoreCreate(t *testing.T, s Store, name string) store.Created {
	t.Helper()
	c, err := s.Create(context.Background(), catalog.NewCategory{Name: name})
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	if want := string(catalog.Category{ID: c.ID, Name: name}.AppendJSON(nil)); string(c.JSON) != want || c.Replayed {
		t.Fatalf("Create(%q): got %s (replayed %v), want %s", name, c.JSON, c.Replayed, want)
	}
	return c
}

// writeJournal writes a journal holding records, one per line, after the
// header, and returns its path.
func writeJournal(t *testing.T, records ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	content := journalHeader + "\n"
	for _, r := range records {
		content += r + "\n"
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// snapshotOf returns what s lists now.
func snapshotOf(t testing.TB, s Store) *catalog.Snapshot {
	t.Helper()
	snap, err := s.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return snap
}

// heldWriter is a journal store whose group writer stops on its first
// batch until released, so that a test can queue creates behind it and know
// exactly how they are batched.
type heldWriter struct {
	*store.Journal
	batches chan int // the size of each batch the writer takes
	release func()   // lets the writer go on; safe to call more than once
}

// openHeldStore opens the journal at path with its writer held (see
// heldWriter). The writer is released at the end of the test in any case,
// or it (and Close) would stay stuck after a failed wait.
func openHeldStore(t *testing.T, path string, opts ...func(*store.Options)) *heldWriter {
	t.Helper()
	batches := make(chan int, 1024)
	gate := make(chan struct{})
	var first, once sync.Once
	h := &heldWriter{batches: batches, release: func() { once.Do(func() { close(gate) }) }}
	h.Journal = openTestStore(t, path, append(opts, func(o *store.Options) {
		o.OnBatch = func(n int) {
			batches <- n
			first.Do(func() { <-gate })
		}
	})...)
	t.Cleanup(h.release)
	return h
}

func nextBatch(t *testing.T, batches <-chan int) int {
	t.Helper()
	select {
	case n := <-batches:
		return n
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for the writer to take a batch")
		return 0
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
var waitFor = testkit.WaitFor
