//go:build !linux

package journal

import "os"

// datasync is fdatasync on Linux; elsewhere it is fsync (which on macOS is
// F_FULLFSYNC in Go's os package).
func datasync(f *os.File) error { return f.Sync() }
