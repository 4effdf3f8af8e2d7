package main

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"petstore/internal/textcut"
)

// corsPolicy is the Cross-Origin Resource Sharing policy of
// PETSTORE_CORS_ORIGINS (docs/api.md, "Browsers (CORS)"): which origins a
// page may call petstore from. A nil *corsPolicy is CORS off: no CORS
// header anywhere, and OPTIONS is 405 like any method a path lacks.
type corsPolicy struct {
	anyOrigin bool                // "*": every origin, answered with *
	origins   map[string][]string // allowed origin → its Access-Control-Allow-Origin value
}

// Header values of CORS answers; net/http never modifies them.
var (
	corsAnyOrigin     = []string{"*"}
	corsExposeHeaders = []string{"ETag, Location, Link, Retry-After, RateLimit, RateLimit-Policy, X-Request-Id, Idempotent-Replayed, Deprecation, Sunset, WWW-Authenticate"}
	corsAllowHeaders  = []string{"Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id"}
	corsMaxAge        = []string{"7200"}
	corsVaryOrigin    = []string{"Origin"}
	corsVaryPreflight = []string{"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"}
)

// parseCORSOrigins reads PETSTORE_CORS_ORIGINS: "*", or origins separated by
// commas, each a scheme and a host with an optional port and nothing else
// (https://app.example.com, http://127.0.0.1:3000). Scheme and host are
// matched in lower case and a default port (80 for http, 443 for https) is
// dropped, as browsers send them. Empty: nil, CORS off.
func parseCORSOrigins(v string) (*corsPolicy, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	if strings.TrimSpace(v) == "*" {
		return &corsPolicy{anyOrigin: true}, nil
	}
	p := &corsPolicy{origins: map[string][]string{}}
	for i, entry := range strings.Split(v, ",") {
		origin, err := canonicalOrigin(strings.TrimSpace(entry))
		if err != nil {
			return nil, fmt.Errorf("PETSTORE_CORS_ORIGINS: entry %d: %w", i+1, err)
		}
		p.origins[origin] = []string{origin}
	}
	return p, nil
}

// canonicalOrigin returns entry as a browser would send it in Origin, or
// why it is not an origin.
func canonicalOrigin(entry string) (string, error) {
	const want = "want scheme://host[:port], such as https://app.example.com, or * alone"
	if entry == "" {
		return "", fmt.Errorf("empty; %s", want)
	}
	if entry == "*" {
		return "", fmt.Errorf("* cannot be combined with origins")
	}
	u, err := url.Parse(entry)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an origin; %s", entry, want)
	}
	if u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(entry, "#") {
		return "", fmt.Errorf("%q has more than a scheme, a host and a port (no path, trailing slash, query, fragment or user); %s", entry, want)
	}
	if u.Port() == "" && strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("%q has an empty port; %s", entry, want)
	}
	if err := checkOriginHost(u.Hostname(), u.Port()); err != nil {
		return "", fmt.Errorf("%q %w; %s", entry, err, want)
	}
	host := strings.ToLower(u.Host)
	switch {
	case u.Scheme == "http" && u.Port() == "80", u.Scheme == "https" && u.Port() == "443":
		host = strings.TrimSuffix(host, ":"+u.Port())
	}
	return strings.ToLower(u.Scheme) + "://" + host, nil
}

// String lists the origins allowed, for the start's log line: "*", the
// origins in order, or "" when CORS is off.
func (p *corsPolicy) String() string {
	switch {
	case p == nil:
		return ""
	case p.anyOrigin:
		return "*"
	}
	return strings.Join(slices.Sorted(maps.Keys(p.origins)), ",")
}

// checkOriginHost returns why host and port are not as a browser sends
// them in Origin, or nil: a host name of letters, digits, '-', '_' and
// dots (an international name in its xn-- form), or an IP address; a port
// of 1 to 65535 without leading zeros. A pattern such as *.example.com is
// no origin: list each one.
func checkOriginHost(host, port string) error {
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return fmt.Errorf("has a port that is not 1 to 65535 written plainly")
		}
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || !originHostChars.all(label) {
			return fmt.Errorf("has a host that is not a name of letters, digits, '-' and dots (no wildcards; an international name in its xn-- form) nor an IP address")
		}
	}
	return nil
}

// allowOrigin returns the Access-Control-Allow-Origin value of a request
// from origin, or nil when origin may not call petstore.
func (p *corsPolicy) allowOrigin(origin string) []string {
	if p.anyOrigin {
		return corsAnyOrigin
	}
	return p.origins[origin]
}

// corsHeaders adds to every answer to a request from an allowed origin,
// errors included, the headers that let the page read it. Other requests
// are answered as without CORS, except that Vary: Origin tells caches that
// the answer depends on the origin, unless every origin is allowed.
func corsHeaders(p *corsPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if !p.anyOrigin {
			h["Vary"] = corsVaryOrigin
		}
		if origin := headerValue(r.Header, "Origin"); origin != "" {
			if allow := p.allowOrigin(origin); allow != nil {
				h["Access-Control-Allow-Origin"] = allow
				h["Access-Control-Expose-Headers"] = corsExposeHeaders
			}
		}
		next.ServeHTTP(w, r)
	})
}

// preflight answers OPTIONS on a path whose methods are methods. A request
// with Origin and Access-Control-Request-Method is a preflight, which needs
// no key; anything else is 405, as OPTIONS is without CORS.
func preflight(p *corsPolicy, methods []string) http.Handler {
	allow := allowValue(methods)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := headerValue(r.Header, "Origin")
		method := headerValue(r.Header, "Access-Control-Request-Method")
		switch {
		case origin == "" || method == "":
			notAllowed(w, r, r.Method, allow)
		case !slices.Contains(methods, method):
			notAllowed(w, r, method, allow)
		case p.allowOrigin(origin) == nil:
			writeError(w, r, apiErrorf(codeOriginNotAllowed, "origin %q may not call petstore; the origins allowed are configured by PETSTORE_CORS_ORIGINS", textcut.Truncate(origin, 200)))
		default:
			h := w.Header()
			h["Access-Control-Allow-Methods"] = allow
			h["Access-Control-Allow-Headers"] = corsAllowHeaders
			h["Access-Control-Max-Age"] = corsMaxAge
			if !p.anyOrigin {
				h["Vary"] = corsVaryPreflight
			}
			w.WriteHeader(http.StatusNoContent)
		}
	})
}
