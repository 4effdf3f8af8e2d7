package main

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
)

// The page at GET /docs is the API reference for people (docs/api.md,
// "Documentation for people"). It is rendered once, when the service starts,
// from the OpenAPI 3.1 document the service serves: docsview.go turns the
// document into the page's view, docs.html.tmpl lays it out, docs.css styles
// it. The page has no script and loads nothing; its one style element is
// allowed by its hash, so the Content-Security-Policy allows nothing else.

//go:embed docs.html.tmpl
var docsTemplate string

//go:embed docs.css
var docsCSS string

// docsPage is the rendered page with the header values it is served with,
// made once: a request costs no allocation for them.
type docsPage struct {
	body                 []byte
	etag, length, csp    []string
	contentType, nosniff []string
}

var (
	docsCacheControl   = []string{"no-cache"}
	docsReferrerPolicy = []string{"no-referrer"}
)

// newDocsPage renders the page of doc, an OpenAPI 3.1 document.
func newDocsPage(doc []byte) (*docsPage, error) {
	view, err := docsViewOf(doc)
	if err != nil {
		return nil, fmt.Errorf("the docs page: %w", err)
	}
	view.CSS = template.CSS(docsCSS)
	tmpl, err := template.New("docs").Parse(docsTemplate)
	if err != nil {
		return nil, fmt.Errorf("docs.html.tmpl: %w", err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, view); err != nil {
		return nil, fmt.Errorf("docs.html.tmpl: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	style := sha256.Sum256([]byte(docsCSS))
	return &docsPage{
		body:   buf.Bytes(),
		etag:   []string{`"` + hex.EncodeToString(sum[:12]) + `"`},
		length: []string{strconv.Itoa(buf.Len())},
		csp: []string{"default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(style[:]) +
			"'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
		contentType: []string{"text/html; charset=utf-8"},
		nosniff:     []string{"nosniff"},
	}, nil
}

// handleDocsPage handles "GET /docs": the page made at start, with an ETag
// that If-None-Match can send back.
func handleDocsPage(page *docsPage) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Etag"] = page.etag
		h["Cache-Control"] = docsCacheControl
		h["Content-Security-Policy"] = page.csp
		h["X-Content-Type-Options"] = page.nosniff
		h["Referrer-Policy"] = docsReferrerPolicy
		if inm := headerValue(r.Header, "If-None-Match"); inm != "" && etagMatches(inm, page.etag[0]) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h["Content-Type"] = page.contentType
		h["Content-Length"] = page.length
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			w.Write(page.body)
		}
	})
}
