package connlimit

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
	"time"
)

// What a connection waits for decides which goes when room must be made:
// the one that has waited on its client the longest, never one the server
// is busy with or whose client is progressing.

// Thresholds of waiting on a client. A connection that is not idle and has
// waited on its client for pendingAfter counts against the bound on
// pending connections (it holds a handler, a stream's answer, or a header
// block while its client does nothing); for stuckAfter, the cap may close
// it like an idle one. A client that reads and sends at any usable pace
// moves well within them: an HTTP/2 flow-control window comes back within
// a round trip.
const (
	pendingAfter = 500 * time.Millisecond
	stuckAfter   = 3 * time.Second
	sweepEvery   = 100 * time.Millisecond
)

// Requests is what the requests of one connection tell its limiter: how
// many are being served, and how many of those wait on the client (a body
// read that blocks, an answer's write that blocks). It is safe for
// concurrent use (HTTP/2 streams share it); a nil *Requests does nothing.
type Requests struct {
	serving, waiting atomic.Int32
	since            atomic.Int64 // when the first of the waits under way began; 0: none
	ended            atomic.Int64 // when a request last ended; 0: none yet
	l                *Limiter
}

// Start notes that a request is being served; Done that it is over.
func (r *Requests) Start() {
	if r != nil {
		r.serving.Add(1)
	}
}

// Done notes that a request Start noted is over.
func (r *Requests) Done() {
	if r != nil {
		r.ended.Store(r.l.now())
		r.serving.Add(-1)
	}
}

// WaitBegin notes that a request's handler has begun to wait on the
// client; WaitEnd that it is done.
func (r *Requests) WaitBegin() {
	if r != nil && r.waiting.Add(1) == 1 {
		r.since.CompareAndSwap(0, r.l.now())
	}
}

// WaitEnd notes that a wait WaitBegin noted is over.
func (r *Requests) WaitEnd() {
	if r != nil && r.waiting.Add(-1) == 0 {
		r.since.Store(0)
	}
}

// waitingSince returns when the waits under way began, or 0.
func (r *Requests) waitingSince() int64 {
	if r.waiting.Load() <= 0 {
		return 0
	}
	since := r.since.Load()
	if since == 0 {
		// A WaitBegin raced a WaitEnd that cleared it after: count from
		// now.
		r.since.CompareAndSwap(0, r.l.now())
		since = r.since.Load()
	}
	return since
}

type requestsKey struct{}

// ConnContext is the http.Server.ConnContext hook: it puts the Requests of
// the connection c in the context of its requests (see RequestsOf).
func (l *Limiter) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc := tracked(c); tc != nil {
		return context.WithValue(ctx, requestsKey{}, &tc.requests)
	}
	return ctx
}

// RequestsOf returns the Requests of the connection of the request whose
// context is ctx, or nil (which does nothing) when no limiter tracks it.
func RequestsOf(ctx context.Context) *Requests {
	r, _ := ctx.Value(requestsKey{}).(*Requests)
	return r
}

// waitingSince returns since when c, not idle, has waited on its client,
// or 0: lingering; a handler waiting on the client; a write blocked by a
// client that does not read; or, on an HTTP/2 connection with no request
// being served, a read under way (streams the client keeps open without
// reading their answers, a header block never finished), counted from the
// end of the last request if that came later. On an HTTP/1.1 connection an
// active one without a request being served is one the server is busy
// with: net/http reads ahead from before a handler starts until its answer
// is flushed, and a server short of CPU may take seconds over either step.
func (c *trackedConn) waitingSince() int64 {
	if c.lingering.Load() {
		return c.reading.Load()
	}
	since := c.requests.waitingSince()
	if w := c.writing.Load(); w != 0 && (since == 0 || w < since) {
		since = w
	}
	if since == 0 && c.http2.Load() && c.idleSince.Load() == 0 && c.requests.serving.Load() == 0 {
		if since = c.reading.Load(); since != 0 {
			since = max(since, c.requests.ended.Load())
		}
	}
	return since
}

// longestWaiting returns the open connection that has waited on its client
// the longest, for the cap to close: idle, or not idle and waiting for
// stuckAfter or more; nil when none has. l.mu is held.
func (l *Limiter) longestWaiting() *trackedConn {
	now := l.now()
	var out *trackedConn
	var outSince int64
	for _, c := range l.conns {
		if c.evicted.Load() {
			continue
		}
		since := c.idleSince.Load()
		if since == 0 {
			if since = c.waitingSince(); now-since < int64(l.stuckAfter) {
				since = 0
			}
		}
		if since != 0 && (out == nil || since < outSince) {
			out, outSince = c, since
		}
	}
	return out
}

// sweep closes the connections idle for the limiter's idle timeout, counts
// as pending every connection that has waited on its client for
// pendingAfter, so that the bound on pending connections holds what they
// hold too, and stops counting those that moved on. It runs every
// sweepEvery until closed is.
func (l *Limiter) sweep(closed <-chan struct{}) {
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			return
		case <-tick.C:
		}
		var waiting, moved, idle []*trackedConn
		now := l.now()
		l.mu.Lock()
		for _, c := range l.conns {
			if since := c.idleSince.Load(); l.idle > 0 && since != 0 && now-since >= int64(l.idle) {
				idle = append(idle, c)
				continue
			}
			since := c.waitingSince()
			switch stalled := since != 0 && now-since >= int64(l.pendingAfter); {
			case stalled && !c.pending.Load():
				waiting = append(waiting, c)
			case !stalled && c.stalled.Load() && !c.lingering.Load():
				moved = append(moved, c)
			}
		}
		l.mu.Unlock()
		l.pendingMu.Lock()
		for _, c := range moved {
			l.pending.remove(c)
			c.stalled.Store(false)
		}
		l.pendingMu.Unlock()
		for _, c := range waiting {
			c.stalled.Store(true)
			l.addPending(c, func() bool { return c.waitingSince() != 0 })
		}
		for _, c := range idle {
			c.Close() // the server sees its read fail and reports it closed
		}
	}
}

// victim returns the pending connection to close to keep the bound: the
// one that has waited on its client the longest, first among those the
// server has never begun to write to (a handshake or request whose first
// bytes came, and no more), then among the others. A connection with no read,
// write or handler wait under way is one the server is busy with: it is
// not waiting. With none waiting, the oldest lingering one goes (answered,
// it holds nothing of a request; a starved server may not have begun to
// drain it yet), and only with none of those the oldest. The list is not
// empty; pendingMu is held.
func (p *pendingList) victim() *trackedConn {
	var out, lingering *trackedConn
	var outSince int64
	outAnswered := true
	for c := p.head; c != nil; c = c.next {
		since := c.waitStart()
		if since == 0 {
			if lingering == nil && c.lingering.Load() {
				lingering = c
			}
			continue
		}
		answered := c.answered.Load()
		if out == nil || !answered && outAnswered || answered == outAnswered && since < outSince {
			out, outSince, outAnswered = c, since, answered
		}
	}
	switch {
	case out != nil:
		return out
	case lingering != nil:
		return lingering
	default:
		return p.head
	}
}

// waitStart returns since when c has waited on its client in any way the
// limiter sees, the earliest: a read under way, a write under way, a
// handler's wait; 0 when none.
func (c *trackedConn) waitStart() int64 {
	since := int64(0)
	for _, s := range [...]int64{c.reading.Load(), c.writing.Load(), c.requests.waitingSince()} {
		if s != 0 && (since == 0 || s < since) {
			since = s
		}
	}
	return since
}

// Lingering bounds: a connection whose answer was given before its
// request's body was read is drained for at least this long while the
// client keeps sending, and this much of what it sends after the answer.
const (
	lingerWait  = 5 * time.Second  // for each next piece of what the client sends
	lingerTime  = 30 * time.Second // in all
	lingerBytes = 4 << 20
)

// Linger ends the connection c, handed over by the server (http.Hijacker)
// after an answer given before the request's body was read, without the
// reset that closing it with the body unread would send, which would make
// the client lose the answer it has not read yet (a client that sends the
// whole body before it reads). It reads and discards what the client still
// sends, through r (what the server read ahead), for at most lingerWait
// between pieces, lingerTime in all and lingerBytes; then it closes c.
// Meanwhile a connection a Limiter accepted counts against its cap and its
// bound on pending connections, and holds nothing of the request.
func Linger(c net.Conn, r *bufio.Reader) {
	if tc := tracked(c); tc != nil {
		tc.lingering.Store(true)
		tc.limiter.addPending(tc, func() bool { return true })
	}
	go linger(c, r)
}

// linger drains c, which has answered, through r (see Linger) and closes
// it.
func linger(c net.Conn, r *bufio.Reader) {
	defer c.Close()
	// The answer is whole: say so, so that a client that waits for the
	// end of the connection can stop sending.
	closeWrite(c)
	end := time.Now().Add(lingerTime)
	for left := lingerBytes; left > 0; {
		deadline := time.Now().Add(lingerWait)
		if deadline.After(end) {
			deadline = end
		}
		c.SetReadDeadline(deadline)
		n, err := r.Discard(min(left, r.Size()))
		left -= n
		if err != nil {
			return // the client is done (EOF), gave up, or took too long
		}
	}
}

// closeWrite shuts down the writing side of c, and over TLS first says so
// in TLS (close_notify).
func closeWrite(c net.Conn) {
	if tlsConn, ok := c.(*tls.Conn); ok {
		tlsConn.CloseWrite()
		c = tlsConn.NetConn()
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
