// Package filewatch reads small configuration files (API keys, a TLS
// certificate and its key) whole, up to MaxBytes, and tells when a set of
// them has changed and then stayed unchanged long enough to be loaded, so
// that a file being written in place is not loaded half-way.
//
// A Watch is polled (Poll) by one goroutine; Read reads the files at once,
// as SIGHUP asks. A change is due once a poll finds the files exactly as
// the poll before found them (the same versions and the same content) and
// their last modification was at least the Watch's settle time before that
// earlier poll: the files have then stayed unchanged for the settle time
// and one poll interval at least. A file whose modification time cannot be
// trusted (in the future) is due after settleAfterPolls polls alike.
//
// A Reloader puts what a Watch's files configure in force again through a
// load function of its owner's, and logs the outcome, "reloaded" or the
// one in force kept; Serve drives Reloaders on SIGHUP and every poll
// interval. So the read-and-poll sequence of every reloaded file is
// written once, here.
package filewatch

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"time"
)

// MaxBytes bounds what a file is read whole up to: a larger one is refused
// like a bad one (ErrTooLarge), rather than read into memory.
const MaxBytes = 1 << 20

// ErrTooLarge: the file holds more than MaxBytes.
var ErrTooLarge = fmt.Errorf("it holds more than %d bytes, more than such a file ever needs", MaxBytes)

// ReadFile reads the file at path, at most MaxBytes of it: a larger file is
// an *os.PathError matching ErrTooLarge.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if len(data) > MaxBytes {
		return nil, &os.PathError{Op: "read", Path: path, Err: ErrTooLarge}
	}
	return data, nil
}

// Version tells one content of a file from the next without reading it:
// editors and `mv` replace the file (a new inode), others rewrite it.
type Version struct {
	modTime int64 // nanoseconds since the epoch
	size    int64
	inode   uint64
}

// VersionOf returns the version of the file at path.
func VersionOf(path string) (Version, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Version{}, err
	}
	v := Version{modTime: info.ModTime().UnixNano(), size: info.Size()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		v.inode = st.Ino
	}
	return v, nil
}

// settleAfterPolls: a change found the same by this many polls in a row is
// due whatever the files' modification times say.
const settleAfterPolls = 4

// Watch watches a set of files loaded together.
type Watch struct {
	paths  []string
	settle time.Duration
	seen   []Version // of the files as last loaded; nil when they could not be read
	// changed is the files as the last poll found them, when that was
	// not seen: a change not yet loaded.
	changed *sighting
}

// sighting is the files as polls found them.
type sighting struct {
	versions []Version // nil when they could not be read
	digest   [sha256.Size]byte
	at       time.Time // the last poll that found them
	polls    int       // the polls in a row that found them
}

// New watches paths, whose contents in force were read when they were at
// versions seen (nil: none read yet). A change must have stayed unchanged
// for settle before the poll that finds it again.
func New(paths []string, seen []Version, settle time.Duration) *Watch {
	return &Watch{paths: paths, seen: seen, settle: settle}
}

// Seen returns the versions of the files as last read.
func (w *Watch) Seen() []Version { return w.seen }

// look returns the versions of the files, without reading them.
func (w *Watch) look() ([]Version, error) {
	versions := make([]Version, len(w.paths))
	for i, p := range w.paths {
		v, err := VersionOf(p)
		if err != nil {
			return nil, err
		}
		versions[i] = v
	}
	return versions, nil
}

// contents returns the versions of the files, then their contents: a
// change in between is seen by the next poll, never missed.
func (w *Watch) contents() ([]Version, [][]byte, error) {
	versions, err := w.look()
	if err != nil {
		return nil, nil, err
	}
	data := make([][]byte, len(w.paths))
	for i, p := range w.paths {
		if data[i], err = ReadFile(p); err != nil {
			return nil, nil, err
		}
	}
	return versions, data, nil
}

// Read reads the files at once (SIGHUP), and takes what it read as seen:
// a bad version is not tried again by Poll until it changes.
func (w *Watch) Read() ([][]byte, error) {
	w.changed = nil
	versions, data, err := w.contents()
	w.seen = versions
	return data, err
}

// Poll looks at the files at time now and reports a change due to be
// loaded (see the package comment), with the files' contents, or why they
// could not be read. A file rewritten with the same size and modification
// time is not seen (SIGHUP loads it).
func (w *Watch) Poll(now time.Time) (data [][]byte, due bool, err error) {
	versions, err := w.look()
	if err == nil && slices.Equal(versions, w.seen) || err != nil && w.seen == nil {
		w.changed = nil // as loaded, or unreadable as it was
		return nil, false, nil
	}
	if err == nil {
		versions, data, err = w.contents()
	}
	found := sighting{versions: versions, at: now, polls: 1}
	if err == nil {
		found.digest = digest(data)
	} else {
		found.versions = nil
	}
	last := w.changed
	if last == nil || !slices.Equal(last.versions, found.versions) || last.digest != found.digest {
		w.changed = &found
		return nil, false, nil
	}
	last.polls++
	if !last.settled(w.settle) {
		last.at = now // the next poll asks again of this one
		return nil, false, nil
	}
	w.changed = nil
	w.seen = versions
	return data, true, err
}

// settled reports whether the files s found had stayed unchanged for
// settle at the last poll that found them, or for settleAfterPolls polls.
func (s *sighting) settled(settle time.Duration) bool {
	var newest int64
	for _, v := range s.versions {
		newest = max(newest, v.modTime)
	}
	return s.at.UnixNano()-newest >= int64(settle) || s.polls >= settleAfterPolls
}

// digest tells contents apart: "ab"+"c" is not "a"+"bc".
func digest(data [][]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, d := range data {
		h.Write(d)
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
