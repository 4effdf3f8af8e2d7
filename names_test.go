package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"petstore/internal/catalog"
)

// assignedInBuild reports whether the build's Unicode tables give r a
// general category other than Cn, judged from unicode.Categories, so that a
// test states what this Go's tables say instead of assuming it.
func assignedInBuild(r rune) bool {
	for cat, table := range unicode.Categories {
		if len(cat) == 2 && cat != "Cn" && unicode.Is(table, r) {
			return true
		}
	}
	return false
}

// The name rules of docs/security.md, "Names and descriptions": visible, assigned, no
// noncharacters, no bidirectional controls, no lone surrogates; the last
// three hold for description too.
func TestCreateCategoryNameRules(t *testing.T) {
	t.Parallel()
	type tc struct {
		name     string
		body     string // raw JSON: the escapes are what the client sends
		wantName string // 201 when not ""
		mention  []string
	}
	refuse := func(name, body string, mention ...string) tc { return tc{name: name, body: body, mention: mention} }
	accept := func(name, body, want string) tc { return tc{name: name, body: body, wantName: want} }

	tests := []tc{
		// Visible characters.
		accept("ɤ", `{"name":"\u0264"}`, "ɤ"),
		accept("ZWJ inside a Devanagari conjunct", `{"name":"\u0915\u094d\u200d\u0937"}`, "\u0915\u094d\u200d\u0937"),
		accept("ZWNJ inside a Persian word", `{"name":"\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"}`, "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"),
		accept("ZWJ between emoji", `{"name":"\ud83d\udc69\ud83c\udffd\u200d\ud83d\udcbb"}`, "\U0001F469\U0001F3FD\u200d\U0001F4BB"),
		refuse("ZWJ between Latin letters", `{"name":"do\u200dg"}`, "name", "format", "U+200D", "Latin"),
		refuse("ZWNJ between Latin letters", `{"name":"d\u200cog"}`, "name", "format", "U+200C"),
		refuse("braille blank beside a letter", `{"name":"\u2800a"}`, "name", "U+2800"),
		refuse("braille blank after", `{"name":"dog\u2800"}`, "name", "U+2800"),
		refuse("private use beside a letter", `{"name":"a\ue000"}`, "name", "private-use", "U+E000"),
		refuse("interlinear annotation", `{"name":"dog\ufff9"}`, "name", "format", "U+FFF9"),
		refuse("Arabic number sign", `{"name":"dog\u0600"}`, "name", "format", "U+0600"),
		refuse("Syriac abbreviation mark", `{"name":"dog\u070f"}`, "name", "format", "U+070F"),
		refuse("Kaithi number sign", `{"name":"dog\ud804\udcbd"}`, "name", "format", "U+110BD"),
		refuse("zero width space only", `{"name":"\u200b"}`, "name", "visible", "U+200B"),
		refuse("BOM only", `{"name":"\ufeff"}`, "name", "visible", "U+FEFF"),
		refuse("Hangul filler only", `{"name":"\u3164"}`, "name", "visible", "U+3164"),
		refuse("Hangul choseong and jungseong fillers, halfwidth filler", `{"name":"\u115f\u1160\uffa0"}`, "name", "invisible", "U+115F"),
		refuse("braille blank only", `{"name":"\u2800"}`, "name", "U+2800"),
		refuse("many invisible", `{"name":"`+strings.Repeat(`\u200b`, 20)+`"}`, "name", "invisible", "U+200B"),
		refuse("only marks", `{"name":"`+strings.Repeat(`\u0301`, 20)+`"}`, "name", "visible", "U+0301 U+0301", "…"),
		refuse("ZWJ only", `{"name":"\u200d"}`, "name", "visible"),
		refuse("combining mark only", `{"name":"\u0301"}`, "name", "visible"),
		refuse("private use only", `{"name":"\ue000"}`, "name", "private-use"),
		// Bidirectional controls.
		refuse("RLO", `{"name":"a\u202eb"}`, "name", "bidirectional", "U+202E"),
		refuse("LRE", `{"name":"a\u202ab"}`, "name", "bidirectional", "U+202A"),
		refuse("isolates", `{"name":"\u2066x\u2069"}`, "name", "bidirectional", "U+2066"),
		// Control characters say which one.
		refuse("BEL", `{"name":"a\u0007b"}`, "name", "control", "U+0007"),
		// Noncharacters.
		refuse("U+FDD0", `{"name":"a\ufdd0"}`, "name", "noncharacter", "U+FDD0"),
		refuse("U+FDEF", `{"name":"a\ufdef"}`, "name", "noncharacter", "U+FDEF"),
		refuse("U+FFFE", `{"name":"a\ufffe"}`, "name", "noncharacter", "U+FFFE"),
		refuse("U+1FFFF", `{"name":"a\ud83f\udfff"}`, "name", "noncharacter", "U+1FFFF"),
		refuse("U+10FFFF", `{"name":"a\udbff\udfff"}`, "name", "noncharacter", "U+10FFFF"),
		// Surrogates: pairs are characters, anything else is refused.
		accept("surrogate pair", `{"name":"\ud83d\ude00"}`, "😀"),
		accept("surrogate pair in capitals", `{"name":"\uD83D\uDE00"}`, "😀"),
		accept("escaped backslash before u", `{"name":"\\ud800"}`, `\ud800`),
		refuse("lone high surrogate", `{"name":"\ud800"}`, "name", "surrogate", "U+D800"),
		refuse("lone high surrogate among text", `{"name":"Dogs \ud800 Cats"}`, "name", "surrogate", "U+D800"),
		refuse("lone low surrogate", `{"name":"a\udc00"}`, "name", "surrogate", "U+DC00"),
		refuse("high surrogate then a letter", `{"name":"\ud83d\u0041"}`, "name", "surrogate", "U+D83D"),
		refuse("high surrogate, text, low surrogate", `{"name":"\ud83dx\ude00"}`, "name", "surrogate", "U+D83D"),
		refuse("two high surrogates then a low", `{"name":"\ud83d\ud83d\ude00"}`, "name", "surrogate", "U+D83D"),
		refuse("pair then a lone low", `{"name":"\ud83d\ude00\ude00"}`, "name", "surrogate", "U+DE00"),
		// description: control characters but tab, LF and CR, bidirectional
		// controls, lone surrogates, noncharacters and unassigned code
		// points are refused; the name-only rules do not apply.
		accept("description pair", `{"name":"a","description":"\ud83d\ude00"}`, "a"),
		accept("description invisible", `{"name":"a","description":"\u200b\u00ad\ufeff\u2028 \u200f"}`, "a"),
		accept("description tab, LF, CR", `{"name":"a","description":"a\tb\nc\r\nd"}`, "a"),
		refuse("description NUL", `{"name":"a","description":"x\u0000"}`, "description", "control", "U+0000"),
		refuse("description ESC", `{"name":"a","description":"\u001b[2J"}`, "description", "control", "U+001B"),
		refuse("description DEL", `{"name":"a","description":"x\u007f"}`, "description", "control", "U+007F"),
		refuse("description C1 control", `{"name":"a","description":"x\u0085"}`, "description", "control", "U+0085"),
		refuse("description RLO", `{"name":"a","description":"x\u202ey"}`, "description", "bidirectional", "U+202E"),
		refuse("description isolate", `{"name":"a","description":"\u2069"}`, "description", "bidirectional", "U+2069"),
		refuse("description lone surrogate", `{"name":"a","description":"\ud800"}`, "description", "surrogate", "U+D800"),
		refuse("description noncharacter", `{"name":"a","description":"x\uffff"}`, "description", "noncharacter", "U+FFFF"),
		refuse("lone surrogates in both", `{"name":"\udfff","description":"\ud800"}`, "name", "U+DFFF", "description", "U+D800"),
	}
	// U+A7CB is the capital of ɤ since Unicode 16; what matters is what this
	// build's tables say, so the test asks them.
	for _, r := range []rune{0xA7CB, 0x0378, 0xE0080} {
		esc := fmt.Sprintf(`\u%04x`, r)
		if r > 0xFFFF {
			high, low := surrogatePair(r)
			esc = fmt.Sprintf(`\u%04x\u%04x`, high, low)
		}
		cp := fmt.Sprintf("U+%04X", r)
		if assignedInBuild(r) {
			t.Logf("%s is assigned in Unicode %s", cp, unicode.Version)
			continue
		}
		tests = append(tests,
			refuse("unassigned "+cp, `{"name":"x`+esc+`"}`, "name", "unassigned", cp),
			refuse("unassigned "+cp+" in description", `{"name":"x","description":"`+esc+`"}`, "description", "unassigned", cp))
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(t)
			rec := postCategory(t, env, tt.body)
			if tt.wantName != "" {
				mustStatus(t, rec, http.StatusCreated)
				if c, _ := decodeCategory(t, rec.Body.Bytes()); c.Name != tt.wantName {
					t.Errorf("name: got %q, want %q", c.Name, tt.wantName)
				}
				return
			}
			eb := mustError(t, rec, http.StatusBadRequest, codeInvalidField)
			mustMention(t, eb.Message, tt.mention...)
			// The message shows code points, never the invisible or
			// replaced character alone.
			for _, r := range eb.Message {
				if r == utf8.RuneError || !unicode.IsGraphic(r) && r != ' ' || unicode.Is(unicode.Bidi_Control, r) {
					t.Errorf("message %q holds %U", eb.Message, r)
				}
			}
			if got := env.mustList(t); len(got) != 0 {
				t.Errorf("store after a rejected create: got %d categories, want 0", len(got))
			}
		})
	}
}

// A name that differs only by a lone surrogate is no longer a U+FFFD twin
// of another: the first would have been stored as "a\ufffd".
func TestLoneSurrogateDoesNotCollide(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	mustError(t, postCategory(t, env, `{"name":"a\ud800"}`), http.StatusBadRequest, codeInvalidField)
	env.mustCreate(t, "a\ufffd")
}

func surrogatePair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + r>>10, 0xDC00 + r&0x3FF
}

// Names that look like "dog" are refused, or are "dog" (409): the attack's
// names, and the other invisible characters of each kind. Every store
// compares names through foldName, so the memory store speaks for them.
func TestLookAlikeNamesBesideDog(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	tests := []struct {
		body    string // raw JSON: the escapes are what the client sends
		status  int
		mention []string
	}{
		{`{"name":"do\u200bg"}`, 400, []string{"name", "invisible", "U+200B"}},
		{`{"name":"dog\ufeff"}`, 400, []string{"name", "invisible", "U+FEFF"}},
		{`{"name":"do\u00adg"}`, 400, []string{"name", "invisible", "U+00AD"}},
		{`{"name":"\u200fdog"}`, 400, []string{"name", "invisible", "U+200F"}},
		{`{"name":"\u200edog"}`, 400, []string{"name", "invisible", "U+200E"}},
		{`{"name":"d\u034fog"}`, 400, []string{"name", "invisible", "U+034F"}},
		{`{"name":"do\u2060g"}`, 400, []string{"name", "invisible", "U+2060"}},
		{`{"name":"dog\ufe0f"}`, 400, []string{"name", "invisible", "U+FE0F"}},
		{`{"name":"d\ufe00og"}`, 400, []string{"name", "invisible", "U+FE00"}},
		{`{"name":"dog\udb40\udc01"}`, 400, []string{"name", "invisible", "U+E0001"}},
		{`{"name":"do\u3164g"}`, 400, []string{"name", "invisible", "U+3164"}},
		{`{"name":"do\u180eg"}`, 400, []string{"name", "invisible", "U+180E"}},
		{`{"name":"\u200ddog"}`, 400, []string{"name", "invisible", "U+200D"}},
		{`{"name":"dog\u200c"}`, 400, []string{"name", "invisible", "U+200C"}},
		{`{"name":"do\u200d\u200dg"}`, 400, []string{"name", "invisible", "U+200D"}},
		{`{"name":"a\u2029b"}`, 400, []string{"name", "separator", "U+2029"}},
		{`{"name":"a\u2028b"}`, 400, []string{"name", "separator", "U+2028"}},
		{`{"name":"do\u200dg"}`, 400, []string{"name", "format", "U+200D"}},
		{`{"name":"d\u200cog"}`, 400, []string{"name", "format", "U+200C"}},
		{`{"name":"dog\u2800"}`, 400, []string{"name", "U+2800"}},
		{`{"name":"\u2800dog"}`, 400, []string{"name", "U+2800"}},
		{`{"name":"dog\ufff9"}`, 400, []string{"name", "format", "U+FFF9"}},
		{`{"name":"dog\u0600"}`, 400, []string{"name", "format", "U+0600"}},
		{`{"name":"dog\u070f"}`, 400, []string{"name", "format", "U+070F"}},
		{`{"name":"dog\ud804\udcbd"}`, 400, []string{"name", "format", "U+110BD"}},
		{`{"name":"dog\ue000"}`, 400, []string{"name", "private-use", "U+E000"}},
		{`{"name":"ｄｏｇ"}`, 409, []string{`"ｄｏｇ"`, `"dog" (id 1)`}},
		{`{"name":"ＤＯＧ"}`, 409, []string{`"ＤＯＧ"`, `"dog" (id 1)`}},
		{`{"name":"dｏG"}`, 409, []string{`"dｏG"`, `"dog" (id 1)`}},
	}
	for _, tt := range tests {
		rec := postCategory(t, env, tt.body)
		code := codeInvalidField
		if tt.status == http.StatusConflict {
			code = codeConflict
		}
		eb := mustError(t, rec, tt.status, code)
		mustMention(t, eb.Message, tt.mention...)
	}
	if got := env.mustList(t); len(got) != 1 {
		t.Errorf("list: got %d categories, want only dog", len(got))
	}
}

// Joiners and presentation selectors where they shape what is shown are
// fine, and make names of their own.
func TestNamesWithJoinersAndSelectors(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for _, name := range []string{
		"\U0001F415\u200d\U0001F9BA",                       // service dog: ZWJ between two emoji
		"\U0001F468\u200d\U0001F469\u200d\U0001F467",       // family: two ZWJs
		"\U0001F3F3\ufe0f\u200d\U0001F308",                 // rainbow flag: ZWJ after an emoji with its selector
		"\U0001F469\U0001F3FD\u200d\U0001F4BB",             // ZWJ after a skin tone modifier
		"\u2764\ufe0f",                                     // red heart: U+FE0F after a symbol
		"\u2764\ufe0e",                                     // text presentation
		"\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", // Persian: ZWNJ between letters
		"\u0915\u094d\u200d\u0937",                         // Devanagari: ZWJ after a virama (a mark)
	} {
		body, _ := json.Marshal(map[string]string{"name": name})
		rec := postCategory(t, env, string(body))
		mustStatus(t, rec, http.StatusCreated)
		if c, _ := decodeCategory(t, rec.Body.Bytes()); c.Name != name {
			t.Errorf("name: got %q, want %q", c.Name, name)
		}
	}
	// Without the joiner the family is another name; with U+FE0F the
	// heart is another name than without it.
	env.mustCreate(t, "\U0001F468\U0001F469\U0001F467")
	env.mustCreate(t, "\u2764")
}

// Every space separator compares as a space: after "do g", a no-break, a
// thin or an ideographic space there is the same name; the answer names
// the category as stored.
func TestSpaceSeparatorsAreOneSpace(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	first := env.mustCreate(t, "do g")
	for _, body := range []string{`{"name":"do\u00a0g"}`, `{"name":"do\u2009g"}`, `{"name":"DO\u3000G"}`, `{"name":"do\u202fg"}`} {
		eb := mustError(t, postCategory(t, env, body), http.StatusConflict, codeConflict)
		mustMention(t, eb.Message, fmt.Sprintf(`"do g" (id %d)`, first.ID))
	}
	env.mustCreate(t, "do  g") // two spaces are another name
	if got := env.mustList(t); len(got) != 2 {
		t.Errorf("list: got %d categories, want 2", len(got))
	}
}

// foldName makes fullwidth forms the ASCII characters they stand for, and
// agrees with its ASCII fast path.
func TestFoldNameFullwidth(t *testing.T) {
	t.Parallel()
	for r := rune(0xFF01); r <= 0xFF5E; r++ {
		ascii := r - 0xFF01 + '!'
		if got, want := catalog.FoldName(string(r)), catalog.FoldName(string(ascii)); got != want {
			t.Errorf("FoldName(%U): got %q, want %q, as for %q", r, got, want, ascii)
		}
	}
	for _, tt := range [][2]string{{"ｄｏｇ", "dog"}, {"ＤＯＧ", "dog"}, {"Ｄog！", "dog!"}, {"ǅｏｇ", "ǆog"}} {
		if got, want := catalog.FoldName(tt[0]), catalog.FoldName(tt[1]); got != want {
			t.Errorf("FoldName(%q): got %q, want %q", tt[0], got, want)
		}
	}
	// Only U+FF01 to U+FF5E: the halfwidth forms stay. (The ideographic
	// space is a space separator: a space, as every Zs.)
	if got := catalog.FoldName("\u3000"); got != " " {
		t.Errorf("FoldName(U+3000): got %q, want a space", got)
	}
	for _, s := range []string{"\uff5f", "\uff61"} {
		if got := catalog.FoldName(s); got != s {
			t.Errorf("FoldName(%q): got %q, want it unchanged", s, got)
		}
	}
}

// Replay keeps every name and description an earlier version accepted:
// a description with NUL, RLO or ESC, names with invisible characters or
// separators, and names that fold together only under the fullwidth rule
// (kept, with a warning, and each refusing a new create).
func TestReplayKeepsTextEarlierVersionsAccepted(t *testing.T) {
	t.Parallel()
	records := []string{
		`{"id":1,"name":"dog","description":"nul\u0000 rlo\u202e esc\u001b"}`,
		`{"id":2,"name":"ｄｏｇ"}`,
		`{"id":3,"name":"do\u200bg"}`,
		`{"id":4,"name":"a\u2029b","description":"\u0085"}`,
	}
	path := writeJournal(t, records...)
	var logs lockedBuffer
	s := openTestStore(t, path, withStoreLog(&logs))
	if !strings.Contains(logs.String(), `"line":"`+path+`:3"`) || !strings.Contains(logs.String(), `"earlier_line":"`+path+`:2"`) {
		t.Errorf("no warning that line 3 folds as line 2; logs:\n%s", &logs)
	}
	env := newTestEnv(t, withStore(s))
	rec := env.do(t, request{method: "GET", path: "/v1/categories/1"})
	mustStatus(t, rec, http.StatusOK)
	if c, _ := decodeCategory(t, rec.Body.Bytes()); c.Description == nil || *c.Description != "nul\u0000 rlo\u202e esc\u001b" {
		t.Errorf("GET 1: got %s, want the description as written", rec.Body)
	}
	if got := len(env.mustList(t)); got != len(records) {
		t.Errorf("list: got %d categories, want %d", got, len(records))
	}
	for _, name := range []string{"DOG", "Ｄｏｇ"} {
		body, _ := json.Marshal(map[string]string{"name": name})
		mustError(t, postCategory(t, env, string(body)), http.StatusConflict, codeConflict)
	}
	// The same description is refused in a request.
	mustError(t, postCategory(t, env, `{"name":"cat","description":"nul\u0000"}`), http.StatusBadRequest, codeInvalidField)
}
