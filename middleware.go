package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"
)

// accessRecorder wraps the ResponseWriter of one request to learn what the
// access log needs: status, bytes written, and the error writeError answered.
type accessRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	err    error

	requestID [1]string // backs the X-Request-Id header value
}

func (rec *accessRecorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
	rec.ResponseWriter.WriteHeader(status)
}

func (rec *accessRecorder) Write(p []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(p)
	rec.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rec *accessRecorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// logRequests gives every request an id (a sane incoming X-Request-Id, or a
// new one), echoes it in the response, and logs one line per request.
// Nothing from the Authorization header is ever logged.
//
// Lines go to access, except those of answers with status 500 and above,
// which go through log: access may be buffered (see logSink), errors are not.
func logRequests(access *accessLog, log *slog.Logger, next http.Handler) http.Handler {
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
		// One allocation for the recorder and the header value.
		rec := &accessRecorder{ResponseWriter: w}
		rec.requestID[0] = id
		w.Header()["X-Request-Id"] = rec.requestID[:]
		next.ServeHTTP(rec, r)

		line := accessLine{
			time:      start, // when the request arrived; the duration says how long it took
			method:    r.Method,
			route:     r.Pattern,
			path:      r.URL.Path,
			status:    rec.status,
			bytes:     rec.bytes,
			duration:  float64(time.Since(start).Microseconds()) / 1000,
			requestID: id,
		}
		if rec.err != nil {
			line.err = logErrorText(rec.err)
		}
		if rec.status < 500 {
			access.write(&line)
			return
		}
		log.LogAttrs(r.Context(), slog.LevelError, "request", line.attrs()...)
	})
}

// validRequestID accepts 1 to 128 characters of letters, digits and -._:
// so that an id taken from a client is safe to echo and to log.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':') {
			return false
		}
	}
	return true
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
			log.Error("handler panicked", "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if rec, ok := w.(*accessRecorder); ok && rec.status != 0 {
				rec.err = err
				return // the answer is under way; net/http closes the connection
			}
			writeError(w, err)
		}()
		next.ServeHTTP(w, r)
	})
}

// requireCleanPath answers 404 for paths that are not in canonical form
// ("//", "/./", "/../"), which ServeMux would otherwise redirect with an HTML
// body.
func requireCleanPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "" || p[0] != '/' || path.Clean(p) != p && path.Clean(p)+"/" != p {
			writeError(w, errorf(codeNotFound, "no such path: paths must be in canonical form"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
