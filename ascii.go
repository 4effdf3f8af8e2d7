package main

// asciiSet is a set of ASCII characters, one bit each, so that a validator
// of a header or setting is a table lookup per byte. A byte past ASCII is in
// no set.
type asciiSet [2]uint64

// Character classes the sets below are made of.
const (
	asciiLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	asciiDigits  = "0123456789"
)

// The sets of the validators; read only.
var (
	// bearerChars may form an API key: RFC 6750 b64token, less its
	// trailing "=" (see isBearerToken).
	bearerChars = asciiSetOf(asciiLetters, asciiDigits, "-._~+/")
	// requestIDChars may form an X-Request-Id petstore echoes and logs.
	requestIDChars = asciiSetOf(asciiLetters, asciiDigits, "-._:")
	// originHostChars may form a label of a host name in an origin of
	// PETSTORE_CORS_ORIGINS.
	originHostChars = asciiSetOf(asciiLetters, asciiDigits, "-_")
	// etcdPrefixChars may form a segment of an etcd prefix.
	etcdPrefixChars = asciiSetOf(asciiLetters, asciiDigits, "._-")
	// sfTokenStart and sfTokenChars make a structured-field token
	// (RFC 9651 section 3.3.4): a letter or "*", then tchar, ":" or "/".
	sfTokenStart = asciiSetOf(asciiLetters, "*")
	sfTokenChars = asciiSetOf(asciiLetters, asciiDigits, "!#$%&'*+-.^_`|~:/")
	// printableASCII is space to "~": what a structured-field string holds.
	printableASCII = asciiRange(' ', '~')
)

// asciiSetOf returns the set of the characters of chars, which are ASCII.
func asciiSetOf(chars ...string) asciiSet {
	var s asciiSet
	for _, cs := range chars {
		for i := 0; i < len(cs); i++ {
			s.add(cs[i])
		}
	}
	return s
}

// asciiRange returns the set of the characters from lo to hi.
func asciiRange(lo, hi byte) asciiSet {
	var s asciiSet
	for c := int(lo); c <= int(hi); c++ {
		s.add(byte(c))
	}
	return s
}

func (s *asciiSet) add(c byte) { s[c>>6&1] |= 1 << (c & 63) }

// has reports whether c is in the set.
func (s *asciiSet) has(c byte) bool { return c < 0x80 && s[c>>6&1]&(1<<(c&63)) != 0 }

// all reports whether every byte of str is in the set; true for "".
func (s *asciiSet) all(str string) bool {
	for i := 0; i < len(str); i++ {
		if !s.has(str[i]) {
			return false
		}
	}
	return true
}
