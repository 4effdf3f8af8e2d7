package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"petstore/internal/store"

	"petstore/internal/etcd/etcdtest"
)

// withMaxCategories sets the catalogue cap of a store's options.
func withMaxCategories(n int64) func(*store.Options) {
	return func(o *store.Options) { o.MaxCategories = n }
}

// The catalogue cap through the real mux, for the memory and the journal
// store: creates up to the cap are 201, the next is 403 quota_exceeded
// with an Error body and writes nothing; a taken name is still 409, and a
// keyed retry of a create still replays.
func TestCatalogueCap(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"memory", "journal"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var s Store = store.NewMemory(store.Options{MaxCategories: 3})
			path := filepath.Join(t.TempDir(), "cats.jsonl")
			if kind == "journal" {
				s = openTestStore(t, path, withMaxCategories(3))
			}
			env := newTestEnv(t, withStore(s))
			for i := range 2 {
				mustStatus(t, postCategory(t, env, fmt.Sprintf(`{"name":"cat %d"}`, i)), http.StatusCreated)
			}
			if rec := keyedCreate(t, env, "third", `{"name":"cat 2"}`); rec.Code != http.StatusCreated {
				t.Fatalf("third create: got %d %s, want 201", rec.Code, rec.Body)
			}
			before := fileSize(t, path)
			for _, body := range []string{`{"name":"cat 3"}`, `{"name":"cat 4","description":"more"}`} {
				eb := mustError(t, postCategory(t, env, body), http.StatusForbidden, codeQuotaExceeded)
				if eb.Message == "" {
					t.Errorf("quota_exceeded without a message")
				}
			}
			mustError(t, keyedCreate(t, env, "fourth", `{"name":"cat 5"}`), http.StatusForbidden, codeQuotaExceeded)
			mustError(t, postCategory(t, env, `{"name":"CAT 0"}`), http.StatusConflict, codeConflict)
			if rec := keyedCreate(t, env, "third", `{"name":"cat 2"}`); rec.Code != http.StatusCreated || rec.Header().Get("Idempotent-Replayed") != "true" {
				t.Errorf("a keyed retry at the cap: got %d %s, want its 201 replayed", rec.Code, rec.Body)
			}
			if got := env.mustList(t); len(got) != 3 {
				t.Errorf("list: got %d categories, want 3", len(got))
			}
			if after := fileSize(t, path); after != before {
				t.Errorf("journal: %d bytes before the refused creates, %d after; want nothing written", before, after)
			}
		})
	}
}

// fileSize returns the size of path, or -1 when it does not exist.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return info.Size()
}

// Many concurrent creates at a cap of N, sharing journal writes (group
// commit), yield exactly N 201s, with ids 1..N, and 403 for the rest: a
// batch that crosses the cap is cut, never committed whole. The same
// holds for the memory store, which takes one create at a time.
func TestCatalogueCapConcurrentCreates(t *testing.T) {
	t.Parallel()
	const limit, creates = 7, 64
	for _, kind := range []string{"memory", "journal"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var s Store = store.NewMemory(store.Options{MaxCategories: limit})
			if kind == "journal" {
				s = openTestStore(t, filepath.Join(t.TempDir(), "cats.jsonl"), withMaxCategories(limit))
			}
			env := newTestEnv(t, withStore(s))
			var mu sync.Mutex
			statuses := map[int]int{}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range creates {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					rec := postCategory(t, env, fmt.Sprintf(`{"name":"racer %d"}`, i))
					mu.Lock()
					statuses[rec.Code]++
					mu.Unlock()
				}()
			}
			close(start)
			wg.Wait()
			if statuses[http.StatusCreated] != limit || statuses[http.StatusForbidden] != creates-limit {
				t.Errorf("statuses: got %v, want %d × 201 and %d × 403", statuses, limit, creates-limit)
			}
			var ids []int64
			for _, c := range env.mustList(t) {
				ids = append(ids, c.ID)
			}
			if want := []int64{1, 2, 3, 4, 5, 6, 7}; !slices.Equal(ids, want) {
				t.Errorf("ids: got %v, want %v", ids, want)
			}
		})
	}
}

// A journal store reopened at its cap refuses creates; reopened with a
// higher cap, it takes them again, with the next id; with a lower one, it
// keeps every category and refuses creates.
func TestCatalogueCapAcrossRestarts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	s := openTestStore(t, path, withMaxCategories(2))
	mustStoreCreate(t, s, "one")
	mustStoreCreate(t, s, "two")
	s.Close()

	for _, tc := range []struct {
		limit int64
		want  int
	}{{2, http.StatusForbidden}, {1, http.StatusForbidden}, {3, http.StatusCreated}} {
		s := openTestStore(t, path, withMaxCategories(tc.limit))
		env := newTestEnv(t, withStore(s))
		rec := postCategory(t, env, fmt.Sprintf(`{"name":"three at cap %d"}`, tc.limit))
		if rec.Code != tc.want {
			t.Fatalf("reopened at cap %d: got %d %s, want %d", tc.limit, rec.Code, rec.Body, tc.want)
		}
		if tc.want == http.StatusForbidden {
			mustError(t, rec, http.StatusForbidden, codeQuotaExceeded)
		} else if got := rec.Header().Get("Location"); got != "/v1/categories/3" {
			t.Errorf("the create after raising the cap: Location %q, want /v1/categories/3", got)
		}
		if got := len(env.mustList(t)); got < 2 {
			t.Errorf("reopened at cap %d: %d categories, want every one kept", tc.limit, got)
		}
		s.Close()
	}
}

// On a real etcd cluster the cap is cluster-wide: two instances racing
// across it, each with many creates in flight (batched into txns), make
// exactly the cap's number of categories, ids 1..cap, and answer 403
// quota_exceeded to every other create.
func TestEtcdCatalogueCapTwoInstances(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.Shared(t)
	const limit, workers = 12, 32
	env := baseEnv(cluster.Data("capped"))
	env["PETSTORE_MAX_CATEGORIES"] = fmt.Sprint(limit)
	a := startRun(t, env)
	b := startRun(t, env)
	bases := []string{a.url(""), b.url("")}
	client := loadClient(t)

	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range 2 * workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, _, _, err := createVia(client, bases[w%2], e2eKey, fmt.Sprintf("capped-%d", w))
			if err != nil {
				t.Errorf("create %d: %v", w, err)
			}
			mu.Lock()
			statuses[status]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	if statuses[http.StatusCreated] != limit || statuses[http.StatusForbidden] != 2*workers-limit {
		t.Errorf("statuses: got %v, want %d × 201 and %d × 403", statuses, limit, 2*workers-limit)
	}
	for _, base := range bases {
		list, _ := waitList(t, client, base, e2eKey, limit, 5*time.Second)
		checkConsecutive(t, list)
		if len(list) != limit {
			t.Errorf("%s lists %d categories, want %d", base, len(list), limit)
		}
	}
	if status, _, _, err := createVia(client, bases[0], e2eKey, "one more"); err != nil || status != http.StatusForbidden {
		t.Errorf("a create after the race: got %d (%v), want 403", status, err)
	}
}
