package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A snapshot finds only the names it holds: a category added after it was
// published, or added and not yet published, is not found through it.
func TestSnapshotFindSeesOnlyItsCategories(t *testing.T) {
	x := NewIndex(0, 0)
	x.Add(FoldName("dog"), Category{ID: 1, Name: "dog"})
	x.Publish()
	before := x.Snapshot()
	x.Add(FoldName("Cat"), Category{ID: 2, Name: "Cat"})
	if _, _, ok := x.Snapshot().Find(FoldName("cat")); ok {
		t.Errorf("found a category added but not published")
	}
	x.Publish()
	if id, json, ok := x.Snapshot().Find(FoldName("CAT")); !ok || id != 2 || string(json) != `{"id":2,"name":"Cat"}` {
		t.Errorf("Find(cat) after Publish: got %d %s %v, want 2", id, json, ok)
	}
	if _, _, ok := before.Find(FoldName("cat")); ok {
		t.Errorf("an older snapshot found a category published after it")
	}
	if id, _, ok := before.Find(FoldName("DOG")); !ok || id != 1 {
		t.Errorf("Find(dog) on the older snapshot: got %d %v, want 1", id, ok)
	}
}

// Page cuts the encoded list by id: the parts join to valid JSON arrays,
// and more says whether categories follow.
func TestSnapshotPage(t *testing.T) {
	x := NewIndex(0, 0)
	for i, n := range []string{"a", "b", "c"} {
		x.Add(FoldName(n), Category{ID: int64(i*2 + 2), Name: n}) // ids 2, 4, 6
	}
	x.Publish()
	s := x.Snapshot()
	for _, c := range []struct {
		after int64
		limit int
		want  string
		last  int64
		more  bool
	}{
		{0, 0, `[{"id":2,"name":"a"},{"id":4,"name":"b"},{"id":6,"name":"c"}]`, 6, false},
		{0, 1, `[{"id":2,"name":"a"}]`, 2, true},
		{2, 1, `[{"id":4,"name":"b"}]`, 4, true},
		{3, 2, `[{"id":4,"name":"b"},{"id":6,"name":"c"}]`, 6, false},
		{6, 5, `[]`, 0, false},
		{1 << 62, 5, `[]`, 0, false},
	} {
		items, last, more := s.Page(c.after, c.limit)
		var b strings.Builder
		WriteArray(&b, items)
		got := b.String()
		if got != c.want || last != c.last || more != c.more {
			t.Errorf("Page(%d, %d): got %s %d %v, want %s %d %v", c.after, c.limit, got, last, more, c.want, c.last, c.more)
		}
	}
}

// recordedWrites keeps each Write's bytes.
type recordedWrites [][]byte

func (r *recordedWrites) Write(p []byte) (int, error) {
	*r = append(*r, bytes.Clone(p))
	return len(p), nil
}

// An array of up to JoinLimit bytes goes in one Write; a larger one in
// three, none of them small.
func TestWriteArrayWrites(t *testing.T) {
	t.Parallel()
	item := `{"id":1,"name":"` + strings.Repeat("n", 90) + `"}`
	for _, c := range []struct{ items, writes int }{{0, 1}, {1, 1}, {100, 1}, {151, 3}, {5000, 3}} {
		joined := strings.TrimSuffix(strings.Repeat(item+",", c.items), ",")
		var w recordedWrites
		n, err := WriteArray(&w, []byte(joined))
		got := string(bytes.Join(w, nil))
		if err != nil || got != "["+joined+"]" || n != int64(len(got)) {
			t.Errorf("%d items: wrote %d bytes, %v; not the array", c.items, n, err)
		}
		if len(w) != c.writes {
			t.Errorf("%d items, %d bytes: %d writes, want %d", c.items, len(got), len(w), c.writes)
		}
		for i, p := range w {
			if len(w) > 1 && len(p) < EdgeSize {
				t.Errorf("%d items: write %d has %d bytes, want at least %d", c.items, i, len(p), EdgeSize)
			}
		}
	}
}

// The whole list goes in one Write up to ClosedLimit bytes, kept closed by
// its snapshot, and in two above, none of them small.
func TestSnapshotWriteToWrites(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ n, writes int }{{0, 1}, {1, 1}, {500, 1}, {700, 2}, {5000, 2}} {
		x := NewIndex(0, 0)
		for i := range c.n {
			name := fmt.Sprintf("category-%04d-%s", i, strings.Repeat("n", 80))
			x.Add(FoldName(name), Category{ID: int64(i + 1), Name: name})
		}
		x.Publish()
		s := x.Snapshot()
		var w recordedWrites
		n, err := s.WriteTo(&w)
		got := bytes.Join(w, nil)
		if err != nil || n != int64(s.Size()) || len(got) != s.Size() || !json.Valid(got) {
			t.Errorf("%d categories: wrote %d bytes, %v; not the list of %d bytes", c.n, n, err, s.Size())
		}
		if len(w) != c.writes {
			t.Errorf("%d categories (%d bytes): %d writes, want %d", c.n, s.Size(), len(w), c.writes)
		}
		for i, p := range w {
			if len(w) > 1 && len(p) < EdgeSize {
				t.Errorf("%d categories: write %d has %d bytes, want at least %d", c.n, i, len(p), EdgeSize)
			}
		}
	}
}
