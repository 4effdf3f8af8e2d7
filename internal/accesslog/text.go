package accesslog

import (
	"io"
	"log/slog"
	"unicode/utf8"

	"petstore/internal/rawjson"
)

// Control and bidirectional characters from a client never reach a log line
// raw: a terminal or log viewer would obey them (an escape sequence, U+202E
// turning the rest of the line around) instead of showing them. Log lines
// carry them as JSON \uXXXX escapes (docs/security.md, "Logs").

// MaxPath bounds the path member of an access line, quotes and escapes
// included: a path of tens of kilobytes makes a line of that size otherwise.
const MaxPath = 4 << 10

// Path is r.URL.Path as a log line carries it: cut on a character
// boundary, with "…", once its JSON string would pass MaxPath bytes.
func Path(path string) string { return rawjson.CutQuoted(path, MaxPath, true) }

// NewJSONLogger returns the logger of every line but the access lines:
// slog's JSON, with rawjson.HiddenControl characters escaped.
func NewJSONLogger(w io.Writer) *slog.Logger {
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
