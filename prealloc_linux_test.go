package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The journal takes disk blocks reserveAhead past its end, and its length
// stays what was written: the file reads back, and replays, as before.
func TestJournalReservesAhead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	probe, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	err = preallocate(probe, 0, 4096)
	probe.Close()
	if errors.Is(err, errors.ErrUnsupported) { // EOPNOTSUPP, ENOSYS
		t.Skipf("the filesystem of %s cannot preallocate: %v", dir, err)
	} else if err != nil {
		t.Fatalf("preallocate: %v", err)
	}
	path := filepath.Join(dir, "cats.jsonl")
	s := openTestStore(t, path)
	newTestEnv(t, withStore(s)).mustCreate(t, "dog")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	want := journalHeader + "\n" + `{"id":1,"name":"dog"}` + "\n"
	if st.Size != int64(len(want)) || string(data) != want {
		t.Errorf("length %d, content %q: want %d bytes, %q", st.Size, data, len(want), want)
	}
	if onDisk := st.Blocks * 512; onDisk < reserveAhead {
		t.Errorf("%d bytes on disk for a file of %d: want at least %d reserved ahead", onDisk, st.Size, reserveAhead)
	}
	s.Close()
	again := openTestStore(t, path)
	newTestEnv(t, withStore(again)).mustCreate(t, "cat")
	if got := newTestEnv(t, withStore(again)).mustList(t); len(got) != 2 || got[0].Name != "dog" || got[1].Name != "cat" {
		t.Errorf("after a restart: %+v, want dog and cat", got)
	}
}
