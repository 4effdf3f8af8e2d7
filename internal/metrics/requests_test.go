package metrics

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// Counters have room for the statuses a route lists; any other status is
// counted too, exactly, and the samples come out in the order of route,
// method and status, one per series.
func TestRequestsCountUnlistedStatuses(t *testing.T) {
	t.Parallel()
	q := NewRequests([]Route{{"GET /a", []int{200, 404}}, {"POST /b", nil}, {"GET /a", []int{500}}}, []int{404}, []float64{1})
	for _, o := range []struct {
		method, pattern string
		status          int
	}{
		{"GET", "GET /a", 200}, {"GET", "GET /a", 200}, {"HEAD", "GET /a", 404}, {"GET", "GET /a", 418},
		{"POST", "POST /b", 201}, {"POST", "POST /b", 201}, {"BREW", "POST /b", 599},
		{"GET", "", 404}, {"GET", "GET /elsewhere", 302}, {"GET", "", 42}, {"DELETE", "", 600}, {"GET", Unmatched, 404},
	} {
		q.Observe(o.method, o.pattern, o.status, time.Millisecond)
	}
	var buf bytes.Buffer
	e := NewWriter(&buf)
	q.WriteCounts(e, "requests_total")
	e.Flush()
	var got []string
	for line := range strings.Lines(buf.String()) {
		got = append(got, strings.TrimSuffix(strings.TrimPrefix(line, "requests_total"), "\n"))
	}
	want := []string{
		`{method="GET",route="GET /a",code="200"} 2`,
		`{method="GET",route="GET /a",code="418"} 1`,
		`{method="HEAD",route="GET /a",code="404"} 1`,
		`{method="POST",route="POST /b",code="201"} 2`,
		`{method="OTHER",route="POST /b",code="599"} 1`,
		`{method="GET",route="unmatched",code="302"} 1`,
		`{method="GET",route="unmatched",code="404"} 2`,
		`{method="GET",route="unmatched",code="500"} 1`,
		`{method="DELETE",route="unmatched",code="500"} 1`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("request samples:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	buf.Reset()
	q.WriteDurations(e, "seconds")
	e.Flush()
	for _, want := range []string{`seconds_count{route="GET /a"} 4`, `seconds_count{route="POST /b"} 3`, `seconds_count{route="unmatched"} 5`} {
		if !strings.Contains(buf.String(), want+"\n") {
			t.Errorf("durations: no %s in\n%s", want, buf.String())
		}
	}
}

// Counting one answer, on the request path: no allocation.
func BenchmarkRequestsObserve(b *testing.B) {
	q := NewRequests([]Route{{"GET /v1/categories", []int{200, 304, 400, 401, 403, 405, 429, 500}}}, nil, []float64{0.001, 0.01})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			q.Observe("GET", "GET /v1/categories", 200, time.Millisecond)
		}
	})
}
