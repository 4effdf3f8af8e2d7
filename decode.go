package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"unicode/utf8"
)

// maxBodyBytes bounds every request body (decisions.md: 1 MiB).
const maxBodyBytes = 1 << 20

// decodeJSONObject reads the request body, which must be a single JSON object
// sent as application/json within maxBodyBytes, and returns its members in
// order, each name once. Every failure is an *apiError: 415, 413 or 400
// invalid_json.
func decodeJSONObject(w http.ResponseWriter, r *http.Request) ([]member, error) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	if r.ContentLength > maxBodyBytes {
		return nil, errPayloadTooLarge
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, maxBodyBytes), r.ContentLength)
	if err != nil {
		if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
			return nil, errPayloadTooLarge
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errorf(codeInvalidJSON, "request body ended before its declared Content-Length")
		}
		return nil, fmt.Errorf("reading request body: %w", err)
	}
	if err := checkJSONValue(body); err != nil {
		return nil, err
	}
	members, err := objectMembers(body, make([]member, 0, 4))
	if err == errNotObject {
		return nil, errorf(codeInvalidJSON, "request body must be a JSON object, got "+jsonKind(bytes.TrimLeft(body, " \t\r\n")))
	}
	if err != nil {
		return nil, err
	}
	// Which of two values would count is anyone's guess (RFC 8259 section
	// 4), so the body is malformed, whatever else is wrong with it.
	if name, ok := duplicateMember(members); ok {
		return nil, errorf(codeInvalidJSON, "request body has member "+quoteMemberName(name)+" more than once")
	}
	return members, nil
}

var errPayloadTooLarge = errorf(codePayloadTooLarge, fmt.Sprintf("request body must be at most %d bytes", maxBodyBytes))

func checkContentType(contentType string) error {
	if contentType == "application/json" {
		return nil
	}
	if contentType == "" {
		return errorf(codeUnsupportedMediaType, "Content-Type must be application/json, and the request has none")
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType != "application/json" {
		return errorf(codeUnsupportedMediaType, "Content-Type must be application/json")
	}
	return nil
}

// readBody reads all of body; size is the declared length (at most
// maxBodyBytes), or -1 when the length is not declared.
func readBody(body io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		return io.ReadAll(body)
	}
	// net/http delivers exactly the declared length, or an error. The first
	// allocation is capped, so that a declared length costs memory only as
	// its bytes arrive.
	buf := make([]byte, min(size, firstBodyRead))
	n, err := io.ReadFull(body, buf)
	if err != nil || int64(n) == size {
		return buf[:n], err
	}
	rest, err := io.ReadAll(body)
	return append(buf, rest...), err
}

// firstBodyRead bounds the first allocation for a body of declared length.
const firstBodyRead = 64 << 10

// checkJSONValue reports, as an invalid_json *apiError, why body is not
// exactly one JSON value encoded in UTF-8.
func checkJSONValue(body []byte) error {
	if json.Valid(body) {
		if !utf8.Valid(body) {
			return errorf(codeInvalidJSON, "request body is not valid UTF-8")
		}
		return nil
	}
	if len(bytes.TrimLeft(body, " \t\r\n")) == 0 {
		return errorf(codeInvalidJSON, "request body is empty; send a JSON object")
	}
	// json.Valid does not say where or why; a decoder does.
	dec := json.NewDecoder(bytes.NewReader(body))
	var first json.RawMessage
	if err := dec.Decode(&first); err != nil {
		var syntaxErr *json.SyntaxError
		if errors.As(err, &syntaxErr) {
			return errorf(codeInvalidJSON, fmt.Sprintf("request body is not valid JSON: %s (at byte %d)", syntaxErr.Error(), syntaxErr.Offset))
		}
		return errorf(codeInvalidJSON, "request body is not valid JSON: it ends before the value is complete")
	}
	return errorf(codeInvalidJSON, fmt.Sprintf("request body has data after the JSON value (at byte %d)", dec.InputOffset()))
}
