package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"petstore/internal/catalog"
	"petstore/internal/journal"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
func openTestStore(t testing.TB, path string, opts ...func(*storeOptions)) *journalStore {
	t.Helper()
	var o storeOptions
	for _, opt := range opts {
		opt(&o)
	}
	s, err := openStore(path, o)
	if err != nil {
		t.Fatalf("openStore(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*journalStore)
}

// withStoreLog sends the store's log lines to w.
func withStoreLog(w io.Writer) func(*storeOptions) {
	return func(o *storeOptions) { o.log = slog.New(slog.NewJSONHandler(w, nil)) }
}

// mustStoreCreate creates a category named name in s and checks that the
// JSON answered is that category's.
func mustStoreCreate(t *testing.T, s Store, name string) created {
	t.Helper()
	c, err := s.Create(context.Background(), catalog.NewCategory{Name: name})
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	if want := string(catalog.Category{ID: c.id, Name: name}.AppendJSON(nil)); string(c.json) != want || c.replayed {
		t.Fatalf("Create(%q): got %s (replayed %v), want %s", name, c.json, c.replayed, want)
	}
	return c
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

func listString(t testing.TB, s Store) string {
	t.Helper()
	var b strings.Builder
	snapshotOf(t, s).WriteTo(&b)
	return b.String()
}

func TestJournalReopenFindsEverythingAndIDsContinue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "cats.jsonl")
	s := openTestStore(t, path)
	mustStoreCreate(t, s, "dog")
	if _, err := s.Create(context.Background(), catalog.NewCategory{Name: "cat", Description: "meow \"quoted\" <b>", HasDescription: true}); err != nil {
		t.Fatal(err)
	}
	mustStoreCreate(t, s, "Rabbit")
	before := listString(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("journal permissions: got %o, want 600", perm)
	}
	dirInfo, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if perm := dirInfo.Mode().Perm(); perm != 0o700 {
		t.Errorf("created directory permissions: got %o, want 700", perm)
	}
	data, _ := os.ReadFile(path)
	if first, _, _ := strings.Cut(string(data), "\n"); first != journalHeader {
		t.Errorf("first line: got %q, want the header %q", first, journalHeader)
	}

	s2 := openTestStore(t, path)
	if got := listString(t, s2); got != before {
		t.Errorf("after reopen: got %s, want %s", got, before)
	}
	if c := mustStoreCreate(t, s2, "hamster"); c.id != 4 {
		t.Errorf("next id after reopen: got %d, want 4", c.id)
	}
	if _, err := s2.Create(context.Background(), catalog.NewCategory{Name: "DOG"}); err == nil {
		t.Errorf("uniqueness after reopen: creating DOG succeeded, want a conflict")
	}
}

// A record the store refuses stops the journal's replay, naming its line
// (the journal's own damage, torn ends and headers are tested in
// internal/journal).
func TestJournalStoreRecordDamageNamesTheLine(t *testing.T) {
	const head = journalHeader + "\n"
	for _, tc := range []struct {
		name, content, want string
	}{
		{"complete bad last line", head + `{"id":1,"name":"dog"}` + "\n" + `{"id":2}` + "\n", ":3: record lacks an id or a name"},
		{"ids not increasing", head + `{"id":2,"name":"dog"}` + "\n" + `{"id":2,"name":"cat"}` + "\n" + `{"id":3,"name":"x"}` + "\n", ":3: id 2 does not follow id 2"},
		{"unknown member", head + `{"id":1,"name":"dog","colour":"red"}` + "\n" + `{"id":2,"name":"x"}` + "\n", `:2: unexpected member "colour"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cats.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := openStore(path, storeOptions{})
			if err == nil {
				t.Fatalf("open succeeded, want an error")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want it to name %s and %q", err, path, tc.want)
			}
			if data, _ := os.ReadFile(path); string(data) != tc.content {
				t.Errorf("a damaged journal was modified: got %q", data)
			}
			if _, err := os.Stat(path + ".torn"); err == nil {
				t.Errorf("a .torn file was written for damage that is not a torn tail")
			}
		})
	}
}

func TestMemoryStoreWritesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(memoryPath, storeOptions{})
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

// A write that fails answers 500 and leaves the store, the ids and the file
// as they were; the store then refuses creates until restarted.
func TestJournalFailedWriteLeavesStoreConsistent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	s := openTestStore(t, path)
	env := newTestEnv(t, withStore(s))
	env.mustCreate(t, "dog")
	before := listString(t, s)

	// The journal's own half (the file cut back, ErrBroken) is tested in
	// internal/journal; here the store meets the error it returns.
	s.appendLines = func([]byte) error {
		return fmt.Errorf("appending to %s: %w", path, errors.Join(os.ErrClosed, journal.ErrBroken))
	}

	rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"cat"}`})
	eb := mustError(t, rec, http.StatusInternalServerError, codeInternal)
	if strings.Contains(eb.Message, path) || strings.Contains(eb.Message, "file already closed") {
		t.Errorf("500 message leaks internals: %q", eb.Message)
	}
	if got := listString(t, s); got != before {
		t.Errorf("list after failed write: got %s, want %s", got, before)
	}
	if got := s.idx.LastID(); got != 1 {
		t.Errorf("id sequence after failed write: got %d, want 1", got)
	}
	mustError(t, env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"rabbit"}`}), http.StatusInternalServerError, codeInternal)
	mustError(t, env.do(t, request{method: "GET", path: "/healthz"}), http.StatusInternalServerError, codeInternal)
	if !strings.Contains(env.logs.String(), "file already closed") {
		t.Errorf("the cause is not in the log: %s", env.logs)
	}
	s.Close()

	s2 := openTestStore(t, path)
	if got := listString(t, s2); got != before {
		t.Errorf("after restart: got %s, want %s", got, before)
	}
	if c := mustStoreCreate(t, s2, "cat"); c.id != 2 {
		t.Errorf("next id after restart: got %d, want 2", c.id)
	}
}

// heldWriter is a journal store whose group writer stops on its first
// batch until released, so that a test can queue creates behind it and know
// exactly how they are batched.
type heldWriter struct {
	*journalStore
	batches chan int // the size of each batch the writer takes
	release func()   // lets the writer go on; safe to call more than once
}

// openHeldStore opens the journal at path with its writer held (see
// heldWriter). The writer is released at the end of the test in any case,
// or it (and Close) would stay stuck after a failed wait.
func openHeldStore(t *testing.T, path string, opts ...func(*storeOptions)) *heldWriter {
	t.Helper()
	batches := make(chan int, 1024)
	gate := make(chan struct{})
	var first, once sync.Once
	h := &heldWriter{batches: batches, release: func() { once.Do(func() { close(gate) }) }}
	h.journalStore = openTestStore(t, path, append(opts, func(o *storeOptions) {
		o.onBatch = func(n int) {
			batches <- n
			first.Do(func() { <-gate })
		}
	})...)
	t.Cleanup(h.release)
	return h
}

// Creates waiting while a write is under way share the next write and fsync.
func TestJournalGroupCommit(t *testing.T) {
	const clients = 64
	var commits atomic.Int64
	s := openHeldStore(t, filepath.Join(t.TempDir(), "cats.jsonl"), func(o *storeOptions) {
		o.onCommit = func(int, time.Duration) { commits.Add(1) }
	})

	var wg sync.WaitGroup
	errs := make(chan error, clients)
	create := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Create(context.Background(), catalog.NewCategory{Name: fmt.Sprintf("name-%d", i)})
			errs <- err
		}()
	}
	create(0)
	if n := nextBatch(t, s.batches); n != 1 {
		t.Fatalf("first batch: got %d creates, want 1", n)
	}
	for i := 1; i < clients; i++ {
		create(i)
	}
	waitFor(t, "the other creates to queue", func() bool { return len(s.w.queue) == clients-1 })
	s.release()
	if n := nextBatch(t, s.batches); n != clients-1 {
		t.Errorf("second batch: got %d creates, want %d", n, clients-1)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	if got := commits.Load(); got != 2 {
		t.Errorf("fsyncs for %d concurrent creates: got %d, want 2 (one alone, then one batch)", clients, got)
	}
	if n := snapshotOf(t, s).Len(); n != clients {
		t.Errorf("categories: got %d, want %d", n, clients)
	}
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

func TestStoreCloseRefusesLaterCreates(t *testing.T) {
	s := openTestStore(t, filepath.Join(t.TempDir(), "cats.jsonl"))
	s.Close()
	if _, err := s.Create(context.Background(), catalog.NewCategory{Name: "dog"}); err == nil {
		t.Errorf("Create after Close succeeded")
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond) // polling a condition, not synchronising by time
	}
}

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
