package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"petstore/internal/apidocs"
	"petstore/internal/openapi"
)

// The service serves three documents, made once by newServer from the route
// table: the OpenAPI 3.1 document (internal/openapi), its 3.0.3 form, and
// the docs page for people rendered from the 3.1 one (internal/apidocs;
// docs/api.md, "Documentation for people"). Here are the handlers that serve them.

// documents is what newServer makes from the operations of its route
// table: the three documents, and the statuses the 3.1 one gives each
// operation, by "METHOD path".
type documents struct {
	doc, doc30 []byte
	page       *docsPage
	statuses   map[string][]int
}

// madeDocuments holds the documents made so far, by the operations they
// describe (as JSON): they are a function of those alone, and are made
// once for them however many servers a process builds (a test's many).
var madeDocuments struct {
	sync.Mutex
	byOps map[string]*documents
}

// documentsOf returns the documents of ops, made on first use. What it
// returns is shared: nobody may change it.
func documentsOf(ops []openapi.Operation) (*documents, error) {
	key, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	madeDocuments.Lock()
	defer madeDocuments.Unlock()
	if docs := madeDocuments.byOps[string(key)]; docs != nil {
		return docs, nil
	}
	docs, err := makeDocuments(ops)
	if err != nil {
		return nil, err
	}
	if madeDocuments.byOps == nil {
		madeDocuments.byOps = map[string]*documents{}
	}
	madeDocuments.byOps[string(key)] = docs
	return docs, nil
}

func makeDocuments(ops []openapi.Operation) (*documents, error) {
	doc, err := openapi.Build(ops, statusOf)
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI document: %w", err)
	}
	doc30, err := openapi.Convert30(doc)
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI 3.0 document: %w", err)
	}
	page, err := newDocsPage(doc)
	if err != nil {
		return nil, err
	}
	statuses, err := openapi.Statuses(doc)
	if err != nil {
		return nil, err
	}
	return &documents{doc: doc, doc30: doc30, page: page, statuses: statuses}, nil
}

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
