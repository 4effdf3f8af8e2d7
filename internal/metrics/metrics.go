// Package metrics writes the Prometheus text exposition format 0.0.4:
// families with their HELP and TYPE lines, samples with escaped label
// values, and histograms updated with atomic adds only, so that observing a
// value costs no lock and no allocation. It also writes the go_* and
// process_* families the Prometheus Go client exposes, read from the
// runtime and from /proc, and counts and times the answers of an HTTP
// service by route, method and status (Requests). It knows nothing of
// what else a program counts.
package metrics

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
)

// ContentType is the media type of the text format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Histogram is a Prometheus histogram updated with atomic adds: values are
// whole multiples of a unit (nanoseconds for durations, 1 for counts), so
// that the sum is an integer add, not a compare-and-swap loop that
// concurrent observers would spin on. It is safe for concurrent use; make
// it with NewHistogram.
type Histogram struct {
	unit   float64  // what one of an observed value is worth, in the exposed unit
	bounds []uint64 // upper bounds of the buckets, in units
	counts []atomic.Uint64
	sum    atomic.Uint64 // in units
	shown  []float64     // the bounds as exposed
}

// NewHistogram makes a histogram with the given bucket bounds, in the
// exposed unit, for values observed in multiples of unit.
func NewHistogram(bounds []float64, unit float64) Histogram {
	inUnits := make([]uint64, len(bounds))
	for i, b := range bounds {
		inUnits[i] = uint64(math.Round(b / unit))
	}
	return Histogram{unit: unit, bounds: inUnits, shown: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe counts one value of v units.
func (h *Histogram) Observe(v uint64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(v)
}

// Writer writes families and samples in the text format 0.0.4. Write each
// family's Family line before its samples, and call Flush at the end.
type Writer struct {
	w *bufio.Writer
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w)} }

// Flush writes out what is buffered.
func (e *Writer) Flush() error { return e.w.Flush() }

// Family writes the HELP and TYPE lines of a family; kind is its type
// ("counter", "gauge", "histogram").
func (e *Writer) Family(name, kind, help string) {
	e.w.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + kind + "\n")
}

// Sample writes one sample. labels is "" or the text between the braces,
// such as `method="GET",code="200"`, its values escaped with EscapeLabel.
func (e *Writer) Sample(name, labels string, v float64) {
	e.w.WriteString(name)
	if labels != "" {
		e.w.WriteString("{" + labels + "}")
	}
	e.w.WriteByte(' ')
	e.w.WriteString(formatSampleValue(v))
	e.w.WriteByte('\n')
}

// Histogram writes the cumulative buckets, sum and count of h; the count is
// the +Inf bucket, as the format requires, even while observations land.
func (e *Writer) Histogram(name, labels string, h *Histogram) {
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
		e.Sample(name+"_bucket", labels+sep+`le="`+le+`"`, float64(cumulative))
	}
	e.Sample(name+"_sum", labels, float64(h.sum.Load())*h.unit)
	e.Sample(name+"_count", labels, float64(cumulative))
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

// EscapeLabel escapes a label value: backslash, double quote and newline.
func EscapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
