package journal

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// replay hands data's lines to apply, sets a torn end aside (see isTorn),
// then writes the header of a new file or rewrites an older one.
func (f *File) replay(data []byte, apply func(line []byte) error, opts Options) error {
	// Zeros at the end are space reserved ahead (version 4), not lines.
	// Lines never hold a zero byte: one in the last append's lines is a
	// write a crash cut short (see isTorn), anywhere else damage.
	fileLen := int64(len(data))
	data = bytes.TrimRight(data, "\x00")
	if opts.Size != nil {
		opts.Size(bytes.Count(data, []byte{'\n'}), len(data))
	}
	hdr, torn, err := f.replayLines(data, apply)
	if err != nil {
		return err
	}
	if torn.at >= 0 {
		if f.readOnly {
			opts.Log.Warn("journal: a torn end (the last write, cut short by a crash) is left out; the file is left as it is", "path", f.path, "line", torn.lineNo)
		} else {
			if err := f.dropTornTail(data[torn.at:], int64(torn.at), torn.lineNo, opts.Log); err != nil {
				return err
			}
			fileLen = int64(torn.at)
		}
	}
	if err := f.finishHeader(hdr, opts.Log); err != nil {
		return err
	}
	// Known only now: a journal that fails to open is closed as it is,
	// its zeros left.
	f.end = max(f.end, fileLen)
	return nil
}

// tornEnd is where replayLines found a torn end: its offset (-1 when
// there is none) and line number.
type tornEnd struct{ at, lineNo int }

// replayLines checks the header line and hands every later line to apply,
// advancing f.size past each good one. It stops at a torn end, which it
// returns, or at damage, with an error that names the line.
func (f *File) replayLines(data []byte, apply func(line []byte) error) (header, tornEnd, error) {
	var hdr header
	lineNo, offset := 0, 0
	for offset < len(data) {
		lineNo++
		line, rest, complete := bytes.Cut(data[offset:], []byte{'\n'})
		var err error
		switch {
		case !complete && isTorn(line, complete, lineNo, nil):
			// Even a line that applies is dropped without its newline: its
			// write never finished, so it was never acknowledged.
			err = errors.New("torn")
		case lineNo == 1 && !complete:
			err = errors.New("the header line does not end with a newline, and is not a header petstore wrote cut short")
		case lineNo == 1:
			hdr, err = checkHeader(line)
		default:
			err = apply(line)
		}
		if err != nil {
			if !isTorn(line, complete, lineNo, rest) {
				return hdr, tornEnd{}, f.refusal(lineNo, err)
			}
			return hdr, tornEnd{at: offset, lineNo: lineNo}, nil
		}
		offset += len(line) + 1
		f.size = int64(offset)
	}
	return hdr, tornEnd{at: -1}, nil
}

// refusal is the error of a line that stops the replay.
func (f *File) refusal(lineNo int, err error) error {
	if lineNo == 1 { // a header refused is not damage: say only what is wrong
		return fmt.Errorf("%s:1: %v; the file was left as it is", f.path, err)
	}
	return fmt.Errorf("%s:%d: %v; the file is damaged and was left as it is: repair or restore it", f.path, lineNo, err)
}

// isTorn reports whether a line that failed to parse, followed by rest, is
// what a crash leaves when it cuts the last write short: the last line
// without its newline; or a line of the last append with zeros where data
// was due. Lines are written over zeros in one write per append, and a
// crash can keep a later page of that write but not an earlier one (and
// a copy made meanwhile can read them so): acknowledged lines never hold a
// zero byte, so the line that holds one and every line after it were
// never acknowledged, as long as no more than MaxAppendLines follow it. A
// first line must also be a prefix of a header some petstore wrote (of
// any version this one reads), so a file that is not a journal is never
// cut.
func isTorn(line []byte, complete bool, lineNo int, rest []byte) bool {
	if lineNo == 1 {
		if complete {
			return false
		}
		for v := 1; v <= Version; v++ {
			if strings.HasPrefix(Header(v), string(line)) {
				return true
			}
		}
		return false
	}
	if !complete {
		return true // the last line: nothing follows it
	}
	return bytes.IndexByte(line, 0) >= 0 && bytes.Count(rest, []byte{'\n'}) < MaxAppendLines
}

// dropTornTail sets aside tail, the torn end that starts at offset, in
// path+".torn", then truncates the journal to offset.
func (f *File) dropTornTail(tail []byte, offset int64, lineNo int, log *slog.Logger) error {
	tornPath := f.path + ".torn"
	_, statErr := os.Stat(tornPath)
	tf, err := os.OpenFile(tornPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return refuseSymlink(tornPath, err)
	}
	_, err = tf.Write(tail)
	if err == nil {
		err = tf.Sync()
	}
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err == nil && errors.Is(statErr, os.ErrNotExist) {
		err = syncDir(filepath.Dir(tornPath)) // its name, too, before the journal is cut
	}
	if err != nil {
		return fmt.Errorf("saving the torn end of %s: %w", f.path, err)
	}
	if err := f.f.Truncate(offset); err != nil {
		return err
	}
	if err := f.f.Sync(); err != nil {
		return err
	}
	log.Warn("journal: dropped a torn last line, left by a write that a crash cut short; it was never acknowledged",
		"path", f.path, "line", lineNo, "bytes", len(tail), "saved_to", tornPath)
	f.size = offset
	return nil
}

// finishHeader writes the header of a journal that has none (a new file,
// or one whose header was torn), or rewrites an older one to Version.
// A journal opened to read only is left as it is.
func (f *File) finishHeader(hdr header, log *slog.Logger) error {
	switch {
	case f.readOnly:
		return nil
	case f.size == 0:
		// Any zeros the file holds are written over from 0.
		if err := f.Append([]byte(currentHeader + "\n")); err != nil {
			return fmt.Errorf("writing the header of %s: %w", f.path, err)
		}
	case hdr.version < Version:
		if err := f.upgradeHeader(hdr); err != nil {
			return fmt.Errorf("rewriting the header of %s to version %d: %w", f.path, Version, err)
		}
		log.Info("journal: header rewritten to the format version this petstore writes; an older petstore no longer reads this file",
			"path", f.path, "from", hdr.version, "to", Version)
	}
	return nil
}

// upgradeHeader rewrites the version of an older header to Version, in
// place (padded with spaces, which JSON allows, when it was written
// longer, such as 1.0), and fsyncs it. It runs before anything is
// appended, so a crash leaves either header over the same lines.
func (f *File) upgradeHeader(h header) error {
	// Through the file the lock is held on, never by its name again: the
	// name could lead elsewhere by now (a link put in its place).
	text := strconv.AppendInt(nil, Version, 10)
	text = append(text, bytes.Repeat([]byte{' '}, h.length-len(text))...)
	if _, err := f.f.WriteAt(text, int64(h.at)); err != nil {
		return err
	}
	return f.f.Sync()
}
