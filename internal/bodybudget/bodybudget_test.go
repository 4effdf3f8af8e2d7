package bodybudget

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var keyA, keyB, keyC = [32]byte{'a'}, [32]byte{'b'}, [32]byte{'c'}

// stalledReader gives n bytes, then says so on blocked and waits until
// aborted is closed, when its read fails, as a connection's does once its
// read deadline is past.
type stalledReader struct {
	left    int
	blocked chan struct{}
	aborted chan struct{}
}

func stalled(n int) *stalledReader {
	return &stalledReader{left: n, blocked: make(chan struct{}), aborted: make(chan struct{})}
}

func (r *stalledReader) Read(p []byte) (int, error) {
	if r.left > 0 {
		n := min(len(p), r.left)
		r.left -= n
		return n, nil
	}
	close(r.blocked)
	<-r.aborted
	return 0, errors.New("read deadline exceeded")
}

// readAsync reads a body of size declared bytes from r in the background.
func readAsync(b *Budget, h *Hold, key [32]byte, r io.Reader, size int64, abort func()) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := b.Read(context.Background(), h, key, r, size, abort)
		done <- err
	}()
	return done
}

// A body read takes memory as bytes come, and gives it all back.
func TestReadTakesAsBytesCome(t *testing.T) {
	b := New(64*Block, 1<<20, time.Second)
	var h Hold
	body, err := b.Read(context.Background(), &h, keyA, strings.NewReader(strings.Repeat("x", 3*Block)), 3*Block, nil)
	if err != nil || len(body) != 3*Block {
		t.Fatalf("read: %d bytes, %v", len(body), err)
	}
	if got := b.Free(); got != 61 {
		t.Errorf("free while held: %d blocks, want 61", got)
	}
	b.Release(&h)
	b.Release(&h) // twice is harmless
	if got := b.Free(); got != 64 {
		t.Errorf("free after release: %d blocks, want 64", got)
	}
}

// A body that needs memory the budget does not have ends the bodies that
// have waited on their clients longest, as many as the waiting bodies
// need, and goes on; a body that moved within StallAfter is never ended.
func TestStalledBodiesMakeRoom(t *testing.T) {
	b := New(40*Block, 1<<20, 10*time.Second)
	var old, fresh Hold
	var aborts atomic.Int64
	oldBody := stalled(8 * Block) // holds 16 blocks: its buffer grew once more
	oldDone := readAsync(b, &old, keyA, oldBody, 1<<20, func() { aborts.Add(1); close(oldBody.aborted) })
	<-oldBody.blocked
	old.progress.Store(b.now() - int64(2*StallAfter)) // it has waited on its client a while
	go func() { <-oldDone; b.Release(&old) }()        // as a handler does after the read fails
	freshBody := stalled(2 * Block)
	defer close(freshBody.aborted)
	readAsync(b, &fresh, keyB, freshBody, 1<<20, func() { t.Error("a body that moved within StallAfter was ended") })
	<-freshBody.blocked

	var small Hold // 40 blocks: 17 reserved, 20 held; 8 more do not fit
	start := time.Now()
	if _, err := b.Read(context.Background(), &small, keyC, strings.NewReader(strings.Repeat("y", 8*Block)), 8*Block, nil); err != nil {
		t.Fatalf("the body that needed room: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the body that needed room took %v", took)
	}
	if !old.Aborted() || aborts.Load() != 1 {
		t.Errorf("the stalled body: ended %v (%d times); want its read ended once", old.Aborted(), aborts.Load())
	}
	b.Release(&small)
}

// Two bodies that each hold part of what they need never wait for each
// other: the first to need more than the budget spares takes the reserve
// and finishes; the other finishes once it gives back.
func TestReserveAvoidsDeadlock(t *testing.T) {
	b := New(20*Block, 1<<20, 10*time.Second)
	holds := []*Hold{{}, {}}
	done := make(chan int, 2)
	for i, h := range holds {
		go func() {
			body := strings.NewReader(strings.Repeat("x", 1<<20))
			if _, err := b.Read(context.Background(), h, [32]byte{byte(i)}, body, 1<<20, nil); err != nil {
				t.Errorf("body %d: %v", i, err)
			}
			done <- i
		}()
	}
	for range holds {
		select {
		case i := <-done:
			b.Release(holds[i]) // as its handler does: the other may go on
		case <-time.After(5 * time.Second):
			t.Fatal("a body did not finish: the two wait for each other")
		}
	}
	if b.Free() != 20 || b.Reserved() {
		t.Errorf("after both: %d free, reserved %v; want 20, none", b.Free(), b.Reserved())
	}
}

// One key's bodies claim at most a quarter of the budget; one more waits
// for its key's share and, past the wait, fails with ErrKeyWait, while
// another key's body goes ahead.
func TestKeyShare(t *testing.T) {
	b := New(256*Block, 1<<20, 50*time.Millisecond)
	holds := make([]Hold, b.PerKey()/16)
	for i := range holds {
		if _, err := b.Read(context.Background(), &holds[i], keyA, strings.NewReader(strings.Repeat(" ", 1<<20)), 1<<20, nil); err != nil {
			t.Fatal(err)
		}
	}
	var more, other Hold
	if _, err := b.Read(context.Background(), &more, keyA, strings.NewReader("{}"), 2, nil); !errors.Is(err, ErrKeyWait) {
		t.Errorf("a body over its key's share: %v, want ErrKeyWait", err)
	}
	if _, err := b.Read(context.Background(), &other, keyB, strings.NewReader("{}"), 2, nil); err != nil {
		t.Errorf("another key's body: %v", err)
	}
	for i := range holds {
		b.Release(&holds[i])
	}
	b.Release(&more)
	b.Release(&other)
	if got := b.Free(); got != 256 {
		t.Errorf("free after all: %d, want 256", got)
	}
}
