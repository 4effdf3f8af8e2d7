package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"petstore/internal/catalog"
	"petstore/internal/journal"
	"petstore/internal/store/storetest"
)

// When the last id is the largest int64, a create fails with
// catalog.ErrIDsExhausted and writes nothing; the file stays readable.
func TestJournalIDsRunOut(t *testing.T) {
	t.Parallel()
	last := `{"id":9223372036854775807,"name":"last"}`
	path := writeJournal(t, last)
	before, _ := os.ReadFile(path)
	s := openTestStore(t, path)

	for _, name := range []string{"dog", "cat"} {
		c, err := s.Create(context.Background(), catalog.NewCategory{Name: name})
		if !errors.Is(err, catalog.ErrIDsExhausted) {
			t.Errorf("Create(%q): got %v, want catalog.ErrIDsExhausted", name, err)
		}
		if c.ID != 0 {
			t.Errorf("a failed create has an id: %d", c.ID)
		}
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
	hold := storetest.NewHold(t)
	s := openTestStore(t, path, func(o *Options) { o.OnBatch = hold.OnBatch })
	type answer struct {
		id  int64
		err error
	}
	answers := make(chan answer, 3)
	create := func(name string) {
		go func() {
			c, err := s.Create(context.Background(), catalog.NewCategory{Name: name})
			answers <- answer{c.ID, err}
		}()
	}
	create("first")
	if n := hold.NextBatch(t); n != 1 {
		t.Fatalf("first batch: got %d creates, want 1", n)
	}
	create("second")
	create("third")
	waitFor(t, "the other creates to queue", func() bool { return len(s.w.queue) == 2 })
	hold.Release()
	if n := hold.NextBatch(t); n != 2 {
		t.Fatalf("second batch: got %d creates, want 2", n)
	}

	created := map[int64]bool{}
	failed := 0
	for range 3 {
		a := <-answers
		switch {
		case a.err == nil:
			created[a.id] = true
		case errors.Is(a.err, catalog.ErrIDsExhausted):
			failed++
		default:
			t.Errorf("Create: %v, want catalog.ErrIDsExhausted or success", a.err)
		}
	}
	want := map[int64]bool{9223372036854775806: true, 9223372036854775807: true}
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
	s := NewMemory(Options{})
	s.idx.Add(catalog.FoldName("old"), catalog.Category{ID: math.MaxInt64 - 1, Name: "old"}) // no API reaches the last ids in a test's time
	s.idx.Publish()

	if c := mustStoreCreate(t, s, "dog"); c.ID != math.MaxInt64 {
		t.Errorf("create with one id left: id %d, want %d", c.ID, int64(math.MaxInt64))
	}
	if _, err := s.Create(context.Background(), catalog.NewCategory{Name: "cat"}); !errors.Is(err, catalog.ErrIDsExhausted) {
		t.Errorf("Create with no id left: got %v, want catalog.ErrIDsExhausted", err)
	}
	if n := snapshotOf(t, s).Len(); n != 2 {
		t.Errorf("categories: got %d, want 2", n)
	}
}

// A create refused for a taken name is told which category holds it, as
// stored; one refused for a name another create of its own batch takes is
// told that create's category, and when the batch's write fails it gets a
// definite failure instead (503 unavailable): the name was not taken after
// all, and nothing of its own was written, even when the batch's outcome is
// unknown.
func TestNameTakenNamesTheHolder(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		hold := storetest.NewHold(t)
		s := openTestStore(t, filepath.Join(t.TempDir(), "cats.jsonl"), func(o *Options) { o.OnBatch = hold.OnBatch })
		type answer struct {
			name string
			c    Created
			err  error
		}
		answers := make(chan answer, 3)
		create := func(name string) {
			go func() {
				c, err := s.Create(context.Background(), catalog.NewCategory{Name: name})
				answers <- answer{name, c, err}
			}()
		}
		create("ｄｏｇ")
		if n := hold.NextBatch(t); n != 1 {
			t.Fatalf("first batch: %d creates, want 1", n)
		}
		create("cat")
		waitFor(t, "cat to queue", func() bool { return len(s.w.queue) == 1 })
		create("CAT")
		waitFor(t, "CAT to queue", func() bool { return len(s.w.queue) == 2 })
		if fail { // ｄｏｇ's batch is written; the next one fails
			written, appendLines := 0, s.appendLines
			s.appendLines = func(b []byte) error {
				if written++; written > 1 { // and could not be undone
					return fmt.Errorf("the disk is gone: %w", errors.Join(journal.ErrBroken, journal.ErrNotUndone))
				}
				return appendLines(b)
			}
		}
		hold.Release()
		got := map[string]answer{}
		for range 3 {
			a := <-answers
			got[a.name] = a
		}
		if a := got["ｄｏｇ"]; a.err != nil || a.c.ID != 1 {
			t.Fatalf("ｄｏｇ: %+v", a)
		}
		var taken *catalog.NameTakenError
		switch {
		case !fail:
			if a := got["cat"]; a.err != nil || a.c.ID != 2 {
				t.Fatalf("cat: %+v", a)
			}
			if !errors.As(got["CAT"].err, &taken) || taken.ID != 2 || taken.Stored != "cat" || taken.Name != "CAT" {
				t.Errorf("CAT, in cat's batch: %v, want the name held by cat (id 2)", got["CAT"].err)
			}
			_, err := s.Create(context.Background(), catalog.NewCategory{Name: "dog"})
			if !errors.As(err, &taken) || taken.ID != 1 || taken.Stored != "ｄｏｇ" || taken.Name != "dog" {
				t.Errorf("dog after ｄｏｇ: %v, want the name held by ｄｏｇ (id 1)", err)
			}
		default:
			if err := got["cat"].err; !errors.Is(err, catalog.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "the disk is gone") {
				t.Errorf("cat, in a batch whose write failed and was not undone: %v, want the outcome unknown", err)
			}
			// Nothing of CAT's was written: a definite failure, not a
			// 409 for a name nobody holds, nor an unknown outcome.
			if err := got["CAT"].err; !errors.Is(err, catalog.ErrUnavailable) || errors.Is(err, catalog.ErrOutcomeUnknown) || errors.As(err, &taken) {
				t.Errorf("CAT, refused for cat's name in the failed batch: %v, want unavailable", err)
			}
		}
	}
}
