package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Tests of requireKey (auth.go) through the real mux: which Authorization
// headers are accepted, the challenge of a refusal, and that the check comes
// after routing and before the body is read.

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
