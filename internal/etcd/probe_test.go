package etcd

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Probe answers with the first member that answers, not held by one that
// hangs, and moves the preferred endpoint off a member that fails; it is
// ErrUnreachable only when none answers.
func TestProbe(t *testing.T) {
	hung := make(chan struct{})
	defer close(hung)
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // net/http watches for the client leaving only after the body
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	defer hanging.Close()
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"header":{"revision":"7"},"kvs":[{"key":"Yw==","value":"Mg==","mod_revision":"7"}],"count":"1"}`))
	}))
	defer answering.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	c, err := New(Config{Endpoints: []string{hanging.URL, answering.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := c.Probe(ctx, RangeRequest{Key: []byte("c")})
	if err != nil || int64(r.Header.Revision) != 7 || time.Since(start) > 200*time.Millisecond {
		t.Fatalf("probe: got %+v, %v after %v; want revision 7 at once", r, err, time.Since(start))
	}
	deadline := time.Now().Add(2 * time.Second)
	for c.preferred.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling, bounded: the hanging member gives up at the deadline
	}
	if got := c.preferred.Load(); got != 1 {
		t.Errorf("preferred endpoint after the first failed to answer: %d, want 1", got)
	}

	// The preferred endpoint answering, nothing moves.
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.Probe(ctx, RangeRequest{Key: []byte("c")}); err != nil || c.preferred.Load() != 1 {
		t.Errorf("probe: %v, preferred %d; want an answer from 1, still preferred", err, c.preferred.Load())
	}

	none, _ := New(Config{Endpoints: []string{refused, refused}})
	if _, err := none.Probe(context.Background(), RangeRequest{Key: []byte("c")}); !errors.Is(err, ErrUnreachable) {
		t.Errorf("probe of members that all refuse: %v, want ErrUnreachable", err)
	}
}
