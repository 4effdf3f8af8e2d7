// Package ascii holds sets of ASCII characters, one bit each, so that a
// validator of a header or a setting is a table lookup per byte. A byte
// past ASCII is in no set.
package ascii

// Character classes sets are made of.
const (
	Letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	Digits  = "0123456789"
)

// Set is a set of ASCII characters.
type Set [2]uint64

// SetOf returns the set of the characters of chars, which are ASCII.
func SetOf(chars ...string) Set {
	var s Set
	for _, cs := range chars {
		for i := 0; i < len(cs); i++ {
			s.add(cs[i])
		}
	}
	return s
}

// Range returns the set of the characters from lo to hi.
func Range(lo, hi byte) Set {
	var s Set
	for c := int(lo); c <= int(hi); c++ {
		s.add(byte(c))
	}
	return s
}

func (s *Set) add(c byte) { s[c>>6&1] |= 1 << (c & 63) }

// Without returns the set less the characters of chars.
func (s Set) Without(chars string) Set {
	for i := 0; i < len(chars); i++ {
		c := chars[i]
		s[c>>6&1] &^= 1 << (c & 63)
	}
	return s
}

// Has reports whether c is in the set.
func (s *Set) Has(c byte) bool { return c < 0x80 && s[c>>6&1]&(1<<(c&63)) != 0 }

// All reports whether every byte of str is in the set; true for "".
func (s *Set) All(str string) bool {
	for i := 0; i < len(str); i++ {
		if !s.Has(str[i]) {
			return false
		}
	}
	return true
}
