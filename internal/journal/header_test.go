package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A header of version 1 to 4 spaced or ordered differently is read (an
// older one is rewritten to 4, in place, spacing kept); a CRLF file, a
// newer version and a header with other members each get a message that
// says what is wrong, never "version 1 is not supported".
func TestJournalHeaderVariants(t *testing.T) {
	t.Parallel()
	const dog = `{"id":1,"name":"dog"}`
	for _, tc := range []struct {
		name, content string
		want          string // "" when the file must open
		header        string // the header after a start, when it must open
	}{
		{"spaced", `{ "format": "petstore-categories", "version": 1 }` + "\n" + dog + "\n", "", `{ "format": "petstore-categories", "version": 4 }`},
		{"reordered", `{"version":1,"format":"petstore-categories"}` + "\n" + dog + "\n", "", `{"version":4,"format":"petstore-categories"}`},
		{"trailing blanks", currentHeader + " \t\n" + dog + "\n", "", currentHeader + " \t"},
		{"version written 1.0", `{"format":"petstore-categories","version":1.0}` + "\n" + dog + "\n", "", `{"format":"petstore-categories","version":4  }`},
		{"version 1", `{"format":"petstore-categories","version":1}` + "\n" + dog + "\n", "", currentHeader},
		{"version 2 spaced", `{"format":"petstore-categories", "version":2}` + "\n" + dog + "\n", "", `{"format":"petstore-categories", "version":4}`},
		{"version 3 spaced", `{"format":"petstore-categories", "version":3}` + "\n" + dog + "\n", "", `{"format":"petstore-categories", "version":4}`},
		{"CRLF", currentHeader + "\r\n" + dog + "\r\n", "the header line ends with a carriage return: the file was converted to CRLF line endings", ""},
		{"CRLF header only", currentHeader + "\r\n", "converted to CRLF", ""},
		{"newer version", `{"format":"petstore-categories","version":5}` + "\n", "version 5 is not supported by this petstore, which reads versions 1 to 4", ""},
		{"newer version spaced", `{"format": "petstore-categories", "version": 4.5}` + "\n", "version 4.5 is not supported by this petstore, which reads versions 1 to 4", ""},
		{"version between", `{"format":"petstore-categories","version":2.5}` + "\n", "version 2.5 is not supported by this petstore, which reads versions 1 to 4", ""},
		{"version 0", `{"format":"petstore-categories","version":0}` + "\n", "version 0 is not supported by this petstore, which reads versions 1 to 4", ""},
		{"extra member", `{"format":"petstore-categories","version":1,"x":true}` + "\n", "not written as petstore writes it", ""},
		{"version as a string", `{"format":"petstore-categories","version":"1"}` + "\n", "not written as petstore writes it", ""},
		{"no version", `{"format":"petstore-categories"}` + "\n", "not written as petstore writes it", ""},
		{"version twice", `{"format":"petstore-categories","version":1,"version":1}` + "\n", "not written as petstore writes it", ""},
		{"another format", `{"format":"other","version":1}` + "\n", "not a petstore journal", ""},
		{"format not a string", `{"format":1,"version":1}` + "\n", "not a petstore journal", ""},
		{"not an object", `[1]` + "\n", "not a petstore journal", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "cats.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			var l lines
			f, err := Open(path, l.apply, Options{})
			if tc.want != "" {
				if err == nil {
					f.Close()
					t.Fatalf("open succeeded, want an error containing %q", tc.want)
				}
				if !strings.Contains(err.Error(), path+":1:") || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %q: want it to name %s:1 and say %q", err, path, tc.want)
				}
				if strings.Contains(err.Error(), "version 1 is not supported") || strings.Contains(err.Error(), "damaged") {
					t.Errorf("error %q blames the version or damage", err)
				}
				if data, _ := os.ReadFile(path); string(data) != tc.content {
					t.Errorf("a refused journal was modified: got %q", data)
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			t.Cleanup(func() { f.Close() })
			if len(l.got) != 1 || l.got[0] != dog {
				t.Errorf("replayed %q, want dog", l.got)
			}
			mustAppend(t, f, `{"id":2,"name":"cat"}`)
			f.Close()
			_, records, _ := strings.Cut(tc.content, "\n")
			want := tc.header + "\n" + records + `{"id":2,"name":"cat"}` + "\n"
			if data, _ := os.ReadFile(path); string(data) != want {
				t.Errorf("journal: got %q, want the header at version 4 and the new record after the old ones: %q", data, want)
			}
		})
	}
}

// A header is rewritten through the file the lock is held on, never by its
// name again: a link put in the name's place meanwhile is left alone, and
// so is the file it leads to.
func TestUpgradeHeaderWritesTheLockedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "petstore.jsonl")
	f, _ := openTest(t, path, Options{})
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte(Header(1)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, path); err != nil {
		t.Fatal(err)
	}
	h, err := checkHeader([]byte(Header(Version)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.upgradeHeader(h); err != nil {
		t.Fatalf("upgradeHeader: %v", err)
	}
	if got := readFile(t, other); got != Header(1)+"\n" {
		t.Errorf("the link's target was written: %q", got)
	}
}
