package connlimit

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// eventually polls cond, bounded by 5 s, and reports whether it held.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond) // polling the limiter, bounded
	}
	return true
}

// Past the bound on pending connections, the one that has waited on its
// client the longest goes: first among those the server has never written
// to, and never one the server is busy with (no read under way).
func TestVictimIsTheLongestWaitingOnItsClient(t *testing.T) {
	t.Parallel()
	lim := New(100, 0)
	lim.maxPending = 3
	h := harnessFor(t, lim)
	pend := func(read, answer bool) net.Conn {
		client, server := h.dial(t)
		h.lim.ConnState(server, http.StateNew)
		io.WriteString(client, "GET / HTTP/1.1\r\nX") // headers begun
		if _, err := server.Read(make([]byte, 64)); err != nil {
			t.Fatal(err)
		}
		if answer {
			server.Write([]byte("x"))
			client.Read(make([]byte, 1))
		}
		if read { // the server waits for the rest
			go server.Read(make([]byte, 64))
			if !eventually(func() bool { return tracked(server).reading.Load() != 0 }) {
				t.Fatal("the read did not begin")
			}
		}
		return client
	}
	answered := pend(true, true) // waits longest, but the server answered it
	busy := pend(false, false)   // the server is busy with it
	waiting := pend(true, false) // waits on its client, never answered
	newcomer := pend(true, false)
	if !waitClosed(waiting, 5*time.Second) {
		t.Fatal("the unanswered connection waiting on its client was not the one closed")
	}
	for name, c := range map[string]net.Conn{"answered": answered, "busy": busy, "newcomer": newcomer} {
		if waitClosed(c, 50*time.Millisecond) {
			t.Errorf("the %s connection was closed", name)
		}
	}
}

// At the cap, a connection whose write has waited for stuckAfter on a
// client that does not read is closed like an idle one; one the server is
// busy with is not.
func TestCapClosesStuckConnections(t *testing.T) {
	t.Parallel()
	lim := New(2, 0)
	lim.stuckAfter = 100 * time.Millisecond
	h := harnessFor(t, lim)
	stuck, s1 := h.dial(t)
	stuck.(*net.TCPConn).SetReadBuffer(2048)
	busy, s2 := h.dial(t)
	for _, s := range []net.Conn{s1, s2} {
		h.lim.ConnState(s, http.StateNew)
		h.lim.ConnState(s, http.StateActive)
	}
	go s1.Write(make([]byte, 64<<20)) // blocks: the client reads nothing
	if !eventually(func() bool { return tracked(s1).writing.Load() != 0 }) {
		t.Fatal("the write did not block")
	}
	time.Sleep(2 * lim.stuckAfter)
	c3, err := net.DialTimeout("tcp", h.ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	select {
	case s3 := <-h.accepted:
		defer s3.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the new connection was not accepted")
	}
	if tracked(s1).evicted.Load() != true {
		t.Error("the stuck connection was not the one closed")
	}
	if waitClosed(busy, 50*time.Millisecond) {
		t.Error("the busy connection was closed")
	}
}

// A connection whose request's handler has waited on its client for
// pendingAfter counts as pending: past the bound, the longest waiting
// goes. One that moves on stops counting.
func TestWaitingConnectionsCountAsPending(t *testing.T) {
	t.Parallel()
	lim := New(100, 0)
	lim.maxPending, lim.pendingAfter = 1, 50*time.Millisecond
	h := harnessFor(t, lim)
	var clients []net.Conn
	var reqs []*Requests
	for range 2 {
		client, server := h.dial(t)
		h.lim.ConnState(server, http.StateNew)
		h.lim.ConnState(server, http.StateActive)
		r := RequestsOf(lim.ConnContext(context.Background(), server))
		r.Start()
		r.WaitBegin()
		clients, reqs = append(clients, client), append(reqs, r)
		time.Sleep(5 * time.Millisecond) // the first waits longer
	}
	if !waitClosed(clients[0], 5*time.Second) {
		t.Fatal("the connection waiting longest was not closed past the bound")
	}
	if waitClosed(clients[1], 50*time.Millisecond) {
		t.Fatal("the other waiting connection was closed within the bound")
	}
	reqs[1].WaitEnd()
	if !eventually(func() bool { h.lim.pendingMu.Lock(); defer h.lim.pendingMu.Unlock(); return h.lim.pending.len == 0 }) {
		t.Error("a connection that moved on still counts as pending")
	}
}

// net/http reads ahead on an HTTP/1.1 connection from before its handler
// starts until the answer is flushed: meanwhile the connection waits on the
// server, however long a server short of CPU takes over those steps, and it
// never counts as waiting on its client (past the bound it would be the
// first to go, never answered).
func TestHTTP1ReadAheadIsNotWaitingOnTheClient(t *testing.T) {
	t.Parallel()
	lim := New(100, 0)
	lim.pendingAfter = 100 * time.Millisecond
	h := harnessFor(t, lim)
	_, server := h.dial(t)
	h.lim.ConnState(server, http.StateNew)
	h.lim.ConnState(server, http.StateActive)
	r := RequestsOf(lim.ConnContext(context.Background(), server))
	go server.Read(make([]byte, 64)) // the read ahead: the client sends nothing more
	if !eventually(func() bool { return tracked(server).reading.Load() != 0 }) {
		t.Fatal("the read did not begin")
	}
	time.Sleep(3 * lim.pendingAfter) // before the handler starts: the server is short of CPU
	if tracked(server).pending.Load() {
		t.Fatal("an HTTP/1.1 connection whose handler had not started counts as pending")
	}
	r.Start()
	r.Done()
	time.Sleep(3 * lim.pendingAfter) // between the handler's end and the flush
	if tracked(server).pending.Load() {
		t.Fatal("an HTTP/1.1 connection whose answer was not flushed yet counts as pending")
	}
}

// The limiter closes a connection idle for its idle timeout.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	h := harnessFor(t, New(10, 100*time.Millisecond))
	idle, s1 := h.dial(t)
	active, s2 := h.dial(t)
	h.lim.ConnState(s1, http.StateNew)
	h.lim.ConnState(s2, http.StateNew)
	h.lim.ConnState(s2, http.StateActive)
	if !waitClosed(idle, 5*time.Second) {
		t.Fatal("the idle connection was not closed")
	}
	if waitClosed(active, 300*time.Millisecond) {
		t.Error("the active connection was closed")
	}
}

// A lingering connection is drained of what its client sends, then closed
// with a FIN, not a reset, and counted until then.
func TestLinger(t *testing.T) {
	t.Parallel()
	h := harnessFor(t, New(10, 0))
	client, server := h.dial(t)
	h.lim.ConnState(server, http.StateNew)
	server.Write([]byte("answer"))
	h.lim.ConnState(server, http.StateHijacked)
	Linger(server, bufio.NewReader(server))
	if got := h.lim.Open(); got != 1 {
		t.Errorf("open connections while lingering: %d, want 1", got)
	}
	sent := make(chan error, 1)
	go func() {
		_, err := client.Write(make([]byte, 2<<20)) // the rest of a body
		sent <- err
	}()
	if err := <-sent; err != nil {
		t.Fatalf("the client's body after the answer: %v, want it drained", err)
	}
	got, err := io.ReadAll(client) // ends at petstore's FIN
	if string(got) != "answer" || err != nil {
		t.Errorf("the client read %q, %v; want the answer, then the end", got, err)
	}
	client.Close()
	if !eventually(func() bool { return h.lim.Open() == 0 }) {
		t.Error("the lingering connection still counts once closed")
	}
}

// With no pending connection waiting on its client, a lingering one (its
// answer given, being drained) is closed before a request the server is
// still reading or parsing, even one that came earlier: a server starved of
// CPU may not have begun to drain it, and the request may be a client's
// with a key. Only with neither the oldest goes.
func TestVictimPrefersLingeringToRequestInProgress(t *testing.T) {
	t.Parallel()
	conn := func(lingering bool) *trackedConn {
		tc := &trackedConn{}
		tc.lingering.Store(lingering)
		tc.answered.Store(lingering)
		return tc
	}
	var p pendingList
	request, drained, later := conn(false), conn(true), conn(false)
	for _, c := range []*trackedConn{request, drained, later} {
		p.push(c)
	}
	if got := p.victim(); got != drained {
		t.Fatalf("victim: the %s, want the lingering connection", describe(got, request, drained, later))
	}
	p.remove(drained)
	if got := p.victim(); got != request {
		t.Fatalf("victim without a lingering connection: the %s, want the oldest", describe(got, request, drained, later))
	}
	waiting := conn(true)
	waiting.reading.Store(1) // a lingering connection in a read waits on its client
	p.push(waiting)
	if got := p.victim(); got != waiting {
		t.Fatalf("victim: the %s, want the one waiting on its client", describe(got, request, drained, later))
	}
}

func describe(c, request, drained, later *trackedConn) string {
	switch c {
	case request:
		return "oldest request in progress"
	case drained:
		return "lingering connection"
	case later:
		return "later request in progress"
	}
	return "connection waiting on its client"
}

// A connection counts as answered from the start of the server's first
// write, not its end: a write that takes long, whether it waits on the
// client or on a CPU the server lacks, is an answer under way, and the
// bound on pending connections closes those never answered first.
func TestAnsweredFromTheFirstWritesStart(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe() // a write waits for the other end to read
	defer client.Close()
	tc := &trackedConn{Conn: server, limiter: New(10, 0)}
	done := make(chan error, 1)
	go func() {
		_, err := tc.Write([]byte("HTTP/1.1 200 OK\r\n\r\n"))
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); tc.writing.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the write did not begin within 5 s")
		}
		time.Sleep(time.Millisecond) // polling a goroutine this test started, bounded
	}
	if !tc.answered.Load() {
		t.Error("a connection whose first write is under way counts as never answered")
	}
	io.Copy(io.Discard, io.LimitReader(client, 19))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
