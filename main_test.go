package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runTo runs the program with args and an empty environment and returns
// what it wrote to stdout; it must succeed.
func runTo(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	getenv := func(string) string { return "" }
	if err := run(context.Background(), append([]string{"petstore"}, args...), getenv, &stdout, &stderr); err != nil {
		t.Fatalf("run %q: %v (stderr %q)", args, err, stderr.String())
	}
	return stdout.String()
}

// -version prints the build's version, the one petstore_build_info reports.
func TestRunVersion(t *testing.T) {
	t.Parallel()
	got := runTo(t, "-version")
	labels := regexp.MustCompile(`^version="(.*)",goversion="(.*)"$`).FindStringSubmatch(newServiceMetrics(nil, nil, nil).buildInfo)
	if labels == nil {
		t.Fatalf("build_info labels %q: not version and goversion", newServiceMetrics(nil, nil, nil).buildInfo)
	}
	if want := "petstore " + labels[1] + " "; !strings.HasPrefix(got, want) {
		t.Errorf("-version: got %q, want it to start %q", got, want)
	}
	if want := " " + labels[2] + "\n"; !strings.HasSuffix(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("-version: got %q, want one line ending %q", got, want)
	}
}

// -h lists every flag run accepts and every PETSTORE_* variable the
// program reads.
func TestRunHelp(t *testing.T) {
	t.Parallel()
	got := runTo(t, "-h")
	if got != usage {
		t.Fatalf("-h: got %q, want usage", got)
	}
	for _, flag := range []string{"-h", "-version", "-openapi", "-export", "-import FILE"} {
		if !strings.Contains(got, "  "+flag+" ") {
			t.Errorf("-h does not list the flag %s", flag)
		}
	}
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	read := regexp.MustCompile(`"(PETSTORE_[A-Z_]+)"`)
	for _, name := range sources {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range read.FindAllSubmatch(src, -1) {
			if !strings.Contains(got, "  "+string(m[1])+" ") {
				t.Errorf("-h does not list %s, which %s reads", m[1], name)
			}
		}
	}
}
