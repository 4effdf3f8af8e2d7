package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"sync/atomic"
)

// keyDigest is the SHA-256 of an API key: what petstore keeps instead of
// the key, and what names a client in logs, metrics and rate limits.
type keyDigest [sha256.Size]byte

// appendFingerprint appends the key's fingerprint, the first 8 hex digits of
// the digest: enough to tell clients apart in a log, far too little to find
// the key.
func (d *keyDigest) appendFingerprint(dst []byte) []byte { return hex.AppendEncode(dst, d[:4]) }

// fingerprint returns the key's fingerprint (see appendFingerprint).
func (d keyDigest) fingerprint() string { return string(d.appendFingerprint(nil)) }

// keySet is a set of accepted API keys, kept as digests, so comparisons take
// the same time whatever a key's length.
type keySet struct {
	digests []keyDigest
}

func newKeySet(keys []string) *keySet {
	ks := &keySet{}
	for _, k := range keys {
		ks.digests = append(ks.digests, sha256.Sum256([]byte(k)))
	}
	return ks
}

// match reports whether key is one of the set, and its digest. It compares
// against every key, in constant time, so timing tells nothing about which
// key came close.
func (ks *keySet) match(key string) (keyDigest, bool) {
	d := keyDigest(sha256.Sum256([]byte(key)))
	match := 0
	for i := range ks.digests {
		match |= subtle.ConstantTimeCompare(d[:], ks.digests[i][:])
	}
	return d, match == 1
}

// keyring holds the key set in force. Rotation (see keys.go) replaces the
// whole set at once; a request sees the old set or the new one, never a mix.
type keyring struct {
	current atomic.Pointer[keySet]
}

func newKeyring(keys []string) *keyring {
	kr := &keyring{}
	kr.current.Store(newKeySet(keys))
	return kr
}

func (kr *keyring) match(key string) (keyDigest, bool) { return kr.current.Load().match(key) }

// WWW-Authenticate challenges (RFC 6750 section 3).
var (
	challengeMissing = []string{`Bearer realm="petstore"`}
	challengeInvalid = []string{`Bearer realm="petstore", error="invalid_token"`}
)

var (
	errKeyMissing     = apiErrorf(codeUnauthorized, "missing API key: send it in the Authorization header with the Bearer scheme")
	errKeyNotAccepted = apiErrorf(codeUnauthorized, "API key not accepted")
)

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
// accepted API key as a bearer token. It runs before the body is read. The
// accepted key's digest goes into the request's facts, for the log and the
// limiter; with a limiter, each accepted request spends from its key's
// budget, and every answer says what is left.
func requireKey(keys *keyring, limits *limiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := headerValue(r.Header, "Authorization")
		if header == "" {
			refuseKey(w, r, challengeMissing, errKeyMissing)
			return
		}
		token := bearerToken(header)
		digest, ok := keys.match(token)
		if token == "" || !ok {
			refuseKey(w, r, challengeInvalid, errKeyNotAccepted)
			return
		}
		facts := factsOf(r)
		facts.key, facts.keyed = digest, true
		if limits != nil {
			v := limits.take(digest)
			limits.headers(w.Header(), v)
			if !v.allowed {
				writeError(w, r, errRateLimited)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

var errRateLimited = apiErrorf(codeRateLimited, "too many requests with this API key; Retry-After says when to try again")

// refuseKey answers 401. A body the client is still sending is not waited
// for: net/http would read it before sending the answer, to keep the
// connection, so the connection is closed instead.
func refuseKey(w http.ResponseWriter, r *http.Request, challenge []string, err error) {
	h := w.Header()
	h["Www-Authenticate"] = challenge
	if r.ContentLength != 0 {
		h["Connection"] = connectionClose
	}
	writeError(w, r, err)
}
