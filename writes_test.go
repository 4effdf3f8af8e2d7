package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Every 200 of the list, a page, a look-up and a get, and every 201,
// reaches the connection in no more write system calls than a bare
// handler writing the same headers and body in one Write needs, over
// HTTP/1.1 and HTTP/2: never the array's "]" in a write of its own, and
// over HTTP/1.1 no write smaller than the bare handler's. Counted at the connection, under
// TLS for HTTP/2. Above catalog.ClosedLimit the whole list may take one
// write more, and above catalog.JoinLimit a page two, none of them small.
func TestAnswersInFewestWrites(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for i := range 100 {
		body := fmt.Sprintf(`{"name":"category-%03d","description":"%s"}`, i, strings.Repeat("d", 30))
		if rec := postCategory(t, env, body); rec.Code != http.StatusCreated {
			t.Fatalf("create %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	large := newTestEnv(t)
	for i := range 800 {
		body := fmt.Sprintf(`{"name":"category-%03d","description":"%s"}`, i, strings.Repeat("d", 60))
		if rec := postCategory(t, large, body); rec.Code != http.StatusCreated {
			t.Fatalf("create %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	type answer struct {
		name, method, path, body string
		env                      *testEnv
		extra                    int // writes allowed beyond the bare handler's
	}
	answers := []answer{
		{"list of 100", "GET", "/v1/categories", "", env, 0},
		{"page of 50", "GET", "/v1/categories?limit=50&after=10", "", env, 0},
		{"look-up", "GET", "/v1/categories?name=CATEGORY-042", "", env, 0},
		{"get", "GET", "/v1/categories/42", "", env, 0},
		{"create", "POST", "/v1/categories", `{"name":"fresh-%d","description":"made now"}`, env, 0},
		{"list over 64 KiB", "GET", "/v1/categories", "", large, 1},
		{"page over 16 KiB", "GET", "/v1/categories?limit=700", "", large, 2},
		{"page under 16 KiB", "GET", "/v1/categories?limit=100", "", large, 0},
	}
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		for _, a := range answers {
			var n int
			request := func() *http.Request {
				n++
				body := a.body
				if strings.Contains(body, "%d") {
					body = fmt.Sprintf(body, n+1000*len(proto))
				}
				req, _ := http.NewRequest(a.method, a.path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+testKey)
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				return req
			}
			petstore, status, header, body := countWrites(t, proto, a.env.handler, request)
			bare, _, _, _ := countWrites(t, proto, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				maps.Copy(w.Header(), header)
				w.WriteHeader(status)
				w.Write(body)
			}), request)
			t.Logf("%s %s (%d bytes): %.1f writes, bare %.1f", proto, a.name, len(body), petstore.perAnswer, bare.perAnswer)
			// HTTP/2 adds the protocol's own frames now and then (a
			// settings or ping acknowledgement, a window update): half a
			// write per answer of slack, well short of a "]" on its own.
			slack := 0.0
			if proto == "HTTP/2" {
				slack = 0.5
			}
			if petstore.perAnswer > bare.perAnswer+float64(a.extra)+slack {
				t.Errorf("%s %s (%d bytes): %.1f writes per answer, the bare handler %.1f", proto, a.name, len(body), petstore.perAnswer, bare.perAnswer)
			}
			if proto == "HTTP/1.1" && petstore.smallest < min(bare.smallest, 512) {
				t.Errorf("%s %s (%d bytes): a write of %d bytes; the bare handler's smallest %d", proto, a.name, len(body), petstore.smallest, bare.smallest)
			}
		}
	}
}

// writeCount is what countWrites saw.
type writeCount struct {
	perAnswer float64 // write calls on the connection per answer
	smallest  int     // bytes of the smallest write
}

// countWrites serves h on 127.0.0.1 over proto (HTTP/2 with TLS), sends 10
// requests made by request on one connection, and counts the write calls on
// the server's side of it. It returns the count and the last answer. A run
// whose client opened a second connection (a busy machine can make it) is
// tried again, three times at most.
func countWrites(t *testing.T, proto string, h http.Handler, request func() *http.Request) (writeCount, int, http.Header, []byte) {
	t.Helper()
	for try := 1; ; try++ {
		count, status, header, body, conns := countWritesOnce(t, proto, h, request)
		if conns == 1 {
			return count, status, header, body
		}
		if try == 3 {
			t.Fatalf("%d connections in each of 3 tries, want 1", conns)
		}
	}
}

func countWritesOnce(t *testing.T, proto string, h http.Handler, request func() *http.Request) (writeCount, int, http.Header, []byte, int64) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	counted := &countingListener{Listener: srv.Listener}
	srv.Listener = counted
	client := &http.Client{Transport: &http.Transport{}}
	if proto == "HTTP/2" {
		srv.EnableHTTP2 = true
		srv.StartTLS()
		client = srv.Client()
		client.Transport.(*http.Transport).ForceAttemptHTTP2 = true
	} else {
		srv.Start()
	}
	defer srv.Close()
	const n = 10
	var (
		status int
		header http.Header
		body   []byte
		before int64
	)
	for i := range n + 1 {
		if i == 1 { // the first request pays for the connection (and TLS)
			before = counted.writes.Load()
			counted.smallest.Store(1 << 30)
		}
		req := request()
		req.URL.Scheme, req.URL.Host = "http", srv.Listener.Addr().String()
		if proto == "HTTP/2" {
			req.URL.Scheme = "https"
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != map[string]int{"HTTP/1.1": 1, "HTTP/2": 2}[proto] {
			t.Fatalf("answered over %s, want %s", resp.Proto, proto)
		}
		status, header = resp.StatusCode, resp.Header.Clone()
	}
	header.Del("Content-Length")
	header.Del("Date")
	header.Set("Content-Length", fmt.Sprint(len(body)))
	client.CloseIdleConnections()
	return writeCount{perAnswer: float64(counted.writes.Load()-before) / n, smallest: int(counted.smallest.Load())}, status, header, bytes.Clone(body), counted.conns.Load()
}

// countingListener counts the write calls (and the smallest) on the
// connections it accepts.
type countingListener struct {
	net.Listener
	conns, writes, smallest atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.conns.Add(1)
	return &countingConn{Conn: c, l: l}, nil
}

type countingConn struct {
	net.Conn
	l *countingListener
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.l.writes.Add(1)
	if int64(len(p)) < c.l.smallest.Load() {
		c.l.smallest.Store(int64(len(p)))
	}
	return c.Conn.Write(p)
}
