package ratelimit

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/testkit"
)

func TestParseRateLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want Budget
	}{
		{"100/s", Budget{100, time.Second, 100}},
		{"6000/m", Budget{6000, time.Minute, 6000}},
		{"10/s,burst=25", Budget{10, time.Second, 25}},
		{" 10/s , burst=1", Budget{10, time.Second, 1}},
	} {
		got, err := Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q): got %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"100", "0/s", "-1/s", "x/s", "10/h", "10/s,burst=0", "10/s,burst=x", "10/s,bust=3", "10/s,"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("Parse(%q): got %v, want an error quoting it", bad, err)
		}
	}
}

// A bucket spends its burst, refuses with the time until the next token,
// refills at the rate, and other keys have their own.
func TestLimiterTokenBucket(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock()
	l := New(Budget{quota: 2, window: time.Second, burst: 3}, clock.Now)
	a, b := [32]byte(sha256.Sum256([]byte("a"))), [32]byte(sha256.Sum256([]byte("b")))
	for i, want := range []int{2, 1, 0} {
		v := l.Take(a)
		if !v.Allowed || v.remaining != want {
			t.Fatalf("request %d: got %+v, want allowed with %d left", i+1, v, want)
		}
	}
	v := l.Take(a)
	if v.Allowed || v.retryAfter != 500*time.Millisecond || v.reset != 1500*time.Millisecond {
		t.Fatalf("over budget: got %+v, want refused, retry after 500ms, full in 1.5s", v)
	}
	if v := l.Take(b); !v.Allowed || v.remaining != 2 {
		t.Fatalf("another key: got %+v, want allowed with 2 left", v)
	}
	clock.Advance(499 * time.Millisecond)
	if v := l.Take(a); v.Allowed {
		t.Fatalf("1 ms before the next token: allowed")
	}
	clock.Advance(time.Millisecond)
	if v := l.Take(a); !v.Allowed || v.remaining != 0 {
		t.Fatalf("at the next token: got %+v, want allowed with 0 left", v)
	}
	clock.Advance(10 * time.Second)
	if v := l.Take(a); !v.Allowed || v.remaining != 2 {
		t.Fatalf("after a long pause: got %+v, want the burst back (2 left after this one)", v)
	}
}

// Buckets of keys that went quiet are dropped once full, so memory follows
// the active keys; a dropped key starts again from a full bucket.
func TestLimiterSweepDropsFullBuckets(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock()
	l := New(Budget{quota: 10, window: time.Second, burst: 10}, clock.Now)
	for i := range 1000 {
		l.Take([32]byte(sha256.Sum256([]byte{byte(i), byte(i >> 8)})))
	}
	active := [32]byte(sha256.Sum256([]byte("active")))
	for range 10 {
		l.Take(active)
	}
	if left := l.sweep(); left != 1001 {
		t.Fatalf("sweep at once: %d buckets left, want 1001 (none full yet)", left)
	}
	clock.Advance(l.perToken / 2) // one token spent: half of it back
	if left := l.sweep(); left != 1001 {
		t.Fatalf("sweep before any bucket refilled: %d left, want 1001", left)
	}
	clock.Advance(l.refillTime())
	l.Take(active)
	if left := l.sweep(); left != 1 {
		t.Fatalf("sweep after the refill time: %d left, want only the active key's", left)
	}
	if v := l.Take([32]byte(sha256.Sum256([]byte{0, 0}))); !v.Allowed || v.remaining != 9 {
		t.Fatalf("a dropped key: got %+v, want a full bucket", v)
	}
}

func TestLimiterHeaders(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock()
	l := New(Budget{quota: 60, window: time.Minute, burst: 2}, clock.Now)
	key := [32]byte(sha256.Sum256([]byte("k")))
	h := map[string][]string{}
	l.Headers(h, l.Take(key))
	if got := h["Ratelimit-Policy"]; len(got) != 1 || got[0] != `"default";q=60;w=60` {
		t.Errorf("RateLimit-Policy: got %q", got)
	}
	if got := h["Ratelimit"]; len(got) != 1 || got[0] != `"default";r=1;t=1` {
		t.Errorf("RateLimit: got %q, want r=1;t=1", got)
	}
	if _, ok := h["Retry-After"]; ok {
		t.Errorf("Retry-After on an allowed request")
	}
	l.Take(key)
	h = map[string][]string{}
	l.Headers(h, l.Take(key))
	if got := h["Ratelimit"]; len(got) != 1 || got[0] != `"default";r=0;t=2` {
		t.Errorf("RateLimit when spent: got %q, want r=0;t=2", got)
	}
	if got := h["Retry-After"]; len(got) != 1 || got[0] != "1" {
		t.Errorf("Retry-After: got %q, want 1", got)
	}
}
