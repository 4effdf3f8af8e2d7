package main

import (
	"strings"
	"testing"

	"petstore/internal/ascii"
)

// Each set holds exactly the characters its validator allowed when it
// was written out as comparisons.
func TestASCIISets(t *testing.T) {
	t.Parallel()
	isAlpha := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	tests := []struct {
		name string
		set  ascii.Set
		want func(c byte) bool
	}{
		{"request id", requestIDChars, func(c byte) bool { return isAlpha(c) || isDigit(c) || strings.IndexByte("-._:", c) >= 0 }},
		{"token start", sfTokenStart, func(c byte) bool { return isAlpha(c) || c == '*' }},
		{"token", sfTokenChars, func(c byte) bool { return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0 }},
		{"printable", printableASCII, func(c byte) bool { return 0x20 <= c && c <= 0x7e }},
	}
	for _, tt := range tests {
		for c := 0; c < 256; c++ {
			if got, want := tt.set.Has(byte(c)), tt.want(byte(c)); got != want {
				t.Errorf("%s set has %q: got %v, want %v", tt.name, byte(c), got, want)
			}
		}
	}
	if !sfTokenChars.All("") || sfTokenChars.All("ab c") || !sfTokenChars.All("ab~c") {
		t.Errorf("all: wrong for \"\", \"ab c\" or \"ab~c\"")
	}
}
