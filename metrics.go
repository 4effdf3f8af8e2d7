package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// serviceMetrics counts what the service does, for GET /metrics in the
// Prometheus text format 0.0.4. Everything on the request path is an atomic
// add into memory laid out at start: the label values are bounded (route
// patterns of the table, known methods, status codes), so no request can
// create a time series, and counting costs no allocation and no lock.
type serviceMetrics struct {
	routes   map[string]int // route pattern → index into the arrays below
	patterns []string       // index → route label; the last is "unmatched"

	requests  [][len(metricMethods)][statusSlots]atomic.Uint64 // route, method, status
	durations []histogram                                      // one per route

	commits   *commitMetrics
	store     Store     // for the number of categories
	start     time.Time // of the process
	buildInfo string    // the build_info sample's labels
}

// commitMetrics are the store's: one observation per group commit. run
// makes them before it opens the store, which reports to them.
type commitMetrics struct {
	size     histogram // creates per commit
	duration histogram // seconds per journal write+fsync or etcd txn
}

func newCommitMetrics() *commitMetrics {
	return &commitMetrics{size: newHistogram(batchBounds, 1), duration: newHistogram(durationBounds, 1e-9)}
}

// observe counts one commit of n creates that took d.
func (c *commitMetrics) observe(n int, d time.Duration) {
	c.size.observe(uint64(max(n, 0)))
	c.duration.observe(uint64(max(d, 0)))
}

// metricMethods are the method label values; any other method counts as
// "OTHER", so a client cannot make new series by inventing methods.
var metricMethods = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER"}

// statusSlots covers the status codes 100 to 599.
const statusSlots = 500

// Histogram bounds. Requests take microseconds to milliseconds here; the
// upper buckets catch stalls (a slow fsync, a slow client).
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
		start:   processStart(),
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
	m.durations = make([]histogram, len(m.patterns))
	for i := range m.durations {
		m.durations[i] = newHistogram(durationBounds, 1e-9)
	}
	version := "(devel)"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		version = info.Main.Version
	}
	m.buildInfo = `version="` + escapeLabel(version) + `",goversion="` + escapeLabel(runtime.Version()) + `"`
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
	m.durations[route].observe(uint64(max(took, 0)))
}

func methodIndex(method string) int {
	for i, known := range metricMethods[:len(metricMethods)-1] {
		if method == known {
			return i
		}
	}
	return len(metricMethods) - 1
}

// histogram is a Prometheus histogram updated with atomic adds: values are
// whole multiples of a unit (nanoseconds for durations, 1 for counts), so
// that the sum is an integer add, not a compare-and-swap loop that
// concurrent requests would spin on.
type histogram struct {
	unit   float64  // what one of an observed value is worth, in the exposed unit
	bounds []uint64 // upper bounds of the buckets, in units
	counts []atomic.Uint64
	sum    atomic.Uint64 // in units
	shown  []float64     // the bounds as exposed
}

// newHistogram makes a histogram with the given bucket bounds, in the
// exposed unit, for values observed in multiples of unit.
func newHistogram(bounds []float64, unit float64) histogram {
	inUnits := make([]uint64, len(bounds))
	for i, b := range bounds {
		inUnits[i] = uint64(math.Round(b / unit))
	}
	return histogram{unit: unit, bounds: inUnits, shown: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// observe counts one value of v units.
func (h *histogram) observe(v uint64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(v)
}

// metricsContentType is the media type of the text format 0.0.4.
var metricsContentType = []string{"text/plain; version=0.0.4; charset=utf-8"}

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
	e := &exposition{w: bufio.NewWriter(out)}
	defer e.w.Flush()

	e.family("petstore_http_requests_total", "counter", "HTTP requests answered, by method, route pattern and status code.")
	for route, name := range m.patterns {
		for method := range metricMethods {
			for slot := range statusSlots {
				if n := m.requests[route][method][slot].Load(); n > 0 {
					e.sample("petstore_http_requests_total", `method="`+metricMethods[method]+`",route="`+escapeLabel(name)+`",code="`+strconv.Itoa(slot+100)+`"`, float64(n))
				}
			}
		}
	}
	e.family("petstore_http_request_duration_seconds", "histogram", "Time from a request's arrival to the end of its answer, by route pattern.")
	for route, name := range m.patterns {
		e.histogram("petstore_http_request_duration_seconds", `route="`+escapeLabel(name)+`"`, &m.durations[route])
	}
	if snap, err := m.store.List(context.Background()); err == nil {
		e.family("petstore_categories", "gauge", "Categories in the store (as this instance sees it).")
		e.sample("petstore_categories", "", float64(snap.Len()))
	}
	e.family("petstore_store_commit_batch_size", "histogram", "Creates made durable together by one journal write+fsync or one etcd txn.")
	e.histogram("petstore_store_commit_batch_size", "", &m.commits.size)
	e.family("petstore_store_commit_duration_seconds", "histogram", "Time of one journal write+fsync or one etcd txn.")
	e.histogram("petstore_store_commit_duration_seconds", "", &m.commits.duration)
	var refused uint64
	if rs, ok := m.store.(interface{ recordsRefused() uint64 }); ok {
		refused = rs.recordsRefused()
	}
	e.family("petstore_store_records_refused_total", "counter", "Records in the store that are not served because they are not valid categories (another writer of the etcd prefix put them there).")
	e.sample("petstore_store_records_refused_total", "", float64(refused))
	e.family("petstore_build_info", "gauge", "Always 1; the labels say which build is running.")
	e.sample("petstore_build_info", m.buildInfo, 1)

	writeGoMetrics(e)
	writeProcessMetrics(e, m.start)
}

// runtimeSamples are the runtime/metrics the go_* families come from.
var runtimeSamples = []struct {
	name, kind, help, source string
}{
	{"go_goroutines", "gauge", "Goroutines that currently exist.", "/sched/goroutines:goroutines"},
	{"go_sched_gomaxprocs_threads", "gauge", "The current GOMAXPROCS: how many threads may run Go code at once.", "/sched/gomaxprocs:threads"},
	{"go_memstats_heap_alloc_bytes", "gauge", "Bytes of heap objects, reachable or not yet swept.", "/memory/classes/heap/objects:bytes"},
	{"go_memstats_sys_bytes", "gauge", "Bytes of memory the Go runtime has mapped from the operating system.", "/memory/classes/total:bytes"},
	{"go_gc_cycles_total", "counter", "Completed garbage collection cycles.", "/gc/cycles/total:gc-cycles"},
}

func writeGoMetrics(e *exposition) {
	samples := make([]metrics.Sample, len(runtimeSamples))
	for i, s := range runtimeSamples {
		samples[i].Name = s.source
	}
	metrics.Read(samples)
	for i, s := range runtimeSamples {
		var v float64
		switch samples[i].Value.Kind() {
		case metrics.KindUint64:
			v = float64(samples[i].Value.Uint64())
		case metrics.KindFloat64:
			v = samples[i].Value.Float64()
		default:
			continue // not in this Go's runtime
		}
		e.family(s.name, s.kind, s.help)
		e.sample(s.name, "", v)
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	e.family("go_threads", "gauge", "OS threads created.")
	e.sample("go_threads", "", float64(threads))
	e.family("go_info", "gauge", "Always 1; the label says which Go built the program.")
	e.sample("go_info", `version="`+escapeLabel(runtime.Version())+`"`, 1)
}

// processStart returns when the process started, from /proc as the
// Prometheus client reads it (the boot time plus the process's start in
// clock ticks), or now where /proc does not tell.
func processStart() time.Time {
	stat, err1 := os.ReadFile("/proc/self/stat")
	boot, err2 := os.ReadFile("/proc/stat")
	if err1 != nil || err2 != nil {
		return time.Now()
	}
	var btime float64
	for line := range strings.Lines(string(boot)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			btime, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || btime == 0 {
		return time.Now()
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return time.Now()
	}
	ticks, err := strconv.ParseFloat(f[19], 64) // field 22: starttime
	if err != nil {
		return time.Now()
	}
	return time.Unix(0, int64((btime+ticks/clockTicks)*1e9))
}

// clockTicks is USER_HZ, the unit of /proc's times: 100 on every Linux
// platform Go supports.
const clockTicks = 100

// writeProcessMetrics reads /proc/self as the Prometheus client does. On a
// system without /proc only the start time is written.
func writeProcessMetrics(e *exposition, start time.Time) {
	if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
		// Fields after the command, which is in parentheses and may hold
		// spaces: state is field 3, utime 14, stime 15, vsize 23, rss 24.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			f := strings.Fields(string(stat[i+1:]))
			field := func(n int) float64 {
				if n-3 >= len(f) {
					return 0
				}
				v, _ := strconv.ParseFloat(f[n-3], 64)
				return v
			}
			e.family("process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.")
			e.sample("process_cpu_seconds_total", "", (field(14)+field(15))/clockTicks)
			e.family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.")
			e.sample("process_virtual_memory_bytes", "", field(23))
			e.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
			e.sample("process_resident_memory_bytes", "", field(24)*float64(os.Getpagesize()))
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		e.family("process_open_fds", "gauge", "Open file descriptors.")
		e.sample("process_open_fds", "", float64(len(fds)))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		e.family("process_max_fds", "gauge", "The limit on open file descriptors.")
		e.sample("process_max_fds", "", float64(lim.Cur))
	}
	e.family("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.")
	e.sample("process_start_time_seconds", "", float64(start.UnixNano())/1e9)
}

// exposition writes the text format 0.0.4.
type exposition struct {
	w *bufio.Writer
}

func (e *exposition) family(name, kind, help string) {
	e.w.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + kind + "\n")
}

func (e *exposition) sample(name, labels string, v float64) {
	e.w.WriteString(name)
	if labels != "" {
		e.w.WriteString("{" + labels + "}")
	}
	e.w.WriteByte(' ')
	e.w.WriteString(formatSampleValue(v))
	e.w.WriteByte('\n')
}

// histogram writes the cumulative buckets, sum and count of h; the count is
// the +Inf bucket, as the format requires, even while observations land.
func (e *exposition) histogram(name, labels string, h *histogram) {
	sep := ""
	if labels != "" {
		sep = ","
	}
	var cumulative uint64
	for i := range h.counts {
		cumulative += h.counts[i].Load()
		le := "+Inf"
		if i < len(h.shown) {
			le = formatSampleValue(h.shown[i])
		}
		e.sample(name+"_bucket", labels+sep+`le="`+le+`"`, float64(cumulative))
	}
	e.sample(name+"_sum", labels, float64(h.sum.Load())*h.unit)
	e.sample(name+"_count", labels, float64(cumulative))
}

func formatSampleValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// escapeLabel escapes a label value: backslash, double quote and newline.
func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
