package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/internal/catalog"
	"petstore/internal/journal"
	"petstore/internal/store"

	"petstore/internal/testkit"
)

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

func TestMemoryStoreWritesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(memoryPath, store.EtcdConfig{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustStoreCreate(t, s, "dog")
	s.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("temp dir not empty: %v", entries)
	}
	if _, err := os.Stat(memoryPath); err == nil {
		t.Errorf("a file named %s was created", memoryPath)
	}
}

// A create the store fails answers 500 without the cause, which goes to
// the log, and a store that says it is unhealthy fails /healthz (the store's
// own half is tested in internal/store).
func TestFailedCreateAnswers500(t *testing.T) {
	cause := fmt.Errorf("appending to /data/cats.jsonl: %w", os.ErrClosed)
	env := newTestEnv(t, withStore(failingStore{Store: store.NewMemory(store.Options{}), err: cause}))
	rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"cat"}`})
	eb := mustError(t, rec, http.StatusInternalServerError, codeInternal)
	if strings.Contains(eb.Message, "/data/cats.jsonl") || strings.Contains(eb.Message, "file already closed") {
		t.Errorf("500 message leaks internals: %q", eb.Message)
	}
	mustError(t, env.do(t, request{method: "GET", path: "/healthz"}), http.StatusInternalServerError, codeInternal)
	if !strings.Contains(env.logs.String(), "file already closed") {
		t.Errorf("the cause is not in the log: %s", env.logs)
	}
	if n := len(env.mustList(t)); n != 0 {
		t.Errorf("categories after a failed create: got %d, want 0", n)
	}
}

// A store whose disk failed, or which cannot learn whether a create was
// stored, says so: 503 unavailable (nothing stored) for creates it refuses
// and from /healthz, and 503 outcome_unknown, never a definite failure, for
// a create that may have been stored; both with Retry-After.
func TestStoreFaultAnswers(t *testing.T) {
	down := fmt.Errorf("%w: the journal takes no more creates after a failed write: %w", catalog.ErrUnavailable, os.ErrClosed)
	unknown := fmt.Errorf("%w: appending: %w", catalog.ErrOutcomeUnknown, os.ErrClosed)
	for _, tc := range []struct {
		err      error
		code     string
		mentions string
	}{
		{down, codeUnavailable, "nothing was stored"},
		{unknown, codeOutcomeUnknown, "may or may not exist"},
	} {
		env := newTestEnv(t, withStore(failingStore{Store: store.NewMemory(store.Options{}), err: tc.err}))
		rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"cat"}`})
		eb := mustError(t, rec, http.StatusServiceUnavailable, tc.code)
		if !strings.Contains(eb.Message, tc.mentions) || strings.Contains(eb.Message, "file already closed") {
			t.Errorf("%s: message %q, want one that says %q and no internals", tc.code, eb.Message, tc.mentions)
		}
		if got := rec.Header().Get("Retry-After"); got != "1" {
			t.Errorf("%s: Retry-After %q, want 1", tc.code, got)
		}
	}
	env := newTestEnv(t, withStore(failingStore{Store: store.NewMemory(store.Options{}), err: down}))
	mustError(t, env.do(t, request{method: "GET", path: "/healthz"}), http.StatusServiceUnavailable, codeUnavailable)
	mustError(t, env.do(t, request{method: "GET", path: "/readyz"}), http.StatusServiceUnavailable, codeUnavailable)
}

// failingStore is a store whose creates fail with err, and which says so
// in Health.
type failingStore struct {
	Store
	err error
}

func (s failingStore) Create(context.Context, catalog.NewCategory) (store.Created, error) {
	return store.Created{}, s.err
}

func (s failingStore) Health() error { return s.err }

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

// petstore -export reads a journal and changes nothing in it: a version-1
// header stays version 1 (an older petstore can still read the file), a
// torn last line stays where it is.
func TestExportLeavesTheJournalAlone(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	content := `{"format":"petstore-categories","version":1}` + "\n" + `{"id":1,"name":"dog"}` + "\n" + `{"id":2,"na`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	env := map[string]string{"PETSTORE_DATA": path, "PETSTORE_API_KEYS": e2eKey}
	if err := run(context.Background(), []string{"petstore", "-export"}, func(k string) string { return env[k] }, &stdout, io.Discard); err != nil {
		t.Fatalf("-export: %v", err)
	}
	// An export holds no keys: it says version 1, which every petstore reads.
	if want := `{"format":"petstore-categories","version":1}` + "\n" + `{"id":1,"name":"dog"}` + "\n"; stdout.String() != want {
		t.Errorf("exported: %q, want %q", stdout.String(), want)
	}
	if data, _ := os.ReadFile(path); string(data) != content {
		t.Errorf("the journal changed: %q", data)
	}
	if _, err := os.Stat(path + ".torn"); err == nil {
		t.Errorf("-export wrote a .torn file")
	}
}
