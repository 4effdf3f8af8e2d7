package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"petstore/internal/etcd"
)

// The etcd store's watch: one watch of the whole prefix keeps the cache
// current, shows the write path which txns committed (the tokens of their
// name claims, see commit), and is checked against the cluster, so that a
// member that goes silent cannot freeze this instance's view
// (docs/cluster.md, "Guarantees").

// watchState is what the watch stream has delivered. Etcd.mu guards it.
type watchState struct {
	// rev: every event up to this revision has been delivered. A watch
	// resumes from rev+1, so the stream is one sequence of revisions...
	rev int64
	// ...except when it cannot resume there (a compaction): epoch counts
	// those gaps, across which the stream cannot show that a txn was not
	// applied.
	epoch uint64
	// counter is the counter as the stream last delivered it.
	counter counterState
	// claims the write path waits for, by token: what the stream has
	// shown of each (zero while nothing).
	claims map[string]claimSeen
}

// claimSeen is a name claim the watch delivered.
type claimSeen struct {
	id, rev int64
}

// Watch liveness. The probe reads the counter every etcdProbeEvery from
// every member at once (etcd.Client.Probe); a create txn writes the counter,
// so the counter's mod_revision is the revision of the last create. A watch
// that has not delivered that revision etcdWatchGrace after a probe saw it
// has stalled (etcd 3.4 sends progress notifications only every 10
// minutes, and a frozen member sends nothing at all): it is resumed on
// another member. A create committed at t is then in this instance's lists
// by about t + etcdProbeEvery + etcdWatchGrace + one probe: well within 2 s.
const (
	etcdProbeEvery   = 400 * time.Millisecond
	etcdProbeTimeout = time.Second
	etcdWatchGrace   = 300 * time.Millisecond
)

// watchLoop keeps the cache current: one watch of the prefix from the
// revision after the last one delivered, resumed after a broken or stalled
// stream on the next endpoint, and after a compaction from a fresh range.
func (s *Etcd) watchLoop(ctx context.Context) {
	defer s.bg.Done()
	pause := etcd.Backoff{First: watchRetryFirst, Max: watchRetryMax}
	warned := false
	for ctx.Err() == nil {
		from := s.watchRevision() + 1
		wctx, cancel := context.WithCancelCause(ctx)
		s.stall.Store(&cancel)
		err := s.c.Watch(wctx, s.keys.root, s.keys.rootEnd, from, s.onEvents, s.onProgress)
		cancel(nil)
		if ctx.Err() != nil {
			return
		}
		var compacted *etcd.CompactedError
		switch {
		case errors.As(err, &compacted):
			s.log.Warn("etcd: the watch's revision was compacted; reading the categories again", "from", from, "compacted", compacted.Revision)
			s.resync(ctx)
			continue
		case errors.Is(err, etcd.ErrWatchStalled):
			s.log.Warn("etcd: the watch fell behind the cluster; resuming it on the next member", "from", s.watchRevision()+1, "err", err)
			continue
		}
		if s.watchRevision() >= from {
			pause.Reset() // it made progress: the cluster is fine
			warned = false
		}
		if !warned {
			// Once per outage, not once per attempt.
			s.log.Warn("etcd: the watch broke; resuming on the next endpoint", "from", s.watchRevision()+1, "err", err)
			warned = true
		}
		if pause.Wait(ctx) != nil {
			return
		}
	}
}

// resync reads the categories after a compaction and resumes the watch
// from the revision read at: a gap in the stream.
func (s *Etcd) resync(ctx context.Context) {
	rev, err := s.catchUp(ctx)
	if err != nil {
		s.log.Warn("etcd: reading the categories after a compaction failed; retrying", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev > s.watch.rev {
		s.watch.rev = rev
		s.watch.epoch++
	}
}

// stallWatch ends the watch under way, which then resumes on the next
// endpoint.
func (s *Etcd) stallWatch() {
	if cancel := s.stall.Load(); cancel != nil {
		(*cancel)(etcd.ErrWatchStalled)
	}
}

// watchRevision returns the revision the watch stream has delivered.
func (s *Etcd) watchRevision() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watch.rev
}

// onEvents takes one batch of watch events: every event of a revision
// comes in one batch. Categories go to the cache; the counter and the name
// claims the write path waits for are noted.
func (s *Etcd) onEvents(events []etcd.Event) error {
	kvs := make([]etcd.KV, 0, len(events))
	var rev int64
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range events {
		rev = max(rev, int64(e.KV.ModRevision))
		deleted := e.Type == "DELETE" || e.Type == "1"
		switch key := e.KV.Key; {
		case bytes.HasPrefix(key, s.keys.categories) && deleted:
			// petstore never deletes: someone did by hand. Ids are never
			// reused, so the cache keeps the category until a restart.
			s.log.Warn("etcd: a category key was deleted outside petstore; this instance keeps serving it until it restarts", "key", string(key))
		case bytes.HasPrefix(key, s.keys.categories):
			kvs = append(kvs, e.KV)
		case deleted: // Idempotency-Keys expire; nothing else is deleted
		case bytes.Equal(key, s.keys.counter):
			if c, err := parseCounter([]etcd.KV{e.KV}); err == nil {
				s.watch.counter = c
			}
		case bytes.HasPrefix(key, s.keys.names) && len(s.watch.claims) > 0:
			s.noteClaim(e.KV)
		}
	}
	s.watch.rev = max(s.watch.rev, rev)
	s.applyLocked(kvs, rev)
	s.signalLocked()
	return nil
}

// onProgress takes a progress notification: every event up to rev has
// been delivered.
func (s *Etcd) onProgress(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watch.rev = max(s.watch.rev, rev)
	s.applyLocked(nil, rev)
	s.signalLocked()
}

// noteClaim records the name claim kv holds if the write path waits for
// its token. s.mu is held.
func (s *Etcd) noteClaim(kv etcd.KV) {
	var claim nameClaim
	if json.Unmarshal(kv.Value, &claim) != nil {
		return
	}
	if seen, ok := s.watch.claims[claim.Token]; ok && seen.id == 0 {
		s.watch.claims[claim.Token] = claimSeen{id: claim.ID, rev: int64(kv.ModRevision)}
	}
}

// signalLocked wakes whoever waits for the watch to deliver (see
// awaitCached and awaitVerdict). s.mu is held.
func (s *Etcd) signalLocked() {
	close(s.advanced)
	s.advanced = make(chan struct{})
}

// watchLag follows, from the probe's readings, how long the watch has
// trailed the counter's revision.
type watchLag struct {
	rev   int64 // a counter revision the watch had not delivered when read; 0: none
	since time.Time
}

// stalled records a reading: the watch has delivered up to watched, and the
// counter was last written at rev. It reports whether the watch has
// trailed a revision for etcdWatchGrace or more; then the lag is forgotten.
func (l *watchLag) stalled(watched, rev int64, now time.Time) bool {
	if l.rev != 0 && watched >= l.rev {
		l.rev = 0
	}
	if l.rev == 0 {
		if watched < rev {
			l.rev, l.since = rev, now
		}
		return false
	}
	if now.Sub(l.since) < etcdWatchGrace {
		return false
	}
	l.rev = 0
	return true
}

// probeLoop checks every etcdProbeEvery that a quorum answers (a
// linearizable read of the counter from every member at once), so that
// Health follows the cluster even while no create comes, Get knows how far
// ids go (idCeiling), and a stalled watch is resumed elsewhere.
func (s *Etcd) probeLoop(ctx context.Context) {
	defer s.bg.Done()
	ticker := time.NewTicker(etcdProbeEvery)
	defer ticker.Stop()
	var lag watchLag
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		pctx, cancel := context.WithTimeout(ctx, etcdProbeTimeout)
		r, err := s.c.Probe(pctx, etcd.RangeRequest{Key: s.keys.counter})
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.noteQuorum(err)
		if err != nil {
			continue
		}
		counter, err := parseCounter(r.Kvs)
		if err != nil {
			continue
		}
		s.noteCounter(counter.value)
		if lag.stalled(s.watchRevision(), counter.rev, time.Now()) {
			s.stallWatch()
		}
	}
}

// noteQuorum records what a probe found: err nil when a member answered
// with a quorum behind it.
func (s *Etcd) noteQuorum(err error) {
	was := s.down.Load()
	switch {
	case err != nil && was == nil:
		s.log.Warn("etcd: no member answers with a quorum; creates are refused as unavailable until one does", "err", err)
		s.markDown(err)
	case err != nil:
		s.markDown(err)
	case was != nil:
		s.log.Info("etcd: a quorum answers again; creates are taken again")
		s.down.Store(nil)
	}
}
