package metrics

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Route is a route pattern as net/http.ServeMux reports it in
// Request.Pattern, with the statuses its answers are expected to have (its
// operation's documented responses). It may answer others: those are
// counted too, apart.
type Route struct {
	Pattern  string
	Statuses []int // ascending
}

// Unmatched is the route label of requests no route's pattern matched.
const Unmatched = "unmatched"

// methods are the method label values; any other method counts as
// "OTHER", so a client cannot make new series by inventing methods.
var methods = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER"}

// Requests counts the answers of an HTTP service by route, method and
// status, and times them by route. The label values are bounded (the
// routes given, the methods above, the statuses 100 to 599), so no request
// can make a new series. Counting an answer whose status its route lists
// is an atomic add into memory laid out by NewRequests, without allocation
// or lock; any other status takes a lock, which keeps every count exact
// without a counter for each of 500 statuses on every route. Safe for
// concurrent use.
type Requests struct {
	routes    map[string]int // pattern → index into the slices below
	patterns  []string       // index → route label; the last is Unmatched
	counters  []routeCounters
	durations []Histogram

	mu    sync.Mutex
	other map[series]uint64 // answers whose status their route does not list
}

// routeCounters count the answers of one route: one counter per method for
// each status the route lists.
type routeCounters struct {
	statuses []int
	counts   []atomic.Uint64 // [method*len(statuses) + index of the status]
}

// series is one sample of the request counter.
type series struct{ route, method, status int }

// NewRequests lays out the counters of routes, and of Unmatched with the
// statuses unmatched; durations are observed into histograms of bounds (in
// seconds).
func NewRequests(routes []Route, unmatched []int, bounds []float64) *Requests {
	q := &Requests{routes: make(map[string]int, len(routes)), other: map[series]uint64{}}
	for _, rt := range append(routes, Route{Pattern: Unmatched, Statuses: unmatched}) {
		if _, dup := q.routes[rt.Pattern]; dup {
			continue
		}
		q.routes[rt.Pattern] = len(q.patterns)
		q.patterns = append(q.patterns, rt.Pattern)
		q.counters = append(q.counters, routeCounters{statuses: rt.Statuses, counts: make([]atomic.Uint64, len(methods)*len(rt.Statuses))})
		q.durations = append(q.durations, NewHistogram(bounds, 1e-9))
	}
	delete(q.routes, Unmatched) // a label, not a pattern a request can match
	return q
}

// Observe counts one answer of status that took took, to a request of
// method that pattern matched ("" or a pattern not given: Unmatched).
func (q *Requests) Observe(method, pattern string, status int, took time.Duration) {
	route, ok := q.routes[pattern]
	if !ok {
		route = len(q.patterns) - 1
	}
	if status < 100 || status > 599 {
		status = 500 // a status net/http would refuse to write
	}
	m := methodIndex(method)
	c := &q.counters[route]
	if i := slices.Index(c.statuses, status); i >= 0 {
		c.counts[m*len(c.statuses)+i].Add(1)
	} else {
		q.mu.Lock()
		q.other[series{route, m, status}]++
		q.mu.Unlock()
	}
	q.durations[route].Observe(uint64(max(took, 0)))
}

func methodIndex(method string) int {
	for i, known := range methods[:len(methods)-1] {
		if method == known {
			return i
		}
	}
	return len(methods) - 1
}

// WriteCounts writes the samples of the family name, a counter labelled
// method, route and code: the nonzero counts, in the order of route,
// method and status.
func (q *Requests) WriteCounts(e *Writer, name string) {
	type sample struct {
		series
		n uint64
	}
	var out []sample
	for route, c := range q.counters {
		for m := range methods {
			for i, status := range c.statuses {
				if n := c.counts[m*len(c.statuses)+i].Load(); n > 0 {
					out = append(out, sample{series{route, m, status}, n})
				}
			}
		}
	}
	q.mu.Lock()
	for s, n := range q.other { // never a status its route lists: no sample twice
		out = append(out, sample{s, n})
	}
	q.mu.Unlock()
	slices.SortFunc(out, func(a, b sample) int {
		return cmp.Or(cmp.Compare(a.route, b.route), cmp.Compare(a.method, b.method), cmp.Compare(a.status, b.status))
	})
	for _, s := range out {
		e.Sample(name, `method="`+methods[s.method]+`",route="`+EscapeLabel(q.patterns[s.route])+`",code="`+strconv.Itoa(s.status)+`"`, float64(s.n))
	}
}

// WriteDurations writes the samples of the family name, a histogram
// labelled route, one per route.
func (q *Requests) WriteDurations(e *Writer, name string) {
	for route, label := range q.patterns {
		e.Histogram(name, `route="`+EscapeLabel(label)+`"`, &q.durations[route])
	}
}
