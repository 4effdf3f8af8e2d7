package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"petstore/internal/petstoretest"
)

// These tests hammer the real handler from many goroutines; they are meant
// to run under -race. Goroutines other than the test's own report with
// t.Errorf and return, never t.Fatalf.

func TestConcurrentCreates(t *testing.T) {
	t.Parallel()
	inMemoryAndJournaled(t, testConcurrentCreates)
}

func TestConcurrentCreatesSameName(t *testing.T) {
	t.Parallel()
	inMemoryAndJournaled(t, testConcurrentSameName)
}

// inMemoryAndJournaled runs test over a memory store, then over a journaled
// one, which must then reopen to the same list.
func inMemoryAndJournaled(t *testing.T, test func(*testing.T, *testEnv)) {
	t.Run("memory", func(t *testing.T) {
		test(t, newTestEnv(t))
	})
	t.Run("journal", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "j.jsonl")
		store := openTestStore(t, path)
		test(t, newTestEnv(t, withStore(store)))
		checkReopens(t, store, path)
	})
}

// checkReopens closes store and checks that reopening its journal gives back
// exactly the same list.
func checkReopens(t *testing.T, store Store, path string) {
	t.Helper()
	before := snapshotOf(t, store)
	if err := store.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	after := snapshotOf(t, openTestStore(t, path))
	var got, want bytes.Buffer
	after.WriteTo(&got)
	before.WriteTo(&want)
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("list after reopening differs:\n got %s\nwant %s", &got, &want)
	}
	if after.ETag() != before.ETag() {
		t.Errorf("ETag after reopening: got %s, want %s", after.ETag(), before.ETag())
	}
	if got, want := after.Len(), before.Len(); got != want {
		t.Errorf("Len after reopening: got %d, want %d", got, want)
	}
}

// testConcurrentCreates creates 800 distinct categories from 32 goroutines
// while 4 more list, and checks ids, order and every list seen.
func testConcurrentCreates(t *testing.T, env *testEnv) {
	const (
		creators   = 32
		perCreator = 25
		total      = creators * perCreator
		listers    = 4
		maxLists   = 2000 // per lister, so the loop is bounded even if creates hang
	)
	start := make(chan struct{})
	ids := make([][]int64, creators)
	var creating sync.WaitGroup
	for w := range creators {
		creating.Add(1)
		go func() {
			defer creating.Done()
			<-start
			for i := range perCreator {
				name := fmt.Sprintf("category %02d-%02d", w, i)
				body, _ := json.Marshal(map[string]string{"name": name})
				rec := env.do(t, request{method: "POST", path: "/v1/categories", body: string(body)})
				if rec.Code != http.StatusCreated {
					t.Errorf("create %q: got %d, want 201; body %s", name, rec.Code, rec.Body)
					continue
				}
				var c petstoretest.Category
				if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
					t.Errorf("create %q: %v; body %s", name, err, rec.Body)
					continue
				}
				if c.Name != name {
					t.Errorf("create %q: name: got %q", name, c.Name)
				}
				if got, want := rec.Header().Get("Location"), fmt.Sprintf("/v1/categories/%d", c.ID); got != want {
					t.Errorf("create %q: Location: got %q, want %q", name, got, want)
				}
				ids[w] = append(ids[w], c.ID)
			}
		}()
	}

	stopListing := make(chan struct{})
	lists := make([]int, listers) // how many lists each lister checked
	var listing sync.WaitGroup
	for l := range listers {
		listing.Add(1)
		go func() {
			defer listing.Done()
			<-start
			seen := 0 // length of the last list: lists only grow
			for range maxLists {
				select {
				case <-stopListing:
					return
				default:
				}
				rec := env.do(t, request{method: "GET", path: "/v1/categories"})
				if rec.Code != http.StatusOK {
					t.Errorf("lister %d: list: got %d, want 200; body %s", l, rec.Code, rec.Body)
					return
				}
				var list []petstoretest.Category
				if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
					t.Errorf("lister %d: list is not a JSON array of categories: %v; body %s", l, err, rec.Body)
					return
				}
				if msg := checkAscending(list); msg != "" {
					t.Errorf("lister %d: %s", l, msg)
					return
				}
				if len(list) < seen {
					t.Errorf("lister %d: list shrank from %d to %d categories", l, seen, len(list))
					return
				}
				seen = len(list)
				lists[l]++
			}
		}()
	}

	close(start)
	creating.Wait()
	close(stopListing)
	listing.Wait()
	if t.Failed() {
		return
	}

	seen := make(map[int64]bool, total)
	for w, got := range ids {
		for i, id := range got {
			if seen[id] {
				t.Errorf("id %d given twice", id)
			}
			seen[id] = true
			// A create that returned before another began has the smaller id.
			if i > 0 && id <= got[i-1] {
				t.Errorf("creator %d: id %d after id %d; ids must increase", w, id, got[i-1])
			}
		}
	}
	for id := int64(1); id <= total; id++ {
		if !seen[id] {
			t.Errorf("id %d missing: ids must be exactly 1..%d", id, total)
		}
	}

	list := env.mustList(t)
	if len(list) != total {
		t.Fatalf("list: got %d categories, want %d", len(list), total)
	}
	if msg := checkAscending(list); msg != "" {
		t.Errorf("final list: %s", msg)
	}
	names := make(map[string]bool, total)
	for _, c := range list {
		names[c.Name] = true
	}
	for w := range creators {
		for i := range perCreator {
			if name := fmt.Sprintf("category %02d-%02d", w, i); !names[name] {
				t.Errorf("list lacks %q", name)
			}
		}
	}
	t.Logf("listers checked %v lists while creating", lists)
}

// checkAscending says what is wrong with the order of list, or "".
func checkAscending(list []petstoretest.Category) string {
	for i, c := range list {
		if c.ID <= 0 || c.Name == "" {
			return fmt.Sprintf("item %d: got id %d, name %q; want a positive id and a name", i, c.ID, c.Name)
		}
		if i > 0 && c.ID <= list[i-1].ID {
			return fmt.Sprintf("list not sorted by id ascending: id %d after id %d", c.ID, list[i-1].ID)
		}
	}
	return ""
}

// testConcurrentSameName races 16 creates of one name, then 16 creates of
// names equal to another one but for case and surrounding space: each time
// exactly one wins and the rest are 409 conflict.
func testConcurrentSameName(t *testing.T, env *testEnv) {
	const racers = 16
	rounds := []struct {
		name  string
		names func(i int) string
	}{
		{"identical names", func(int) string { return "Contested" }},
		{"names equal ignoring case and space", func(i int) string {
			return [...]string{"Ferrets", "ferrets", "FERRETS", " fErReTs\t"}[i%4]
		}},
	}
	for _, round := range rounds {
		start := make(chan struct{})
		recs := make([]*httptest.ResponseRecorder, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body, _ := json.Marshal(map[string]string{"name": round.names(i)})
				<-start
				recs[i] = env.do(t, request{method: "POST", path: "/v1/categories", body: string(body)})
			}()
		}
		close(start)
		wg.Wait()

		winners := 0
		for i, rec := range recs {
			switch rec.Code {
			case http.StatusCreated:
				winners++
				var c petstoretest.Category
				if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
					t.Errorf("%s: racer %d: %v; body %s", round.name, i, err, rec.Body)
				} else if want := strings.TrimSpace(round.names(i)); c.Name != want {
					t.Errorf("%s: racer %d: name: got %q, want %q", round.name, i, c.Name, want)
				}
			case http.StatusConflict:
				mustError(t, rec, http.StatusConflict, codeConflict)
			default:
				t.Errorf("%s: racer %d: got %d, want 201 or 409; body %s", round.name, i, rec.Code, rec.Body)
			}
		}
		if winners != 1 {
			t.Errorf("%s: got %d creates answered 201, want exactly 1", round.name, winners)
		}
	}
	list := env.mustList(t)
	if len(list) != len(rounds) {
		t.Fatalf("list: got %d categories, want %d: %+v", len(list), len(rounds), list)
	}
	for i, c := range list {
		if c.ID != int64(i+1) {
			t.Errorf("list item %d: id: got %d, want %d (a lost race must not use up an id)", i, c.ID, i+1)
		}
	}
}
