package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync/atomic"

	"petstore/internal/ratelimit"
)

// keyDigest is the SHA-256 of an API key: what petstore keeps instead of
// the key, and what names a client in logs, metrics and rate limits.
type keyDigest [sha256.Size]byte

// scopes is a set of key scopes, one bit each (docs/api.md,
// "Authentication"): what an accepted key may do. Every accepted key has at
// least one, so no scopes at all means no key matched.
type scopes uint8

const (
	scopeRead    scopes = 1 << iota // GET and HEAD of the /v1 API
	scopeWrite                      // creates; a key with it has scopeRead too
	scopeMetrics                    // GET /metrics

	scopeAll = scopeRead | scopeWrite | scopeMetrics // a key written without scopes
)

// scopeNames names each scope as keys are written with it (KEY:read+metrics),
// in the order logs and messages list them.
var scopeNames = [...]struct {
	name  string
	scope scopes
}{{"read", scopeRead}, {"write", scopeWrite}, {"metrics", scopeMetrics}}

// String returns the names of the scopes in s, joined by "+".
func (s scopes) String() string {
	var names []string
	for _, n := range scopeNames {
		if s&n.scope != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, "+")
}

// apiKey is an accepted API key and its scopes, as configured.
type apiKey struct {
	secret string // never logged
	scopes scopes
}

// allScopes returns keys, each with every scope: keys written without any.
func allScopes(keys ...string) []apiKey {
	out := make([]apiKey, len(keys))
	for i, k := range keys {
		out[i] = apiKey{secret: k, scopes: scopeAll}
	}
	return out
}

// keySet is a set of accepted API keys, kept as digests, so comparisons take
// the same time whatever a key's length, each with its scopes.
type keySet struct {
	entries []keyEntry
}

// keyEntry is one accepted key of a keySet.
type keyEntry struct {
	digest keyDigest
	scopes scopes
}

func newKeySet(keys []apiKey) *keySet {
	ks := &keySet{}
	for _, k := range keys {
		ks.entries = append(ks.entries, keyEntry{digest: sha256.Sum256([]byte(k.secret)), scopes: k.scopes})
	}
	return ks
}

// match returns key's digest and the scopes the set grants it: none when
// it is not one of the set; those of every entry when it is listed more
// than once. It compares against every key, in constant time, so timing
// tells nothing about which key came close: an entry's scopes are masked
// in, or out, whether it matched or not.
func (ks *keySet) match(key string) (keyDigest, scopes) {
	d := keyDigest(sha256.Sum256([]byte(key)))
	var granted scopes
	for i := range ks.entries {
		e := &ks.entries[i]
		equal := subtle.ConstantTimeCompare(d[:], e.digest[:]) // 1 or 0
		granted |= e.scopes & -scopes(equal)
	}
	return d, granted
}

// keyring holds the key set in force. Rotation (see keys.go) replaces the
// whole set at once; a request sees the old set or the new one, never a mix.
type keyring struct {
	current atomic.Pointer[keySet]
}

func newKeyring(keys []apiKey) *keyring {
	kr := &keyring{}
	kr.current.Store(newKeySet(keys))
	return kr
}

func (kr *keyring) match(key string) (keyDigest, scopes) { return kr.current.Load().match(key) }

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

func newScopeRefusal(need scopes) scopeRefusal {
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
func requireKey(keys *keyring, budgets *ratelimit.Buckets, need scopes, next http.Handler) http.Handler {
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
		digest, granted := keys.match(token)
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
