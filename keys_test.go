package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Key rotation through the real binary (decisions.md, "Operations"): a new
// key file is in force within the poll interval, SIGHUP reloads at once, a
// request already past the key check is not affected, keys from the
// environment stay, and a broken file keeps the keys in force.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	const (
		envKey = "rotation-env-Key-1"
		keyA   = "rotation-file-Key-A"
		keyB   = "rotation-file-Key-B"
		keyC   = "rotation-file-Key-C" // as long as keyB: rewriting B as C keeps the size
	)
	secrets := []string{envKey, keyA, keyB, keyC}
	file := filepath.Join(t.TempDir(), "keys")
	writeKeys := func(content string) {
		t.Helper()
		// As an operator would: a new file moved over the old one.
		tmp := file + ".new"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	writeKeys("# the first key\n" + keyA + "\n")
	p := startBinary(t, map[string]string{"PETSTORE_API_KEYS": envKey, "PETSTORE_API_KEYS_FILE": file})
	client := newClient(t)
	status := func(key string) int {
		resp, _ := send(t, client, "GET", p.url("/v1/categories"), key, "", nil)
		return resp.StatusCode
	}
	// waitStatus polls, bounded by the poll interval and a margin, until
	// key gets want.
	waitStatus := func(what, key string, want int) {
		t.Helper()
		deadline := time.Now().Add(keyFilePoll + 3*time.Second)
		for got := status(key); got != want; got = status(key) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %d after %v, want %d", what, got, keyFilePoll+3*time.Second, want)
			}
			time.Sleep(50 * time.Millisecond) // polling the service, bounded by deadline
		}
	}
	if status(keyA) != http.StatusOK || status(envKey) != http.StatusOK || status(keyB) != http.StatusUnauthorized {
		t.Fatalf("at start: want keyA and the environment's key accepted, keyB not")
	}

	// A create with keyA is past the key check (100 Continue) when keyA goes.
	inFlight := startSlowCreate(t, client, p.url("/v1/categories"), keyA)

	writeKeys(keyB + "\n")
	waitStatus("keyA after the file lost it", keyA, http.StatusUnauthorized)
	if status(keyB) != http.StatusOK || status(envKey) != http.StatusOK {
		t.Fatalf("after rotation: want keyB and the environment's key accepted")
	}
	if got := inFlight.finish(`{"name":"in flight"}`); got != http.StatusCreated {
		t.Errorf("the create in flight during the rotation: got %d, want 201", got)
	}

	// SIGHUP: the file rewritten in place with the same size and its old
	// modification time, which polling cannot see; the signal reloads it.
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(keyC+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(keyFilePoll + 500*time.Millisecond) // at least one poll passes and sees nothing
	if status(keyC) != http.StatusUnauthorized {
		t.Fatalf("a rewrite polling cannot see was loaded without SIGHUP; the test proves nothing")
	}
	p.signal(t, syscall.SIGHUP)
	waitStatus("keyC after SIGHUP", keyC, http.StatusOK)
	if status(keyB) != http.StatusUnauthorized {
		t.Errorf("keyB after SIGHUP: still accepted")
	}

	// A broken file keeps the keys in force and says where it is broken.
	writeKeys(keyC + "\nnot a key\n")
	if p.waitLog(keyFilePoll+3*time.Second, func(l logLine) bool {
		return l["msg"] == "API keys not reloaded; the keys in force stay" && l["file"] == file && containsAll(l["error"], file, "line 2")
	}) == nil {
		t.Fatalf("no error naming %s and line 2 on stderr", file)
	}
	if status(keyC) != http.StatusOK || status(envKey) != http.StatusOK {
		t.Errorf("after a broken file: want the keys in force kept")
	}
	p.stop(t)
	checkNoSecrets(t, p.stderr.lines(), secrets...)
}

func containsAll(v any, parts ...string) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
