package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/internal/store"
)

// An answer given without reading the body the request declared ends the
// connection at once (Connection: close), rather than waiting for the rest
// of the body; an answer to a request whose body was read keeps the
// connection for the next request (docs/security.md, "Connections").
func TestUnreadBodyClosesTheConnection(t *testing.T) {
	t.Parallel()
	svc := startRun(t, baseEnv(store.MemoryPath))
	for _, tt := range []struct {
		name      string
		request   string
		status    int
		keepAlive bool
	}{
		{"create, body read", "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + e2eKey +
			"\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"name\":\"dog\"}", http.StatusCreated, true},
		{"bad body, read", "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + e2eKey +
			"\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n{x}", http.StatusBadRequest, true},
		{"no key, body declared", "POST /v1/categories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\nx",
			http.StatusUnauthorized, false},
		{"public route, body declared", "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\nx", http.StatusOK, false},
		{"public route, chunked body", "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n", http.StatusOK, false},
		{"public route, no body", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusOK, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", svc.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, tt.request); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status: got %d, want %d", resp.StatusCode, tt.status)
			}
			if resp.Close == tt.keepAlive {
				t.Errorf("Connection: close is %v, want %v", resp.Close, !tt.keepAlive)
			}
			// A closed connection ends at once, without waiting for the
			// rest of the body; an open one answers the next request.
			start := time.Now()
			io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			_, err = http.ReadResponse(br, nil)
			switch {
			case tt.keepAlive && err != nil:
				t.Errorf("the next request on the connection: %v", err)
			case !tt.keepAlive && err == nil:
				t.Errorf("the connection answered another request; want it closed")
			case !tt.keepAlive && time.Since(start) > 5*time.Second:
				t.Errorf("the connection closed after %v; want at once", time.Since(start))
			case !tt.keepAlive && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "reset"):
				t.Errorf("the connection ended with %v; want EOF", err)
			}
		})
	}
}
