package idemkey

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", MaxLen)
	for _, tt := range []struct {
		values []string // nil: no header
		want   string
		ok     bool
	}{
		{nil, "", true},
		{[]string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{[]string{`8e03978e-40d5-43e8-bc93-6894a57f9324`}, "8e03978e-40d5-43e8-bc93-6894a57f9324", true}, // crypto.randomUUID(), bare
		{[]string{`01ARZ3NDEKTSV4RRFFQ69G5FAV`}, "01ARZ3NDEKTSV4RRFFQ69G5FAV", true},                     // a ULID
		{[]string{`{a}[b]<c>=?@(d)\e`}, `{a}[b]<c>=?@(d)\e`, true},                                       // any visible ASCII but " , ;
		{[]string{long}, long, true},
		{[]string{long + "k"}, "", false},
		{[]string{`a;b`}, "", false},
		{[]string{`a"b`}, "", false},
		{[]string{"café"}, "", false},
		{[]string{"tab	here"}, "", false},
		{[]string{`order-17:retry/2`}, "order-17:retry/2", true},
		{[]string{`*star`}, "*star", true},
		{[]string{` "padded" `}, "padded", true},
		{[]string{`"with space and \"quotes\" \\ slash"`}, `with space and "quotes" \ slash`, true},
		{[]string{`"` + long + `"`}, long, true},
		{[]string{`"` + long + `k"`}, "", false},
		{[]string{`""`}, "", false},
		{[]string{``}, "", false},
		{[]string{`"unterminated`}, "", false},
		{[]string{`"trailing" x`}, "", false},
		{[]string{`"bad \n escape"`}, "", false},
		{[]string{"\"tab\there\""}, "", false},
		{[]string{"\"caf\u00e9\""}, "", false},
		{[]string{`two words`}, "", false},
		{[]string{`a,b`}, "", false},
		{[]string{`"a"`, `"b"`}, "", false},
	} {
		got, ok := Parse(tt.values)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Parse(%q): got %q, %v; want %q, %v", tt.values, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzParse: whatever the header holds, the parser answers
// without panicking, and what it accepts is 1 to 255 printable ASCII
// characters that write back to a header it reads the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`"a"`, `token`, `"esc\"aped\\"`, `""`, `"`, `*`, `a:b/c`, "\"\x7f\"", `"` + strings.Repeat("x", 300) + `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, ok := Parse([]string{v})
		if !ok {
			return
		}
		if key == "" || len(key) > MaxLen {
			t.Fatalf("accepted %q: %d characters", v, len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("accepted %q with a byte %#x that is not printable ASCII", v, key[i])
			}
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		again, ok := Parse([]string{quoted})
		if !ok || again != key {
			t.Fatalf("%q read as %q, written back as %s, read again as %q", v, key, quoted, again)
		}
	})
}

// Each set holds exactly the characters its rule allowed when it was
// written out as comparisons.
func TestCharacterSets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		has  func(c byte) bool
		want func(c byte) bool
	}{
		{"bare", bareChars.Has, func(c byte) bool { return 0x21 <= c && c <= 0x7e && c != '"' && c != ',' && c != ';' }},
		{"printable", printable.Has, func(c byte) bool { return 0x20 <= c && c <= 0x7e }},
	} {
		for c := 0; c < 256; c++ {
			if got, want := tt.has(byte(c)), tt.want(byte(c)); got != want {
				t.Errorf("%s set has %q: got %v, want %v", tt.name, byte(c), got, want)
			}
		}
	}
}
