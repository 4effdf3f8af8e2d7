package main

import (
	"net/http"
	"strings"
)

// Safe retries (docs/api.md, "Safe retries"; draft-ietf-httpapi-
// idempotency-key-header-07): a create sent with an Idempotency-Key that
// answered 201 is answered again, the same, when retried with the same key
// and request; the key is stored with the category, in the same durable
// write, and expires PETSTORE_IDEMPOTENCY_TTL after the create.

// maxIdempotencyKey bounds a key's length, in characters (printable ASCII).
const maxIdempotencyKey = 255

var errBadIdempotencyKey = apiErrorf(codeInvalidParameter,
	`Idempotency-Key must be 1 to %d printable ASCII characters, sent once, as a structured-field string ("…") or a token`, maxIdempotencyKey)

// parseIdempotencyKey reads the Idempotency-Key header: absent gives "",
// a structured-field string (RFC 9651 section 3.3.3) or a bare token
// (section 3.3.4) gives its characters, anything else an error.
func parseIdempotencyKey(h http.Header) (string, error) {
	values := h["Idempotency-Key"]
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", errBadIdempotencyKey // two keys: which one would be meant?
	}
	v := strings.Trim(values[0], " \t")
	var key string
	if strings.HasPrefix(v, `"`) {
		var ok bool
		if key, ok = parseSFString(v); !ok {
			return "", errBadIdempotencyKey
		}
	} else {
		if !isSFToken(v) {
			return "", errBadIdempotencyKey
		}
		key = v
	}
	if key == "" || len(key) > maxIdempotencyKey {
		return "", errBadIdempotencyKey
	}
	return key, nil
}

// parseSFString parses a structured-field string: printable ASCII between
// double quotes, with \" and \\ the only escapes, and nothing after it.
func parseSFString(v string) (string, bool) {
	// The usual key has no escapes: it is the text between the quotes.
	if end := strings.IndexAny(v[1:], `"\\`); end >= 0 && v[1+end] == '"' && 1+end == len(v)-1 {
		inner := v[1 : 1+end]
		if !printableASCII.All(inner) {
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
		case !printableASCII.Has(c):
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false // no closing quote
}

// isSFToken reports whether v is a structured-field token: a letter or "*",
// then tchar, ":" or "/".
func isSFToken(v string) bool {
	return v != "" && sfTokenStart.Has(v[0]) && sfTokenChars.All(v[1:])
}
