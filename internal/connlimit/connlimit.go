// Package connlimit caps the open connections of a server so that clients
// holding connections cannot run the process out of file descriptors, nor
// shut other clients out. At the cap it closes the connection that has
// waited on its client the longest: idle, lingering, or stuck behind a
// client that neither reads its answers nor sends what the server waits
// for; with none such, it waits, and new clients queue in the kernel's
// listen backlog. Apart from the cap it bounds the connections that have
// begun a request's headers (or a TLS handshake) and not finished them, and
// the lingering ones: past the bound, the one that has waited on its client
// the longest goes, never one whose handshake or request is progressing.
//
// A Limiter wraps the server's listener (Listen) and is told connection
// states by http.Server.ConnState (ConnState) and, through ConnContext and
// RequestsOf, what its requests' handlers wait for. Over TLS it wraps
// the TCP listener, under the TLS one: a handshake's first bytes then count
// as a request's headers begun, so handshakes left unfinished are bounded
// too. Linger ends a connection whose answer was given before the request's
// body was read, without resetting it. Cap fits a wanted cap below the
// process's file limit. Everything here is safe for concurrent use.
package connlimit

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limiter caps the open connections of a server (docs/operations.md,
// "Limits"), so that clients holding connections cannot run the process out
// of file descriptors. Its listener hands the server a connection only
// below the cap. At the cap it first closes the connection that has been
// idle the longest, if one is idle, and otherwise waits: new clients then
// queue in the kernel's listen backlog, and a connection handed over is
// served.
//
// Apart from that cap, it bounds the connections that have begun a
// request's headers and not finished them (see maxPendingConns), closing
// the oldest of them when one more begins.
//
// Connection states come from http.Server.ConnState (see ConnState). It is
// safe for concurrent use.
type Limiter struct {
	max        int
	idle       time.Duration // idle connections are closed after this long; 0: never
	maxPending int           // connections in pending at most
	// pendingAfter and stuckAfter: the constants, but for tests.
	pendingAfter, stuckAfter time.Duration
	epoch                    time.Time // idle times are counted from it, on the monotonic clock

	mu    sync.Mutex
	conns []*trackedConn // open: accepted and not yet closed

	// pendingMu guards pending. It is a lock of its own because requests
	// take it twice each (see ConnState), and must not wait while mu is
	// held for a scan of every connection at the cap.
	pendingMu sync.Mutex
	pending   pendingList // a request's headers begun, not finished

	waiting atomic.Bool   // Accept is waiting for room
	room    chan struct{} // one token: a connection closed or went idle

	listener atomic.Pointer[limitedListener] // the last Listen made
}

// trackedConn is a connection the limiter accepted. Times are since the
// limiter's epoch (see Limiter.now), never 0 when set.
type trackedConn struct {
	net.Conn
	index     int          // in Limiter.conns; guarded by its mu
	idleSince atomic.Int64 // when it last went idle; 0 while not idle
	evicted   atomic.Bool  // closed by the limiter to make room
	closed    atomic.Bool  // removed from Limiter.conns; set before it leaves pending

	// What the connection waits for: reading is when the Read under way
	// began (0: none), writing the Write under way; answered says the
	// server has begun to write to it; lingering that it is being drained after
	// its last answer (see Linger); stalled that it is pending for having
	// waited on its client (see sweep). requests is what its requests tell
	// (see Requests).
	reading, writing atomic.Int64
	answered         atomic.Bool
	http2            atomic.Bool // it speaks HTTP/2 (ALPN "h2"), known from its first request on
	protocolKnown    atomic.Bool
	lingering        atomic.Bool
	stalled          atomic.Bool
	requests         Requests

	limiter    *Limiter
	pending    atomic.Bool  // in limiter.pending
	prev, next *trackedConn // in limiter.pending; guarded by its pendingMu
}

// Read notes the first bytes a connection sends while it is idle (not yet
// in a request, or between two on a keep-alive connection): a request's
// headers have begun, and until net/http has read them all they count as
// pending. It notes too how long the read waits on the client.
func (c *trackedConn) Read(p []byte) (int, error) {
	c.reading.Store(c.limiter.now())
	n, err := c.Conn.Read(p)
	c.reading.Store(0)
	if n > 0 && c.idleSince.Load() != 0 && !c.pending.Load() {
		c.limiter.headersBegun(c)
	}
	return n, err
}

// Write notes how long a write waits on a client that does not read, and
// that the server has answered on the connection: from the first write's
// start, since a server short of CPU may take longer than the limiter's
// patience over a write that does not wait on the client at all, and a
// request being answered is not one petstore has never answered.
func (c *trackedConn) Write(p []byte) (int, error) {
	if !c.answered.Load() {
		c.answered.Store(true)
	}
	c.writing.Store(c.limiter.now())
	n, err := c.Conn.Write(p)
	c.writing.Store(0)
	return n, err
}

// Close closes the connection and stops counting it: the server reports a
// connection it closes (StateClosed), but not one it handed over
// (StateHijacked), which Linger closes.
func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.limiter.remove(c)
	c.limiter.signal()
	return err
}

// maxPendingConns bounds the connections that have begun a request's
// headers and not finished them: a first request's, or a later one's on a
// keep-alive connection (a client that may not do anything else can still
// make one request, a health check, say). net/http holds 11 to 18 bytes of
// memory for every byte of a block of small headers while it reads it, so
// each such connection may hold some 300 KiB (with a server whose header
// bound is 16 KiB): 256 of them under 80 MiB; with 5,000 clients trying, the
// process stayed near 250 MiB resident. Connections that have sent nothing
// do not count: they hold little, the connection cap closes them when idle,
// and clients that open many connections before they send (a pool warming
// up) must not lose them. A real client's headers arrive whole and are read
// at once, so it is pending only between two steps of its own goroutine
// and is never the oldest. It is a constant, not a setting, because it
// bounds memory, as the header bound does, rather than capacity: the cap
// given to New is that.
const maxPendingConns = 256

// pendingList is the connections whose request's headers have begun and
// not finished, oldest first, linked through their prev and next.
type pendingList struct {
	head, tail *trackedConn
	len        int
}

func (p *pendingList) push(tc *trackedConn) {
	tc.prev, tc.next = p.tail, nil
	if p.tail != nil {
		p.tail.next = tc
	} else {
		p.head = tc
	}
	p.tail = tc
	p.len++
	tc.pending.Store(true)
}

// remove takes tc out of the list if it is in it.
func (p *pendingList) remove(tc *trackedConn) {
	if !tc.pending.Load() {
		return
	}
	if tc.prev != nil {
		tc.prev.next = tc.next
	} else {
		p.head = tc.next
	}
	if tc.next != nil {
		tc.next.prev = tc.prev
	} else {
		p.tail = tc.prev
	}
	tc.prev, tc.next = nil, nil
	p.len--
	tc.pending.Store(false)
}

// CloseWrite lets net/http half-close the connection before closing it
// after an answer with Connection: close, so that the client reads the
// answer rather than a reset when unread bytes remain.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// New returns a limiter that keeps at most max connections open, at most
// maxPendingConns of them pending, and closes a connection idle for idle
// (0: never). It closes idle connections itself, for HTTP/1.1 and HTTP/2
// alike: give the server a negative IdleTimeout (see NoServerIdleTimeout).
func New(max int, idle time.Duration) *Limiter {
	return &Limiter{max: max, idle: idle, maxPending: maxPendingConns, pendingAfter: pendingAfter, stuckAfter: stuckAfter,
		epoch: time.Now(), room: make(chan struct{}, 1)}
}

// NoServerIdleTimeout is the http.Server.IdleTimeout to serve with: no
// idle timeout of net/http's own, for HTTP/1.1 (it then sets no read
// deadline between requests) nor HTTP/2 (a negative timeout arms no idle
// timer), since the limiter closes idle connections. Go's HTTP/2 server
// arms its idle timer again while it closes a connection that had streams
// open, and the timer then keeps the whole connection's memory for the
// idle timeout: a client that makes petstore close many such connections
// (the limiter's own evictions among them) could make it hold hundreds of
// MiB that way.
const NoServerIdleTimeout = -1

// now returns the time since the limiter's epoch, on the monotonic clock,
// never 0: the form of every time a trackedConn keeps.
func (l *Limiter) now() int64 { return int64(time.Since(l.epoch)) | 1 }

// Listen wraps ln so that it accepts only when there is room. Until it is
// closed, connections that wait on their clients are swept (see sweep).
func (l *Limiter) Listen(ln net.Listener) net.Listener {
	limited := &limitedListener{Listener: ln, limiter: l, closed: make(chan struct{}), stopped: make(chan struct{})}
	l.listener.Store(limited)
	go l.sweep(limited.closed)
	return limited
}

// tracked returns the connection the limiter accepted under c, which is it
// or, over TLS, the TLS connection wrapped around it; nil for another.
func tracked(c net.Conn) *trackedConn {
	if tlsConn, ok := c.(*tls.Conn); ok {
		c = tlsConn.NetConn()
	}
	tc, _ := c.(*trackedConn)
	return tc
}

// ConnState is the http.Server.ConnState hook. The Active and Idle
// transitions, which happen on every request, allocate nothing; mu is
// taken by a new and a closed connection, pendingMu twice a request (its headers
// begun, see headersBegun, and read, here).
func (l *Limiter) ConnState(c net.Conn, state http.ConnState) {
	tc := tracked(c)
	if tc == nil {
		return
	}
	switch state {
	case http.StateActive:
		tc.idleSince.Store(0)
		if !tc.protocolKnown.Load() {
			if tlsConn, ok := c.(*tls.Conn); ok && tlsConn.ConnectionState().NegotiatedProtocol == "h2" {
				tc.http2.Store(true)
			}
			tc.protocolKnown.Store(true)
		}
		// net/http reports Active once the request's headers are read
		// (or it gave up on them): the connection is no longer pending.
		if tc.pending.Load() {
			l.pendingMu.Lock()
			l.pending.remove(tc)
			l.pendingMu.Unlock()
		}
	case http.StateIdle:
		tc.idleSince.Store(int64(time.Since(l.epoch)) | 1) // never 0
		if l.waiting.Load() {
			l.signal()
		}
	case http.StateClosed:
		l.remove(tc)
		l.signal()
	case http.StateHijacked:
		// Still open, and counted, until Linger closes it.
	}
}

func (l *Limiter) signal() {
	select {
	case l.room <- struct{}{}:
	default:
	}
}

func (l *Limiter) add(c net.Conn) *trackedConn {
	tc := &trackedConn{Conn: c, limiter: l}
	tc.requests.l = l
	// A connection counts as idle from its accept until its first request
	// arrives (StateActive): one that never sends a byte is as evictable as
	// a keep-alive connection nobody uses, or silent clients could hold
	// every slot.
	tc.idleSince.Store(int64(time.Since(l.epoch)) | 1)
	l.mu.Lock()
	tc.index = len(l.conns)
	l.conns = append(l.conns, tc)
	l.mu.Unlock()
	return tc
}

// headersBegun counts tc as pending, once a request's first bytes are
// read, and bounds the pending connections (see addPending).
func (l *Limiter) headersBegun(tc *trackedConn) {
	// The connection's own read holds it: it cannot go idle meanwhile.
	l.addPending(tc, func() bool { return tc.idleSince.Load() != 0 })
}

// addPending counts tc as pending if ok still holds once pendingMu is
// held, and closes, past maxPending, the pending connection that has
// waited on its client the longest (see victim): what it holds goes with
// it. The server sees its read fail and reports it closed.
func (l *Limiter) addPending(tc *trackedConn, ok func() bool) {
	l.pendingMu.Lock()
	// closed is set before remove takes pendingMu: either it is seen here,
	// or remove takes tc out of pending after this.
	if tc.pending.Load() || tc.closed.Load() || !ok() {
		l.pendingMu.Unlock()
		return // counted already, or closed meanwhile
	}
	l.pending.push(tc)
	var out *trackedConn
	if l.pending.len > l.maxPending {
		out = l.pending.victim()
		l.pending.remove(out)
	}
	l.pendingMu.Unlock()
	if out != nil {
		out.evicted.Store(true)
		out.Close()
	}
}

func (l *Limiter) remove(tc *trackedConn) {
	l.mu.Lock()
	i := tc.index
	if i < 0 {
		l.mu.Unlock()
		return // already removed: Hijacked, then Closed by the caller
	}
	last := l.conns[len(l.conns)-1]
	l.conns[i], last.index = last, i
	l.conns[len(l.conns)-1] = nil
	l.conns = l.conns[:len(l.conns)-1]
	tc.index = -1
	tc.closed.Store(true)
	l.mu.Unlock()
	l.pendingMu.Lock()
	l.pending.remove(tc)
	l.pendingMu.Unlock()
}

// Open returns how many connections are open.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// waitForRoom returns once a connection may be accepted, closing the
// longest idle one when at the cap, or with net.ErrClosed once closed is.
func (l *Limiter) waitForRoom(closed <-chan struct{}) error {
	for {
		l.mu.Lock()
		if len(l.conns) < l.max {
			l.mu.Unlock()
			return nil
		}
		// Waiting is announced before the scan: a connection that goes
		// idle after the scan has looked at it then sees it and signals
		// (its idleSince store comes before its load of waiting, and this
		// store before the scan's loads), so no wake-up is lost.
		l.waiting.Store(true)
		// A scan, only at the cap; it keeps the per-request transitions
		// free of locks, which an ordered idle list would need.
		oldest := l.longestWaiting()
		l.mu.Unlock()
		if oldest != nil {
			oldest.evicted.Store(true)
			oldest.Close() // the server sees it fail and reports it closed
		}
		select {
		case <-l.room:
		case <-closed:
			l.waiting.Store(false)
			return net.ErrClosed
		}
		l.waiting.Store(false)
	}
}

// limitedListener is the listener of a Limiter.
type limitedListener struct {
	net.Listener
	limiter   *Limiter
	closed    chan struct{}
	closeOnce sync.Once
	stopped   chan struct{} // closed by StopAccepting
	stopOnce  sync.Once
}

// Accept takes the next client from the backlog, then makes room for it
// if at the cap. Room is made only for a client that is there: an idle
// connection is never closed ahead of need. While it waits, the one client
// in hand holds a descriptor; fileReserve counts it.
func (ln *limitedListener) Accept() (net.Conn, error) {
	c, err := ln.Listener.Accept()
	if err != nil {
		select {
		case <-ln.stopped: // not the server's error: wait for Close
			<-ln.closed
			return nil, net.ErrClosed
		default:
		}
		return nil, err
	}
	if err := ln.limiter.waitForRoom(ln.closed); err != nil {
		c.Close() // stopping: this client is not served, like those in the backlog
		return nil, err
	}
	return ln.limiter.add(c), nil
}

func (ln *limitedListener) Close() error {
	ln.closeOnce.Do(func() { close(ln.closed) })
	return ln.Listener.Close()
}

// StopAccepting closes the listening socket of the listener that l's
// Listen made, so that new clients are refused, while its Accept waits for
// the listener's Close, as the server expects of a listener it has not
// closed itself. The server then serves on what it has accepted: see
// InFlight.
func (l *Limiter) StopAccepting() {
	if ln := l.listener.Load(); ln != nil {
		ln.stopOnce.Do(func() { close(ln.stopped) })
		ln.Listener.Close()
	}
}

// InFlight returns how many open connections have a request under way: in
// it, begun (its headers or TLS handshake), or come and not yet read (see
// Arriving). Idle ones, and new ones that have sent nothing, have none.
func (l *Limiter) InFlight() int {
	busy, idle := l.snapshot()
	return busy + arriving(idle, func(*trackedConn) bool { return true })
}

// Arriving returns how many connections the server holds idle between two
// requests have a request arriving: its first bytes read, or waiting in
// the socket for a server short of CPU to read them. net/http closes the
// connections it holds idle when keep-alives are turned off, and would
// close these under their requests. New connections that have sent
// nothing yet count only from 5 s after their accept, when net/http takes
// them for idle too.
func (l *Limiter) Arriving() int {
	_, idle := l.snapshot()
	now := l.now()
	return arriving(idle, func(c *trackedConn) bool {
		return c.protocolKnown.Load() || now-c.idleSince.Load() >= int64(newTakenForIdle)
	})
}

// newTakenForIdle is how long net/http lets a new connection send nothing
// before it counts it as idle, to close when keep-alives are turned off.
const newTakenForIdle = 5 * time.Second

// snapshot returns how many open connections are not idle, and the idle
// ones (new ones included), looked at under mu.
func (l *Limiter) snapshot() (busy int, idle []*trackedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		if c.idleSince.Load() == 0 {
			busy++
		} else {
			idle = append(idle, c)
		}
	}
	return busy, idle
}

// arriving counts the connections of idle for which counts holds and a
// request has begun, or has come and waits unread in the socket. The
// sockets are peeked at without mu held: a connection closed meanwhile
// has nothing unread.
func arriving(idle []*trackedConn, counts func(*trackedConn) bool) int {
	n := 0
	for _, c := range idle {
		if counts(c) && (c.pending.Load() || unread(c.Conn)) {
			n++
		}
	}
	return n
}

// fileReserve is how many file descriptors the connection cap leaves for
// everything else: the journal and its directory, stdin/stdout/stderr, the
// listener, the runtime's poller, a key file being read.
const fileReserve = 32

// Cap returns the cap on open connections: want, lowered to fit
// below the process's file limit with fileReserve to spare. It relies on
// Go (since 1.19, package syscall's init) having raised the soft limit of
// open files to the hard limit at start, so the current soft limit is as
// high as the process can go.
func Cap(want int) (int, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return want, nil // no limit known: trust the configuration
	}
	cur := uint64(lim.Cur) // int64 on some systems (FreeBSD)
	if cur >= uint64(want)+fileReserve {
		return want, nil
	}
	if cur <= 2*fileReserve {
		return 0, fmt.Errorf("the process may open only %d files, too few to serve connections (raise ulimit -n)", cur)
	}
	return int(cur) - fileReserve, nil
}
