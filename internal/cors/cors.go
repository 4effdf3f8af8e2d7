// Package cors is petstore's Cross-Origin Resource Sharing policy
// (docs/api.md, "Browsers (CORS)"): which origins a page may call petstore
// from, as PETSTORE_CORS_ORIGINS lists them, and the headers every answer
// and every preflight to such a page carries. A nil *Policy is CORS off.
package cors

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"petstore/internal/hostport"
)

// Policy says which origins may call petstore from a page. A nil *Policy
// is CORS off: no CORS header anywhere, and OPTIONS is 405 like any method
// a path lacks.
type Policy struct {
	anyOrigin bool                // "*": every origin, answered with *
	origins   map[string][]string // allowed origin → its Access-Control-Allow-Origin value
}

// Header values of CORS answers; net/http never modifies them.
var (
	anyOriginValue = []string{"*"}
	exposeHeaders  = []string{"ETag, Location, Link, Retry-After, RateLimit, RateLimit-Policy, X-Request-Id, Idempotent-Replayed, Deprecation, Sunset, WWW-Authenticate"}
	allowHeaders   = []string{"Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id"}
	maxAge         = []string{"7200"}
	varyOrigin     = []string{"Origin"}
	varyPreflight  = []string{"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"}
)

// Parse reads a list of origins: "*", or origins separated by commas, each
// a scheme and a host with an optional port and nothing else
// (https://app.example.com, http://127.0.0.1:3000). Scheme and host are
// matched in lower case and a default port (80 for http, 443 for https) is
// dropped, as browsers send them. Empty: nil, CORS off. Its errors say
// which entry is wrong; the caller names where v came from.
func Parse(v string) (*Policy, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	if strings.TrimSpace(v) == "*" {
		return &Policy{anyOrigin: true}, nil
	}
	p := &Policy{origins: map[string][]string{}}
	for i, entry := range strings.Split(v, ",") {
		origin, err := canonicalOrigin(strings.TrimSpace(entry))
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
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
		return "", fmt.Errorf("%q has %w; %s", entry, err, want)
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
func (p *Policy) String() string {
	switch {
	case p == nil:
		return ""
	case p.anyOrigin:
		return "*"
	}
	return strings.Join(slices.Sorted(maps.Keys(p.origins)), ",")
}

// checkOriginHost returns why host and port are not as a browser sends
// them in Origin, or nil (see hostport). A pattern such as *.example.com
// is no origin: list each one.
func checkOriginHost(host, port string) error {
	if port != "" {
		if _, err := hostport.Port(port); err != nil {
			return fmt.Errorf("a port that is not 1 to 65535 written plainly")
		}
	}
	if hostport.Host(host) != nil {
		return fmt.Errorf("a host that is not a name of letters, digits, '-' and dots (no wildcards; an international name in its xn-- form) nor an IP address")
	}
	return nil
}

// AllowOrigin returns the Access-Control-Allow-Origin value of a request
// from origin, or nil when origin may not call petstore.
func (p *Policy) AllowOrigin(origin string) []string {
	if p.anyOrigin {
		return anyOriginValue
	}
	return p.origins[origin]
}

// Headers adds to every answer to a request from an allowed origin, errors
// included, the headers that let the page read it. Other requests are
// answered as without CORS, except that Vary: Origin tells caches that the
// answer depends on the origin, unless every origin is allowed.
func (p *Policy) Headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if !p.anyOrigin {
			h["Vary"] = varyOrigin
		}
		if origin := r.Header["Origin"]; len(origin) > 0 {
			if allow := p.AllowOrigin(origin[0]); allow != nil {
				h["Access-Control-Allow-Origin"] = allow
				h["Access-Control-Expose-Headers"] = exposeHeaders
			}
		}
		next.ServeHTTP(w, r)
	})
}

// SetPreflightHeaders sets the headers of the answer to a preflight from
// an allowed origin, on a path whose methods are allow (the value of its
// Allow header).
func (p *Policy) SetPreflightHeaders(h http.Header, allow []string) {
	h["Access-Control-Allow-Methods"] = allow
	h["Access-Control-Allow-Headers"] = allowHeaders
	h["Access-Control-Max-Age"] = maxAge
	if !p.anyOrigin {
		h["Vary"] = varyPreflight
	}
}
