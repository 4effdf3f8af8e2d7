package catalog

import (
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
		a, b, z, last, more := s.Page(c.after, c.limit)
		got := strings.Join([]string{string(a), string(b), string(z)}, "")
		if got != c.want || last != c.last || more != c.more {
			t.Errorf("Page(%d, %d): got %s %d %v, want %s %d %v", c.after, c.limit, got, last, more, c.want, c.last, c.more)
		}
	}
}
