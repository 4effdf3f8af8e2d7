package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikey"
	"petstore/internal/petstoretest"
	"petstore/internal/store"
)

// These tests start the real program through run, on 127.0.0.1:0, and talk to
// it over TCP, or give it a command line that ends at once (-version, -h).
// Configuration goes through a getenv backed by a map, never the process
// environment, so nothing leaks between tests. The harness is in
// harness_test.go.

func TestRunEndToEnd(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "petstore.jsonl")
	const wrongKey = "e2e-Wrong-Key-Qm3Vb8"
	svc := startRun(t, baseEnv(data))
	client := petstoretest.NewClient(t)

	// Create.
	resp, created := petstoretest.Send(t, client, "POST", svc.url("/v1/categories"), e2eKey,
		`{"name":"  Dogs  ","description":"Good boys"}`, map[string]string{"X-Request-Id": "e2e-create-dogs"})
	petstoretest.WantStatus(t, "create", resp, created, http.StatusCreated)
	if got, want := resp.Header.Get("Location"), "/v1/categories/1"; got != want {
		t.Errorf("create: Location: got %q, want %q", got, want)
	}
	if got, want := resp.Header.Get("X-Request-Id"), "e2e-create-dogs"; got != want {
		t.Errorf("create: X-Request-Id: got %q, want %q", got, want)
	}
	if want := `{"id":1,"name":"Dogs","description":"Good boys"}`; string(created) != want {
		t.Errorf("create: body: got %s, want %s", created, want)
	}

	// List.
	resp, list := petstoretest.Send(t, client, "GET", svc.url("/v1/categories"), e2eKey, "", nil)
	petstoretest.WantStatus(t, "list", resp, list, http.StatusOK)
	if want := "[" + string(created) + "]"; string(list) != want {
		t.Errorf("list: got %s, want %s", list, want)
	}

	// Get one.
	resp, one := petstoretest.Send(t, client, "GET", svc.url("/v1/categories/1"), e2eKey, "", nil)
	petstoretest.WantStatus(t, "get", resp, one, http.StatusOK)
	if !bytes.Equal(one, created) {
		t.Errorf("get: got %s, want %s", one, created)
	}

	// A key that is not accepted.
	resp, denied := petstoretest.Send(t, client, "GET", svc.url("/v1/categories"), wrongKey, "", nil)
	petstoretest.WantStatus(t, "wrong key", resp, denied, http.StatusUnauthorized)
	if got, want := resp.Header.Get("WWW-Authenticate"), `Bearer realm="petstore", error="invalid_token"`; got != want {
		t.Errorf("wrong key: WWW-Authenticate: got %q, want %q", got, want)
	}
	var eb petstoretest.ErrorBody
	if err := json.Unmarshal(denied, &eb); err != nil || eb.Code != codeUnauthorized || eb.Status != http.StatusUnauthorized {
		t.Errorf("wrong key: body: got %s, want an Error with code unauthorized, status 401", petstoretest.Redact(string(denied)))
	}
	if bytes.Contains(denied, []byte(wrongKey)) || bytes.Contains(denied, []byte(e2eKey)) {
		t.Errorf("wrong key: the answer quotes a key")
	}

	if err := svc.stop(); err != nil {
		t.Fatalf("run after cancel: got %v, want nil", err)
	}

	lines := svc.stderr.Lines()
	logs := petstoretest.ParseLogLines(t, lines)
	petstoretest.CheckNoSecrets(t, lines, e2eKey, wrongKey)
	req := petstoretest.FindLog(logs, "request", map[string]any{"request_id": "e2e-create-dogs"})
	if req == nil {
		t.Fatalf("no request log line with request_id e2e-create-dogs among %d lines", len(lines))
	}
	for k, want := range map[string]any{"method": "POST", "route": "POST /v1/categories", "path": "/v1/categories", "status": float64(201)} {
		if req[k] != want {
			t.Errorf("request log line: %s: got %v, want %v", k, req[k], want)
		}
	}
	if d, ok := req["duration_ms"].(float64); !ok || d < 0 {
		t.Errorf("request log line: duration_ms: got %v, want a non-negative number", req["duration_ms"])
	}
	if l := petstoretest.FindLog(logs, "request", map[string]any{"path": "/v1/categories", "status": float64(401)}); l == nil {
		t.Errorf("no request log line for the 401")
	} else if id, _ := l["request_id"].(string); id == "" {
		t.Errorf("request log line of the 401: request_id: got %v, want a generated id", l["request_id"])
	}
	if last := logs[len(logs)-1]; last["msg"] != "stopped" {
		t.Errorf("last log line: msg: got %v, want stopped", last["msg"])
	}

	// Restart on the same journal: the category survived, and ids go on.
	svc2 := startRun(t, baseEnv(data))
	resp, one = petstoretest.Send(t, client, "GET", svc2.url("/v1/categories/1"), e2eKey, "", nil)
	petstoretest.WantStatus(t, "get after restart", resp, one, http.StatusOK)
	if !bytes.Equal(one, created) {
		t.Errorf("get after restart: got %s, want %s", one, created)
	}
	resp, list = petstoretest.Send(t, client, "GET", svc2.url("/v1/categories"), e2eKey, "", nil)
	petstoretest.WantStatus(t, "list after restart", resp, list, http.StatusOK)
	if want := "[" + string(created) + "]"; string(list) != want {
		t.Errorf("list after restart: got %s, want %s", list, want)
	}
	resp, second := petstoretest.Send(t, client, "POST", svc2.url("/v1/categories"), e2eKey, `{"name":"Cats"}`, nil)
	petstoretest.WantStatus(t, "create after restart", resp, second, http.StatusCreated)
	if want := `{"id":2,"name":"Cats"}`; string(second) != want {
		t.Errorf("create after restart: got %s, want %s", second, want)
	}
	resp, dup := petstoretest.Send(t, client, "POST", svc2.url("/v1/categories"), e2eKey, `{"name":"DOGS"}`, nil)
	petstoretest.WantStatus(t, "duplicate after restart", resp, dup, http.StatusConflict)
	if err := svc2.stop(); err != nil {
		t.Fatalf("second run after cancel: got %v, want nil", err)
	}
	lines2 := svc2.stderr.Lines()
	logs2 := petstoretest.ParseLogLines(t, lines2)
	petstoretest.CheckNoSecrets(t, lines2, e2eKey)
	if l := petstoretest.FindLog(logs2, "listening", nil); l == nil || l["categories"] != float64(1) {
		t.Errorf("second run's listening line: categories: got %v, want 1", l["categories"])
	}
}

func TestRunDataLocked(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "petstore.jsonl")
	first := startRun(t, baseEnv(data))

	stderr, err := runToError(t, []string{"petstore"}, baseEnv(data))
	if !strings.Contains(err.Error(), "PETSTORE_DATA") {
		t.Errorf("second run on a locked journal: got %v, want an error naming PETSTORE_DATA", err)
	}
	if lines := stderr.Lines(); len(lines) != 0 {
		t.Errorf("second run wrote %d stderr lines, want none (it must not start)", len(lines))
	}

	// The first one is unaffected, and once it stops the journal is free.
	client := petstoretest.NewClient(t)
	resp, body := petstoretest.Send(t, client, "GET", first.url("/v1/categories"), e2eKey, "", nil)
	petstoretest.WantStatus(t, "list on the first run", resp, body, http.StatusOK)
	if err := first.stop(); err != nil {
		t.Fatalf("first run after cancel: got %v, want nil", err)
	}
	third := startRun(t, baseEnv(data))
	if err := third.stop(); err != nil {
		t.Fatalf("run after the lock was released: got %v, want nil", err)
	}
}

// Bad configuration stops the start with one line that names the variable
// and never quotes a key (docs/operations.md, "Starting").
func TestRunConfigErrors(t *testing.T) {
	dir := t.TempDir()
	badKeyFile := filepath.Join(dir, "bad-keys")
	if err := os.WriteFile(badKeyFile, []byte("ok-file-key-9-Tn4Rw\nbad file key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	shortKeyFile := filepath.Join(dir, "short-keys")
	if err := os.WriteFile(shortKeyFile, []byte("# a key file\nlong-enough-key-Pz6Mc\nshort-key-Nv4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyKeyFile := filepath.Join(dir, "empty-keys")
	if err := os.WriteFile(emptyKeyFile, []byte("# only a comment\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string // on top of a valid :memory: configuration
		want    []string          // substrings of the error
		secrets []string          // must not be in the error
	}{
		{name: "unparsable sunset", env: map[string]string{"PETSTORE_PETS_SUNSET": "garbage"},
			want: []string{"PETSTORE_PETS_SUNSET"}},
		{name: "sunset without zone", env: map[string]string{"PETSTORE_PETS_SUNSET": "2027-01-01T00:00:00"},
			want: []string{"PETSTORE_PETS_SUNSET"}},
		{name: "unparsable deprecation", env: map[string]string{"PETSTORE_PETS_DEPRECATED": "2026-13-01"},
			want: []string{"PETSTORE_PETS_DEPRECATED"}},
		{name: "sunset before deprecation",
			env:  map[string]string{"PETSTORE_PETS_DEPRECATED": "2026-06-01T00:00:00Z", "PETSTORE_PETS_SUNSET": "2026-01-01T00:00:00Z"},
			want: []string{"PETSTORE_PETS_SUNSET", "PETSTORE_PETS_DEPRECATED"}},
		{name: "port not a number", env: map[string]string{"PETSTORE_ADDR": "127.0.0.1:notaport"},
			want: []string{"PETSTORE_ADDR"}},
		{name: "unexpected argument", args: []string{"petstore", "serve"},
			want: []string{"unexpected argument", `"serve"`}},
		{name: "keys hold no key", env: map[string]string{"PETSTORE_API_KEYS": ",,"},
			want: []string{"PETSTORE_API_KEYS"}},
		{name: "key a bearer token cannot carry", env: map[string]string{"PETSTORE_API_KEYS": "good-Key-1-Xy7Lm0q,bad Key!2"},
			want: []string{"PETSTORE_API_KEYS", "key 2"}, secrets: []string{"good-Key-1-Xy7Lm0q", "bad Key!2", "bad"}},
		{name: "key with a quote", env: map[string]string{"PETSTORE_API_KEYS": `quoted"key-1`},
			want: []string{"PETSTORE_API_KEYS"}, secrets: []string{`quoted"key-1`, "quoted"}},
		{name: "key shorter than 16 characters", env: map[string]string{"PETSTORE_API_KEYS": "long-enough-key-Wq3Z,short-Key-7Fb"},
			want: []string{"PETSTORE_API_KEYS", "key 2", "16 characters"}, secrets: []string{"long-enough-key-Wq3Z", "short-Key-7Fb"}},
		{name: "key of one character", env: map[string]string{"PETSTORE_API_KEYS": "a"},
			want: []string{"PETSTORE_API_KEYS", "key 1", "16 characters"}},
		{name: "key file with a short key", env: map[string]string{"PETSTORE_API_KEYS_FILE": shortKeyFile},
			want: []string{"PETSTORE_API_KEYS_FILE", shortKeyFile, "line 3", "16 characters"}, secrets: []string{e2eKey, "long-enough-key-Pz6Mc", "short-key-Nv4"}},
		{name: "missing key file", env: map[string]string{"PETSTORE_API_KEYS_FILE": filepath.Join(dir, "absent")},
			want: []string{"PETSTORE_API_KEYS_FILE"}, secrets: []string{e2eKey}},
		{name: "key file is a directory", env: map[string]string{"PETSTORE_API_KEYS_FILE": dir},
			want: []string{"PETSTORE_API_KEYS_FILE"}, secrets: []string{e2eKey}},
		{name: "key file holds no key", env: map[string]string{"PETSTORE_API_KEYS_FILE": emptyKeyFile},
			want: []string{"PETSTORE_API_KEYS_FILE"}, secrets: []string{e2eKey}},
		{name: "key file with a space in a key", env: map[string]string{"PETSTORE_API_KEYS_FILE": badKeyFile},
			want: []string{"PETSTORE_API_KEYS_FILE", badKeyFile, "line 2"}, secrets: []string{e2eKey, "bad file key", "ok-file-key-9-Tn4Rw"}},
		{name: "data path is a directory", env: map[string]string{"PETSTORE_DATA": t.TempDir()},
			want: []string{"PETSTORE_DATA"}},
		{name: "idempotency TTL not a duration", env: map[string]string{"PETSTORE_IDEMPOTENCY_TTL": "a day"}, want: []string{"PETSTORE_IDEMPOTENCY_TTL"}},
		{name: "idempotency TTL zero", env: map[string]string{"PETSTORE_IDEMPOTENCY_TTL": "0s"}, want: []string{"PETSTORE_IDEMPOTENCY_TTL"}},
		{name: "rate limit malformed", env: map[string]string{"PETSTORE_RATE_LIMIT": "fast"}, want: []string{"PETSTORE_RATE_LIMIT"}},
		{name: "connection cap zero", env: map[string]string{"PETSTORE_MAX_CONNS": "0"}, want: []string{"PETSTORE_MAX_CONNS"}},
		{name: "connection cap negative", env: map[string]string{"PETSTORE_MAX_CONNS": "-5"}, want: []string{"PETSTORE_MAX_CONNS"}},
		{name: "connection cap not a number", env: map[string]string{"PETSTORE_MAX_CONNS": "many"}, want: []string{"PETSTORE_MAX_CONNS"}},
		{name: "catalogue cap zero", env: map[string]string{"PETSTORE_MAX_CATEGORIES": "0"}, want: []string{"PETSTORE_MAX_CATEGORIES"}},
		{name: "catalogue cap with a sign", env: map[string]string{"PETSTORE_MAX_CATEGORIES": "+1"}, want: []string{"PETSTORE_MAX_CATEGORIES"}},
		{name: "catalogue cap with a leading zero", env: map[string]string{"PETSTORE_MAX_CATEGORIES": "01"}, want: []string{"PETSTORE_MAX_CATEGORIES"}},
		{name: "catalogue cap negative", env: map[string]string{"PETSTORE_MAX_CATEGORIES": "-1"}, want: []string{"PETSTORE_MAX_CATEGORIES"}},
		{name: "catalogue cap in exponent form", env: map[string]string{"PETSTORE_MAX_CATEGORIES": "1e6"}, want: []string{"PETSTORE_MAX_CATEGORIES"}},
		{name: "catalogue cap past int64", env: map[string]string{"PETSTORE_MAX_CATEGORIES": "9223372036854775808"}, want: []string{"PETSTORE_MAX_CATEGORIES"}},
		{name: "connection cap in exponent form", env: map[string]string{"PETSTORE_MAX_CONNS": "1e4"}, want: []string{"PETSTORE_MAX_CONNS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"PETSTORE_ADDR": "127.0.0.1:0", "PETSTORE_DATA": store.MemoryPath, "PETSTORE_API_KEYS": e2eKey}
			for k, v := range tt.env {
				env[k] = v
			}
			args := tt.args
			if args == nil {
				args = []string{"petstore"}
			}
			_, err := runToError(t, args, env)
			msg := err.Error() // checked as it is; printed only with the secrets hidden
			for _, s := range tt.secrets {
				if strings.Contains(msg, s) {
					t.Errorf("error quotes a configured key: %s", strings.ReplaceAll(msg, s, "<secret>"))
					msg = strings.ReplaceAll(msg, s, "<secret>")
				}
			}
			msg = petstoretest.Redact(msg)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error: got %q, want it to contain %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error: got %q, want one line", msg)
			}
		})
	}
}

// TestRunGeneratedKey checks that without a configured key, run makes one up,
// prints it once, and accepts it; and that two runs make different keys.
func TestRunGeneratedKey(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PETSTORE_ADDR": "127.0.0.1:0", "PETSTORE_DATA": store.MemoryPath}
	client := petstoretest.NewClient(t)
	var keys []string
	for i := 0; i < 2; i++ {
		svc := startRun(t, env)
		// /healthz answered, so the key was printed: it is printed before
		// the server starts serving.
		var exportLines []string
		var logLines []string
		for _, line := range svc.stderr.Lines() {
			switch {
			case strings.Contains(line, "export PETSTORE_API_KEYS="):
				exportLines = append(exportLines, line)
			case strings.HasPrefix(line, "{"):
				logLines = append(logLines, line)
			}
		}
		if len(exportLines) != 1 {
			t.Fatalf("run %d: got %d stderr lines with export PETSTORE_API_KEYS=, want 1", i+1, len(exportLines))
		}
		_, key, _ := strings.Cut(exportLines[0], "export PETSTORE_API_KEYS=")
		key = strings.TrimSpace(key)
		if len(key) < 32 || !apikey.IsToken(key) {
			t.Fatalf("run %d: generated key: got %d characters, want a bearer token of at least 32", i+1, len(key))
		}
		if n := strings.Count(strings.Join(svc.stderr.Lines(), "\n"), key); n != 1 {
			t.Errorf("run %d: the generated key appears %d times on stderr, want exactly once", i+1, n)
		}
		petstoretest.ParseLogLines(t, logLines)

		hide := func(s string) string { return strings.ReplaceAll(s, key, "<generated key>") }
		resp, body := petstoretest.Send(t, client, "GET", svc.url("/v1/categories"), key, "", nil)
		if resp.StatusCode != http.StatusOK || string(body) != "[]" {
			t.Errorf("run %d: list with the generated key: got %d %s, want 200 []", i+1, resp.StatusCode, hide(string(body)))
		}
		resp, body = petstoretest.Send(t, client, "GET", svc.url("/v1/categories"), e2eKey, "", nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("run %d: list with another key: got %d %s, want 401", i+1, resp.StatusCode, hide(petstoretest.Redact(string(body))))
		}
		if err := svc.stop(); err != nil {
			t.Fatalf("run %d after cancel: got %v, want nil", i+1, err)
		}
		keys = append(keys, key)
	}
	if keys[0] == keys[1] {
		t.Errorf("two runs generated the same key; it must be random")
	}
}

// TestRunGracefulShutdown checks that a request in flight when the stop
// signal comes is answered, and that run waits for it and returns nil. The
// request sends "Expect: 100-continue", so its "100 Continue" proves the
// handler is already reading the body when the context is cancelled.
func TestRunGracefulShutdown(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "petstore.jsonl")
	svc := startRun(t, baseEnv(data))
	client := petstoretest.NewClient(t)

	// Past the key check and reading its body (100 Continue) when the stop
	// signal comes.
	inFlight := startSlowCreate(t, client, svc.url("/v1/categories"), e2eKey)

	svc.cancel()
	waitListenerClosed(t, svc.addr)
	select {
	case <-svc.done:
		t.Fatalf("run returned (%v) while a request was in flight", svc.err)
	default:
	}

	if got := inFlight.finish(`{"name":"Late"}`); got != http.StatusCreated {
		t.Errorf("in-flight request: got %d, want 201", got)
	}
	if err := svc.stop(); err != nil {
		t.Fatalf("run after cancel: got %v, want nil", err)
	}

	// The journal was closed (its lock released) and holds the category.
	store := openTestStore(t, data)
	if got, _ := store.Get(context.Background(), 1); string(got) != `{"id":1,"name":"Late"}` {
		t.Errorf("category 1 after shutdown: got %s, want the in-flight one", got)
	}
}

// waitListenerClosed waits, bounded, until addr refuses connections: the
// server has begun shutting down.
func waitListenerClosed(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(petstoretest.StartTimeout)
	for attempt := 0; attempt < 500 && time.Now().Before(deadline); attempt++ {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return
		}
		conn.Close()
		<-time.After(10 * time.Millisecond)
	}
	t.Fatalf("%s still accepts connections after cancel", addr)
}

// runTo runs the program with args and an empty environment and returns
// what it wrote to stdout; it must succeed.
func runTo(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := runCommand(t, nil, args...)
	if err != nil {
		t.Fatalf("run %q: %v (stderr %q)", args, err, stderr)
	}
	return stdout
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
	var usage strings.Builder
	writeUsage(&usage)
	if got != usage.String() || !strings.HasPrefix(got, commandsUsage) {
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
