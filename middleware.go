package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"petstore/internal/accesslog"
	"petstore/internal/ascii"
	"petstore/internal/connlimit"
)

// accessRecorder wraps the ResponseWriter of one request to record the
// status and size of its answer in the request's facts.
type accessRecorder struct {
	http.ResponseWriter
	facts  *requestFacts
	body   *bodyWatch          // the request's body, when it declared one over HTTP/1.x
	conn   *connlimit.Requests // of the request's connection (nil: not tracked)
	linger bool                // answered before the body was read: end the connection lingering

	requestID [1]string // backs the X-Request-Id header value
}

func (rec *accessRecorder) WriteHeader(status int) {
	if rec.facts.status == 0 {
		rec.closeIfBodyUnread()
		rec.facts.status = status
	}
	rec.ResponseWriter.WriteHeader(status)
}

func (rec *accessRecorder) Write(p []byte) (int, error) {
	if rec.facts.status == 0 {
		rec.closeIfBodyUnread()
		rec.facts.status = http.StatusOK
	}
	rec.conn.WaitBegin() // a client that does not read holds the write
	n, err := rec.ResponseWriter.Write(p)
	rec.conn.WaitEnd()
	rec.facts.bytes += int64(n)
	return n, err
}

// closeIfBodyUnread ends the HTTP/1.x connection with this answer when the
// request declared a body that was not read to its end (a 401, a route that
// takes no body, a body refused by its declared size). Otherwise net/http
// would read the rest of it, up to 256 KiB, for as long as the read timeout
// allows, before the connection could be used again: a client without a
// key could hold a finished 16 KiB header block that way, on every
// connection, by sending its body a byte at a time. Once the answer is
// written, endLingering hands the connection to connlimit.Linger, which
// reads and discards the rest without the request, then closes it.
func (rec *accessRecorder) closeIfBodyUnread() {
	if rec.body == nil || rec.body.done {
		return
	}
	rec.ResponseWriter.Header().Set("Connection", "close")
	rec.linger = true
}

// endLingering ends the connection of an answer given before the body was
// read (see closeIfBodyUnread): the answer is flushed whole, and the
// connection goes to connlimit.Linger, which drains what the client still
// sends before it closes it, so that a client that sends its whole body
// before reading reads the answer rather than a reset (docs/security.md,
// "Connections"). An answer whose length is not known cannot be flushed
// whole before the handler returns: its connection is closed by net/http,
// as the past read deadline makes it.
func (rec *accessRecorder) endLingering() {
	rc := http.NewResponseController(rec.ResponseWriter)
	h := rec.Header()
	if rec.facts.status == 0 { // nothing written: net/http would answer 200
		h.Set("Content-Length", "0")
		rec.WriteHeader(http.StatusOK)
	}
	if len(h["Content-Length"]) == 0 && bodyAllowed(rec.facts.status) {
		rc.SetReadDeadline(time.Now())
		return
	}
	if rc.Flush() != nil {
		rc.SetReadDeadline(time.Now())
		return
	}
	conn, rw, err := rc.Hijack()
	if err != nil {
		rc.SetReadDeadline(time.Now())
		return
	}
	connlimit.Linger(conn, rw.Reader)
}

// bodyAllowed reports whether an answer of status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// bodyWatch is a request body that notes when it was read to its end, and
// how long a read waits on the client.
type bodyWatch struct {
	io.ReadCloser
	left int64 // bytes declared and not read yet; -1 when not declared (chunked)
	done bool  // read to the end
	conn *connlimit.Requests
}

func (b *bodyWatch) Read(p []byte) (int, error) {
	b.conn.WaitBegin()
	n, err := b.ReadCloser.Read(p)
	b.conn.WaitEnd()
	if b.left > 0 {
		b.left -= int64(n)
	}
	if err == io.EOF || b.left == 0 {
		b.done = true
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rec *accessRecorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// requestState is everything logRequests makes for one request, allocated
// at once.
type requestState struct {
	rec  accessRecorder
	ctx  requestContext
	body bodyWatch
}

// logRequests gives every request an id (a sane incoming X-Request-Id, or a
// new one), echoes it in the response, and logs one line per request.
// Nothing from the Authorization header is ever logged.
//
// Lines go to access, except those of answers with status 500 and above,
// which go through log: access may be buffered (see logsink.Sink), errors are not.
func logRequests(access *accesslog.Log, log *slog.Logger, metrics *serviceMetrics, next http.Handler) http.Handler {
	var prefix [6]byte
	rand.Read(prefix[:])
	idPrefix := hex.EncodeToString(prefix[:]) + "-"
	var seq atomic.Uint64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := headerValue(r.Header, "X-Request-Id")
		if !validRequestID(id) {
			var buf [64]byte
			id = string(strconv.AppendUint(append(buf[:0], idPrefix...), seq.Add(1), 10))
		}
		st := &requestState{rec: accessRecorder{ResponseWriter: w, conn: connlimit.RequestsOf(r.Context())}, ctx: requestContext{Context: r.Context()}}
		facts := &st.ctx.facts
		facts.id = id
		st.rec.facts = facts
		st.rec.requestID[0] = id
		w.Header()["X-Request-Id"] = st.rec.requestID[:]
		r = r.WithContext(&st.ctx)
		// Over HTTP/2 an answer that leaves the body unread ends only its
		// stream (net/http resets it, RFC 9113 section 8.1), and flow
		// control bounds what the client may send meanwhile: the
		// connection stays.
		if r.ContentLength != 0 {
			st.body = bodyWatch{ReadCloser: r.Body, left: r.ContentLength, conn: st.rec.conn}
			r.Body = &st.body
			if r.ProtoMajor == 1 {
				st.rec.body = &st.body
			}
		}
		// Logged in a defer: a handler that panics after its answer began
		// is aborted (see recoverPanics), and its line is written all the
		// same.
		defer logRequest(access, log, metrics, r, facts, start)
		st.rec.conn.Start()
		defer st.rec.conn.Done()
		next.ServeHTTP(&st.rec, r)
		if facts.status == 0 { // net/http writes the answer now
			st.rec.closeIfBodyUnread()
		}
		if st.rec.linger {
			st.rec.endLingering()
		}
	})
}

// logRequest counts and logs one request once it is answered.
func logRequest(access *accesslog.Log, log *slog.Logger, metrics *serviceMetrics, r *http.Request, facts *requestFacts, start time.Time) {
	if facts.status == 0 { // nothing written: net/http answers 200
		facts.status = http.StatusOK
	}
	took := time.Since(start)
	metrics.requests.Observe(r.Method, r.Pattern, facts.status, took)
	line := accesslog.Line{
		Time:       start, // when the request arrived; the duration says how long it took
		Method:     r.Method,
		Route:      r.Pattern,
		Path:       accesslog.Path(r.URL.Path),
		Status:     facts.status,
		Bytes:      facts.bytes,
		DurationMS: float64(took.Microseconds()) / 1000,
		RequestID:  facts.id,
	}
	if facts.keyed {
		line.Key, line.Keyed = facts.key, true
	}
	if facts.err != nil {
		line.Err = logErrorText(facts.err)
	}
	if facts.status < 500 {
		access.Write(&line)
		return
	}
	log.LogAttrs(r.Context(), slog.LevelError, "request", line.Attrs()...)
}

// requestIDChars may form an X-Request-Id petstore echoes and logs.
var requestIDChars = ascii.SetOf(ascii.Letters, ascii.Digits, "-._:")

// validRequestID accepts 1 to 128 characters of letters, digits and -._:
// so that an id taken from a client is safe to echo and to log.
func validRequestID(id string) bool {
	return id != "" && len(id) <= 128 && requestIDChars.All(id)
}

// recoverPanics turns a panic in a handler into a 500 Error answer (when
// nothing was written yet) and logs it with its stack; the server goes on.
func recoverPanics(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			err := fmt.Errorf("panic: %v", v)
			facts := factsOf(r)
			log.Error("handler panicked", "request_id", facts.id, "path", accesslog.Path(r.URL.Path), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if facts.status != 0 {
				// The answer is under way and cannot become an Error:
				// abort it, so that the client sees a broken answer, not
				// a complete-looking one (net/http closes the connection
				// and logs nothing more for ErrAbortHandler).
				facts.err = err
				panic(http.ErrAbortHandler)
			}
			writeError(w, r, err)
		}()
		next.ServeHTTP(w, r)
	})
}

// requireCleanPath answers 404 for paths that are not in canonical form
// ("//", "/./", "/../"), which ServeMux would otherwise redirect with an HTML
// body.
func requireCleanPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isCleanPath(r.URL.Path) {
			writeError(w, r, apiErrorf(codeNotFound, "no such path: paths must be in canonical form"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isCleanPath reports whether p is what path.Clean makes of it, but for
// one trailing slash: it begins with "/" and no segment is empty (but the
// last), "." or "..". It scans p once, as path.Clean would twice.
func isCleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for start := 1; start < len(p); {
		end := start
		for end < len(p) && p[end] != '/' {
			end++
		}
		if seg := p[start:end]; seg == "" || seg == "." || seg == ".." {
			return false
		}
		start = end + 1
	}
	return true
}
