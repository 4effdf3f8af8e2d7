package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"petstore/internal/accesslog"
	"petstore/internal/apikey"
	"petstore/internal/bodybudget"
	"petstore/internal/cors"
	"petstore/internal/metrics"
	"petstore/internal/openapi"
	"petstore/internal/ratelimit"

	"petstore/internal/textcut"
)

// route is one operation of the API. The route table is the single source of
// truth: the mux registration, the auth wrapping, the deprecation headers,
// the 405 answers and the OpenAPI document are all derived from it.
type route struct {
	method      string // GET routes answer HEAD too
	path        string // ServeMux path pattern
	operationID string // names the operation in the OpenAPI document
	handler     http.Handler
	public      bool          // no API key needed
	scope       apikey.Scopes // the key scope it needs, when not public (exactly one)
	deprecation *deprecation  // nil: not deprecated
	stability   string        // "experimental", "beta" or ""
	query       bool          // defines query parameters, which its handler checks; others take none
}

// deps is what the routes need.
type deps struct {
	store  Store
	keys   *apikey.Ring
	log    *slog.Logger // start, warnings, errors: written at once
	access io.Writer    // one line per request, below status 500; safe for concurrent use
	now    func() time.Time
	pets   deprecation        // of GET /v1/pets/{petId}
	bodies *bodybudget.Budget // bounds the memory of request bodies; nil: no bound

	commits   *commitMetrics     // the store reports its commits here; nil: none
	rateLimit *ratelimit.Buckets // a request budget per key; nil: no limit
	cors      *cors.Policy       // nil: CORS off
	ready     *readiness         // set by newServer when nil

	metrics *serviceMetrics // made by newServer
}

// routes lists the whole API. doc is the OpenAPI 3.1 document served at
// /v1/openapi.json, which newServer builds from this same list, doc30 the
// same in OpenAPI 3.0.3, and page the docs page made from doc.
func routes(d deps, doc, doc30 []byte, page *docsPage) []route {
	return []route{
		{method: "GET", path: "/v1/categories", operationID: "listCategories", handler: handleCategoryList(d.store), scope: apikey.Read, query: true},
		{method: "POST", path: "/v1/categories", operationID: "createCategory", handler: handleCategoryCreate(d.store, d.bodies), scope: apikey.Write},
		{method: "GET", path: "/v1/categories/{id}", operationID: "getCategory", handler: handleCategoryGet(d.store), scope: apikey.Read, stability: "experimental"},
		{method: "GET", path: "/v1/pets/{petId}", operationID: "getPet", handler: handleNotImplemented("GET /pets/{petId}"), scope: apikey.Read, deprecation: &d.pets},
		{method: "GET", path: "/v1/store/orders", operationID: "listOrders", handler: handleNotImplemented("GET /store/orders"), scope: apikey.Read},
		{method: "GET", path: "/v1/openapi.json", operationID: "getOpenAPI", handler: handleDocument(doc), public: true},
		{method: "GET", path: "/v1/openapi-3.0.json", operationID: "getOpenAPI30", handler: handleDocument(doc30), public: true},
		{method: "GET", path: "/docs", operationID: "getDocs", handler: handleDocsPage(page), public: true},
		{method: "GET", path: "/livez", operationID: "getLive", handler: handleLive(), public: true},
		{method: "GET", path: "/healthz", operationID: "getHealth", handler: handleHealth(d.store), public: true},
		{method: "GET", path: "/readyz", operationID: "getReady", handler: handleReady(d.store, d.ready), public: true},
		{method: "GET", path: "/metrics", operationID: "getMetrics", handler: handleMetrics(d.metrics), scope: apikey.Metrics},
	}
}

// newServer builds the service from its dependencies: the handler of every
// request, and the OpenAPI 3.1 document it serves. extra routes (a test's) are
// served like the others but not documented.
func newServer(d deps, extra ...route) (http.Handler, []byte, error) {
	if d.ready == nil {
		d.ready = &readiness{}
	}
	// The document describes the table; a route's handler plays no part in
	// it, so the table is listed once to describe and once to serve.
	described := routes(d, nil, nil, nil)
	if err := checkScopes(append(described, extra...)); err != nil {
		return nil, nil, err
	}
	docs, err := documentsOf(openAPIOperations(described))
	if err != nil {
		return nil, nil, err
	}
	doc, doc30, page := docs.doc, docs.doc30, docs.page
	counted := metricRoutes(append(described, extra...), docs.statuses, d.cors != nil)
	d.metrics = newServiceMetrics(counted, d.commits, d.store)
	table := append(routes(d, doc, doc30, page), extra...)
	return newHandler(table, d), doc, nil
}

// metricRoutes lists the patterns the mux can report for table, with the
// statuses the OpenAPI document gives each (statuses, by pattern): metrics count by route pattern, so
// their counters are laid out at start.
func metricRoutes(table []route, statuses map[string][]int, preflights bool) []metrics.Route {
	var counted []metrics.Route
	for _, rt := range table {
		pattern := rt.method + " " + rt.path
		counted = append(counted, metrics.Route{Pattern: pattern, Statuses: statuses[pattern]})
		if preflights {
			counted = append(counted, metrics.Route{Pattern: "OPTIONS " + rt.path, Statuses: preflightStatuses})
		}
	}
	return counted
}

// openAPIOperations says what the OpenAPI document shows of each route of
// table: everything but its handler.
func openAPIOperations(table []route) []openapi.Operation {
	ops := make([]openapi.Operation, 0, len(table))
	for _, rt := range table {
		op := openapi.Operation{
			Method:      rt.method,
			Path:        rt.path,
			OperationID: rt.operationID,
			Head:        rt.method == http.MethodGet, // a GET route answers HEAD too (route.methods)
			Public:      rt.public,
			Scope:       rt.scope.String(),
			Stability:   rt.stability,
		}
		if dep := rt.deprecation; dep != nil {
			deprecated, sunset := dep.headerValues()
			op.Deprecation = &openapi.Deprecation{At: dep.at, Sunset: dep.sunset, DeprecationHeader: deprecated, SunsetHeader: sunset}
		}
		ops = append(ops, op)
	}
	return ops
}

// checkScopes makes sure every route that needs a key names exactly one
// scope, and a public one none: a route cannot be served to every key by
// forgetting its scope.
func checkScopes(table []route) error {
	for _, rt := range table {
		single := rt.scope != 0 && rt.scope&(rt.scope-1) == 0 && rt.scope&^apikey.All == 0
		if rt.public && rt.scope != 0 || !rt.public && !single {
			return fmt.Errorf("route %s %s: a route needs one key scope, or none when public (scope %08b)", rt.method, rt.path, rt.scope)
		}
	}
	return nil
}

// methods returns the methods a route answers: its own, and HEAD for GET.
func (rt route) methods() []string {
	if rt.method == "GET" {
		return []string{"GET", "HEAD"}
	}
	return []string{rt.method}
}

// newHandler builds the service's handler from a route table. Middleware
// runs in this order: log (with request id) → CORS headers (when configured) →
// framing → recover → path check → mux →
// per route: deprecation headers → auth → query check → sunset gate → handler.
func newHandler(table []route, d deps) http.Handler {
	mux := http.NewServeMux()
	methods := map[string][]string{} // path → methods, for 405 answers
	var paths []string
	for _, rt := range table {
		h := rt.handler
		if rt.deprecation != nil {
			h = sunsetGate(*rt.deprecation, d.now, h)
		}
		if !rt.query {
			h = rejectQuery(h)
		}
		if !rt.public {
			h = requireKey(d.keys, d.rateLimit, rt.scope, h)
		}
		if rt.deprecation != nil {
			h = deprecationHeaders(*rt.deprecation, h)
		}
		mux.Handle(rt.method+" "+rt.path, h)
		if _, seen := methods[rt.path]; !seen {
			paths = append(paths, rt.path)
		}
		methods[rt.path] = append(methods[rt.path], rt.methods()...)
	}
	// A pattern without a method is less specific than the same one with a
	// method, so these catch only the methods a path does not have.
	for _, p := range paths {
		mux.Handle(p, methodNotAllowed(methods[p]))
		if d.cors != nil {
			mux.Handle("OPTIONS "+p, preflight(d.cors, methods[p]))
		}
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, apiErrorf(codeNotFound, "no such path: %s", textcut.Truncate(r.URL.Path, 200)))
	}))
	h := closeWhileDraining(d.ready, closeAmbiguousFraming(recoverPanics(d.log, requireCleanPath(mux))))
	if d.cors != nil {
		h = d.cors.Headers(h)
	}
	return logRequests(accesslog.New(d.access), d.log, d.metrics, h)
}
