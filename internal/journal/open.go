package journal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockAndRead opens and locks the journal at path, creating it (and its
// directory) if needed, and returns it with its content, not yet replayed.
func lockAndRead(path string, syncDir func(dir string) error, readOnly bool) (*File, []byte, error) {
	dir := filepath.Dir(path)
	var f *os.File
	var err error
	created := false
	// O_NOFOLLOW: a symbolic link planted at path, in a directory others
	// can write, must not make petstore create or overwrite its target.
	if readOnly {
		f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	} else {
		if err := makeDirs(dir, syncDir); err != nil {
			return nil, nil, err
		}
		_, statErr := os.Lstat(path)
		created = errors.Is(statErr, os.ErrNotExist)
		// Not O_APPEND: lines are written in place, over the zeros
		// reserved ahead (and WriteAt refuses a file opened to append).
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	}
	if err != nil {
		return nil, nil, refuseSymlink(path, err)
	}
	if err := lock(f); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil, fmt.Errorf("%s is in use by another petstore process", path)
		}
		return nil, nil, fmt.Errorf("locking %s: %w", path, err)
	}
	j := &File{f: f, path: path, readOnly: readOnly, zeroFill: zeroFill, syncLines: datasync}
	if created {
		if err := syncDir(dir); err != nil {
			j.Close()
			return nil, nil, err
		}
	}
	data, err := readAll(f)
	if err != nil {
		j.Close()
		return nil, nil, err
	}
	return j, data, nil
}

// lockWait is how long lock waits for a lock held elsewhere.
const lockWait = 500 * time.Millisecond

// lock takes the exclusive lock of f, waiting up to lockWait for one held
// elsewhere. The lock belongs to the open file, which a child process
// shares from fork until exec: in a process that starts other programs
// while it opens and closes journals (a test binary), a journal just closed
// may stay locked for that moment. A journal in use by another petstore is
// refused after the wait.
func lock(f *os.File) error {
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond) // polling a lock, bounded by lockWait
	}
}

func readAll(f *os.File) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, info.Size()), data); err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	return data, nil
}
