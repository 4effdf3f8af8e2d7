package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// maxBodyBytes bounds every request body (decisions.md: 1 MiB).
const maxBodyBytes = 1 << 20

// decodeJSONObject reads the request body, which must be a single JSON object
// sent as application/json within maxBodyBytes, and returns its members in
// order, each name once. Every failure is an *apiError: 415, 413, 408
// request_timeout or 400 invalid_json. The body's bytes count against bodies
// (nil: no bound) until the caller gives back the blocks it returns, held,
// with bodies.release, once it no longer needs the members, which hold
// slices of them (also after an error).
func decodeJSONObject(w http.ResponseWriter, r *http.Request, bodies *bodyBudget) (members []member, held int64, err error) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, 0, err
	}
	if r.ContentLength > maxBodyBytes {
		return nil, 0, errPayloadTooLarge
	}
	body, held, err := readBody(r.Context(), bodies, http.MaxBytesReader(w, r.Body, maxBodyBytes), r.ContentLength)
	if err != nil {
		return nil, held, bodyReadError(w, r, err)
	}
	if err := checkJSONValue(body); err != nil {
		return nil, held, err
	}
	members, err = objectMembers(body, make([]member, 0, 4))
	if err == errNotObject {
		return nil, held, apiErrorf(codeInvalidJSON, "request body must be a JSON object, got %s", jsonKind(bytes.TrimLeft(body, " \t\r\n")))
	}
	if err != nil {
		return nil, held, err
	}
	// Which of two values would count is anyone's guess (RFC 8259 section
	// 4), so the body is malformed, whatever else is wrong with it.
	if name, ok := duplicateMember(members); ok {
		return nil, held, apiErrorf(codeInvalidJSON, "request body has member %s more than once", quoteMemberName(name))
	}
	return members, held, nil
}

var errPayloadTooLarge = apiErrorf(codePayloadTooLarge, "request body must be at most %d bytes", maxBodyBytes)

// bodyReadError maps a failure to read the body to the client's answer
// (decisions.md, "Hardening": body errors are the client's). Nothing on the
// server's side can fail while reading a body from its connection: it is
// malformed chunked encoding, a body cut short, a connection reset, or a body
// not received within the server's read timeout.
func bodyReadError(w http.ResponseWriter, r *http.Request, err error) error {
	if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
		return errPayloadTooLarge
	}
	if errors.Is(err, errBodyWait) {
		// Not the client's doing: the server had no memory free for the
		// body in time (many large bodies at once). Nothing was read.
		return &apiError{code: codeUnavailable, message: "the server is reading too many request bodies at once; retry in a moment", cause: err}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The write deadline runs out with the read deadline (both count
		// from the request's start); give the answer a moment of its own.
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(answerWriteTime))
		return &apiError{code: codeRequestTimeout, message: "request body was not received within the server's read timeout; send it again, faster", cause: err}
	}
	chunked := len(r.TransferEncoding) > 0
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) && chunked:
		return &apiError{code: codeInvalidJSON, message: "request body ended before its last chunk", cause: err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &apiError{code: codeInvalidJSON, message: "request body ended before its declared Content-Length", cause: err}
	case chunked:
		return &apiError{code: codeInvalidJSON, message: "request body could not be read: its chunked encoding is malformed", cause: err}
	}
	return &apiError{code: codeInvalidJSON, message: "request body could not be read", cause: err}
}

// answerWriteTime is how long the answer to a body that timed out may take.
const answerWriteTime = 5 * time.Second

func checkContentType(contentType string) error {
	if contentType == "application/json" {
		return nil
	}
	if contentType == "" {
		return apiErrorf(codeUnsupportedMediaType, "Content-Type must be application/json, and the request has none")
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType != "application/json" {
		return apiErrorf(codeUnsupportedMediaType, "Content-Type must be application/json")
	}
	return nil
}

// readBody reads all of body; size is the declared length (at most
// maxBodyBytes), or -1 when the length is not declared. It first takes from
// bodies the blocks the largest body it may get needs (the declared length,
// or maxBodyBytes), waiting when they are spent; the buffer then grows by
// doubling as bytes arrive, so that a declared length costs memory only as
// its bytes come. It returns how many blocks it holds, also on error.
func readBody(ctx context.Context, bodies *bodyBudget, body io.Reader, size int64) ([]byte, int64, error) {
	limit := size
	if size < 0 {
		limit = maxBodyBytes + 1 // room to see that a chunked body is too large
	}
	var held int64
	if bodies != nil && limit > 0 {
		n := (limit + bodyBlock - 1) / bodyBlock
		if err := bodies.acquire(ctx, n); err != nil {
			return nil, 0, err
		}
		held = n
	}
	var buf []byte
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			buf = append(make([]byte, 0, min(max(2*int64(cap(buf)), bodyBlock), limit)), buf...)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if size >= 0 && int64(len(buf)) < size {
				return nil, held, io.ErrUnexpectedEOF
			}
			return buf, held, nil
		}
		if err != nil {
			return nil, held, err
		}
	}
	return buf, held, nil
}

// bodyBlock is the unit in which bodies take memory from a bodyBudget.
const bodyBlock = 64 << 10

// bodyBudget bounds the memory that request bodies hold at once, across all
// requests: a thousand clients each sending 1 MiB would otherwise hold a
// gigabyte (issue 8). A body takes all its blocks at once, before reading,
// so that no two hold a part each and wait for each other. Taking them is
// one compare-and-swap while the budget has room and nobody waits; a reader
// that finds it spent waits, at most maxWait, in turn with other waiters,
// for others to finish. It is safe for concurrent use.
type bodyBudget struct {
	free    atomic.Int64  // blocks not held
	turn    chan struct{} // one token: the waiter next in line
	room    chan struct{} // a release wakes the waiter in line
	maxWait time.Duration
	waiting atomic.Int64 // readers waiting for blocks
}

// newBodyBudget makes a budget of size bytes, rounded down to whole blocks;
// it must hold at least one largest body, maxBodyBytes, for every body to fit.
func newBodyBudget(size int64, maxWait time.Duration) *bodyBudget {
	b := &bodyBudget{turn: make(chan struct{}, 1), room: make(chan struct{}, 1), maxWait: maxWait}
	b.free.Store(max(1, size/bodyBlock))
	return b
}

// errBodyWait says a body waited for memory longer than its budget's maxWait.
var errBodyWait = errors.New("request body waited too long for memory")

// take takes n blocks if they are free.
func (b *bodyBudget) take(n int64) bool {
	for {
		free := b.free.Load()
		if free < n {
			return false
		}
		if b.free.CompareAndSwap(free, free-n) {
			return true
		}
	}
}

// acquire takes n blocks, waiting while the budget is spent, until ctx ends
// or maxWait has passed. Readers that wait are served in turn: a large body
// is not passed over again and again by small ones.
func (b *bodyBudget) acquire(ctx context.Context, n int64) error {
	if b.waiting.Load() == 0 && b.take(n) {
		return nil
	}
	b.waiting.Add(1) // before trying again: a release now wakes us
	defer b.waiting.Add(-1)
	timer := time.NewTimer(b.maxWait)
	defer timer.Stop()
	select {
	case b.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return errBodyWait
	}
	defer func() { <-b.turn }()
	for !b.take(n) {
		select {
		case <-b.room:
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return errBodyWait
		}
	}
	return nil
}

// release gives back n blocks.
func (b *bodyBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.free.Add(n)
	if b.waiting.Load() > 0 {
		select {
		case b.room <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// checkJSONValue reports, as an invalid_json *apiError, why body is not
// exactly one JSON value encoded in UTF-8.
func checkJSONValue(body []byte) error {
	if json.Valid(body) {
		if !utf8.Valid(body) {
			return apiErrorf(codeInvalidJSON, "request body is not valid UTF-8")
		}
		return nil
	}
	if len(bytes.TrimLeft(body, " \t\r\n")) == 0 {
		return apiErrorf(codeInvalidJSON, "request body is empty; send a JSON object")
	}
	// json.Valid does not say where or why; a decoder does.
	dec := json.NewDecoder(bytes.NewReader(body))
	var first json.RawMessage
	if err := dec.Decode(&first); err != nil {
		var syntaxErr *json.SyntaxError
		if errors.As(err, &syntaxErr) {
			return apiErrorf(codeInvalidJSON, "request body is not valid JSON: %s (at byte %d)", syntaxErr.Error(), syntaxErr.Offset)
		}
		return apiErrorf(codeInvalidJSON, "request body is not valid JSON: it ends before the value is complete")
	}
	return apiErrorf(codeInvalidJSON, "request body has data after the JSON value (at byte %d)", dec.InputOffset())
}
