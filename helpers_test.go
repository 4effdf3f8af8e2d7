package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"petstore/internal/accesslog"
	"petstore/internal/apikey"
	"petstore/internal/petstoretest"
	"petstore/internal/store"
	"petstore/internal/testkit"
)

// Helpers of the tests that go through the real mux (newTestEnv): options,
// requests, and checks of the answers. storehelpers_test.go opens stores for
// them; harness_test.go runs the whole service.

// Keys the test servers accept. They are test values, safe to print.
const (
	testKey  = "test-key-one-Hq4Wz"
	testKey2 = "test-key-two-Rm8Ty"
)

// lockedBuffer holds the test logs, written by concurrent requests and
// read by the test.
type lockedBuffer = testkit.LockedBuffer

// testEnv is a real handler over a memory store, with the clock and extra
// routes a test may want.
type testEnv struct {
	handler http.Handler
	store   Store
	logs    *lockedBuffer
}

type testOption func(*deps, *[]route)

// withNow fixes the clock the handler sees.
func withNow(now time.Time) testOption {
	return func(d *deps, _ *[]route) { d.now = func() time.Time { return now } }
}

// withRoute adds a route that only the test registers.
func withRoute(rt route) testOption {
	return func(_ *deps, table *[]route) { *table = append(*table, rt) }
}

// withLogTo sends every log line to w instead of testEnv.logs; w must be
// safe for concurrent use.
func withLogTo(w io.Writer) testOption {
	return func(d *deps, _ *[]route) { d.log, d.access = accesslog.NewJSONLogger(w), w }
}

// withAccessLogTo sends the access log lines of answers below 500 to w,
// which must be safe for concurrent use; the others stay in testEnv.logs.
func withAccessLogTo(w io.Writer) testOption {
	return func(d *deps, _ *[]route) { d.access = w }
}

// withStore serves from store instead of a new memory store.
func withStore(s Store) testOption {
	return func(d *deps, _ *[]route) { d.store = s }
}

// newTestEnv builds the service handler exactly as run does, over a memory
// store, accepting testKey and testKey2.
func newTestEnv(t testing.TB, opts ...testOption) *testEnv {
	t.Helper()
	logs := &lockedBuffer{}
	cfg, err := loadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatalf("default config: %v", err)
	}
	d := deps{
		store:  store.NewMemory(store.Options{}),
		keys:   apikey.NewRing(apikey.AllScopes(testKey, testKey2)),
		log:    accesslog.NewJSONLogger(logs),
		access: logs,
		now:    time.Now,
		pets:   cfg.pets,
	}
	var extra []route
	for _, opt := range opts {
		opt(&d, &extra)
	}
	t.Cleanup(func() { observeAccessLog(logs.Bytes()) })
	handler, _, err := newServer(d, extra...)
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	return &testEnv{handler: handler, store: d.store, logs: logs}
}

// request is one request to send through the handler.
type request struct {
	method, path, body string
	header             map[string]string // nil: authorised JSON request
}

// authJSON is the header set of an ordinary authorised JSON request.
func authJSON() map[string]string {
	return map[string]string{"Authorization": "Bearer " + testKey, "Content-Type": "application/json"}
}

// do sends req through the real handler and returns the recorded answer.
func (e *testEnv) do(t testing.TB, req request) *httptest.ResponseRecorder {
	t.Helper()
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	r := httptest.NewRequest(req.method, req.path, body)
	header := req.header
	if header == nil {
		header = authJSON()
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, r)
	return rec
}

// mustError checks that rec is an Error answer with the given status and
// code (see petstoretest.CheckErrorBody).
func mustError(t testing.TB, rec *httptest.ResponseRecorder, status int, code string) petstoretest.ErrorBody {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status: got %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	eb, ok := petstoretest.CheckErrorBody(t, rec.Code, rec.Header(), rec.Body.Bytes())
	if !ok {
		t.FailNow()
	}
	if eb.Code != code {
		t.Errorf("code: got %q, want %q; message %q", eb.Code, code, eb.Message)
	}
	return eb
}

// mustCreate creates a category named name and returns it.
func (e *testEnv) mustCreate(t testing.TB, name string) petstoretest.Category {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name})
	rec := e.do(t, request{method: "POST", path: "/v1/categories", body: string(body)})
	if rec.Code != http.StatusCreated {
		t.Fatalf("create %q: got %d, want 201; body %s", name, rec.Code, rec.Body)
	}
	var c petstoretest.Category
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
		t.Fatalf("create %q: %v", name, err)
	}
	return c
}

// mustList lists the categories.
func (e *testEnv) mustList(t testing.TB) []petstoretest.Category {
	t.Helper()
	rec := e.do(t, request{method: "GET", path: "/v1/categories"})
	if rec.Code != http.StatusOK {
		t.Fatalf("list: got %d, want 200; body %s", rec.Code, rec.Body)
	}
	var list []petstoretest.Category
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatalf("list: %v; body %s", err, rec.Body)
	}
	return list
}

// Instants around the default sunset of GET /v1/pets/{petId}.
var (
	beforePetsSunset = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	afterPetsSunset  = time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)
)

// withAcceptedKeys makes the handler accept exactly keys.
func withAcceptedKeys(keys []apikey.Key) testOption {
	return func(d *deps, _ *[]route) { d.keys = apikey.NewRing(keys) }
}

// postCategory sends body to POST /v1/categories as an authorised JSON request.
func postCategory(t testing.TB, env *testEnv, body string) *httptest.ResponseRecorder {
	t.Helper()
	return env.do(t, request{method: "POST", path: "/v1/categories", body: body})
}

// serveRequest sends a request built by hand through the handler, for what
// request cannot express (a declared or unknown Content-Length).
func (e *testEnv) serveRequest(t testing.TB, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, r)
	return rec
}

// mustStatus checks a successful answer's status and JSON content type.
func mustStatus(t testing.TB, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status: got %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
}

// mustMention checks that msg contains every one of parts.
func mustMention(t testing.TB, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q does not mention %q", msg, p)
		}
	}
}

// mustNotLeak checks that secret appears nowhere in the answer: not in the
// body, not in any header name or value.
func mustNotLeak(t testing.TB, rec *httptest.ResponseRecorder, secret string) {
	t.Helper()
	if strings.Contains(rec.Body.String(), secret) {
		t.Errorf("body contains %q: %s", secret, rec.Body)
	}
	for name, values := range rec.Header() {
		for _, v := range values {
			if strings.Contains(name, secret) || strings.Contains(v, secret) {
				t.Errorf("header %s: %q contains %q", name, v, secret)
			}
		}
	}
}

// decodeCategory decodes a Category answer, and its members by name, so
// that a test can tell an absent member from an empty one.
func decodeCategory(t testing.TB, body []byte) (petstoretest.Category, map[string]json.RawMessage) {
	t.Helper()
	var c petstoretest.Category
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("category body: %v; body %s", err, body)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		t.Fatalf("category body: %v; body %s", err, body)
	}
	return c, members
}

// nameBody returns a request body {"name": name} encoded by encoding/json.
func nameBody(name string) string {
	b, _ := json.Marshal(map[string]string{"name": name})
	return string(b)
}

// nameDescBody returns {"name": name, "description": desc}.
func nameDescBody(name, desc string) string {
	b, _ := json.Marshal(map[string]string{"name": name, "description": desc})
	return string(b)
}

// syntaxOffset returns the byte offset encoding/json reports for body.
func syntaxOffset(t testing.TB, body string) int64 {
	t.Helper()
	var v any
	var se *json.SyntaxError
	if err := json.Unmarshal([]byte(body), &v); !errors.As(err, &se) {
		t.Fatalf("json.Unmarshal(%q): got %v, want a syntax error", body, err)
	}
	return se.Offset
}
