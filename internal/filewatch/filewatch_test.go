package filewatch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file is read whole up to MaxBytes; a larger one is refused, not read.
func TestReadFileBounded(t *testing.T) {
	dir := t.TempDir()
	small, large := filepath.Join(dir, "small"), filepath.Join(dir, "large")
	os.WriteFile(small, make([]byte, MaxBytes), 0o600)
	os.WriteFile(large, make([]byte, MaxBytes+1), 0o600)
	if data, err := ReadFile(small); err != nil || len(data) != MaxBytes {
		t.Errorf("a file of MaxBytes: %d bytes, %v", len(data), err)
	}
	var pe *os.PathError
	if _, err := ReadFile(large); !errors.Is(err, ErrTooLarge) || !errors.As(err, &pe) || pe.Path != large {
		t.Errorf("a file over MaxBytes: %v, want ErrTooLarge naming it", err)
	}
}

// A change is due at the first poll that finds it as the poll before did,
// once it was settle old at that earlier poll; a change in between starts
// over; a file whose time is in the future is due after settleAfterPolls.
func TestPollSettles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys")
	os.WriteFile(path, []byte("one\n"), 0o600)
	v, _ := VersionOf(path)
	w := New([]string{path}, []Version{v}, 2*time.Second)
	written := time.Now()
	os.WriteFile(path, []byte("two\n"), 0o600)
	os.Chtimes(path, written, written)
	poll := func(at time.Duration) bool {
		data, due, err := w.Poll(written.Add(at))
		if due && (err != nil || string(data[0]) != "two\n") {
			t.Fatalf("due with %q, %v", data, err)
		}
		return due
	}
	for _, step := range []struct {
		at  time.Duration
		due bool
	}{{time.Second, false}, {3 * time.Second, false}, {5 * time.Second, true}, {7 * time.Second, false}} {
		if got := poll(step.at); got != step.due {
			t.Errorf("poll %v after the write: due %v, want %v", step.at, got, step.due)
		}
	}

	future := time.Now().Add(time.Hour)
	os.WriteFile(path, []byte("three\n"), 0o600)
	os.Chtimes(path, future, future)
	n := 0
	for due := false; !due && n < 10; n++ {
		_, due, _ = w.Poll(time.Now())
	}
	if n != settleAfterPolls {
		t.Errorf("a file whose time is in the future: due at poll %d, want %d", n, settleAfterPolls)
	}
}
