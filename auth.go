package main

import (
	"net/http"
	"strings"

	"petstore/internal/apikey"
	"petstore/internal/ratelimit"
)

// The bearer middleware: requireKey lets a request through only with a key
// of the set in force (internal/apikey) that has the route's scope, and
// answers the others 400, 401 or 403 with a challenge.

// WWW-Authenticate challenges (RFC 6750 section 3).
var (
	challengeMissing = []string{`Bearer realm="petstore"`}
	challengeInvalid = []string{`Bearer realm="petstore", error="invalid_token"`}
)

var (
	errTwoAuthorizations = apiErrorf(codeInvalidParameter, "the request has more than one Authorization header; send exactly one")
	errKeyMissing        = apiErrorf(codeUnauthorized, "missing API key: send it in the Authorization header with the Bearer scheme")
	errKeyNotAccepted    = apiErrorf(codeUnauthorized, "API key not accepted")
)

// scopeRefusal is the 403 of a route whose key lacks the scope it needs:
// its challenge (RFC 6750 section 3.1) and its error, made once per route.
type scopeRefusal struct {
	challenge []string
	err       error
}

func newScopeRefusal(need apikey.Scopes) scopeRefusal {
	return scopeRefusal{
		challenge: []string{`Bearer realm="petstore", error="insufficient_scope", scope="` + need.String() + `"`},
		err:       apiErrorf(codeInsufficientScope, "this API key does not have the scope %q, which this operation needs", need.String()),
	}
}

// bearerToken returns the token of an Authorization header value with the
// Bearer scheme (case-insensitive), or "".
func bearerToken(header string) string {
	scheme, token, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.Trim(token, " \t")
}

// requireKey wraps next so that it runs only for requests that carry an
// accepted API key as a bearer token, with the scope need. It runs before
// the body is read. The accepted key's digest goes into the request's
// facts, for the log and the limiter; with a limiter, each accepted request
// spends from its key's budget, its scope or not, and every answer says
// what is left.
func requireKey(keys *apikey.Ring, budgets *ratelimit.Buckets, need apikey.Scopes, next http.Handler) http.Handler {
	refusal := newScopeRefusal(need)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header["Authorization"]) > 1 {
			// Not a list (RFC 9110 section 5.3): which one counts would be
			// a guess, and a proxy may have added the one not meant.
			writeError(w, r, errTwoAuthorizations)
			return
		}
		header := headerValue(r.Header, "Authorization")
		if header == "" {
			refuseKey(w, r, challengeMissing, errKeyMissing)
			return
		}
		token := bearerToken(header)
		digest, granted := keys.Match(token)
		if token == "" || granted == 0 {
			refuseKey(w, r, challengeInvalid, errKeyNotAccepted)
			return
		}
		facts := factsOf(r)
		facts.key, facts.keyed = digest, true
		if budgets != nil {
			v := budgets.Take(digest)
			budgets.Headers(w.Header(), v)
			if !v.Allowed {
				writeError(w, r, errRateLimited)
				return
			}
		}
		if granted&need == 0 {
			refuseKey(w, r, refusal.challenge, refusal.err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

var errRateLimited = apiErrorf(codeRateLimited, "too many requests with this API key; Retry-After says when to try again")

// refuseKey answers 401, or 403 for a key without the scope. A body the
// client is still sending is not waited for: logRequests ends the
// connection of an answer that leaves its body unread (see
// closeIfBodyUnread).
func refuseKey(w http.ResponseWriter, r *http.Request, challenge []string, err error) {
	w.Header()["Www-Authenticate"] = challenge
	writeError(w, r, err)
}
