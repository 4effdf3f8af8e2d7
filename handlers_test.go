package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/bodybudget"
)

// These tests drive the real handler (routes + newHandler) through
// httptest and check it against docs/api.md: every error row, auth, the
// success shapes, caching, request ids, configuration of keys and the access
// log.

// Instants around the default sunset of GET /v1/pets/{petId}.
var (
	beforePetsSunset = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	afterPetsSunset  = time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)
)

// withAcceptedKeys makes the handler accept exactly keys.
func withAcceptedKeys(keys []apiKey) testOption {
	return func(d *deps, _ *[]route) { d.keys = newKeyring(keys) }
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
func decodeCategory(t testing.TB, body []byte) (categoryBody, map[string]json.RawMessage) {
	t.Helper()
	var c categoryBody
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

func TestCreateCategoryInvalidJSON(t *testing.T) {
	t.Parallel()
	syntaxErr := `{"name": }`
	trailingComma := `{"name":"a",}`
	tests := []struct {
		name    string
		body    string
		mention []string
	}{
		{"syntax error", syntaxErr, []string{"byte " + strconv.FormatInt(syntaxOffset(t, syntaxErr), 10)}},
		{"trailing comma", trailingComma, []string{"byte " + strconv.FormatInt(syntaxOffset(t, trailingComma), 10)}},
		{"truncated object", `{"name":"a"`, nil},
		{"empty body", "", []string{"empty"}},
		{"whitespace-only body", " \t\r\n ", []string{"empty"}},
		{"array body", `[{"name":"a"}]`, []string{"object", "array"}},
		{"string body", `"dog"`, []string{"object", "string"}},
		{"number body", `42`, []string{"object", "number"}},
		{"null body", `null`, []string{"object", "null"}},
		{"trailing object", `{"name":"a"} {}`, []string{"after"}},
		{"trailing garbage", `{"name":"a"}x`, []string{"after"}},
		{"invalid UTF-8", "{\"name\":\"a\xffb\"}", []string{"UTF-8"}},
		{"invalid UTF-8 in member name", "{\"name\":\"a\",\"\xfe\":1}", []string{"UTF-8"}},
		{"duplicate member", `{"name":"a","name":"b"}`, []string{`"name"`}},
		{"duplicate member by escape", `{"name":"a","n\u0061me":"b"}`, []string{`"name"`}},
		{"duplicate description", `{"name":"a","description":"x","description":"y"}`, []string{`"description"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t)
			eb := mustError(t, postCategory(t, env, tt.body), http.StatusBadRequest, codeInvalidJSON)
			mustMention(t, eb.Message, tt.mention...)
			if got := env.mustList(t); len(got) != 0 {
				t.Errorf("store after a rejected create: got %d categories, want 0", len(got))
			}
		})
	}
}

func TestCreateCategoryValidation(t *testing.T) {
	t.Parallel()
	const space = "  \t "
	tests := []struct {
		name     string
		body     string
		status   int      // 201, or 400 with code
		code     string   // for 400
		mention  []string // for 400: every one must be in the message
		wantName string   // for 201
	}{
		// missing_field
		{name: "name absent", body: `{}`, status: 400, code: codeMissingField, mention: []string{"name"}},
		{name: "name absent, description present", body: `{"description":"d"}`, status: 400, code: codeMissingField, mention: []string{"name"}},
		{name: "name null", body: `{"name":null}`, status: 400, code: codeMissingField, mention: []string{"name"}},

		// invalid_field: types
		{name: "name number", body: `{"name":5}`, status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name bool", body: `{"name":true}`, status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name object", body: `{"name":{"a":"b"}}`, status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name array", body: `{"name":["dog"]}`, status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "description number", body: `{"name":"dog","description":5}`, status: 400, code: codeInvalidField, mention: []string{"description"}},
		{name: "description bool", body: `{"name":"dog","description":false}`, status: 400, code: codeInvalidField, mention: []string{"description"}},
		{name: "description null", body: `{"name":"dog","description":null}`, status: 400, code: codeInvalidField, mention: []string{"description"}},
		{name: "description object", body: `{"name":"dog","description":{}}`, status: 400, code: codeInvalidField, mention: []string{"description"}},
		{name: "description array", body: `{"name":"dog","description":["x"]}`, status: 400, code: codeInvalidField, mention: []string{"description"}},

		// invalid_field: bounds on name
		{name: "name empty", body: `{"name":""}`, status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name whitespace only", body: nameBody(" \t\n "), status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name 100 é", body: nameBody(strings.Repeat("é", 100)), status: 201, wantName: strings.Repeat("é", 100)},
		{name: "name 101 é", body: nameBody(strings.Repeat("é", 101)), status: 400, code: codeInvalidField, mention: []string{"name", "100"}},
		{name: "name 100 日", body: nameBody(strings.Repeat("日", 100)), status: 201, wantName: strings.Repeat("日", 100)},
		{name: "name 101 日", body: nameBody(strings.Repeat("日", 101)), status: 400, code: codeInvalidField, mention: []string{"name", "100"}},
		{name: "name 100 emoji", body: nameBody(strings.Repeat("🐶", 100)), status: 201, wantName: strings.Repeat("🐶", 100)},
		{name: "name 100 日 within spaces", body: nameBody(space + strings.Repeat("日", 100) + space), status: 201, wantName: strings.Repeat("日", 100)},
		{name: "name 101 日 within spaces", body: nameBody(space + strings.Repeat("日", 101) + space), status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name 100 ASCII within spaces", body: nameBody(" " + strings.Repeat("a", 100) + " "), status: 201, wantName: strings.Repeat("a", 100)},
		{name: "name with BEL", body: `{"name":"a\u0007b"}`, status: 400, code: codeInvalidField, mention: []string{"name", "control"}},
		{name: "name with DEL", body: `{"name":"a\u007fb"}`, status: 400, code: codeInvalidField, mention: []string{"name", "control"}},
		{name: "name with NEL", body: `{"name":"a\u0085b"}`, status: 400, code: codeInvalidField, mention: []string{"name", "control"}},
		{name: "name with NUL", body: `{"name":"a\u0000b"}`, status: 400, code: codeInvalidField, mention: []string{"name", "control"}},
		{name: "name with inner newline", body: `{"name":"a\nb"}`, status: 400, code: codeInvalidField, mention: []string{"name", "control"}},

		// invalid_field: bounds on description
		{name: "description 1000 é", body: nameDescBody("dog", strings.Repeat("é", 1000)), status: 201, wantName: "dog"},
		{name: "description 1001 é", body: nameDescBody("dog", strings.Repeat("é", 1001)), status: 400, code: codeInvalidField, mention: []string{"description", "1000"}},
		{name: "description 1000 日", body: nameDescBody("dog", strings.Repeat("日", 1000)), status: 201, wantName: "dog"},
		{name: "description 1001 日", body: nameDescBody("dog", strings.Repeat("日", 1001)), status: 400, code: codeInvalidField, mention: []string{"description", "1000"}},

		// unknown_field
		{name: "NAME", body: `{"name":"dog","NAME":"cat"}`, status: 400, code: codeUnknownField, mention: []string{`"NAME"`}},
		{name: "Name instead of name", body: `{"Name":"dog"}`, status: 400, code: codeUnknownField, mention: []string{`"Name"`}},
		{name: "id", body: `{"name":"dog","id":7}`, status: 400, code: codeUnknownField, mention: []string{`"id"`}},
		{name: "extra", body: `{"name":"dog","extra":true}`, status: 400, code: codeUnknownField, mention: []string{`"extra"`}},

		// every problem in one answer
		{name: "NAME and bad description", body: `{"NAME":"dog","description":5}`, status: 400, code: codeUnknownField, mention: []string{`"NAME"`, "description"}},
		{name: "bad name, bad description, id", body: `{"name":5,"description":true,"id":1}`, status: 400, code: codeUnknownField, mention: []string{"name", "description", `"id"`}},
		{name: "long name and long description", body: nameDescBody(strings.Repeat("x", 101), strings.Repeat("y", 1001)), status: 400, code: codeInvalidField, mention: []string{"name", "description"}},
		{name: "missing name and bad description", body: `{"description":null}`, status: 400, code: codeMissingField, mention: []string{"name", "description"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t)
			rec := postCategory(t, env, tt.body)
			if tt.status != http.StatusCreated {
				eb := mustError(t, rec, tt.status, tt.code)
				mustMention(t, eb.Message, tt.mention...)
				if got := env.mustList(t); len(got) != 0 {
					t.Errorf("store after a rejected create: got %d categories, want 0", len(got))
				}
				return
			}
			mustStatus(t, rec, http.StatusCreated)
			c, _ := decodeCategory(t, rec.Body.Bytes())
			if c.Name != tt.wantName {
				t.Errorf("name: got %q, want %q", c.Name, tt.wantName)
			}
		})
	}
}

func TestGetCategoryInvalidParameter(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	for _, id := range []string{"0", "-1", "+1", "01", "1.0", "1e0", "abc", "0x1", "9223372036854775808", "99999999999999999999"} {
		t.Run(id, func(t *testing.T) {
			rec := env.do(t, request{method: "GET", path: "/v1/categories/" + id})
			eb := mustError(t, rec, http.StatusBadRequest, codeInvalidParameter)
			mustMention(t, eb.Message, "id")
		})
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	tests := []struct {
		name, method, path string
	}{
		{"unknown id", "GET", "/v1/categories/999"},
		{"largest int64 id", "GET", "/v1/categories/9223372036854775807"},
		{"unknown path", "GET", "/v1/nope"},
		{"unknown path, POST", "POST", "/v1/nope"},
		{"trailing slash", "GET", "/v1/categories/"},
		{"trailing slash after id", "GET", "/v1/categories/1/"},
		{"deeper path", "GET", "/v1/categories/1/pets"},
		{"root", "GET", "/"},
		{"base path", "GET", "/v1"},
		{"upper-case prefix", "GET", "/V1/categories"},
		{"double slash", "GET", "/v1//categories"},
		{"dot segment", "GET", "/v1/./categories"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := env.do(t, request{method: tt.method, path: tt.path})
			mustError(t, rec, http.StatusNotFound, codeNotFound)
			if loc := rec.Header().Get("Location"); loc != "" {
				t.Errorf("Location: got %q, want none (no redirects)", loc)
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	tests := []struct {
		method, path, allow string
	}{
		{"DELETE", "/v1/categories", "GET, HEAD, POST"},
		{"PUT", "/v1/categories", "GET, HEAD, POST"},
		{"PATCH", "/v1/categories", "GET, HEAD, POST"},
		{"POST", "/v1/categories/1", "GET, HEAD"},
		{"DELETE", "/v1/categories/1", "GET, HEAD"},
		{"POST", "/v1/store/orders", "GET, HEAD"},
		{"POST", "/v1/pets/1", "GET, HEAD"},
		{"POST", "/healthz", "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := env.do(t, request{method: tt.method, path: tt.path, body: `{"name":"cat"}`})
			mustError(t, rec, http.StatusMethodNotAllowed, codeMethodNotAllowed)
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow: got %q, want %q", got, tt.allow)
			}
		})
	}
	if got := env.mustList(t); len(got) != 1 {
		t.Errorf("after 405 answers: got %d categories, want 1", len(got))
	}
}

func TestCreateCategoryConflict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		first, second string
	}{
		{"dog", "dog"},
		{"dog", "DOG"},
		{"DOG", "dog"},
		{"dog", "  dog "},
		{" dog", "Dog\t"},
		{"école", "ÉCOLE"},
		{"ÉCOLE", "école"},
		{"日本", "日本"},
		// Simple case folding, as strings.EqualFold: final sigma folds
		// with Σ, which lower-casing alone would miss.
		{"ΟΔΟΣ", "οδος"},
	}
	for _, tt := range tests {
		t.Run(tt.first+" then "+tt.second, func(t *testing.T) {
			env := newTestEnv(t)
			first := env.mustCreate(t, tt.first)
			eb := mustError(t, postCategory(t, env, nameBody(tt.second)), http.StatusConflict, codeConflict)
			mustMention(t, eb.Message, strings.TrimSpace(tt.second))
			list := env.mustList(t)
			if len(list) != 1 || list[0] != first {
				t.Errorf("list after conflict: got %+v, want only %+v", list, first)
			}
		})
	}
}

func TestPayloadTooLarge(t *testing.T) {
	t.Parallel()
	// A valid JSON object padded with white space to the given size, so that
	// only the size can be at fault.
	padded := func(size int) string {
		obj := `{"name":"big"}`
		return obj + strings.Repeat(" ", size-len(obj))
	}
	newPost := func(body string, contentLength int64) *http.Request {
		r := httptest.NewRequest("POST", "/v1/categories", strings.NewReader(body))
		r.ContentLength = contentLength
		r.Header.Set("Authorization", "Bearer "+testKey)
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	over, atLimit := padded(maxBodyBytes+1), padded(maxBodyBytes)
	if maxBodyBytes != 1<<20 {
		t.Fatalf("maxBodyBytes: got %d, want 1 MiB", maxBodyBytes)
	}
	tests := []struct {
		name   string
		req    *http.Request
		status int
	}{
		{"1 MiB + 1 byte, declared", newPost(over, int64(len(over))), http.StatusRequestEntityTooLarge},
		{"1 MiB + 1 byte, length unknown", newPost(over, -1), http.StatusRequestEntityTooLarge},
		{"declared length over 1 MiB, short body", newPost(`{"name":"big"}`, 2<<20), http.StatusRequestEntityTooLarge},
		{"exactly 1 MiB, declared", newPost(atLimit, int64(len(atLimit))), http.StatusCreated},
		{"exactly 1 MiB, length unknown", newPost(atLimit, -1), http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t)
			rec := env.serveRequest(t, tt.req)
			if tt.status != http.StatusCreated {
				eb := mustError(t, rec, tt.status, codePayloadTooLarge)
				mustMention(t, eb.Message, strconv.Itoa(maxBodyBytes))
				return
			}
			mustStatus(t, rec, http.StatusCreated)
			if c, _ := decodeCategory(t, rec.Body.Bytes()); c.Name != "big" {
				t.Errorf("name: got %q, want big", c.Name)
			}
		})
	}
}

func TestContentType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		contentType string // "" sends no Content-Type
		status      int
	}{
		{"text/plain", http.StatusUnsupportedMediaType},
		{"", http.StatusUnsupportedMediaType},
		{"application/xml", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"application/jsonx", http.StatusUnsupportedMediaType},
		{"application/json;", http.StatusCreated},
		{"application/json; charset=utf-8", http.StatusCreated},
		{"application/json;charset=UTF-8", http.StatusCreated},
		{"Application/JSON", http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.contentType), func(t *testing.T) {
			env := newTestEnv(t)
			header := map[string]string{"Authorization": "Bearer " + testKey}
			if tt.contentType != "" {
				header["Content-Type"] = tt.contentType
			}
			rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`, header: header})
			if tt.status != http.StatusCreated {
				eb := mustError(t, rec, tt.status, codeUnsupportedMediaType)
				mustMention(t, eb.Message, "application/json")
				if got := env.mustList(t); len(got) != 0 {
					t.Errorf("store after 415: got %d categories, want 0", len(got))
				}
				return
			}
			mustStatus(t, rec, http.StatusCreated)
		})
	}
}

func TestPanicIsInternalError(t *testing.T) {
	t.Parallel()
	const detail = "secret-panic-detail-7f3a"
	panicking := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(detail) })
	env := newTestEnv(t, withRoute(route{method: "GET", path: "/v1/test-panic", operationID: "testPanic", handler: panicking, scope: scopeRead}))

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

func TestPets(t *testing.T) {
	t.Parallel()
	const (
		wantDeprecation = "@1767225600" // 2026-01-01T00:00:00Z
		wantSunset      = "Fri, 01 Jan 2027 00:00:00 GMT"
	)
	tests := []struct {
		name   string
		now    time.Time
		status int
		code   string
	}{
		{"before sunset", beforePetsSunset, http.StatusNotImplemented, codeNotImplemented},
		{"after sunset", afterPetsSunset, http.StatusGone, codeGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, withNow(tt.now))
			rec := env.do(t, request{method: "GET", path: "/v1/pets/1"})
			mustError(t, rec, tt.status, tt.code)
			if got := rec.Header().Get("Deprecation"); got != wantDeprecation {
				t.Errorf("Deprecation: got %q, want %q", got, wantDeprecation)
			}
			if got := rec.Header().Get("Sunset"); got != wantSunset {
				t.Errorf("Sunset: got %q, want %q", got, wantSunset)
			}
		})
	}
}

func TestStoreOrdersNotImplemented(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for _, method := range []string{"GET", "HEAD"} {
		rec := env.do(t, request{method: method, path: "/v1/store/orders"})
		mustError(t, rec, http.StatusNotImplemented, codeNotImplemented)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	const (
		challengeNone    = `Bearer realm="petstore"`
		challengeInvalid = `Bearer realm="petstore", error="invalid_token"`
	)
	tests := []struct {
		name          string
		authorization string // "" sends none
		secret        string // what must not come back
		challenge     string // "" for an accepted key
	}{
		{"no header", "", "", challengeNone},
		{"wrong key", "Bearer wrong-key-5b1e", "wrong-key-5b1e", challengeInvalid},
		{"prefix of a key", "Bearer " + testKey[:len(testKey)-1], testKey[:len(testKey)-1], challengeInvalid},
		{"key plus more", "Bearer " + testKey + "x", testKey + "x", challengeInvalid},
		{"key in other case", "Bearer " + strings.ToUpper(testKey), strings.ToUpper(testKey), challengeInvalid},
		{"Basic scheme", "Basic d3JvbmctYmFzaWM=", "d3JvbmctYmFzaWM=", challengeInvalid},
		{"Basic scheme with a good key", "Basic " + testKey, "", challengeInvalid},
		{"empty key", "Bearer ", "", challengeInvalid},
		{"scheme alone", "Bearer", "", challengeInvalid},
		{"key alone", testKey, "", challengeInvalid},
		{"Bearer", "Bearer " + testKey, "", ""},
		{"lower-case scheme", "bearer " + testKey, "", ""},
		{"upper-case scheme", "BEARER " + testKey, "", ""},
		{"second key", "Bearer " + testKey2, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t)
			header := map[string]string{"Content-Type": "application/json"}
			if tt.authorization != "" {
				header["Authorization"] = tt.authorization
			}
			rec := env.do(t, request{method: "GET", path: "/v1/categories", header: header})
			if tt.challenge == "" {
				mustStatus(t, rec, http.StatusOK)
				if got := rec.Header().Get("WWW-Authenticate"); got != "" {
					t.Errorf("WWW-Authenticate on success: got %q, want none", got)
				}
				return
			}
			mustError(t, rec, http.StatusUnauthorized, codeUnauthorized)
			if got := rec.Header().Values("WWW-Authenticate"); len(got) != 1 || got[0] != tt.challenge {
				t.Errorf("WWW-Authenticate: got %q, want [%q]", got, tt.challenge)
			}
			if tt.secret != "" {
				mustNotLeak(t, rec, tt.secret)
			}
			mustNotLeak(t, rec, testKey)
		})
	}
}

// The auth check runs before the body is read, and on every protected
// operation.
func TestAuthBeforeBody(t *testing.T) {
	t.Parallel()
	noKey := map[string]string{"Content-Type": "application/json"}
	wrongKey := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer wrong-key-77"}
	tests := []struct {
		name string
		req  request
	}{
		{"bad JSON, no key", request{method: "POST", path: "/v1/categories", body: `{"name":`, header: noKey}},
		{"bad JSON, wrong key", request{method: "POST", path: "/v1/categories", body: `{"name":`, header: wrongKey}},
		{"unknown field, no key", request{method: "POST", path: "/v1/categories", body: `{"NAME":"dog"}`, header: noKey}},
		{"empty body, no key", request{method: "POST", path: "/v1/categories", header: noKey}},
		{"wrong media type, no key", request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`, header: map[string]string{"Content-Type": "text/plain"}}},
		{"valid body, wrong key", request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`, header: wrongKey}},
		{"bad id, no key", request{method: "GET", path: "/v1/categories/abc", header: noKey}},
		{"unknown id, no key", request{method: "GET", path: "/v1/categories/999", header: noKey}},
		{"orders, no key", request{method: "GET", path: "/v1/store/orders", header: noKey}},
		{"pets, no key", request{method: "GET", path: "/v1/pets/1", header: noKey}},
		{"HEAD list, no key", request{method: "HEAD", path: "/v1/categories", header: noKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, withNow(beforePetsSunset))
			mustError(t, env.do(t, tt.req), http.StatusUnauthorized, codeUnauthorized)
			if got := env.mustList(t); len(got) != 0 {
				t.Errorf("store after 401: got %d categories, want 0", len(got))
			}
		})
	}
	t.Run("too large, declared, no key", func(t *testing.T) {
		env := newTestEnv(t)
		r := httptest.NewRequest("POST", "/v1/categories", strings.NewReader(`{}`))
		r.ContentLength = 2 << 20
		r.Header.Set("Content-Type", "application/json")
		mustError(t, env.serveRequest(t, r), http.StatusUnauthorized, codeUnauthorized)
	})
}

// Routing answers before auth: 404 and 405 need no key.
func TestRoutingBeforeAuth(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	noKey := map[string]string{"Content-Type": "application/json"}
	wrongKey := map[string]string{"Authorization": "Bearer wrong-key-routing"}
	for _, header := range []map[string]string{noKey, wrongKey} {
		rec := env.do(t, request{method: "GET", path: "/v1/nope", header: header})
		mustError(t, rec, http.StatusNotFound, codeNotFound)

		rec = env.do(t, request{method: "DELETE", path: "/v1/categories", header: header})
		mustError(t, rec, http.StatusMethodNotAllowed, codeMethodNotAllowed)
		if got := rec.Header().Get("Allow"); got != "GET, HEAD, POST" {
			t.Errorf("Allow: got %q, want %q", got, "GET, HEAD, POST")
		}
		if got := rec.Header().Get("WWW-Authenticate"); got != "" {
			t.Errorf("405 carries WWW-Authenticate %q, want none", got)
		}
	}
}

func TestHealthzNeedsNoAuth(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for _, header := range []map[string]string{{}, {"Authorization": "Bearer wrong-key-health"}, nil} {
		rec := env.do(t, request{method: "GET", path: "/healthz", header: header})
		mustStatus(t, rec, http.StatusOK)
		if got := rec.Body.String(); got != `{"status":"ok"}` {
			t.Errorf("body: got %s, want {\"status\":\"ok\"}", got)
		}
	}
}

func TestListEmpty(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	rec := env.do(t, request{method: "GET", path: "/v1/categories"})
	mustStatus(t, rec, http.StatusOK)
	if got := rec.Body.String(); got != "[]" {
		t.Errorf("body: got %q, want []", got)
	}
}

func TestCreateCategory(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	ref := func(s string) *string { return &s }
	tests := []struct {
		name     string
		body     string
		wantName string
		wantDesc *string // nil: the member must be absent
	}{
		{"name only", `{"name":"dog"}`, "dog", nil},
		{"name trimmed", `{"name":"  \t cat \n"}`, "cat", nil},
		{"with description", `{"name":"rabbit","description":"long ears"}`, "rabbit", ref("long ears")},
		{"description first", `{"description":"scales","name":"fish"}`, "fish", ref("scales")},
		{"empty description", `{"name":"bird","description":""}`, "bird", ref("")},
		{"non-ASCII", `{"name":"  Chat  ","description":"félin, 猫"}`, "Chat", ref("félin, 猫")},
	}
	var lastID int64
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := postCategory(t, env, tt.body)
			mustStatus(t, rec, http.StatusCreated)
			c, members := decodeCategory(t, rec.Body.Bytes())
			if i == 0 && c.ID != 1 {
				t.Errorf("first id: got %d, want 1", c.ID)
			}
			if c.ID <= lastID {
				t.Errorf("id: got %d, want more than the previous %d", c.ID, lastID)
			}
			lastID = c.ID
			if c.Name != tt.wantName {
				t.Errorf("name: got %q, want %q", c.Name, tt.wantName)
			}
			if _, has := members["id"]; !has {
				t.Errorf("body has no id: %s", rec.Body)
			}
			_, hasDesc := members["description"]
			switch {
			case tt.wantDesc == nil && hasDesc:
				t.Errorf("description: got %s, want the member absent", members["description"])
			case tt.wantDesc != nil && (c.Description == nil || *c.Description != *tt.wantDesc):
				t.Errorf("description: got %s, want %q", members["description"], *tt.wantDesc)
			}
			if len(members) > 3 {
				t.Errorf("body has extra members: %s", rec.Body)
			}
			wantLocation := "/v1/categories/" + strconv.FormatInt(c.ID, 10)
			if got := rec.Header().Get("Location"); got != wantLocation {
				t.Errorf("Location: got %q, want %q", got, wantLocation)
			}

			// The category is there at its Location, byte for byte.
			got := env.do(t, request{method: "GET", path: wantLocation})
			mustStatus(t, got, http.StatusOK)
			if got.Body.String() != rec.Body.String() {
				t.Errorf("GET %s: got %s, want %s", wantLocation, got.Body, rec.Body)
			}
		})
	}
}

func TestIDsIncreaseAndListIsSorted(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	names := []string{"zebra", "ant", "mouse", "cat", "bee", "yak", "dog"}
	var created []categoryBody
	for i, name := range names {
		c := env.mustCreate(t, name)
		if i == 0 && c.ID != 1 {
			t.Errorf("first id: got %d, want 1", c.ID)
		}
		if i > 0 && c.ID <= created[i-1].ID {
			t.Errorf("id of %q: got %d, want more than %d", name, c.ID, created[i-1].ID)
		}
		created = append(created, c)
		// Rejected creates in between must not disturb the sequence.
		mustError(t, postCategory(t, env, nameBody(strings.ToUpper(name))), http.StatusConflict, codeConflict)
		mustError(t, postCategory(t, env, `{"name":""}`), http.StatusBadRequest, codeInvalidField)
	}
	list := env.mustList(t)
	if !slices.Equal(list, created) {
		t.Errorf("list: got %+v, want %+v", list, created)
	}
	if !slices.IsSortedFunc(list, func(a, b categoryBody) int { return int(a.ID - b.ID) }) {
		t.Errorf("list not sorted by id: %+v", list)
	}
	for _, c := range created {
		rec := env.do(t, request{method: "GET", path: "/v1/categories/" + strconv.FormatInt(c.ID, 10)})
		mustStatus(t, rec, http.StatusOK)
		if got, _ := decodeCategory(t, rec.Body.Bytes()); got != c {
			t.Errorf("GET id %d: got %+v, want %+v", c.ID, got, c)
		}
	}
}

// HEAD goes through a real server: net/http, not the handler, drops the
// body of a HEAD answer, and only a server shows what a client receives.
func TestHead(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	srv := httptest.NewServer(env.handler)
	defer srv.Close()

	send := func(t *testing.T, method, path string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	for _, path := range []string{"/v1/categories", "/v1/categories/1", "/healthz"} {
		t.Run(path, func(t *testing.T) {
			get, getBody := send(t, "GET", path)
			head, headBody := send(t, "HEAD", path)
			if head.StatusCode != http.StatusOK || get.StatusCode != http.StatusOK {
				t.Fatalf("status: got HEAD %d, GET %d, want 200", head.StatusCode, get.StatusCode)
			}
			if len(headBody) != 0 {
				t.Errorf("HEAD body: got %q, want empty", headBody)
			}
			if len(getBody) == 0 {
				t.Errorf("GET body is empty")
			}
			// Headers that differ per request by nature.
			for _, h := range []http.Header{get.Header, head.Header} {
				if h.Get("X-Request-Id") == "" {
					t.Errorf("no X-Request-Id")
				}
				h.Del("X-Request-Id")
				h.Del("Date")
			}
			if fmt.Sprint(head.Header) != fmt.Sprint(get.Header) {
				t.Errorf("headers: HEAD %v, GET %v, want the same", head.Header, get.Header)
			}
			if got, want := head.Header.Get("Content-Length"), strconv.Itoa(len(getBody)); got != want {
				t.Errorf("HEAD Content-Length: got %q, want %q", got, want)
			}
		})
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

func TestListETag(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	list := func(ifNoneMatch string) *httptest.ResponseRecorder {
		t.Helper()
		header := authJSON()
		if ifNoneMatch != "" {
			header["If-None-Match"] = ifNoneMatch
		}
		return env.do(t, request{method: "GET", path: "/v1/categories", header: header})
	}

	first := list("")
	mustStatus(t, first, http.StatusOK)
	etag := first.Header().Get("ETag")
	if etag == "" || !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) {
		t.Fatalf("ETag: got %q, want a quoted entity tag", etag)
	}
	if got := first.Header().Get("Cache-Control"); got != "private, no-cache" {
		t.Errorf("Cache-Control: got %q, want %q", got, "private, no-cache")
	}

	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		rec := list(inm)
		if rec.Code != http.StatusNotModified {
			t.Fatalf("If-None-Match %s: got %d, want 304; body %s", inm, rec.Code, rec.Body)
		}
		if rec.Body.Len() != 0 {
			t.Errorf("If-None-Match %s: 304 body: got %q, want empty", inm, rec.Body)
		}
		if got := rec.Header().Get("ETag"); got != etag {
			t.Errorf("If-None-Match %s: 304 ETag: got %q, want %q", inm, got, etag)
		}
	}
	if rec := list(`"something-else"`); rec.Code != http.StatusOK || rec.Body.String() != "[]" {
		t.Errorf("other ETag: got %d %s, want 200 []", rec.Code, rec.Body)
	}

	env.mustCreate(t, "dog")
	changed := list(etag)
	mustStatus(t, changed, http.StatusOK)
	newETag := changed.Header().Get("ETag")
	if newETag == "" || newETag == etag {
		t.Errorf("ETag after a create: got %q, want a new one (was %q)", newETag, etag)
	}
	var got []categoryBody
	if err := json.Unmarshal(changed.Body.Bytes(), &got); err != nil || len(got) != 1 {
		t.Errorf("list after a create: got %s (%v), want one category", changed.Body, err)
	}
	if rec := list(newETag); rec.Code != http.StatusNotModified {
		t.Errorf("new ETag: got %d, want 304", rec.Code)
	}

	// A rejected create leaves the list, and so its ETag, as it was.
	mustError(t, postCategory(t, env, nameBody("DOG")), http.StatusConflict, codeConflict)
	if rec := list(newETag); rec.Code != http.StatusNotModified {
		t.Errorf("ETag after a rejected create: got %d, want 304", rec.Code)
	}
}

func TestJSONEscapingRoundTrip(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	names := []string{
		`say "hi"`,
		`back\slash`,
		`<script>alert(1)</script> & co`,
		"café 日本語 🐶 Ωmega",
		"line\u2028and\u2029para",
		`mixed "\<>&é/`,
		"tab\tinside",
	}
	want := make([]categoryBody, 0, len(names))
	for _, name := range names {
		if strings.ContainsAny(name, "\t\u2028\u2029") {
			// A tab is a control character, U+2028 and U+2029 are
			// separators: rejected in a name, named in a valid JSON
			// message. A description may hold them.
			mustError(t, postCategory(t, env, nameBody(name)), http.StatusBadRequest, codeInvalidField)
			name = strings.NewReplacer("\t", " ", "\u2028", " ", "\u2029", " ").Replace(name)
		}
		desc := "about " + name + "\u2028\u2029"
		rec := postCategory(t, env, nameDescBody(name, desc))
		mustStatus(t, rec, http.StatusCreated)
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("create %q: body is not valid JSON: %s", name, rec.Body)
		}
		c, _ := decodeCategory(t, rec.Body.Bytes())
		if c.Name != name || c.Description == nil || *c.Description != desc {
			t.Errorf("create: got name %q description %v, want %q and %q", c.Name, c.Description, name, desc)
		}
		got := env.do(t, request{method: "GET", path: rec.Header().Get("Location")})
		mustStatus(t, got, http.StatusOK)
		if g, _ := decodeCategory(t, got.Body.Bytes()); g.Name != name {
			t.Errorf("get: got name %q, want %q", g.Name, name)
		}
		want = append(want, c)
	}
	list := env.mustList(t)
	if len(list) != len(want) {
		t.Fatalf("list: got %d categories, want %d", len(list), len(want))
	}
	for i := range list {
		if list[i].Name != want[i].Name || *list[i].Description != *want[i].Description {
			t.Errorf("list[%d]: got %q, want %q", i, list[i].Name, want[i].Name)
		}
	}

	// Names echoed in error messages are escaped too.
	eb := mustError(t, postCategory(t, env, nameBody(`SAY "HI"`)), http.StatusConflict, codeConflict)
	mustMention(t, eb.Message, strconv.Quote(`SAY "HI"`))
	eb = mustError(t, postCategory(t, env, `{"name":"x","<\"odd\\>":1}`), http.StatusBadRequest, codeUnknownField)
	mustMention(t, eb.Message, strconv.Quote(`<"odd\>`))
}

// mapEnv is a getenv backed by a map.
func mapEnv(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestLoadConfigKeys(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "keys")
	const fileContents = "# keys of the petstore\n\nfile-key-one-Dv7Kr\n   \n  # an indented comment\n\tfile-key-two-Ej3Ps  \r\n\n"
	if err := os.WriteFile(keyFile, []byte(fileContents), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(mapEnv(map[string]string{
		"PETSTORE_API_KEYS":      "env-key-one-Bx5Qn, env-key-two-Cw2Lp",
		"PETSTORE_API_KEYS_FILE": keyFile,
	}))
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	wantKeys := []string{"env-key-one-Bx5Qn", "env-key-two-Cw2Lp", "file-key-one-Dv7Kr", "file-key-two-Ej3Ps"}
	var gotKeys []string
	for _, k := range cfg.keys {
		if k.scopes != scopeAll {
			t.Errorf("a key written without scopes has %v, want every scope", k.scopes)
		}
		gotKeys = append(gotKeys, k.secret)
	}
	slices.Sort(gotKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("keys: got %q, want %q", gotKeys, wantKeys)
	}
	if cfg.generatedKey {
		t.Errorf("generatedKey: got true, want false with keys configured")
	}

	env := newTestEnv(t, withAcceptedKeys(cfg.keys))
	get := func(authorization string) *httptest.ResponseRecorder {
		return env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{"Authorization": authorization}})
	}
	for _, key := range wantKeys {
		if rec := get("Bearer " + key); rec.Code != http.StatusOK {
			t.Errorf("key %q: got %d, want 200", key, rec.Code)
		}
	}
	for _, key := range []string{testKey, "#", "file-key", "env-key-one-Bx5Qn,", "env-key-one", "env-key-one-Bx5Qn, env-key-two-Cw2Lp"} {
		rec := get("Bearer " + key)
		mustError(t, rec, http.StatusUnauthorized, codeUnauthorized)
	}
}

func TestLoadConfigGeneratesKey(t *testing.T) {
	t.Parallel()
	var keys []string
	for range 2 {
		cfg, err := loadConfig(mapEnv(nil))
		if err != nil {
			t.Fatalf("loadConfig: %v", err)
		}
		if !cfg.generatedKey {
			t.Errorf("generatedKey: got false, want true with no key configured")
		}
		if len(cfg.keys) != 1 {
			t.Fatalf("keys: got %d, want 1 generated key", len(cfg.keys))
		}
		key := cfg.keys[0].secret
		if cfg.keys[0].scopes != scopeAll {
			t.Errorf("the generated key has %v, want every scope", cfg.keys[0].scopes)
		}
		if len(key) != 43 {
			t.Errorf("generated key %q: got %d characters, want 43", key, len(key))
		}
		if !isBearerToken(key) {
			t.Errorf("generated key %q cannot be sent as a bearer token", key)
		}
		keys = append(keys, key)

		// The generated key works.
		env := newTestEnv(t, withAcceptedKeys(cfg.keys))
		rec := env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{"Authorization": "Bearer " + key}})
		mustStatus(t, rec, http.StatusOK)
	}
	if keys[0] == keys[1] {
		t.Errorf("two starts generated the same key %q", keys[0])
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

// A body shorter than its declared length is the client's mistake (400),
// and bodies over the first read size arrive whole.
func TestDeclaredBodyLength(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	short := httptest.NewRequest("POST", "/v1/categories", strings.NewReader(`{"name":"dog"}`))
	short.ContentLength = 100
	short.Header.Set("Authorization", "Bearer "+testKey)
	short.Header.Set("Content-Type", "application/json")
	mustError(t, env.serveRequest(t, short), http.StatusBadRequest, codeInvalidJSON)

	desc := strings.Repeat("d", 1000)
	padding := strings.Repeat(" ", bodybudget.Block) // a body over one block, valid JSON
	body := `{"name":"cat",` + padding + `"description":"` + desc + `"}`
	long := httptest.NewRequest("POST", "/v1/categories", strings.NewReader(body))
	long.Header.Set("Authorization", "Bearer "+testKey)
	long.Header.Set("Content-Type", "application/json")
	rec := env.serveRequest(t, long)
	mustStatus(t, rec, http.StatusCreated)
	if c, _ := decodeCategory(t, rec.Body.Bytes()); c.Name != "cat" || c.Description == nil || *c.Description != desc {
		t.Errorf("created %+v from a %d-byte body", c, len(body))
	}
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
	env := newTestEnv(t, withRoute(route{method: "GET", path: "/v1/test-partial", operationID: "testPartial", handler: partial, scope: scopeRead}))
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
