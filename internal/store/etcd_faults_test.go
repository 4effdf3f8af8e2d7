package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"petstore/internal/catalog"
	"petstore/internal/etcd/etcdtest"
	"petstore/internal/testkit"
)

// Faults the fault harness (faults/, docs/reliability.md) injects into a
// real cluster, here on a fake gateway where each can be shown on cue:
// answers lost while the watch flows, a watch stream that goes silent, a
// member that freezes.

// openLoggedFakeStore opens an etcd store on endpoints whose log the test
// reads.
func openLoggedFakeStore(t *testing.T, endpoints ...string) (*Etcd, *testkit.LockedBuffer) {
	t.Helper()
	logs := &testkit.LockedBuffer{}
	return openFakeStore(t, EtcdConfig{Endpoints: endpoints}, withStoreLog(logs)), logs
}

// A create etcd committed, whose every answer is lost while the watch
// still flows, is answered 201: the watch shows its claims. It is never
// answered with a definite failure.
func TestEtcdLostAnswersSettledByTheWatch(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "without a key", true: "with an Idempotency-Key"}[keyed], func(t *testing.T) {
			t.Parallel()
			f, srv := etcdtest.NewFake(t, "3.4")
			s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
			// Keyed, so that the lease for keys is granted before the
			// answers are lost.
			mustKeyedCreate(t, s, "dog", "k-0")
			nc := catalog.NewCategory{Name: "cat"}
			if keyed {
				nc.Key = catalog.NewIdempotencyKey([32]byte{1}, "k-1")
			}
			f.LoseAnswers(true)
			c, err := s.Create(context.Background(), nc)
			f.LoseAnswers(false)
			if err != nil || c.ID != 2 {
				t.Fatalf("create while answers are lost: got %+v, %v; want id 2, committed", c, err)
			}
			if got, want := listString(t, s), `[{"id":1,"name":"dog"},{"id":2,"name":"cat"}]`; got != want {
				t.Errorf("list: got %s, want %s", got, want)
			}
			if got := string(f.Value("/p/counter")); got != "2" {
				t.Errorf("counter: got %q, want 2", got)
			}
			if keyed {
				again, err := s.Create(context.Background(), nc)
				if err != nil || again.ID != 2 || !again.Replayed {
					t.Errorf("retry of the key: got %+v, %v; want id 2 replayed", again, err)
				}
			}
		})
	}
}

// When neither an answer nor the watch tells what became of a create, it
// fails with catalog.ErrOutcomeUnknown, never with a definite failure; a
// retry with its Idempotency-Key replays the 201 if it was stored, and
// creates afresh if it was not.
func TestEtcdUnknownOutcomeThenRetry(t *testing.T) {
	for _, stored := range []bool{true, false} {
		t.Run(map[bool]string{true: "stored", false: "not stored"}[stored], func(t *testing.T) {
			t.Parallel()
			f, srv := etcdtest.NewFake(t, "3.4")
			s := openFakeStore(t, EtcdConfig{Endpoints: []string{srv.URL}})
			s.createTimeout = 500 * time.Millisecond
			mustKeyedCreate(t, s, "cat", "k-0") // the lease for keys is granted
			f.HoldWatches()
			if stored {
				f.LoseAnswers(true)
			} else {
				f.SetTxnFault(func(int) string { return "503" }) // never applied
			}
			nc := catalog.NewCategory{Name: "dog", Key: catalog.NewIdempotencyKey([32]byte{1}, "k-1")}
			_, err := s.Create(context.Background(), nc)
			if !errors.Is(err, catalog.ErrOutcomeUnknown) {
				t.Fatalf("create: got %v, want catalog.ErrOutcomeUnknown", err)
			}
			f.LoseAnswers(false)
			f.SetTxnFault(nil)
			f.ReleaseWatches()
			testkit.WaitFor(t, "the store to take creates", func() bool { return s.Health() == nil })
			c, err := s.Create(context.Background(), nc)
			if err != nil || c.ID != 2 || c.Replayed != stored {
				t.Errorf("retry: got %+v, %v; want id 2, replayed: %v", c, err, stored)
			}
			if got := string(f.Value("/p/counter")); got != "2" {
				t.Errorf("counter: got %q, want 2: dog made once", got)
			}
		})
	}
}

// mustKeyedCreate creates a category named name with the Idempotency-Key
// key in s.
func mustKeyedCreate(t *testing.T, s creator, name, key string) Created {
	t.Helper()
	c, err := s.Create(context.Background(), catalog.NewCategory{Name: name, Key: catalog.NewIdempotencyKey([32]byte{1}, key)})
	if err != nil {
		t.Fatalf("Create(%q, key %q): %v", name, key, err)
	}
	return c
}

// A frozen member does not freeze the view of an instance whose watch is
// on it: the instance sees that its watch trails the cluster and resumes it
// on another member, so another instance's create is in its lists within
// 2 s; and it does not say "no quorum" while another member answers.
func TestEtcdFrozenMemberDoesNotFreezeTheView(t *testing.T) {
	t.Parallel()
	f, _ := etcdtest.NewFake(t, "3.4")
	m1, m2 := f.NewMember(t), f.NewMember(t)
	a, logs := openLoggedFakeStore(t, m1.URL, m2.URL) // its watch is on m1
	b, _ := openLoggedFakeStore(t, m2.URL)
	mustStoreCreate(t, a, "dog")

	m1.Freeze()
	created := time.Now()
	mustStoreCreate(t, b, "cat")
	want := `[{"id":1,"name":"dog"},{"id":2,"name":"cat"}]`
	for listString(t, a) != want && time.Since(created) < 5*time.Second {
		time.Sleep(10 * time.Millisecond) // polling the cache, bounded
	}
	if took := time.Since(created); listString(t, a) != want || took > 2*time.Second {
		t.Errorf("the other instance's create reached this one's list after %v (%s), want within 2 s", took, listString(t, a))
	}
	if a.Health() != nil || strings.Contains(logs.String(), "quorum") {
		t.Errorf("a quorum answered all along, but: health %v; log:\n%s", a.Health(), logs)
	}
	if !strings.Contains(logs.String(), "the watch fell behind the cluster") {
		t.Errorf("the stalled watch was not logged:\n%s", logs)
	}
}

// watchLag calls a watch stalled once it has trailed the same counter
// revision for etcdWatchGrace, not sooner, and forgets a lag the watch
// has made up.
func TestWatchLag(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var l watchLag
	steps := []struct {
		watched, rev int64
		at           time.Duration
		stalled      bool
	}{
		{5, 5, 0, false},                                 // caught up
		{5, 7, 0, false},                                 // behind: noted
		{6, 7, etcdWatchGrace / 2, false},                // still behind, not for long
		{7, 9, etcdWatchGrace + time.Millisecond, false}, // made up 7; 9 noted now
		{7, 9, 2*etcdWatchGrace + time.Millisecond, true},
		{7, 9, 2*etcdWatchGrace + 2*time.Millisecond, false}, // forgotten: noted afresh
	}
	for i, step := range steps {
		if got := l.stalled(step.watched, step.rev, t0.Add(step.at)); got != step.stalled {
			t.Errorf("step %d (%+v): stalled %v, want %v", i, step, got, step.stalled)
		}
	}
}
