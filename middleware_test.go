package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"

	"petstore/internal/apikey"
)

// Tests of the middleware (middleware.go) through the real mux: a panic
// recovered as a 500, request ids, and the access line of every request,
// written to the access log or, for a 500, to the error log.

func TestPanicIsInternalError(t *testing.T) {
	t.Parallel()
	const detail = "secret-panic-detail-7f3a"
	panicking := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(detail) })
	env := newTestEnv(t, withRoute(route{method: "GET", path: "/v1/test-panic", operationID: "testPanic", handler: panicking, scope: apikey.Read}))

	for i := range 2 { // twice: a panic leaves nothing broken behind
		id := fmt.Sprintf("panic-request-%d", i)
		rec := env.do(t, request{method: "GET", path: "/v1/test-panic", header: map[string]string{"Authorization": "Bearer " + testKey, "X-Request-Id": id}})
		mustError(t, rec, http.StatusInternalServerError, codeInternal)
		// Every line about the request carries its id: the panic's
		// line with the stack as much as the request's own.
		for _, msg := range []string{"handler panicked", "request"} {
			if !logHas(env.logs.String(), msg, id) {
				t.Errorf("request %d: no %q log line with request_id %s", i, msg, id)
			}
		}
		if strings.Contains(rec.Body.String(), detail) || strings.Contains(rec.Body.String(), "panic") {
			t.Errorf("request %d: body carries the panic: %s", i, rec.Body)
		}
		if rec.Header().Get("X-Request-Id") == "" {
			t.Errorf("request %d: 500 answer has no X-Request-Id", i)
		}
	}
	if c := env.mustCreate(t, "dog"); c.ID != 1 {
		t.Errorf("create after panics: got id %d, want 1", c.ID)
	}
	if got := env.mustList(t); len(got) != 1 {
		t.Errorf("list after panics: got %d categories, want 1", len(got))
	}
	// The detail is for the operator.
	if !strings.Contains(env.logs.String(), detail) {
		t.Errorf("the log does not record the panic %q", detail)
	}
}

// logHas reports whether logs hold a JSON line with msg and request id.
func logHas(logs, msg, id string) bool {
	for line := range strings.Lines(logs) {
		var l struct {
			Msg       string `json:"msg"`
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == msg && l.RequestID == id {
			return true
		}
	}
	return false
}

// A handler that panics after its answer began cannot turn it into an
// Error: the answer is aborted, so that the client sees it broken rather
// than complete, and the request is still logged with its id.
func TestPanicAfterAnswerBeganAborts(t *testing.T) {
	t.Parallel()
	partial := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("partial"))
		http.NewResponseController(w).Flush()
		panic("after the answer began")
	})
	env := newTestEnv(t, withRoute(route{method: "GET", path: "/v1/test-partial", operationID: "testPartial", handler: partial, scope: apikey.Read}))
	srv := httptest.NewServer(env.handler)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("GET", srv.URL+"/v1/test-partial", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("X-Request-Id", "partial-1")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Errorf("the client read a complete answer %q; want it broken", body)
	}
	if !logHas(env.logs.String(), "handler panicked", "partial-1") || !logHas(env.logs.String(), "request", "partial-1") {
		t.Errorf("the panic and the request are not both logged with the request id")
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	tests := []struct {
		name, sent string // sent "": no header
		echoed     bool
	}{
		{"none", "", false},
		{"sane", "abc-123", true},
		{"sane with dots and colons", "svc:abc.123_x", true},
		{"too long", strings.Repeat("a", 200), false},
		{"with spaces", "abc 123", false},
		{"with quotes", `abc"123`, false},
		{"with a newline escape", "abc\\n123", false},
		{"non-ASCII", "abc-日本", false},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := authJSON()
			if tt.sent != "" {
				header["X-Request-Id"] = tt.sent
			}
			for _, path := range []string{"/v1/categories", "/v1/nope"} { // success and error
				rec := env.do(t, request{method: "GET", path: path, header: header})
				got := rec.Header().Values("X-Request-Id")
				if len(got) != 1 || got[0] == "" {
					t.Fatalf("%s: X-Request-Id: got %q, want one non-empty value", path, got)
				}
				id := got[0]
				if tt.echoed {
					if id != tt.sent {
						t.Errorf("%s: X-Request-Id: got %q, want the one sent, %q", path, id, tt.sent)
					}
					continue
				}
				if id == tt.sent || strings.ContainsAny(id, " \"\\") || len(id) > 128 {
					t.Errorf("%s: X-Request-Id: got %q, want a fresh sane id", path, id)
				}
				if seen[id] {
					t.Errorf("%s: X-Request-Id %q was generated twice", path, id)
				}
				seen[id] = true
			}
		})
	}
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	const wrongKey = "wrong-key-in-log-3e9f"
	reqs := []struct {
		authorization string
		status        int
	}{
		{"Bearer " + wrongKey, http.StatusUnauthorized},
		{"Bearer " + testKey, http.StatusOK},
	}
	var ids []string
	for _, r := range reqs {
		rec := env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{"Authorization": r.authorization}})
		if rec.Code != r.status {
			t.Fatalf("%s: got %d, want %d", r.authorization, rec.Code, r.status)
		}
		if r.status != http.StatusOK {
			mustError(t, rec, r.status, codeUnauthorized)
		}
		ids = append(ids, rec.Header().Get("X-Request-Id"))
	}

	logs := env.logs.String()
	for _, s := range []string{wrongKey, testKey, "Bearer", "bearer"} {
		if strings.Contains(logs, s) {
			t.Errorf("log contains %q:\n%s", s, logs)
		}
	}
	lines := strings.Split(strings.TrimSuffix(logs, "\n"), "\n")
	if len(lines) != len(reqs) {
		t.Fatalf("log: got %d lines, want %d:\n%s", len(lines), len(reqs), logs)
	}
	for i, line := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, line)
		}
		want := map[string]any{
			"method":     "GET",
			"route":      "GET /v1/categories",
			"path":       "/v1/categories",
			"status":     float64(reqs[i].status),
			"request_id": ids[i],
		}
		for k, v := range want {
			if entry[k] != v {
				t.Errorf("line %d: %s: got %v, want %v", i, k, entry[k], v)
			}
		}
		if d, ok := entry["duration_ms"].(float64); !ok || d < 0 {
			t.Errorf("line %d: duration_ms: got %v, want a non-negative number", i, entry["duration_ms"])
		}
	}
}

// Access lines of answers below 500 go to the access log (buffered in
// production); those of 500s go to the error log, written at once.
func TestServerErrorsSkipTheAccessLog(t *testing.T) {
	t.Parallel()
	var access lockedBuffer
	panicking := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	env := newTestEnv(t, withAccessLogTo(&access), withRoute(route{method: "GET", path: "/v1/test-panic", handler: panicking, scope: apikey.Read}))
	env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{"Authorization": "Bearer " + testKey, "X-Request-Id": "ok-1"}})
	env.do(t, request{method: "GET", path: "/v1/test-panic", header: map[string]string{"Authorization": "Bearer " + testKey, "X-Request-Id": "boom-1"}})
	if !strings.Contains(access.String(), `"request_id":"ok-1"`) || strings.Contains(access.String(), "boom-1") {
		t.Errorf("access log: got %s, want the 200 line only", &access)
	}
	if !strings.Contains(env.logs.String(), `"request_id":"boom-1"`) || strings.Contains(env.logs.String(), `"request_id":"ok-1"`) {
		t.Errorf("error log: got %s, want the 500 line only", env.logs)
	}
}

// isCleanPath agrees with path.Clean, but for one trailing slash, on every
// string of up to 7 bytes from the letters that matter: p begins with "/"
// and path.Clean(p) is p, or p without its trailing slash ("//" is not
// "/" with a trailing slash).
func TestIsCleanPathMatchesPathClean(t *testing.T) {
	t.Parallel()
	var walk func(p string)
	walk = func(p string) {
		clean := path.Clean(p)
		want := p != "" && p[0] == '/' && (clean == p || clean != "/" && clean+"/" == p)
		if got := isCleanPath(p); got != want {
			t.Errorf("isCleanPath(%q): got %v, want %v", p, got, want)
		}
		if len(p) < 7 {
			for _, c := range []string{"/", ".", "a", "%"} {
				walk(p + c)
			}
		}
	}
	walk("")
}
