// Package apikey holds the API keys petstore accepts: each a secret and
// the scopes it grants (docs/api.md, "Authentication"); how keys are
// written, in a comma-separated list or a key file, one a line; and the
// Ring, the set in force, which a key file's Rotation replaces whole.
//
// It promises that a Ring keeps digests, not keys, and matches a token
// against every key in constant time; that a set is replaced at once, so
// a request sees the old set or the new one, never a mix; and that no
// error or log line of this package quotes a key: a bad entry is named by
// its position, a key file by its path, a set by how many keys of each
// scope it holds.
package apikey

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"petstore/internal/ascii"
	"petstore/internal/filewatch"
)

// Scopes is a set of key scopes, one bit each: what an accepted key may
// do. Every accepted key has at least one, so no scopes at all means no
// key matched.
type Scopes uint8

const (
	Read    Scopes = 1 << iota // GET and HEAD of the /v1 API
	Write                      // creates; a key with it has Read too
	Metrics                    // GET /metrics

	All = Read | Write | Metrics // a key written without scopes
)

// scopeNames names each scope as keys are written with it (KEY:read+metrics),
// in the order logs and messages list them.
var scopeNames = [...]struct {
	name  string
	scope Scopes
}{{"read", Read}, {"write", Write}, {"metrics", Metrics}}

// String returns the names of the scopes in s, joined by "+".
func (s Scopes) String() string {
	var names []string
	for _, n := range scopeNames {
		if s&n.scope != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, "+")
}

// Key is an accepted API key and its scopes, as configured.
type Key struct {
	Secret string // never logged
	Scopes Scopes
}

// AllScopes returns a Key of every secret, each with every scope, as keys
// written without scopes have.
func AllScopes(secrets ...string) []Key {
	out := make([]Key, len(secrets))
	for i, s := range secrets {
		out[i] = Key{Secret: s, Scopes: All}
	}
	return out
}

// Generate makes a random key with every scope: 32 bytes, base64url
// without padding.
func Generate() (Key, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Key{}, fmt.Errorf("generating an API key: %w", err)
	}
	return Key{Secret: base64.RawURLEncoding.EncodeToString(b[:]), Scopes: All}, nil
}

// MinLength is the shortest key accepted: 16 random characters of the
// bearer alphabet are over 90 bits, beyond reach of trying keys against
// the service, where a 4-character key falls in minutes.
const MinLength = 16

// tokenChars may form an API key: RFC 6750 b64token, less its trailing "="
// (see IsToken).
var tokenChars = ascii.SetOf(ascii.Letters, ascii.Digits, "-._~+/")

// IsToken reports whether s can be sent as a bearer token: an RFC 6750
// b64token, letters, digits and -._~+/, then any number of "=".
func IsToken(s string) bool {
	body := strings.TrimRight(s, "=")
	return body != "" && tokenChars.All(body)
}

// ParseList reads the keys of list, separated by commas, each KEY or
// KEY:SCOPE[+SCOPE…] (docs/operations.md, "Key scopes"). Its errors start
// with variable, the name of the variable that holds the list, and name a
// bad key by its position.
func ParseList(variable, list string) ([]Key, error) {
	return parseEntries(variable, "key", strings.Split(list, ","))
}

// parseEntries reads the keys of raw, each KEY or KEY:SCOPE[+SCOPE…]: it
// trims them, drops blank ones, and checks that each key can be sent as a
// bearer token, is at least MinLength characters long, and has known
// scopes, each once. It reports a bad entry by its position, counted in
// units ("key" in a list, "line" in a file), never by its text.
func parseEntries(source, unit string, raw []string) ([]Key, error) {
	var keys []Key
	for i, entry := range raw {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, problem := parseEntry(entry)
		if problem != "" {
			return nil, fmt.Errorf("%s: %s %d %s", source, unit, i+1, problem)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s is set but holds no key", source)
	}
	return keys, nil
}

// parseEntry reads one configured key, KEY or KEY:SCOPE[+SCOPE…]; a key
// cannot hold a colon, so the first one starts the scopes. Its problem
// completes a sentence about the entry ("key 2 …") and never quotes the
// entry: what stands where a scope should could be part of a key.
func parseEntry(entry string) (Key, string) {
	secret, written, scoped := strings.Cut(entry, ":")
	switch {
	case secret == "":
		return Key{}, "has scopes but no key before the colon"
	case !IsToken(secret):
		return Key{}, "has characters an API key cannot hold (allowed: letters, digits and -._~+/ with = at the end; a colon starts the scopes)"
	case len(secret) < MinLength:
		return Key{}, fmt.Sprintf("is shorter than %d characters, too short to withstand guessing", MinLength)
	case !scoped:
		return Key{Secret: secret, Scopes: All}, ""
	}
	granted, problem := parseScopes(written)
	return Key{Secret: secret, Scopes: granted}, problem
}

// parseScopes reads the scopes after a key's colon: names joined by "+",
// lower case exactly, each at most once. write brings read with it.
func parseScopes(written string) (Scopes, string) {
	var granted Scopes
	for name := range strings.SplitSeq(written, "+") {
		scope := scopeNamed(name)
		switch {
		case name == "":
			return 0, "has an empty scope (write KEY:read, KEY:write+metrics, or the key alone for every scope)"
		case scope == 0:
			return 0, "has a scope that is none of read, write and metrics (scope names are lower case)"
		case granted&scope != 0:
			return 0, fmt.Sprintf("names the scope %q twice", name)
		}
		granted |= scope
	}
	if granted&Write != 0 {
		granted |= Read
	}
	return granted, ""
}

// scopeNamed returns the scope called name, or none.
func scopeNamed(name string) Scopes {
	for _, n := range scopeNames {
		if n.name == name {
			return n.scope
		}
	}
	return 0
}

// File is a key file as read at start: one key a line, blank lines and #
// comments skipped. Its Rotation reads it again.
type File struct {
	variable, path string
	seen           filewatch.Version // of the file, as it was before it was read
}

// ReadFile reads the key file path, which variable names: errors start
// with the name of the variable and the path.
func ReadFile(variable, path string) (*File, []Key, error) {
	f := &File{variable: variable, path: path}
	// Its version is taken before it is read: a change in between is then
	// seen by the Rotation's first poll, never missed.
	f.seen, _ = filewatch.VersionOf(path)
	data, err := filewatch.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", variable, err)
	}
	keys, err := f.parse(data)
	if err != nil {
		return nil, nil, err
	}
	return f, keys, nil
}

// parse reads the keys of data, the content of the file.
func (f *File) parse(data []byte) ([]Key, error) {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			line = ""
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", f.variable, f.path, err)
	}
	return parseEntries(f.variable+" "+f.path, "line", lines)
}
