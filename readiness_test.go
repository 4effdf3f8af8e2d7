package main

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/internal/catalog"
	"petstore/internal/petstoretest"
	"petstore/internal/store"
)

// withReady serves with ready as the readiness /readyz reports.
func withReady(ready *readiness) testOption {
	return func(d *deps, _ *[]route) { d.ready = ready }
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	ready := &readiness{}
	env := newTestEnv(t, withReady(ready))
	noKey := map[string]string{}
	rec := env.do(t, request{method: "GET", path: "/readyz", header: noKey})
	if rec.Code != http.StatusOK || rec.Body.String() != `{"status":"ready"}` || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("ready: %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	if rec := env.do(t, request{method: "HEAD", path: "/readyz", header: noKey}); rec.Code != http.StatusOK {
		t.Errorf("HEAD: %d", rec.Code)
	}
	mustError(t, env.do(t, request{method: "GET", path: "/readyz?verbose=1", header: noKey}), http.StatusBadRequest, codeInvalidParameter)
	rec = env.do(t, request{method: "POST", path: "/readyz", header: noKey})
	mustError(t, rec, http.StatusMethodNotAllowed, codeMethodNotAllowed)
	if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
		t.Errorf("Allow: %q", got)
	}

	ready.draining.Store(true)
	for _, method := range []string{"GET", "HEAD"} {
		rec := env.do(t, request{method: method, path: "/readyz", header: noKey})
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s while draining: %d, Retry-After %q; want 503 with Retry-After", method, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	body := mustError(t, env.do(t, request{method: "GET", path: "/readyz", header: noKey}), http.StatusServiceUnavailable, codeUnavailable)
	if !strings.Contains(body.Message, "stopping") {
		t.Errorf("message while draining: %q", body.Message)
	}
	// Draining changes nothing else: the API and /healthz are served.
	if rec := env.do(t, request{method: "GET", path: "/healthz", header: noKey}); rec.Code != http.StatusOK {
		t.Errorf("/healthz while draining: %d", rec.Code)
	}
	env.mustCreate(t, "dog")
	if got := env.mustList(t); len(got) != 1 {
		t.Errorf("list while draining: %d categories", len(got))
	}
}

func TestReadyzStoreDown(t *testing.T) {
	t.Parallel()
	for _, cause := range []error{catalog.ErrUnavailable, errors.New("journal: write failed: no space left on device")} {
		logs := &lockedBuffer{}
		env := newTestEnv(t, withStore(failingStore{Store: store.NewMemory(store.Options{}), err: cause}), withLogTo(logs))
		rec := env.do(t, request{method: "GET", path: "/readyz", header: map[string]string{}})
		body := mustError(t, rec, http.StatusServiceUnavailable, codeUnavailable)
		if rec.Header().Get("Retry-After") == "" || body.Message != "not ready: the store cannot take creates now" {
			t.Errorf("%v: Retry-After %q, message %q", cause, rec.Header().Get("Retry-After"), body.Message)
		}
		if !strings.Contains(logs.String(), cause.Error()) {
			t.Errorf("%v: the log line does not say why:\n%s", cause, logs)
		}
	}
}

func TestShutdownDelayConfig(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"": 0, "0s": 0, "15s": 15 * time.Second, "1m30s": 90 * time.Second} {
		cfg, err := loadConfig(mapEnv(map[string]string{"PETSTORE_SHUTDOWN_DELAY": v}))
		if err != nil || cfg.drainDelay != want {
			t.Errorf("%q: %v, %v; want %v", v, cfg.drainDelay, err, want)
		}
	}
	for _, name := range []string{"PETSTORE_SHUTDOWN_DELAY", "PETSTORE_SHUTDOWN_GRACE"} {
		for _, v := range []string{"15", "-1s", "soon", "1x", strings.Repeat("9", 200) + "s"} {
			_, err := loadConfig(mapEnv(map[string]string{name: v}))
			if err == nil || !strings.HasPrefix(err.Error(), name+": ") || len(err.Error()) > 200 {
				t.Errorf("%s=%q: got %v, want a short error naming %s", name, v, err, name)
			}
		}
	}
	for v, want := range map[string]time.Duration{"": petstoretest.DefaultGrace, "0s": 0, "2s": 2 * time.Second, "1m": time.Minute} {
		cfg, err := loadConfig(mapEnv(map[string]string{"PETSTORE_SHUTDOWN_GRACE": v}))
		if err != nil || cfg.grace != want {
			t.Errorf("PETSTORE_SHUTDOWN_GRACE=%q: %v, %v; want %v", v, cfg.grace, err, want)
		}
	}
}

// getStatus GETs url and returns the status, or 0 when nothing answered.
func getStatus(client *http.Client, url string, header ...string) int {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestShutdownDelay runs the binary with a delay, sends SIGTERM, and
// watches from outside: /readyz turns 503 at once while the API is still
// served, on new connections too, for the whole delay; the process stops
// once the delay is over. (Both bounds hold on a slow machine too: the
// delay begins when petstore receives the signal, after it was sent.)
func TestShutdownDelay(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second
	p := petstoretest.Start(t, map[string]string{"PETSTORE_SHUTDOWN_DELAY": delay.String()})
	client := petstoretest.NewClient(t)
	if got := getStatus(client, p.URL("/readyz")); got != http.StatusOK {
		t.Fatalf("/readyz before SIGTERM: %d", got)
	}
	sent := time.Now()
	p.Signal(t, syscall.SIGTERM)
	waitFor(t, "/readyz to turn 503", func() bool {
		return getStatus(client, p.URL("/readyz")) == http.StatusServiceUnavailable
	})
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	served := 0
	for time.Since(sent) < delay*2/3 {
		if got := getStatus(fresh, p.URL("/v1/categories"), "Authorization", "Bearer "+petstoretest.Key); got != http.StatusOK || p.Exited() {
			t.Fatalf("the API on a new connection %v after SIGTERM, within the delay: %d (exited: %v), want 200", time.Since(sent), got, p.Exited())
		}
		served++
		time.Sleep(100 * time.Millisecond) // requests spread over the delay, bounded by it
	}
	if got := getStatus(client, p.URL("/healthz")); got != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want 200", got)
	}
	if code := p.Wait(t, delay+petstoretest.DefaultGrace+2*time.Second); code != 0 {
		t.Fatalf("exit code: %d; stderr:\n%s", code, petstoretest.Redact(p.Stderr.String()))
	}
	if took := time.Since(sent); took < delay {
		t.Errorf("exited %v after SIGTERM, before the delay of %v was over", took, delay)
	}
	logs := p.Stderr.String()
	for _, msg := range []string{`"shutdown_delay":"3s"`, `"msg":"draining: not ready, serving on","delay":"3s"`, `"msg":"stopped"`} {
		if !strings.Contains(logs, msg) {
			t.Errorf("log lacks %s:\n%s", msg, petstoretest.Redact(logs))
		}
	}
	t.Logf("%d requests served on new connections during the delay", served)
}

// TestShutdownDelaySecondSignal: a second SIGTERM ends a delay of an hour.
// The key file is still reloaded during the delay.
func TestShutdownDelaySecondSignal(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("first-key-Xw3Rt9Lm\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := petstoretest.Start(t, map[string]string{"PETSTORE_SHUTDOWN_DELAY": "1h", "PETSTORE_API_KEYS_FILE": keyFile})
	client := petstoretest.NewClient(t)
	p.Signal(t, syscall.SIGTERM)
	waitFor(t, "/readyz to turn 503", func() bool {
		return getStatus(client, p.URL("/readyz")) == http.StatusServiceUnavailable
	})
	if err := os.WriteFile(keyFile, []byte("first-key-Xw3Rt9Lm\nsecond-key-Pq7Vn2Hs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Signal(t, syscall.SIGHUP)
	waitFor(t, "a key added during the delay to be accepted", func() bool {
		return getStatus(client, p.URL("/v1/categories"), "Authorization", "Bearer second-key-Pq7Vn2Hs") == http.StatusOK
	})
	if p.Exited() {
		t.Fatal("exited within the delay")
	}
	p.Signal(t, syscall.SIGTERM)
	if code := p.Wait(t, petstoretest.DefaultGrace+5*time.Second); code != 0 {
		t.Fatalf("exit code: %d; stderr:\n%s", code, petstoretest.Redact(p.Stderr.String()))
	}
	if logs := p.Stderr.String(); !strings.Contains(logs, `"msg":"a second stop signal ends the delay","signal":"terminated"`) {
		t.Errorf("log lacks the second signal:\n%s", petstoretest.Redact(logs))
	}
}
