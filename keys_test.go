package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"petstore/internal/apikey"
	"petstore/internal/filewatch"
	"petstore/internal/petstoretest"
)

// Key rotation through the real binary (README, "Rotating keys without a
// restart"): a new key file is in force within 6 s, SIGHUP reloads at once,
// a request already past the key check is not affected, keys from the
// environment stay, and a broken file keeps the keys in force. The binary
// looks at the file every filePoll (PETSTORE_FILE_POLL), not every 2 s, so
// that a change is in force in a fraction of a second.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	const filePoll = 100 * time.Millisecond
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
	p := petstoretest.Start(t, map[string]string{"PETSTORE_API_KEYS": envKey, "PETSTORE_API_KEYS_FILE": file, "PETSTORE_FILE_POLL": filePoll.String()})
	client := petstoretest.NewClient(t)
	status := func(key string) int {
		resp, _ := petstoretest.Send(t, client, "GET", p.URL("/v1/categories"), key, "", nil)
		return resp.StatusCode
	}
	// inForce is how soon a finished change of the file must be in force:
	// it is loaded by the poll after the one that saw it.
	const inForce = 6 * time.Second
	// waitStatus polls, bounded by inForce, until key gets want.
	waitStatus := func(what, key string, want int) {
		t.Helper()
		deadline := time.Now().Add(inForce)
		for got := status(key); got != want; got = status(key) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %d after %v, want %d", what, got, inForce, want)
			}
			time.Sleep(50 * time.Millisecond) // polling the service, bounded by deadline
		}
	}
	if status(keyA) != http.StatusOK || status(envKey) != http.StatusOK || status(keyB) != http.StatusUnauthorized {
		t.Fatalf("at start: want keyA and the environment's key accepted, keyB not")
	}

	// A create with keyA is past the key check (100 Continue) when keyA goes.
	inFlight := startSlowCreate(t, client, p.URL("/v1/categories"), keyA)

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
	// That nothing happens can only be seen over a span of time: at least
	// two polls pass in it and see nothing.
	time.Sleep(4 * filePoll)
	if status(keyC) != http.StatusUnauthorized {
		t.Fatalf("a rewrite polling cannot see was loaded without SIGHUP; the test proves nothing")
	}
	p.Signal(t, syscall.SIGHUP)
	waitStatus("keyC after SIGHUP", keyC, http.StatusOK)
	if status(keyB) != http.StatusUnauthorized {
		t.Errorf("keyB after SIGHUP: still accepted")
	}

	// A broken file keeps the keys in force and says where it is broken.
	writeKeys(keyC + "\nnot a key\n")
	if p.WaitLog(inForce, func(l petstoretest.LogLine) bool {
		return l["msg"] == "API keys not reloaded; the keys in force stay" && l["file"] == file && containsAll(l["error"], file, "line 2")
	}) == nil {
		t.Fatalf("no error naming %s and line 2 on stderr", file)
	}
	if status(keyC) != http.StatusOK || status(envKey) != http.StatusOK {
		t.Errorf("after a broken file: want the keys in force kept")
	}
	p.Stop(t)
	petstoretest.CheckNoSecrets(t, p.Stderr.Lines(), secrets...)
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

// A key file rewritten in place, in two parts with a pause of one and a half
// poll intervals between them, is never loaded half-way: the first part, a
// valid key on its own (a prefix of the new key), is never accepted, and
// the finished file is in force soon after. Through the real mux, with the
// rotation polling every 100 ms and settling for as long (as it polls
// every 2 s and settles for 2 s in production) so that several rewrites
// fit in a few seconds, each timed so that two polls fall in its pause:
// loading a change at the first poll that sees it, or at the second, which
// finds it unchanged, would load the half key. A rewrite whose pause a busy
// machine stretched to a settle time and a poll does not count: the half
// file may then be loaded, as it should. Then a file with a key shorter
// than 16 characters is refused and the keys in force stay.
func TestKeyFileWrittenInPlace(t *testing.T) {
	t.Parallel()
	const poll = 200 * time.Millisecond
	file := filepath.Join(t.TempDir(), "keys")
	key := "in-place-key-0-Vb7Nq2Wm"
	if err := os.WriteFile(file, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile, keys, err := apikey.ReadFile("PETSTORE_API_KEYS_FILE", file)
	if err != nil {
		t.Fatal(err)
	}
	ring := apikey.NewRing(keys)
	logs := &lockedBuffer{}
	rotation := keyFile.Rotation(ring, nil, poll, slog.New(slog.NewJSONHandler(logs, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); filewatch.Serve(ctx, nil, poll, rotation) }()
	t.Cleanup(func() { cancel(); <-stopped })
	env := newTestEnv(t, func(d *deps, _ *[]route) { d.keys = ring })
	status := func(key string) int {
		return env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{"Authorization": "Bearer " + key}}).Code
	}
	waitAccepted := func(what, key string) {
		t.Helper()
		deadline := time.Now().Add(6 * time.Second)
		for status(key) != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not accepted within 6 s", what)
			}
			time.Sleep(5 * time.Millisecond) // polling the handler, bounded by deadline
		}
	}

	for round, held := 1, 0; held < 5; round++ {
		if round > 20 {
			t.Fatalf("%d of %d rewrites held their pause under a settle time and a poll: too busy a machine for the test", held, round-1)
		}
		next := fmt.Sprintf("in-place-key-%d-Hx4Tr8Lc", round)
		half := next[:apikey.MinLength]
		var halfAccepted atomic.Bool
		stop, watched := make(chan struct{}), make(chan struct{})
		go func() { // asks with the half key all along
			defer close(watched)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if status(half) == http.StatusOK {
					halfAccepted.Store(true)
				}
				time.Sleep(time.Millisecond) // pacing, not synchronisation
			}
		}()
		// The last load was a poll, at most a few ms ago: the write starts
		// three quarters of a poll after it, so that the next two polls
		// fall in the pause.
		time.Sleep(poll * 3 / 4)
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		f.WriteString(half)
		time.Sleep(poll * 3 / 2) // a slow writer's pause: the scenario, not a synchronisation
		f.WriteString(next[apikey.MinLength:] + "\n")
		// The clock of modification times may trail time.Now by a tick:
		// 20 ms of margin below the settle time and a poll.
		pauseHeld := time.Since(began) < 2*poll-20*time.Millisecond
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		waitAccepted(fmt.Sprintf("rewrite %d", round), next)
		close(stop)
		<-watched
		if pauseHeld {
			held++
			if halfAccepted.Load() {
				t.Fatalf("rewrite %d: the half-written file was loaded (its first part was accepted as a key)", round)
			}
		}
		if status(key) != http.StatusUnauthorized {
			t.Fatalf("rewrite %d: the key of the file before is still accepted", round)
		}
		key = next
	}

	const valid, short = "in-place-key-9-Zp3Kd6Ye", "short-Key-4Fx"
	tmp := file + ".new"
	if err := os.WriteFile(tmp, []byte(valid+"\n"+short+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(6 * time.Second)
	for !strings.Contains(logs.String(), "API keys not reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("a file with a short key on line 2: no error logged within 6 s")
		}
		time.Sleep(5 * time.Millisecond) // polling the log, bounded by deadline
	}
	if got := logs.String(); !strings.Contains(got, "line 2") || !strings.Contains(got, "16 characters") {
		t.Errorf("the error does not name line 2 and the length rule: %s", got)
	}
	if status(key) != http.StatusOK || status(valid) != http.StatusUnauthorized {
		t.Errorf("after a file with a short key: want the keys in force kept, the file's not loaded")
	}
	petstoretest.CheckNoSecrets(t, logs.Lines(), key, valid, short)
}

// Key and TLS files are read whole only up to 1 MiB: a larger one stops
// the start, naming the variable, and a reload refuses it, keeping what is
// in force.
func TestConfigFilesBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, bytes.Repeat([]byte("k"), filewatch.MaxBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"PETSTORE_API_KEYS_FILE", "PETSTORE_TLS_CERT_FILE", "PETSTORE_TLS_KEY_FILE"} {
		env := map[string]string{name: huge}
		if strings.HasPrefix(name, "PETSTORE_TLS") {
			ca := newTestCA(t)
			vars := tlsEnv(t, ca, t.TempDir(), 1)
			maps.Copy(vars, env)
			env = vars
		}
		_, err := loadConfig(mapEnv(env))
		if err == nil || !strings.HasPrefix(err.Error(), name+": ") || !strings.Contains(err.Error(), "more than 1048576 bytes") {
			t.Errorf("%s of %d bytes: %v, want the start refused, naming the variable and the bound", name, filewatch.MaxBytes+1, err)
		}
	}

	file := filepath.Join(dir, "keys")
	const key = "bounded-key-Qw8Ee2Rt"
	if err := os.WriteFile(file, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile, keys, err := apikey.ReadFile("PETSTORE_API_KEYS_FILE", file)
	if err != nil {
		t.Fatal(err)
	}
	ring := apikey.NewRing(keys)
	logs := &lockedBuffer{}
	rotation := keyFile.Rotation(ring, nil, 0, slog.New(slog.NewJSONHandler(logs, nil)))
	if err := os.Rename(huge, file); err != nil {
		t.Fatal(err)
	}
	rotation.Reload("SIGHUP")
	if _, granted := ring.Match(key); granted == 0 || !strings.Contains(logs.String(), "more than 1048576 bytes") {
		t.Errorf("a reload of a file over 1 MiB: key in force %v; log %s", granted != 0, logs)
	}
}

// PETSTORE_FILE_POLL sets how often the key file and the TLS pair are
// looked at: 2 s by default, 10 ms at the least.
func TestFilePollConfig(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"": 2 * time.Second, "100ms": 100 * time.Millisecond, " 10ms ": 10 * time.Millisecond, "1m": time.Minute} {
		cfg, err := loadConfig(mapEnv(map[string]string{"PETSTORE_FILE_POLL": v}))
		if err != nil || cfg.filePoll != want {
			t.Errorf("PETSTORE_FILE_POLL=%q: got %v, %v; want %v", v, cfg.filePoll, err, want)
		}
	}
	for _, v := range []string{"9ms", "0s", "-1s", "2", "soon"} {
		_, err := loadConfig(mapEnv(map[string]string{"PETSTORE_FILE_POLL": v}))
		if err == nil || !strings.HasPrefix(err.Error(), "PETSTORE_FILE_POLL: ") || !strings.Contains(err.Error(), "10ms or more") {
			t.Errorf("PETSTORE_FILE_POLL=%q: %v, want an error naming the variable and the least", v, err)
		}
	}
}
