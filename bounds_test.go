package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"petstore/internal/apikey"
	"petstore/internal/textcut"
)

// accessLineError returns the raw JSON text of the error member of the one
// access line of path in logs.
func accessLineError(t *testing.T, logs []byte, path string) []byte {
	t.Helper()
	var found []byte
	for line := range bytes.Lines(logs) {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(line, &members); err != nil {
			t.Fatalf("log line is not JSON: %v: %.200s", err, line)
		}
		if string(members["msg"]) != `"request"` || string(members["path"]) != strconv.Quote(path) {
			continue
		}
		if found != nil {
			t.Fatalf("two access lines for %s", path)
		}
		found = members["error"]
		if found == nil {
			t.Fatalf("access line of %s has no error member: %.300s", path, line)
		}
	}
	if found == nil {
		t.Fatalf("no access line for %s in %d bytes of log", path, len(logs))
	}
	return found
}

// Every Error body is at most 4 KiB, whoever writes it: writeError cuts a
// long message on a character boundary and ends it with "…"; the access
// line's error member is bounded too, for 4xx and 5xx answers alike.
func TestErrorAnswerBounded(t *testing.T) {
	t.Parallel()
	messages := map[string]string{
		"/v1/test-ascii":     strings.Repeat("a", 10_000),
		"/v1/test-escaped":   strings.Repeat("<\x01", 5_000), // 6 bytes each once encoded
		"/v1/test-multibyte": strings.Repeat("é日😀", 2_000),
		"/v1/test-mixed":     strings.Repeat("x\"\\日\u2028", 3_000),
	}
	var opts []testOption
	for path, msg := range messages {
		opts = append(opts, withRoute(route{method: "GET", path: path, handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, r, apiErrorf(codeInvalidParameter, "%s", msg))
		}), scope: apikey.Read}))
	}
	internal := strings.Repeat("secret internal detail ", 1_000)
	opts = append(opts, withRoute(route{method: "GET", path: "/v1/test-internal", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, errors.New(internal))
	}), scope: apikey.Read}))
	env := newTestEnv(t, opts...)

	for path, msg := range messages {
		rec := env.do(t, request{method: "GET", path: path})
		if rec.Body.Len() > maxErrorText {
			t.Errorf("%s: error body has %d bytes, want at most %d", path, rec.Body.Len(), maxErrorText)
		}
		// Cut close to the bound, not far below it.
		if rec.Body.Len() < maxErrorText-8 {
			t.Errorf("%s: error body has %d bytes, want close to %d", path, rec.Body.Len(), maxErrorText)
		}
		eb := mustError(t, rec, http.StatusBadRequest, codeInvalidParameter)
		cut, ok := strings.CutSuffix(eb.Message, "…")
		if !ok || !strings.HasPrefix(textcut.ShowControls(msg), cut) { // control characters show as U+XXXX
			t.Errorf("%s: message is not a prefix of the original ended with …: %.80q…%q", path, eb.Message, eb.Message[max(0, len(eb.Message)-20):])
		}
		if errText := accessLineError(t, env.logs.Bytes(), path); len(errText) > maxErrorText {
			t.Errorf("%s: access line error member has %d bytes, want at most %d", path, len(errText), maxErrorText)
		}
	}

	rec := env.do(t, request{method: "GET", path: "/v1/test-internal"})
	mustError(t, rec, http.StatusInternalServerError, codeInternal)
	errText := accessLineError(t, env.logs.Bytes(), "/v1/test-internal")
	if len(errText) > maxErrorText {
		t.Errorf("500 access line error member has %d bytes, want at most %d", len(errText), maxErrorText)
	}
	var text string
	if err := json.Unmarshal(errText, &text); err != nil || !strings.HasSuffix(text, "…") || !strings.HasPrefix(internal, strings.TrimSuffix(text, "…")) {
		t.Errorf("500 access line error is not a cut of the error (%v): %.80q", err, text)
	}
}

// A message that fits exactly is not cut; one byte more is.
func TestErrorBodyBoundExact(t *testing.T) {
	t.Parallel()
	overhead := len(appendErrorBody(nil, codeInvalidParameter, "", http.StatusBadRequest))
	fits := strings.Repeat("m", maxErrorText-overhead)
	if body := appendErrorBody(nil, codeInvalidParameter, fits, http.StatusBadRequest); len(body) != maxErrorText || !bytes.Contains(body, []byte(fits+`"`)) {
		t.Errorf("a message that fits: got %d bytes, want %d, uncut", len(body), maxErrorText)
	}
	body := appendErrorBody(nil, codeInvalidParameter, fits+"m", http.StatusBadRequest)
	if len(body) > maxErrorText || !bytes.Contains(body, []byte(`…"`)) {
		t.Errorf("a message one byte too long: got %d bytes, want at most %d, cut with …", len(body), maxErrorText)
	}
}
