// Package journal keeps an append-only file of lines, locked against a
// second process. It knows nothing of what the lines say: its caller
// parses them (replay hands each one to a callback) and writes them whole.
//
// The file starts with a header line that names the format and its
// version; every later line is the caller's. Lines are only ever added
// after the last one, so a copy made while the service runs holds a
// consistent prefix. Append returns once its lines are durable
// (fdatasync, over space written ahead as zeros; see reserve). A write
// that a crash cut short is recognised at the next open, set aside in
// path+".torn" and cut off; damage anywhere else refuses the file with
// its line number, and the file is left as it is. The format is described
// in docs/data.md, "Journal format".
package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// MaxAppendLines bounds the lines of one Append. Recognising a torn write
// relies on it: only the lines of the last Append can have been cut short
// (see isTorn).
const MaxAppendLines = 1024

var (
	// ErrBroken is returned by Append once a sync failed or a failed write
	// could not be undone: the kernel may have dropped pages it could not
	// write, or the file may hold lines that were never acknowledged, so
	// nothing more is appended until it is opened again.
	ErrBroken = errors.New("journal is broken")

	// ErrNotUndone is returned, with ErrBroken, by the Append whose failure
	// could not be undone: the file may hold its lines, wholly or in part,
	// and the next Open may replay them. Whether they were stored is not
	// known.
	ErrNotUndone = errors.New("the failed append could not be undone; its lines may be in the file")
)

// Options configure Open.
type Options struct {
	// ReadOnly opens the file to read it only: no torn end cut off, no
	// header written or rewritten, no append.
	ReadOnly bool
	// Log receives the warnings of replay (a torn end dropped, a header
	// rewritten); nil discards them.
	Log *slog.Logger
	// Size, when set, is told once before the first line is applied how
	// many lines and bytes the file holds (the header included), so that
	// what apply builds can be sized once.
	Size func(lines, bytes int)
}

// File is an open, locked journal. One goroutine at a time may append to
// it.
type File struct {
	f        *os.File
	path     string
	readOnly bool
	size     int64 // length of the good, synced lines: where the next ones go
	broken   bool  // a failed write could not be undone: nothing more may be appended
	syncs    int   // syncs of appends, for tests

	// end is the file's length: size, then zero bytes written and synced
	// ahead (see reserve). zeroFill writes them (tests fail it); after a
	// failure it is not tried again before the lines reach nextFill.
	end      int64
	nextFill int64
	zeroFill func(f *os.File, from, to int64) error
	// syncLines makes appended lines durable: datasync (tests fail it).
	syncLines func(f *os.File) error
}

// reserveAhead is how much space the journal writes ahead of its lines: one
// zero fill and fsync per this many bytes of lines.
const reserveAhead = 1 << 20

// Open opens and locks the journal at path, creating it (and its
// directories, made durable) if needed, and replays it: apply is called
// with each line after the header, in order, without its newline; line is
// valid only during the call. An error from apply refuses the file, with
// the line's number, unless the line is part of a torn end. A new file
// gets the header of Version; an older header is rewritten to Version.
// A second process opening the same path fails.
func Open(path string, apply func(line []byte) error, opts Options) (*File, error) {
	return open(path, apply, opts, syncDir)
}

// open is Open with the function that syncs a directory (tests watch it).
func open(path string, apply func(line []byte) error, opts Options, syncDir func(dir string) error) (*File, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	f, data, err := lockAndRead(path, syncDir, opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	if err := f.replay(data, apply, opts); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Path returns the path the journal was opened at.
func (f *File) Path() string { return f.path }

// Append writes lines (whole lines, each ending in '\n', at most
// MaxAppendLines of them) after the last line and makes them durable. If
// that fails it cuts the file back to its last good length, durably, and
// the lines are not stored. If the sync itself failed (the kernel may have
// dropped the data it reported lost), the journal takes no more writes:
// the error (this one and every later one) matches ErrBroken. If even the
// cut fails, the lines may be in the file: the error matches ErrNotUndone
// too.
func (f *File) Append(lines []byte) error {
	if f.broken {
		return ErrBroken
	}
	n := int64(len(lines))
	f.reserve(n)
	_, err := f.f.WriteAt(lines, f.size)
	if err == nil {
		// fdatasync writes the metadata that reading the lines back
		// needs, and only that: over the zeros reserved ahead, none.
		if err = f.syncLines(f.f); err != nil {
			f.broken = true
		}
	}
	if err == nil {
		f.size += n
		f.end = max(f.end, f.size)
		f.syncs++
		return nil
	}
	err = fmt.Errorf("appending to %s: %w", f.path, err)
	// The cut must be durable too: a crash before the next sync could
	// otherwise bring back lines that were refused, whose places later
	// lines take. It drops the zeros ahead as well.
	f.end, f.nextFill = f.size, 0
	if uerr := f.undo(); uerr != nil {
		f.broken = true
		return brokenError{fmt.Errorf("%w; cutting it back failed: %w", err, uerr), ErrNotUndone}
	}
	if f.broken {
		return brokenError{err, nil}
	}
	return err
}

// undo cuts the file back to its last good line and syncs the cut.
func (f *File) undo() error {
	if err := f.f.Truncate(f.size); err != nil {
		return err
	}
	return f.f.Sync()
}

// brokenError is the error of the append that broke the journal: its own
// text, and ErrBroken to match (and ErrNotUndone, when set).
type brokenError struct{ err, notUndone error }

func (e brokenError) Error() string { return e.err.Error() }
func (e brokenError) Unwrap() []error {
	if e.notUndone != nil {
		return []error{e.err, ErrBroken, e.notUndone}
	}
	return []error{e.err, ErrBroken}
}

// reserve makes sure the file holds n more bytes after its last line,
// synced, by writing reserveAhead zero bytes more at a time.
//
// A line written over such zeros needs only fdatasync: the file's length
// and its blocks are on disk already, so no metadata has to follow the
// data. A line that lengthens the file makes its sync write the inode
// too, and a line that reaches blocks given ahead but never written
// (fallocate) makes it write their conversion. With a few dozen bytes per
// line that is most of what a write costs (see docs/performance.md,
// "Design notes"). Where the zeros cannot be written (a full disk) the
// journal goes without: lines lengthen the file, and fdatasync writes its
// new length too. The next try is reserveAhead bytes later, and the write
// itself reports what matters.
func (f *File) reserve(n int64) {
	if f.size+n <= f.end || f.size+n <= f.nextFill {
		return
	}
	to := f.size + n + reserveAhead
	if err := f.zeroFill(f.f, f.end, to); err != nil {
		_ = f.f.Truncate(f.end) // give back what part was written
	} else {
		f.end = to
	}
	f.nextFill = to
}

// zeros is what zeroFill writes from; it is never written to.
var zeros [64 << 10]byte

// zeroFill writes zero bytes from byte from to byte to of f, and fsyncs f.
func zeroFill(f *os.File, from, to int64) error {
	for at := from; at < to; {
		n := min(to-at, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:n], at); err != nil {
			return err
		}
		at += n
	}
	return f.Sync()
}

// Close releases the lock and closes the file, cutting off the zeros
// reserved ahead of its last line: a journal closed cleanly holds its
// lines and nothing else.
func (f *File) Close() error {
	// end is set once the journal opened: one that did not is left as it
	// is. The file's own length is asked, not end: a fill that failed may
	// have left zeros past end that it could not cut.
	if !f.readOnly && !f.broken && f.end > 0 {
		info, err := f.f.Stat()
		if err == nil && info.Size() != f.size {
			if err = f.f.Truncate(f.size); err == nil {
				err = f.f.Sync()
			}
		}
		if err != nil {
			f.f.Close()
			return fmt.Errorf("cutting the space reserved at the end of %s: %w", f.path, err)
		}
	}
	return f.f.Close()
}

// refuseSymlink explains the error of an open with O_NOFOLLOW that met a
// symbolic link (ELOOP, which alone says "too many levels of symbolic
// links"); other errors are returned as they are.
func refuseSymlink(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		if info, lerr := os.Lstat(path); lerr == nil && info.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link; petstore opens its files only where they are named, never through a link", path)
		}
	}
	return err
}

// syncDir fsyncs the directory dir, making the names in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// makeDirs creates dir and its missing parents, and fsyncs each one it
// creates into its parent: os.MkdirAll syncs nothing, and a crash could
// otherwise lose a directory, and with it the journal and every line
// acknowledged in it.
func makeDirs(dir string, syncDir func(dir string) error) error {
	var missing []string // deepest first
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		// One made meanwhile by another process is synced all the same.
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}
