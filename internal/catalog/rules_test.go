package catalog

import (
	"strings"
	"testing"
	"unicode"
)

const invisibleTail = "; ZWJ and ZWNJ only inside a word of a script other than Latin, Greek and Cyrillic" +
	" (and ZWJ between two pictographs), U+FE0E and U+FE0F only right after a symbol"

// unassignedRune returns a code point the build's Unicode tables leave
// unassigned (general category Cn), judged from unicode.Categories so that
// the test states what this Go's tables say instead of assuming it.
func unassignedRune(t *testing.T) (rune, bool) {
	t.Helper()
next:
	for _, r := range []rune{0x0378, 0x086F, 0xE0080} {
		for cat, table := range unicode.Categories {
			if len(cat) == 2 && cat != "Cn" && unicode.Is(table, r) {
				continue next
			}
		}
		return r, true
	}
	t.Logf("no candidate is unassigned in Unicode %s", unicode.Version)
	return 0, false
}

// ruleCase is a text and the message a rule gives it ("" when allowed).
type ruleCase struct{ name, in, want string }

// checkCases runs check, named fn, on each case.
func checkCases(t *testing.T, fn string, check func(string) string, tests []ruleCase) {
	t.Helper()
	for _, tt := range tests {
		if got := check(tt.in); got != tt.want {
			t.Errorf("%s: %s(%+q): got %q, want %q", tt.name, fn, tt.in, got, tt.want)
		}
	}
}

// The characters a name may hold (docs/api.md, "Category rules"), joiners
// and selectors where they shape what is shown included.
func TestCheckNameAllows(t *testing.T) {
	t.Parallel()
	checkCases(t, "CheckName", CheckName, []ruleCase{
		{"ASCII", "dog", ""},
		{"ASCII with spaces", "hot dog!", ""},
		{"ASCII at the bound", strings.Repeat("a", MaxNameLen), ""},
		{"letters past ASCII at the bound", strings.Repeat("é", MaxNameLen), ""},
		{"letter past ASCII", "\u0264", ""},
		{"combining mark after a letter", "e\u0301", ""},
		{"ZWJ between emoji", "\U0001F415\u200d\U0001F9BA", ""},
		{"ZWJ after an emoji and its selector", "\U0001F3F3\ufe0f\u200d\U0001F308", ""},
		{"ZWJ after an emoji and its skin tone", "\U0001F469\U0001F3FD\u200d\U0001F4BB", ""},
		{"ZWJ after a virama", "\u0915\u094d\u200d\u0937", ""},
		{"ZWNJ after a virama", "\u0915\u094d\u200c\u0937", ""},
		{"ZWNJ in a Persian word", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", ""},
		{"ZWJ between Arabic letters", "\u0644\u200d\u0627", ""},
		{"ZWNJ in Malayalam", "\u0d28\u0d4d\u200c\u0d31", ""},
		{"emoji presentation after a symbol", "\u2764\ufe0f", ""},
		{"text presentation after a symbol", "\u2764\ufe0e", ""},
		{"no-break space inside", "do\u00a0g", ""},
		{"thin space inside", "do\u2009g", ""},
	})
}

// A name refused for its length or for a character that is never allowed.
func TestCheckNameRefuses(t *testing.T) {
	t.Parallel()
	tests := []ruleCase{
		{"empty", "", "name must not be empty or only white space"},
		{"ASCII past the bound", strings.Repeat("a", MaxNameLen+1), "name must be at most 100 characters after trimming white space, got 101"},
		{"letters past the bound", strings.Repeat("é", MaxNameLen+1), "name must be at most 100 characters after trimming white space, got 101"},
		{"BEL", "a\u0007b", "name must not contain control characters, found U+0007"},
		{"tab", "a\tb", "name must not contain control characters, found U+0009"},
		{"DEL", "a\u007f", "name must not contain control characters, found U+007F"},
		{"C1 control", "a\u0085", "name must not contain control characters, found U+0085"},
		{"RLO", "a\u202eb", "name must not contain bidirectional control characters, found U+202E"},
		{"LRE", "a\u202ab", "name must not contain bidirectional control characters, found U+202A"},
		{"isolate", "\u2066x\u2069", "name must not contain bidirectional control characters, found U+2066"},
		{"line separator", "a\u2028b", "name must not contain line or paragraph separators, found U+2028"},
		{"paragraph separator", "a\u2029b", "name must not contain line or paragraph separators, found U+2029"},
		{"U+FDD0", "a\ufdd0", "name must not contain noncharacters, found U+FDD0"},
		{"U+FDEF", "a\ufdef", "name must not contain noncharacters, found U+FDEF"},
		{"U+FFFE", "a\ufffe", "name must not contain noncharacters, found U+FFFE"},
		{"U+1FFFF", "a\U0001FFFF", "name must not contain noncharacters, found U+1FFFF"},
		{"U+10FFFF", "a\U0010FFFF", "name must not contain noncharacters, found U+10FFFF"},
		{"private use", "dog\ue000", "name must not contain private-use characters, found U+E000"},
		{"private use alone", "\ue000", "name must not contain private-use characters, found U+E000"},
		{"private use, plane 15", "a\U000F0000", "name must not contain private-use characters, found U+F0000"},
		{"private use, plane 16", "a\U0010FFFD", "name must not contain private-use characters, found U+10FFFD"},
		{"U+2800 last", "dog\u2800", "name must not contain U+2800 (a braille pattern that prints as a blank), found U+2800"},
		{"U+2800 first", "\u2800dog", "name must not contain U+2800 (a braille pattern that prints as a blank), found U+2800"},
		{"U+2800 alone", "\u2800", "name must not contain U+2800 (a braille pattern that prints as a blank), found U+2800"},
	}
	if r, ok := unassignedRune(t); ok {
		tests = append(tests, ruleCase{"unassigned", "x" + string(r),
			"name must not contain code points that Unicode " + unicode.Version + " leaves unassigned, found " + CodePoint(r)})
	}
	checkCases(t, "CheckName", CheckName, tests)
}

// A name refused for a default-ignorable character outside the places it
// is allowed, or for holding nothing visible.
func TestCheckNameRefusesInvisible(t *testing.T) {
	t.Parallel()
	invisible := func(cp string) string {
		return "name must not contain invisible or format characters, found " + cp + invisibleTail
	}
	const only = "name must contain at least one visible character (a letter, digit, punctuation or symbol), got only "
	eight := strings.TrimSpace(strings.Repeat("U+0301 ", 8))
	checkCases(t, "CheckName", CheckName, []ruleCase{
		{"zero width space", "do\u200bg", invisible("U+200B")},
		{"BOM", "dog\ufeff", invisible("U+FEFF")},
		{"soft hyphen", "do\u00adg", invisible("U+00AD")},
		{"tag", "dog\U000E0001", invisible("U+E0001")},
		{"Hangul filler", "do\u3164g", invisible("U+3164")},
		{"ZWJ first", "\u200ddog", invisible("U+200D")},
		{"ZWNJ last", "dog\u200c", invisible("U+200C")},
		{"two ZWJs", "do\u200d\u200dg", invisible("U+200D")},
		{"ZWJ before a blank look-alike", "\u0915\u200d\u3164", invisible("U+200D")},
		{"ZWJ after a lone combining mark", "\u0301\u200d\u0915", invisible("U+200D")},
		{"ZWJ between Latin letters", "do\u200dg", invisible("U+200D")},
		{"ZWNJ between Latin letters", "d\u200cog", invisible("U+200C")},
		{"ZWJ between Greek letters", "\u03b1\u200d\u03b2", invisible("U+200D")},
		{"ZWNJ between Cyrillic letters", "\u0434\u200c\u043e", invisible("U+200C")},
		{"ZWJ after a mark on a Latin letter", "e\u0301\u200dg", invisible("U+200D")},
		{"ZWJ from a joining letter to a Latin one", "\u0915\u200dg", invisible("U+200D")},
		{"ZWJ from a Latin letter to a joining one", "g\u200d\u0915", invisible("U+200D")},
		{"ZWNJ between symbols", "\U0001F415\u200c\U0001F9BA", invisible("U+200C")},
		{"ZWJ from a symbol to a letter", "\U0001F415\u200d\u0915", invisible("U+200D")},
		{"ZWJ between digits", "1\u200d2", invisible("U+200D")},
		{"ZWJ between ASCII symbols", "a+\u200d+b", invisible("U+200D")},
		{"ZWJ between currency signs", "$\u200d$", invisible("U+200D")},
		{"ZWJ from a pictograph to a math symbol", "\U0001F415\u200d+", invisible("U+200D")},
		{"selector after a letter", "dog\ufe0f", invisible("U+FE0F")},
		{"selector first", "\ufe0e", invisible("U+FE0E")},
		{"other variation selector", "d\ufe00og", invisible("U+FE00")},
		{"interlinear annotation", "dog\ufff9", invisible("U+FFF9")},
		{"Arabic number sign", "dog\u0600", invisible("U+0600")},
		{"Syriac abbreviation mark", "dog\u070f", invisible("U+070F")},
		{"Kaithi number sign", "dog\U000110BD", invisible("U+110BD")},
		{"Mongolian vowel separator", "do\u180eg", invisible("U+180E")},
		{"Egyptian hieroglyph format", "dog\U00013430", invisible("U+13430")},
		{"combining mark only", "\u0301", only + "U+0301"},
		{"eight marks", strings.Repeat("\u0301", 8), only + eight},
		{"many marks", strings.Repeat("\u0301", 20), only + eight + " …"},
	})
}

// The description rules of docs/api.md, "Category rules": the name-only
// rules do not apply.
func TestCheckDescription(t *testing.T) {
	t.Parallel()
	tests := []ruleCase{
		{"empty", "", ""},
		{"ASCII", "loyal", ""},
		{"tab, LF, CR", "a\tb\nc\r\nd", ""},
		{"invisible and separators", "\u200b\u00ad\ufeff\u2028 \u200f", ""},
		{"emoji", "\U0001F600", ""},
		{"at the bound", strings.Repeat("é", MaxDescriptionLen), ""},
		{"ASCII past the bound", strings.Repeat("a", MaxDescriptionLen+1), "description must be at most 1000 characters, got 1001"},
		{"letters past the bound", strings.Repeat("é", MaxDescriptionLen+1), "description must be at most 1000 characters, got 1001"},
		{"NUL", "x\u0000", "description must not contain control characters other than tab, line feed and carriage return, found U+0000"},
		{"ESC", "\u001b[2J", "description must not contain control characters other than tab, line feed and carriage return, found U+001B"},
		{"DEL", "x\u007f", "description must not contain control characters other than tab, line feed and carriage return, found U+007F"},
		{"C1 control", "x\u0085", "description must not contain control characters other than tab, line feed and carriage return, found U+0085"},
		{"RLO", "x\u202ey", "description must not contain bidirectional control characters, found U+202E"},
		{"isolate", "\u2069", "description must not contain bidirectional control characters, found U+2069"},
		{"noncharacter", "x\uffff", "description must not contain noncharacters, found U+FFFF"},
	}
	if r, ok := unassignedRune(t); ok {
		tests = append(tests, ruleCase{"unassigned", "x" + string(r),
			"description must not contain code points that Unicode " + unicode.Version + " leaves unassigned, found " + CodePoint(r)})
	}
	checkCases(t, "CheckDescription", CheckDescription, tests)
}

func TestCodePoint(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		r    rune
		want string
	}{
		{0, "U+0000"}, {'a', "U+0061"}, {0x200B, "U+200B"}, {0xE0001, "U+E0001"}, {0x10FFFF, "U+10FFFF"},
	} {
		if got := CodePoint(tt.r); got != tt.want {
			t.Errorf("CodePoint(%d): got %q, want %q", tt.r, got, tt.want)
		}
	}
}
