package main

import (
	"net/http"
	"strconv"
	"time"
)

// deprecation says when a route was deprecated (RFC 9745) and when it goes
// away (RFC 8594).
type deprecation struct {
	at, sunset time.Time
}

// headerValues returns the Deprecation (RFC 9745) and Sunset (RFC 8594)
// header values of dep.
func (dep deprecation) headerValues() (deprecated, sunset string) {
	return "@" + strconv.FormatInt(dep.at.Unix(), 10), dep.sunset.UTC().Format(http.TimeFormat)
}

// deprecationHeaders adds Deprecation and Sunset to every answer of a route.
func deprecationHeaders(dep deprecation, next http.Handler) http.Handler {
	d, sun := dep.headerValues()
	deprecated, sunset := []string{d}, []string{sun}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Deprecation"] = deprecated
		h["Sunset"] = sunset
		next.ServeHTTP(w, r)
	})
}

// sunsetGate answers 410 once the route's sunset instant has passed.
func sunsetGate(dep deprecation, now func() time.Time, next http.Handler) http.Handler {
	gone := apiErrorf(codeGone, "this operation was withdrawn at its sunset, %s", dep.sunset.UTC().Format(time.RFC3339))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !now().Before(dep.sunset) {
			writeError(w, r, gone)
			return
		}
		next.ServeHTTP(w, r)
	})
}
