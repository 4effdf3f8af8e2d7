package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode"

	"petstore/internal/accesslog"
	"petstore/internal/rawjson"
)

// mustNotHoldRaw fails when text holds a control or bidirectional control
// character as itself.
func mustNotHoldRaw(t *testing.T, what string, text []byte) {
	t.Helper()
	for _, r := range string(text) {
		if r < ' ' && r != '\n' || rawjson.HiddenControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			t.Errorf("%s holds %U raw: %.300q", what, r, text)
		}
	}
}

// accessLineOf returns the members of the access line of the request whose
// request id is id.
func accessLineOf(t *testing.T, logs *lockedBuffer, id string) (map[string]any, string) {
	t.Helper()
	for _, line := range logs.Lines() {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) == nil && l["msg"] == "request" && l["request_id"] == id {
			return l, line
		}
	}
	t.Fatalf("no access line with request id %s in:\n%.2000s", id, logs.String())
	return nil, ""
}

// A 60 KB path without a key makes an access line whose path is at most
// 4096 bytes (its JSON string, quotes and ellipsis included), cut on a
// character boundary.
func TestAccessLinePathBounded(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for i, tail := range []string{strings.Repeat("a", 60_000), strings.Repeat("日", 20_000), strings.Repeat("%E2%80%AE", 20_000)} {
		id := "long-path-" + string(rune('a'+i))
		rec := env.do(t, request{method: "GET", path: "/v1/categories/" + tail, header: map[string]string{"X-Request-Id": id}})
		mustError(t, rec, http.StatusUnauthorized, codeUnauthorized)
		l, line := accessLineOf(t, env.logs, id)
		path, _ := l["path"].(string)
		var raw map[string]json.RawMessage
		json.Unmarshal([]byte(line), &raw)
		encoded := raw["path"] // as the line writes it
		if len(encoded) > accesslog.MaxPath || len(line) > 2*accesslog.MaxPath {
			t.Errorf("path member is %d bytes encoded (line %d bytes), want at most %d", len(encoded), len(line), accesslog.MaxPath)
		}
		if len(encoded) < accesslog.MaxPath-16 || !strings.HasSuffix(path, "…") || !strings.HasPrefix("/v1/categories/"+tail, strings.TrimSuffix(path, "…")) &&
			!strings.HasPrefix("/v1/categories/"+strings.Repeat("\u202e", 20_000), strings.TrimSuffix(path, "…")) {
			t.Errorf("path member is not a cut of the path close to the bound ended with …: %d bytes, %.40q…", len(encoded), path)
		}
		mustNotHoldRaw(t, "access line", []byte(line))
	}
}

// Control and bidirectional characters of a path are \uXXXX escapes in the
// access line and U+XXXX in the 404 message.
func TestPathControlsEscaped(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	tests := []struct{ path, want string }{
		{"/x%E2%80%AEy", "U+202E"},
		{"/x%E2%81%A6y", "U+2066"},
		{"/x%E2%80%8Fy", "U+200F"},
		{"/x%01y", "U+0001"},
		{"/x%1By", "U+001B"},
		{"/x%7Fy", "U+007F"},
		{"/x%C2%85y", "U+0085"},
		{"/x%C2%9By", "U+009B"},
	}
	for i, tt := range tests {
		id := "escape-" + string(rune('a'+i))
		rec := env.do(t, request{method: "GET", path: tt.path, header: map[string]string{"X-Request-Id": id}})
		eb := mustError(t, rec, http.StatusNotFound, codeNotFound)
		mustMention(t, eb.Message, "/x"+tt.want+"y")
		mustNotHoldRaw(t, "404 body", rec.Body.Bytes())
		_, line := accessLineOf(t, env.logs, id)
		mustNotHoldRaw(t, "access line", []byte(line))
		if esc := `\u` + strings.ToLower(strings.TrimPrefix(tt.want, "U+")); !strings.Contains(line, esc) {
			t.Errorf("access line of %s lacks %s: %s", tt.path, esc, line)
		}
	}
}

// Messages that quote a client's text show its control characters as
// U+XXXX: an unknown member's name, a bad id.
func TestMessagesShowControls(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	rec := postCategory(t, env, `{"name":"a","x\u202ey\u0085":1}`)
	eb := mustError(t, rec, http.StatusBadRequest, codeUnknownField)
	mustMention(t, eb.Message, `"xU+202EyU+0085"`)
	mustNotHoldRaw(t, "400 body", rec.Body.Bytes())

	rec = env.do(t, request{method: "GET", path: "/v1/categories/1%E2%80%AE"})
	eb = mustError(t, rec, http.StatusBadRequest, codeInvalidParameter)
	mustMention(t, eb.Message, `"1U+202E"`)
	mustNotHoldRaw(t, "400 body", rec.Body.Bytes())
	mustNotHoldRaw(t, "log", env.logs.Bytes())
}

// Lines that go through slog (errors, warnings, 5xx access lines) escape
// them too, and still decode to the text logged.
func TestSlogLinesEscapeControls(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	text := "a\u202eb\u0085c\x7fd\u2069e\u061c日\x01"
	accesslog.NewJSONLogger(&buf).Error("oops", "value", text, "k\u202e", 1)
	mustNotHoldRaw(t, "slog line", bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	var l map[string]any
	if err := json.Unmarshal(buf.Bytes(), &l); err != nil || l["value"] != text || l["k\u202e"] != 1.0 {
		t.Errorf("line does not decode to what was logged (%v): %s", err, &buf)
	}
	for _, esc := range []string{`\u202e`, `\u0085`, `\u007f`, `\u2069`, `\u061c`, "日"} {
		if !strings.Contains(buf.String(), esc) {
			t.Errorf("line lacks %s: %s", esc, &buf)
		}
	}
}
