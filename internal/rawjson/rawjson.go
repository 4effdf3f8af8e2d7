// Package rawjson is the small amount of JSON handling petstore does by
// hand: it writes strings byte for byte as encoding/json (and slog) do, so
// that cached answers need no reflection, and it walks the members of an
// object already validated as JSON (encoding/json matches member names
// case-insensitively, and the API requires exact names, duplicates caught
// and every problem named: docs/api.md, "Category rules").
package rawjson

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, byte for byte as json.Marshal
// writes it: HTML-safe, U+2028 and U+2029 escaped, invalid UTF-8 replaced.
func AppendString(dst []byte, s string) []byte { return appendQuoted(dst, s, false) }

// AppendLogString appends s as a JSON string, byte for byte as the
// service's JSON loggers write it: like json.Marshal, except that <, > and
// & are not escaped, \b and \f are written as \u0008 and \u000c (slog's
// JSONHandler), and DEL, the C1 controls and the bidirectional controls as
// \uXXXX (the service's log writer).
func AppendLogString(dst []byte, s string) []byte { return appendQuoted(dst, s, true) }

// plainBytes[style][b] tells whether the byte b is written as it is, by
// itself: style 0 as json.Marshal writes strings, 1 as the loggers do. No
// byte of a multi-byte character is: those are looked at whole.
var plainBytes = func() (t [2][256]bool) {
	for b := byte(0x20); b < utf8.RuneSelf; b++ {
		t[0][b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
		t[1][b] = b != '"' && b != '\\' && b != 0x7F
	}
	return t
}()

func appendQuoted(dst []byte, s string, slogStyle bool) []byte {
	plain := &plainBytes[0]
	if slogStyle {
		plain = &plainBytes[1]
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Most strings are plain ASCII: one table look-up per byte.
		for i < len(s) && plain[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch {
			case b == '"' || b == '\\':
				dst = append(dst, '\\', b)
			case b == '\b' && !slogStyle:
				dst = append(dst, '\\', 'b')
			case b == '\f' && !slogStyle:
				dst = append(dst, '\\', 'f')
			case b == '\n':
				dst = append(dst, '\\', 'n')
			case b == '\r':
				dst = append(dst, '\\', 'r')
			case b == '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' || slogStyle && HiddenControl(r) {
			dst = append(dst, s[start:i]...)
			dst = AppendUnicodeEscape(dst, r)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Member is one name/value pair of a JSON object; Value is the raw JSON text.
type Member struct {
	Name  string
	Value []byte
}

// ErrNotObject is what Members returns for data that is not an object.
var ErrNotObject = errors.New("not a JSON object")

// Members returns the members of the JSON object in data, in order.
// data must already be known to be one valid JSON value (json.Valid); if that
// value is not an object it returns ErrNotObject.
func Members(data []byte, buf []Member) ([]Member, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return buf, ErrNotObject
	}
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] != '}' {
		end, escaped := scanString(data, i)
		name := string(data[i+1 : end-1])
		if escaped {
			if err := json.Unmarshal(data[i:end], &name); err != nil {
				return buf, err
			}
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // ':'
		end = scanValue(data, i)
		buf = append(buf, Member{Name: name, Value: data[i:end]})
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return buf, nil
}

// ErrNotArray is what Elements returns for data that is not an array.
var ErrNotArray = errors.New("not a JSON array")

// Elements returns the elements of the JSON array in data, in order.
// data must already be known to be one valid JSON value (json.Valid); if
// that value is not an array it returns ErrNotArray.
func Elements(data []byte) ([][]byte, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, ErrNotArray
	}
	var elems [][]byte
	for i = skipSpace(data, i+1); i < len(data) && data[i] != ']'; {
		end := scanValue(data, i)
		elems = append(elems, data[i:end])
		if i = skipSpace(data, end); i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return elems, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString returns the index just past the string that opens at data[i]
// and whether it holds any escape.
func scanString(data []byte, i int) (end int, escaped bool) {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped
		}
	}
	return len(data), escaped
}

// scanValue returns the index just past the value that starts at data[i].
func scanValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		end, _ := scanString(data, i)
		return end
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i, _ = scanString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// String decodes the raw JSON value v, which must be a string.
func String(v []byte) (string, error) {
	for _, b := range v[1 : len(v)-1] {
		if b == '\\' {
			var s string
			err := json.Unmarshal(v, &s)
			return s, err
		}
	}
	return string(v[1 : len(v)-1]), nil
}

// Kind names the JSON type of the raw value v, for messages.
func Kind(v []byte) string {
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// LoneSurrogate returns the first \u escape in the raw JSON string v that is
// a UTF-16 surrogate outside a pair (a high one not followed at once by a
// \u escape of a low one, or a low one alone), and whether there is one.
// v must be a valid JSON string, quotes included.
func LoneSurrogate(v []byte) (rune, bool) {
	for i := 1; i < len(v)-1; i++ {
		if v[i] != '\\' {
			continue
		}
		i++ // the escaped character, skipped by the loop unless it is u
		if v[i] != 'u' {
			continue
		}
		r := hex4(v[i+1 : i+5])
		i += 4
		switch {
		case 0xD800 <= r && r < 0xDC00:
			if i+6 < len(v) && v[i+1] == '\\' && v[i+2] == 'u' {
				if low := hex4(v[i+3 : i+7]); 0xDC00 <= low && low < 0xE000 {
					i += 6
					continue
				}
			}
			return r, true
		case 0xDC00 <= r && r < 0xE000:
			return r, true
		}
	}
	return 0, false
}

// hex4 decodes four hexadecimal digits, already validated as such.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// DuplicateMember returns a name that members holds more than once, and
// whether there is one.
func DuplicateMember(members []Member) (string, bool) {
	// A handful of members is compared pairwise; a long list goes through a
	// map, so that a 1 MiB body of tiny members costs linear time.
	const pairwiseUpTo = 16
	if len(members) <= pairwiseUpTo {
		for i := range members {
			for _, other := range members[:i] {
				if other.Name == members[i].Name {
					return members[i].Name, true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(members))
	for _, m := range members {
		if _, ok := seen[m.Name]; ok {
			return m.Name, true
		}
		seen[m.Name] = struct{}{}
	}
	return "", false
}

// CutQuoted returns s, or if the JSON string appendQuoted(s, slogStyle)
// writes would take more than max bytes (quotes included), the longest
// prefix of s that ends on a character boundary and, followed by "…", fits.
func CutQuoted(s string, max int, slogStyle bool) string {
	const ellipsis = "…"   // written as is by both styles
	if 2+6*len(s) <= max { // no byte takes more than 6 once escaped
		return s
	}
	var one [16]byte
	size, cut := 2, 0 // the quotes
	for i := 0; i < len(s); {
		_, n := utf8.DecodeRuneInString(s[i:])
		size += len(appendQuoted(one[:0], s[i:i+n], slogStyle)) - 2
		if size > max {
			return s[:cut] + ellipsis
		}
		i += n
		if size+len(ellipsis) <= max {
			cut = i
		}
	}
	return s
}

// HiddenControl reports whether r is a control or bidirectional control
// character that JSON encoding leaves raw: DEL, the C1 controls, and the
// Bidi_Control characters (ALM, LRM, RLM, the embeddings and overrides
// U+202A–U+202E, the isolates U+2066–U+2069).
func HiddenControl(r rune) bool {
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

// AppendUnicodeEscape appends \uXXXX for r, which is at most U+FFFF.
func AppendUnicodeEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}
