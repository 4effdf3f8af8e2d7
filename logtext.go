package main

import (
	"io"
	"log/slog"
	"strings"
	"unicode/utf8"
)

// Control and bidirectional characters from a client never reach a log line
// or an Error message raw: a terminal or log viewer would obey them (an
// escape sequence, U+202E turning the rest of the line around) instead of
// showing them. Log lines carry them as JSON \uXXXX escapes, messages as the
// text U+XXXX (docs/security.md, "Hardening II").

// maxLogPath bounds the path member of an access line, quotes and escapes
// included: a path of tens of kilobytes makes a line of that size otherwise.
const maxLogPath = 4 << 10

// logPath is r.URL.Path as a log line carries it: cut on a character
// boundary, with "…", once its JSON string would pass maxLogPath bytes.
func logPath(path string) string { return cutQuoted(path, maxLogPath, true) }

// isHiddenControl reports whether r is a control or bidirectional control
// character that JSON encoding leaves raw: DEL, the C1 controls, and the
// Bidi_Control characters (ALM, LRM, RLM, the embeddings and overrides
// U+202A–U+202E, the isolates U+2066–U+2069).
func isHiddenControl(r rune) bool {
	switch {
	case r < 0x7F:
		return false
	case r <= 0x9F:
		return true
	case r < 0x061C:
		return false
	}
	return r == 0x061C || r == 0x200E || r == 0x200F || 0x202A <= r && r <= 0x202E || 0x2066 <= r && r <= 0x2069
}

// newJSONLogger returns the logger of every line but the access lines:
// slog's JSON, with isHiddenControl characters escaped.
func newJSONLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(logEscaper{w}, nil))
}

// logEscaper writes JSON lines to w with each isHiddenControl character
// replaced by its \uXXXX escape. In JSON text they can only stand inside
// strings, where the escape means the same character.
type logEscaper struct{ w io.Writer }

func (e logEscaper) Write(p []byte) (int, error) {
	i := 0
	for i < len(p) && p[i] < 0x7F {
		i++
	}
	if i == len(p) { // the usual line: ASCII only
		return e.w.Write(p)
	}
	out := make([]byte, 0, len(p)+32)
	start := 0
	for i < len(p) {
		if p[i] < 0x7F {
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if isHiddenControl(r) {
			out = append(out, p[start:i]...)
			out = appendUnicodeEscape(out, r)
			start = i + size
		}
		i += size
	}
	if _, err := e.w.Write(append(out, p[start:]...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// appendUnicodeEscape appends \uXXXX for r, which is at most U+FFFF.
func appendUnicodeEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}

// showControls returns s with each control character (tab and line breaks
// included) and each isHiddenControl character replaced by the text U+XXXX,
// for a message that quotes what a client sent.
func showControls(s string) string {
	i := 0
	for i < len(s) && s[i] >= ' ' && s[i] < 0x7F {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if r < ' ' || isHiddenControl(r) {
			b.WriteString(codePoint(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
