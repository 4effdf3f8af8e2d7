package main

import (
	"net/http"
	"testing"
	"time"

	"petstore/internal/ratelimit"
	"petstore/internal/testkit"
)

// testRateLimit returns the buckets of the budget spec on the clock now.
func testRateLimit(t testing.TB, spec string, now func() time.Time) *ratelimit.Buckets {
	t.Helper()
	budget, err := ratelimit.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ratelimit.New(budget, now)
}

// Through the real mux: a key over its budget gets 429 with Retry-After,
// RateLimit counts down on every authenticated answer, another key is not
// affected, and the budget refills on time (an injected clock, no sleeps).
func TestRateLimitThroughTheMux(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock()
	env := newTestEnv(t, withRateLimit(testRateLimit(t, "2/s,burst=3", clock.Now)))
	one := map[string]string{"Authorization": "Bearer " + testKey}
	two := map[string]string{"Authorization": "Bearer " + testKey2}
	for i, want := range []string{`"default";r=2;t=1`, `"default";r=1;t=1`, `"default";r=0;t=2`} {
		rec := env.do(t, request{method: "GET", path: "/v1/categories", header: one})
		if rec.Code != http.StatusOK {
			t.Fatalf("request %d: got %d, want 200", i+1, rec.Code)
		}
		if got := rec.Header().Get("RateLimit"); got != want {
			t.Errorf("request %d: RateLimit: got %q, want %q", i+1, got, want)
		}
		if got := rec.Header().Get("RateLimit-Policy"); got != `"default";q=2;w=1` {
			t.Errorf("request %d: RateLimit-Policy: got %q", i+1, got)
		}
		if rec.Header().Get("Retry-After") != "" {
			t.Errorf("request %d: Retry-After on an answer that was not refused", i+1)
		}
	}
	// Spent: refused before the handler runs, even a create.
	rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`})
	mustError(t, rec, http.StatusTooManyRequests, codeRateLimited)
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After: got %q, want 1 (half a second to the next token, rounded up)", got)
	}
	if got := rec.Header().Get("RateLimit"); got != `"default";r=0;t=2` {
		t.Errorf("RateLimit of the 429: got %q", got)
	}
	// Another key has its own budget.
	if rec := env.do(t, request{method: "GET", path: "/v1/categories", header: two}); rec.Code != http.StatusOK || rec.Header().Get("RateLimit") != `"default";r=2;t=1` {
		t.Errorf("the second key: got %d, RateLimit %q; want 200 with its whole budget", rec.Code, rec.Header().Get("RateLimit"))
	}
	// Unauthenticated answers and public routes carry no RateLimit.
	if rec := env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{}}); rec.Header().Get("RateLimit") != "" {
		t.Errorf("a 401 carries RateLimit")
	}
	if rec := env.do(t, request{method: "GET", path: "/healthz", header: map[string]string{}}); rec.Header().Get("RateLimit") != "" {
		t.Errorf("/healthz carries RateLimit")
	}
	// Half a second later one token is back, and only one.
	clock.Advance(499 * time.Millisecond)
	mustError(t, env.do(t, request{method: "GET", path: "/v1/categories", header: one}), http.StatusTooManyRequests, codeRateLimited)
	clock.Advance(time.Millisecond)
	if rec := env.do(t, request{method: "GET", path: "/v1/categories", header: one}); rec.Code != http.StatusOK {
		t.Errorf("after the refill time of one token: got %d, want 200", rec.Code)
	}
	mustError(t, env.do(t, request{method: "GET", path: "/v1/categories", header: one}), http.StatusTooManyRequests, codeRateLimited)
}
