package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var built struct {
	once sync.Once
	path string
	err  error
}

// binary builds this command: a test binary has no symbol table.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "answercost")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "answercost")
		if out, err := exec.Command("go", "build", "-o", built.path, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// A profile's costs land in the functions of the binary that hold their
// addresses, relative addresses and "*" lines included, and the line
// after calls= (the callee's inclusive cost) is not counted.
func TestLoadSumsOwnCostsByFunction(t *testing.T) {
	binary := binary(t)
	syms, err := symbols(binary)
	if err != nil {
		t.Fatal(err)
	}
	var a, b uint64
	for _, s := range syms {
		switch s.Name {
		case "main.groupOf":
			a = s.Value
		case "main.report":
			b = s.Value
		}
	}
	if a == 0 || b == 0 {
		t.Fatal("main.groupOf or main.report is not in the binary's symbols")
	}
	profile := fmt.Sprintf(`# callgrind format
version: 1
positions: instr line
events: Ir

fn=(1) one
%#x 10 100
+4 * 50
calls=3 %#x 20
+2 11 7000
fn=(2) two
%#x 30 40
-0 * 2
`, a, b, b)
	path := t.TempDir() + "/profile"
	if err := os.WriteFile(path, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := load("x", path, binary, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.byFunc["main.groupOf"]; got != 75 {
		t.Errorf("groupOf: got %v instructions per answer, want (100+50)/2", got)
	}
	if got := s.byFunc["main.report"]; got != 21 {
		t.Errorf("report: got %v instructions per answer, want (40+2)/2, the call's 7000 left out", got)
	}
	if s.total != 96 {
		t.Errorf("total: got %v, want 96", s.total)
	}

	var out bytes.Buffer
	report(&out, [2]server{s, {name: "y", byFunc: map[string]float64{}}}, 1)
	for _, want := range []string{"| **all** | **96** | **0** | **+96** |", "| `main.groupOf` | petstore's handlers and middleware | 75 | 0 | +75 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestLoadRefusesProfilesWithoutAddresses(t *testing.T) {
	path := t.TempDir() + "/profile"
	os.WriteFile(path, []byte("version: 1\npositions: line\nevents: Ir\nfn=(1) f\n10 5\n"), 0o600)
	binary := binary(t)
	if _, err := load("x", path, binary, 1); err == nil || !strings.Contains(err.Error(), "--dump-instr=yes") {
		t.Errorf("a profile of lines only: got %v, want an error naming --dump-instr=yes", err)
	}
	os.WriteFile(path, []byte("not a profile\n"), 0o600)
	if _, err := load("x", path, binary, 1); err == nil {
		t.Error("a file that is not a profile: got no error")
	}
}

func TestGroupOf(t *testing.T) {
	for fn, want := range map[string]string{
		"crypto/internal/fips140/sha256.blockAVX2.abi0": "API key check (SHA-256 of the key)",
		"petstore/internal/rawjson.appendQuoted":        "access log line",
		"petstore/internal/rawjson.Members":             "petstore's handlers and middleware",
		"net/http.Header.writeSubset":                   "response header (net/http)",
		"time.Time.appendFormat":                        "response header (net/http)",
		"net/textproto.readMIMEHeader":                  "request parsing (net/http, textproto, url)",
		"runtime.mallocgc":                              "allocation",
		"runtime.scanblock":                             "garbage collection",
		"runtime.nanotime1.abi0":                        "runtime: scheduler, timers, clocks, locks",
		"runtime.memmove":                               "copying (memmove)",
		"internal/poll.(*FD).Write":                     "network system calls' user side (net, poll, syscall)",
		"net/http.(*conn).serve":                        "the rest of net/http (connection, bufio)",
		"(outside the binary: the C library, the vDSO)": "other",
	} {
		if got := groupOf(fn); got != want {
			t.Errorf("groupOf(%q): got %q, want %q", fn, got, want)
		}
	}
}
