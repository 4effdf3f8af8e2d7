package main

import (
	"net/http"
	"slices"

	"petstore/internal/cors"
	"petstore/internal/textcut"
)

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
