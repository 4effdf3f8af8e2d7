package connlimit

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// limiterHarness is a Limiter over a real listener on 127.0.0.1, with
// the test playing http.Server: it reports the connection states itself.
type limiterHarness struct {
	lim      *Limiter
	ln       net.Listener
	accepted chan net.Conn
}

func newLimiterHarness(t *testing.T, max int) *limiterHarness {
	t.Helper()
	return harnessFor(t, New(max, 0))
}

// harnessFor is newLimiterHarness with the limiter given.
func harnessFor(t *testing.T, lim *Limiter) *limiterHarness {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &limiterHarness{lim: lim, accepted: make(chan net.Conn, 16)}
	h.ln = h.lim.Listen(raw)
	t.Cleanup(func() { h.ln.Close() })
	go func() {
		for {
			c, err := h.ln.Accept()
			if err != nil {
				close(h.accepted)
				return
			}
			h.accepted <- c
		}
	}()
	return h
}

// dial connects a client and returns it with the server side accepted.
func (h *limiterHarness) dial(t *testing.T) (client, server net.Conn) {
	t.Helper()
	client, err := net.DialTimeout("tcp", h.ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	select {
	case server = <-h.accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("not accepted within 5s")
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// waitClosed reports whether the server closed client's connection within d.
func waitClosed(client net.Conn, d time.Duration) bool {
	client.SetReadDeadline(time.Now().Add(d))
	_, err := client.Read(make([]byte, 1))
	return err == io.EOF
}

// At the cap, the connection idle the longest is closed to make room.
func TestLimiterEvictsLongestIdle(t *testing.T) {
	t.Parallel()
	h := newLimiterHarness(t, 3)
	c1, s1 := h.dial(t)
	c2, s2 := h.dial(t)
	_, s3 := h.dial(t)
	for _, s := range []net.Conn{s1, s2, s3} {
		h.lim.ConnState(s, http.StateNew)
		h.lim.ConnState(s, http.StateActive) // each has a request under way
	}
	// Idle order: 2, then 1; 3 stays active.
	h.lim.ConnState(s2, http.StateIdle)
	h.lim.ConnState(s1, http.StateIdle)

	c4, err := net.DialTimeout("tcp", h.ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	if !waitClosed(c2, 5*time.Second) {
		t.Fatal("the connection idle the longest was not closed")
	}
	h.lim.ConnState(s2, http.StateClosed) // as the server reports it
	select {
	case s4 := <-h.accepted:
		defer s4.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the new connection was not accepted once room was made")
	}
	if waitClosed(c1, 50*time.Millisecond) {
		t.Error("a second idle connection was closed for one new one")
	}
	if got := h.lim.Open(); got != 3 {
		t.Errorf("open connections: got %d, want 3", got)
	}
}

// At the cap with nothing idle, Accept waits; a connection that closes, or
// one that goes idle, makes room.
func TestLimiterWaitsWhenNoneIdle(t *testing.T) {
	t.Parallel()
	h := newLimiterHarness(t, 1)
	c1, s1 := h.dial(t)
	h.lim.ConnState(s1, http.StateNew)
	h.lim.ConnState(s1, http.StateActive)

	c2, err := net.DialTimeout("tcp", h.ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	// Bounded polling: the limiter says when Accept waits.
	deadline := time.Now().Add(5 * time.Second)
	for !h.lim.waiting.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !h.lim.waiting.Load() {
		t.Fatal("Accept does not wait at the cap")
	}
	select {
	case <-h.accepted:
		t.Fatal("accepted over the cap")
	default:
	}
	// The active connection finishes its request and goes idle: it is the
	// one to close, and then the waiting client is accepted.
	h.lim.ConnState(s1, http.StateIdle)
	if !waitClosed(c1, 5*time.Second) {
		t.Fatal("the connection gone idle was not closed to make room")
	}
	h.lim.ConnState(s1, http.StateClosed)
	select {
	case s2 := <-h.accepted:
		defer s2.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting client was not accepted")
	}
}

// Connections that have begun their first request's headers and not
// finished them are bounded apart from the cap: past the bound, the oldest
// of them is closed. One whose request has been read, or that has sent
// nothing, does not count and is never closed for a newcomer.
func TestLimiterClosesOldestPending(t *testing.T) {
	t.Parallel()
	lim := New(100, 0)
	lim.maxPending = 2
	h := harnessFor(t, lim)
	var clients []net.Conn
	begin := func(silent bool) net.Conn {
		client, server := h.dial(t)
		h.lim.ConnState(server, http.StateNew)
		clients = append(clients, client)
		if !silent {
			io.WriteString(client, "GET / HTTP/1.1\r\nX") // headers begun, not finished
			if _, err := server.Read(make([]byte, 64)); err != nil {
				t.Fatal(err)
			}
		}
		return server
	}
	h.lim.ConnState(begin(false), http.StateActive) // 0: its headers are read
	begin(true)                                     // 1: says nothing
	begin(false)                                    // 2
	begin(false)                                    // 3
	for i, c := range clients {
		if waitClosed(c, 50*time.Millisecond) {
			t.Fatalf("connection %d closed within the bound", i)
		}
	}
	begin(false) // 4; pending now: 2, 3, 4
	if !waitClosed(clients[2], 5*time.Second) {
		t.Fatal("the oldest pending connection was not closed past the bound")
	}
	for i, c := range clients {
		if i != 2 && waitClosed(c, 50*time.Millisecond) {
			t.Errorf("connection %d closed; only the oldest pending one should be", i)
		}
	}
}

// A connection held idle to which a request has come counts as arriving
// (and in flight) from the moment its bytes wait in the socket, before the
// server reads them, until its headers are read; a new connection only
// once net/http would take it for idle.
func TestLimiterArriving(t *testing.T) {
	t.Parallel()
	h := newLimiterHarness(t, 10)
	client, server := h.dial(t)
	h.lim.ConnState(server, http.StateNew)
	h.lim.ConnState(server, http.StateActive)
	h.lim.ConnState(server, http.StateIdle) // between two requests
	if n := h.lim.Arriving(); n != 0 {
		t.Fatalf("Arriving with nothing sent: %d", n)
	}
	if n := h.lim.InFlight(); n != 0 {
		t.Fatalf("InFlight with nothing sent: %d", n)
	}
	io.WriteString(client, "GET / HTTP/1.1\r\n")
	if !eventually(func() bool { return h.lim.Arriving() == 1 }) {
		t.Fatalf("a request waiting unread: Arriving %d, want 1", h.lim.Arriving())
	}
	if n := h.lim.InFlight(); n != 1 {
		t.Errorf("a request waiting unread: InFlight %d, want 1", n)
	}
	if _, err := server.Read(make([]byte, 8)); err != nil { // its first bytes read, not all
		t.Fatal(err)
	}
	if n := h.lim.Arriving(); n != 1 {
		t.Errorf("a request begun: Arriving %d, want 1", n)
	}
	h.lim.ConnState(server, http.StateActive) // its headers read
	if n := h.lim.Arriving(); n != 0 {
		t.Errorf("a request being served: Arriving %d, want 0", n)
	}
	if n := h.lim.InFlight(); n != 1 {
		t.Errorf("a request being served: InFlight %d, want 1", n)
	}

	fresh, freshServer := h.dial(t)
	h.lim.ConnState(freshServer, http.StateNew)
	io.WriteString(fresh, "GET / HTTP/1.1\r\n")
	if !eventually(func() bool { return h.lim.InFlight() == 2 }) {
		t.Fatalf("a first request waiting unread: InFlight %d, want 2", h.lim.InFlight())
	}
	if n := h.lim.Arriving(); n != 0 {
		t.Errorf("a new connection's first request: Arriving %d, want 0 (net/http does not close it)", n)
	}
	tracked(freshServer).idleSince.Add(-int64(newTakenForIdle)) // accepted 5 s earlier
	if n := h.lim.Arriving(); n != 1 {
		t.Errorf("a connection new for 5 s with a request waiting: Arriving %d, want 1", n)
	}
}
