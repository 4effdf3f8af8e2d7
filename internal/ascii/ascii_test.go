package ascii

import "testing"

func TestSetOf(t *testing.T) {
	t.Parallel()
	s := SetOf(Letters, Digits, "-_")
	for c := 0; c < 256; c++ {
		b := byte(c)
		want := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_'
		if got := s.Has(b); got != want {
			t.Errorf("Has(%q) = %v, want %v", b, got, want)
		}
	}
	if !s.All("") || !s.All("a-Z_9") || s.All("a b") || s.All("é") {
		t.Error(`All: wrong for "", "a-Z_9", "a b" or "é"`)
	}
}

func TestRange(t *testing.T) {
	t.Parallel()
	s := Range(' ', '~')
	for c := 0; c < 256; c++ {
		if got, want := s.Has(byte(c)), 0x20 <= c && c <= 0x7e; got != want {
			t.Errorf("Has(%#x) = %v, want %v", c, got, want)
		}
	}
	// The high bit never aliases onto ASCII.
	if all := Range(0, 0x7f); all.Has(0x80) || all.Has(0xff) || !all.Has(0) || !all.Has(0x7f) {
		t.Error("Range(0, 0x7f): wrong at 0x00, 0x7f, 0x80 or 0xff")
	}
}
