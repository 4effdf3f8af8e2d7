package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/petstoretest"
	"petstore/internal/store"
)

// startToFailure runs the binary in dir with env (over a valid
// configuration), expects it to stop at start with a non-zero exit, and
// returns its stderr.
func startToFailure(t *testing.T, dir string, env map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, petstoretest.BinaryPath(t))
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PETSTORE_") })
	cmd.Env = append(cmd.Env, "PETSTORE_ADDR=127.0.0.1:0", "PETSTORE_API_KEYS="+petstoretest.Key)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if ctx.Err() != nil || !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("petstore did not stop at start with a non-zero exit (%v); stderr:\n%s", err, petstoretest.Redact(stderr.String()))
	}
	return stderr.String()
}

// A PETSTORE_DATA that is a typo of a URL or of :memory: stops the start,
// naming the variable, and creates nothing (run in an empty directory, it
// leaves it empty).
func TestDataPathTyposStopTheStart(t *testing.T) {
	t.Parallel()
	for _, data := range []string{
		"http://127.0.0.1:2379",
		"https://127.0.0.1:2379/petstore",
		"file:///var/lib/petstore.jsonl",
		"etcd:/127.0.0.1:2379",
		"etcds:127.0.0.1:2379",
		"etcd:127.0.0.1:2379/petstore",
		":memory",
		"::memory:",
		":memory:x",
		":memory:/petstore.jsonl",
	} {
		t.Run(data, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			stderr := startToFailure(t, dir, map[string]string{"PETSTORE_DATA": data})
			if !strings.Contains(stderr, "PETSTORE_DATA") {
				t.Errorf("stderr does not name PETSTORE_DATA:\n%s", petstoretest.Redact(stderr))
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("it created %s in the working directory", entries[0].Name())
			}
		})
	}
}

// A mistyped URL with a user and password in it stops the start without
// printing the password: the error quotes the value without its userinfo.
func TestDataPathTypoHidesPassword(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Pw"
	for i, data := range []string{
		"https://admin:" + secret + "@127.0.0.1:2379/petstore",
		"http://" + secret + "@127.0.0.1:2379",
		"etcd:admin:" + secret + "@127.0.0.1:2379",
		"etcds:/admin:" + secret + "@127.0.0.1:2379",
		":admin:" + secret + "@memory",
	} {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			stderr := startToFailure(t, t.TempDir(), map[string]string{"PETSTORE_DATA": data})
			if strings.Contains(stderr, secret) {
				t.Errorf("stderr shows the password of PETSTORE_DATA:\n%s", strings.ReplaceAll(stderr, secret, "<password>"))
			}
			if !strings.Contains(stderr, "127.0.0.1:2379") && !strings.Contains(stderr, "memory") {
				t.Errorf("stderr does not quote the rest of PETSTORE_DATA:\n%s", strings.ReplaceAll(stderr, secret, "<password>"))
			}
		})
	}
}

// A symbolic link planted where the journal, or its .torn file, would be
// stops the start, naming PETSTORE_DATA, and its target is neither created
// nor changed.
func TestDataPathSymlinkStopsTheStart(t *testing.T) {
	t.Parallel()
	const tornJournal = journalHeader + "\n" + `{"id":1,"name":"dog"}` + "\n" + `{"id":2,"na`
	for _, tc := range []struct {
		name    string
		link    string // relative to the data directory
		journal string // the journal's content, if one is written first
		target  string // the target's content; "" for no target
	}{
		{name: "journal to a missing target", link: "petstore.jsonl"},
		{name: "journal to a file", link: "petstore.jsonl", target: "precious\n"},
		{name: "journal to an empty file", link: "petstore.jsonl", target: "\n"},
		{name: "torn file to a missing target", link: "petstore.jsonl.torn", journal: tornJournal},
		{name: "torn file to a file", link: "petstore.jsonl.torn", journal: tornJournal, target: "precious\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			data := filepath.Join(dir, "petstore.jsonl")
			target := filepath.Join(t.TempDir(), "target")
			if tc.target != "" {
				if err := os.WriteFile(target, []byte(tc.target), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.journal != "" {
				if err := os.WriteFile(data, []byte(tc.journal), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, filepath.Join(dir, tc.link)); err != nil {
				t.Fatal(err)
			}
			stderr := startToFailure(t, dir, map[string]string{"PETSTORE_DATA": data})
			if !strings.Contains(stderr, "PETSTORE_DATA") || !strings.Contains(stderr, "symbolic link") {
				t.Errorf("stderr does not name PETSTORE_DATA and the link:\n%s", petstoretest.Redact(stderr))
			}
			got, err := os.ReadFile(target)
			switch {
			case tc.target == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("the link's target was created (%v): %q", err, got)
			case tc.target != "" && string(got) != tc.target:
				t.Errorf("the link's target: got %q (%v), want it unchanged, %q", got, err, tc.target)
			}
		})
	}
}

// PETSTORE_DATA=:memory: opens the memory store, which writes nothing: no
// file named :memory: either.
func TestMemoryStoreWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := openStore(store.MemoryPath, store.EtcdConfig{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustStoreCreate(t, s, "dog")
	s.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("temp dir not empty: %v", entries)
	}
	if _, err := os.Stat(store.MemoryPath); err == nil {
		t.Errorf("a file named %s was created", store.MemoryPath)
	}
}
