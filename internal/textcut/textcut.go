// Package textcut prepares text that petstore quotes back in an error
// message or a log line (a setting, a path, a value found in etcd, a
// member name a client sent). Truncate keeps the message short whatever
// the text's length: it cuts between characters, never inside one, and
// marks the cut with "…". ShowControls and QuoteName show the characters a
// terminal would obey (controls, bidirectional controls) as the text
// U+XXXX instead of carrying them raw.
package textcut

import "unicode/utf8"

// Truncate returns s if it is at most n bytes long; otherwise its longest
// prefix of at most n bytes that ends on a character boundary, followed by
// "…" (so the result may be n+3 bytes long).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) { // cut between characters
		n--
	}
	return s[:n] + "…"
}
