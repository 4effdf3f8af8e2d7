package main

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"petstore/internal/catalog"
	"petstore/internal/store"
	"petstore/internal/store/storetest"
	"petstore/internal/testkit"
)

// Stores for the tests that go through the mux, opened as run opens them
// (openStore). What these tests share with internal/store's (a journal
// written by hand, a hold on the group writer, a store's list) is in
// internal/store/storetest.

// journalHeader is the journal's header line as petstore writes it now.
const journalHeader = storetest.JournalHeader

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

// writeJournal writes a journal holding records after the header and
// returns its path.
var writeJournal = storetest.WriteJournal

// snapshotOf returns what s lists now.
var snapshotOf = storetest.Snapshot

// waitFor polls cond until it holds, failing the test after 10 s.
var waitFor = testkit.WaitFor
