// Package accesslog writes petstore's logs: the access line of every
// request, appended by hand byte for byte as log/slog's JSON handler would
// write it (the hottest line the service writes), the JSON logger of every
// other line, and the error log of the HTTP server. No line holds a
// control or bidirectional character raw: log lines carry them as JSON
// \uXXXX escapes (docs/security.md, "Logs").
package accesslog

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"petstore/internal/rawjson"
)

// Line is the access log record of one request.
//
// The access log is the hottest line petstore writes: one per request. Going
// through slog.Logger (caller lookup, a Record, attribute values, float
// formatting through encoding/json) cost about 12% of GET throughput on one
// CPU (make bench-load), so the line is appended by hand here, byte for byte
// as slog.NewJSONHandler writes the same record; TestAccessLineMatchesSlog
// and FuzzAccessLine hold it to that. Every other log line goes through slog.
type Line struct {
	Time       time.Time
	Method     string
	Route      string // the route's pattern; "" when none matched
	Path       string // see Path
	Status     int
	Bytes      int64
	DurationMS float64 // milliseconds, to the microsecond
	RequestID  string
	Key        [32]byte // the SHA-256 of the accepted API key, when Keyed; logged by its fingerprint
	Keyed      bool
	Err        string // "" when the answer carried no error
}

// Attrs returns the line's attributes in slog form, in the order
// AppendJSON writes them.
func (l *Line) Attrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.String("method", l.Method),
		slog.String("route", l.Route),
		slog.String("path", l.Path),
		slog.Int("status", l.Status),
		slog.Int64("bytes", l.Bytes),
		slog.Float64("duration_ms", l.DurationMS),
		slog.String("request_id", l.RequestID),
	}
	if l.Keyed {
		attrs = append(attrs, slog.String("key", Fingerprint(l.Key)))
	}
	if l.Err != "" {
		attrs = append(attrs, slog.String("error", l.Err))
	}
	return attrs
}

// AppendJSON appends the line as slog's JSONHandler writes an INFO record
// with message "request" and Attrs, newline included. (Lines of 5xx
// answers are ERROR and go through slog.)
func (l *Line) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	if !l.Time.IsZero() { // slog leaves a zero time out
		b = append(b, `"time":"`...)
		b = appendTime(b, l.Time)
		b = append(b, `",`...)
	}
	b = append(b, `"level":"INFO","msg":"request","method":`...)
	b = rawjson.AppendLogString(b, l.Method)
	b = append(b, `,"route":`...)
	b = rawjson.AppendLogString(b, l.Route)
	b = append(b, `,"path":`...)
	b = rawjson.AppendLogString(b, l.Path)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(l.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, l.Bytes, 10)
	b = append(b, `,"duration_ms":`...)
	b = appendLogFloat(b, l.DurationMS)
	b = append(b, `,"request_id":`...)
	b = rawjson.AppendLogString(b, l.RequestID)
	if l.Keyed {
		b = append(b, `,"key":"`...)
		b = AppendFingerprint(b, l.Key)
		b = append(b, '"')
	}
	if l.Err != "" {
		b = append(b, `,"error":`...)
		b = rawjson.AppendLogString(b, l.Err)
	}
	return append(b, "}\n"...)
}

// appendLogFloat appends f as encoding/json writes it, which is what slog
// uses for floats. A duration, whole microseconds over 1000 below 10⁹ ms,
// is written from its integer: the decimal k/1000 is then the shortest that
// reads back as f, which is what strconv finds by a longer way. 0, or
// 0.000001 and up, takes the plain decimal notation that strconv gives
// directly; anything else goes to json.Marshal.
func appendLogFloat(b []byte, f float64) []byte {
	if f > 0 && f < 1e9 {
		if us := int64(math.Round(f * 1000)); float64(us)/1000 == f {
			b = strconv.AppendInt(b, us/1000, 10)
			if frac := us % 1000; frac != 0 {
				b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
				for b[len(b)-1] == '0' {
					b = b[:len(b)-1]
				}
			}
			return b
		}
	}
	if f == 0 || f >= 1e-6 && f < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	text, err := json.Marshal(f)
	if err != nil { // NaN or ±Inf, which slog writes as its error text
		return append(b, strconv.Quote(err.Error())...)
	}
	return append(b, text...)
}

// second is what an RFC 3339 time shares with every other time of the
// same second in the same location: the date and the clock to the second,
// and the zone.
type second struct {
	unix int64
	loc  *time.Location
	date []byte // 2006-01-02T15:04:05
	zone []byte // Z or ±hh:mm
}

// lastSecond is the second of the latest line: formatting a time costs
// more than the rest of the line, and lines come many a second.
var lastSecond atomic.Pointer[second]

// appendTime appends t as t.AppendFormat(b, time.RFC3339Nano) does.
func appendTime(b []byte, t time.Time) []byte {
	s := lastSecond.Load()
	if s == nil || s.unix != t.Unix() || s.loc != t.Location() {
		if y := t.Year(); y < 0 || y > 9999 { // RFC 3339 has no such year
			return t.AppendFormat(b, time.RFC3339Nano)
		}
		s = &second{unix: t.Unix(), loc: t.Location(),
			date: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
		lastSecond.Store(s)
	}
	b = append(b, s.date...)
	if ns := t.Nanosecond(); ns != 0 {
		var digits [10]byte
		digits[0] = '.'
		for i := 9; i > 0; i-- {
			digits[i] = byte('0' + ns%10)
			ns /= 10
		}
		end := len(digits)
		for digits[end-1] == '0' {
			end--
		}
		b = append(b, digits[:end]...)
	}
	return append(b, s.zone...)
}

// Log writes access lines to w, each with one Write. w must be safe for
// concurrent use (a logsink.Sink is), since requests log concurrently.
type Log struct {
	w    io.Writer
	bufs sync.Pool // *[]byte
}

// New returns the access log that writes to w.
func New(w io.Writer) *Log {
	return &Log{w: w, bufs: sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}}
}

// Write writes l.
func (a *Log) Write(l *Line) {
	bp := a.bufs.Get().(*[]byte)
	*bp = l.AppendJSON((*bp)[:0])
	a.w.Write(*bp) // a log that cannot be written has nowhere to report it
	a.bufs.Put(bp)
}

// Fingerprint names an API key in a log line without showing it: the
// first 8 hex digits of its SHA-256, digest.
func Fingerprint(digest [32]byte) string { return string(AppendFingerprint(nil, digest)) }

// AppendFingerprint appends the Fingerprint of digest to dst.
func AppendFingerprint(dst []byte, digest [32]byte) []byte { return hex.AppendEncode(dst, digest[:4]) }
