package textcut

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"petstore/internal/rawjson"
)

// Control and bidirectional characters from a client never reach an Error
// message raw: a terminal would obey them instead of showing them. Messages
// carry them as the text U+XXXX (docs/security.md, "Logs").

// ShowControls returns s with each control character (tab and line breaks
// included) and each rawjson.HiddenControl character replaced by the text U+XXXX,
// for a message that quotes what a client sent.
func ShowControls(s string) string {
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
			fmt.Fprintf(&b, "U+%04X", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// QuoteName quotes a member name taken from a request for a message:
// control characters as U+XXXX and other invisible characters Go-escaped, so
// that they show, and cut after 64 characters, so that the message stays
// short.
func QuoteName(name string) string {
	const maxShown = 64
	if utf8.RuneCountInString(name) > maxShown {
		name = string([]rune(name)[:maxShown]) + "…"
	}
	return strconv.Quote(ShowControls(name))
}
