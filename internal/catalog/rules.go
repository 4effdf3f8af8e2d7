package catalog

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"petstore/internal/ascii"
)

// The name and description rules of a create request (docs/api.md,
// "Category rules"). Each check returns the message the client is given, or
// "" when the text is fine. They are for requests only: replay keeps every
// name and description an earlier version stored (see ParseRecord).

// printable is space to "~": a name of these alone is checked by a scan.
var printable = ascii.Range(' ', '~')

// Blank look-alikes: letters and symbols that print as nothing, which do not
// make a name visible (docs/api.md, "Category rules").
var blankLookAlikes = [...]rune{0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800}

// CheckName returns what is wrong with a trimmed name, or "". A name must be
// visible and stable: at most MaxNameLen characters, its characters assigned
// in the build's Unicode tables (so a newer Go cannot fold it differently
// than the one that stored it), with no control, bidirectional control,
// line separator, format (Cf) or private-use (Co) characters and no U+2800;
// no invisible (default-ignorable) ones outside the places where they shape
// what is shown (see ignorableAllowed), and at least one character that is
// not a blank look-alike.
func CheckName(name string) string {
	if printable.All(name) && len(name) <= MaxNameLen {
		// Every printable ASCII character but the space is visible, and a
		// trimmed name does not start with a space.
		if name == "" {
			return "name must not be empty or only white space"
		}
		return ""
	}
	n := utf8.RuneCountInString(name)
	switch {
	case n == 0:
		return "name must not be empty or only white space"
	case n > MaxNameLen:
		return fmt.Sprintf("name must be at most %d characters after trimming white space, got %d", MaxNameLen, n)
	}
	visible := false
	prev := rune(-1) // the character before r, -1 at the start
	base := rune(-1) // the visible character that prev is, or whose marks and selectors prev ends; -1 when none
	for i, r := range name {
		if msg := checkNameRune(name, i, r, prev, base); msg != "" {
			return msg
		}
		v := isVisible(r)
		switch {
		case v:
			base = r // an emoji's skin tone (Sk) is a symbol of its own
		case !unicode.Is(unicode.M, r) && !isEmojiSelector(r):
			base = -1
		}
		visible = visible || v
		prev = r
	}
	if !visible {
		return "name must contain at least one visible character (a letter, digit, punctuation or symbol), got only " + codePoints(name)
	}
	return ""
}

// checkNameRune returns what is wrong with r, the character of name at byte
// i, after prev, whose visible base is base (-1: none), or "".
func checkNameRune(name string, i int, r, prev, base rune) string {
	switch {
	case unicode.IsControl(r):
		return "name must not contain control characters, found " + CodePoint(r)
	case isBidiControl(r):
		// They reorder what is displayed around them: two names
		// that look alike could differ, or a name could spoof text.
		return "name must not contain bidirectional control characters, found " + CodePoint(r)
	case r == '\u2028' || r == '\u2029':
		return "name must not contain line or paragraph separators, found " + CodePoint(r)
	case unicode.Is(unicode.Co, r):
		// Private use: shown as whatever a font makes of it, or nothing.
		return "name must not contain private-use characters, found " + CodePoint(r)
	case r == '\u2800':
		return "name must not contain U+2800 (a braille pattern that prints as a blank), found " + CodePoint(r)
	}
	if msg := checkCodePoint("name", r); msg != "" {
		return msg
	}
	if (isDefaultIgnorable(r) || unicode.Is(unicode.Cf, r)) && !ignorableAllowed(name, i, r, prev, base) {
		// Invisible: "dog" with one inside would look like "dog" and
		// pass as another name.
		return "name must not contain invisible or format characters, found " + CodePoint(r) +
			"; ZWJ and ZWNJ only inside a word of a script other than Latin, Greek and Cyrillic" +
			" (and ZWJ between two pictographs), U+FE0E and U+FE0F only right after a symbol"
	}
	return ""
}

// ignorableAllowed reports whether the invisible r at byte i of name is one
// of those that change how visible neighbours are shown: ZWJ and ZWNJ
// between two letters of a script that joins or forms conjuncts (Arabic,
// Persian, the Indic scripts: any but Latin, Greek and Cyrillic, where they
// change nothing), the first with its combining marks; ZWJ between two
// pictographs (emoji sequences), the first with its skin tone and
// presentation selector; U+FE0E and U+FE0F right after a symbol (text or emoji
// presentation).
func ignorableAllowed(name string, i int, r, prev, base rune) bool {
	switch r {
	case '\u200C', '\u200D':
		next, size := utf8.DecodeRuneInString(name[i+utf8.RuneLen(r):])
		if size == 0 || base < 0 {
			return false
		}
		return joiningLetter(base) && joiningLetter(next) ||
			r == '\u200D' && emojiPart(base) && unicode.Is(unicode.So, next) && isVisible(next)
	case '\uFE0E', '\uFE0F':
		return prev >= 0 && unicode.IsSymbol(prev) && isVisible(prev)
	}
	return false
}

// emojiPart reports whether r may end the emoji before a ZWJ: a pictograph
// (So) or a skin tone modifier. ASCII symbols (+ $ ^ |, Sm, Sc, Sk) are not
// joined by anything shown, so a ZWJ between them would make a look-alike.
func emojiPart(r rune) bool { return unicode.Is(unicode.So, r) || 0x1F3FB <= r && r <= 0x1F3FF }

// joiningLetter reports whether r is a letter that ZWJ and ZWNJ may stand
// beside: one of a script other than Latin, Greek and Cyrillic.
func joiningLetter(r rune) bool {
	return unicode.IsLetter(r) && isVisible(r) && !unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic)
}

// isVisible reports whether r is a visible character: a letter, digit,
// punctuation or symbol that does not print as nothing.
func isVisible(r rune) bool {
	if r < utf8.RuneSelf {
		return '!' <= r && r <= '~'
	}
	return unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) && !isBlankLookAlike(r) && !isDefaultIgnorable(r)
}

func isEmojiSelector(r rune) bool { return r == '\uFE0E' || r == '\uFE0F' }

// defaultIgnorables are the default-ignorable code points that names refuse
// (docs/api.md, "Category rules"): characters that display as nothing.
var defaultIgnorables = [...][2]rune{
	{0x00AD, 0x00AD}, {0x034F, 0x034F}, {0x061C, 0x061C}, {0x115F, 0x1160}, {0x17B4, 0x17B5},
	{0x180B, 0x180F}, {0x200B, 0x200F}, {0x2060, 0x206F}, {0x3164, 0x3164}, {0xFE00, 0xFE0F},
	{0xFEFF, 0xFEFF}, {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
	{0xE0000, 0xE0FFF},
}

func isDefaultIgnorable(r rune) bool {
	if r < 0x00AD {
		return false
	}
	for _, rg := range defaultIgnorables {
		if r <= rg[1] {
			return r >= rg[0]
		}
	}
	return false
}

// codePoints names the characters of s as U+XXXX, the first few of them:
// a name made of invisible characters is shown by what it holds.
func codePoints(s string) string {
	const maxShown = 8
	var b strings.Builder
	i := 0
	for _, r := range s {
		if i == maxShown {
			b.WriteString(" …")
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(CodePoint(r))
		i++
	}
	return b.String()
}

// CheckDescription returns what is wrong with a description, or "": at most
// MaxDescriptionLen characters, no control characters but tab, line feed and
// carriage return (others can rewrite the terminal or log that shows the
// text), no bidirectional controls, and what checkCodePoint refuses.
func CheckDescription(desc string) string {
	if n := utf8.RuneCountInString(desc); n > MaxDescriptionLen {
		return fmt.Sprintf("description must be at most %d characters, got %d", MaxDescriptionLen, n)
	}
	plain := true
	for i := 0; i < len(desc); i++ {
		if c := desc[i]; (c < ' ' && c != '\t' && c != '\n' && c != '\r') || c > '~' {
			plain = false
			break
		}
	}
	if plain {
		return ""
	}
	for _, r := range desc {
		switch {
		case unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r':
			return "description must not contain control characters other than tab, line feed and carriage return, found " + CodePoint(r)
		case isBidiControl(r):
			return "description must not contain bidirectional control characters, found " + CodePoint(r)
		}
		if msg := checkCodePoint("description", r); msg != "" {
			return msg
		}
	}
	return ""
}

// checkCodePoint refuses noncharacters, which Unicode reserves for a
// program's internal use, and code points that the build's Unicode tables do
// not assign: a later version may assign them, with case mappings that would
// change which names collide.
func checkCodePoint(field string, r rune) string {
	switch {
	case isNoncharacter(r):
		return field + " must not contain noncharacters, found " + CodePoint(r)
	case !isAssigned(r):
		return field + " must not contain code points that Unicode " + unicode.Version + " leaves unassigned, found " + CodePoint(r)
	}
	return ""
}

// isAssigned reports whether r has a general category other than Cn
// (unassigned, noncharacters included) in the build's tables. Cn is named by
// what it is not: unicode.Cn and its place in unicode.C are recent (Go 1.26),
// and go.mod allows older ones.
func isAssigned(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z,
		unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// isNoncharacter reports whether r is one of the 66 noncharacters: U+FDD0 to
// U+FDEF, and the last two code points of every plane.
func isNoncharacter(r rune) bool {
	return 0xFDD0 <= r && r <= 0xFDEF || r&0xFFFE == 0xFFFE
}

// isBidiControl reports whether r is an explicit bidirectional embedding,
// override or isolate (U+202A to U+202E, U+2066 to U+2069).
func isBidiControl(r rune) bool {
	return 0x202A <= r && r <= 0x202E || 0x2066 <= r && r <= 0x2069
}

func isBlankLookAlike(r rune) bool {
	for _, b := range blankLookAlikes {
		if r == b {
			return true
		}
	}
	return false
}

// CodePoint names r as U+XXXX, the way every message shows a character it
// refuses: messages never show an invisible character alone.
func CodePoint(r rune) string { return fmt.Sprintf("U+%04X", r) }
