package store

import (
	"fmt"
	"strings"

	"petstore/internal/textcut"
)

// MemoryPath is the data path that keeps data in memory only.
const MemoryPath = ":memory:"

// CheckDataPath refuses a data path that looks like a mistyped URL or
// MemoryPath rather than a file name: taken for one, it would quietly
// start an empty journal (and its directories) where nobody looks for it.
// Its errors quote the path without any user:password@ in it.
func CheckDataPath(data string) error {
	const want = "a journal file, :memory: or etcd://HOST:PORT[,HOST:PORT…][/PREFIX] (etcds:// for TLS)"
	if IsEtcdURL(data) || data == MemoryPath {
		return nil
	}
	shown := textcut.Truncate(withoutUserinfo(data), 80) // a mistyped URL may carry a password
	if strings.Contains(data, "://") {
		scheme, _, _ := strings.Cut(shown, "://")
		return fmt.Errorf("%q is a URL of scheme %q, which petstore does not speak; want %s", shown, textcut.Truncate(scheme, 40), want)
	}
	if strings.HasPrefix(data, "etcd:") || strings.HasPrefix(data, "etcds:") {
		return fmt.Errorf("%q lacks the // of an etcd URL; want %s", shown, want)
	}
	if strings.HasPrefix(data, ":") {
		return fmt.Errorf("%q is not :memory: (a file name starting with : is taken for a typo); want %s", shown, want)
	}
	return nil
}

// withoutUserinfo returns data, a URL or something like one, without the
// user:password@ before its host, so that an error can quote the rest
// without showing a password.
func withoutUserinfo(data string) string {
	scheme, rest, ok := strings.Cut(data, ":")
	if !ok {
		return data
	}
	// However many slashes a typo has: etcd:/user:pw@host too.
	trimmed := strings.TrimLeft(rest, "/")
	slashes := rest[:len(rest)-len(trimmed)]
	rest = trimmed
	authority := rest
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		authority = rest[:end]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return data
	}
	return scheme + ":" + slashes + rest[at+1:]
}
