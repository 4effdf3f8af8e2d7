package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

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

	requests  [][len(metricMethods)][statusSlots]atomic.Uint64 // route, method, status
	durations []metrics.Histogram                              // one per route

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

// statusSlots covers the status codes 100 to 599.
const statusSlots = 500

// Histogram bounds. Requests take microseconds to milliseconds here; the
// upper buckets catch stalls (a slow fdatasync, a slow client).
var (
	durationBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	batchBounds    = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
)

const unmatchedRoute = "unmatched"

// newServiceMetrics lays out the counters for the route patterns of a
// table (as ServeMux reports them in Request.Pattern). commits may be nil
// (a store that reports none).
func newServiceMetrics(patterns []string, commits *commitMetrics, store Store) *serviceMetrics {
	if commits == nil {
		commits = newCommitMetrics()
	}
	m := &serviceMetrics{
		routes:  make(map[string]int, len(patterns)),
		start:   metrics.ProcessStart(),
		commits: commits,
		store:   store,
	}
	for _, p := range patterns {
		if _, dup := m.routes[p]; !dup {
			m.routes[p] = len(m.patterns)
			m.patterns = append(m.patterns, p)
		}
	}
	m.patterns = append(m.patterns, unmatchedRoute)
	m.requests = make([][len(metricMethods)][statusSlots]atomic.Uint64, len(m.patterns))
	m.durations = make([]metrics.Histogram, len(m.patterns))
	for i := range m.durations {
		m.durations[i] = metrics.NewHistogram(durationBounds, 1e-9)
	}
	version := readBuildVersion()
	m.buildInfo = `version="` + metrics.EscapeLabel(version.module) + `",goversion="` + metrics.EscapeLabel(version.goVersion) + `"`
	return m
}

// observeRequest counts one answered request. pattern is the ServeMux
// pattern that served it ("" or one outside the table: unmatched).
func (m *serviceMetrics) observeRequest(method, pattern string, status int, took time.Duration) {
	route, ok := m.routes[pattern]
	if !ok {
		route = len(m.patterns) - 1
	}
	if status < 100 || status >= 100+statusSlots {
		status = 500 // a status net/http would refuse to write
	}
	m.requests[route][methodIndex(method)][status-100].Add(1)
	m.durations[route].Observe(uint64(max(took, 0)))
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
	for route, name := range m.patterns {
		for method := range metricMethods {
			for slot := range statusSlots {
				if n := m.requests[route][method][slot].Load(); n > 0 {
					e.Sample("petstore_http_requests_total", `method="`+metricMethods[method]+`",route="`+metrics.EscapeLabel(name)+`",code="`+strconv.Itoa(slot+100)+`"`, float64(n))
				}
			}
		}
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
