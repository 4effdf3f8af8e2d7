package metrics

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// write returns what f writes through a Writer.
func write(f func(e *Writer)) string {
	var out strings.Builder
	e := NewWriter(&out)
	f(e)
	e.Flush()
	return out.String()
}

func TestEscapeLabel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"GET /v1/categories", "GET /v1/categories"},
		{`a\b`, `a\\b`},
		{`say "hi"`, `say \"hi\"`},
		{"two\nlines", `two\nlines`},
		{"\\\"\n", `\\\"\n`},
	} {
		if got := EscapeLabel(c.in); got != c.want {
			t.Errorf("EscapeLabel(%q): got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSampleValues(t *testing.T) {
	t.Parallel()
	got := write(func(e *Writer) {
		e.Family("x", "gauge", "A test gauge.")
		e.Sample("x", `a="1"`, 0.25)
		e.Sample("x", `a="2"`, 1e21)
		e.Sample("x", `a="3"`, math.Inf(1))
		e.Sample("x", `a="4"`, math.Inf(-1))
		e.Sample("x", `a="5"`, math.NaN())
		e.Sample("x", "", 3)
	})
	want := "# HELP x A test gauge.\n# TYPE x gauge\n" +
		"x{a=\"1\"} 0.25\nx{a=\"2\"} 1e+21\nx{a=\"3\"} +Inf\nx{a=\"4\"} -Inf\nx{a=\"5\"} NaN\nx 3\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Buckets are cumulative, a value on a bound falls in that bound's bucket,
// the sum is in the exposed unit, and the count is the +Inf bucket.
func TestHistogram(t *testing.T) {
	t.Parallel()
	h := NewHistogram([]float64{0.001, 0.01}, 1e-9) // seconds, observed in nanoseconds
	for _, d := range []time.Duration{500 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, time.Second} {
		h.Observe(uint64(d))
	}
	got := write(func(e *Writer) { e.Histogram("d_seconds", `route="r"`, &h) })
	ns, unit := float64(1_006_500_000), 1e-9
	sum := strconv.FormatFloat(ns*unit, 'g', -1, 64) // 1.0065, to the float's last digit
	want := `d_seconds_bucket{route="r",le="0.001"} 2
d_seconds_bucket{route="r",le="0.01"} 3
d_seconds_bucket{route="r",le="+Inf"} 4
d_seconds_sum{route="r"} ` + sum + `
d_seconds_count{route="r"} 4
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	plain := NewHistogram([]float64{1, 2}, 1)
	plain.Observe(2)
	got = write(func(e *Writer) { e.Histogram("n", "", &plain) })
	if want := "n_bucket{le=\"1\"} 0\nn_bucket{le=\"2\"} 1\nn_bucket{le=\"+Inf\"} 1\nn_sum 2\nn_count 1\n"; got != want {
		t.Errorf("without labels: got\n%s\nwant\n%s", got, want)
	}
}

// Observing is what every request does: it allocates nothing.
func TestHistogramObserveAllocatesNothing(t *testing.T) {
	h := NewHistogram([]float64{1, 2, 4}, 1)
	if allocs := testing.AllocsPerRun(1000, func() { h.Observe(3) }); allocs != 0 {
		t.Errorf("allocations per observation: got %v, want 0", allocs)
	}
}

// The go_* and process_* families are written, each after its HELP and TYPE.
func TestRuntimeAndProcessFamilies(t *testing.T) {
	t.Parallel()
	start := ProcessStart()
	if time.Since(start) < 0 || time.Since(start) > time.Hour {
		t.Errorf("ProcessStart: got %v, more than an hour from now", start)
	}
	got := write(func(e *Writer) {
		e.GoRuntime()
		e.Process(start)
	})
	want := []string{"go_goroutines", "go_threads", "go_info", "process_max_fds", "process_start_time_seconds"}
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		want = append(want, "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds")
	}
	for _, family := range want {
		if !strings.Contains(got, "# TYPE "+family+" ") || !strings.Contains(got, "\n"+family+" ") && !strings.Contains(got, "\n"+family+"{") {
			t.Errorf("no %s family in\n%s", family, got)
		}
	}
}
