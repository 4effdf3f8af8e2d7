package main

import (
	"fmt"
	"net/http"
	"sync/atomic"
)

// readiness is what GET /readyz reports besides the store: whether
// petstore has begun to stop (docs/operations.md, "Readiness and draining").
type readiness struct {
	draining atomic.Bool
}

// Answers of GET /readyz when petstore is not ready.
var (
	errDraining  = apiErrorf(codeUnavailable, "not ready: this petstore is stopping; send requests to another instance")
	errStoreDown = apiErrorf(codeUnavailable, "not ready: the store cannot take creates now")
)

// handleReady handles "GET /readyz": 200 while petstore serves and its store
// takes creates; 503 unavailable, with Retry-After, once it has begun to
// stop or while the store cannot take creates (an etcd cluster without
// quorum, a journal that can no longer be written). A load balancer sends
// clients elsewhere meanwhile; /healthz says whether petstore can serve at
// all.
func handleReady(store Store, ready *readiness) http.Handler {
	ok := []byte(`{"status":"ready"}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ready.draining.Load() {
			writeError(w, r, errDraining)
			return
		}
		if err := store.Health(); err != nil {
			// The client gets errStoreDown; the access line, why.
			writeError(w, r, fmt.Errorf("%w: %w", errStoreDown, err))
			return
		}
		writeJSON(w, http.StatusOK, ok)
	})
}

// closeWhileDraining answers HTTP/1.x requests with Connection: close once
// petstore has begun to stop, so that a keep-alive client opens its next
// connection to another instance before the stop, rather than meet an idle
// connection closed under its next request (docs/operations.md, "Readiness
// and draining"). HTTP/2 connections are sent on with GOAWAY (see drain).
func closeWhileDraining(ready *readiness, next http.Handler) http.Handler {
	if ready == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 1 && ready.draining.Load() {
			w.Header()["Connection"] = connectionClose
		}
		next.ServeHTTP(w, r)
	})
}
