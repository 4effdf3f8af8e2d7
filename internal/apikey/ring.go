package apikey

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"petstore/internal/filewatch"
)

// Digest is the SHA-256 of an API key: what a Ring keeps instead of the
// key, and what names a client in logs, metrics and rate limits.
type Digest [sha256.Size]byte

// Ring holds the set of keys in force. Store replaces the whole set at
// once; a Match sees the old set or the new one, never a mix. It is safe
// for concurrent use.
type Ring struct {
	current atomic.Pointer[set]
}

// NewRing returns a ring with keys in force.
func NewRing(keys []Key) *Ring {
	r := &Ring{}
	r.Store(keys)
	return r
}

// Store puts keys in force in place of the set before.
func (r *Ring) Store(keys []Key) { r.current.Store(newSet(keys)) }

// Match returns the digest of token and the scopes the set in force
// grants it: none when it is not one of the set; those of every key when
// it is listed more than once. It compares against every key in constant
// time, so timing tells nothing about which key came close.
func (r *Ring) Match(token string) (Digest, Scopes) { return r.current.Load().match(token) }

// set is a set of accepted API keys, kept as digests, so comparisons take
// the same time whatever a key's length, each with its scopes.
type set struct {
	entries []entry
}

// entry is one accepted key of a set.
type entry struct {
	digest Digest
	scopes Scopes
}

func newSet(keys []Key) *set {
	s := &set{}
	for _, k := range keys {
		s.entries = append(s.entries, entry{digest: sha256.Sum256([]byte(k.Secret)), scopes: k.Scopes})
	}
	return s
}

// match is Ring.Match on s: an entry's scopes are masked in, or out,
// whether it matched or not.
func (s *set) match(token string) (Digest, Scopes) {
	d := Digest(sha256.Sum256([]byte(token)))
	var granted Scopes
	for i := range s.entries {
		e := &s.entries[i]
		equal := subtle.ConstantTimeCompare(d[:], e.digest[:]) // 1 or 0
		granted |= e.scopes & -Scopes(equal)
	}
	return d, granted
}

// ScopeCounts is the log attribute that says how many of keys have each
// scope (a write key counts under read too), never a key.
func ScopeCounts(keys []Key) slog.Attr {
	var counts [len(scopeNames)]int
	for _, k := range keys {
		for i, n := range scopeNames {
			if k.Scopes&n.scope != 0 {
				counts[i]++
			}
		}
	}
	attrs := make([]any, len(scopeNames))
	for i, n := range scopeNames {
		attrs[i] = slog.Int(n.name, counts[i])
	}
	return slog.Group("key_scopes", attrs...)
}

// Rotation returns the reloader of the key file into ring: on SIGHUP, and
// when the file has changed and then stayed unchanged for settle and a
// poll. The keys of the file, with fixed (those configured elsewhere,
// which stay), replace the set in force at once. A file that cannot be
// read or holds a bad key leaves the set in force and is logged with the
// file and the line. Logs give the number of keys, never a key.
func (f *File) Rotation(ring *Ring, fixed []Key, settle time.Duration, log *slog.Logger) *filewatch.Reloader {
	return &filewatch.Reloader{
		Watch:    filewatch.New([]string{f.path}, []filewatch.Version{f.seen}, settle),
		Log:      log,
		Reloaded: "API keys reloaded",
		Kept:     "API keys not reloaded; the keys in force stay",
		Load: func(data [][]byte) ([]any, error) {
			keys, err := f.parse(data[0])
			if err != nil {
				return []any{"file", f.path}, err
			}
			all := slices.Concat(fixed, keys)
			ring.Store(all)
			return []any{"file", f.path, "file_keys", len(keys), "api_keys", len(all), ScopeCounts(all)}, nil
		},
	}
}
