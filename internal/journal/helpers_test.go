package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
)

// lines is what a test's replay saw, and the rule it applies: each line
// a JSON object of exactly an id, greater than the one before, and a
// name, as a journal of categories holds.
type lines struct {
	got    []string
	lastID int64
}

func (l *lines) apply(line []byte) error {
	var rec struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return fmt.Errorf("not a record: %v", err)
	}
	if rec.ID <= l.lastID || rec.Name == "" {
		return errors.New("record lacks an id that follows the last, or a name")
	}
	l.lastID = rec.ID
	l.got = append(l.got, string(line))
	return nil
}

// openTest opens the journal at path and closes it at the end of the
// test; it returns the lines replayed.
func openTest(t testing.TB, path string, opts Options) (*File, *lines) {
	t.Helper()
	var l lines
	f, err := Open(path, l.apply, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { f.Close() })
	return f, &l
}

// openErr opens the journal at path and returns the error, which must
// not be nil.
func openErr(t testing.TB, path string) error {
	t.Helper()
	var l lines
	f, err := Open(path, l.apply, Options{})
	if err == nil {
		f.Close()
		t.Fatalf("Open(%s) succeeded, want an error", path)
	}
	return err
}

// withLog is Options that log, as JSON, to w.
func withLog(w io.Writer) Options {
	return Options{Log: slog.New(slog.NewJSONHandler(w, nil))}
}

func mustAppend(t testing.TB, f *File, lines ...string) {
	t.Helper()
	var b []byte
	for _, l := range lines {
		b = append(b, l+"\n"...)
	}
	if err := f.Append(b); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func appendFile(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
