package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	dog = `{"id":1,"name":"dog"}`
	cat = `{"id":2,"name":"cat"}`
)

func TestJournalTornTailIsDroppedAndTruncated(t *testing.T) {
	for _, tc := range []struct {
		name, tail string
		torn       string // what .torn gets, when not tail
	}{
		{"no newline", `{"id":3,"name":"hams`, ""},
		{"zeros", "{\"id\":3,\x00\x00\x00\x00\n", ""},
		{"only a newline missing", `{"id":3,"name":"hamster"}`, ""},
		// The last append written over zeros, of which a crash kept a
		// later page and not an earlier one: lines after the hole go too.
		{"zeros, then lines", "{\"id\":3,\"na\x00\x00\x00\x00\n{\"id\":4,\"name\":\"ferret\"}\n", ""},
		{"zeros, then lines, then the space ahead", "{\"id\":3,\x00\x00\n{\"id\":4,\"name\":\"ferret\"}\n\x00\x00\x00", "{\"id\":3,\x00\x00\n{\"id\":4,\"name\":\"ferret\"}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cats.jsonl")
			f, _ := openTest(t, path, Options{})
			mustAppend(t, f, dog)
			mustAppend(t, f, cat)
			f.Close()
			good := readFile(t, path)
			appendFile(t, path, tc.tail)

			logs := &bytes.Buffer{}
			f2, l := openTest(t, path, withLog(logs))
			if want := []string{dog, cat}; !slices.Equal(l.got, want) {
				t.Errorf("replayed %q, want %q", l.got, want)
			}
			if data := readFile(t, path); data != good {
				t.Errorf("journal not truncated to its good prefix:\ngot  %q\nwant %q", data, good)
			}
			want := tc.torn
			if want == "" {
				want = tc.tail
			}
			if torn, _ := os.ReadFile(path + ".torn"); string(torn) != want {
				t.Errorf(".torn file: got %q, want the dropped tail %q", torn, want)
			}
			if !strings.Contains(logs.String(), `"level":"WARN"`) || !strings.Contains(logs.String(), `"line":4`) {
				t.Errorf("want a warning naming line 4, logs: %s", logs)
			}
			const hamster = `{"id":3,"name":"hamster"}`
			mustAppend(t, f2, hamster)
			f2.Close()
			if data := readFile(t, path); data != good+hamster+"\n" {
				t.Errorf("after an append: got %q, want the good prefix, then hamster", data)
			}
		})
	}
}

// A journal opened to read only leaves a torn end where it is, and says so.
func TestJournalReadOnlyLeavesTheTornEnd(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	content := Header(1) + "\n" + dog + "\n" + `{"id":2,"na`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	opts := withLog(logs)
	opts.ReadOnly = true
	f, l := openTest(t, path, opts)
	if want := []string{dog}; !slices.Equal(l.got, want) {
		t.Errorf("replayed %q, want %q", l.got, want)
	}
	f.Close()
	if data := readFile(t, path); data != content {
		t.Errorf("the journal changed: %q", data)
	}
	if _, err := os.Stat(path + ".torn"); err == nil {
		t.Errorf("a .torn file was written")
	}
	if !strings.Contains(logs.String(), "torn end") || !strings.Contains(logs.String(), `"line":3`) {
		t.Errorf("want a warning naming line 3, logs: %s", logs)
	}
}

// Zeros in a line with more than an append's lines after it are not a
// torn last write: they are damage, and the file is left as it is.
func TestJournalZerosBeforeTheLastBatchAreDamage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	var b strings.Builder
	b.WriteString(currentHeader + "\n" + dog + "\n" + "{\"id\":2,\x00\x00\n")
	for id := 3; id < 3+MaxAppendLines; id++ {
		fmt.Fprintf(&b, `{"id":%d,"name":"c%d"}`+"\n", id, id)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := openErr(t, path); !strings.Contains(err.Error(), path+":3: ") || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("open: %v, want line 3 named as damaged", err)
	}
	if data := readFile(t, path); data != b.String() {
		t.Error("a journal refused was changed")
	}
	if _, err := os.Stat(path + ".torn"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".torn: %v, want none", err)
	}
}

// A header cut short by a crash, of any version this petstore reads, is
// set aside and written anew; a first line without its newline that is
// not such a header is refused, and the file left as it is.
func TestJournalTornHeaderIsRewritten(t *testing.T) {
	for _, content := range []string{
		currentHeader[:10],
		Header(1)[:len(Header(1))-1], // cut before its closing brace
		Header(2)[:len(Header(2))-1],
		Header(2), // whole, but without its newline
		currentHeader,
	} {
		path := filepath.Join(t.TempDir(), "cats.jsonl")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		f, _ := openTest(t, path, Options{})
		mustAppend(t, f, dog)
		f.Close()
		if want := currentHeader + "\n" + dog + "\n"; readFile(t, path) != want {
			t.Errorf("journal from %q: got %q, want %q", content, readFile(t, path), want)
		}
		if torn, _ := os.ReadFile(path + ".torn"); string(torn) != content {
			t.Errorf(".torn from %q: got %q, want the cut header", content, torn)
		}
	}

	path := filepath.Join(t.TempDir(), "cats.jsonl")
	const spaced = `{ "format": "petstore-categories", "version": 1 }`
	if err := os.WriteFile(path, []byte(spaced), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := openErr(t, path); !strings.Contains(err.Error(), path+":1: the header line does not end with a newline") {
		t.Errorf("a spaced header without its newline: got %v, want it refused", err)
	}
	if data := readFile(t, path); data != spaced {
		t.Errorf("a refused journal was modified: got %q", data)
	}
}

// currentHeader is the header of the version this package writes.
func TestJournalHeaderIsItsVersion(t *testing.T) {
	if currentHeader != Header(Version) {
		t.Errorf("currentHeader %s is not the header of version %d, %s", currentHeader, Version, Header(Version))
	}
	if h, err := checkHeader([]byte(currentHeader)); err != nil || h.version != Version {
		t.Errorf("checkHeader(currentHeader): %+v, %v", h, err)
	}
}

func TestJournalDamageIsRefusedWithLineNumber(t *testing.T) {
	const head = currentHeader + "\n"
	for _, tc := range []struct {
		name, content, want string
	}{
		{"garbage in the middle", head + dog + "\n" + "garbage\n" + `{"id":3,"name":"cat"}` + "\n", ":3:"},
		{"complete bad last line", head + dog + "\n" + `{"id":2}` + "\n", ":3:"},
		{"refused by apply", head + `{"id":2,"name":"dog"}` + "\n" + `{"id":2,"name":"cat"}` + "\n" + `{"id":3,"name":"x"}` + "\n", ":3: record lacks"},
		{"unknown member", head + `{"id":1,"name":"dog","colour":"red"}` + "\n" + `{"id":2,"name":"x"}` + "\n", ":2:"},
		{"not a journal", "hello\nworld\n", ":1:"},
		{"one line that is not a journal", "hello world\n", ":1:"},
		{"one line without newline that is not a journal", "hello world", ":1:"},
		{"newer format", `{"format":"petstore-categories","version":5}` + "\n", "version 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cats.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := openErr(t, path); !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want it to name %s and %q", err, path, tc.want)
			}
			if data := readFile(t, path); data != tc.content {
				t.Errorf("a damaged journal was modified: got %q", data)
			}
			if _, err := os.Stat(path + ".torn"); err == nil {
				t.Errorf("a .torn file was written for damage that is not a torn tail")
			}
		})
	}
}

func TestJournalLockRefusesSecondOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	f, _ := openTest(t, path, Options{})
	if err := openErr(t, path); !strings.Contains(err.Error(), "in use by another petstore") {
		t.Fatalf("second open: got %v, want an in-use error", err)
	}
	f.Close()
	f2, _ := openTest(t, path, Options{}) // the lock goes with Close
	mustAppend(t, f2, dog)
}

// A lock released while a second open waits for it is taken: a journal
// just closed, whose open file a child process still shares between fork
// and exec, opens.
func TestJournalLockWaitsForARelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	f, _ := openTest(t, path, Options{})
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(lockWait / 10) // releases the lock while the open below waits
		f.Close()
	}()
	f2, _ := openTest(t, path, Options{})
	<-released
	mustAppend(t, f2, dog)
}

// A journal at a symbolic link is refused, and what the link names is
// neither created nor changed.
func TestJournalRefusesSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	path := filepath.Join(dir, "cats.jsonl")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := openErr(t, path); !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("open: %v, want the link refused", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target: %v, want none", err)
	}
}

// An append that fails leaves the file as it was; once the failure cannot
// be undone, every later append fails with ErrBroken.
func TestJournalFailedAppendBreaksTheJournal(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	f, _ := openTest(t, path, Options{})
	mustAppend(t, f, dog)
	before := readFile(t, path)

	f.f.Close() // every write and truncate now fails
	err := f.Append([]byte(cat + "\n"))
	if !errors.Is(err, ErrBroken) || !errors.Is(err, ErrNotUndone) || !strings.Contains(err.Error(), "file already closed") || !strings.Contains(err.Error(), "appending to "+path) {
		t.Errorf("append: %v, want ErrBroken and ErrNotUndone naming the file and the cause", err)
	}
	if err := f.Append([]byte(cat + "\n")); err != ErrBroken {
		t.Errorf("append to a broken journal: %v, want ErrBroken", err)
	}
	if got := readFile(t, path); got != before {
		t.Errorf("after the failed append: %q, want %q", got, before)
	}
	_, l := openTest(t, path, Options{})
	if want := []string{dog}; !slices.Equal(l.got, want) {
		t.Errorf("after reopen: %q, want %q", l.got, want)
	}
}

// A failed sync breaks the journal: the kernel may have dropped the pages
// it could not write. When the cut back to the last good line succeeds, the
// lines are not stored (a definite failure); when it fails too, they may
// be, and a restart replays them (ErrNotUndone: the outcome is unknown).
func TestJournalFailedSync(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		undoFails bool
		reopened  []string
	}{
		{"undone", false, []string{dog}},
		{"not undone", true, []string{dog, cat}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "cats.jsonl")
			f, _ := openTest(t, path, Options{})
			mustAppend(t, f, dog)
			f.syncLines = func(file *os.File) error {
				if tc.undoFails {
					file.Close() // the cut and its sync fail now
				}
				return &os.PathError{Op: "fdatasync", Path: path, Err: syscall.EIO}
			}
			err := f.Append([]byte(cat + "\n"))
			if !errors.Is(err, ErrBroken) || !errors.Is(err, syscall.EIO) {
				t.Errorf("append: %v, want ErrBroken and the cause", err)
			}
			if got := errors.Is(err, ErrNotUndone); got != tc.undoFails {
				t.Errorf("append: %v: matches ErrNotUndone: %v, want %v", err, got, tc.undoFails)
			}
			if err := f.Append([]byte(`{"id":3,"name":"rabbit"}` + "\n")); err != ErrBroken {
				t.Errorf("append after a failed sync: %v, want ErrBroken", err)
			}
			if !tc.undoFails {
				// Cut back to its last line: the zeros ahead go too.
				if got, want := readFile(t, path), currentHeader+"\n"+dog+"\n"; got != want {
					t.Errorf("after the undone append: %.200q, want %q", got, want)
				}
				f.Close()
			}
			_, l := openTest(t, path, Options{})
			if !slices.Equal(l.got, tc.reopened) {
				t.Errorf("after reopen: %q, want %q", l.got, tc.reopened)
			}
		})
	}
}

// The journal writes zeros reserveAhead past its last line, and writes
// lines over them; replay skips them, and a clean close cuts them off.
func TestJournalReservesAhead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	f, _ := openTest(t, path, Options{})
	mustAppend(t, f, dog)
	lines := currentHeader + "\n" + dog + "\n"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < reserveAhead || string(data[:len(lines)]) != lines || len(bytes.Trim(data[len(lines):], "\x00")) != 0 {
		t.Errorf("open journal: %d bytes, %q first: want %q, then zeros, %d bytes at least", len(data), data[:min(len(data), len(lines)+8)], lines, reserveAhead)
	}
	if f.syncs != 2 {
		t.Errorf("%d syncs of lines, want 2 (header, dog)", f.syncs)
	}

	// A crash leaves the zeros: the next start writes over them.
	if err := os.WriteFile(path+".copy", data, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	again, l := openTest(t, path+".copy", withLog(logs))
	if logs.Len() != 0 {
		t.Errorf("replaying a file that ends in zeros logged: %s", logs)
	}
	if want := []string{dog}; !slices.Equal(l.got, want) {
		t.Errorf("replayed %q, want %q", l.got, want)
	}
	mustAppend(t, again, cat)
	if again.end != int64(len(data)) {
		t.Errorf("after the restart the file is %d bytes, want the %d it had: cat is written over its zeros", again.end, len(data))
	}
	again.Close()
	if got := readFile(t, path+".copy"); got != lines+cat+"\n" {
		t.Errorf("closed cleanly: %q, want %q", got, lines+cat+"\n")
	}

	f.Close()
	if got := readFile(t, path); got != lines {
		t.Errorf("closed cleanly: %q, want %q", got, lines)
	}
}

// Reserving is only a speed-up: where the zeros cannot be written (a full
// disk), lines are appended all the same, with fsync, and it is tried
// again only reserveAhead bytes later, not on every write.
func TestJournalWithoutReservedSpace(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	// A file that exists: opening it writes nothing, so the first append
	// is the first write.
	if err := os.WriteFile(path, []byte(currentHeader+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, _ := openTest(t, path, Options{})
	var tries []int64
	f.zeroFill = func(f *os.File, from, to int64) error {
		tries = append(tries, to-from)
		// Half written, as a full disk leaves it: reserve cuts it off.
		if _, err := f.WriteAt(make([]byte, (to-from)/2), from); err != nil {
			t.Error(err)
		}
		return syscall.ENOSPC
	}
	rabbit := `{"id":3,"name":"rabbit"}`
	for _, line := range []string{dog, cat, rabbit} {
		mustAppend(t, f, line)
	}
	want := currentHeader + "\n" + dog + "\n" + cat + "\n" + rabbit + "\n"
	if data := readFile(t, path); data != want {
		t.Errorf("file: %q, want %q", data, want)
	}
	if len(tries) != 1 || tries[0] < reserveAhead {
		t.Errorf("reserving tried %v, want once, for at least %d bytes", tries, reserveAhead)
	}
}

// Size is told the lines and bytes of the file before the first line.
func TestJournalSizeComesFirst(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	content := currentHeader + "\n" + dog + "\n" + cat + "\n\x00\x00"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	var events []string
	apply := func(line []byte) error { events = append(events, string(line)); return nil }
	f, err := Open(path, apply, Options{Size: func(lines, bytes int) { events = append(events, fmt.Sprint(lines, bytes)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if want := []string{fmt.Sprint(3, len(content)-2), dog, cat}; !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if f.Path() != path {
		t.Errorf("Path: %q, want %q", f.Path(), path)
	}
}
