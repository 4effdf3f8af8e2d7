// Package ratelimit keeps a request budget per API key: a token bucket
// each (Buckets), refilled at the budget's rate up to its burst, and the
// RateLimit-Policy, RateLimit and Retry-After headers that say what is left
// (draft-ietf-httpapi-ratelimit-headers). Keys never wait for each other,
// and memory follows the keys active within one refill time, however many
// keys there are. Everything here is safe for concurrent use.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Budget is a request budget per API key: quota requests per window on
// average, up to burst at once.
type Budget struct {
	quota  int
	window time.Duration // a second or a minute
	burst  int
}

// Parse reads "N/s" or "N/m", optionally followed by ",burst=B". Its
// errors quote v; the caller names where v came from.
func Parse(v string) (Budget, error) {
	spec, burst, hasBurst := strings.Cut(v, ",")
	n, unit, ok := strings.Cut(strings.TrimSpace(spec), "/")
	var rl Budget
	var err error
	if rl.quota, err = strconv.Atoi(n); !ok || err != nil || rl.quota < 1 {
		return rl, fmt.Errorf("%q is not a limit such as 100/s or 6000/m,burst=200", v)
	}
	switch unit {
	case "s":
		rl.window = time.Second
	case "m":
		rl.window = time.Minute
	default:
		return rl, fmt.Errorf("%q: the window must be s (a second) or m (a minute)", v)
	}
	rl.burst = rl.quota
	if hasBurst {
		b, found := strings.CutPrefix(strings.TrimSpace(burst), "burst=")
		if rl.burst, err = strconv.Atoi(b); !found || err != nil || rl.burst < 1 {
			return rl, fmt.Errorf("%q: after the comma comes burst=B, B a positive whole number", v)
		}
	}
	return rl, nil
}

// Buckets keeps a token bucket per API key. Buckets are found in a sync.Map
// (no lock to read an existing one) and each has its own mutex, so keys never
// wait for each other. A bucket that has refilled is dropped by sweep: a full
// bucket is what a new one would be, so memory follows the keys active in the
// last refill time, whatever the number of keys.
type Buckets struct {
	limit    Budget
	perToken time.Duration // time to earn one token back
	now      func() time.Time
	buckets  sync.Map // [32]byte → *bucket
	policy   []string // the RateLimit-Policy header value
}

type bucket struct {
	mu      sync.Mutex
	tokens  float64
	updated time.Time
	dropped bool // removed from the map by sweep: take a new one
}

// New returns the buckets of budget rl on the clock now.
func New(rl Budget, now func() time.Time) *Buckets {
	return &Buckets{
		limit:    rl,
		perToken: rl.window / time.Duration(rl.quota),
		now:      now,
		policy:   []string{fmt.Sprintf(`"default";q=%d;w=%d`, rl.quota, int(rl.window/time.Second))},
	}
}

// Verdict is what Take decided for one request.
type Verdict struct {
	Allowed    bool
	remaining  int           // whole tokens left after this request
	reset      time.Duration // until the bucket is full again
	retryAfter time.Duration // until one token is back, when not allowed
}

// Take spends a token of the bucket of key (the SHA-256 of an API key), if
// it has one.
func (l *Buckets) Take(key [32]byte) Verdict {
	for {
		v, ok := l.buckets.Load(key)
		if !ok {
			v, _ = l.buckets.LoadOrStore(key, &bucket{tokens: float64(l.limit.burst), updated: l.now()})
		}
		b := v.(*bucket)
		b.mu.Lock()
		if b.dropped {
			b.mu.Unlock()
			continue
		}
		now := l.now()
		l.refill(b, now)
		var out Verdict
		if b.tokens >= 1 {
			b.tokens--
			out.Allowed = true
		} else {
			out.retryAfter = time.Duration((1 - b.tokens) * float64(l.perToken))
		}
		out.remaining = int(b.tokens)
		out.reset = time.Duration((float64(l.limit.burst) - b.tokens) * float64(l.perToken))
		b.mu.Unlock()
		return out
	}
}

// refill adds the tokens earned since the bucket's last update. Callers
// hold b.mu.
func (l *Buckets) refill(b *bucket, now time.Time) {
	if elapsed := now.Sub(b.updated); elapsed > 0 {
		b.tokens = math.Min(float64(l.limit.burst), b.tokens+float64(elapsed)/float64(l.perToken))
		b.updated = now
	}
}

// sweep drops the buckets that are full again; it returns how many are
// left. SweepEvery calls it every refill time.
func (l *Buckets) sweep() int {
	now := l.now()
	left := 0
	l.buckets.Range(func(k, v any) bool {
		b := v.(*bucket)
		b.mu.Lock()
		l.refill(b, now)
		if b.tokens >= float64(l.limit.burst) {
			b.dropped = true
			l.buckets.Delete(k)
		} else {
			left++
		}
		b.mu.Unlock()
		return true
	})
	return left
}

// Sweep drops the buckets that have refilled, every refill time (at least a
// second), until ctx is done.
func (l *Buckets) Sweep(ctx context.Context) {
	tick := time.NewTicker(max(l.refillTime(), time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			l.sweep()
		}
	}
}

// String describes a budget for the log: "off" for nil, or as configured.
func (rl *Budget) String() string {
	if rl == nil {
		return "off"
	}
	unit := "s"
	if rl.window == time.Minute {
		unit = "m"
	}
	return fmt.Sprintf("%d/%s,burst=%d", rl.quota, unit, rl.burst)
}

// refillTime is how long an empty bucket takes to fill up.
func (l *Buckets) refillTime() time.Duration { return time.Duration(l.limit.burst) * l.perToken }

// Headers sets RateLimit-Policy and RateLimit (draft-ietf-httpapi-
// ratelimit-headers) for v, and Retry-After when the request is refused.
func (l *Buckets) Headers(h map[string][]string, v Verdict) {
	h["Ratelimit-Policy"] = l.policy
	var buf [64]byte
	b := append(buf[:0], `"default";r=`...)
	b = strconv.AppendInt(b, int64(v.remaining), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, ceilSeconds(v.reset), 10)
	h["Ratelimit"] = []string{string(b)}
	if !v.Allowed {
		h["Retry-After"] = []string{strconv.FormatInt(max(1, ceilSeconds(v.retryAfter)), 10)}
	}
}

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}
