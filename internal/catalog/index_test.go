package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"reflect"
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

// The name table keeps a hash of each name, not the name: names whose
// hashes collide are told apart by the name read back from the list, with
// every hash colliding as with none.
func TestNameTableCollisions(t *testing.T) {
	for _, c := range []struct {
		name string
		hash func(maphash.Seed, string) uint64
	}{
		{"maphash", maphash.String},
		{"every name one hash", func(maphash.Seed, string) uint64 { return 7 }},
		{"two hashes", func(_ maphash.Seed, s string) uint64 { return uint64(len(s) % 2) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := NewIndex(0, 0)
			x.names.hash = c.hash
			add := func(name string, id int64) bool {
				_, unique := x.Add(FoldName(name), Category{ID: id, Name: name})
				return unique
			}
			for i, name := range []string{"dog", "cat", "Rabbit", "ÉCLAIR"} {
				if !add(name, int64(i+1)) {
					t.Errorf("Add(%q): not unique", name)
				}
			}
			x.Publish()
			before := x.Snapshot()
			if add("DOG", 5) {
				t.Error(`Add("DOG") after "dog": unique`)
			}
			if !add("hamster", 6) {
				t.Error(`Add("hamster"): not unique`)
			}
			for key, want := range map[string]int64{"dog": 5, "cat": 2, "rabbit": 3, "éclair": 4, "hamster": 6} {
				if !x.Has(key) {
					t.Errorf("Has(%q): false", key)
				}
				if id, _, ok := x.Holder(key); !ok || id != want {
					t.Errorf("Holder(%q): got %d %v, want %d", key, id, ok, want)
				}
			}
			for _, key := range []string{"do", "dogs", "", "bird", "eclair"} {
				if x.Has(key) {
					t.Errorf("Has(%q): true", key)
				}
			}
			if id, name, ok := x.Holder("éclair"); !ok || id != 4 || name != "ÉCLAIR" {
				t.Errorf(`Holder("éclair"): got %d %q %v`, id, name, ok)
			}
			// The older snapshot sees what it holds, and nothing later:
			// "dog" is now the later category's, which it does not hold.
			if id, _, ok := before.Find("cat"); !ok || id != 2 {
				t.Errorf("Find(cat) before: got %d %v", id, ok)
			}
			if _, _, ok := before.Find("hamster"); ok {
				t.Error("Find(hamster) on a snapshot from before it: found")
			}
			x.Publish()
			for key, want := range map[string]int64{"dog": 5, "cat": 2, "hamster": 6, "rabbit": 3} {
				if id, json, ok := x.Snapshot().Find(key); !ok || id != want || !bytes.Contains(json, []byte(fmt.Sprintf(`"id":%d`, want))) {
					t.Errorf("Find(%q): got %d %s %v, want %d", key, id, json, ok, want)
				}
			}
			if _, _, ok := x.Snapshot().Find("bird"); ok {
				t.Error("Find(bird): found")
			}
			if collides, err := x.Append(Category{ID: 7, Name: "Cat"}); err != nil || !collides {
				t.Errorf(`Append("Cat") after "cat": collides %v, %v`, collides, err)
			}
			if collides, err := x.Append(Category{ID: 8, Name: "parrot"}); err != nil || collides {
				t.Errorf(`Append("parrot"): collides %v, %v`, collides, err)
			}
		})
	}
}

// However many names it holds, the name table holds nothing the garbage
// collector must follow, but for names whose hashes collide.
func TestNameTableHoldsNoPointers(t *testing.T) {
	x := NewIndex(0, 0)
	if got := reflect.TypeOf(x.names.slots).Elem().Kind(); got != reflect.Int64 {
		t.Errorf("slot values: %v", got)
	}
	if got := reflect.TypeOf(x.names.slots).Key().Kind(); got != reflect.Uint64 {
		t.Errorf("slot keys: %v", got)
	}
	for i := range 1000 {
		x.Add(FoldName(fmt.Sprint("name-", i)), Category{ID: int64(i + 1), Name: fmt.Sprint("name-", i)})
	}
	if x.names.more != nil {
		t.Errorf("1,000 names made %d collisions of 64-bit hashes", len(x.names.more))
	}
}

// nameFoldsTo, which compares a plain ASCII name where it lies, agrees
// with folding the decoded name, for every pair of these names and keys.
func TestNameFoldsTo(t *testing.T) {
	t.Parallel()
	names := []string{"dog", "Dog", "DOG", "do", "dogs", "Dogs & Cats", "<b>", `say "hi"`, `back\slash`, "ÉCLAIR", "éclair", "Straße", "ǅ", "a\u2028b", "Ｄｏｇ", "", "x y"}
	for _, name := range names {
		for _, withDescription := range []bool{false, true} {
			c := Category{ID: 12, Name: name, Description: `,"name":"dog"`, HasDescription: withDescription}
			json := c.AppendJSON(nil)
			for _, other := range names {
				key := FoldName(other)
				if got, want := nameFoldsTo(json, key), FoldName(name) == key; got != want {
					t.Errorf("nameFoldsTo(%s, %q): got %v, want %v", json, key, got, want)
				}
			}
		}
	}
}

func FuzzNameFoldsTo(f *testing.F) {
	for _, s := range []string{"dog", "Dogs & Cats", `say "hi"`, `back\slash`, "Catégorie", "ÉCLAIR", "a\u2028b", "Ｄｏｇ", "\xff", "K\u212a", "ſ", "tab\there", "\x00\x1f\x7f", "do\u00a0g", "🐈"} {
		f.Add(s, s, "")
		f.Add(s, strings.ToUpper(s), `,"name":"x"`)
	}
	f.Fuzz(func(t *testing.T, name, other, description string) {
		json := Category{ID: 3, Name: name, Description: description, HasDescription: description != ""}.AppendJSON(nil)
		for _, key := range []string{FoldName(name), FoldName(other), other} {
			if got, want := nameFoldsTo(json, key), FoldName(nameIn(json)) == key; got != want {
				t.Errorf("nameFoldsTo(%s, %q): got %v, want %v", json, key, got, want)
			}
		}
	})
}

// A look-up allocates nothing, whatever the name: escaped in the JSON (&,
// <, ", \) or not ASCII.
func TestLookUpAllocatesNothing(t *testing.T) {
	x := NewIndex(0, 0)
	names := []string{"dog", "Dogs & Cats", "Catégorie", `say "hi"`, `back\slash`, "<b>", "a\u2028b", "ＤＯＧ２"}
	for i, name := range names {
		x.Add(FoldName(name), Category{ID: int64(i + 1), Name: name})
	}
	x.Publish()
	s := x.Snapshot()
	for i, name := range names {
		key := FoldName(name)
		if id, _, ok := s.Find(key); !ok || id != int64(i+1) {
			t.Fatalf("Find(%q): %d %v", key, id, ok)
		}
		if n := testing.AllocsPerRun(100, func() { s.Find(key); x.Has(key) }); n != 0 {
			t.Errorf("Find and Has of %q: %v allocations", name, n)
		}
	}
}
