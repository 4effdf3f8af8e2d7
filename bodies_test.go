package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The body budget bounds the memory bodies hold at once: with room for one
// body, a second waits until the first is done, and both are answered.
func TestBodyBudgetMakesBodiesWait(t *testing.T) {
	t.Parallel()
	budget := newBodyBudget(2*bodyBlock, 10*time.Second)
	env := newTestEnv(t, func(d *deps, _ *[]route) { d.bodies = budget })
	srv := httptest.NewServer(env.handler)
	t.Cleanup(srv.Close)

	const size = 100_000 // two blocks
	body := func(name string) string {
		head := `{"name":"` + name + `"`
		return head + strings.Repeat(" ", size-len(head)-1) + "}"
	}
	open := func(name string, first int) (net.Conn, string) {
		conn, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		b := body(name)
		io.WriteString(conn, "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+testKey+
			"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(size)+"\r\n\r\n"+b[:first])
		return conn, b[first:]
	}
	status := func(conn net.Conn) int {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(5 * time.Second)
		for !cond() { // bounded polling of the budget's state
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}

	first, firstRest := open("first", 70_000) // past one block: holds both
	waitFor("the first body holds the budget", func() bool { return budget.free.Load() == 0 })
	second, secondRest := open("second", 70_000)
	io.WriteString(second, secondRest)
	waitFor("the second body waits", func() bool { return budget.waiting.Load() == 1 })

	io.WriteString(first, firstRest)
	if got := status(first); got != http.StatusCreated {
		t.Errorf("first: status %d, want 201", got)
	}
	if got := status(second); got != http.StatusCreated {
		t.Errorf("second: status %d, want 201", got)
	}
	waitFor("the budget is given back", func() bool { return budget.free.Load() == 2 })
}

// A body that finds no memory free within the budget's wait is not the
// client's fault: 503 unavailable with Retry-After, and nothing was read.
func TestBodyBudgetSpentIsUnavailable(t *testing.T) {
	t.Parallel()
	budget := newBodyBudget(bodyBlock, 20*time.Millisecond)
	if err := budget.acquire(context.Background(), 1); err != nil { // held by another body
		t.Fatal(err)
	}
	env := newTestEnv(t, func(d *deps, _ *[]route) { d.bodies = budget })
	rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`})
	mustError(t, rec, http.StatusServiceUnavailable, codeUnavailable)
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After: got %q, want 1", got)
	}
	budget.release(1)
	if rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`}); rec.Code != http.StatusCreated {
		t.Errorf("with the budget free again: got %d, want 201", rec.Code)
	}
}
