package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// A real full disk, where mounting is allowed: a small tmpfs holds the
// journal and a filler file that leaves it little room. No strace: the
// kernel itself answers ENOSPC, to the zero fill ahead of the lines and
// then to the lines.
const (
	tmpfsSize = 4 << 20
	tmpfsFree = 96 << 10 // room left beside the filler when petstore starts
)

func runJournalTmpfsFull(ctx context.Context, e *env, s *scenarioRun) error {
	mnt := filepath.Join(s.dir, "tmpfs")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", tmpfsSize)); err != nil {
		s.skip("mount -t tmpfs is not allowed here (%v): no full-disk scenario", err)
		return nil
	}
	defer unmount(mnt)
	filler := filepath.Join(mnt, "filler")
	if err := fill(filler, tmpfsSize-tmpfsFree); err != nil {
		return err
	}
	s.tl.note(fmt.Sprintf("tmpfs of %d KiB mounted, a filler leaves %d KiB free", tmpfsSize>>10, tmpfsFree>>10))
	r, err := startJournal(ctx, e, s, filepath.Join(mnt, "petstore.jsonl"))
	if err != nil {
		return err
	}
	defer r.close()
	full, err := waitFirstFailure(ctx, s, 30*time.Second)
	if err != nil {
		return err
	}
	s.tl.note(fmt.Sprintf("the disk is full: first failed create answered at %s", secs(full)))
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return err
	}
	if err := os.Remove(filler); err != nil {
		return err
	}
	freed := e.clock.now()
	s.tl.note("filler removed: the tmpfs has room again")
	err = sleepCtx(ctx, 3*time.Second)
	r.stopLoad()
	if err != nil {
		return err
	}
	after := 0
	for _, op := range s.rec.history() {
		if op.Kind == opCreate && op.Start > freed && op.Outcome == outcomeCreated && !op.Replayed {
			after++
		}
	}
	s.expect("recovers: the journal takes creates again once there is room", after > 0, "%d creates answered 201 after the filler was removed", after)
	return r.finish(ctx)
}

// waitFirstFailure waits (at most d) for the first create answered 5xx,
// and returns when it ended.
func waitFirstFailure(ctx context.Context, s *scenarioRun, d time.Duration) (int64, error) {
	var at int64
	err := poll(ctx, d, 100*time.Millisecond, func() (bool, error) {
		for _, op := range s.rec.history() {
			if op.Kind == opCreate && op.Status >= 500 {
				at = op.End
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return 0, fmt.Errorf("no create failed on the full tmpfs: %w", err)
	}
	return at, nil
}

// fill writes n bytes of zeros to path, or as many as fit.
func fill(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for n > 0 {
		k, err := f.Write(buf[:min(n, len(buf))])
		n -= k
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// unmount unmounts mnt, lazily if it is still busy.
func unmount(mnt string) {
	if syscall.Unmount(mnt, 0) != nil {
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
	}
}
