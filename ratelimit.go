package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rateLimit is a request budget per API key (PETSTORE_RATE_LIMIT): quota
// requests per window on average, up to burst at once.
type rateLimit struct {
	quota  int
	window time.Duration // a second or a minute
	burst  int
}

// parseRateLimit reads "N/s" or "N/m", optionally followed by ",burst=B".
func parseRateLimit(v string) (rateLimit, error) {
	const name = "PETSTORE_RATE_LIMIT"
	spec, burst, hasBurst := strings.Cut(v, ",")
	n, unit, ok := strings.Cut(strings.TrimSpace(spec), "/")
	var rl rateLimit
	var err error
	if rl.quota, err = strconv.Atoi(n); !ok || err != nil || rl.quota < 1 {
		return rl, fmt.Errorf("%s: %q is not a limit such as 100/s or 6000/m,burst=200", name, v)
	}
	switch unit {
	case "s":
		rl.window = time.Second
	case "m":
		rl.window = time.Minute
	default:
		return rl, fmt.Errorf("%s: %q: the window must be s (a second) or m (a minute)", name, v)
	}
	rl.burst = rl.quota
	if hasBurst {
		b, found := strings.CutPrefix(strings.TrimSpace(burst), "burst=")
		if rl.burst, err = strconv.Atoi(b); !found || err != nil || rl.burst < 1 {
			return rl, fmt.Errorf("%s: %q: after the comma comes burst=B, B a positive whole number", name, v)
		}
	}
	return rl, nil
}

// limiter keeps a token bucket per API key. Buckets are found in a sync.Map
// (no lock to read an existing one) and each has its own mutex, so keys never
// wait for each other. A bucket that has refilled is dropped by sweep: a full
// bucket is what a new one would be, so memory follows the keys active in the
// last refill time, whatever the number of keys.
type limiter struct {
	limit    rateLimit
	perToken time.Duration // time to earn one token back
	now      func() time.Time
	buckets  sync.Map // keyDigest → *bucket
	policy   []string // the RateLimit-Policy header value
}

type bucket struct {
	mu      sync.Mutex
	tokens  float64
	updated time.Time
	dropped bool // removed from the map by sweep: take a new one
}

func newLimiter(rl rateLimit, now func() time.Time) *limiter {
	return &limiter{
		limit:    rl,
		perToken: rl.window / time.Duration(rl.quota),
		now:      now,
		policy:   []string{fmt.Sprintf(`"default";q=%d;w=%d`, rl.quota, int(rl.window/time.Second))},
	}
}

// verdict is what take decided for one request.
type verdict struct {
	allowed    bool
	remaining  int           // whole tokens left after this request
	reset      time.Duration // until the bucket is full again
	retryAfter time.Duration // until one token is back, when not allowed
}

// take spends a token of key's bucket, if it has one.
func (l *limiter) take(key keyDigest) verdict {
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
		var out verdict
		if b.tokens >= 1 {
			b.tokens--
			out.allowed = true
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
func (l *limiter) refill(b *bucket, now time.Time) {
	if elapsed := now.Sub(b.updated); elapsed > 0 {
		b.tokens = math.Min(float64(l.limit.burst), b.tokens+float64(elapsed)/float64(l.perToken))
		b.updated = now
	}
}

// sweep drops the buckets that are full again; it returns how many are
// left. run calls it every refill time.
func (l *limiter) sweep() int {
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

// sweepEvery sweeps every interval (at least a second) until ctx is done.
func (l *limiter) sweepEvery(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(max(interval, time.Second))
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

// rateLimitText describes a limit for the log: "off", or as configured.
func rateLimitText(rl *rateLimit) string {
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
func (l *limiter) refillTime() time.Duration { return time.Duration(l.limit.burst) * l.perToken }

// headers sets RateLimit-Policy and RateLimit (draft-ietf-httpapi-
// ratelimit-headers) for v, and Retry-After when the request is refused.
func (l *limiter) headers(h map[string][]string, v verdict) {
	h["Ratelimit-Policy"] = l.policy
	var buf [64]byte
	b := append(buf[:0], `"default";r=`...)
	b = strconv.AppendInt(b, int64(v.remaining), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, ceilSeconds(v.reset), 10)
	h["Ratelimit"] = []string{string(b)}
	if !v.allowed {
		h["Retry-After"] = []string{strconv.FormatInt(max(1, ceilSeconds(v.retryAfter)), 10)}
	}
}

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}
