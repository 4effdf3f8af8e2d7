package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"petstore/internal/catalog"
	"petstore/internal/etcd/etcdtest"
)

// The contract of a store, checked the same way against every store of
// this package: Memory, Journal, Etcd on the fake gateway and Etcd on a
// real 3-member etcd cluster. They are the stores main's Store interface
// (store.go of the top-level package) stands for, and the cases call them
// through that interface's methods (contractStore). A store passes only
// what it promises alike; where one legitimately does otherwise the case
// is left out for it, and the case says why.
//
// It is one test so that the cluster starts once: every case opens its
// own data (a journal file, an etcd prefix), never another case's.

// contractStore is what the cases ask of a store: methods of main's Store
// interface.
type contractStore interface {
	creator
	lister
	Get(ctx context.Context, id int64) ([]byte, error)
	Health() error
	Close() error
}

var _ = []contractStore{(*Memory)(nil), (*Journal)(nil), (*Etcd)(nil)}

// storeOpener opens a case's data, holding at most maxCategories
// categories (0: the default). Each call opens it again: a case closes a
// store and opens another to see what a restart sees. Stores are closed
// when the case ends.
type storeOpener func(t *testing.T, maxCategories int64) contractStore

// storeUnderTest is one store as a case sees it.
type storeUnderTest struct {
	open storeOpener
	// durable: another open finds what was created (not Memory).
	durable bool
	// closes: Close stops creates (Memory has nothing to close).
	closes bool
}

// storeCase is one clause of the contract.
type storeCase struct {
	name string
	run  func(t *testing.T, st storeUnderTest)
	// leaveOut, if set, says the case does not apply to st (it is not
	// run, rather than skipped): the store promises something else.
	leaveOut func(st storeUnderTest) bool
}

func TestStoreContract(t *testing.T) {
	t.Parallel()
	forEachStore(t, []storeCase{
		{name: "ids start at 1 and follow", run: contractIDs},
		{name: "list order and ETag", run: contractList},
		{name: "get of a missing id", run: contractMissing},
		{name: "a taken name", run: contractNameTaken},
		{name: "keyed create replayed", run: contractReplay},
		{name: "key reused", run: contractKeyReused},
		{name: "catalogue cap", run: contractCap},
		// Close of the memory store releases nothing and refuses nothing.
		{name: "create after close", run: contractClosed, leaveOut: func(st storeUnderTest) bool { return !st.closes }},
	})
}

// forEachStore runs every case as a subtest of every store, each case on
// data of its own. The etcd cluster starts once, for all its cases (a
// prefix each); without an etcd binary its subtest skips, or fails when
// PETSTORE_TEST_REQUIRE_ETCD=1 (etcdtest.StartCluster).
func forEachStore(t *testing.T, cases []storeCase) {
	// data makes a case's data and returns how to open it.
	runCases := func(t *testing.T, durable, closes bool, data func(t *testing.T) storeOpener) {
		for _, c := range cases {
			st := storeUnderTest{durable: durable, closes: closes}
			if c.leaveOut != nil && c.leaveOut(st) {
				continue
			}
			t.Run(c.name, func(t *testing.T) {
				st.open = data(t)
				c.run(t, st)
			})
		}
	}
	t.Run("memory", func(t *testing.T) {
		runCases(t, false, false, func(*testing.T) storeOpener {
			return func(t *testing.T, maxCategories int64) contractStore {
				s := NewMemory(Options{MaxCategories: maxCategories})
				t.Cleanup(func() { s.Close() })
				return s
			}
		})
	})
	t.Run("journal", func(t *testing.T) {
		runCases(t, true, true, func(t *testing.T) storeOpener {
			path := filepath.Join(t.TempDir(), "categories.journal")
			return func(t *testing.T, maxCategories int64) contractStore {
				return openTestStore(t, path, withMaxCategories(maxCategories))
			}
		})
	})
	t.Run("etcd fake gateway", func(t *testing.T) {
		_, srv := etcdtest.NewFake(t, "3.4")
		n := 0
		runCases(t, true, true, func(*testing.T) storeOpener {
			n++
			cfg := EtcdConfig{Endpoints: []string{srv.URL}, Prefix: fmt.Sprintf("contract-%d", n)}
			return func(t *testing.T, maxCategories int64) contractStore {
				return openFakeStore(t, cfg, withMaxCategories(maxCategories))
			}
		})
	})
	t.Run("etcd cluster", func(t *testing.T) {
		cluster := etcdtest.Shared(t)
		n := 0
		runCases(t, true, true, func(*testing.T) storeOpener {
			n++
			prefix := fmt.Sprintf("contract-%d", n)
			return func(t *testing.T, maxCategories int64) contractStore {
				return openClusterStore(t, cluster, prefix, withMaxCategories(maxCategories))
			}
		})
	})
}

// withMaxCategories sets the catalogue cap of a store's options.
func withMaxCategories(n int64) func(*Options) {
	return func(o *Options) { o.MaxCategories = n }
}

// contractCreate creates nc in s and checks the answer: the category nc
// makes with the id want, not replayed.
func contractCreate(t *testing.T, s contractStore, nc catalog.NewCategory, want int64) {
	t.Helper()
	c, err := s.Create(context.Background(), nc)
	if err != nil {
		t.Fatalf("Create(%q): %v", nc.Name, err)
	}
	if wantJSON := string(nc.WithID(want).AppendJSON(nil)); c.ID != want || string(c.JSON) != wantJSON || c.Replayed {
		t.Fatalf("Create(%q): got id %d, %s (replayed %v); want id %d, %s", nc.Name, c.ID, c.JSON, c.Replayed, want, wantJSON)
	}
}

// contractRefused creates nc in s and checks that it is refused with an
// error that is target (errors.Is).
func contractRefused(t *testing.T, s contractStore, nc catalog.NewCategory, target error) {
	t.Helper()
	c, err := s.Create(context.Background(), nc)
	if !errors.Is(err, target) {
		t.Fatalf("Create(%q): got id %d, %v; want an error that is %q", nc.Name, c.ID, err, target)
	}
}

// contractListed returns what s lists: the JSON array and its ETag.
func contractListed(t *testing.T, s contractStore) (list, etag string) {
	t.Helper()
	snap := snapshotOf(t, s)
	var b strings.Builder
	if _, err := snap.WriteTo(&b); err != nil {
		t.Fatalf("List: writing: %v", err)
	}
	if n := strings.Count(b.String(), `{"id":`); n != snap.Len() {
		t.Fatalf("List: Len() is %d, but the array %s holds %d", snap.Len(), b.String(), n)
	}
	return b.String(), snap.ETag()
}

// contractListsAsBefore checks that s lists list with ETag etag, as it
// did before what when names.
func contractListsAsBefore(t *testing.T, s contractStore, list, etag, when string) {
	t.Helper()
	if got, gotETag := contractListed(t, s); got != list || gotETag != etag {
		t.Errorf("List %s: got %s, ETag %s; want %s, ETag %s", when, got, gotETag, list, etag)
	}
}

// contractArray is the JSON array of cats, as List writes it.
func contractArray(cats ...catalog.Category) string {
	var b []byte
	for i, c := range cats {
		if i > 0 {
			b = append(b, ',')
		}
		b = c.AppendJSON(b)
	}
	return "[" + string(b) + "]"
}

// Ids start at 1 and follow in the order of the creates, Get answers each
// category's JSON, and a durable store keeps both: the next id after a
// reopen follows the last.
func contractIDs(t *testing.T, st storeUnderTest) {
	s := st.open(t, 0)
	if err := s.Health(); err != nil {
		t.Fatalf("Health of a store just opened: %v", err)
	}
	cats := []catalog.Category{
		{ID: 1, Name: "dog"},
		{ID: 2, Name: "Cat", Description: "purrs", HasDescription: true},
		{ID: 3, Name: "bird", HasDescription: true}, // an empty description is kept
	}
	for _, c := range cats {
		contractCreate(t, s, catalog.NewCategory{Name: c.Name, Description: c.Description, HasDescription: c.HasDescription}, c.ID)
	}
	check := func(s contractStore) {
		t.Helper()
		for _, c := range cats {
			body, err := s.Get(context.Background(), c.ID)
			if want := string(c.AppendJSON(nil)); err != nil || string(body) != want {
				t.Errorf("Get(%d): got %s, %v; want %s", c.ID, body, err, want)
			}
		}
	}
	check(s)
	if !st.durable {
		return
	}
	s.Close()
	s = st.open(t, 0)
	check(s)
	contractCreate(t, s, catalog.NewCategory{Name: "fish"}, 4)
}

// List is every category in id order; its ETag changes with each create,
// not between two lists, and is the same for the same categories after a
// reopen.
func contractList(t *testing.T, st storeUnderTest) {
	s := st.open(t, 0)
	list, etag := contractListed(t, s)
	if list != "[]" {
		t.Fatalf("List of a new store: got %s, want []", list)
	}
	seen := map[string]string{etag: list}
	var cats []catalog.Category
	for i, name := range []string{"zebra", "ant", "Moth"} {
		c := catalog.Category{ID: int64(i + 1), Name: name}
		contractCreate(t, s, catalog.NewCategory{Name: name}, c.ID)
		cats = append(cats, c)
		list, etag = contractListed(t, s)
		if want := contractArray(cats...); list != want {
			t.Fatalf("List after creating %q: got %s, want %s", name, list, want)
		}
		if earlier, dup := seen[etag]; dup {
			t.Fatalf("List after creating %q: ETag %s, the same as of %s", name, etag, earlier)
		}
		seen[etag] = list
	}
	if again, etagAgain := contractListed(t, s); again != list || etagAgain != etag {
		t.Errorf("List again: got %s, ETag %s; want %s, ETag %s", again, etagAgain, list, etag)
	}
	if !st.durable {
		return
	}
	s.Close()
	contractListsAsBefore(t, st.open(t, 0), list, etag, "after a reopen")
}

// Get of an id no category has is a *catalog.NotFoundError naming the id,
// which is catalog.ErrNotFound.
func contractMissing(t *testing.T, st storeUnderTest) {
	s := st.open(t, 0)
	missing := func(id int64) {
		t.Helper()
		body, err := s.Get(context.Background(), id)
		var nf *catalog.NotFoundError
		if !errors.Is(err, catalog.ErrNotFound) || !errors.As(err, &nf) || nf.ID != id {
			t.Errorf("Get(%d): got %s, %v; want a *catalog.NotFoundError of id %d", id, body, err, id)
		}
	}
	missing(1)
	contractCreate(t, s, catalog.NewCategory{Name: "dog"}, 1)
	missing(2)
	missing(math.MaxInt64)
}

// A name taken already, ignoring case and fullwidth forms, is a
// *catalog.NameTakenError naming the name asked for; the refusal writes
// nothing, takes no id, and does not keep the Idempotency-Key it came
// with.
func contractNameTaken(t *testing.T, st storeUnderTest) {
	s := st.open(t, 0)
	contractCreate(t, s, catalog.NewCategory{Name: "Dog"}, 1)
	list, etag := contractListed(t, s)
	key := catalog.NewIdempotencyKey(scopeOf("api key one"), "take-1")
	for _, nc := range []catalog.NewCategory{
		{Name: "Dog"}, {Name: "dog"}, {Name: "DOG"}, {Name: "ｄｏｇ"}, {Name: "Ｄｏｇ"},
		{Name: "dog", Description: "another", HasDescription: true},
		{Name: "dOG", Key: key},
	} {
		_, err := s.Create(context.Background(), nc)
		var taken *catalog.NameTakenError
		if !errors.Is(err, catalog.ErrNameTaken) || !errors.As(err, &taken) || taken.Name != nc.Name {
			t.Errorf("Create(%q): got %v; want a *catalog.NameTakenError of %q", nc.Name, err, nc.Name)
		}
	}
	contractListsAsBefore(t, s, list, etag, "after the refusals")
	contractCreate(t, s, catalog.NewCategory{Name: "wolf", Key: key}, 2)
}

// A keyed create sent again, same key and same request, is answered with
// the category it made (replayed), and nothing more is written; a durable
// store still answers it so after a reopen.
func contractReplay(t *testing.T, st storeUnderTest) {
	s := st.open(t, 0)
	nc := func() catalog.NewCategory {
		return catalog.NewCategory{Name: "dog", Description: "barks", HasDescription: true,
			Key: catalog.NewIdempotencyKey(scopeOf("api key one"), "replay-1")}
	}
	contractCreate(t, s, nc(), 1)
	list, etag := contractListed(t, s)
	want := string(nc().WithID(1).AppendJSON(nil))
	replayed := func(s contractStore, when string) {
		t.Helper()
		c, err := s.Create(context.Background(), nc())
		if err != nil || c.ID != 1 || string(c.JSON) != want || !c.Replayed {
			t.Fatalf("the same keyed create %s: got id %d, %s (replayed %v), %v; want id 1, %s, replayed", when, c.ID, c.JSON, c.Replayed, err, want)
		}
	}
	replayed(s, "again")
	replayed(s, "a third time")
	contractListsAsBefore(t, s, list, etag, "after the replays")
	if !st.durable {
		return
	}
	s.Close()
	s = st.open(t, 0)
	replayed(s, "after a reopen")
	contractCreate(t, s, catalog.NewCategory{Name: "cat"}, 2)
}

// An Idempotency-Key that made a category refuses any other request
// (catalog.ErrKeyReused) and writes nothing; the same key text sent with
// another API key is another key.
func contractKeyReused(t *testing.T, st storeUnderTest) {
	s := st.open(t, 0)
	scope := scopeOf("api key one")
	keyed := func(name string) catalog.NewCategory {
		return catalog.NewCategory{Name: name, Key: catalog.NewIdempotencyKey(scope, "reuse-1")}
	}
	contractCreate(t, s, keyed("dog"), 1)
	list, etag := contractListed(t, s)
	withDescription := keyed("dog")
	withDescription.Description, withDescription.HasDescription = "barks", true
	for _, nc := range []catalog.NewCategory{keyed("cat"), keyed("DOG"), withDescription} {
		contractRefused(t, s, nc, catalog.ErrKeyReused)
	}
	contractListsAsBefore(t, s, list, etag, "after the refusals")
	contractCreate(t, s, catalog.NewCategory{Name: "cat", Key: catalog.NewIdempotencyKey(scopeOf("api key two"), "reuse-1")}, 2)
	if !st.durable {
		return
	}
	s.Close()
	s = st.open(t, 0)
	contractRefused(t, s, keyed("bird"), catalog.ErrKeyReused)
	contractCreate(t, s, catalog.NewCategory{Name: "bird"}, 3)
}

// At the cap a create is catalog.ErrQuotaExceeded and writes nothing, keyed
// or not; its key is not kept, so the same create succeeds once the cap
// is raised (a durable store, reopened with a larger cap).
func contractCap(t *testing.T, st storeUnderTest) {
	s := st.open(t, 2)
	contractCreate(t, s, catalog.NewCategory{Name: "dog"}, 1)
	contractCreate(t, s, catalog.NewCategory{Name: "cat"}, 2)
	list, etag := contractListed(t, s)
	keyed := catalog.NewCategory{Name: "bird", Key: catalog.NewIdempotencyKey(scopeOf("api key one"), "cap-1")}
	contractRefused(t, s, catalog.NewCategory{Name: "fish"}, catalog.ErrQuotaExceeded)
	contractRefused(t, s, keyed, catalog.ErrQuotaExceeded)
	contractRefused(t, s, keyed, catalog.ErrQuotaExceeded)
	contractListsAsBefore(t, s, list, etag, "after the refusals")
	if body, err := s.Get(context.Background(), 3); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Get(3) after the refusals: got %s, %v; want catalog.ErrNotFound", body, err)
	}
	if !st.durable {
		return
	}
	s.Close()
	s = st.open(t, 2)
	contractListsAsBefore(t, s, list, etag, "after a reopen")
	contractRefused(t, s, keyed, catalog.ErrQuotaExceeded)
	s.Close()
	s = st.open(t, 3)
	contractCreate(t, s, keyed, 3)
	contractRefused(t, s, catalog.NewCategory{Name: "fish"}, catalog.ErrQuotaExceeded)
}

// After Close a create is refused with an error of the catalog.ErrUnavailable
// family, keyed or not, and nothing is written.
func contractClosed(t *testing.T, st storeUnderTest) {
	s := st.open(t, 0)
	contractCreate(t, s, catalog.NewCategory{Name: "dog"}, 1)
	list, etag := contractListed(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	contractRefused(t, s, catalog.NewCategory{Name: "cat"}, catalog.ErrUnavailable)
	contractRefused(t, s, catalog.NewCategory{Name: "bird", Key: catalog.NewIdempotencyKey(scopeOf("api key one"), "closed-1")}, catalog.ErrUnavailable)
	contractListsAsBefore(t, st.open(t, 0), list, etag, "after a reopen")
}
