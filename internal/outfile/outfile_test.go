package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var errHalfWay = errors.New("failed half-way")

// half writes some bytes, then fails.
func half(w io.Writer) error {
	io.WriteString(w, "a partial export\n")
	return errHalfWay
}

func whole(w io.Writer) error {
	_, err := io.WriteString(w, "the whole export\n")
	return err
}

func names(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := WriteFile(path, half); !errors.Is(err, errHalfWay) || !strings.Contains(err.Error(), "was not written") {
		t.Errorf("a failed write: %v", err)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("a failed write left %v", got)
	}
	if err := WriteFile(path, whole); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, half); err == nil {
		t.Error("a failed write over a file: no error")
	}
	if b, _ := os.ReadFile(path); string(b) != "the whole export\n" {
		t.Errorf("the file after a failed write over it: %q", b)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode: %v, %v; want 0600", info.Mode(), err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"out"}) {
		t.Errorf("the directory: %v", got)
	}
}

func TestStdout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func(name string, flag int) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), flag|os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	// As `> new`: the shell made it empty; a failure removes it.
	if err := Stdout(open("new", os.O_TRUNC), io.Discard, half); !errors.Is(err, errHalfWay) || !strings.Contains(err.Error(), "was removed") {
		t.Errorf("a failure to a new file: %v", err)
	}
	// As `>> old`: a failure leaves what it held.
	if err := os.WriteFile(filepath.Join(dir, "old"), []byte("kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Stdout(open("old", os.O_APPEND), io.Discard, half); !errors.Is(err, errHalfWay) || strings.Contains(err.Error(), "removed") {
		t.Errorf("a failure appended to a file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "old")); string(b) != "kept\n" {
		t.Errorf("the file appended to: %q", b)
	}
	// As `>> empty`, onto a file that was empty before: it stays.
	if err := Stdout(open("empty", os.O_APPEND), io.Discard, half); !errors.Is(err, errHalfWay) || strings.Contains(err.Error(), "removed") {
		t.Errorf("a failure appended to an empty file: %v", err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"empty", "old"}) { // before "done" and "both"
		t.Errorf("the directory: %v", got)
	}
	// A success, and a writer that is not a file.
	if err := Stdout(open("done", os.O_TRUNC), io.Discard, whole); err != nil {
		t.Errorf("a success: %v", err)
	}
	var b strings.Builder
	if err := Stdout(&b, io.Discard, half); !errors.Is(err, errHalfWay) || b.String() != "a partial export\n" {
		t.Errorf("to a builder: %v, %q", err, b.String())
	}
	// As `> both 2>&1`: the file holds the messages; it stays.
	both := open("both", os.O_TRUNC)
	if err := Stdout(both, both, half); !errors.Is(err, errHalfWay) || strings.Contains(err.Error(), "removed") {
		t.Errorf("a failure to stdout and stderr's file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "both")); string(b) != "a partial export\n" {
		t.Errorf("stdout and stderr's file after a failure: %q", b)
	}
}

// A symbolic link at the path is followed, dangling or not: the file it
// names gets the export, and the link stays a link. A loop of links is
// refused before anything is written.
func TestWriteFileFollowsSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "volume")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(sub, "backup.jsonl")
	os.WriteFile(target, []byte("old\n"), 0o600)
	link := filepath.Join(dir, "backup")
	if err := os.Symlink("volume/backup.jsonl", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, whole); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link after the export: %v, %v; want it still a symbolic link", info.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "the whole export\n" {
		t.Errorf("the file the link names: %q", b)
	}
	if got := names(t, sub); !slices.Equal(got, []string{"backup.jsonl"}) {
		t.Errorf("the link's directory: %v", got)
	}

	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(sub, "new.jsonl"), dangling) // absolute, to a file not made yet
	if err := WriteFile(dangling, whole); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(sub, "new.jsonl")); string(b) != "the whole export\n" {
		t.Errorf("the file a dangling link names: %q", b)
	}

	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	if err := WriteFile(loop, whole); err == nil || !strings.Contains(err.Error(), "too many levels") || !strings.Contains(err.Error(), "was not written") {
		t.Errorf("a loop of links: %v", err)
	}
}

// The directory is synced after the rename; when that fails the file is
// there, and the error says it may not outlive a crash.
func TestWriteFileSyncsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	old := syncDir
	defer func() { syncDir = old }()
	var synced []string
	syncDir = func(d string) error { synced = append(synced, d); return nil }
	if err := WriteFile(path, whole); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(synced, []string{dir}) {
		t.Errorf("directories synced: %v, want [%s]", synced, dir)
	}
	syncDir = func(string) error { return errors.New("EIO") }
	err := WriteFile(path, whole)
	if err == nil || !strings.Contains(err.Error(), "could not be synced") || !strings.Contains(err.Error(), "EIO") {
		t.Errorf("a directory that cannot be synced: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "the whole export\n" {
		t.Errorf("the file after a failed directory sync: %q", b)
	}
	synced = nil
	syncDir = func(d string) error { synced = append(synced, d); return nil }
	WriteFile(path, half)
	if len(synced) != 0 {
		t.Errorf("a failed write synced %v", synced)
	}
}
