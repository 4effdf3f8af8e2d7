package filewatch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/internal/testkit"
)

// testReloader reloads path into a string it returns, refusing content
// that starts with "bad"; it logs JSON lines to the buffer it returns.
func testReloader(path string, seen Version, settle time.Duration) (*Reloader, func() string, *testkit.LockedBuffer) {
	var mu sync.Mutex
	current := ""
	logs := &testkit.LockedBuffer{}
	r := &Reloader{
		Watch:    New([]string{path}, []Version{seen}, settle),
		Log:      slog.New(slog.NewJSONHandler(logs, nil)),
		Reloaded: "test reloaded",
		Kept:     "test kept",
		Load: func(data [][]byte) ([]any, error) {
			if bytes.HasPrefix(data[0], []byte("bad")) {
				return []any{"file", path}, errors.New("bad content")
			}
			mu.Lock()
			defer mu.Unlock()
			current = string(data[0])
			return []any{"bytes", len(data[0])}, nil
		},
		Loaded: func() { logs.Write([]byte(`{"msg":"after"}` + "\n")) },
	}
	return r, func() string { mu.Lock(); defer mu.Unlock(); return current }, logs
}

// withoutTimes returns log lines each without its time and level.
func withoutTimes(logs string) string {
	var b strings.Builder
	for line := range strings.Lines(logs) {
		if i := strings.Index(line, `"msg":`); i > 0 {
			line = "{" + line[i:]
		}
		b.WriteString(line)
	}
	return b.String()
}

// Reload loads the files at once and logs the outcome, with the reason
// first: Load's attributes on success, then Loaded runs; the file at
// fault and the error on failure, which keeps what is in force.
func TestReloaderReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "conf")
	os.WriteFile(path, []byte("one"), 0o600)
	r, current, logs := testReloader(path, Version{}, 0)
	r.Reload("SIGHUP")
	os.WriteFile(path, []byte("bad two"), 0o600)
	r.Reload("SIGHUP")
	os.Remove(path)
	r.Reload("SIGHUP")
	if got := current(); got != "one" {
		t.Errorf("in force: %q, want \"one\" kept", got)
	}
	got := withoutTimes(logs.String())
	want := `{"msg":"test reloaded","reason":"SIGHUP","bytes":3}` + "\n" + `{"msg":"after"}` + "\n" +
		`{"msg":"test kept","reason":"SIGHUP","file":"` + path + `","error":"bad content"}` + "\n" +
		`{"msg":"test kept","reason":"SIGHUP","file":"` + path + `","error":"stat ` + path + `: no such file or directory"}` + "\n"
	if got != want {
		t.Errorf("log:\n got %s\nwant %s", got, want)
	}
}

// Serve reloads on a signal and loads a change once it has stayed put,
// found by its polls; it returns when its context is done.
func TestServe(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "conf")
	os.WriteFile(path, []byte("one"), 0o600)
	seen, _ := VersionOf(path)
	r, current, _ := testReloader(path, seen, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() { defer close(done); Serve(ctx, hup, 10*time.Millisecond, r) }()
	defer func() { cancel(); <-done }()
	os.WriteFile(path, []byte("two"), 0o600)
	testkit.WaitFor(t, "a change, polled", func() bool { return current() == "two" })
	info, _ := os.Stat(path)
	os.WriteFile(path, []byte("six"), 0o600) // the same size and time: polls cannot see it
	os.Chtimes(path, info.ModTime(), info.ModTime())
	hup <- os.Interrupt
	testkit.WaitFor(t, "a change loaded by a signal", func() bool { return current() == "six" })
}
