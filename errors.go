package main

import (
	"errors"
	"fmt"
	"net/http"
	"petstore/internal/rawjson"
	"strconv"
)

// Error codes: the machine-readable "code" of the Error body. statusOf maps
// each one to its HTTP status; it is the only place that does.
const (
	codeInvalidJSON          = "invalid_json"
	codeMissingField         = "missing_field"
	codeInvalidField         = "invalid_field"
	codeUnknownField         = "unknown_field"
	codeInvalidParameter     = "invalid_parameter"
	codeUnauthorized         = "unauthorized"
	codeNotFound             = "not_found"
	codeMethodNotAllowed     = "method_not_allowed"
	codeConflict             = "conflict"
	codeGone                 = "gone"
	codePayloadTooLarge      = "payload_too_large"
	codeUnsupportedMediaType = "unsupported_media_type"
	codeInternal             = "internal"
	codeNotImplemented       = "not_implemented"
	codeRateLimited          = "rate_limited"
	codeIdempotencyKeyInUse  = "idempotency_key_in_use"
	codeIdempotencyKeyReused = "idempotency_key_reused"
	codeRequestTimeout       = "request_timeout"
	codeUnavailable          = "unavailable"
	codeQuotaExceeded        = "quota_exceeded"
)

var statusOf = map[string]int{
	codeInvalidJSON:          http.StatusBadRequest,
	codeMissingField:         http.StatusBadRequest,
	codeInvalidField:         http.StatusBadRequest,
	codeUnknownField:         http.StatusBadRequest,
	codeInvalidParameter:     http.StatusBadRequest,
	codeUnauthorized:         http.StatusUnauthorized,
	codeNotFound:             http.StatusNotFound,
	codeMethodNotAllowed:     http.StatusMethodNotAllowed,
	codeConflict:             http.StatusConflict,
	codeGone:                 http.StatusGone,
	codePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	codeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	codeInternal:             http.StatusInternalServerError,
	codeNotImplemented:       http.StatusNotImplemented,
	codeRateLimited:          http.StatusTooManyRequests,
	codeIdempotencyKeyInUse:  http.StatusConflict,
	codeIdempotencyKeyReused: http.StatusUnprocessableEntity,
	codeRequestTimeout:       http.StatusRequestTimeout,
	codeUnavailable:          http.StatusServiceUnavailable,
	codeQuotaExceeded:        http.StatusForbidden,
}

// apiError is an error meant for the client: its code and message become the
// Error body. Anything that is not an *apiError is answered as a 500 whose
// detail is logged and never sent.
type apiError struct {
	code    string
	message string
	cause   error // for the log only: what went wrong underneath, if anything
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return e.code + ": " + e.message + " (" + e.cause.Error() + ")"
	}
	return e.code + ": " + e.message
}

func (e *apiError) Unwrap() error { return e.cause }

// apiErrorf returns an *apiError whose message is formatted as fmt.Sprintf does.
func apiErrorf(code, format string, args ...any) *apiError {
	return &apiError{code: code, message: fmt.Sprintf(format, args...)}
}

// writeError answers r with the Error body for err. The error itself,
// whatever it is, goes into r's facts, for its log line.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{code: codeInternal, message: "internal error; the request id identifies it in the service log"}
	}
	factsOf(r).err = err
	status := statusOf[ae.code]
	if ae.code == codeUnavailable || ae.code == codeIdempotencyKeyInUse {
		// Both pass on their own: an etcd quorum comes back (an election
		// takes about a second), a create in flight ends (a commit takes
		// milliseconds).
		w.Header()["Retry-After"] = retryAfterOne
	}
	writeJSON(w, status, appendErrorBody(make([]byte, 0, 64+len(ae.message)), ae.code, ae.message, status))
}

// maxErrorText bounds an Error body, and the error member of an access line
// (decisions.md, "Hardening"): whatever a client sends, what it gets back and
// what the log keeps of it stay small.
const maxErrorText = 4 << 10

// appendErrorBody appends the Error body, at most maxErrorText bytes: a longer
// message is cut, on a character boundary, and ends with "…". Control and
// bidirectional characters in the message, which can only come from what a
// client sent, show as U+XXXX (see showControls).
func appendErrorBody(dst []byte, code, message string, status int) []byte {
	start := len(dst)
	dst = append(dst, `{"code":`...)
	dst = rawjson.AppendString(dst, code)
	dst = append(dst, `,"message":`...)
	var tail [24]byte
	end := strconv.AppendInt(append(tail[:0], `,"status":`...), int64(status), 10)
	end = append(end, '}')
	dst = rawjson.AppendString(dst, rawjson.CutQuoted(showControls(message), maxErrorText-(len(dst)-start)-len(end), false))
	return append(dst, end...)
}

// logErrorText bounds the text of an error for the error member of an access
// line, which both slog and accessLine write as rawjson.AppendLogString does.
func logErrorText(err error) string {
	return rawjson.CutQuoted(err.Error(), maxErrorText, true)
}

// Header values shared by every response; net/http never modifies them.
var (
	jsonContentType = []string{"application/json"}
	retryAfterOne   = []string{"1"}
)

// writeJSON writes body, which is already encoded JSON, with its headers.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	w.Write(body)
}
