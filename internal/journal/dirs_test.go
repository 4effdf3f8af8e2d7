package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// Every directory petstore creates for its journal is fsynced into its
// parent, and the journal into its directory; nothing is synced for what
// already existed.
func TestJournalCreatedDirectoriesAreSynced(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a := filepath.Join(root, "a")
	b := filepath.Join(a, "b")
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"two new directories", filepath.Join(b, "cats.jsonl"), []string{root, a, b}},
		{"existing directories, new file", filepath.Join(b, "other.jsonl"), []string{b}},
		{"existing file", filepath.Join(b, "cats.jsonl"), nil},
	} {
		// In order: each case builds on what the one before created.
		var mu sync.Mutex
		var synced []string
		record := func(dir string) error {
			mu.Lock()
			synced = append(synced, dir)
			mu.Unlock()
			return syncDir(dir)
		}
		var l lines
		f, err := open(tc.path, l.apply, Options{}, record)
		if err != nil {
			t.Fatalf("%s: open: %v", tc.name, err)
		}
		mustAppend(t, f, fmt.Sprintf(`{"id":%d,"name":%q}`, l.lastID+1, tc.name))
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := slices.Clone(synced)
		mu.Unlock()
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: directories synced: got %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, d := range []string{a, b} {
		if info, err := os.Stat(d); err != nil || info.Mode().Perm() != 0o700 {
			t.Errorf("%s: got %v, %v; want a directory with permissions 700", d, info, err)
		}
	}
	_, l := openTest(t, filepath.Join(b, "cats.jsonl"), Options{})
	if got, want := l.got, []string{`{"id":1,"name":"two new directories"}`, `{"id":2,"name":"existing file"}`}; !slices.Equal(got, want) {
		t.Errorf("after reopen: got %q, want %q", got, want)
	}
}
