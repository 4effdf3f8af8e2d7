package main

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testClock is a clock a test moves by hand.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *testClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestParseRateLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want rateLimit
	}{
		{"100/s", rateLimit{100, time.Second, 100}},
		{"6000/m", rateLimit{6000, time.Minute, 6000}},
		{"10/s,burst=25", rateLimit{10, time.Second, 25}},
		{" 10/s , burst=1", rateLimit{10, time.Second, 1}},
	} {
		got, err := parseRateLimit(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("parseRateLimit(%q): got %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"100", "0/s", "-1/s", "x/s", "10/h", "10/s,burst=0", "10/s,burst=x", "10/s,bust=3", "10/s,"} {
		if _, err := parseRateLimit(bad); err == nil || !strings.Contains(err.Error(), "PETSTORE_RATE_LIMIT") {
			t.Errorf("parseRateLimit(%q): got %v, want an error naming PETSTORE_RATE_LIMIT", bad, err)
		}
	}
}

// A bucket spends its burst, refuses with the time until the next token,
// refills at the rate, and other keys have their own.
func TestLimiterTokenBucket(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	l := newLimiter(rateLimit{quota: 2, window: time.Second, burst: 3}, clock.now)
	a, b := keyDigest(sha256.Sum256([]byte("a"))), keyDigest(sha256.Sum256([]byte("b")))
	for i, want := range []int{2, 1, 0} {
		v := l.take(a)
		if !v.allowed || v.remaining != want {
			t.Fatalf("request %d: got %+v, want allowed with %d left", i+1, v, want)
		}
	}
	v := l.take(a)
	if v.allowed || v.retryAfter != 500*time.Millisecond || v.reset != 1500*time.Millisecond {
		t.Fatalf("over budget: got %+v, want refused, retry after 500ms, full in 1.5s", v)
	}
	if v := l.take(b); !v.allowed || v.remaining != 2 {
		t.Fatalf("another key: got %+v, want allowed with 2 left", v)
	}
	clock.advance(499 * time.Millisecond)
	if v := l.take(a); v.allowed {
		t.Fatalf("1 ms before the next token: allowed")
	}
	clock.advance(time.Millisecond)
	if v := l.take(a); !v.allowed || v.remaining != 0 {
		t.Fatalf("at the next token: got %+v, want allowed with 0 left", v)
	}
	clock.advance(10 * time.Second)
	if v := l.take(a); !v.allowed || v.remaining != 2 {
		t.Fatalf("after a long pause: got %+v, want the burst back (2 left after this one)", v)
	}
}

// Buckets of keys that went quiet are dropped once full, so memory follows
// the active keys; a dropped key starts again from a full bucket.
func TestLimiterSweepDropsFullBuckets(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	l := newLimiter(rateLimit{quota: 10, window: time.Second, burst: 10}, clock.now)
	for i := range 1000 {
		l.take(keyDigest(sha256.Sum256([]byte{byte(i), byte(i >> 8)})))
	}
	active := keyDigest(sha256.Sum256([]byte("active")))
	for range 10 {
		l.take(active)
	}
	if left := l.sweep(); left != 1001 {
		t.Fatalf("sweep at once: %d buckets left, want 1001 (none full yet)", left)
	}
	clock.advance(l.perToken / 2) // one token spent: half of it back
	if left := l.sweep(); left != 1001 {
		t.Fatalf("sweep before any bucket refilled: %d left, want 1001", left)
	}
	clock.advance(l.refillTime())
	l.take(active)
	if left := l.sweep(); left != 1 {
		t.Fatalf("sweep after the refill time: %d left, want only the active key's", left)
	}
	if v := l.take(keyDigest(sha256.Sum256([]byte{0, 0}))); !v.allowed || v.remaining != 9 {
		t.Fatalf("a dropped key: got %+v, want a full bucket", v)
	}
}

func TestLimiterHeaders(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	l := newLimiter(rateLimit{quota: 60, window: time.Minute, burst: 2}, clock.now)
	key := keyDigest(sha256.Sum256([]byte("k")))
	h := map[string][]string{}
	l.headers(h, l.take(key))
	if got := h["Ratelimit-Policy"]; len(got) != 1 || got[0] != `"default";q=60;w=60` {
		t.Errorf("RateLimit-Policy: got %q", got)
	}
	if got := h["Ratelimit"]; len(got) != 1 || got[0] != `"default";r=1;t=1` {
		t.Errorf("RateLimit: got %q, want r=1;t=1", got)
	}
	if _, ok := h["Retry-After"]; ok {
		t.Errorf("Retry-After on an allowed request")
	}
	l.take(key)
	h = map[string][]string{}
	l.headers(h, l.take(key))
	if got := h["Ratelimit"]; len(got) != 1 || got[0] != `"default";r=0;t=2` {
		t.Errorf("RateLimit when spent: got %q, want r=0;t=2", got)
	}
	if got := h["Retry-After"]; len(got) != 1 || got[0] != "1" {
		t.Errorf("Retry-After: got %q, want 1", got)
	}
}

// Through the real mux: a key over its budget gets 429 with Retry-After,
// RateLimit counts down on every authenticated answer, another key is not
// affected, and the budget refills on time (an injected clock, no sleeps).
func TestRateLimitThroughTheMux(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	env := newTestEnv(t, withLimiter(newLimiter(rateLimit{quota: 2, window: time.Second, burst: 3}, clock.now)))
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
	clock.advance(499 * time.Millisecond)
	mustError(t, env.do(t, request{method: "GET", path: "/v1/categories", header: one}), http.StatusTooManyRequests, codeRateLimited)
	clock.advance(time.Millisecond)
	if rec := env.do(t, request{method: "GET", path: "/v1/categories", header: one}); rec.Code != http.StatusOK {
		t.Errorf("after the refill time of one token: got %d, want 200", rec.Code)
	}
	mustError(t, env.do(t, request{method: "GET", path: "/v1/categories", header: one}), http.StatusTooManyRequests, codeRateLimited)
}
