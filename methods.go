package main

import (
	"net/http"
	"slices"
	"strings"

	"petstore/internal/cors"
	"petstore/internal/textcut"
)

// What a path answers for a method none of its routes has: 405 with the
// Allow header, and, with CORS on, a preflight for OPTIONS.

// methodNotAllowed answers every method of a path that no route of it has:
// 405, listing those that are allowed.
func methodNotAllowed(methods []string) http.Handler {
	allow := allowValue(methods)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		notAllowed(w, r, r.Method, allow)
	})
}

// allowValue is the Allow header value of a path whose routes answer
// methods: the methods sorted, comma-separated. A 405 and a CORS preflight
// of the path list the same.
func allowValue(methods []string) []string {
	return []string{strings.Join(slices.Sorted(slices.Values(methods)), ", ")}
}

// notAllowed answers 405 for method on a path whose methods allow lists.
func notAllowed(w http.ResponseWriter, r *http.Request, method string, allow []string) {
	w.Header()["Allow"] = allow
	writeError(w, r, apiErrorf(codeMethodNotAllowed, "method %s is not allowed here; allowed: %s", textcut.Truncate(method, 20), allow[0]))
}

// preflightStatuses are the statuses preflight answers with.
var preflightStatuses = []int{http.StatusNoContent, http.StatusForbidden, http.StatusMethodNotAllowed}

// preflight answers OPTIONS on a path whose methods are methods. A request
// with Origin and Access-Control-Request-Method is a preflight, which needs
// no key; anything else is 405, as OPTIONS is without CORS.
func preflight(p *cors.Policy, methods []string) http.Handler {
	allow := allowValue(methods)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := headerValue(r.Header, "Origin")
		method := headerValue(r.Header, "Access-Control-Request-Method")
		switch {
		case origin == "" || method == "":
			notAllowed(w, r, r.Method, allow)
		case !slices.Contains(methods, method):
			notAllowed(w, r, method, allow)
		case p.AllowOrigin(origin) == nil:
			writeError(w, r, apiErrorf(codeOriginNotAllowed, "origin %q may not call petstore; the origins allowed are configured by PETSTORE_CORS_ORIGINS", textcut.Truncate(origin, 200)))
		default:
			p.SetPreflightHeaders(w.Header(), allow)
			w.WriteHeader(http.StatusNoContent)
		}
	})
}
