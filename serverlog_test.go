package main

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Through the server: a client that opens connection after connection and
// fails each handshake leaves a line or two in the log, not one each.
func TestHandshakeErrorsDoNotFillTheLog(t *testing.T) {
	t.Parallel()
	srv := startTLSServer(t, defaultLimits, 1000, func(h http.Handler) http.Handler { return h })
	const attempts = 200
	for range attempts {
		conn, err := net.DialTimeout("tcp", srv.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")) // plain HTTP on the HTTPS port
		waitServerClosed(conn, 5*time.Second)
		conn.Close()
	}
	n := strings.Count(srv.logs.String(), "TLS handshake error")
	if n < 1 || n > attempts/10 {
		t.Errorf("%d failed handshakes logged %d lines; want a few (one a second)", attempts, n)
	}
}
