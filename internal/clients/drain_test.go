package clients

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"petstore/internal/petstoretest"
)

// The end of a drain loses no answer (docs/operations.md, "Readiness and
// draining"): keep-alive clients over HTTP/1.1 and HTTP/2 create without
// pause while petstore, on SIGTERM, serves out a delay and stops. Every
// request that went out on a connection petstore accepted is answered (a
// client may meet a refused connection, or one reset in the listen backlog,
// once petstore has stopped listening: nothing was sent then); and every
// 201 is in the journal after a restart. One race belongs to HTTP/1.1
// itself, not to petstore: a client that left its keep-alive connection
// idle from before SIGTERM (on a busy machine a goroutine can wait that
// long for a CPU) was never told Connection: close, and petstore closes
// idle connections half-way through the delay; a request written then on
// one meets the close. And a connection the kernel took into the listen
// backlog but petstore, starved, had not accepted is reset when the
// listener closes. Neither request was read: neither may be stored. RFC 9112 §9.3.1 has clients retry such a request when
// it is idempotent. Those are counted apart (at most one per client).
func TestDrainUnderLoad(t *testing.T) {
	// signalSlack: how long after the test sends SIGTERM petstore may
	// still answer as if it had not begun to drain.
	const signalSlack = 250 * time.Millisecond
	t.Parallel()
	dir := t.TempDir()
	vars, roots := tlsFiles(t, dir)
	vars["PETSTORE_DATA"] = filepath.Join(dir, "cats.jsonl")
	const delay = 2 * time.Second
	// idleClose: when petstore closes idle HTTP/1.1 connections and sends
	// HTTP/2 ones GOAWAY, into the delay (docs/operations.md).
	const idleClose = min(delay/2, time.Second)
	vars["PETSTORE_SHUTDOWN_DELAY"] = delay.String()
	svc := startWith(t, vars)
	var mu sync.Mutex
	created := map[string]int64{} // name: id
	lost := map[string]int{}
	closed := map[string]string{} // name: why, of the requests excused below
	idleRaces := 0
	var sigterm atomic.Int64 // unix nanoseconds; 0 before SIGTERM
	var wg sync.WaitGroup
	for c := range 12 {
		client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: c%3 == 0, // a third over HTTP/2
		}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-svc.Done:
					return
				default:
				}
				name := fmt.Sprintf("c%d-%d", c, i)
				// wrote: the request went out on a connection petstore
				// accepted, on the transport's last try (it tries again, on
				// a new connection, a request an HTTP/2 GOAWAY says was
				// not processed).
				// idleSince: when the HTTP/1.1 connection the request went
				// on had last been used (unix nanoseconds; 0: a new one).
				// wroteAt: when it went out (unix nanoseconds).
				var wrote atomic.Bool
				var idleSince, wroteAt atomic.Int64
				trace := &httptrace.ClientTrace{
					GetConn: func(string) { wrote.Store(false); idleSince.Store(0) },
					GotConn: func(info httptrace.GotConnInfo) {
						if c%3 != 0 && info.WasIdle {
							idleSince.Store(time.Now().Add(-info.IdleTime).UnixNano())
						}
					},
					WroteRequest: func(info httptrace.WroteRequestInfo) {
						wrote.Store(info.Err == nil) // a failed write sent nothing petstore could answer
						wroteAt.Store(time.Now().UnixNano())
					},
				}
				id, err := create(client, svc.URL(""), name, trace)
				mu.Lock()
				switch {
				case err == nil:
					created[name] = id
				case wrote.Load() && c%3 != 0 && idleSince.Load() != 0 && idleSince.Load() < sigterm.Load()+signalSlack.Nanoseconds() &&
					wroteAt.Load() > sigterm.Load()+(idleClose-signalSlack).Nanoseconds() && closedUnanswered(err):
					// Last used before petstore began to drain (the
					// signal takes a moment to arrive), written once
					// petstore closes idle connections, and closed before
					// an answer: idle until petstore closed it.
					idleRaces++
					closed[name] = "an idle connection closed"
				case wrote.Load() && c%3 != 0 && idleSince.Load() == 0 && wroteAt.Load() > sigterm.Load() && sigterm.Load() != 0 && closedUnanswered(err):
					// A new connection during the drain that petstore,
					// its accept loop starved, had not yet accepted
					// when it closed its listener: the kernel resets
					// what waits in the backlog.
					idleRaces++
					closed[name] = "reset in the listen backlog"
				case wrote.Load():
					// When, from SIGTERM: a failure explains itself.
					since := func(ns int64) string {
						return time.Duration(ns - sigterm.Load()).Round(time.Millisecond).String()
					}
					conn := "a new connection"
					if idleSince.Load() != 0 {
						conn = "a connection idle since " + since(idleSince.Load())
					}
					lost[fmt.Sprintf("HTTP/2 %v: %s (%s, written at %s)", c%3 == 0, lastWords(err.Error()), conn, since(wroteAt.Load()))]++
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Second)
	sigterm.Store(time.Now().UnixNano())
	syscall.Kill(svc.Cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-svc.Done:
	case <-time.After(20 * time.Second):
		t.Fatal("petstore did not stop within 20 s of SIGTERM")
	}
	wg.Wait()
	if len(lost) > 0 {
		t.Errorf("requests petstore began and did not answer, of %d created: %v", len(created), lost)
	}
	if idleRaces > 16 { // one or two per HTTP/1.1 client at most: dials after the stop are refused
		t.Errorf("%d requests met a close before an answer, more than two per HTTP/1.1 client: %v", idleRaces, closed)
	} else if idleRaces > 0 {
		t.Logf("%d HTTP/1.1 requests met a close petstore never read them before: %v", idleRaces, closed)
	}
	delete(vars, "PETSTORE_SHUTDOWN_DELAY")
	stored := listNames(t, startWith(t, vars), roots)
	for name, id := range created {
		if stored[name] != id {
			t.Errorf("%s was answered 201 with id %d; after the restart: id %d", name, id, stored[name])
		}
	}
	// What an excused request met is true only if petstore never took it:
	// then nothing of it is stored.
	for name, why := range closed {
		if id, ok := stored[name]; ok {
			t.Errorf("%s met %s before an answer, yet it is stored with id %d: petstore took it and did not answer", name, why, id)
		}
	}
	t.Logf("%d creates answered 201, all stored", len(created))
}

// create creates the category name and returns its id; trace follows the
// request.
func create(client *http.Client, base, name string, trace *httptrace.ClientTrace) (int64, error) {
	req, _ := http.NewRequest("POST", base+"/v1/categories", strings.NewReader(`{"name":"`+name+`"}`))
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	req.Header.Set("Authorization", "Bearer "+writeKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var c struct{ ID int64 }
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != 201 {
		return 0, fmt.Errorf("status %d: %v", resp.StatusCode, err)
	}
	return c.ID, nil
}

// listNames returns the ids of svc's categories by name.
func listNames(t *testing.T, svc *petstoretest.Process, roots *x509.CertPool) map[string]int64 {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	req, _ := http.NewRequest("GET", svc.URL("/v1/categories"), nil)
	req.Header.Set("Authorization", "Bearer "+readKey)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct {
		ID   int64
		Name string
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int64, len(list))
	for _, c := range list {
		out[c.Name] = c.ID
	}
	return out
}

// closedUnanswered reports whether err is a connection closed before any
// answer: an EOF or a reset, not a timeout.
func closedUnanswered(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
