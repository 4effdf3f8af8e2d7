package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"petstore/internal/apikey"
	"petstore/internal/cors"
)

// withCORS serves with PETSTORE_CORS_ORIGINS set to origins.
func withCORS(t testing.TB, origins string) testOption {
	p, err := cors.Parse(origins)
	if err != nil || p == nil {
		t.Fatalf("cors.Parse(%q) = %v, %v", origins, p, err)
	}
	return func(d *deps, _ *[]route) { d.cors = p }
}

const (
	testOrigin      = "https://app.example.com"
	wantExposed     = "ETag, Location, Link, Retry-After, RateLimit, RateLimit-Policy, X-Request-Id, Idempotent-Replayed, Deprecation, Sunset, WWW-Authenticate"
	wantAllowedHdrs = "Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id"
)

func TestCORSOriginsConfig(t *testing.T) {
	t.Parallel()
	good := []struct{ in, want string }{
		{"https://app.example.com", "https://app.example.com"},
		{" https://a.example , http://127.0.0.1:3000 ", "http://127.0.0.1:3000,https://a.example"},
		{"HTTPS://App.Example.COM", "https://app.example.com"},
		{"https://app.example.com:443,http://b.example:80", "http://b.example,https://app.example.com"},
		{"https://app.example.com:8443", "https://app.example.com:8443"},
		{"http://[::1]:8080", "http://[::1]:8080"},
		{"https://xn--bcher-kva.example,http://my_host.internal:65535", "http://my_host.internal:65535,https://xn--bcher-kva.example"},
		{"*", "*"},
		{" * ", "*"},
	}
	for _, tt := range good {
		cfg, err := loadConfig(mapEnv(map[string]string{"PETSTORE_CORS_ORIGINS": tt.in}))
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if got := cfg.cors.String(); got != tt.want {
			t.Errorf("%q: origins %q, want %q", tt.in, got, tt.want)
		}
	}
	if cfg, err := loadConfig(mapEnv(nil)); err != nil || cfg.cors != nil {
		t.Errorf("unset: got %v, %v; want CORS off", cfg.cors, err)
	}
	bad := []string{
		"app.example.com", "https://app.example.com/", "https://app.example.com/app",
		"https://app.example.com?x=1", "https://app.example.com?", "https://app.example.com#",
		"https://user@app.example.com", "https://", "https://app.example.com:", "null",
		"https://a.example,,https://b.example", "https://a.example,*", "*,https://a.example",
		"https://a.example,", "mailto:someone@example.com", "https://a b.example",
		"https://*.example.com", "https://app.*", "https://a.example:99999", "https://a.example:0",
		"https://a.example:080", "https://a.example:+80", "https://bücher.example", "https://a..example",
		"https://.example", "https://[::1", "https://[zz::1]:80",
	}
	for _, v := range bad {
		_, err := loadConfig(mapEnv(map[string]string{"PETSTORE_CORS_ORIGINS": v}))
		if err == nil || !strings.HasPrefix(err.Error(), "PETSTORE_CORS_ORIGINS: ") {
			t.Errorf("%q: got %v, want an error naming PETSTORE_CORS_ORIGINS", v, err)
		}
	}
}

// corsHeaderNames are the headers CORS may add to an answer.
var corsHeaderNames = []string{
	"Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Access-Control-Allow-Methods",
	"Access-Control-Allow-Headers", "Access-Control-Max-Age", "Access-Control-Allow-Credentials", "Vary",
}

func checkNoCORSHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	for _, name := range corsHeaderNames {
		if v, ok := h[name]; ok {
			t.Errorf("%s: %s: %q, want none", what, name, v)
		}
	}
}

func TestCORSOffChangesNothing(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	preflight := map[string]string{"Origin": testOrigin, "Access-Control-Request-Method": "POST"}
	rec := env.do(t, request{method: "OPTIONS", path: "/v1/categories", header: preflight})
	mustError(t, rec, http.StatusMethodNotAllowed, codeMethodNotAllowed)
	if got := rec.Header().Get("Allow"); got != "GET, HEAD, POST" {
		t.Errorf("Allow: %q", got)
	}
	checkNoCORSHeaders(t, "preflight", rec.Header())
	h := authJSON()
	h["Origin"] = testOrigin
	for _, path := range []string{"/v1/categories", "/v1/categories/9", "/nowhere", "/healthz"} {
		checkNoCORSHeaders(t, "GET "+path, env.do(t, request{method: "GET", path: path, header: h}).Header())
	}
}

func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, withCORS(t, "https://app.example.com, http://127.0.0.1:3000"))
	methodsOf := map[string][]string{}
	for _, rt := range routes(deps{}, nil, nil, nil) {
		methodsOf[rt.path] = append(methodsOf[rt.path], rt.methods()...)
	}
	if len(methodsOf) < 8 {
		t.Fatalf("only %d paths in the route table", len(methodsOf))
	}
	for path, list := range methodsOf {
		slices.Sort(list)
		methods := strings.Join(list, ", ")
		path := strings.NewReplacer("{id}", "7", "{petId}", "3").Replace(path)
		for _, method := range strings.Split(methods, ", ") {
			// No key: a preflight never carries one.
			rec := env.do(t, request{method: "OPTIONS", path: path, header: map[string]string{
				"Origin": "http://127.0.0.1:3000", "Access-Control-Request-Method": method,
				"Access-Control-Request-Headers": "authorization,content-type",
			}})
			if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
				t.Errorf("OPTIONS %s for %s: %d %q, want 204 and no body", path, method, rec.Code, rec.Body)
				continue
			}
			want := map[string]string{
				"Access-Control-Allow-Origin":  "http://127.0.0.1:3000",
				"Access-Control-Allow-Methods": methods,
				"Access-Control-Allow-Headers": wantAllowedHdrs,
				"Access-Control-Max-Age":       "7200",
				"Vary":                         "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
			}
			for name, v := range want {
				if got := rec.Header().Values(name); len(got) != 1 || got[0] != v {
					t.Errorf("OPTIONS %s for %s: %s: %q, want %q", path, method, name, got, v)
				}
			}
			if _, ok := rec.Header()["Access-Control-Allow-Credentials"]; ok {
				t.Errorf("OPTIONS %s: Access-Control-Allow-Credentials present", path)
			}
		}
	}
}

func TestCORSPreflightRefusals(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, withCORS(t, testOrigin))
	tests := []struct {
		name, path, origin, method string
		status                     int
		code, allow                string
		corsHeaders                bool
	}{
		{"other origin", "/v1/categories", "https://evil.example", "POST", 403, codeOriginNotAllowed, "", false},
		{"origin differing in port", "/v1/categories", "https://app.example.com:8443", "GET", 403, codeOriginNotAllowed, "", false},
		{"origin differing in scheme", "/healthz", "http://app.example.com", "GET", 403, codeOriginNotAllowed, "", false},
		{"null origin", "/v1/categories", "null", "GET", 403, codeOriginNotAllowed, "", false},
		{"method the path lacks", "/v1/categories/1", testOrigin, "POST", 405, codeMethodNotAllowed, "GET, HEAD", true},
		{"method the path lacks, other origin", "/v1/categories/1", "https://evil.example", "DELETE", 405, codeMethodNotAllowed, "GET, HEAD", false},
		{"not a preflight: no request method", "/v1/categories", testOrigin, "", 405, codeMethodNotAllowed, "GET, HEAD, POST", true},
		{"not a preflight: no origin", "/v1/categories", "", "GET", 405, codeMethodNotAllowed, "GET, HEAD, POST", false},
		{"unknown path", "/v1/nothing", testOrigin, "GET", 404, codeNotFound, "", true},
		{"unclean path", "/v1//categories", testOrigin, "GET", 404, codeNotFound, "", true},
	}
	for _, tt := range tests {
		h := map[string]string{}
		if tt.origin != "" {
			h["Origin"] = tt.origin
		}
		if tt.method != "" {
			h["Access-Control-Request-Method"] = tt.method
		}
		rec := env.do(t, request{method: "OPTIONS", path: tt.path, header: h})
		mustError(t, rec, tt.status, tt.code)
		if got := rec.Header().Get("Allow"); got != tt.allow {
			t.Errorf("%s: Allow %q, want %q", tt.name, got, tt.allow)
		}
		if got := rec.Header().Get("Access-Control-Allow-Origin"); (got == testOrigin) != tt.corsHeaders {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want it: %v", tt.name, got, tt.corsHeaders)
		}
		for _, name := range []string{"Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age"} {
			if v, ok := rec.Header()[name]; ok {
				t.Errorf("%s: %s: %q on a refusal", tt.name, name, v)
			}
		}
	}
}

// TestCORSOnEveryAnswer checks that every kind of answer to a page of an
// allowed origin, errors included, lets the page read it, and that other
// origins get none of it.
func TestCORSOnEveryAnswer(t *testing.T) {
	t.Parallel()
	panics := route{method: "GET", path: "/v1/test/panic", handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("test") }), scope: apikey.Read}
	env := newTestEnv(t, withCORS(t, testOrigin), withRoute(panics))
	dog := env.mustCreate(t, "dog")
	keyed := func(extra ...string) map[string]string {
		h := authJSON()
		for i := 0; i+1 < len(extra); i += 2 {
			h[extra[i]] = extra[i+1]
		}
		return h
	}
	for i, origin := range []string{testOrigin, "https://evil.example", ""} {
		etag := env.do(t, request{method: "GET", path: "/v1/categories"}).Header().Get("ETag")
		answers := []struct {
			req    request
			status int
		}{
			{request{method: "GET", path: "/v1/categories", header: keyed()}, 200},
			{request{method: "HEAD", path: "/v1/categories", header: keyed()}, 200},
			{request{method: "GET", path: "/v1/categories", header: keyed("If-None-Match", etag)}, 304},
			{request{method: "POST", path: "/v1/categories", body: `{"name":"cat` + strconv.Itoa(i) + `"}`, header: keyed()}, 201},
			{request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`, header: keyed()}, 409},
			{request{method: "POST", path: "/v1/categories", body: `{"name":"emu"}`, header: map[string]string{"Content-Type": "application/json"}}, 401},
			{request{method: "GET", path: "/v1/categories?limt=1", header: keyed()}, 400},
			{request{method: "GET", path: "/v1/categories/" + strconv.FormatInt(dog.ID, 10), header: keyed()}, 200},
			{request{method: "GET", path: "/v1/categories/99", header: keyed()}, 404},
			{request{method: "DELETE", path: "/v1/categories", header: keyed()}, 405},
			{request{method: "GET", path: "/v1/pets/1", header: keyed()}, 501},
			{request{method: "GET", path: "/v1/test/panic", header: keyed()}, 500},
			{request{method: "GET", path: "/nowhere", header: keyed()}, 404},
			{request{method: "GET", path: "/healthz", header: map[string]string{}}, 200},
			{request{method: "GET", path: "/v1/openapi.json", header: map[string]string{}}, 200},
		}
		for _, a := range answers {
			a.req.header["Origin"] = origin
			if origin == "" {
				delete(a.req.header, "Origin")
			}
			rec := env.do(t, a.req)
			what := a.req.method + " " + a.req.path + " from " + origin
			if rec.Code != a.status {
				t.Errorf("%s: status %d, want %d", what, rec.Code, a.status)
			}
			checkCORSAnswer(t, what, rec, origin == testOrigin)
		}
	}
}

// checkCORSAnswer checks the CORS headers of an answer to a request from an
// allowed origin (allowed) or from any other (or none).
func checkCORSAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder, allowed bool) {
	t.Helper()
	h := rec.Header()
	want := map[string]string{"Vary": "Origin"}
	if allowed {
		want["Access-Control-Allow-Origin"] = testOrigin
		want["Access-Control-Expose-Headers"] = wantExposed
	}
	for _, name := range corsHeaderNames {
		got, ok := h[name]
		switch {
		case want[name] == "" && ok:
			t.Errorf("%s: %s: %q, want none", what, name, got)
		case want[name] != "" && (len(got) != 1 || got[0] != want[name]):
			t.Errorf("%s: %s: %q, want %q", what, name, got, want[name])
		}
	}
}

func TestCORSAnyOrigin(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, withCORS(t, "*"))
	rec := env.do(t, request{method: "OPTIONS", path: "/v1/categories", header: map[string]string{
		"Origin": "https://anyone.example", "Access-Control-Request-Method": "POST",
	}})
	if rec.Code != http.StatusNoContent {
		t.Fatalf("preflight: %d %s", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("preflight: Access-Control-Allow-Origin %q, want *", got)
	}
	if v, ok := rec.Header()["Vary"]; ok {
		t.Errorf("preflight: Vary %q, want none with *", v)
	}
	h := authJSON()
	h["Origin"] = "http://localhost:5173"
	for _, path := range []string{"/v1/categories", "/v1/categories/5", "/healthz"} {
		rec := env.do(t, request{method: "GET", path: path, header: h})
		if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("GET %s: Access-Control-Allow-Origin %q, want *", path, got)
		}
		if got := rec.Header().Get("Access-Control-Expose-Headers"); got != wantExposed {
			t.Errorf("GET %s: Access-Control-Expose-Headers %q", path, got)
		}
		for _, name := range []string{"Vary", "Access-Control-Allow-Credentials"} {
			if v, ok := rec.Header()[name]; ok {
				t.Errorf("GET %s: %s %q, want none", path, name, v)
			}
		}
	}
}
