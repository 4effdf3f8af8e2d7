package catalog

import (
	"strings"
	"testing"
	"unicode"
)

const invisibleTail = "; ZWJ and ZWNJ only between two visible characters, U+FE0E and U+FE0F only right after a symbol"

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
		{"ZWJ between letters", "a\u200db", ""},
		{"ZWNJ between letters", "a\u200cb", ""},
		{"ZWJ between emoji", "\U0001F415\u200d\U0001F9BA", ""},
		{"ZWJ after an emoji and its selector", "\U0001F3F3\ufe0f\u200d\U0001F308", ""},
		{"ZWJ after a virama", "\u0915\u094d\u200d\u0937", ""},
		{"emoji presentation after a symbol", "\u2764\ufe0f", ""},
		{"text presentation after a symbol", "\u2764\ufe0e", ""},
		{"blank look-alike beside a letter", "\u2800a", ""},
		{"private use beside a letter", "a\ue000", ""},
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
		return "name must not contain invisible (default-ignorable) characters, found " + cp + invisibleTail
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
		{"ZWJ before a blank look-alike", "a\u200d\u2800", invisible("U+200D")},
		{"ZWJ after a lone combining mark", "\u0301\u200da", invisible("U+200D")},
		{"selector after a letter", "dog\ufe0f", invisible("U+FE0F")},
		{"selector first", "\ufe0e", invisible("U+FE0E")},
		{"selector after a blank symbol", "\u2800\ufe0f", invisible("U+FE0F")},
		{"other variation selector", "d\ufe00og", invisible("U+FE00")},
		{"blank look-alike only", "\u2800", only + "U+2800"},
		{"combining mark only", "\u0301", only + "U+0301"},
		{"private use only", "\ue000", only + "U+E000"},
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
