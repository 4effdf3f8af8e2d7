package main

import (
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"petstore/internal/catalog"
	"strconv"
	"strings"
	"testing"
)

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

// When the last id is the largest int64, a create answers 500 and writes
// nothing; the file stays readable.
func TestJournalIDsRunOut(t *testing.T) {
	t.Parallel()
	last := `{"id":9223372036854775807,"name":"last"}`
	path := writeJournal(t, last)
	before, _ := os.ReadFile(path)
	s := openTestStore(t, path)
	env := newTestEnv(t, withStore(s))

	for _, name := range []string{"dog", "cat"} {
		rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"` + name + `"}`})
		mustError(t, rec, http.StatusInternalServerError, codeInternal)
		if loc := rec.Header().Get("Location"); loc != "" {
			t.Errorf("a failed create has a Location: %s", loc)
		}
	}
	if !strings.Contains(env.logs.String(), "no id left") {
		t.Errorf("the reason is not in the log: %s", env.logs)
	}
	if got, want := listString(t, s), "["+last+"]"; got != want {
		t.Errorf("list: got %s, want %s", got, want)
	}
	s.Close()
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("the journal changed:\ngot  %q\nwant %q", after, before)
	}
	s2 := openTestStore(t, path)
	if got, want := listString(t, s2), "["+last+"]"; got != want {
		t.Errorf("after restart: got %s, want %s", got, want)
	}
}

// In one batch, the creates that still have an id succeed and the rest
// fail; the journal holds exactly the ones that succeeded.
func TestJournalIDsRunOutInABatch(t *testing.T) {
	t.Parallel()
	path := writeJournal(t, `{"id":9223372036854775805,"name":"old"}`)
	s := openHeldStore(t, path)
	env := newTestEnv(t, withStore(s))
	answers := make(chan *httptest.ResponseRecorder, 3)
	create := func(name string) {
		go func() {
			answers <- env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"` + name + `"}`})
		}()
	}
	create("first")
	if n := nextBatch(t, s.batches); n != 1 {
		t.Fatalf("first batch: got %d creates, want 1", n)
	}
	create("second")
	create("third")
	waitFor(t, "the other creates to queue", func() bool { return len(s.w.queue) == 2 })
	s.release()
	if n := nextBatch(t, s.batches); n != 2 {
		t.Fatalf("second batch: got %d creates, want 2", n)
	}

	created := map[string]bool{}
	failed := 0
	for range 3 {
		rec := <-answers
		switch rec.Code {
		case http.StatusCreated:
			created[rec.Header().Get("Location")] = true
		default:
			mustError(t, rec, http.StatusInternalServerError, codeInternal)
			failed++
		}
	}
	want := map[string]bool{"/v1/categories/9223372036854775806": true, "/v1/categories/9223372036854775807": true}
	if !maps.Equal(created, want) || failed != 1 {
		t.Errorf("created %v and %d failed; want %v and 1 failed", created, failed, want)
	}
	s.Close()

	s2 := openTestStore(t, path)
	if n, last := snapshotOf(t, s2).Len(), s2.idx.LastID(); n != 3 || last != math.MaxInt64 {
		t.Errorf("after restart: %d categories, last id %d; want 3, %d", n, last, int64(math.MaxInt64))
	}
}

// The memory store runs out the same way.
func TestMemoryStoreIDsRunOut(t *testing.T) {
	t.Parallel()
	s := newMemoryStore(storeOptions{})
	s.idx.Add(catalog.FoldName("old"), catalog.Category{ID: math.MaxInt64 - 1, Name: "old"}) // no API reaches the last ids in a test's time
	s.idx.Publish()
	env := newTestEnv(t, withStore(s))

	rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`})
	if rec.Code != http.StatusCreated {
		t.Fatalf("create with one id left: got %d, want 201; body %s", rec.Code, rec.Body)
	}
	if got, want := rec.Header().Get("Location"), "/v1/categories/"+strconv.FormatInt(math.MaxInt64, 10); got != want {
		t.Errorf("Location: got %s, want %s", got, want)
	}
	mustError(t, env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"cat"}`}), http.StatusInternalServerError, codeInternal)
	if !strings.Contains(env.logs.String(), "no id left") {
		t.Errorf("the reason is not in the log: %s", env.logs)
	}
	if n := len(env.mustList(t)); n != 2 {
		t.Errorf("categories: got %d, want 2", n)
	}
}
