package main

import (
	"net/http"
	"strings"
)

// headerValue is h.Get(key) for a key already in canonical form, as net/http
// stores the keys of a request it read: it skips canonicalising key.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// answeredNotModified sets the ETag and Cache-Control of an answer whose
// representation has the tag etag, and answers 304 Not Modified when the
// request's If-None-Match matches it: the one conditional GET of every
// answer with an ETag. It reports whether it answered; if not, the caller
// answers with the representation.
func answeredNotModified(w http.ResponseWriter, r *http.Request, etag, cacheControl []string) bool {
	h := w.Header()
	h["Etag"] = etag
	h["Cache-Control"] = cacheControl
	if inm := headerValue(r.Header, "If-None-Match"); inm != "" && etagMatches(inm, etag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

// etagMatches reports whether an If-None-Match value matches etag, by the
// weak comparison RFC 9110 section 13.1.2 prescribes for it.
func etagMatches(ifNoneMatch, etag string) bool {
	for _, candidate := range strings.Split(ifNoneMatch, ",") {
		candidate = strings.TrimSpace(candidate)
		if candidate == "*" || strings.TrimPrefix(candidate, "W/") == etag {
			return true
		}
	}
	return false
}
