package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"petstore/internal/connlimit"
)

// Half-way through the drain petstore turns keep-alives off, and net/http
// closes the HTTP/1.1 connections it holds idle; not while a request has
// come on one and waits to be read (by a server short of CPU), which the
// close would lose: the drain waits for it to be read.
func TestDrainWaitsForArrivingRequests(t *testing.T) {
	t.Parallel()
	conns := connlimit.New(100, 0)
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		ConnState: conns.ConnState, ConnContext: conns.ConnContext,
	}
	served := listenLocal(t, conns)
	go srv.Serve(served)
	t.Cleanup(func() { srv.Close() })

	// kept: a keep-alive connection the server holds idle after a request.
	kept := dialLocal(t, served.Addr())
	io.WriteString(kept, "GET / HTTP/1.1\r\nHost: petstore\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(kept), nil); err != nil || resp.Close {
		t.Fatalf("first answer: %v (close: %v)", err, resp != nil && resp.Close)
	}
	// unserved: a connection of the same limiter whose request nobody
	// reads, as a starved server's would wait; it was served before.
	unserved := listenLocal(t, conns)
	client := dialLocal(t, unserved.Addr())
	server, err := unserved.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	for _, state := range []http.ConnState{http.StateNew, http.StateActive, http.StateIdle} {
		conns.ConnState(server, state)
	}
	io.WriteString(client, "GET / HTTP/1.1\r\nHost: petstore\r\n\r\n")
	waitFor(t, "the unread request to count as arriving", func() bool { return conns.Arriving() > 0 })

	drainFor := func(delay time.Duration) {
		t.Helper()
		stop := stopping{ready: &readiness{}, delay: delay}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		if err := drain(context.Background(), srv, conns, stop, make(chan error), log); err != nil {
			t.Fatal(err)
		}
	}
	drainFor(200 * time.Millisecond) // keep-alives would go off at 100 ms
	if closedWithin(kept, 50*time.Millisecond) {
		t.Fatal("an idle connection was closed while a request waited unread on another")
	}
	conns.ConnState(server, http.StateActive) // its headers read: it is served
	drainFor(200 * time.Millisecond)
	if !closedWithin(kept, 5*time.Second) {
		t.Fatal("the idle connection was not closed once no request was arriving")
	}
}

// listenLocal returns a listener of conns on 127.0.0.1, closed at the end
// of the test.
func listenLocal(t *testing.T, conns *connlimit.Limiter) net.Listener {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := conns.Listen(raw)
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dialLocal connects to addr, for the test's length.
func dialLocal(t *testing.T, addr net.Addr) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the server closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}
