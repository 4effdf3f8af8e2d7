// Package apidocs renders the API reference for people (docs/api.md,
// "Documentation for people") from an OpenAPI 3.1 document: one HTML page,
// made once by Render, that says everything the document says and nothing
// it does not. Every operation is an entry, a GET sharing its entry with its
// HEAD, with its marks (stability, deprecation and sunset, no key needed),
// parameters, bodies, answers and the error codes each can carry, and a curl
// command per method; then the error codes by status, the schemas and the
// headers. Text from the document is escaped; `quoted` parts become code.
//
// The page has no script and loads nothing: its style (docs.css) is one
// style element, and the page's ContentSecurityPolicy allows that element by
// its hash and nothing else. Its ETag is a hash of the page.
// Serving the page, and answering conditional requests, is the caller's.
//
// view.go reads the document into the page's view, docs.html.tmpl lays it
// out; both are embedded, as is docs.css.
package apidocs
