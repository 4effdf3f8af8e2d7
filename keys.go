package main

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"syscall"
	"time"
)

// keyFilePoll is how often the key file's modification is looked for;
// decisions.md asks for at least every 5 s.
const keyFilePoll = 2 * time.Second

// keyRotation reloads the key file (PETSTORE_API_KEYS_FILE) into a keyring:
// on SIGHUP and when the file changes. The new set replaces the old one at
// once; keys from PETSTORE_API_KEYS stay. A file that cannot be read or
// holds a bad key leaves the old set in force and is logged with the file
// and the line. Logs give the number of keys, never a key.
type keyRotation struct {
	ring    *keyring
	envKeys []string
	path    string
	log     *slog.Logger
	seen    fileVersion // of the file the ring holds
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
func newKeyRotation(ring *keyring, envKeys []string, path string, seen fileVersion, log *slog.Logger) *keyRotation {
	return &keyRotation{ring: ring, envKeys: envKeys, path: path, seen: seen, log: log}
}

// reload reads the file and puts its keys, with the environment's, in force.
func (kr *keyRotation) reload(why string) {
	version, err := versionOf(kr.path)
	if err == nil {
		var keys []string
		if keys, err = readKeyFile(kr.path); err == nil {
			kr.seen = version
			kr.ring.current.Store(newKeySet(slices.Concat(kr.envKeys, keys)))
			kr.log.Info("API keys reloaded", "reason", why, "file", kr.path, "file_keys", len(keys), "api_keys", len(kr.envKeys)+len(keys))
			return
		}
	}
	// Seen or not, a bad version is not tried again until it changes.
	kr.seen = version
	kr.log.Error("API keys not reloaded; the keys in force stay", "reason", why, "file", kr.path, "error", err.Error())
}

// run reloads on every signal on hup and whenever the file has changed,
// looked at every poll, until ctx is done. Without a key file a signal is
// only logged.
func (kr *keyRotation) run(ctx context.Context, hup <-chan os.Signal, poll time.Duration) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
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
		case <-tick.C:
			if kr.path == "" {
				continue
			}
			if v, err := versionOf(kr.path); err != nil || v != kr.seen {
				if err == nil || kr.seen != (fileVersion{}) {
					kr.reload("file changed")
				}
			}
		}
	}
}
