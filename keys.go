package main

import (
	"log/slog"
	"petstore/internal/filewatch"
	"slices"
	"time"
)

// How files are watched for changes (internal/filewatch): looked at every
// keyFilePoll, and a change loaded once it has stayed unchanged for
// fileSettle and one poll, so a finished change is in force within about
// three polls (docs/operations.md, "Key rotation"). The TLS pair is
// watched alike.
const (
	keyFilePoll = 2 * time.Second
	fileSettle  = 2 * time.Second
)

// keyRotation reloads the key file (PETSTORE_API_KEYS_FILE) into a keyring:
// on SIGHUP and when the file has changed and then stayed unchanged for
// one poll interval. The new set replaces the old one at once; keys from
// PETSTORE_API_KEYS stay. A file that cannot be read or holds a bad key
// leaves the old set in force and is logged with the file and the line.
// Logs give the number of keys, never a key.
type keyRotation struct {
	ring    *keyring
	envKeys []apiKey
	path    string
}

// newKeyRotation returns the reloader of path into ring, whose keys were
// read from the file when it was at version seen; a change is loaded once
// it has stayed unchanged for settle and a poll.
func newKeyRotation(ring *keyring, envKeys []apiKey, path string, seen filewatch.Version, settle time.Duration, log *slog.Logger) *filewatch.Reloader {
	kr := &keyRotation{ring: ring, envKeys: envKeys, path: path}
	return &filewatch.Reloader{
		Watch:    filewatch.New([]string{path}, []filewatch.Version{seen}, settle),
		Log:      log,
		Reloaded: "API keys reloaded",
		Kept:     "API keys not reloaded; the keys in force stay",
		Load:     kr.load,
	}
}

// load puts the keys of data, the file's content, with the environment's,
// in force.
func (kr *keyRotation) load(data [][]byte) ([]any, error) {
	keys, err := parseKeyFile(kr.path, data[0])
	if err != nil {
		return []any{"file", kr.path}, err
	}
	all := slices.Concat(kr.envKeys, keys)
	kr.ring.current.Store(newKeySet(all))
	return []any{"file", kr.path, "file_keys", len(keys), "api_keys", len(all), scopeCounts(all)}, nil
}

// scopeCounts is the log attribute that says how many keys have each scope
// (a write key counts under read too), never a key.
func scopeCounts(keys []apiKey) slog.Attr {
	var counts [len(scopeNames)]int
	for _, k := range keys {
		for i, n := range scopeNames {
			if k.scopes&n.scope != 0 {
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
