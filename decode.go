package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"time"
	"unicode/utf8"

	"petstore/internal/bodybudget"
	"petstore/internal/rawjson"
	"petstore/internal/textcut"
)

// maxBodyBytes bounds every request body (docs/api.md, "Limits": 1 MiB).
const maxBodyBytes = 1 << 20

// decodeJSONObject reads the request body, which must be a single JSON object
// sent as application/json within maxBodyBytes, and returns its members in
// order, each name once. Every failure is an *apiError: 415, 413, 408
// request_timeout, 503 unavailable or 400 invalid_json. The body's bytes
// are held in bodies (nil: no bound), and counted against the share of the
// request's API key, as held records, until the caller gives them back with
// bodies.Release(held) once it no longer needs the members, which hold
// slices of them (also after an error).
func decodeJSONObject(w http.ResponseWriter, r *http.Request, bodies *bodybudget.Budget, held *bodybudget.Hold) ([]rawjson.Member, error) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	if r.ContentLength > maxBodyBytes {
		return nil, errPayloadTooLarge
	}
	rc := http.NewResponseController(w)
	abort := func() { rc.SetReadDeadline(time.Now()) } // a stalled body makes room (see bodybudget)
	body, err := bodies.Read(r.Context(), held, factsOf(r).key, http.MaxBytesReader(w, r.Body, maxBodyBytes), r.ContentLength, abort)
	if err != nil {
		return nil, bodyReadError(w, r, err, held.Aborted())
	}
	if err := checkJSONValue(body); err != nil {
		return nil, err
	}
	members, err := rawjson.Members(body, make([]rawjson.Member, 0, 4))
	if err == rawjson.ErrNotObject {
		return nil, apiErrorf(codeInvalidJSON, "request body must be a JSON object, got %s", rawjson.Kind(bytes.TrimLeft(body, " \t\r\n")))
	}
	if err != nil {
		return nil, err
	}
	// Which of two values would count is anyone's guess (RFC 8259 section
	// 4), so the body is malformed, whatever else is wrong with it.
	if name, ok := rawjson.DuplicateMember(members); ok {
		return nil, apiErrorf(codeInvalidJSON, "request body has member %s more than once", textcut.QuoteName(name))
	}
	return members, nil
}

var errPayloadTooLarge = apiErrorf(codePayloadTooLarge, "request body must be at most %d bytes", maxBodyBytes)

// bodyReadError maps a failure to read the body to the client's answer
// (docs/api.md, "Errors": body errors are the client's). Nothing on the
// server's side can fail while reading a body from its connection: it is
// malformed chunked encoding, a body cut short, a connection reset, or a body
// not received within the server's read timeout.
func bodyReadError(w http.ResponseWriter, r *http.Request, err error, aborted bool) error {
	if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
		return errPayloadTooLarge
	}
	if aborted {
		// Ended to make room for another body (see bodybudget): it had
		// waited on the client the longest, while memory was short.
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(answerWriteTime))
		return &apiError{code: codeRequestTimeout, message: "request body stopped arriving while the server was short of memory for bodies; send it again without pausing", cause: err}
	}
	if errors.Is(err, bodybudget.ErrWait) {
		// Not the client's doing: the server had no memory free for the
		// body in time (many large bodies at once).
		return &apiError{code: codeUnavailable, message: "the server is reading too many request bodies at once; retry in a moment", cause: err}
	}
	if errors.Is(err, bodybudget.ErrKeyWait) {
		// Nothing was read: the key's other bodies held its share.
		return &apiError{code: codeUnavailable, message: "this API key is sending too many request bodies at once; retry in a moment", cause: err}
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
