package main

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"petstore/internal/catalog"
	"petstore/internal/rawjson"
)

// Control and bidirectional characters from a client never reach an Error
// message raw: a terminal would obey them instead of showing them. Messages
// carry them as the text U+XXXX (docs/security.md, "Logs").

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
			b.WriteString(catalog.CodePoint(r))
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
