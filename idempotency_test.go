package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseIdempotencyKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", maxIdempotencyKey)
	for _, tt := range []struct {
		values []string // nil: no header
		want   string
		ok     bool
	}{
		{nil, "", true},
		{[]string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{[]string{`8e03978e-40d5`}, "", false}, // a token starts with a letter or *
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
		h := http.Header{}
		if tt.values != nil {
			h["Idempotency-Key"] = tt.values
		}
		got, err := parseIdempotencyKey(h)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseIdempotencyKey(%q): got %q, %v; want %q, ok %v", tt.values, got, err, tt.want, tt.ok)
		}
	}
}

// FuzzParseIdempotencyKey: whatever the header holds, the parser answers
// without panicking, and what it accepts is 1 to 255 printable ASCII
// characters that write back to a header it reads the same.
func FuzzParseIdempotencyKey(f *testing.F) {
	for _, s := range []string{`"a"`, `token`, `"esc\"aped\\"`, `""`, `"`, `*`, `a:b/c`, "\"\x7f\"", `"` + strings.Repeat("x", 300) + `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := parseIdempotencyKey(http.Header{"Idempotency-Key": {v}})
		if err != nil {
			return
		}
		if key == "" || len(key) > maxIdempotencyKey {
			t.Fatalf("accepted %q: %d characters", v, len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("accepted %q with a byte %#x that is not printable ASCII", v, key[i])
			}
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		again, err := parseIdempotencyKey(http.Header{"Idempotency-Key": {quoted}})
		if err != nil || again != key {
			t.Fatalf("%q read as %q, written back as %s, read again as %q (%v)", v, key, quoted, again, err)
		}
	})
}

func TestIdempotencyTable(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	tab := newIdempotencyTable(time.Hour, clock.now)
	k := idempotencyKey{scope: "aaaa0000", key: "k1", request: requestFingerprint(NewCategory{Name: "dog"})}
	other := k
	other.request = requestFingerprint(NewCategory{Name: "cat"})
	if got, _ := tab.claim(k); got != claimNew {
		t.Fatalf("first claim: got %v, want new", got)
	}
	if got, _ := tab.claim(k); got != claimInFlight {
		t.Fatalf("claim while in flight: got %v", got)
	}
	tab.release(k)
	if got, _ := tab.claim(k); got != claimNew {
		t.Fatalf("claim after a release: got %v, want new (a failed create stores nothing)", got)
	}
	tab.done(k, 7, clock.now())
	if got, id := tab.claim(k); got != claimReplay || id != 7 {
		t.Fatalf("same key, same request: got %v %d, want replay of 7", got, id)
	}
	if got, _ := tab.claim(other); got != claimReused {
		t.Fatalf("same key, other request: got %v, want reused", got)
	}
	otherScope := k
	otherScope.scope = "bbbb1111"
	if got, _ := tab.claim(otherScope); got != claimNew {
		t.Fatalf("same key from another API key: got %v, want new", got)
	}
	clock.advance(time.Hour - time.Nanosecond)
	if got, _ := tab.claim(k); got != claimReplay {
		t.Fatalf("just before expiry: got %v, want replay", got)
	}
	clock.advance(time.Nanosecond)
	if left := tab.sweep(); left != 1 { // otherScope's claim is still in flight
		t.Fatalf("sweep at expiry: %d left, want 1", left)
	}
	if got, _ := tab.claim(k); got != claimNew {
		t.Fatalf("after expiry: got %v, want new", got)
	}
	tab.load(idempotencyKey{scope: "cccc2222", key: "old"}, 3, clock.now().Add(-2*time.Hour))
	if got, _ := tab.claim(idempotencyKey{scope: "cccc2222", key: "old"}); got != claimNew {
		t.Fatalf("a key loaded already expired: got %v, want new", got)
	}
}
