package main

import "net/http"

// connectionClose is the Connection header value of an answer after which
// the connection is closed; net/http honours it and never modifies it.
var connectionClose = []string{"close"}

// closeAmbiguousFraming closes, after its answer, every connection whose
// request framing a proxy in front might have read differently (RFC 9112
// section 6.1; docs/api.md, "Limits"), so that nothing after the request
// on that connection is read as another request:
//
//   - every HTTP/1.0 request: net/http drops Transfer-Encoding from HTTP/1.0
//     requests before a handler sees it (it reads such a body as empty), so
//     a chunked body smuggling a second request cannot be told apart here;
//     closing every HTTP/1.0 connection is the sound rule. The body then
//     reads as empty, which a create answers 400 (401 without a key).
//   - every chunked request, Content-Length or not (net/http lets chunked
//     win and deletes Content-Length).
//
// Both tests are field reads: the hot path stays free of work.
func closeAmbiguousFraming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 1 && r.ProtoMinor == 0 || len(r.TransferEncoding) > 0 {
			w.Header()["Connection"] = connectionClose
		}
		next.ServeHTTP(w, r)
	})
}
