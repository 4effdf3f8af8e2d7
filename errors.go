package main

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"petstore/internal/catalog"
	"petstore/internal/rawjson"
	"petstore/internal/textcut"
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
	codeInsufficientScope    = "insufficient_scope"
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
	codeOutcomeUnknown       = "outcome_unknown"
	codeQuotaExceeded        = "quota_exceeded"
	codeOriginNotAllowed     = "origin_not_allowed"
)

var statusOf = map[string]int{
	codeInvalidJSON:          http.StatusBadRequest,
	codeMissingField:         http.StatusBadRequest,
	codeInvalidField:         http.StatusBadRequest,
	codeUnknownField:         http.StatusBadRequest,
	codeInvalidParameter:     http.StatusBadRequest,
	codeUnauthorized:         http.StatusUnauthorized,
	codeInsufficientScope:    http.StatusForbidden,
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
	codeOutcomeUnknown:       http.StatusServiceUnavailable,
	codeQuotaExceeded:        http.StatusForbidden,
	codeOriginNotAllowed:     http.StatusForbidden,
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

// domainErrors is the one table that turns the errors of the domain, which
// stores return (internal/catalog), into what a client is told: the most
// specific row first, since ErrStopping and ErrOutcomeUnknown are
// ErrUnavailable too. An error no row matches is a 500 whose detail is
// logged, never sent (catalog.ErrIDsExhausted among them).
var domainErrors = []struct {
	target  error
	code    string
	message func(err error) string
}{
	{catalog.ErrNotFound, codeNotFound, func(err error) string {
		var nf *catalog.NotFoundError
		errors.As(err, &nf)
		return fmt.Sprintf("no category with id %d", nf.ID)
	}},
	{catalog.ErrNameTaken, codeConflict, func(err error) string {
		var nt *catalog.NameTakenError
		errors.As(err, &nt)
		switch {
		case nt.ID == 0: // a claim another writer garbled
			return fmt.Sprintf("a category named %q already exists (names are compared ignoring case, width and the kind of space)", nt.Name)
		case nt.Stored == "": // the holder is not in this instance's cache yet
			return fmt.Sprintf("the name %q is taken by category %d (names are compared ignoring case, width and the kind of space)", nt.Name, nt.ID)
		}
		if nt.Stored != nt.Name {
			return fmt.Sprintf("a category named %q (id %d) already exists, and %q is the same name: names are compared ignoring case, width and the kind of space", nt.Stored, nt.ID, nt.Name)
		}
		return fmt.Sprintf("a category named %q (id %d) already exists", nt.Stored, nt.ID)
	}},
	{catalog.ErrQuotaExceeded, codeQuotaExceeded, constMessage("the catalogue is full: it holds the most categories this service keeps (PETSTORE_MAX_CATEGORIES); nothing was created")},
	{catalog.ErrKeyInUse, codeIdempotencyKeyInUse, constMessage("a create with this Idempotency-Key is still in progress; retry after Retry-After")},
	{catalog.ErrKeyReused, codeIdempotencyKeyReused, constMessage("this Idempotency-Key was used before with a different request; use a new key for a new request")},
	// The service stops: the client's retry belongs to another instance,
	// or to this one once it is back.
	{catalog.ErrStopping, codeUnavailable, constMessage("the service is stopping; retry in a moment")},
	// Never a definite answer for a create that may have been stored
	// (docs/api.md, "Telling the truth under faults").
	{catalog.ErrOutcomeUnknown, codeOutcomeUnknown, constMessage("petstore could not learn whether the category was stored: it may or may not exist. Retry with the same Idempotency-Key (a stored create is answered again, one that was not is made), or look it up with GET /v1/categories?name=, before creating it again")},
	{catalog.ErrUnavailable, codeUnavailable, constMessage("the store cannot take creates now (an etcd cluster without quorum, or a journal whose disk failed); nothing was stored; lists and known categories are still served; retry later")},
}

func constMessage(m string) func(error) string { return func(error) string { return m } }

// errInternal answers every error that is neither an *apiError nor one of
// domainErrors.
var errInternal = &apiError{code: codeInternal, message: "internal error; the request id identifies it in the service log"}

// clientError returns what the client is told of err.
func clientError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	for _, d := range domainErrors {
		if errors.Is(err, d.target) {
			return &apiError{code: d.code, message: d.message(err)}
		}
	}
	return errInternal
}

// writeError answers r with the Error body for err. The error itself,
// whatever it is, goes into r's facts, for its log line.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := clientError(err)
	factsOf(r).err = err
	status := statusOf[ae.code]
	if ae.code == codeUnavailable || ae.code == codeOutcomeUnknown || ae.code == codeIdempotencyKeyInUse {
		// Each passes on its own: an etcd quorum comes back (an election
		// takes about a second), an outcome is settled, a create in
		// flight ends (a commit takes milliseconds).
		w.Header()["Retry-After"] = retryAfterOne
	}
	writeJSON(w, status, appendErrorBody(make([]byte, 0, 64+len(ae.message)), ae.code, ae.message, status))
}

// maxErrorText bounds an Error body, and the error member of an access line
// (docs/security.md, "Requests"): whatever a client sends, what it gets back and
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
	dst = rawjson.AppendString(dst, rawjson.CutQuoted(textcut.ShowControls(message), maxErrorText-(len(dst)-start)-len(end), false))
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
