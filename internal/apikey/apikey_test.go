package apikey

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Scopes as written in PETSTORE_API_KEYS and the key file: what each entry
// grants, and how a bad one is refused, naming its position and never the
// key or what stands after its colon.
func TestParseList(t *testing.T) {
	t.Parallel()
	const k = "parse-scope-Key-Qm4Tz"
	good := []struct {
		entry string
		want  Scopes
	}{
		{k, All},
		{k + ":read", Read},
		{k + ":write", Read | Write},
		{k + ":metrics", Metrics},
		{k + ":write+metrics", All},
		{k + ":metrics+read", Read | Metrics},
		{k + ":read+write", Read | Write},
		{"  " + k + ":read  ", Read},
		{k + "==:read", Read}, // padding, then the scopes
	}
	for _, tc := range good {
		keys, err := ParseList("PETSTORE_API_KEYS", tc.entry)
		if err != nil || len(keys) != 1 || keys[0].Scopes != tc.want || keys[0].Secret != strings.TrimSpace(strings.Split(tc.entry, ":")[0]) {
			t.Errorf("%q: got %+v, %v; want scopes %v", tc.entry, keys, err, tc.want)
		}
	}
	bad := []struct {
		entry, want string // want: in the error
	}{
		{k + ":", "empty scope"},
		{k + ":read+", "empty scope"},
		{k + ":+read", "empty scope"},
		{k + ":read++write", "empty scope"},
		{k + ":Read", "none of read, write and metrics"},
		{k + ":READ", "none of read, write and metrics"},
		{k + ":admin", "none of read, write and metrics"},
		{k + ": read", "none of read, write and metrics"},
		{k + ":read:write", "none of read, write and metrics"},
		{k + ":Secret-Tail-9", "none of read, write and metrics"},
		{k + ":read+read", `scope "read" twice`},
		{k + ":write+metrics+write", `scope "write" twice`},
		{":read", "no key before the colon"},
		{k + " :read", "characters an API key cannot hold"},
		{"short-Key:read", "16 characters"},
	}
	for _, tc := range bad {
		_, err := ParseList("PETSTORE_API_KEYS", "first-ok-Key-Wd2Ln7,"+tc.entry)
		if err == nil {
			t.Errorf("%q: accepted, want an error with %q", tc.entry, tc.want)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "PETSTORE_API_KEYS: key 2 ") || !strings.Contains(msg, tc.want) {
			t.Errorf("%q: error %q, want it to name key 2 and say %q", tc.entry, msg, tc.want)
		}
		for _, secret := range []string{k, "first-ok-Key", "short-Key", "Secret-Tail", "admin", "Read", "READ"} {
			if strings.Contains(msg, secret) {
				t.Errorf("%q: the error quotes %q: %s", tc.entry, secret, msg)
			}
		}
	}
}

// tokenChars holds exactly the characters of RFC 6750's b64token less
// "=", as the validator had them when it was written out as comparisons.
func TestTokenChars(t *testing.T) {
	t.Parallel()
	for c := 0; c < 256; c++ {
		b := byte(c)
		want := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("-._~+/", b) >= 0
		if got := tokenChars.Has(b); got != want {
			t.Errorf("tokenChars has %q: got %v, want %v", b, got, want)
		}
	}
	for s, want := range map[string]bool{"abc": true, "ab==": true, "==": false, "": false, "a=b": false, "a b": false} {
		if got := IsToken(s); got != want {
			t.Errorf("IsToken(%q): got %v, want %v", s, got, want)
		}
	}
}

// A ring grants a token the scopes of every key it matches, none to
// another, and Store replaces the whole set.
func TestRing(t *testing.T) {
	t.Parallel()
	const a, b = "ring-key-A-Tq8Wm2Hn", "ring-key-B-Jd9Ws2Lc"
	r := NewRing([]Key{{a, Read}, {b, Metrics}, {a, Write | Read}})
	if d, granted := r.Match(a); granted != Read|Write || d != Digest(sha256.Sum256([]byte(a))) {
		t.Errorf("a key listed twice: granted %v, want read+write, and its digest", granted)
	}
	if _, granted := r.Match("ring-key-C-Xx0"); granted != 0 {
		t.Errorf("a key not in the set: granted %v", granted)
	}
	r.Store(AllScopes(b))
	if _, granted := r.Match(a); granted != 0 {
		t.Errorf("after Store: the key of the set before is granted %v", granted)
	}
	if _, granted := r.Match(b); granted != All {
		t.Errorf("after Store: granted %v, want every scope", granted)
	}
}

// A key file's errors name the variable, the file and the line, never a
// key; its rotation puts the file's keys and the fixed ones in force, and
// keeps the set in force when the file is bad, logging no key either way.
func TestFileRotation(t *testing.T) {
	t.Parallel()
	const fixed, first, second = "rotation-fixed-Key-Pz6Mc", "rotation-first-Key-Nv4Tq", "rotation-second-Key-Wd2Ln"
	path := filepath.Join(t.TempDir(), "keys")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# keys\n" + first + "\n\nshort-Key-1\n")
	if _, _, err := ReadFile("KEYS_FILE", path); err == nil || !strings.HasPrefix(err.Error(), "KEYS_FILE "+path+": line 4 ") || strings.Contains(err.Error(), "short-Key") {
		t.Errorf("a short key on line 4: %v, want an error naming the variable, the file and line 4, not the key", err)
	}
	if _, _, err := ReadFile("KEYS_FILE", path+".missing"); !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "KEYS_FILE: ") {
		t.Errorf("a missing file: %v, want the variable and fs.ErrNotExist", err)
	}
	write(first + ":read\n")
	file, keys, err := ReadFile("KEYS_FILE", path)
	if err != nil || len(keys) != 1 || keys[0] != (Key{first, Read}) {
		t.Fatalf("ReadFile: %v, %v", len(keys), err)
	}
	ring := NewRing(append(keys, AllScopes(fixed)...))
	var logs bytes.Buffer
	rotation := file.Rotation(ring, AllScopes(fixed), 0, slog.New(slog.NewJSONHandler(&logs, nil)))
	write(second + ":write\n")
	rotation.Reload("SIGHUP")
	write(first + ":writ\n")
	rotation.Reload("SIGHUP")
	for key, want := range map[string]Scopes{fixed: All, first: 0, second: Read | Write} {
		if _, granted := ring.Match(key); granted != want {
			t.Errorf("after a rotation and a bad file: %s granted %v, want %v", key, granted, want)
		}
	}
	for _, want := range []string{`"msg":"API keys reloaded","reason":"SIGHUP","file":"` + path + `","file_keys":1,"api_keys":2,"key_scopes":{"read":2,"write":2,"metrics":1}}`,
		`"msg":"API keys not reloaded; the keys in force stay","reason":"SIGHUP","file":"` + path + `","error":"KEYS_FILE ` + path + `: line 1 has a scope`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, &logs)
		}
	}
	for _, key := range []string{fixed, first, second} {
		if strings.Contains(logs.String(), key) {
			t.Errorf("the log holds a key")
		}
	}
}
