package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"petstore/internal/buildinfo"
	"petstore/internal/metrics"
)

// serviceMetrics counts what the service does, for GET /metrics in the
// Prometheus text format 0.0.4 (docs/operations.md, "Metrics"): its
// requests (see metrics.Requests), the store's commits, and the process.
type serviceMetrics struct {
	requests  *metrics.Requests
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

// unmatchedStatuses are what a request no route pattern matched is
// answered: no such path, no such method on a path, a path refused.
var unmatchedStatuses = []int{http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed}

// Histogram bounds. Requests take microseconds to milliseconds here; the
// upper buckets catch stalls (a slow fdatasync, a slow client).
var (
	durationBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	batchBounds    = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
)

// newServiceMetrics lays out the counters for the routes of a table.
// commits may be nil (a store that reports none).
func newServiceMetrics(routes []metrics.Route, commits *commitMetrics, store Store) *serviceMetrics {
	if commits == nil {
		commits = newCommitMetrics()
	}
	m := &serviceMetrics{
		requests: metrics.NewRequests(routes, unmatchedStatuses, durationBounds),
		start:    metrics.ProcessStart(),
		commits:  commits,
		store:    store,
	}
	version := buildinfo.Read()
	m.buildInfo = `version="` + metrics.EscapeLabel(version.Module) + `",goversion="` + metrics.EscapeLabel(version.GoVersion) + `"`
	return m
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
	m.requests.WriteCounts(e, "petstore_http_requests_total")
	e.Family("petstore_http_request_duration_seconds", "histogram", "Time from a request's arrival to the end of its answer, by route pattern.")
	m.requests.WriteDurations(e, "petstore_http_request_duration_seconds")
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
