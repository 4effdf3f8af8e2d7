package e2e

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

	"petstore/internal/petstoretest"
)

// waitClosed reports whether the server closed client's connection within d.
func waitClosed(client net.Conn, d time.Duration) bool {
	client.SetReadDeadline(time.Now().Add(d))
	_, err := client.Read(make([]byte, 1))
	return err == io.EOF
}

// With PETSTORE_MAX_CONNS=100 and a file limit the connections alone would
// exhaust, 150 clients holding idle connections leave a new client served
// within a second (docs/api.md, "Limits").
func TestMaxConnsIdleFlood(t *testing.T) {
	t.Parallel()
	// 140 files: without the cap, accept fails with "too many open files"
	// before the 150th connection.
	p := petstoretest.Start(t, map[string]string{"PETSTORE_MAX_CONNS": "100"},
		petstoretest.WithPrefix("sh", "-c", `ulimit -n 140 && exec "$0"`))
	if l := p.WaitLog(time.Second, func(l petstoretest.LogLine) bool { return l["msg"] == "listening" }); l == nil || l["max_conns"] != float64(100) {
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
		conn := p.DialRaw(t)
		if status, err := get(conn, bufio.NewReader(conn), "/healthz", "", 5*time.Second); err != nil || status != 200 {
			t.Fatalf("held connection %d: status %d, %v", i, status, err)
		}
		held = append(held, conn)
	}
	conn := p.DialRaw(t)
	start := time.Now()
	if status, err := get(conn, bufio.NewReader(conn), "/v1/categories", petstoretest.Key, time.Second); err != nil || status != 200 {
		t.Fatalf("new client's keyed request: status %d, %v after %v", status, err, time.Since(start))
	}
	// The first held connection was idle the longest: it went first.
	if !waitClosed(held[0], 5*time.Second) {
		t.Error("the oldest idle connection is still open")
	}
	p.Stop(t)
}

// Connections that never send a byte cannot hold the slots either: they
// count as idle from their accept, oldest first (docs/api.md, "Limits"),
// so a new client is still answered within a second.
func TestMaxConnsSilentFlood(t *testing.T) {
	t.Parallel()
	p := petstoretest.Start(t, map[string]string{"PETSTORE_MAX_CONNS": "100"},
		petstoretest.WithPrefix("sh", "-c", `ulimit -n 140 && exec "$0"`))
	for range 150 {
		p.DialRaw(t) // connected, silent: not even a request line
	}
	conn := p.DialRaw(t)
	start := time.Now()
	conn.SetDeadline(time.Now().Add(time.Second))
	io.WriteString(conn, "GET /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+petstoretest.Key+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("new client behind 150 silent connections: %v after %v", err, time.Since(start))
	}
	resp.Body.Close()
	p.Stop(t)
}

// SIGTERM while clients send bodies slowly, one unauthenticated (answered
// 401 at once, its connection closed) and one authenticated mid-body: petstore waits out the
// grace (PETSTORE_SHUTDOWN_GRACE, 2 s here), closes them, closes the journal
// and exits 0 (docs/operations.md, "Stopping").
func TestStopWithSlowBodies(t *testing.T) {
	t.Parallel()
	const grace = 2 * time.Second
	data := filepath.Join(t.TempDir(), "data.jsonl")
	p := petstoretest.Start(t, map[string]string{"PETSTORE_DATA": data, "PETSTORE_SHUTDOWN_GRACE": grace.String()})

	unauth := p.DialRaw(t)
	io.WriteString(unauth, "POST /v1/categories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	authed := p.DialRaw(t)
	io.WriteString(authed, "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+petstoretest.Key+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":")
	// The 401 is logged once its handler returns; its connection is closed
	// then, without waiting for the rest of its body (see refuseKey).
	if p.WaitLog(5*time.Second, func(l petstoretest.LogLine) bool { return l["msg"] == "request" && l["status"] == float64(401) }) == nil {
		t.Fatal("the unauthenticated request was not answered")
	}
	start := time.Now()
	p.Signal(t, syscall.SIGTERM)
	if code := p.Wait(t, grace+time.Second); code != 0 {
		t.Fatalf("exit code after SIGTERM: got %d, want 0; stderr:\n%s", code, petstoretest.Redact(p.Stderr.String()))
	}
	if took := time.Since(start); took < grace {
		t.Errorf("exited %v after SIGTERM with a request in flight, want the %v grace waited out", took, grace)
	}
	if p.WaitLog(0, func(l petstoretest.LogLine) bool { return l["msg"] == "grace over; closing the connections left" }) == nil {
		t.Errorf("no line saying the grace was over; stderr:\n%s", petstoretest.Redact(p.Stderr.String()))
	}
	if p.WaitLog(0, func(l petstoretest.LogLine) bool { return l["msg"] == "stopped" }) == nil {
		t.Errorf("no stopped line after %v; stderr:\n%s", time.Since(start), petstoretest.Redact(p.Stderr.String()))
	}
	// The journal's lock is released: a second start on the file works.
	again := petstoretest.Start(t, map[string]string{"PETSTORE_DATA": data})
	again.Stop(t)
	if _, err := os.Stat(data); err != nil {
		t.Error(err)
	}
}
