package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// keySet is the set of accepted API keys. It keeps only their SHA-256
// digests, so comparisons take the same time whatever a key's length.
type keySet struct {
	digests [][sha256.Size]byte
}

func newKeySet(keys []string) *keySet {
	ks := &keySet{}
	for _, k := range keys {
		ks.digests = append(ks.digests, sha256.Sum256([]byte(k)))
	}
	return ks
}

// accepts reports whether key is one of the set. It compares against every
// key, in constant time, so timing tells nothing about which key came close.
func (ks *keySet) accepts(key string) bool {
	d := sha256.Sum256([]byte(key))
	match := 0
	for i := range ks.digests {
		match |= subtle.ConstantTimeCompare(d[:], ks.digests[i][:])
	}
	return match == 1
}

// WWW-Authenticate challenges (RFC 6750 section 3).
var (
	challengeMissing = []string{`Bearer realm="petstore"`}
	challengeInvalid = []string{`Bearer realm="petstore", error="invalid_token"`}
)

var (
	errKeyMissing     = apiErrorf(codeUnauthorized, "missing API key: send it in the Authorization header with the Bearer scheme")
	errKeyNotAccepted = apiErrorf(codeUnauthorized, "API key not accepted")
)

// requireKey wraps next so that it runs only for requests that carry an
// accepted API key as a bearer token. It runs before the body is read.
func requireKey(keys *keySet, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := headerValue(r.Header, "Authorization")
		if header == "" {
			w.Header()["Www-Authenticate"] = challengeMissing
			writeError(w, r, errKeyMissing)
			return
		}
		scheme, token, _ := strings.Cut(header, " ")
		token = strings.Trim(token, " \t")
		if !strings.EqualFold(scheme, "Bearer") || token == "" || !keys.accepts(token) {
			w.Header()["Www-Authenticate"] = challengeInvalid
			writeError(w, r, errKeyNotAccepted)
			return
		}
		next.ServeHTTP(w, r)
	})
}
