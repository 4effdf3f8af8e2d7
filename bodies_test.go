package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/bodybudget"
)

// The body budget bounds the memory bodies hold at once: with room for one
// body, a second waits until the first is done, and both are answered.
func TestBodyBudgetMakesBodiesWait(t *testing.T) {
	t.Parallel()
	budget := bodybudget.New(2*bodybudget.Block, maxBodyBytes, 10*time.Second)
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
	waitFor("the first body holds the budget", func() bool { return budget.Free() == 0 })
	second, secondRest := open("second", 70_000)
	io.WriteString(second, secondRest)
	waitFor("the second body waits", func() bool { return budget.Waiting() == 1 })

	io.WriteString(first, firstRest)
	if got := status(first); got != http.StatusCreated {
		t.Errorf("first: status %d, want 201", got)
	}
	if got := status(second); got != http.StatusCreated {
		t.Errorf("second: status %d, want 201", got)
	}
	waitFor("the budget is given back", func() bool { return budget.Free() == 2 })
}

// A body that finds no memory free within the budget's wait is not the
// client's fault: 503 unavailable with Retry-After, and nothing was read.
func TestBodyBudgetSpentIsUnavailable(t *testing.T) {
	t.Parallel()
	budget := bodybudget.New(bodybudget.Block, maxBodyBytes, 20*time.Millisecond)
	var other bodybudget.Hold // another body's, read and not given back yet
	if _, err := budget.Read(context.Background(), &other, sha256.Sum256([]byte(testKey2)), strings.NewReader("{}"), 2, nil); err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(d *deps, _ *[]route) { d.bodies = budget })
	rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`})
	mustError(t, rec, http.StatusServiceUnavailable, codeUnavailable)
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After: got %q, want 1", got)
	}
	budget.Release(&other)
	if rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`}); rec.Code != http.StatusCreated {
		t.Errorf("with the budget free again: got %d, want 201", rec.Code)
	}
}

// Memory is taken as bytes arrive, and two bodies that each hold part of
// what they need never wait for each other: in a budget of 20 blocks, two
// bodies of 1 MiB (16 blocks) that have each sent 300 KB both finish. The
// first to need more than the budget spares holds its reserve and goes on;
// the other waits for it.
func TestBodyBudgetHalfReadBodiesDoNotDeadlock(t *testing.T) {
	t.Parallel()
	budget := bodybudget.New(20*bodybudget.Block, maxBodyBytes, 10*time.Second)
	env := newTestEnv(t, func(d *deps, _ *[]route) { d.bodies = budget })
	srv := httptest.NewServer(env.handler)
	t.Cleanup(srv.Close)

	const size, first = maxBodyBytes, 300_000
	open := func(key, name string) (net.Conn, string) {
		conn, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		head := `{"name":"` + name + `"`
		b := head + strings.Repeat(" ", size-len(head)-1) + "}"
		io.WriteString(conn, "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+key+
			"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(size)+"\r\n\r\n"+b[:first])
		return conn, b[first:]
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

	a, aRest := open(testKey, "first")
	// 300 KB in a buffer of 512 KiB: 8 blocks, not the 16 declared.
	waitFor("the first body holds what has come", func() bool { return budget.Free() == 12 && budget.Reserved() })
	b, bRest := open(testKey2, "second")
	waitFor("the second body waits", func() bool { return budget.Waiting() == 1 })
	io.WriteString(b, bRest)
	io.WriteString(a, aRest)
	for name, conn := range map[string]net.Conn{"first": a, "second": b} {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("%s: status %d, want 201", name, resp.StatusCode)
		}
	}
	waitFor("the budget is given back", func() bool { return budget.Free() == 20 && !budget.Reserved() })
}

// A key's bodies claim at most a quarter of the budget, by their largest
// size; one more waits for its key's share, and only for that: another
// key's body goes ahead. Waiting too long is 503 unavailable, and nothing
// was taken for it.
func TestBodyBudgetKeyShare(t *testing.T) {
	t.Parallel()
	budget := bodybudget.New(64*maxBodyBytes, maxBodyBytes, 50*time.Millisecond)
	env := newTestEnv(t, func(d *deps, _ *[]route) { d.bodies = budget })
	holds := make([]bodybudget.Hold, budget.PerKey()/16)
	for i := range holds { // 1 MiB bodies of testKey, read and not given back yet
		body := strings.NewReader(strings.Repeat(" ", maxBodyBytes))
		if _, err := budget.Read(context.Background(), &holds[i], sha256.Sum256([]byte(testKey)), body, maxBodyBytes, nil); err != nil {
			t.Fatal(err)
		}
	}
	rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`})
	e := mustError(t, rec, http.StatusServiceUnavailable, codeUnavailable)
	if !strings.Contains(e.Message, "API key") {
		t.Errorf("message %q: want it to say the key sends too many bodies", e.Message)
	}
	other := authJSON()
	other["Authorization"] = "Bearer " + testKey2
	if rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"cat"}`, header: other}); rec.Code != http.StatusCreated {
		t.Errorf("another key's create: got %d, want 201", rec.Code)
	}
	budget.Release(&holds[0])
	if rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`}); rec.Code != http.StatusCreated {
		t.Errorf("with the key's share free again: got %d, want 201", rec.Code)
	}
	for i := range holds[1:] {
		budget.Release(&holds[1+i])
	}
	if got, want := budget.Free(), int64(64*maxBodyBytes/bodybudget.Block); got != want {
		t.Errorf("free blocks: got %d, want %d", got, want)
	}
}
