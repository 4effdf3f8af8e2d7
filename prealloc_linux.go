package main

import (
	"os"
	"syscall"
)

// preallocate gives f disk blocks from byte from to byte to without
// changing its length (fallocate with FALLOC_FL_KEEP_SIZE); blocks it has
// already are left as they are.
func preallocate(f *os.File, from, to int64) error {
	const keepSize = 0x1 // FALLOC_FL_KEEP_SIZE, linux/falloc.h
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) {
		for {
			ferr = syscall.Fallocate(int(fd), keepSize, from, to-from)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
