package etcd

import (
	"context"
	"time"
)

// Backoff is a pause between tries that doubles from First up to Max. The
// zero value of its state is ready: the first Wait pauses First. It is not
// safe for concurrent use; each retry loop has its own.
type Backoff struct {
	First, Max time.Duration
	next       time.Duration
}

// Wait pauses for the current interval, or until ctx is done, when it
// returns ctx's error. The next Wait pauses twice as long, at most Max.
func (b *Backoff) Wait(ctx context.Context) error {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return nil
}

// Next returns the current interval, for a caller that waits on more than
// a timer; the next interval is twice as long, at most Max.
func (b *Backoff) Next() time.Duration {
	if b.next == 0 {
		b.next = b.First
	}
	d := b.next
	b.next = min(2*b.next, max(b.Max, b.First))
	return d
}

// Reset makes the next Wait pause First again: the thing retried made
// progress.
func (b *Backoff) Reset() { b.next = 0 }
