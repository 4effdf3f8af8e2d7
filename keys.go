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
// it is in force within about twice this. The TLS pair is watched alike.
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
	watch   *fileWatch
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
	return &keyRotation{ring: ring, envKeys: envKeys, path: path, log: log, watch: newFileWatch([]string{path}, []fileVersion{seen})}
}

// reload reads the file at once (SIGHUP) and puts its keys in force.
func (kr *keyRotation) reload(why string) {
	data, err := kr.watch.read()
	kr.load(why, data, err)
}

// poll loads the file once a change has stayed put (see fileWatch.poll).
func (kr *keyRotation) poll() {
	if data, due, err := kr.watch.poll(); due {
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

// fileWatch tells when a set of files has changed and then stayed
// unchanged for a whole poll interval, the rule that keeps a file being
// written in place from being loaded half-way (docs/security.md,
// "Hardening II"). The key file is one set; the TLS certificate and its
// key are another, read and loaded together. It is used by one goroutine.
type fileWatch struct {
	paths []string
	seen  []fileVersion // of the files as last loaded; nil when they could not be read
	// changed is the files as the last poll found them, when that was not
	// seen: a change not yet loaded.
	changed *watchState
}

// watchState is the files as one poll found them.
type watchState struct {
	versions []fileVersion // nil when they could not be read
	digest   [sha256.Size]byte
}

// newFileWatch watches paths, whose contents in force were read when they
// were at versions seen.
func newFileWatch(paths []string, seen []fileVersion) *fileWatch {
	return &fileWatch{paths: paths, seen: seen}
}

// look returns the versions of the files, without reading them.
func (w *fileWatch) look() ([]fileVersion, error) {
	versions := make([]fileVersion, len(w.paths))
	for i, p := range w.paths {
		v, err := versionOf(p)
		if err != nil {
			return nil, err
		}
		versions[i] = v
	}
	return versions, nil
}

// contents returns the versions of the files, then their contents: a
// change in between is seen by the next poll, never missed.
func (w *fileWatch) contents() ([]fileVersion, [][]byte, error) {
	versions, err := w.look()
	if err != nil {
		return nil, nil, err
	}
	data := make([][]byte, len(w.paths))
	for i, p := range w.paths {
		if data[i], err = os.ReadFile(p); err != nil {
			return nil, nil, err
		}
	}
	return versions, data, nil
}

// read reads the files at once (SIGHUP), and takes what it read as seen:
// a bad version is not tried again by poll until it changes.
func (w *fileWatch) read() ([][]byte, error) {
	w.changed = nil
	versions, data, err := w.contents()
	w.seen = versions
	return data, err
}

// poll reports a change due to be loaded once it has stayed put for a
// whole poll: the first poll that finds the files changed only notes
// their versions and content, and the next one, a poll interval later,
// returns them (due) if it finds both the same. So a file being written
// in place is never loaded half-way, and a finished change is due within
// about two poll intervals. A file rewritten with the same size and
// modification time is not seen (SIGHUP loads it).
func (w *fileWatch) poll() (data [][]byte, due bool, err error) {
	versions, err := w.look()
	if err == nil && slices.Equal(versions, w.seen) || err != nil && w.seen == nil {
		w.changed = nil // as loaded, or unreadable as it was
		return nil, false, nil
	}
	if err == nil {
		versions, data, err = w.contents()
	}
	now := watchState{versions: versions}
	if err == nil {
		h := sha256.New()
		for _, d := range data {
			h.Write(d)
			h.Write([]byte{0}) // "ab"+"c" is not "a"+"bc"
		}
		h.Sum(now.digest[:0])
	} else {
		now = watchState{}
	}
	if w.changed == nil || !slices.Equal(w.changed.versions, now.versions) || w.changed.digest != now.digest {
		w.changed = &now
		return nil, false, nil
	}
	w.changed = nil
	w.seen = versions
	return data, true, err
}

// reloadable is something loaded from files that SIGHUP, and a change of
// its files, put in force again: the key file, the TLS pair.
type reloadable interface {
	reload(why string) // now
	poll()             // once a change has stayed put (see fileWatch)
}

// watchReloads reloads every one of items on every signal on hup and,
// through poll, when its files have changed, looked at every poll
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
				it.reload("SIGHUP")
			}
		case <-timer.C:
			for _, it := range items {
				it.poll()
			}
			timer.Reset(poll)
		}
	}
}
