package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"petstore/internal/rawjson"
	"strconv"
	"sync"
	"time"
)

// accessLine is the access log record of one request.
//
// The access log is the hottest line petstore writes: one per request. Going
// through slog.Logger (caller lookup, a Record, attribute values, float
// formatting through encoding/json) cost about 12% of GET throughput on one
// CPU (make bench-load), so the line is appended by hand here, byte for byte
// as slog.NewJSONHandler writes the same record; TestAccessLineMatchesSlog
// and FuzzAccessLine hold it to that. Every other log line goes through slog.
type accessLine struct {
	time      time.Time
	method    string
	route     string
	path      string
	status    int
	bytes     int64
	duration  float64 // milliseconds, to the microsecond
	requestID string
	key       keyDigest // of the accepted API key, when keyed; logged by its fingerprint
	keyed     bool
	err       string // "" when the answer carried no error
}

// attrs returns the line's attributes in slog form, in the order
// appendJSON writes them.
func (l *accessLine) attrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.String("method", l.method),
		slog.String("route", l.route),
		slog.String("path", l.path),
		slog.Int("status", l.status),
		slog.Int64("bytes", l.bytes),
		slog.Float64("duration_ms", l.duration),
		slog.String("request_id", l.requestID),
	}
	if l.keyed {
		attrs = append(attrs, slog.String("key", l.key.fingerprint()))
	}
	if l.err != "" {
		attrs = append(attrs, slog.String("error", l.err))
	}
	return attrs
}

// appendJSON appends the line as slog's JSONHandler writes an INFO record
// with message "request" and attrs, newline included. (Lines of 5xx answers
// are ERROR and go through slog; see logRequests.)
func (l *accessLine) appendJSON(b []byte) []byte {
	b = append(b, '{')
	if !l.time.IsZero() { // slog leaves a zero time out
		b = append(b, `"time":"`...)
		b = l.time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":"INFO","msg":"request","method":`...)
	b = rawjson.AppendLogString(b, l.method)
	b = append(b, `,"route":`...)
	b = rawjson.AppendLogString(b, l.route)
	b = append(b, `,"path":`...)
	b = rawjson.AppendLogString(b, l.path)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(l.status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, l.bytes, 10)
	b = append(b, `,"duration_ms":`...)
	b = appendLogFloat(b, l.duration)
	b = append(b, `,"request_id":`...)
	b = rawjson.AppendLogString(b, l.requestID)
	if l.keyed {
		b = append(b, `,"key":"`...)
		b = l.key.appendFingerprint(b)
		b = append(b, '"')
	}
	if l.err != "" {
		b = append(b, `,"error":`...)
		b = rawjson.AppendLogString(b, l.err)
	}
	return append(b, "}\n"...)
}

// appendLogFloat appends f as encoding/json writes it, which is what slog
// uses for floats. Durations (0, or 0.001 and up) take the plain decimal
// notation that strconv gives directly; anything else goes to json.Marshal.
func appendLogFloat(b []byte, f float64) []byte {
	if f == 0 || f >= 1e-6 && f < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	text, err := json.Marshal(f)
	if err != nil { // NaN or ±Inf, which slog writes as its error text
		return append(b, strconv.Quote(err.Error())...)
	}
	return append(b, text...)
}

// accessLog writes access lines to w, each with one Write. w must be safe
// for concurrent use (the logsink.Sink is), since requests log concurrently.
type accessLog struct {
	w    io.Writer
	bufs sync.Pool // *[]byte
}

func newAccessLog(w io.Writer) *accessLog {
	return &accessLog{w: w, bufs: sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}}
}

func (a *accessLog) write(l *accessLine) {
	bp := a.bufs.Get().(*[]byte)
	*bp = l.appendJSON((*bp)[:0])
	a.w.Write(*bp) // a log that cannot be written has nowhere to report it
	a.bufs.Put(bp)
}
