package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// limiterHarness is a connLimiter over a real listener on 127.0.0.1, with
// the test playing http.Server: it reports the connection states itself.
type limiterHarness struct {
	lim      *connLimiter
	ln       net.Listener
	accepted chan net.Conn
}

func newLimiterHarness(t *testing.T, max int) *limiterHarness {
	t.Helper()
	return harnessFor(t, newConnLimiter(max))
}

// harnessFor is newLimiterHarness with the limiter given.
func harnessFor(t *testing.T, lim *connLimiter) *limiterHarness {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &limiterHarness{lim: lim, accepted: make(chan net.Conn, 16)}
	h.ln = h.lim.listen(raw)
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
func TestConnLimiterEvictsLongestIdle(t *testing.T) {
	t.Parallel()
	h := newLimiterHarness(t, 3)
	c1, s1 := h.dial(t)
	c2, s2 := h.dial(t)
	_, s3 := h.dial(t)
	for _, s := range []net.Conn{s1, s2, s3} {
		h.lim.connState(s, http.StateNew)
		h.lim.connState(s, http.StateActive) // each has a request under way
	}
	// Idle order: 2, then 1; 3 stays active.
	h.lim.connState(s2, http.StateIdle)
	h.lim.connState(s1, http.StateIdle)

	c4, err := net.DialTimeout("tcp", h.ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	if !waitClosed(c2, 5*time.Second) {
		t.Fatal("the connection idle the longest was not closed")
	}
	h.lim.connState(s2, http.StateClosed) // as the server reports it
	select {
	case s4 := <-h.accepted:
		defer s4.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the new connection was not accepted once room was made")
	}
	if waitClosed(c1, 50*time.Millisecond) {
		t.Error("a second idle connection was closed for one new one")
	}
	if got := h.lim.open(); got != 3 {
		t.Errorf("open connections: got %d, want 3", got)
	}
}

// At the cap with nothing idle, Accept waits; a connection that closes, or
// one that goes idle, makes room.
func TestConnLimiterWaitsWhenNoneIdle(t *testing.T) {
	t.Parallel()
	h := newLimiterHarness(t, 1)
	c1, s1 := h.dial(t)
	h.lim.connState(s1, http.StateNew)
	h.lim.connState(s1, http.StateActive)

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
	h.lim.connState(s1, http.StateIdle)
	if !waitClosed(c1, 5*time.Second) {
		t.Fatal("the connection gone idle was not closed to make room")
	}
	h.lim.connState(s1, http.StateClosed)
	select {
	case s2 := <-h.accepted:
		defer s2.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting client was not accepted")
	}
}

// With PETSTORE_MAX_CONNS=100 and a file limit the connections alone would
// exhaust, 150 clients holding idle connections leave a new client served
// within a second (decisions.md, "Hardening").
func TestMaxConnsIdleFlood(t *testing.T) {
	t.Parallel()
	// 140 files: without the cap, accept fails with "too many open files"
	// before the 150th connection.
	p := startBinary(t, map[string]string{"PETSTORE_MAX_CONNS": "100"},
		withPrefix("sh", "-c", `ulimit -n 140 && exec "$0"`))
	if l := p.waitLog(time.Second, func(l logLine) bool { return l["msg"] == "listening" }); l == nil || l["max_conns"] != float64(100) {
		t.Fatalf("listening line: got %v, want max_conns 100", l)
	}

	get := func(conn net.Conn, br *bufio.Reader, path, key string, within time.Duration) (int, error) {
		conn.SetDeadline(time.Now().Add(within))
		req := "GET " + path + " HTTP/1.1\r\nHost: x\r\n"
		if key != "" {
			req += "Authorization: Bearer " + key + "\r\n"
		}
		if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	held := make([]net.Conn, 0, 150)
	for i := range 150 {
		conn := p.dialRaw(t)
		if status, err := get(conn, bufio.NewReader(conn), "/healthz", "", 5*time.Second); err != nil || status != 200 {
			t.Fatalf("held connection %d: status %d, %v", i, status, err)
		}
		held = append(held, conn)
	}
	conn := p.dialRaw(t)
	start := time.Now()
	if status, err := get(conn, bufio.NewReader(conn), "/v1/categories", binKey, time.Second); err != nil || status != 200 {
		t.Fatalf("new client's keyed request: status %d, %v after %v", status, err, time.Since(start))
	}
	// The first held connection was idle the longest: it went first.
	if !waitClosed(held[0], 5*time.Second) {
		t.Error("the oldest idle connection is still open")
	}
	p.stop(t)
}

// Connections that never send a byte cannot hold the slots either: they
// count as idle from their accept, oldest first (decisions.md,
// "Hardening"), so a new client is still answered within a second.
func TestMaxConnsSilentFlood(t *testing.T) {
	t.Parallel()
	p := startBinary(t, map[string]string{"PETSTORE_MAX_CONNS": "100"},
		withPrefix("sh", "-c", `ulimit -n 140 && exec "$0"`))
	for range 150 {
		p.dialRaw(t) // connected, silent: not even a request line
	}
	conn := p.dialRaw(t)
	start := time.Now()
	conn.SetDeadline(time.Now().Add(time.Second))
	io.WriteString(conn, "GET /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+binKey+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("new client behind 150 silent connections: %v after %v", err, time.Since(start))
	}
	resp.Body.Close()
	p.stop(t)
}

// SIGTERM while clients send bodies slowly, one unauthenticated (answered
// 401 at once, its connection closed) and one authenticated mid-body: petstore waits out the
// grace, closes them, closes the journal and exits 0 (decisions.md,
// "Hardening"). This waits the real 10 s grace, in parallel with the rest.
func TestStopWithSlowBodies(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data.jsonl")
	p := startBinary(t, map[string]string{"PETSTORE_DATA": data})

	unauth := p.dialRaw(t)
	io.WriteString(unauth, "POST /v1/categories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	authed := p.dialRaw(t)
	io.WriteString(authed, "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+binKey+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":")
	// The 401 is logged once its handler returns; its connection is closed
	// then, without waiting for the rest of its body (see refuseKey).
	if p.waitLog(5*time.Second, func(l logLine) bool { return l["msg"] == "request" && l["status"] == float64(401) }) == nil {
		t.Fatal("the unauthenticated request was not answered")
	}
	start := time.Now()
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t, shutdownGrace+time.Second); code != 0 {
		t.Fatalf("exit code after SIGTERM: got %d, want 0; stderr:\n%s", code, redactAll(p.stderr.String()))
	}
	if p.waitLog(0, func(l logLine) bool { return l["msg"] == "stopped" }) == nil {
		t.Errorf("no stopped line after %v; stderr:\n%s", time.Since(start), redactAll(p.stderr.String()))
	}
	// The journal's lock is released: a second start on the file works.
	again := startBinary(t, map[string]string{"PETSTORE_DATA": data})
	again.stop(t)
	if _, err := os.Stat(data); err != nil {
		t.Error(err)
	}
}

// Connections that have begun their first request's headers and not
// finished them are bounded apart from the cap: past the bound, the oldest
// of them is closed. One whose request has been read, or that has sent
// nothing, does not count and is never closed for a newcomer.
func TestConnLimiterClosesOldestPending(t *testing.T) {
	t.Parallel()
	lim := newConnLimiter(100)
	lim.maxPending = 2
	h := harnessFor(t, lim)
	var clients []net.Conn
	begin := func(silent bool) net.Conn {
		client, server := h.dial(t)
		h.lim.connState(server, http.StateNew)
		clients = append(clients, client)
		if !silent {
			io.WriteString(client, "GET / HTTP/1.1\r\nX") // headers begun, not finished
			if _, err := server.Read(make([]byte, 64)); err != nil {
				t.Fatal(err)
			}
		}
		return server
	}
	h.lim.connState(begin(false), http.StateActive) // 0: its headers are read
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
