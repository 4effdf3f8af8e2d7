// Package idemkey reads the Idempotency-Key request header
// (draft-ietf-httpapi-idempotency-key-header-07): one header field whose
// value is a structured-field string (RFC 9651 section 3.3.3) or, as
// clients generate keys and send them, a bare value of visible ASCII
// characters other than '"', ',' and ';' (a UUID, a ULID, a hex digest;
// every structured-field token is one), of 1 to MaxLen characters either
// way. Parse is a pure function of the header's values; what a key is good
// for (the safe retry of a create) is the store's business.
package idemkey

import (
	"strings"

	"petstore/internal/ascii"
)

// MaxLen bounds a key's length, in characters (printable ASCII).
const MaxLen = 255

var (
	// bareChars are the characters of a key sent bare: visible ASCII but
	// '"' (which begins a string), ',' and ';' (which would make the
	// value a list or give it parameters).
	bareChars = ascii.Range('!', '~').Without(`",;`)
	// printable is space to "~": what a structured-field string holds.
	printable = ascii.Range(' ', '~')
)

// Parse reads the values of the Idempotency-Key header: none gives "" and
// true; one value that is a structured-field string or a bare key gives its
// characters; anything else (two values, an empty key, one too long, a
// character outside visible ASCII in a bare key or outside printable ASCII
// in a string) gives false.
func Parse(values []string) (string, bool) {
	switch len(values) {
	case 0:
		return "", true
	case 1:
	default:
		return "", false // two keys: which one would be meant?
	}
	v := strings.Trim(values[0], " \t")
	key, ok := v, bareChars.All(v)
	if strings.HasPrefix(v, `"`) {
		key, ok = parseString(v)
	}
	if !ok || key == "" || len(key) > MaxLen {
		return "", false
	}
	return key, true
}

// parseString parses a structured-field string: printable ASCII between
// double quotes, with \" and \\ the only escapes, and nothing after it.
func parseString(v string) (string, bool) {
	// The usual key has no escapes: it is the text between the quotes.
	if end := strings.IndexAny(v[1:], `"\\`); end >= 0 && v[1+end] == '"' && 1+end == len(v)-1 {
		inner := v[1 : 1+end]
		if !printable.All(inner) {
			return "", false
		}
		return inner, true
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i == len(v) || v[i] != '"' && v[i] != '\\' {
				return "", false
			}
			b.WriteByte(v[i])
		case c == '"':
			return b.String(), i == len(v)-1
		case !printable.Has(c):
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false // no closing quote
}
