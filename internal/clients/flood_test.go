package clients

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/testkit"
)

// Floods of clients without a key, bounded in count and time, while real
// clients are served (docs/security.md, "Connections").

// clientHelloStart is the first bytes of a TLS ClientHello: a handshake
// record of 512 bytes, a ClientHello of 508, version 1.2, and the start of
// its random. Sent alone, they hold a handshake open.
var clientHelloStart = []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a}

// churn keeps n connections to addr open until ctx ends, each sending the
// first bytes of a ClientHello and nothing more, opened again as soon as
// petstore closes it. It returns how many it opened.
func churn(ctx context.Context, addr string, n int) *atomic.Int64 {
	var opened atomic.Int64
	for i := range n {
		go func() {
			d := net.Dialer{Timeout: 5 * time.Second}
			for ctx.Err() == nil {
				conn, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					time.Sleep(10 * time.Millisecond) // the backlog is full: try again
					continue
				}
				opened.Add(1)
				conn.Write(clientHelloStart[:11+i%len(clientHelloStart[11:])])
				stop := context.AfterFunc(ctx, func() { conn.Close() })
				io.Copy(io.Discard, conn) // until petstore closes it
				stop()
				conn.Close()
			}
		}()
	}
	return &opened
}

// While 2,000 clients without a key churn unfinished TLS handshakes,
// new HTTPS clients with a key are served: a handshake that progresses is
// never closed for one that waits on its client.
func TestHandshakeChurnDoesNotShutOutClients(t *testing.T) {
	t.Parallel() // the flood itself runs alone: Exclusive
	if testing.Short() {
		t.Skip("a flood")
	}
	testkit.Exclusive(t, "flood")
	vars, roots := tlsFiles(t, t.TempDir())
	svc := startWith(t, vars)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened := churn(ctx, svc.Addr, 2000)
	// The flood under way: 2,000 churners fill the bound of 256 pending
	// connections within a fraction of a second. Bounded by cancel.
	time.Sleep(time.Second)
	served, failures := 0, map[string]int{}
	for range 10 {
		if err := keyedGet(svc.URL(""), roots); err != nil {
			failures[lastWords(err.Error())]++
		} else {
			served++
		}
		time.Sleep(100 * time.Millisecond) // spread over the flood
	}
	cancel()
	t.Logf("%d of 10 HTTPS clients served while %d stalled handshakes were opened; failures: %v", served, opened.Load(), failures)
	if served < 8 {
		t.Errorf("%d of 10 new HTTPS clients served during the flood, want at least 8; failures: %v", served, failures)
	}
}

// keyedGet lists the categories over a new TLS connection, with the write
// key, and says why if it could not.
func keyedGet(url string, roots *x509.CertPool) error {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true, ForceAttemptHTTP2: true,
	}}
	req, _ := http.NewRequest("GET", url+"/v1/categories", nil)
	req.Header.Set("Authorization", "Bearer "+writeKey)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "[") {
		return fmt.Errorf("status %d: %.80s", resp.StatusCode, body)
	}
	return nil
}

// stallH1 opens an HTTP/1.1 connection to addr over TLS with a small
// receive buffer, pipelines large answers (the OpenAPI document) and never
// reads them.
func stallH1(addr string, roots *x509.CertPool) (net.Conn, error) {
	raw, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	raw.(*net.TCPConn).SetReadBuffer(2048)
	conn := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := conn.Handshake(); err != nil {
		raw.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	conn.Write([]byte(strings.Repeat("GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 40)))
	return conn, nil
}

// With the connection cap filled by clients without a key that never read
// their answers (HTTP/1.1, pipelined) or hold streams behind a zero window
// (HTTP/2), a new client with a key is served within 2 s: connections that
// wait on their clients are evictable like idle ones.
func TestCapFilledWithStalledConnections(t *testing.T) {
	t.Parallel() // the flood itself runs alone: Exclusive
	if testing.Short() {
		t.Skip("a flood")
	}
	testkit.Exclusive(t, "flood")
	const maxConns = 300
	vars, roots := tlsFiles(t, t.TempDir())
	vars["PETSTORE_MAX_CONNS"] = fmt.Sprint(maxConns)
	svc := startWith(t, vars)
	var wg sync.WaitGroup
	var held sync.Map
	defer func() {
		held.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	}()
	for i := range maxConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conn net.Conn
			var err error
			if i%2 == 0 {
				conn, err = stallH1(svc.Addr, roots)
			} else if conn, err = dialH2(svc.Addr, roots); err == nil {
				go holdStreams(conn)
			}
			if err == nil {
				held.Store(conn, true)
			}
		}()
	}
	wg.Wait()
	time.Sleep(4 * time.Second) // every connection stuck on its client for longer than petstore waits
	start := time.Now()
	err := keyedGet(svc.URL(""), roots)
	if took := time.Since(start); err != nil || took > 2*time.Second {
		t.Errorf("a keyed client at the cap filled with stalled connections: %v after %v, want an answer within 2 s", err, took)
	}
}
