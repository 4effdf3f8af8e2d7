package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/apikey"
	"petstore/internal/bodybudget"
)

// One API key's slow bodies cannot hold another key's creates back (README,
// "Limits"): while one key holds 64 connections that each declare a 1 MiB
// body and send a byte now and then, creates with another key are answered
// at once (within 1 s on a busy machine), and the slow bodies hold memory only
// for what has arrived, within a quarter of the budget.
func TestSlowBodiesOfOneKeyDoNotHoldOthersBack(t *testing.T) {
	t.Parallel()
	const (
		slow  = 64
		bound = time.Second // generous, for a busy machine: unhindered, a create takes a millisecond or two; held back, it waits out the slow bodies' 10 s
	)
	budget := bodybudget.New(64*maxBodyBytes, maxBodyBytes, 10*time.Second)
	total := budget.Free()
	env := newTestEnv(t, func(d *deps, _ *[]route) { d.bodies = budget })
	var entered atomic.Int64 // slow creates that reached the handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Slow") != "" {
			entered.Add(1)
		}
		env.handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	conns := make([]net.Conn, slow)
	for i := range conns {
		c, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
		io.WriteString(c, "POST /v1/categories HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\nAuthorization: Bearer "+testKey+
			"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(maxBodyBytes)+"\r\n\r\n"+`{"name":"slow`+strconv.Itoa(i)+`"`)
	}
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() { // a byte a connection every 100 ms: slow, never stopped
		defer close(trickled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for _, c := range conns {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				c.Write([]byte{' '})
			}
		}
	}()
	defer func() { close(stop); <-trickled }()
	deadline := time.Now().Add(10 * time.Second)
	for entered.Load() < slow { // bounded polling of the server's progress
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d slow creates reached the handler within 10s", entered.Load(), slow)
		}
		time.Sleep(time.Millisecond)
	}

	checkOtherKeyCreates(t, srv.URL, bound)
	// A byte or a few of each has come: a block each at most, for the
	// bodies its key's share let in.
	if held := total - budget.Free(); held > slow {
		t.Errorf("the slow bodies hold %d of %d blocks, want at most one each", held, total)
	}
}

// One key's fast-then-stalled bodies cannot hold the whole budget: 64
// connections of one key each send all but the last byte of a 1 MiB body
// at once and then stall. Without the per-key quarter they would hold the
// whole 64 MiB budget; with it, a quarter, and another key's creates are
// answered at once (within 1 s on a busy machine).
func TestStalledBodiesOfOneKeyHoldAQuarter(t *testing.T) {
	t.Parallel()
	const (
		stalled = 64
		bound   = time.Second // generous, for a busy machine: unhindered, a create takes a millisecond or two; held back, it waits out the stalled bodies' 10 s
	)
	budget := bodybudget.New(64*maxBodyBytes, maxBodyBytes, 10*time.Second)
	total := budget.Free()
	env := newTestEnv(t, func(d *deps, _ *[]route) { d.bodies = budget })
	srv := httptest.NewServer(env.handler)
	t.Cleanup(srv.Close)

	for i := range stalled {
		c, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		head := "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testKey +
			"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(maxBodyBytes) + "\r\n\r\n"
		body := `{"name":"stalled` + strconv.Itoa(i) + `"`
		body += strings.Repeat(" ", maxBodyBytes-1-len(body))
		go func() { // blocks once the server stops reading; ends with c
			c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			io.WriteString(c, head+body)
		}()
	}
	perKey := total / 4
	deadline := time.Now().Add(10 * time.Second)
	for total-budget.Free() < perKey { // bounded polling of the server's progress
		if time.Now().After(deadline) {
			t.Fatalf("the stalled bodies hold %d of %d blocks after 10s, want at least %d", total-budget.Free(), total, perKey)
		}
		time.Sleep(time.Millisecond)
	}

	checkOtherKeyCreates(t, srv.URL, bound)
	if held := total - budget.Free(); held > perKey {
		t.Errorf("the stalled bodies of one key hold %d of %d blocks, want at most a quarter, %d", held, total, perKey)
	}
}

// checkOtherKeyCreates makes 20 creates with testKey2 at base, one after
// another: each must be 201, the slowest within bound.
func checkOtherKeyCreates(t *testing.T, base string, bound time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	var worst time.Duration
	for i := range 20 {
		req, err := http.NewRequest("POST", base+"/v1/categories", strings.NewReader(`{"name":"other`+strconv.Itoa(i)+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testKey2)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("create %d with the other key: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %d with the other key: status %d, want 201", i, resp.StatusCode)
		}
		worst = max(worst, took)
	}
	t.Logf("the other key's slowest create of 20: %v", worst)
	if worst > bound {
		t.Errorf("the other key's slowest create took %v, want at most %v", worst, bound)
	}
}

// However many keys stall bodies, another key's creates start at once
// (docs/security.md, "Bodies"): four keys each send all but the last byte of
// as many 1 MiB bodies as their quarter of the budget lets in, which takes
// the whole budget, and stall; a fifth key's creates are then answered at
// once (within 1 s each on a busy machine), the bodies stalled longest
// ended (408) to make room.
func TestStalledBodiesOfFourKeysDoNotHoldAFifth(t *testing.T) {
	t.Parallel()
	keys := []string{"stall-key-one-0123456789", "stall-key-two-0123456789", "stall-key-three-012345678", "stall-key-four-0123456789"}
	budget := bodybudget.New(64*maxBodyBytes, maxBodyBytes, 10*time.Second)
	total := budget.Free()
	env := newTestEnv(t, func(d *deps, _ *[]route) {
		d.bodies = budget
		d.keys = apikey.NewRing(apikey.AllScopes(append(keys, testKey2)...))
	})
	srv := httptest.NewServer(env.handler)
	t.Cleanup(srv.Close)
	perKey := int(budget.PerKey() / int64(maxBodyBytes/bodybudget.Block))
	for _, key := range keys {
		for i := range perKey {
			c, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			body := `{"name":"stalled` + strconv.Itoa(i) + `"`
			body += strings.Repeat(" ", maxBodyBytes-1-len(body))
			go func() { // blocks once the server stops reading; ends with c
				c.SetWriteDeadline(time.Now().Add(20 * time.Second))
				io.WriteString(c, "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+key+
					"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(maxBodyBytes)+"\r\n\r\n"+body)
			}()
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for budget.Free() > total/8 { // bounded polling: the stalled bodies take the budget
		if time.Now().After(deadline) {
			t.Fatalf("the stalled bodies hold %d of %d blocks after 10s, want nearly all", total-budget.Free(), total)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(bodybudget.StallAfter + 100*time.Millisecond) // now they have stalled
	// Generous, for a busy machine: unhindered, a create takes a
	// millisecond or two; held back, it waits out a stalled body's 10 s.
	checkOtherKeyCreates(t, srv.URL, time.Second)
}
