package store

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/internal/catalog"

	"petstore/internal/testkit"
)

// journalHeader is the journal's header line as petstore writes it now.
const journalHeader = `{"format":"petstore-categories","version":4}`

// openTestStore opens the journal store at path and closes it at the end of
// the test.
func openTestStore(t testing.TB, path string, opts ...func(*Options)) *Journal {
	t.Helper()
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	s, err := OpenJournal(path, o)
	if err != nil {
		t.Fatalf("OpenJournal(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// withStoreLog sends the store's log lines to w.
func withStoreLog(w io.Writer) func(*Options) {
	return func(o *Options) { o.Log = slog.New(slog.NewJSONHandler(w, nil)) }
}

// creator is what the tests need of a store to create in it.
type creator interface {
	Create(ctx context.Context, nc catalog.NewCategory) (Created, error)
}

// lister is what the tests need of a store to list it.
type lister interface {
	List(ctx context.Context) (*catalog.Snapshot, error)
}

// mustStoreCreate creates a category named name in s and checks that the
// JSON answered is that category's.
func mustStoreCreate(t *testing.T, s creator, name string) Created {
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

// snapshotOf returns what s lists now.
func snapshotOf(t testing.TB, s lister) *catalog.Snapshot {
	t.Helper()
	snap, err := s.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return snap
}

func listString(t testing.TB, s lister) string {
	t.Helper()
	var b strings.Builder
	snapshotOf(t, s).WriteTo(&b)
	return b.String()
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

// heldWriter is a journal store whose group writer stops on its first
// batch until released, so that a test can queue creates behind it and know
// exactly how they are batched.
type heldWriter struct {
	*Journal
	batches chan int // the size of each batch the writer takes
	release func()   // lets the writer go on; safe to call more than once
}

// openHeldStore opens the journal at path with its writer held (see
// heldWriter). The writer is released at the end of the test in any case,
// or it (and Close) would stay stuck after a failed wait.
func openHeldStore(t *testing.T, path string, opts ...func(*Options)) *heldWriter {
	t.Helper()
	batches := make(chan int, 1024)
	gate := make(chan struct{})
	var first, once sync.Once
	h := &heldWriter{batches: batches, release: func() { once.Do(func() { close(gate) }) }}
	h.Journal = openTestStore(t, path, append(opts, func(o *Options) {
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

// lockedBuffer is a log that the store writes and the test reads at once.
type lockedBuffer = testkit.LockedBuffer
