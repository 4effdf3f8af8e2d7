package main

import (
	"io"
	"log/slog"
	"petstore/internal/rawjson"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Control and bidirectional characters from a client never reach a log line
// or an Error message raw: a terminal or log viewer would obey them (an
// escape sequence, U+202E turning the rest of the line around) instead of
// showing them. Log lines carry them as JSON \uXXXX escapes, messages as the
// text U+XXXX (docs/security.md, "Logs").

// maxLogPath bounds the path member of an access line, quotes and escapes
// included: a path of tens of kilobytes makes a line of that size otherwise.
const maxLogPath = 4 << 10

// logPath is r.URL.Path as a log line carries it: cut on a character
// boundary, with "…", once its JSON string would pass maxLogPath bytes.
func logPath(path string) string { return rawjson.CutQuoted(path, maxLogPath, true) }

// newJSONLogger returns the logger of every line but the access lines:
// slog's JSON, with rawjson.HiddenControl characters escaped.
func newJSONLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(logEscaper{w}, nil))
}

// logEscaper writes JSON lines to w with each rawjson.HiddenControl character
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
		if rawjson.HiddenControl(r) {
			out = append(out, p[start:i]...)
			out = rawjson.AppendUnicodeEscape(out, r)
			start = i + size
		}
		i += size
	}
	if _, err := e.w.Write(append(out, p[start:]...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// showControls returns s with each control character (tab and line breaks
// included) and each rawjson.HiddenControl character replaced by the text U+XXXX,
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
		if r < ' ' || rawjson.HiddenControl(r) {
			b.WriteString(codePoint(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// quoteMemberName quotes a member name taken from a request for a message:
// control characters as U+XXXX and other invisible characters Go-escaped, so
// that they show, and cut after 64 characters, so that the message stays
// short.
func quoteMemberName(name string) string {
	const maxShown = 64
	if utf8.RuneCountInString(name) > maxShown {
		name = string([]rune(name)[:maxShown]) + "…"
	}
	return strconv.Quote(showControls(name))
}
