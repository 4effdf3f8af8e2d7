package store

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"petstore/internal/catalog"
	"petstore/internal/store/storetest"

	"petstore/internal/testkit"
)

// journalHeader is the journal's header line as petstore writes it now.
const journalHeader = storetest.JournalHeader

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
type lister = storetest.Lister

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
var snapshotOf = storetest.Snapshot

func listString(t testing.TB, s lister) string {
	t.Helper()
	var b strings.Builder
	snapshotOf(t, s).WriteTo(&b)
	return b.String()
}

// writeJournal writes a journal holding records after the header and
// returns its path.
var writeJournal = storetest.WriteJournal

// waitFor polls cond until it holds, failing the test after 10 s.
var waitFor = testkit.WaitFor

// lockedBuffer is a log that the store writes and the test reads at once.
type lockedBuffer = testkit.LockedBuffer
