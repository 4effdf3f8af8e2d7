package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"petstore/internal/catalog"
	"petstore/internal/petstoretest"
	"petstore/internal/store"
)

// createBodySeeds are request bodies for POST /v1/categories that cover each
// way a body can be right or wrong. `go test` runs them as plain tests.
var createBodySeeds = []string{
	// Valid.
	`{"name":"Dogs"}`,
	`{"name":"  Dogs  ","description":"Good boys"}`,
	`{"description":"first","name":"Cats"}`,
	`{"name":"Ünïcödé 🐈","description":""}`,
	` {"name":"x"} `,
	"{\n\t\"name\" : \"tabs\"\r\n}",
	`{"name":"` + strings.Repeat("n", 100) + `"}`,
	`{"name":"a","description":"` + strings.Repeat("d", 1000) + `"}`,
	// Missing, null or empty name.
	`{}`,
	`{"description":"no name"}`,
	`{"name":null}`,
	`{"name":""}`,
	`{"name":"   "}`,
	`{"name":"\u00a0\u2003"}`,
	// Wrong types and bounds.
	`{"name":1}`,
	`{"name":true}`,
	`{"name":["Dogs"]}`,
	`{"name":{"en":"Dogs"}}`,
	`{"name":"Dogs","description":7}`,
	`{"name":"Dogs","description":null}`,
	`{"name":"` + strings.Repeat("n", 101) + `"}`,
	`{"name":"a","description":"` + strings.Repeat("d", 1001) + `"}`,
	`{"name":"tab\tinside"}`,
	`{"name":"nul\u0000"}`,
	`{"name":"c1\u0085control"}`,
	`{"name":"del\u007f"}`,
	`{"name":2,"description":false,"colour":"red"}`,
	// Unknown members, and case-sensitive member names.
	`{"name":"Dogs","id":7}`,
	`{"name":"Dogs","colour":"brown"}`,
	`{"NAME":"Dogs"}`,
	`{"Name":"Dogs","Description":"x"}`,
	`{"ﬀ":"ligature","name":"x"}`,
	// Duplicate members.
	`{"name":"a","name":"b"}`,
	`{"name":"a","description":"x","description":"y"}`,
	`{"name":"a","n\u0061me":"b"}`,
	`{"x":1,"x":2,"name":"a"}`,
	`{"x":1,"name":5,"description":null,"x":2}`,
	`{"\ud800":1,"\udbff":2,"name":"a"}`,
	`{"name":"a","` + strings.Repeat("k", 100) + `":1,"` + strings.Repeat("k", 100) + `":2}`,
	// Many unknown members: the message lists ten problems, then a count.
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"name":"ok"}`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"name":"ok"}`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"name":5,"description":6}`,
	// Invisible, blank, unassigned, noncharacter and bidirectional control
	// characters; joiners inside a name.
	`{"name":"\u200b"}`,
	`{"name":"\ufeff"}`,
	`{"name":"\u3164"}`,
	`{"name":"\u115f\u1160\uffa0"}`,
	`{"name":"\u2800"}`,
	`{"name":"\u2800a"}`,
	`{"name":"a\u202eb"}`,
	`{"name":"\u2066x\u2069"}`,
	`{"name":"a\u200db"}`,
	`{"name":"a\u200cb"}`,
	`{"name":"\u200d"}`,
	`{"name":"\u0264"}`,
	`{"name":"\ua7cb"}`,
	`{"name":"a\ufdd0"}`,
	`{"name":"a\uffff"}`,
	"{\"name\":\"a\U0001FFFE\"}",
	`{"name":"\ue000"}`,
	`{"name":"a\ue000"}`,
	`{"name":"\u0301"}`,
	`{"name":"a","description":"\ufdef"}`,
	`{"name":"a","description":"\ua7cb"}`,
	`{"name":"a","description":"\u202e\u200b"}`,
	`{"name":"a","description":"\u200b\u00ad\u2028x\t\r\n"}`,
	`{"name":"a","description":"x\u0000"}`,
	`{"name":"a","description":"x\u0085\u007f"}`,
	// Look-alikes of an accepted name: invisible characters, separators
	// and fullwidth forms; and the joiners and selectors that are fine.
	`{"name":"do\u200bg"}`,
	`{"name":"dog\ufeff"}`,
	`{"name":"do\u00adg"}`,
	`{"name":"\u200fdog"}`,
	`{"name":"a\u2029b"}`,
	`{"name":"ｄｏｇ"}`,
	`{"name":"Ｄog！"}`,
	`{"name":"\ud83d\udc15\u200d\ud83e\uddba"}`,
	`{"name":"\ud83c\udff3\ufe0f\u200d\ud83c\udf08"}`,
	`{"name":"\u2764\ufe0f"}`,
	`{"name":"#\ufe0f"}`,
	`{"name":"a\u0301\u200db"}`,
	`{"name":"a\u200d"}`,
	`{"name":"x\udb40\udc20"}`,
	// The rest of the look-alikes: joiners between Latin letters, format
	// and private-use characters, U+2800; the joiners Indic scripts,
	// Persian and emoji need; space separators that compare as a space.
	`{"name":"d\u200cog"}`,
	`{"name":"dog\u2800"}`,
	`{"name":"dog\ufff9"}`,
	`{"name":"dog\u0600"}`,
	`{"name":"dog\u070f"}`,
	`{"name":"dog\ud804\udcbd"}`,
	`{"name":"dog\ue000"}`,
	`{"name":"\u0915\u094d\u200d\u0937"}`,
	`{"name":"\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"}`,
	`{"name":"\ud83d\udc69\ud83c\udffd\u200d\ud83d\udcbb"}`,
	`{"name":"do\u00a0g"}`,
	`{"name":"hot\u2009dog"}`,
	`{"name":"hot dog"}`,
	// Nested values.
	`{"name":"Dogs","description":{"a":[1,{"b":"}"}]}}`,
	`{"name":"Dogs","extra":[[[[]]],{"k":"v"}]}`,
	// Escapes.
	`{"name":"\u0041\u00e9\ud83d\ude00"}`,
	`{"name":"say \"hi\" \\ /\/"}`,
	`{"na\u006de":"escaped member name"}`,
	`{"name":"\ud800 lone surrogate"}`,
	`{"name":"\udc00"}`,
	`{"name":"a\ud83d"}`,
	`{"name":"\ud83d\ud83d\ude00"}`,
	`{"name":"\ud83d\u0041"}`,
	`{"name":"\ud83dx\ude00"}`,
	`{"name":"\ud83d\ude00\ude00"}`,
	`{"name":"\\ud800 is text"}`,
	`{"name":"\\\ud83d\ude00"}`,
	`{"name":"\uD83D\uDE00"}`,
	`{"name":"a","description":"\ud800"}`,
	`{"name":"a","description":"\ud83d\ude00"}`,
	`{"name":"a","x":"\ud800"}`,
	`{"name":"<script>&amp;</script>"}`,
	`{"name":"line\u2028separator"}`,
	`{"name":"\n Dogs \t"}`,
	// Not UTF-8.
	"{\"name\":\"\xff\xfe\"}",
	"{\"name\":\"ok\",\"description\":\"\xc3\x28\"}",
	"{\"\xffname\":\"x\"}",
	"\xef\xbb\xbf{\"name\":\"BOM\"}",
	// Not a single JSON object.
	``,
	` `,
	`null`,
	`[]`,
	`[{"name":"Dogs"}]`,
	`"name"`,
	`42`,
	`{"name":"Dogs"}{"name":"Cats"}`,
	`{"name":"Dogs"} x`,
	`{"name":"Dogs"`,
	`{"name":"Dogs",}`,
	`{'name':'Dogs'}`,
	`{name:"Dogs"}`,
	`{"name":"Dogs"}` + "\x00",
	// Huge numbers.
	`{"name":1e999999}`,
	`{"name":"a","description":-123456789012345678901234567890.5e-99999}`,
	`{"name":"a","id":99999999999999999999999999}`,
	// Deep nesting, within encoding/json's depth limit (see heavyCreateBodies
	// for beyond it).
	`{"name":"a","x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
}

// heavyCreateBodies are bodies beyond encoding/json's depth limit. They are
// checked as plain tests, not given to the fuzzer as seeds: inputs grown
// from them cost a millisecond each, and would slow every other input.
var heavyCreateBodies = []string{
	`{"name":"a","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
	`{"name":"a","x":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat("}", 5000) + `}`,
}

func TestCreateHeavyBodies(t *testing.T) {
	t.Parallel()
	fresh := &freshStore{}
	env := newTestEnv(t, withStore(fresh), withLogTo(io.Discard))
	for _, body := range heavyCreateBodies {
		checkCreateBody(t, env, fresh, []byte(body))
	}
}

// createVerdict is what the decisions make of a create body, judged with
// encoding/json as an oracle independent of the service's own parser.
type createVerdict struct {
	status int
	codes  map[string]bool // the codes that would be right, when status is 400 or 413
	name   string          // want, when status is 201
	desc   *string         // want, when status is 201; nil: absent
	// mentions are words the message of a 400 must contain: it names every
	// bad field.
	mentions []string
}

// judgeCreateBody decides the answer to body on an empty store.
func judgeCreateBody(body []byte) createVerdict {
	reject := func(status int, codes ...string) createVerdict {
		v := createVerdict{status: status, codes: map[string]bool{}}
		for _, c := range codes {
			v.codes[c] = true
		}
		return v
	}
	if len(body) > maxBodyBytes {
		return reject(http.StatusRequestEntityTooLarge, codePayloadTooLarge)
	}
	if !json.Valid(body) || !utf8.Valid(body) {
		return reject(http.StatusBadRequest, codeInvalidJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return reject(http.StatusBadRequest, codeInvalidJSON)
	}
	// Members in order; a map[string]json.RawMessage would silently keep the
	// last of duplicate names, which the service must reject.
	count := map[string]int{}
	values := map[string]json.RawMessage{}
	var unknown []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			panic("oracle: member name of a valid object: " + err.Error())
		}
		key := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			panic("oracle: member value of a valid object: " + err.Error())
		}
		count[key]++
		if key == "name" || key == "description" {
			values[key] = value
		} else if count[key] == 1 {
			unknown = append(unknown, key)
		}
	}

	for _, n := range count {
		if n > 1 {
			// Which of two values counts is undefined: the body is not one
			// JSON object, whatever else is wrong with it.
			return reject(http.StatusBadRequest, codeInvalidJSON)
		}
	}

	v := reject(http.StatusBadRequest)
	fieldProblems := 0
	var name string
	switch raw := values["name"]; {
	case raw == nil || string(raw) == "null":
		v.codes[codeMissingField] = true
		fieldProblems++
		v.mentions = append(v.mentions, "name")
	case json.Unmarshal(raw, &name) != nil || hasLoneSurrogate(raw):
		v.codes[codeInvalidField] = true
		fieldProblems++
		v.mentions = append(v.mentions, "name")
	default:
		name = strings.TrimSpace(name)
		if !validName(name) {
			v.codes[codeInvalidField] = true
			fieldProblems++
			v.mentions = append(v.mentions, "name")
		}
	}

	var desc *string
	if raw, ok := values["description"]; ok {
		// null is not a string: an optional member is left out, not nulled.
		desc = new(string)
		if json.Unmarshal(raw, desc) != nil || string(raw) == "null" || hasLoneSurrogate(raw) ||
			utf8.RuneCountInString(*desc) > catalog.MaxDescriptionLen || strings.ContainsFunc(*desc, badDescriptionRune) {
			v.codes[codeInvalidField] = true
			fieldProblems++
			v.mentions = append(v.mentions, "description")
		}
	}

	// A message lists at most 10 problems: the fields always, then as many
	// unknown members as fit, in body order, then how many were left out.
	for i, key := range unknown {
		v.codes[codeUnknownField] = true
		if i < 10-fieldProblems && isPlainWord(key) {
			v.mentions = append(v.mentions, key)
		}
	}
	if more := len(unknown) + fieldProblems - 10; more > 0 {
		v.mentions = append(v.mentions, "and "+strconv.Itoa(more)+" more")
	}

	if len(v.codes) > 0 {
		return v
	}
	return createVerdict{status: http.StatusCreated, name: name, desc: desc}
}

// surrogateEscapes finds the escapes of a JSON string's text, left to right
// (so that an escaped backslash is not taken for the start of a \u escape),
// capturing the code unit of the \u escapes of UTF-16 surrogates.
var surrogateEscapes = regexp.MustCompile(`\\(?:u([dD][89a-fA-F][0-9a-fA-F]{2})|u[0-9a-fA-F]{4}|.)`)

// hasLoneSurrogate reports whether the raw JSON string raw holds a surrogate
// escape outside a pair: a high one (D800-DBFF) not written right before a
// low one (DC00-DFFF), or a low one not written right after a high one.
// encoding/json replaces those by U+FFFD; the decisions refuse them.
func hasLoneSurrogate(raw []byte) bool {
	pendingHigh := -1 // end of a high surrogate escape still waiting for its low half
	for _, m := range surrogateEscapes.FindAllSubmatchIndex(raw, -1) {
		if m[2] < 0 { // not a surrogate
			if pendingHigh >= 0 {
				return true
			}
			continue
		}
		unit, _ := strconv.ParseUint(string(raw[m[2]:m[3]]), 16, 16)
		high := unit < 0xDC00
		switch {
		case high && pendingHigh >= 0:
			return true
		case high:
			pendingHigh = m[1]
		case pendingHigh != m[0]: // a low one, not right after a high one
			return true
		default:
			pendingHigh = -1
		}
	}
	return pendingHigh >= 0
}

// stableRune reports whether r may be stored at all: a code point that the
// build's tables assign to some general category, and not a noncharacter.
func stableRune(r rune) bool {
	if r >= 0xFDD0 && r <= 0xFDEF || r%0x10000 == 0xFFFE || r%0x10000 == 0xFFFF {
		return false
	}
	for cat, table := range unicode.Categories {
		if len(cat) == 2 && cat != "Cn" && unicode.Is(table, r) {
			return true
		}
	}
	return false
}

// badDescriptionRune reports whether a description may not hold r.
func badDescriptionRune(r rune) bool {
	bidi := r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
	return !stableRune(r) || bidi || unicode.IsControl(r) && !strings.ContainsRune("\t\n\r", r)
}

// contractIgnorables are the default-ignorable code points that the
// decisions refuse in names, as they list them.
var contractIgnorables = [][2]rune{
	{0x00AD, 0x00AD}, {0x034F, 0x034F}, {0x061C, 0x061C}, {0x115F, 0x1160}, {0x17B4, 0x17B5},
	{0x180B, 0x180F}, {0x200B, 0x200F}, {0x2060, 0x206F}, {0x3164, 0x3164}, {0xFE00, 0xFE0F},
	{0xFEFF, 0xFEFF}, {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
	{0xE0000, 0xE0FFF},
}

func contractIgnorable(r rune) bool {
	for _, rg := range contractIgnorables {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}

// visibleRune: a letter, digit, punctuation or symbol that is not a blank
// look-alike.
func visibleRune(r rune) bool {
	blank := r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0 || r == 0x2800
	return !blank && (unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsPunct(r) || unicode.IsSymbol(r))
}

// validName reports whether a trimmed name follows the decisions' rules.
func validName(name string) bool {
	runes := []rune(name)
	if n := len(runes); n < 1 || n > catalog.MaxNameLen {
		return false
	}
	visibleAt := func(i int) bool { return i >= 0 && i < len(runes) && visibleRune(runes[i]) }
	// A letter ZWJ and ZWNJ may join: of a script other than Latin,
	// Greek and Cyrillic.
	joins := func(i int) bool {
		return visibleAt(i) && unicode.IsLetter(runes[i]) && !unicode.In(runes[i], unicode.Latin, unicode.Greek, unicode.Cyrillic)
	}
	// A pictograph (So), or before a ZWJ its skin tone.
	pictograph := func(i int, modifier bool) bool {
		return visibleAt(i) && (unicode.Is(unicode.So, runes[i]) || modifier && runes[i] >= 0x1F3FB && runes[i] <= 0x1F3FF)
	}
	visible := false
	for i, r := range runes {
		bidi := r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
		if unicode.IsControl(r) || bidi || !stableRune(r) || r == 0x2028 || r == 0x2029 ||
			unicode.Is(unicode.Co, r) || r == 0x2800 {
			return false
		}
		switch {
		case !contractIgnorable(r) && !unicode.Is(unicode.Cf, r):
		case r == 0x200C || r == 0x200D:
			// Between two letters of a joining script, the one before
			// with its marks; ZWJ also between two pictographs, the one
			// before with its skin tone and presentation selector.
			j := i - 1
			for j >= 0 && (unicode.In(runes[j], unicode.Mn, unicode.Mc, unicode.Me) || runes[j] == 0xFE0E || runes[j] == 0xFE0F) {
				j--
			}
			if !(joins(j) && joins(i+1) || r == 0x200D && pictograph(j, true) && pictograph(i+1, false)) {
				return false
			}
		case r == 0xFE0E || r == 0xFE0F:
			if !visibleAt(i-1) || !unicode.IsSymbol(runes[i-1]) {
				return false
			}
		default:
			return false
		}
		visible = visible || visibleRune(r)
	}
	return visible
}

// sameName reports whether the decisions make a and b the same name: equal
// ignoring case once fullwidth forms are the ASCII characters they stand for
// and every space separator is a space.
func sameName(a, b string) bool { return strings.EqualFold(narrow(a), narrow(b)) }

// narrow maps the fullwidth forms U+FF01 to U+FF5E to ASCII, and the space
// separators (Zs) to U+0020.
func narrow(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0xFF01 && r <= 0xFF5E:
			return r - 0xFEE0
		case unicode.Is(unicode.Zs, r):
			return ' '
		}
		return r
	}, s)
}

// widen maps ASCII ! to ~ to their fullwidth forms.
func widen(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '!' && r <= '~' {
			return r + 0xFEE0
		}
		return r
	}, s)
}

// isPlainWord reports whether s is short and plain enough that a message
// naming it must contain it as is.
func isPlainWord(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// createCodesByStatus lists, per status, the codes a create may answer with.
var createCodesByStatus = map[int]map[string]bool{
	http.StatusBadRequest:            {codeInvalidJSON: true, codeMissingField: true, codeInvalidField: true, codeUnknownField: true},
	http.StatusConflict:              {codeConflict: true},
	http.StatusRequestEntityTooLarge: {codePayloadTooLarge: true},
}

// checkErrorAnswer checks that rec is a well-formed Error answer and returns
// its body. Unlike mustError it takes any status a create may answer with.
func checkErrorAnswer(t *testing.T, rec *httptest.ResponseRecorder) (petstoretest.ErrorBody, bool) {
	t.Helper()
	codes, ok := createCodesByStatus[rec.Code]
	if !ok {
		t.Errorf("status: got %d, want 201, 400, 409 or 413; body %s", rec.Code, rec.Body)
		return petstoretest.ErrorBody{}, false
	}
	eb, ok := petstoretest.CheckErrorBody(t, rec.Code, rec.Header(), rec.Body.Bytes())
	if ok && !codes[eb.Code] {
		t.Errorf("code: got %q, want one documented for %d", eb.Code, rec.Code)
	}
	return eb, ok
}

// freshStore lets one handler serve every fuzz input from a new, empty
// store: building the service (route table, OpenAPI document) per input
// would cost far more than the input itself.
type freshStore struct{ Store }

func FuzzCreateCategory(f *testing.F) {
	for _, s := range createBodySeeds {
		f.Add([]byte(s))
	}
	oneProcPerFuzzWorker(f)
	fresh := &freshStore{}
	env := newTestEnv(f, withStore(fresh), withLogTo(io.Discard))
	f.Fuzz(func(t *testing.T, body []byte) { checkCreateBody(t, env, fresh, body) })
}

// oneProcPerFuzzWorker gives a fuzzing worker process one P. The engine
// runs every input on a new goroutine and waits for it: with a second P
// each handoff wakes another thread, which costs more than a cheap input
// (an empty fuzz function here: about 7,700 inputs a second with two Ps,
// 10,600 with one). A worker runs one input at a time, so it loses
// nothing; -parallel still sets how many workers run. Plain `go test`
// (seeds only) and the coordinating process are left alone.
func oneProcPerFuzzWorker(f *testing.F) {
	if fl := flag.Lookup("test.fuzzworker"); fl == nil || fl.Value.String() != "true" {
		return
	}
	runtime.GOMAXPROCS(1)
	f.Cleanup(runtime.SetDefaultGOMAXPROCS)
}

// checkCreateBody is one input of FuzzCreateCategory.
func checkCreateBody(t *testing.T, env *testEnv, fresh *freshStore, body []byte) {
	// An empty store per input: the answer depends on the input alone,
	// so any failure reproduces from its corpus file. Inputs of one
	// worker run one at a time.
	fresh.Store = store.NewMemory(store.Options{})
	want := judgeCreateBody(body)
	rec := env.do(t, request{method: "POST", path: "/v1/categories", body: string(body)})

	if rec.Code != http.StatusCreated {
		eb, ok := checkErrorAnswer(t, rec)
		if want.status == http.StatusCreated {
			t.Fatalf("got %d %s, want 201 {name %q}", rec.Code, rec.Body, want.name)
		}
		if !ok {
			return
		}
		if rec.Code != want.status {
			t.Errorf("status: got %d, want %d", rec.Code, want.status)
		}
		if !want.codes[eb.Code] {
			t.Errorf("code: got %q, want one of %v; message %q", eb.Code, want.codes, eb.Message)
		}
		for _, word := range want.mentions {
			if !strings.Contains(eb.Message, word) {
				t.Errorf("message %q does not name %q", eb.Message, word)
			}
		}
		if n := rec.Body.Len(); n > maxErrorText {
			t.Errorf("error body has %d bytes, want at most %d", n, maxErrorText)
		}
		if n := snapshotOf(t, env.store).Len(); n != 0 {
			t.Errorf("store holds %d categories after a refused create, want 0", n)
		}
		return
	}

	// 201.
	if want.status != http.StatusCreated {
		t.Fatalf("got 201 %s, want %d (one of %v): the body is not a valid create", rec.Body, want.status, want.codes)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	if got := rec.Header().Get("Location"); got != "/v1/categories/1" {
		t.Errorf("Location: got %q, want /v1/categories/1", got)
	}
	created := bytes.Clone(rec.Body.Bytes())
	var members map[string]json.RawMessage
	if err := json.Unmarshal(created, &members); err != nil || !utf8.Valid(created) {
		t.Fatalf("201 body is not a UTF-8 JSON object (%v): %q", err, created)
	}
	wantMembers := 2
	if want.desc != nil {
		wantMembers = 3
	}
	if len(members) != wantMembers {
		t.Errorf("201 body has %d members, want %d: %s", len(members), wantMembers, created)
	}
	var c petstoretest.Category
	if err := json.Unmarshal(created, &c); err != nil {
		t.Fatalf("201 body is not a Category: %v; %s", err, created)
	}
	if c.ID != 1 {
		t.Errorf("id: got %d, want 1", c.ID)
	}
	if c.Name != want.name {
		t.Errorf("name: got %q, want %q", c.Name, want.name)
	}
	switch {
	case want.desc == nil && c.Description != nil:
		t.Errorf("description: got %q, want it absent", *c.Description)
	case want.desc != nil && (c.Description == nil || *c.Description != *want.desc):
		t.Errorf("description: got %v, want %q", c.Description, *want.desc)
	}
	// What is served later is what the create answered, as encoding/json
	// would write it.
	if again := env.do(t, request{method: "GET", path: "/v1/categories/1"}); again.Code != http.StatusOK || !bytes.Equal(again.Body.Bytes(), created) {
		t.Errorf("GET /v1/categories/1: got %d %s, want 200 %s", again.Code, again.Body, created)
	}
	if list := env.do(t, request{method: "GET", path: "/v1/categories"}); list.Body.String() != "["+string(created)+"]" {
		t.Errorf("list: got %s, want [%s]", list.Body, created)
	}
	if nameJSON, _ := json.Marshal(want.name); !bytes.Contains(created, append([]byte(`"name":`), nameJSON...)) {
		t.Errorf("201 body %s does not encode the name as encoding/json does: %s", created, nameJSON)
	}

	// Look-alikes of the accepted name, three or four spellings (every
	// input pays for them): another case; the other case in fullwidth
	// forms, with white space around it; the name with a character
	// inserted that the decisions refuse in names or allow only in places;
	// and, when it has spaces, the name with no-break spaces for them.
	inserted, ins := insertLookAlike(want.name, body)
	stored := 1
	spellings := []string{strings.ToUpper(want.name), " " + widen(strings.ToLower(want.name)) + " ", inserted}
	if strings.Contains(want.name, " ") { // the spaces, no-break
		spellings = append(spellings, strings.ReplaceAll(want.name, " ", "\u00a0"))
	}
	for i, other := range spellings {
		if checkLookAlike(t, env, want.name, other, i == 2) != http.StatusCreated {
			continue
		}
		stored++
		// A new name, not a look-alike: an inserted character makes one
		// only where the decisions allow it.
		if ins != 0x200C && ins != 0x200D && ins != 0xFE0E && ins != 0xFE0F {
			t.Errorf("create %q (%q with %U inserted) after creating %q: got 201, want 400 or 409", inserted, want.name, ins, want.name)
		}
	}
	if n := snapshotOf(t, env.store).Len(); n != stored {
		t.Errorf("store holds %d categories, want %d", n, stored)
	}
}

// lookAlikeInserts are the characters insertLookAlike inserts: the bounds of
// each range of default-ignorable code points, the separators, the
// bidirectional controls, format characters that are not default-ignorable,
// private-use characters and U+2800.
var lookAlikeInserts = func() []rune {
	rs := []rune{0x2028, 0x2029, 0x202A, 0x202E, 0x2066, 0x2069, 0x200C, 0x200D, 0xFE0E, 0xFE0F,
		0x0600, 0x0605, 0x06DD, 0x070F, 0x08E2, 0xFFF9, 0xFFFB, 0x110BD, 0x110CD, 0x13430,
		0xE000, 0xF8FF, 0xF0000, 0x10FFFD, 0x2800}
	for _, rg := range contractIgnorables {
		rs = append(rs, rg[0], rg[1])
	}
	return rs
}()

// insertLookAlike inserts one of lookAlikeInserts into name, both chosen by
// a hash of the input, so that a failure reproduces from it.
func insertLookAlike(name string, input []byte) (string, rune) {
	h := fnv.New32a()
	h.Write(input)
	sum := h.Sum32()
	r := lookAlikeInserts[sum%uint32(len(lookAlikeInserts))]
	runes := []rune(name)
	at := int(sum>>8) % (len(runes) + 1)
	return string(runes[:at]) + string(r) + string(runes[at:]), r
}

// checkLookAlike creates other after name was created, and checks the
// answer: 400 when the decisions refuse other, 409 when they make it the
// same name as name, and 201 (a new name) otherwise. A spelling that is
// not a look-alike is only sent when always is set. It returns the status.
func checkLookAlike(t *testing.T, env *testEnv, name, other string, always bool) int {
	t.Helper()
	trimmed := strings.TrimSpace(other)
	want := http.StatusCreated
	switch {
	case !validName(trimmed):
		want = http.StatusBadRequest
	case sameName(trimmed, name):
		want = http.StatusConflict
	case !always:
		return 0
	}
	body, _ := json.Marshal(map[string]string{"name": other})
	rec := env.do(t, request{method: "POST", path: "/v1/categories", body: string(body)})
	if rec.Code != want {
		t.Errorf("create %s after creating %q: got %d %s, want %d", body, name, rec.Code, rec.Body, want)
		return rec.Code
	}
	if want != http.StatusCreated {
		if eb, ok := checkErrorAnswer(t, rec); ok && eb.Code != map[int]string{400: codeInvalidField, 409: codeConflict}[want] {
			t.Errorf("create %s: code: got %q", body, eb.Code)
		}
	}
	return rec.Code
}
