// Package outfile writes a command's output to a file whole or not at all.
// WriteFile writes into a temporary file beside the one named, syncs it and
// renames it over it: a failed write leaves no file, partial or empty, and
// an older file as it was. To a standard output a shell redirected to a
// file, Stdout does what it can: when the write fails it cuts the file back
// to the size it had, and removes it when the shell made it empty for the
// command.
package outfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// WriteFile calls write with a temporary file beside path and, when it
// succeeds, syncs the file (mode 0600), renames it to path and syncs the
// directory, so that the rename outlives a crash. A symbolic link at path
// is followed: the file it names is replaced, and the link stays.
func WriteFile(path string, write func(io.Writer) error) error {
	target, err := resolve(path)
	if err != nil {
		return fmt.Errorf("%w; %s was not written", err, path)
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), target)
	}
	if err != nil {
		return fmt.Errorf("%w; %s was not written", err, path)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("%s is written, but its directory could not be synced (%w): a crash of the machine may lose it", path, err)
	}
	return nil
}

// syncDir fsyncs a directory; tests replace it.
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// resolve follows the symbolic links at path, up to 40 as the kernel does,
// to the file they name, which need not exist yet.
func resolve(path string) (string, error) {
	for range 40 {
		info, err := os.Lstat(path)
		if err != nil || info.Mode()&os.ModeSymlink == 0 {
			return path, nil // a missing file is made; any other error is the write's to tell
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// Stdout calls write with stdout. When the write fails and stdout is a
// regular file, the file is cut back to the size it had before, and removed
// if that was empty, it was not opened to append to (`>> FILE` may name a
// file that was empty before), and its path can be told for sure (Linux's
// /proc/self); the error then says so. A stdout that is the same file as
// stderr (`> FILE 2>&1`) is left alone: it holds the messages that say what
// went wrong.
func Stdout(stdout, stderr io.Writer, write func(io.Writer) error) error {
	f, _ := stdout.(*os.File)
	start := int64(-1) // not a regular file, or stderr's too
	if f != nil {
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && !sameFile(info, stderr) {
			start = info.Size()
		}
	}
	err := write(stdout)
	if err == nil || start < 0 || f.Truncate(start) != nil || start > 0 {
		return err
	}
	if path, removed := removeEmpty(f); removed {
		return fmt.Errorf("%w; %s, which was empty, was removed", err, path)
	}
	return err
}

// sameFile reports whether w is a file and the file info describes.
func sameFile(info os.FileInfo, w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	other, err := f.Stat()
	return err == nil && os.SameFile(info, other)
}

// appending reports whether f was opened to append to, or it cannot be
// told (Linux's /proc/self/fdinfo).
func appending(f *os.File) bool {
	fdinfo, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", f.Fd()))
	if err != nil {
		return true
	}
	for line := range strings.Lines(string(fdinfo)) {
		if octal, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseInt(strings.TrimSpace(octal), 8, 64)
			return err != nil || flags&syscall.O_APPEND != 0
		}
	}
	return true
}

// removeEmpty removes the empty regular file f when its path can be told
// for sure and reports the path.
func removeEmpty(f *os.File) (string, bool) {
	info, err := f.Stat()
	if err != nil || info.Size() != 0 || appending(f) {
		return "", false
	}
	path, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return "", false
	}
	if named, err := os.Stat(path); err != nil || !os.SameFile(named, info) || os.Remove(path) != nil {
		return "", false
	}
	return path, true
}
