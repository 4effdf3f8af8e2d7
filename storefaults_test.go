package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"petstore/internal/catalog"
	"petstore/internal/store"
)

// What a client sees when the store fails: errors.go turns the stores' errors
// into 500 and 503 answers, with the cause in the log and not in the answer.

// A create the store fails answers 500 without the cause, which goes to
// the log, and a store that says it is unhealthy fails /healthz (the store's
// own half is tested in internal/store).
func TestFailedCreateAnswers500(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("appending to /data/cats.jsonl: %w", os.ErrClosed)
	env := newTestEnv(t, withStore(failingStore{Store: store.NewMemory(store.Options{}), err: cause}))
	rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"cat"}`})
	eb := mustError(t, rec, http.StatusInternalServerError, codeInternal)
	if strings.Contains(eb.Message, "/data/cats.jsonl") || strings.Contains(eb.Message, "file already closed") {
		t.Errorf("500 message leaks internals: %q", eb.Message)
	}
	mustError(t, env.do(t, request{method: "GET", path: "/healthz"}), http.StatusInternalServerError, codeInternal)
	if !strings.Contains(env.logs.String(), "file already closed") {
		t.Errorf("the cause is not in the log: %s", env.logs)
	}
	if n := len(env.mustList(t)); n != 0 {
		t.Errorf("categories after a failed create: got %d, want 0", n)
	}
}

// A store whose disk failed, or which cannot learn whether a create was
// stored, says so: 503 unavailable (nothing stored) for creates it refuses
// and from /healthz, and 503 outcome_unknown, never a definite failure, for
// a create that may have been stored; both with Retry-After.
func TestStoreFaultAnswers(t *testing.T) {
	t.Parallel()
	down := fmt.Errorf("%w: the journal takes no more creates after a failed write: %w", catalog.ErrUnavailable, os.ErrClosed)
	unknown := fmt.Errorf("%w: appending: %w", catalog.ErrOutcomeUnknown, os.ErrClosed)
	for _, tc := range []struct {
		err      error
		code     string
		mentions string
	}{
		{down, codeUnavailable, "nothing was stored"},
		{unknown, codeOutcomeUnknown, "may or may not exist"},
	} {
		env := newTestEnv(t, withStore(failingStore{Store: store.NewMemory(store.Options{}), err: tc.err}))
		rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"cat"}`})
		eb := mustError(t, rec, http.StatusServiceUnavailable, tc.code)
		if !strings.Contains(eb.Message, tc.mentions) || strings.Contains(eb.Message, "file already closed") {
			t.Errorf("%s: message %q, want one that says %q and no internals", tc.code, eb.Message, tc.mentions)
		}
		if got := rec.Header().Get("Retry-After"); got != "1" {
			t.Errorf("%s: Retry-After %q, want 1", tc.code, got)
		}
	}
	env := newTestEnv(t, withStore(failingStore{Store: store.NewMemory(store.Options{}), err: down}))
	mustError(t, env.do(t, request{method: "GET", path: "/healthz"}), http.StatusServiceUnavailable, codeUnavailable)
	mustError(t, env.do(t, request{method: "GET", path: "/readyz"}), http.StatusServiceUnavailable, codeUnavailable)
}

// failingStore is a store whose creates fail with err, and which says so
// in Health.
type failingStore struct {
	Store
	err error
}

func (s failingStore) Create(context.Context, catalog.NewCategory) (store.Created, error) {
	return store.Created{}, s.err
}

func (s failingStore) Health() error { return s.err }

// /livez answers 200 whatever the store's state, where /healthz and
// /readyz say 503: a liveness probe restarts only a process that has
// stopped serving.
func TestLivezWhateverTheStore(t *testing.T) {
	t.Parallel()
	down := fmt.Errorf("%w: the journal takes no more creates after a failed write", catalog.ErrUnavailable)
	env := newTestEnv(t, withStore(failingStore{Store: store.NewMemory(store.Options{}), err: down}))
	for _, method := range []string{"GET", "HEAD"} {
		rec := env.do(t, request{method: method, path: "/livez"})
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s /livez with a failed store: %d %q, want 200 application/json", method, rec.Code, rec.Header().Get("Content-Type"))
		}
		if method == "GET" && rec.Body.String() != `{"status":"ok"}` {
			t.Errorf("GET /livez: body %s, want {\"status\":\"ok\"}", rec.Body)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		mustError(t, env.do(t, request{method: "GET", path: path}), http.StatusServiceUnavailable, codeUnavailable)
	}
}
