package main

import (
	"context"
	"net/http"

	"petstore/internal/apikey"
)

// requestFacts is what petstore learns about one request as it is served:
// its id, what was answered, and the error behind the answer. logRequests
// puts them in the request's context (see factsOf) and logs them; any
// middleware or handler adds to them there, whatever wraps the
// ResponseWriter in between.
type requestFacts struct {
	id     string
	status int           // 0 until the answer's header is written
	bytes  int64         // of the answer's body
	err    error         // what writeError answered, or a panic
	key    apikey.Digest // of the API key requireKey accepted
	keyed  bool          // requireKey accepted a key
}

// factsKey is the context key of a request's *requestFacts.
type factsKey struct{}

// factsOf returns the facts of r. A request that did not come through
// logRequests (a handler tested alone) gets a set nobody reads.
func factsOf(r *http.Request) *requestFacts {
	if f, ok := r.Context().Value(factsKey{}).(*requestFacts); ok {
		return f
	}
	return &requestFacts{}
}

// requestContext is a request's context with its facts inside, so that
// both take one allocation.
type requestContext struct {
	context.Context
	facts requestFacts
}

func (c *requestContext) Value(key any) any {
	if key == (factsKey{}) {
		return &c.facts
	}
	return c.Context.Value(key)
}
