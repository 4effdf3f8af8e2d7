package main

import (
	"context"
	"log/slog"
	"os"
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
	log     *slog.Logger
	watch   *filewatch.Watch
}

// newKeyRotation reloads path into ring, whose keys were read from the
// file when it was at version seen; a change is loaded once it has stayed
// unchanged for settle and a poll.
func newKeyRotation(ring *keyring, envKeys []apiKey, path string, seen filewatch.Version, settle time.Duration, log *slog.Logger) *keyRotation {
	return &keyRotation{ring: ring, envKeys: envKeys, path: path, log: log, watch: filewatch.New([]string{path}, []filewatch.Version{seen}, settle)}
}

// Reload reads the file at once (SIGHUP) and puts its keys in force.
func (kr *keyRotation) Reload(why string) {
	data, err := kr.watch.Read()
	kr.load(why, data, err)
}

// Poll loads the file once a change has stayed put (see filewatch).
func (kr *keyRotation) Poll() {
	if data, due, err := kr.watch.Poll(time.Now()); due {
		kr.load("file changed", data, err)
	}
}

// load puts the keys of data, the file's content (or err, the reason it
// could not be read), with the environment's, in force.
func (kr *keyRotation) load(why string, data [][]byte, err error) {
	var keys []apiKey
	if err == nil {
		keys, err = parseKeyFile(kr.path, data[0])
	}
	if err != nil {
		kr.log.Error("API keys not reloaded; the keys in force stay", "reason", why, "file", kr.path, "error", err.Error())
		return
	}
	all := slices.Concat(kr.envKeys, keys)
	kr.ring.current.Store(newKeySet(all))
	kr.log.Info("API keys reloaded", "reason", why, "file", kr.path, "file_keys", len(keys), "api_keys", len(all), scopeCounts(all))
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

// reloadable is something loaded from files that SIGHUP, and a change of
// its files, put in force again: the key file, the TLS pair.
type reloadable interface {
	Reload(why string) // now
	Poll()             // once a change has stayed put (see filewatch)
}

// watchReloads reloads every one of items on every signal on hup and,
// through Poll, when its files have changed, looked at every poll
// interval, until ctx is done. With nothing to reload a signal is only
// logged. The interval is a timer set again after each look, not a
// ticker: two looks are never closer than poll, however late one ran.
func watchReloads(ctx context.Context, hup <-chan os.Signal, poll time.Duration, log *slog.Logger, items ...reloadable) {
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if len(items) == 0 {
				log.Info("SIGHUP: no PETSTORE_API_KEYS_FILE and no TLS certificate to reload; nothing changes")
			}
			for _, it := range items {
				it.Reload("SIGHUP")
			}
		case <-timer.C:
			for _, it := range items {
				it.Poll()
			}
			timer.Reset(poll)
		}
	}
}
