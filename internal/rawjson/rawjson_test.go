package rawjson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// HiddenControl is DEL, the C1 controls and Unicode's Bidi_Control set.
func TestIsHiddenControl(t *testing.T) {
	t.Parallel()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := r >= 0x7F && r <= 0x9F || unicode.Is(unicode.Bidi_Control, r)
		if got := HiddenControl(r); got != want {
			t.Errorf("HiddenControl(%U): got %v, want %v", r, got, want)
		}
	}
	for _, r := range []rune{0x7F, 0x80, 0x85, 0x9B, 0x9F, 0x061C, 0x200E, 0x200F, 0x202A, 0x202E, 0x2066, 0x2069} {
		if !HiddenControl(r) {
			t.Errorf("HiddenControl(%U) is false", r)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{
		"", "plain", "Dogs & Cats <3>", `"quoted" \back\slash/`,
		"\x00\x01\x1f\x7f", "\b\f\n\r\t", "\u2028\u2029", "é ü 🐈 \U0010ffff",
		"\xff", "\xc3\x28", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xef\xbf\xbd",
		"a\xffb\u2028c<d", strings.Repeat("x", 300) + "\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("json.Marshal(%q): %v", s, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("AppendString(%s):\n got %s\nwant %s", strconv.Quote(s), got, want)
		}
		// It appends: what dst held stays in front.
		if prefixed := AppendString([]byte("prefix"), s); !bytes.Equal(prefixed, append([]byte("prefix"), want...)) {
			t.Errorf("AppendString with a prefix: got %s, want prefix%s", prefixed, want)
		}
	})
}
