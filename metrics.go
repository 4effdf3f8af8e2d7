package main

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"petstore/internal/buildinfo"
	"petstore/internal/metrics"
)

// serviceMetrics counts what the service does, for GET /metrics in the
// Prometheus text format 0.0.4 (docs/operations.md, "Metrics"). Everything
// on the request path is an atomic add into memory laid out at start: the
// label values are bounded (route patterns of the table, known methods,
// status codes), so no request can create a time series, and counting
// costs no allocation and no lock.
type serviceMetrics struct {
	routes   map[string]int // route pattern → index into the arrays below
	patterns []string       // index → route label; the last is "unmatched"

	requests  []requestCounters   // one per route
	other     otherStatuses       // answers with a status their route does not list
	durations []metrics.Histogram // one per route

	commits   *commitMetrics
	store     Store     // for the number of categories
	start     time.Time // of the process
	buildInfo string    // the build_info sample's labels
}

// commitMetrics are the store's: one observation per group commit. run
// makes them before it opens the store, which reports to them.
type commitMetrics struct {
	size     metrics.Histogram // creates per commit
	duration metrics.Histogram // seconds per journal write+fdatasync or etcd txn
}

func newCommitMetrics() *commitMetrics {
	return &commitMetrics{size: metrics.NewHistogram(batchBounds, 1), duration: metrics.NewHistogram(durationBounds, 1e-9)}
}

// observe counts one commit of n creates that took d.
func (c *commitMetrics) observe(n int, d time.Duration) {
	c.size.Observe(uint64(max(n, 0)))
	c.duration.Observe(uint64(max(d, 0)))
}

// metricMethods are the method label values; any other method counts as
// "OTHER", so a client cannot make new series by inventing methods.
var metricMethods = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER"}

// metricRoute is a route pattern as ServeMux reports it in
// Request.Pattern, with the statuses its answers are expected to have
// (the operation's documented responses); it may answer others, which
// are counted apart.
type metricRoute struct {
	pattern  string
	statuses []int // ascending
}

// requestCounters count the answers of one route by method and status:
// one counter per method for each status the route lists.
type requestCounters struct {
	statuses []int
	counts   []atomic.Uint64 // [method*len(statuses) + index of the status]
}

// otherStatuses counts the answers whose status their route does not list
// (a route a test adds, a status no operation documents): rare, so a map
// under a lock, which keeps every count exact without a slot for each of
// the 500 statuses on every route.
type otherStatuses struct {
	mu sync.Mutex
	n  map[requestSeries]uint64
}

// requestSeries is one sample of petstore_http_requests_total.
type requestSeries struct{ route, method, status int }

// unmatchedStatuses are what a request no route pattern matched is
// answered: no such path, no such method on a path, a path refused.
var unmatchedStatuses = []int{http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed}

// Histogram bounds. Requests take microseconds to milliseconds here; the
// upper buckets catch stalls (a slow fdatasync, a slow client).
var (
	durationBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	batchBounds    = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
)

const unmatchedRoute = "unmatched"

// newServiceMetrics lays out the counters for the routes of a table.
// commits may be nil (a store that reports none).
func newServiceMetrics(routes []metricRoute, commits *commitMetrics, store Store) *serviceMetrics {
	if commits == nil {
		commits = newCommitMetrics()
	}
	m := &serviceMetrics{
		routes:  make(map[string]int, len(routes)),
		start:   metrics.ProcessStart(),
		commits: commits,
		store:   store,
		other:   otherStatuses{n: map[requestSeries]uint64{}},
	}
	for _, rt := range append(routes, metricRoute{pattern: unmatchedRoute, statuses: unmatchedStatuses}) {
		if _, dup := m.routes[rt.pattern]; dup {
			continue
		}
		m.routes[rt.pattern] = len(m.patterns)
		m.patterns = append(m.patterns, rt.pattern)
		m.requests = append(m.requests, requestCounters{
			statuses: rt.statuses,
			counts:   make([]atomic.Uint64, len(metricMethods)*len(rt.statuses)),
		})
	}
	delete(m.routes, unmatchedRoute) // a pattern a route could have
	m.durations = make([]metrics.Histogram, len(m.patterns))
	for i := range m.durations {
		m.durations[i] = metrics.NewHistogram(durationBounds, 1e-9)
	}
	version := buildinfo.Read()
	m.buildInfo = `version="` + metrics.EscapeLabel(version.Module) + `",goversion="` + metrics.EscapeLabel(version.GoVersion) + `"`
	return m
}

// observeRequest counts one answered request. pattern is the ServeMux
// pattern that served it ("" or one outside the table: unmatched).
func (m *serviceMetrics) observeRequest(method, pattern string, status int, took time.Duration) {
	route, ok := m.routes[pattern]
	if !ok {
		route = len(m.patterns) - 1
	}
	if status < 100 || status > 599 {
		status = 500 // a status net/http would refuse to write
	}
	mi := methodIndex(method)
	c := &m.requests[route]
	if i := slices.Index(c.statuses, status); i >= 0 {
		c.counts[mi*len(c.statuses)+i].Add(1)
	} else {
		m.other.mu.Lock()
		m.other.n[requestSeries{route, mi, status}]++
		m.other.mu.Unlock()
	}
	m.durations[route].Observe(uint64(max(took, 0)))
}

// requestSample is one sample of petstore_http_requests_total.
type requestSample struct {
	requestSeries
	n uint64
}

// requestSamples returns the nonzero request counts, listed and other, in
// the order of route, method and status. A status is counted either in
// its route's list or among the others, never both.
func (m *serviceMetrics) requestSamples() []requestSample {
	var out []requestSample
	for route, c := range m.requests {
		for method := range metricMethods {
			for i, status := range c.statuses {
				if n := c.counts[method*len(c.statuses)+i].Load(); n > 0 {
					out = append(out, requestSample{requestSeries{route, method, status}, n})
				}
			}
		}
	}
	m.other.mu.Lock()
	for series, n := range m.other.n {
		out = append(out, requestSample{series, n})
	}
	m.other.mu.Unlock()
	slices.SortFunc(out, func(a, b requestSample) int {
		return cmp.Or(cmp.Compare(a.route, b.route), cmp.Compare(a.method, b.method), cmp.Compare(a.status, b.status))
	})
	return out
}

func methodIndex(method string) int {
	for i, known := range metricMethods[:len(metricMethods)-1] {
		if method == known {
			return i
		}
	}
	return len(metricMethods) - 1
}

// metricsContentType is the media type of the text format 0.0.4.
var metricsContentType = []string{metrics.ContentType}

// handleMetrics handles "GET /metrics".
func handleMetrics(m *serviceMetrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		m.writeTo(&buf)
		w.Header()["Content-Type"] = metricsContentType
		w.Header()["Content-Length"] = []string{strconv.Itoa(buf.Len())}
		w.WriteHeader(http.StatusOK)
		w.Write(buf.Bytes())
	})
}

// writeTo writes every family in the text format 0.0.4.
func (m *serviceMetrics) writeTo(out io.Writer) {
	e := metrics.NewWriter(out)
	defer e.Flush()

	e.Family("petstore_http_requests_total", "counter", "HTTP requests answered, by method, route pattern and status code.")
	for _, s := range m.requestSamples() {
		e.Sample("petstore_http_requests_total", `method="`+metricMethods[s.method]+`",route="`+metrics.EscapeLabel(m.patterns[s.route])+`",code="`+strconv.Itoa(s.status)+`"`, float64(s.n))
	}
	e.Family("petstore_http_request_duration_seconds", "histogram", "Time from a request's arrival to the end of its answer, by route pattern.")
	for route, name := range m.patterns {
		e.Histogram("petstore_http_request_duration_seconds", `route="`+metrics.EscapeLabel(name)+`"`, &m.durations[route])
	}
	if snap, err := m.store.List(context.Background()); err == nil {
		e.Family("petstore_categories", "gauge", "Categories in the store (as this instance sees it).")
		e.Sample("petstore_categories", "", float64(snap.Len()))
	}
	e.Family("petstore_store_commit_batch_size", "histogram", "Creates made durable together by one journal write+fdatasync or one etcd txn.")
	e.Histogram("petstore_store_commit_batch_size", "", &m.commits.size)
	e.Family("petstore_store_commit_duration_seconds", "histogram", "Time of one journal write+fdatasync or one etcd txn.")
	e.Histogram("petstore_store_commit_duration_seconds", "", &m.commits.duration)
	var refused uint64
	if m.store != nil {
		refused = m.store.RecordsRefused()
	}
	e.Family("petstore_store_records_refused_total", "counter", "Records in the store that are not served because they are not valid categories (another writer of the etcd prefix put them there).")
	e.Sample("petstore_store_records_refused_total", "", float64(refused))
	e.Family("petstore_build_info", "gauge", "Always 1; the labels say which build is running.")
	e.Sample("petstore_build_info", m.buildInfo, 1)

	e.GoRuntime()
	e.Process(m.start)
}
