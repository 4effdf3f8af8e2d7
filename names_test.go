package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
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

// The name rules of decisions.md, "Hardening": visible, assigned, no
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
		accept("ZWJ inside", `{"name":"a\u200db"}`, "a\u200db"),
		accept("ZWNJ inside", `{"name":"a\u200cb"}`, "a\u200cb"),
		accept("braille blank beside a letter", `{"name":"\u2800a"}`, "\u2800a"),
		accept("private use beside a letter", `{"name":"a\ue000"}`, "a\ue000"),
		refuse("zero width space only", `{"name":"\u200b"}`, "name", "visible", "U+200B"),
		refuse("BOM only", `{"name":"\ufeff"}`, "name", "visible", "U+FEFF"),
		refuse("Hangul filler only", `{"name":"\u3164"}`, "name", "visible", "U+3164"),
		refuse("Hangul choseong and jungseong fillers, halfwidth filler", `{"name":"\u115f\u1160\uffa0"}`, "name", "visible", "U+115F U+1160 U+FFA0"),
		refuse("braille blank only", `{"name":"\u2800"}`, "name", "visible", "U+2800"),
		refuse("many invisible", `{"name":"`+strings.Repeat(`\u200b`, 20)+`"}`, "name", "visible", "U+200B U+200B", "…"),
		refuse("ZWJ only", `{"name":"\u200d"}`, "name", "visible"),
		refuse("combining mark only", `{"name":"\u0301"}`, "name", "visible"),
		refuse("private use only", `{"name":"\ue000"}`, "name", "visible"),
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
		// description: lone surrogates, noncharacters and unassigned code
		// points are refused; the name-only rules do not apply.
		accept("description pair", `{"name":"a","description":"\ud83d\ude00"}`, "a"),
		accept("description invisible and bidi", `{"name":"a","description":"\u202e\u200b"}`, "a"),
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
				if r == utf8.RuneError || !unicode.IsGraphic(r) && r != ' ' || isBidiControl(r) {
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
