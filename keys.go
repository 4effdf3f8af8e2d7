package main

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"slices"
	"syscall"
	"time"
)

// keyFilePoll is how often the key file's modification is looked for. A
// change is loaded by the poll after the one that found it (see poll), so
// it is in force within about twice this.
const keyFilePoll = 2 * time.Second

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
	seen    fileVersion // of the file the ring holds
	// changed is the file as the last poll found it, when that was not
	// seen: a change not yet loaded.
	changed *fileState
}

// fileVersion tells one content of a file from the next without reading
// it: editors and `mv` replace the file (a new inode), others rewrite it.
type fileVersion struct {
	modTime int64 // nanoseconds since the epoch
	size    int64
	inode   uint64
}

func versionOf(path string) (fileVersion, error) {
	info, err := os.Stat(path)
	if err != nil {
		return fileVersion{}, err
	}
	v := fileVersion{modTime: info.ModTime().UnixNano(), size: info.Size()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		v.inode = st.Ino
	}
	return v, nil
}

// newKeyRotation reloads path into ring, whose keys were read from the
// file when it was at version seen.
func newKeyRotation(ring *keyring, envKeys []apiKey, path string, seen fileVersion, log *slog.Logger) *keyRotation {
	return &keyRotation{ring: ring, envKeys: envKeys, path: path, seen: seen, log: log}
}

// fileState is the key file as one poll found it.
type fileState struct {
	version fileVersion // zero when it could not be read
	digest  [sha256.Size]byte
}

// reload reads the file at once (SIGHUP) and puts its keys in force.
func (kr *keyRotation) reload(why string) {
	kr.changed = nil
	version, err := versionOf(kr.path)
	var data []byte
	if err == nil {
		data, err = os.ReadFile(kr.path)
	}
	kr.load(why, version, data, err)
}

// poll loads the file once a change has stayed put for a whole poll: the
// first poll that finds it changed only notes its version and content, and
// the next one, a poll interval later, loads it if it finds both the same.
// So a file being written in place is never loaded half-way, and a
// finished change is in force within about two poll intervals. A file
// rewritten with the same size and modification time is not seen (SIGHUP
// loads it).
func (kr *keyRotation) poll() {
	version, err := versionOf(kr.path)
	if err == nil && version == kr.seen || err != nil && kr.seen == (fileVersion{}) {
		kr.changed = nil // as loaded, or missing as it was
		return
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(kr.path)
	}
	now := fileState{version: version, digest: sha256.Sum256(data)}
	if err != nil {
		now = fileState{}
	}
	if kr.changed == nil || *kr.changed != now {
		kr.changed = &now
		return
	}
	kr.changed = nil
	kr.load("file changed", version, data, err)
}

// load puts the keys of data, the file's content at version (or err, the
// reason it could not be read), with the environment's, in force.
func (kr *keyRotation) load(why string, version fileVersion, data []byte, err error) {
	// Seen or not, a bad version is not tried again until it changes.
	kr.seen = version
	var keys []apiKey
	if err == nil {
		keys, err = parseKeyFile(kr.path, data)
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

// run reloads on every signal on hup and, through poll, when the file has
// changed, looked at every poll interval, until ctx is done. Without a key
// file a signal is only logged. The interval is a timer set again after
// each look, not a ticker: two looks are never closer than poll, however
// late one of them ran.
func (kr *keyRotation) run(ctx context.Context, hup <-chan os.Signal, poll time.Duration) {
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if kr.path == "" {
				kr.log.Info("SIGHUP: no PETSTORE_API_KEYS_FILE to reload; the keys stay as they are")
				continue
			}
			kr.reload("SIGHUP")
		case <-timer.C:
			if kr.path != "" {
				kr.poll()
			}
			timer.Reset(poll)
		}
	}
}
