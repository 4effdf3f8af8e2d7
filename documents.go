package main

import (
	"net/http"
	"strconv"

	"petstore/internal/apidocs"
)

// The service serves three documents, made once by newServer from the route
// table: the OpenAPI 3.1 document (internal/openapi), its 3.0.3 form, and
// the docs page for people rendered from the 3.1 one (internal/apidocs;
// docs/api.md, "Documentation for people"). Here are the handlers that serve them.

// handleDocument handles "GET /v1/openapi.json" and "GET /v1/openapi-3.0.json":
// an OpenAPI document, built once at start by newServer.
func handleDocument(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, doc)
	})
}

// docsPage is the rendered docs page with the header values it is served
// with, made once: a request costs no allocation for them.
type docsPage struct {
	body                 []byte
	etag, length, csp    []string
	contentType, nosniff []string
}

var (
	docsCacheControl   = []string{"no-cache"}
	docsReferrerPolicy = []string{"no-referrer"}
)

// newDocsPage renders the docs page of doc, an OpenAPI 3.1 document.
func newDocsPage(doc []byte) (*docsPage, error) {
	page, err := apidocs.Render(doc)
	if err != nil {
		return nil, err
	}
	return &docsPage{
		body:        page.HTML,
		etag:        []string{page.ETag},
		length:      []string{strconv.Itoa(len(page.HTML))},
		csp:         []string{page.ContentSecurityPolicy},
		contentType: []string{"text/html; charset=utf-8"},
		nosniff:     []string{"nosniff"},
	}, nil
}

// handleDocsPage handles "GET /docs": the page made at start, with an ETag
// that If-None-Match can send back.
func handleDocsPage(page *docsPage) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Security-Policy"] = page.csp
		h["X-Content-Type-Options"] = page.nosniff
		h["Referrer-Policy"] = docsReferrerPolicy
		if answeredNotModified(w, r, page.etag, docsCacheControl) {
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
